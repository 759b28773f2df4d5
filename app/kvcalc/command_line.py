"""The pieces every engine's launch command is made of: quoting, the KV flag, the request count,
the memory fraction, the prefill chunk, the long-context override. Only flags each engine has; a
KV precision an engine cannot store is said, never mapped to something else."""

import re
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Launch:
    engine: str
    command: str | None          # None when the engine cannot run this configuration
    notes: tuple[str, ...]


_SHELL_SAFE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)


def shell_join(args) -> str:
    # shlex.join's quoting, without importing shlex at start-up (~6 ms in Pyodide).
    return " ".join(a if _SHELL_SAFE.fullmatch(a) else "'" + a.replace("'", "'\"'\"'") + "'" for a in args)


def decimal(value: Fraction) -> str:
    return f"{float(value):g}"


def kv_flag(scenario, table: dict, engine: str):
    kv = scenario.workload.kv_precision.name
    if kv == scenario.model.dtype:
        return "auto", None
    if kv in table:
        return table[kv], None
    allowed = ", ".join(sorted(set(table) | {scenario.model.dtype}))
    return None, f"{engine} cannot store the KV cache as {kv}; its choices here: {allowed}"


def common_notes(scenario, engine: str, allow: str) -> list:
    """The notes every launch command takes: `engine` its title, `allow` the environment setting
    that lets it take a context past the model's max_position_embeddings (each engine's
    LONG_CONTEXT_ENV)."""
    notes = []
    if past_limit(scenario):
        notes.append(f"the context is past the model's max_position_embeddings "
                     f"({scenario.model.max_context_tokens:,}): {engine} refuses it unless "
                     f"{allow} is set, as this command does; without rope scaling the "
                     "output past the limit may be wrong")
    return notes


def past_limit(scenario) -> bool:
    return scenario.model.past_limit(scenario.workload.context_tokens)


def env(scenario, allow: str) -> list:
    """`env ALLOW` before the command where the context is past the model's limit."""
    return ["env", allow] if past_limit(scenario) else []


def own_answer(evaluation, engine: str):
    """The engine's answer in an evaluation when it is this engine's own (a launch command of
    another engine than the one sized must not reuse its figures), else None."""
    answer = evaluation.engine if evaluation is not None else None
    return answer if answer is not None and answer.engine == engine else None


def requests(scenario, evaluation, engine: str, flag: str, notes: list) -> int | None:
    """How many requests the server may run at once: never fewer than fit, unless asked.
    `evaluation` is the inputs' evaluation.Evaluation (its engine's answer and capacity), or None.

    The form's batch defaults to one request; passing that on would throttle a server that holds
    thirty. An explicit batch is the user's choice and is kept."""
    work = scenario.workload
    fitting = None
    if evaluation is not None:
        chosen = own_answer(evaluation, engine) is not None
        capacity = evaluation.engine.max_concurrency if chosen else evaluation.capacity
        fitting = None if capacity is None else int(capacity)
    if scenario.settings.batch_given:
        if fitting is not None and fitting > work.batch:
            notes.append(f"{flag} {work.batch:,}: your concurrent requests; {fitting:,} of "
                         f"{work.context_tokens:,} tokens fit, so raise it to serve more")
        return work.batch
    if fitting is None:
        notes.append(f"no {flag}: the engine's default applies; choose a GPU and the weights to set it "
                     "to what fits")
        return None
    if fitting < 1:
        notes.append(f"{flag} 1: not even one request of {work.context_tokens:,} tokens fits; see the verdict")
        return 1
    notes.append(f"{flag} {fitting:,}: the requests of {work.context_tokens:,} tokens that fit; shorter requests "
                 "leave room for more (set concurrent requests to choose another number)")
    return fitting


def utilization(scenario, flag: str, notes: list, engine_default: str) -> list:
    """The memory fraction flag, only for a fraction below 1: the default of 1.0 means "all
    memory" for sizing, never a value to hand an engine, which needs headroom."""
    if scenario.deployment.memory_utilization == 1:
        notes.append(f"no {flag}: the engine's own default applies ({engine_default}); "
                     "set a memory utilization below 1 to pass one")
        return []
    return [flag, decimal(scenario.deployment.memory_utilization)]


def prefill_chunk(scenario, default: int, flag: str, notes: list) -> list:
    """The prefill chunk flag when one was chosen; otherwise say the engine's default for this GPU."""
    chosen = scenario.settings.prefill_chunk
    if chosen is None:
        notes.append(f"no {flag}: the engine's default for this GPU applies ({default:,})")
        return []
    if chosen == default:
        notes.append(f"{flag} {chosen:,} is the engine's default here")
    return [flag, str(chosen)]


def repo(scenario, notes: list) -> str:
    if scenario.model.hf_repo:
        return scenario.model.hf_repo
    notes.append("replace MODEL with your checkpoint: this model has no Hugging Face repo id here")
    return "MODEL"


def serving(command: str, scenario, served: str | None) -> str:
    """`command` restarting the checkpoint a log's server was started with (`served`), not the
    preset's repo id of its shape."""
    if not served:
        return command
    return command.replace(shell_join([repo(scenario, [])]), shell_join([served]), 1)
