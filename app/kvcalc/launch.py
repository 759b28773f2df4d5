"""Launch commands for the serving engines, for the configuration on screen.

Only flags each engine has. A KV precision an engine cannot store is said, never mapped to
something else: the command is withheld with the reason.
"""

import re
from dataclasses import dataclass
from fractions import Fraction

from .engines import default_prefill_chunk
from .engines.llamacpp import GGML_TYPES, N_BATCH
from .engines.vllm import BLOCK_SIZES as VLLM_BLOCK_SIZES
from .scenario import Scenario


# vLLM --kv-cache-dtype choices (vllm/config/cache.py CacheDType) by our precision name.
VLLM_KV = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bfloat16"}
# SGLang --kv-cache-dtype choices (server_args.py).
SGLANG_KV = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bf16"}
# llama.cpp -ctk / -ctv cache types (common/arg.cpp), the same table its sizing uses.
LLAMA_CPP_KV = GGML_TYPES
# vLLM's MLA backends on NVIDIA (FlashInfer MLA, FlashMLA) take no fp8_e5m2 cache.
VLLM_MLA_KV = {"fp8", "fp8_e4m3", "bf16"}


@dataclass(frozen=True)
class Launch:
    engine: str
    command: str | None          # None when the engine cannot run this configuration
    notes: tuple[str, ...]


_SHELL_SAFE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)


def _shell_join(args) -> str:
    # shlex.join's quoting, without importing shlex at start-up (~6 ms in Pyodide).
    return " ".join(a if _SHELL_SAFE.fullmatch(a) else "'" + a.replace("'", "'\"'\"'") + "'" for a in args)


def _decimal(value: Fraction) -> str:
    return f"{float(value):g}"


def _kv_flag(scenario: Scenario, table: dict, engine: str):
    kv = scenario.workload.kv_precision.name
    if kv == scenario.model.dtype:
        return "auto", None
    if kv in table:
        return table[kv], None
    allowed = ", ".join(sorted(set(table) | {scenario.model.dtype}))
    return None, f"{engine} cannot store the KV cache as {kv}; its choices here: {allowed}"


# What lets each engine take a context past the model's max_position_embeddings: vLLM's
# _get_and_verify_max_len raises unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set (vllm/envs.py);
# SGLang's ModelConfig raises unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set.
LONG_CONTEXT_ENV = {"vLLM": "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "SGLang": "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"}


def _common_notes(scenario: Scenario, engine: str) -> list:
    notes = []
    if _past_limit(scenario):
        notes.append(f"the context is past the model's max_position_embeddings "
                     f"({scenario.model.max_context_tokens:,}): {engine} refuses it unless "
                     f"{LONG_CONTEXT_ENV[engine]} is set, as this command does; without rope scaling the "
                     "output past the limit may be wrong")
    return notes


def _past_limit(scenario: Scenario) -> bool:
    return scenario.model.past_limit(scenario.workload.context_tokens)


def _env(scenario: Scenario, engine: str) -> list:
    return ["env", LONG_CONTEXT_ENV[engine]] if _past_limit(scenario) else []


def _requests(scenario: Scenario, result, engine: str, flag: str, notes: list) -> int | None:
    """How many requests the server may run at once: never fewer than fit, unless asked.

    The form's batch defaults to one request; passing that on would throttle a server that holds
    thirty. An explicit batch is the user's choice and is kept."""
    work = scenario.workload
    fitting = None
    if result is not None:
        chosen = result.engine is not None and result.engine.engine == engine
        capacity = result.engine.max_concurrency if chosen else result.capacity
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


def _utilization(scenario: Scenario, flag: str, notes: list, engine_default: str) -> list:
    """The memory fraction flag, only for a fraction below 1: the default of 1.0 means "all
    memory" for sizing, never a value to hand an engine, which needs headroom."""
    if scenario.deployment.memory_utilization == 1:
        notes.append(f"no {flag}: the engine's own default applies ({engine_default}); "
                     "set a memory utilization below 1 to pass one")
        return []
    return [flag, _decimal(scenario.deployment.memory_utilization)]


def _prefill_chunk(scenario: Scenario, engine: str, flag: str, notes: list) -> list:
    """The prefill chunk flag when one was chosen; otherwise say the engine's default for this GPU."""
    default = default_prefill_chunk(engine, scenario.deployment)
    chosen = scenario.settings.prefill_chunk
    if chosen is None:
        notes.append(f"no {flag}: the engine's default for this GPU applies ({default:,})")
        return []
    if chosen == default:
        notes.append(f"{flag} {chosen:,} is the engine's default here")
    return [flag, str(chosen)]


def _repo(scenario: Scenario, notes: list) -> str:
    if scenario.model.hf_repo:
        return scenario.model.hf_repo
    notes.append("replace MODEL with your checkpoint: this model has no Hugging Face repo id here")
    return "MODEL"


def vllm(scenario: Scenario, result=None) -> Launch:
    work, dep, notes = scenario.workload, scenario.deployment, _common_notes(scenario, "vLLM")
    kv, why = _kv_flag(scenario, VLLM_KV, "vLLM")
    if why:
        return Launch("vllm", None, (why,))
    if kv != "auto" and any(layer.kind == "mla" for layer in scenario.model.layers) and \
            scenario.workload.kv_precision.name not in VLLM_MLA_KV:
        return Launch("vllm", None, (f"vLLM's MLA backends cannot store the latent as {kv}; use fp8 (e4m3)",))
    args = _env(scenario, "vLLM") + ["vllm", "serve", _repo(scenario, notes), "--max-model-len",
                                      str(work.context_tokens)]
    seqs = _requests(scenario, result, "vllm", "--max-num-seqs", notes)
    args += ["--max-num-seqs", str(seqs)] if seqs else []
    args += ["--kv-cache-dtype", kv, "--tensor-parallel-size", str(dep.tp), "--pipeline-parallel-size", str(dep.pp)]
    args += _utilization(scenario, "--gpu-memory-utilization", notes, "0.9; 0.92 on recent versions")
    args += _prefill_chunk(scenario, "vllm", "--max-num-batched-tokens", notes)
    if work.block_size_tokens > 1:
        if work.block_size_tokens not in VLLM_BLOCK_SIZES:
            return Launch("vllm", None, (f"vLLM block sizes are {', '.join(map(str, VLLM_BLOCK_SIZES))}; "
                                         f"not {work.block_size_tokens}",))
        args += ["--block-size", str(work.block_size_tokens)]
    else:
        notes.append("vLLM pages the cache in blocks of 16 tokens by default; set the block size to 16 "
                     "to see its rounding in the figures")
    return Launch("vllm", _shell_join(args), tuple(notes))


def sglang(scenario: Scenario, result=None) -> Launch:
    work, dep, notes = scenario.workload, scenario.deployment, _common_notes(scenario, "SGLang")
    kv, why = _kv_flag(scenario, SGLANG_KV, "SGLang")
    if why:
        return Launch("sglang", None, (why,))
    args = _env(scenario, "SGLang") + ["python", "-m", "sglang.launch_server", "--model-path", _repo(scenario, notes),
                                        "--context-length", str(work.context_tokens)]
    running = _requests(scenario, result, "sglang", "--max-running-requests", notes)
    args += ["--max-running-requests", str(running)] if running else []
    args += ["--kv-cache-dtype", kv, "--tp-size", str(dep.tp), "--pp-size", str(dep.pp)]
    fraction = _utilization(scenario, "--mem-fraction-static", notes, "chosen from the GPU's memory")
    if fraction:
        args += fraction
        notes.append("SGLang's --mem-fraction-static is the share for weights and the KV pool, set here to "
                     "the memory utilization; activations need the rest")
    if work.block_size_tokens > 1:
        args += ["--page-size", str(work.block_size_tokens)]
    args += _prefill_chunk(scenario, "sglang", "--chunked-prefill-size", notes)
    return Launch("sglang", _shell_join(args), tuple(notes))


def llama_cpp(scenario: Scenario, result=None) -> Launch:
    work, dep, notes = scenario.workload, scenario.deployment, []
    kv = scenario.workload.kv_precision.name
    if kv not in LLAMA_CPP_KV:
        return Launch("llama.cpp", None, (f"llama.cpp cannot store the KV cache as {kv}; its cache types: "
                                          f"{', '.join(LLAMA_CPP_KV)}",))
    cache = LLAMA_CPP_KV[kv]
    v_cache = cache
    if scenario.settings.v_precision is not None:
        v_name = scenario.settings.v_precision.name
        if v_name not in LLAMA_CPP_KV:
            return Launch("llama.cpp", None, (f"llama.cpp cannot store the V cache as {v_name}; its cache types: "
                                              f"{', '.join(LLAMA_CPP_KV)}",))
        v_cache = LLAMA_CPP_KV[v_name]
    model = f"{scenario.model.hf_repo.split('/')[-1]}.gguf" if scenario.model.hf_repo else "MODEL.gguf"
    # -c is the whole cache, shared by the -np parallel slots: context x requests.
    slots = _requests(scenario, result, "llama.cpp", "-np", notes) or 1
    args = ["llama-server", "-m", model, "-c", str(work.context_tokens * slots), "-np", str(slots),
            "-ctk", cache, "-ctv", v_cache, "-ngl", "999"]
    if _past_limit(scenario):
        notes.append(f"the context is past the model's training context ({scenario.model.max_context_tokens:,}): "
                     "llama.cpp starts, warns that n_ctx_per_seq > n_ctx_train, and quality past it may suffer")
    ubatch = _prefill_chunk(scenario, "llama.cpp", "-ub", notes)
    if ubatch and int(ubatch[1]) > N_BATCH:
        args += ["-b", ubatch[1]]        # llama.cpp takes min(-b, -ub), and -b defaults to N_BATCH
    args += ubatch
    if v_cache not in ("f32", "f16", "bf16"):
        args += ["-fa", "on"]
        notes.append("a quantized V cache needs flash attention (-fa on)")
    notes.append("point -m at a GGUF conversion of the model")
    if dep.gpus > 1:
        notes.append(f"llama.cpp has no tensor parallelism: over {dep.gpus} GPUs it splits layers "
                     "(--split-mode layer, the default)")
    if work.block_size_tokens > 1 or work.prefix_tokens:
        notes.append("llama.cpp has no block-size or shared-prefix flag; those inputs are not in this command")
    return Launch("llama.cpp", _shell_join(args), tuple(notes))


def launch(scenario: Scenario, engine: str, result=None) -> Launch:
    """The command for `engine`; with the result, the server may run as many requests as fit."""
    return {"vllm": vllm, "sglang": sglang, "llama.cpp": llama_cpp}[engine](scenario, result)
