"""LoRA adapter slots in GPU memory (issue 26, part 4): what an engine preallocates for
`--max-loras N --max-lora-rank R` before it sizes the KV cache.

vLLM (lora/model_manager.py, lora/layers/*.py create_lora_weights, 0.33.0) wraps every supported
linear of every layer (qkv_proj, o_proj, gate_up_proj, down_proj) and the model's embedding
modules (embed_tokens, lm_head) and gives each of the N slots an A and a B at the rank R, zeroed
in the LoRA dtype (auto: the model's), inside load_model's memory profile: the slots come out of
the KV cache. Per GPU (h hidden, I MLP width, q = heads x head_dim, kv = kv heads x head_dim; a
column-parallel B and a row-parallel A take the base layer's partition, kv heads replicated past
tp = kv heads):

    qkv_proj      A 3 x N x R x h                B N x R x (q/tp + 2 x kv/tp)
    o_proj        A N x R x q/tp                 B N x h x R
    gate_up_proj  A 2 x N x R x h                B N x R x 2 x I/tp
    down_proj     A N x R x I/tp                 B N x h x R
    embed_tokens  A N x vocab x R (whole vocab)  B N x h x R
    lm_head       A N x R x h                    B N x vocab x R (whole vocab)

SGLang (lora/mem_pool.py LoRAMemoryPool, 0.5.x) has the same shapes for the same modules with N =
--max-loras-per-batch (default 8); its target modules are the adapters' own, so the all-linear
set (the four projections, no embeddings) is assumed here and said so. llama.cpp loads each
--lora FILE whole beside the base tensors it adapts: no slots at a rank, its bytes are the
files', so it is refused rather than guessed. The exact ideal (no engine) counts vLLM's set.
Refused: ranks vLLM refuses, vocabularies past lm_head LoRA's 258,048, models whose layers are
not plain attention plus a dense MLP (MoE experts, MLA, state-space layers: their slot shapes are
not verified here), and models that do not give the widths.
"""

from dataclasses import dataclass

from ..errors import InputError
from ..precision import precision

# vllm/config/lora.py: the ranks LoRAConfig accepts, and its defaults.
VLLM_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
VLLM_DEFAULT_RANK = 16
VLLM_DEFAULT_LORAS = 1
SGLANG_DEFAULT_LORAS = 8            # arg_groups/fields/lora.py max_loras_per_batch
# vllm/lora/layers/logits_processor.py: LogitsProcessorWithLoRA refuses wider vocabularies.
VLLM_MAX_LORA_VOCAB = 258_048
SOURCE = "vLLM lora/layers/*.py create_lora_weights, 0.33.0"
SGLANG_SOURCE = "SGLang lora/mem_pool.py LoRAMemoryPool.get_lora_A_shape / get_lora_B_shape"
ENGINES = ("vllm", "sglang", "llama.cpp", None)
# Layer kinds whose projections are q, k, v and o over kv heads of head_dim (layers.py).
ATTENTION_KINDS = ("full", "sliding", "chunked")


@dataclass(frozen=True)
class Lora:
    max_loras: int
    max_rank: int
    loras_given: bool = True       # False: the engine's default slot count applies
    rank_given: bool = True        # False: vLLM's default rank, 16


@dataclass(frozen=True)
class LoraSlots:
    bytes_per_gpu: int
    modules: tuple               # (module, elements per GPU) rows, in the order above
    dtype: str
    slots: int                   # N as the engine allocates it
    rank: int
    lines: tuple


def lora_from(values: dict) -> Lora | None:
    """The slots asked for: max-loras and/or max-lora-rank; None when neither is given."""
    loras, rank = values.get("max-loras"), values.get("max-lora-rank")
    if loras is None and rank is None:
        return None
    return Lora(max_loras=VLLM_DEFAULT_LORAS if loras is None else loras,
                max_rank=VLLM_DEFAULT_RANK if rank is None else rank,
                loras_given=loras is not None, rank_given=rank is not None)


def _widths(model) -> tuple:
    """(hidden, MLP width, vocabulary, the attention layers) the slot shapes need, or a refusal
    naming what is missing."""
    name = model.name
    if model.experts:
        raise InputError("max-loras", f"{name} is a mixture-of-experts model: LoRA on its fused experts "
                                      "(vLLM FusedMoEWithLoRA) has slot shapes not verified here, so its slots are "
                                      "not sized; dense models only")
    kinds = {layer.kind for layer in model.layers}
    if not kinds <= set(ATTENTION_KINDS):
        other = ", ".join(sorted(kinds - set(ATTENTION_KINDS)))
        raise InputError("max-loras", f"{name} has {other} layers, whose LoRA slots (their projections differ "
                                      "from q, k, v and o) are not sized here; models of attention layers and a "
                                      "dense MLP only")
    missing = [label for label, value in (("hidden size", model.hidden_size), ("MLP size", model.mlp_size),
                                          ("vocabulary size", model.vocab_size),
                                          ("attention heads", model.attention_heads)) if not value]
    if missing:
        raise InputError("max-loras", f"the LoRA slots are shaped by the model's {', '.join(missing)}, which "
                                      f"{name} does not give")
    return model.hidden_size, model.mlp_size, model.vocab_size


def _check(lora: Lora, model, engine) -> None:
    if engine not in ENGINES:
        raise InputError("engine", f"unknown engine {engine!r} for LoRA slots")
    if engine == "llama.cpp":
        raise InputError("max-loras", "llama.cpp has no LoRA slots: it loads each --lora FILE whole beside the "
                                      "tensors it adapts, at the file's own rank and type, so its memory is the "
                                      "adapter files' size (not modelled here; add it as overhead)")
    if engine in ("vllm", None) and lora.max_rank not in VLLM_RANKS:
        raise InputError("max-lora-rank", f"vLLM accepts a max LoRA rank of {', '.join(map(str, VLLM_RANKS))} "
                                          f"(vllm/config/lora.py), not {lora.max_rank:,}")
    if engine in ("vllm", None) and model.vocab_size and model.vocab_size > VLLM_MAX_LORA_VOCAB:
        raise InputError("max-loras", f"vLLM refuses LoRA on an lm_head whose vocabulary ({model.vocab_size:,}) is "
                                      f"past {VLLM_MAX_LORA_VOCAB:,} (LogitsProcessorWithLoRA)")


def _split(width: int, tp: int, what: str) -> int:
    if width % tp:
        raise InputError("tp", f"tp={tp} does not divide the {what} ({width:,}), which LoRA's sharded slots "
                               "(like the base layer) split evenly")
    return width // tp


def slots(lora: Lora, model, tp: int, engine: str | None, pp: int = 1) -> LoraSlots:
    """The adapter slots the busiest GPU holds under tensor parallel `tp` and pipeline parallel
    `pp`, as `engine` allocates them: each stage wraps its own layers, the first its embedding,
    the last its head (vLLM's PPMissingLayer split)."""
    _check(lora, model, engine)
    h, width, vocab = _widths(model)
    sglang = engine == "sglang"
    n = lora.max_loras if lora.loras_given or not sglang else SGLANG_DEFAULT_LORAS
    r = lora.max_rank
    mlp = _split(width, tp, "MLP width")
    qkv_a = qkv_b = o_a = 0
    for layer in model.layers:
        q = _split(model.attention_heads * layer.head_dim, tp, "query width")
        # vLLM get_num_kv_heads / SGLang: one whole head per rank once tp passes the kv heads.
        kv = max(1, layer.kv_heads // tp) * layer.head_dim
        v = max(1, layer.kv_heads // tp) * (layer.v_head_dim or layer.head_dim)
        qkv_a += 3 * n * r * h
        qkv_b += n * r * (q + kv + v)
        o_a += n * r * q
    layers = len(model.layers)          # every one an attention layer with a dense MLP (_widths)
    rows = [("qkv_proj", qkv_a + qkv_b), ("o_proj", o_a + layers * n * h * r),
            ("gate_up_proj", layers * (2 * n * r * h + n * r * 2 * mlp)),
            ("down_proj", layers * (n * r * mlp + n * h * r))]
    if not sglang:
        rows += [("embed_tokens", n * vocab * r + n * h * r), ("lm_head", n * r * h + n * vocab * r)]
    elements = sum(e for _, e in rows)
    staged = ""
    if pp > 1:
        # The layers' rows grow with a stage's layer count (the same for every layer: _widths).
        per_layer = sum(e for _, e in rows[:4]) // layers
        ends = dict(rows[4:])
        sizes = [sum(stage.values()) for stage in model.stages(pp)]
        loads = [n_layers * per_layer + (ends.get("embed_tokens", 0) if i == 0 else 0)
                 + (ends.get("lm_head", 0) if i == pp - 1 else 0) for i, n_layers in enumerate(sizes)]
        elements = max(loads)
        staged = (f" With pp {pp} each stage holds its own layers' slots ({', '.join(map(str, sizes))} layers; the "
                  f"first stage the embedding's, the last the head's): the busiest holds {elements:,} elements.")
    dtype = model.dtype
    total = precision(dtype).bytes_for(elements)
    layer0 = model.layers[0]
    q0, kv0 = model.attention_heads * layer0.head_dim, layer0.kv_heads * layer0.head_dim
    kv_share = f"max(1, {layer0.kv_heads} // {tp}) x {layer0.head_dim}"
    engine_words = {"vllm": "vLLM", "sglang": "SGLang", None: "vLLM's rule (the exact ideal)"}[engine]
    given = "" if lora.loras_given else (f" (max-loras not given: SGLang's default --max-loras-per-batch {n})" if sglang
                                         else f" (max-loras not given: vLLM's default --max-loras {n})")
    rank_note = "" if lora.rank_given else f" (max-lora-rank not given: vLLM's default rank {r})"
    lines = [f"LoRA slots per GPU ({engine_words}): N = {n} adapters{given} x rank R = {r}{rank_note}, A and B "
             f"for every target module of each of {layers} layers, in {dtype} (lora_dtype auto: the model's), "
             f"h = {h:,}, I = {width:,}, q = {q0:,}, kv = {kv0:,}, vocab = {vocab:,}, tp = {tp}.",
             f"qkv_proj: A 3 x {n} x {r} x {h:,} + B {n} x {r} x ({q0:,}/{tp} + 2 x {kv_share}) per layer, "
             f"x {layers} layers = {rows[0][1]:,} elements.",
             f"o_proj: A {n} x {r} x {q0:,}/{tp} + B {n} x {h:,} x {r} per layer, x {layers} = {rows[1][1]:,}.",
             f"gate_up_proj: A 2 x {n} x {r} x {h:,} + B {n} x {r} x 2 x {width:,}/{tp} per layer, "
             f"x {layers} = {rows[2][1]:,}.",
             f"down_proj: A {n} x {r} x {width:,}/{tp} + B {n} x {h:,} x {r} per layer, x {layers} = {rows[3][1]:,}."]
    if not sglang:
        lines += [f"embed_tokens: A {n} x {vocab:,} x {r} (whole vocabulary on every GPU) + B {n} x {h:,} x {r} "
                  f"= {rows[4][1]:,}; lm_head: A {n} x {r} x {h:,} + B {n} x {vocab:,} x {r} = {rows[5][1]:,}."]
    else:
        lines += ["SGLang's target modules are its adapters' own (--lora-target-modules, or the union of the "
                  "loaded adapters'); all-linear is assumed here (qkv, o, gate_up, down; no embed_tokens or "
                  "lm_head). Give the adapters' set as overhead if it differs."]
    if staged:
        lines.append(staged.strip())
    lines += [f"{elements:,} elements x {precision(dtype).bits_per_element} bits = {total:,} B per GPU "
              f"({total / (1 << 20):,.2f} MiB), allocated before the KV cache is sized, so it comes out of it "
              f"({SGLANG_SOURCE if sglang else SOURCE})."]
    if model.multimodal:
        lines.append("Only the language model's modules are counted: the engines put no LoRA on the vision tower "
                     "by default.")
    return LoraSlots(bytes_per_gpu=total, modules=tuple(rows), dtype=dtype, slots=n, rank=r, lines=tuple(lines))


def launch_flags(lora: Lora, engine: str) -> list:
    """The flags that ask `engine` for these slots."""
    if engine == "vllm":
        return ["--enable-lora", "--max-loras", str(lora.max_loras), "--max-lora-rank", str(lora.max_rank)]
    if engine == "sglang":
        n = lora.max_loras if lora.loras_given else SGLANG_DEFAULT_LORAS
        return ["--enable-lora", "--max-loras-per-batch", str(n), "--max-lora-rank", str(lora.max_rank)]
    return []


def figures(lora: Lora, scenario, result) -> dict:
    """The slots' figures for a report, as the scenario's engine allocates them."""
    engine = scenario.settings.engine
    sized = slots(lora, scenario.serving.target or scenario.model, scenario.deployment.tp, engine,
                  scenario.deployment.pp)
    lines = list(sized.lines)
    release = scenario.settings.release
    if engine == "vllm" and release is not None and not release.at_least(0, 12, 0):
        lines.append(f"vLLM {release} also held lora_extra_vocab_size = 256 extra rows in embed_tokens and lm_head "
                     "(removed in 0.12.0); their exact shapes are not verified, so they are not counted.")
    lines.append("Not counted: the punica wrapper's index buffers (a few MiB, sized by max_num_batched_tokens) and "
                 "CPU-side adapter copies (--max-cpu-loras, host memory).")
    return {"max_loras": sized.slots, "max_lora_rank": sized.rank, "lora_bytes_per_gpu": sized.bytes_per_gpu,
            "lora_dtype": sized.dtype, "lora_modules": [list(row) for row in sized.modules], "lines": lines}
