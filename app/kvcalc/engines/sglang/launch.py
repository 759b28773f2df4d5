"""SGLang's launch command: `python -m sglang.launch_server` with the flags that size this
deployment (server_args.py ServerArgs), and the notes that say what each flag does here."""

from ...errors import InputError
from ...command_line import (
    Launch, common_notes, env, kv_flag, own_answer, prefill_chunk, repo, requests, shell_join, utilization)
from ...units import ceil_div
from ... import parallel
from . import PLACEMENT

# --kv-cache-dtype choices (server_args.py) by our precision name.
LAUNCH_KV = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bf16"}
# What lets it take a context past the model's max_position_embeddings: its ModelConfig raises
# unless it is set.
LONG_CONTEXT_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"


def _all_ranks(scenario, sized: bool, running: int, notes: list) -> int:
    """--max-running-requests is the deployment's: SGLang gives each DP rank running // dp_size.
    Sized by SGLang here (`sized`), the requests its pool holds are one rank's; made whole over the
    ranks."""
    dp = scenario.deployment.dp
    if sized and not scenario.settings.batch_given:
        notes.append(f"--max-running-requests {running * dp:,}: {running:,} a rank, SGLang divides it by --dp-size {dp}")
        return running * dp
    total = ceil_div(running, dp) * dp
    notes.append(f"--max-running-requests {total:,} is the deployment's: SGLang gives each of the {dp} DP ranks "
                 f"{total // dp:,} (running // dp_size)" + (f", rounded up from {running:,} so every rank takes its "
                                                             "share" if total != running else ""))
    return total


def command(scenario, result, name: str, chunk: int, tp_size: int) -> Launch:
    """`python -m sglang.launch_server` whose default --chunked-prefill-size here is `chunk` and
    --tp-size `tp_size` (every GPU of a pipeline stage); `result` is the evaluation sized (None
    for a command alone); `name` is the engine's registry name (result.engine.engine when SGLang
    sized it)."""
    work, dep, notes = scenario.workload, scenario.deployment, common_notes(scenario, "SGLang", LONG_CONTEXT_ENV)
    kv, why = kv_flag(scenario, LAUNCH_KV, "SGLang")
    if why:
        return Launch(name, None, (why,))
    try:
        parallel.check(scenario.model, dep, PLACEMENT)
    except InputError as e:
        return Launch(name, None, (e.message,))
    args = env(scenario, LONG_CONTEXT_ENV) + ["python", "-m", "sglang.launch_server", "--model-path", repo(scenario, notes),
                                        "--context-length", str(work.context_tokens)]
    own = own_answer(result, name)
    running = requests(scenario, result, name, "--max-running-requests", notes)
    if running and dep.dp > 1:
        running = _all_ranks(scenario, own is not None, running, notes)
    args += ["--max-running-requests", str(running)] if running else []
    args += ["--kv-cache-dtype", kv, "--tp-size", str(tp_size), "--pp-size", str(dep.pp)]
    if dep.dp > 1:
        args += ["--dp-size", str(dep.dp), "--enable-dp-attention"]
    if dep.expert_parallel:
        args += ["--ep-size", str(parallel.expert_group(dep))]
    fraction = utilization(scenario, "--mem-fraction-static", notes, "chosen from the GPU's memory")
    if fraction:
        args += fraction
        notes.append("SGLang's --mem-fraction-static is the share for weights and the KV pool, set here to "
                     "the memory utilization; activations need the rest")
    if work.block_size_tokens > 1:
        args += ["--page-size", str(work.block_size_tokens)]
    args += prefill_chunk(scenario, chunk, "--chunked-prefill-size", notes)
    if own is not None and own.starts and own.kv_tokens:
        # server_args.py max_total_tokens: the pool's size in tokens, whatever the memory would allow.
        args += ["--max-total-tokens", str(own.kv_tokens)]
        notes.append(f"--max-total-tokens {own.kv_tokens} pins the token pool computed here; SGLang takes "
                     "the smaller of it and what its memory allows, so it never allocates more than these figures"
                     + (" (each DP rank's pool: every rank's model runner compares it with its own)" if dep.dp > 1
                        else ""))
    return Launch(name, shell_join(args), tuple(notes))
