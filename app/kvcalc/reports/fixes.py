"""The changes that start a configuration that does not start, each computed by the same engine
that refused it, cheapest for the user first (the order of the engine's `fix_kinds`: memory the
card has to spare, then precision, then requests at once, then speed, then context, then GPUs).

A fix is kept only if the engine, sized again with it, starts and holds one request at the
context it then serves. Each says what it changes (the flags its engine writes for the inputs
changed, FLAG_OF), what it gives (the concurrency, the longest context) and the command to copy.

Worked example (tests/fixtures/logs/vllm-llama3.1-8b-rtx3090-29k-profile-refusal-v0.6.4.log:
Llama 3.1 8B on an RTX 3090, 23.58 GiB, utilization 0.90, 2.89 GiB of KV memory, 23,648 tokens
for a max model len of 29,000): the utilization that starts adds (29,000 - 23,648) tokens x
128 KiB = 0.65 GiB, 0.03 of 23.58 GiB, so --gpu-memory-utilization 0.93; the longest context at
0.90 is vLLM's 23,648 tokens (1,478 blocks of 16).
"""

import math
import shlex
from dataclasses import dataclass, replace
from fractions import Fraction

from .. import engines
from ..errors import InputError
from ..evaluation import evaluate, sized_as
from ..inputs.options import MODEL_INPUTS
from ..readers import gpu_presets
from ..readers.failure_rules import SIZED_KINDS, Failure
from ..command_line import serving
from ..serving.launch import launch
from ..units import GIB, last_holding

LAYOUTS = (2, 4, 8)         # tp multiples tried, within one node of 8


@dataclass(frozen=True)
class Fix:
    kind: str
    changes: tuple               # (option, value) pairs of our inputs
    flags: str                   # what changes on the command line
    words: str                   # what it gives and what it costs
    max_concurrency: Fraction | None
    longest_context: int | None
    command: str | None

    def as_json(self) -> dict:
        return {"kind": self.kind, "changes": dict(self.changes), "flags": self.flags, "words": self.words,
                "max_concurrency": None if self.max_concurrency is None else float(self.max_concurrency),
                "longest_context": self.longest_context, "command": self.command}


def starts(evaluation) -> bool:
    """The engine starts with these inputs and holds one request at their context."""
    engine = evaluation.engine if evaluation.ok else None
    if engine is None or not engine.starts or engine.refusal_words:
        return False
    return engine.max_concurrency is None or engine.max_concurrency >= 1


def contradiction(evaluation) -> str | None:
    """Where the inputs, sized here, start although a log shows the engine refusing: said, so
    neither answer is taken for the other (the log's failure stands; an input it does not say
    differs from what its server ran)."""
    if not starts(evaluation):
        return None
    return ("Sized here with these inputs it would start, yet the log shows it refusing: the log's failure stands; "
            "check what the log does not say (the GPU, the layout, the memory in use beside it)")


def failure_of(evaluation) -> Failure | None:
    """What the engine's own sizing refuses, as a failure (a configuration without a log): its
    failures module names the kind (`refused_kind`)."""
    engine = evaluation.engine if evaluation.ok else None
    if engine is None or engine.starts is None or starts(evaluation):
        return None
    module = dict(engines.failure_readers()).get(engine.engine)
    if module is None:
        return None
    return Failure(engine.engine, module.refused_kind(engine), 0, engine.refusal_words or engine.refusal or "", ())


@dataclass(frozen=True)
class _Base:
    """The inputs as given (`values`: what evaluate takes again with a change) and their evaluation."""
    values: dict
    evaluation: object

    @property
    def scenario(self):
        return self.evaluation.scenario

    @property
    def engine(self):
        return self.evaluation.engine


def fixes(values: dict, failure: Failure | None = None, served: str | None = None, evaluation=None) -> list[Fix]:
    """The fixes for the inputs `values` (a failed start's, read from its log, or the form's).
    `failure` None: what the engine's sizing of `values` refuses, if anything. `served`: the
    model path the log's server was started with, which the commands then name. `evaluation`:
    evaluate(values), where the caller has it."""
    evaluation = evaluation or evaluate(values)
    if not evaluation.ok or evaluation.engine is None:
        return []
    if failure is None and evaluation.scenario.model.past_limit(evaluation.scenario.workload.context_tokens):
        return []       # past the model's own limit: the verdict names it, no deployment serves it
    base = _Base(dict(values), evaluation)
    failure = failure or failure_of(evaluation)
    if failure is None:
        return []
    module = dict(engines.failure_readers()).get(base.engine.engine)
    if module is None:
        return []
    out = []
    for kind in module.fix_kinds(failure):
        try:
            found = KINDS[kind](base, failure, module)
        except InputError:
            found = None
        if found is not None:
            changes, words = found
            fix = _fix(base, kind, changes, words, module, served)
            if fix is not None and all(f.changes != fix.changes for f in out):
                out.append(fix)
    return out


def _fix(base, kind: str, changes: dict, words: str, module, served: str | None = None) -> Fix | None:
    values = _with(base.values, changes)
    evaluation = evaluate(values)
    if not starts(evaluation):
        return None
    engine = evaluation.engine
    pairs = [pair for pair in _pairs(_command(evaluation) or "") if pair[0] not in module.PINNED_FLAGS]
    changed = {flag for name in changes for flag in module.FLAG_OF.get(name, ())}
    flags = " ".join(shlex.quote(part) for pair in pairs if pair[0] in changed for part in pair)
    command = " ".join(shlex.quote(part) for pair in pairs for part in pair) if pairs else None
    if command:
        command = serving(command, evaluation.scenario, served)
    # The longest one request can have, capped by the context the command sets (--max-model-len, -c).
    limit = engine.max_model_len or evaluation.context_limit[0]
    longest = min(limit, evaluation.scenario.workload.context_tokens) if limit else None
    return Fix(kind, tuple(changes.items()), flags or words, words, engine.max_concurrency, longest, command)


def _with(values: dict, changes: dict) -> dict:
    out = dict(values)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _command(evaluation) -> str | None:
    engine = evaluation.engine.engine
    try:
        return launch(evaluation.scenario, engine, sized_as(evaluation, engine)).command
    except InputError:
        return None


def _pairs(command: str) -> list:
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    pairs, i = [], 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            pairs.append((word, words[i + 1]))
            i += 2
        else:
            pairs.append((word,))
            i += 1
    return pairs


def _decimal(value: Fraction) -> str:
    """A Fraction as the decimal the options parse back exactly (a GiB from bytes is dyadic)."""
    text = f"{float(value):.12f}".rstrip("0").rstrip(".")
    return text if Fraction(text) == value else f"{float(value):.9f}"


def _bisect(low: int, high: int, fits) -> int | None:
    """The largest n in [low, high] with fits(n), fits being true up to a point and false after."""
    if high < low or not fits(low):
        return None
    return high if fits(high) else last_holding(fits, low, high)


def _smallest(low: int, high: int, fits) -> int | None:
    """The smallest n in [low, high] with fits(n), fits being false up to a point and true after."""
    if high < low or not fits(high):
        return None
    return low if fits(low) else last_holding(lambda n: not fits(n), low, high) + 1


def _ok(base, changes: dict) -> bool:
    return starts(evaluate(_with(base.values, changes)))


# ---- each kind of fix: (base, failure, the engine's failures module) -> (changes, words) or None


def _utilization(base) -> Fraction | None:
    in_force = engines.memory_utilization(base.scenario, base.engine)
    if in_force is None and "memory-utilization" in base.values:
        in_force = Fraction(str(base.values["memory-utilization"]))
    return in_force


def _total_gib(base, failure) -> Fraction | None:
    return failure.figure("total_gib") or _card_gib(base.values)


def _at_utilization(base, failure, hundredths: int) -> dict | None:
    """The changes that size the engine at a utilization of `hundredths`/100: a KV memory given
    without its measurement moves by the share's change of the card (vLLM's and SGLang's pool is
    total x share - what the rest takes, so it moves one for one with the share)."""
    in_force, total = _utilization(base), _total_gib(base, failure)
    share = Fraction(hundredths, 100)
    changes = {"memory-utilization": _decimal(share)}
    if "kv-memory-gib" in base.values and "measured-with" not in base.values:
        if in_force is None or total is None:
            return None
        changes["kv-memory-gib"] = _decimal(Fraction(str(base.values["kv-memory-gib"])) + (share - in_force) * total)
    return changes


# A figure printed to two decimals is off by up to half a hundredth: a share is rounded past it.
PRINTED = Fraction(1, 200)


def share_up(share: Fraction, short: Fraction, total: Fraction) -> int:
    """The share, in hundredths, that gives `short` GiB more of a `total` GiB card: rounded up,
    past the two figures' printing."""
    return math.ceil((share + (short + 2 * PRINTED) / total) * 100)


def share_down(share: Fraction, short: Fraction, total: Fraction) -> int:
    """The share, in hundredths, that leaves `short` GiB more outside the pool: rounded down."""
    return math.floor((share - (short + PRINTED) / total) * 100)


def share_free(free: Fraction, total: Fraction) -> int:
    """The largest share, in hundredths, the `free` GiB of a `total` GiB card can give: rounded down."""
    return math.floor((free - PRINTED) / total * 100)


def utilization_up(base, failure, module):
    in_force, total = _utilization(base), _total_gib(base, failure)
    if in_force is None or total is None:
        return None
    first, last = int(in_force * 100) + 1, int(Fraction(module.HIGHEST_UTILIZATION) * 100)
    found = _smallest(first, last, lambda k: (c := _at_utilization(base, failure, k)) is not None and _ok(base, c))
    if found is None:
        return None
    more = (Fraction(found, 100) - in_force) * total
    return _at_utilization(base, failure, found), (
        f"take {float(more):,.2f} GiB more of each GPU ({module.UTILIZATION_FLAG} {float(in_force):g} -> "
        f"{found / 100:g}): {module.UTILIZATION_COST}")


def utilization_down(base, failure, module):
    in_force, total, short = _utilization(base), _total_gib(base, failure), failure.figure("short_gib")
    if in_force is None or not total or short is None:
        return None
    hundredths = share_down(in_force, short, total)
    if hundredths <= 0:
        return None
    return _at_utilization(base, failure, hundredths), (
        f"leave {float(in_force - Fraction(hundredths, 100)) * float(total):,.2f} GiB more of each GPU outside the "
        f"pool ({module.UTILIZATION_FLAG} {float(in_force):g} -> {hundredths / 100:g}) for what ran out: a smaller KV cache")


def utilization_free(base, failure, module):
    free, total = failure.figure("free_gib"), failure.figure("total_gib")
    if free is None or not total:
        return None
    hundredths = share_free(free, total)
    changes = _at_utilization(base, failure, hundredths) if hundredths > 0 else None
    if changes is None:
        return None
    words = (f"ask for what the card had free ({float(free):,.2f} of {float(total):,.2f} GiB): "
             f"{module.UTILIZATION_FLAG} {hundredths / 100:g}, or stop what else holds its memory")
    if _ok(base, changes):
        return changes, words
    # At the share it can have, only a shorter context starts.
    step = engines.member(engines.REGISTRY[base.engine.engine], "PADS_CELLS_TO") or 1
    context = base.scenario.workload.context_tokens
    longest = _bisect(1, (context - 1) // step, lambda n: _ok(base, {**changes, "context": n * step}))
    if longest is None:
        return None
    return {**changes, "context": longest * step}, words + f", with contexts up to {longest * step:,} tokens"


def kv_fp8(base, failure, module):
    bits = base.scenario.workload.kv_precision.bits_per_element
    if bits <= 8:
        return None
    return {"kv-dtype": "fp8"}, "store the KV cache in fp8: half the bytes a token, a small loss of accuracy"


def kv_q8(base, failure, module):
    if base.scenario.workload.kv_precision.bits_per_element <= Fraction(17, 2):
        return None
    return {"kv-dtype": "q8_0", "flash-attn": "on"}, ("store K and V as q8_0 (flash attention on): "
                                                       "about half the bytes, a small loss of accuracy")


def context(base, failure, module):
    step = engines.member(engines.REGISTRY[base.engine.engine], "PADS_CELLS_TO") or 1
    wanted = base.scenario.workload.context_tokens
    # The engine's own figure where it printed one (its estimate, or the tokens its cache holds)
    # stands: a KV memory read to two decimals leaves ours a block either way.
    printed = failure.figure("estimated_max_len") or failure.figure("kv_tokens")
    if printed and printed < wanted and _ok(base, {"context": printed}):
        longest = printed
    elif (guess := base.engine.max_model_len) and guess < wanted and guess % step == 0 and \
            _ok(base, {"context": guess}) and not _ok(base, {"context": guess + step}):
        longest = guess
    else:
        found = _bisect(1, (wanted - 1) // step, lambda n: _ok(base, {"context": n * step}))
        if found is None:
            return None
        longest = found * step
    return {"context": longest}, f"serve contexts up to {longest:,} tokens, not {wanted:,}"


def layout(base, failure, module):
    dep = base.scenario.deployment
    if dep.gpu is None and not dep.gpu_memory_bytes:
        return None
    splits = engines.member(engines.REGISTRY[base.engine.engine], "SPLITS_LAYERS")
    now = dep.gpus if splits else dep.tp
    pinned = _measured_layout(base)
    for factor in LAYOUTS:
        n = now * factor
        if n > 8:
            break
        changes = dict({"gpus": n} if splits else {"tp": n, "gpus": n * dep.pp * dep.dp}, **pinned)
        if "kv-memory-gib" in base.values and "measured-with" not in base.values:
            changes["kv-memory-gib"] = None     # a KV memory measured on fewer GPUs: the engine sizes its own
        if _ok(base, changes):
            return changes, f"spread it over {n * (1 if splits else dep.pp * dep.dp)} GPUs" + \
                ("" if splits else f" (tensor parallel {n})")
    # Where tensor parallel cannot (its heads do not divide), pipeline stages may.
    for factor in () if splits else LAYOUTS:
        stages = dep.pp * factor
        changes = {"pp": stages, "gpus": dep.tp * stages * dep.dp, **pinned}
        if dep.tp * stages <= 8 and "kv-memory-gib" in base.values and "measured-with" not in base.values:
            changes["kv-memory-gib"] = None
        if dep.tp * stages <= 8 and _ok(base, changes):
            return changes, f"spread its layers over {stages} pipeline stages ({dep.tp * stages * dep.dp} GPUs)"
    return None


def _measured_layout(base) -> dict:
    """A log's measurement whose layout it did not say is taken at the layout the figures assume
    (said beside them): pinned in measured-with, so a change of layout moves the weights and the
    overhead from it instead of being read as the layout measured."""
    measured = base.values.get("measured-with")
    if not measured:
        return {}
    said = {pair.partition(":")[0] for pair in str(measured).split(",")}
    dep = base.scenario.deployment
    missing = [f"{name}:{value}" for name, value in (("tp", dep.tp), ("pp", dep.pp), ("gpus", dep.gpus))
               if name not in said]
    return {"measured-with": ",".join([str(measured), *missing])} if missing else {}


def eager(base, failure, module):
    return {"enforce-eager": "on"}, "run without CUDA graphs: their memory freed, decoding slower"


def eager_for_kv(base, failure, module):
    if str(base.values.get("enforce-eager", "")).lower() in ("on", "true", "1") or starts(base.evaluation):
        return None
    return eager(base, failure, module)


def graphs_fewer(base, failure, module):
    """The largest batch to capture CUDA graphs for with which it starts, where the engine takes
    their memory out of the cache (its `capture_limit_in_force`: the largest it captures now)."""
    in_force = getattr(module, "capture_limit_in_force", None)
    if in_force is None or starts(base.evaluation):
        return None
    now = in_force(base.evaluation)
    if not now or now < 2:
        return None
    found = _bisect(1, now - 1, lambda n: _ok(base, {"max-cudagraph-capture-size": n}))
    if found is None:
        return None
    return {"max-cudagraph-capture-size": found}, (f"capture CUDA graphs only for batches of up to {found:,} "
                                                   f"sequences, not {now:,}: fewer graphs leave more for the cache; "
                                                   "larger batches run without them, slower")


def state_seqs(base, failure, module):
    blocks = failure.figure("blocks")
    if blocks is None:
        found = _bisect(1, base.scenario.workload.batch - 1, lambda n: _ok(base, {"batch": n}))
        if found is None:
            return None
        blocks = found
    return {"batch": blocks}, f"serve at most {blocks:,} sequences at once (--max-num-seqs), as many as its state blocks"


def seqs_for_kv(base, failure, module):
    """The most sequences with which it starts, where what it warms up with per sequence comes
    out of the cache (the engine's `seqs_in_force`: its max_num_seqs for these inputs)."""
    in_force = getattr(module, "seqs_in_force", None)
    if in_force is None or starts(base.evaluation):
        return None
    now = in_force(base.scenario)
    found = _bisect(1, now - 1, lambda n: _ok(base, {"batch": n}))
    if found is None:
        return None
    return {"batch": found}, (f"warm up and serve at most {found:,} sequences at once, not {now:,}: what it sets "
                              "aside for each comes out of the cache")


def _scaled(failure, count: int | None) -> int | None:
    tried, free = failure.figure("tried_gib"), failure.figure("free_gib")
    if count is None or not tried or free is None:
        return None
    scaled = int(count * free / tried)
    return scaled if 0 < scaled < count else None


def seqs_down(base, failure, module):
    count = failure.figure("batch") or base.scenario.workload.batch
    fewer = _scaled(failure, count)
    if fewer is None:
        return None
    return {"batch": fewer}, (f"warm up and serve at most {fewer:,} sequences at once, not {count:,}: what it tried "
                              "to allocate scales with them")


def cpu_moe(base, failure, module):
    model = base.scenario.model
    if not model.experts:
        return None
    layers = len(model.layers)
    found = _smallest(1, layers, lambda n: _ok(base, {"n-cpu-moe": n}))
    if found is None:
        return None
    return {"n-cpu-moe": found}, f"keep the experts of the first {found:,} layers on the CPU: slower, the rest on the GPU"


def ngl_down(base, failure, module):
    model = base.scenario.model
    layers = len(model.layers)
    now = base.values.get("n-gpu-layers")
    top = min(int(now), layers + 1) - 1 if now is not None else layers
    found = _bisect(0, top, lambda n: _ok(base, {"n-gpu-layers": n}))
    if found is None:
        return None
    return {"n-gpu-layers": found}, f"offload {found:,} of the layers to the GPU (-ngl {found}): the rest run on the CPU, slower"


KINDS = {"utilization-up": utilization_up, "utilization-down": utilization_down, "utilization-free": utilization_free,
         "kv-fp8": kv_fp8, "kv-q8": kv_q8, "context": context, "ctx-down": context, "layout": layout,
         "eager": eager, "eager-for-kv": eager_for_kv, "graphs-fewer": graphs_fewer, "state-seqs": state_seqs, "seqs-for-kv": seqs_for_kv, "seqs-down": seqs_down,
         "cpu-moe": cpu_moe, "ngl-down": ngl_down}


# ---- fixes from a failure's own figures, where the model is not known to size it again


def from_figures(failure: Failure, values: dict, module) -> list[Fix]:
    """What the engine's printed figures alone give, each in its own flags, for the kinds its
    `fix_kinds` lists: the longest context it said it can hold, the share of the card it lacked
    (rounded up past the figures' printing), the sequences its state blocks hold, the share the
    card had free. No concurrency: that needs the model."""
    wanted_kinds = set(module.fix_kinds(failure))
    share = values.get("memory-utilization") or failure.figure("utilization")
    share = None if share is None else Fraction(str(share))
    total = failure.figure("total_gib") or _card_gib(values)
    short, free = failure.figure("short_gib"), failure.figure("free_gib")
    longest = failure.figure("estimated_max_len") or failure.figure("kv_tokens")
    out = []
    if "utilization-up" in wanted_kinds and failure.kind == "kv-short" and share is not None and total and \
            short is not None:
        hundredths = share_up(share, short, total)
        if Fraction(hundredths, 100) <= Fraction(module.HIGHEST_UTILIZATION):
            out.append(_logged(module, "utilization-up", {"memory-utilization": _decimal(Fraction(hundredths, 100))},
                               f"take {float(short):,.2f} GiB more of each GPU: what its KV cache lacked", None))
    if "context" in wanted_kinds and failure.kind == "kv-short" and longest:
        wanted = failure.figure("context")
        out.append(_logged(module, "context", {"context": longest},
                           f"serve contexts up to {longest:,} tokens" + (f", not {wanted:,}" if wanted else "") +
                           ": what its KV cache holds, as it printed", longest))
    if "state-seqs" in wanted_kinds and failure.figure("blocks"):
        blocks = failure.figure("blocks")
        out.append(_logged(module, "state-seqs", {"batch": blocks},
                           f"serve at most {blocks:,} sequences at once, as many as its state blocks", None))
    if "utilization-free" in wanted_kinds and total and free is not None:
        hundredths = share_free(free, total)
        if hundredths > 0:
            out.append(_logged(module, "utilization-free", {"memory-utilization": _decimal(Fraction(hundredths, 100))},
                               f"ask for what the card had free ({float(free):,.2f} of {float(total):,.2f} GiB), or "
                               "stop what else holds its memory; it starts only if that share still holds the "
                               "weights and the cache (give the model to size it)", None))
    if "seqs-down" in wanted_kinds:
        count = failure.figure("batch") or (int(values["batch"]) if str(values.get("batch", "")).isdigit() else None)
        fewer = _scaled(failure, count)
        if fewer:
            out.append(_logged(module, "seqs-down", {"batch": fewer},
                               f"warm up and serve at most {fewer:,} sequences at once, not {count:,}", None))
    if "utilization-down" in wanted_kinds and share and total and short is not None:
        hundredths = share_down(share, short, total)
        if 0 < hundredths < share * 100:
            out.append(_logged(module, "utilization-down", {"memory-utilization": _decimal(Fraction(hundredths, 100))},
                               f"leave {float(short):,.2f} GiB more of each GPU outside the pool for what ran out", None))
    return [fix for fix in out if fix is not None]


def _card_gib(values: dict) -> Fraction | None:
    """The card's memory the inputs give: gpu-memory-gib, or the GPU preset's."""
    if values.get("gpu-memory-gib") is not None:
        return Fraction(str(values["gpu-memory-gib"]))
    if values.get("gpu"):
        try:
            return Fraction(gpu_presets.gpu(str(values["gpu"])).memory_bytes, GIB)
        except InputError:
            return None
    return None


def _logged(module, kind: str, changes: dict, words: str, longest: int | None) -> Fix | None:
    flags = " ".join(f"{flag} {value}" for name, value in changes.items() for flag in module.FLAG_OF.get(name, ()))
    if not flags:
        return None
    return Fix(kind, tuple(changes.items()), flags, words, None, longest, None)


def for_failure(failure: Failure, values: dict, served: str | None = None) -> list[Fix]:
    """The fixes of a failure read from a log with the inputs it ran with: sized again by the
    engine where the model is known and its sizing refuses these inputs as the log did; else
    (no model, or the sizing cannot be evaluated) from the figures it printed alone. A failure
    with no engine's words (torch's line alone) takes the engine the inputs name."""
    try:
        name = engines.engine_name(str(failure.engine or values.get("engine") or ""))
    except InputError:
        return []           # no engine's rules to start it by (the exact ideal, or none named)
    module = dict(engines.failure_readers()).get(name)
    if module is None:
        return []
    failure = replace(failure, engine=name)
    base = evaluate(values) if _sizable(values) else None
    if base is not None and base.ok and base.engine is not None:
        if starts(base) and failure.kind in SIZED_KINDS:
            # Sized here it starts: what the log measured is not what these inputs give, so no
            # change is sized from them; the printed figures' fixes still stand.
            return from_figures(failure, values, module)
        return fixes(values, failure, served, base)
    return from_figures(failure, values, module)


def _sizable(values: dict) -> bool:
    return any(name in values for name in MODEL_INPUTS)
