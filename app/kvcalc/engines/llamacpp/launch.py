"""llama.cpp's launch command: `llama-server` with the flags that size this deployment
(common/arg.cpp), and the flags' builds."""

from ...errors import InputError
from ...command_line import Launch, past_limit, prefill_chunk, requests, shell_join
from ... import parallel
from . import PLACEMENT
from .allocator import GGML_TYPES

# The builds that changed a flag (docs/research/llamacpp-builds.md).
N_BATCH = 2048                       # default -b; n_ubatch = min(n_batch, n_ubatch), so a larger -ub needs -b
FA_AUTO_BUILD = 6325                 # PR #15434: -fa on|off|auto, default auto (release b6325's notes)
N_CPU_MOE_BUILD = 6089               # PR #15077: --n-cpu-moe (release b6089)


def command(scenario, result, name: str, build: int, chunk: int) -> Launch:
    """`llama-server` for llama.cpp build `build` (the one in force) whose default -ub is `chunk`;
    `result` is the evaluation sized (None for a command alone); `name` is the engine's registry
    name."""
    work, dep, notes = scenario.workload, scenario.deployment, []
    try:
        parallel.check(scenario.model, dep, PLACEMENT)
    except InputError as e:
        return Launch(name, None, (e.message,))
    kv = scenario.workload.kv_precision.name
    if kv not in GGML_TYPES:
        return Launch(name, None, (f"llama.cpp cannot store the KV cache as {kv}; its cache types: "
                                          f"{', '.join(GGML_TYPES)}",))
    cache = GGML_TYPES[kv]
    v_cache = cache
    if scenario.settings.v_precision is not None:
        v_name = scenario.settings.v_precision.name
        if v_name not in GGML_TYPES:
            return Launch(name, None, (f"llama.cpp cannot store the V cache as {v_name}; its cache types: "
                                              f"{', '.join(GGML_TYPES)}",))
        v_cache = GGML_TYPES[v_name]
    model = f"{scenario.model.hf_repo.split('/')[-1]}.gguf" if scenario.model.hf_repo else "MODEL.gguf"
    # -c is the whole cache, shared by the -np parallel slots: context x requests.
    slots = requests(scenario, result, name, "-np", notes) or 1
    settings = scenario.settings
    ngl = "999" if settings.n_gpu_layers is None else str(settings.n_gpu_layers)
    args = ["llama-server", "-m", model, "-c", str(work.context_tokens * slots), "-np", str(slots),
            "-ctk", cache, "-ctv", v_cache, "-ngl", ngl]
    if past_limit(scenario):
        notes.append(f"the context is past the model's training context ({scenario.model.max_context_tokens:,}): "
                     "llama.cpp starts, warns that n_ctx_per_seq > n_ctx_train, and quality past it may suffer")
    ubatch = prefill_chunk(scenario, chunk, "-ub", notes)
    if ubatch and int(ubatch[1]) > N_BATCH:
        args += ["-b", ubatch[1]]        # llama.cpp takes min(-b, -ub), and -b defaults to N_BATCH
    args += ubatch
    # From b6325 (PR #15434) -fa takes on|off|auto; before it, a bare -fa switched it on.
    valued = build >= FA_AUTO_BUILD
    if settings.flash_attn is not None:
        if settings.flash_attn == "off" and v_cache not in ("f32", "f16", "bf16"):
            return Launch(name, None, (f"llama.cpp refuses a quantized V cache ({v_cache}) without flash attention",))
        if valued:
            args += ["-fa", settings.flash_attn]
        elif settings.flash_attn == "on":
            args += ["-fa"]
    elif v_cache not in ("f32", "f16", "bf16"):
        args += ["-fa", "on"] if valued else ["-fa"]
        notes.append("a quantized V cache needs flash attention (-fa on)")
    if settings.n_cpu_moe:
        if build < N_CPU_MOE_BUILD:
            return Launch(name, None, (f"--n-cpu-moe came in llama.cpp b{N_CPU_MOE_BUILD} (PR #15077)",))
        args += ["--n-cpu-moe", str(settings.n_cpu_moe)]
    if settings.tensor_split:
        # common/arg.cpp -ts: one proportion a device, split at commas or slashes.
        args += ["-ts", ",".join(f"{float(p):g}" if p.denominator != 1 else str(p.numerator)
                                 for p in settings.tensor_split)]
    notes.append("point -m at a GGUF conversion of the model")
    if dep.gpus > 1:
        notes.append(f"llama.cpp has no tensor parallelism: over {dep.gpus} GPUs it splits layers "
                     "(--split-mode layer, the default)")
    if work.block_size_tokens > 1 or work.prefix_tokens:
        notes.append("llama.cpp has no block-size or shared-prefix flag; those inputs are not in this command")
    return Launch(name, shell_join(args), tuple(notes))
