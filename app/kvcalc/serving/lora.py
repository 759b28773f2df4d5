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

Each engine's rules (the ranks it accepts, its slot default, whether the embeddings carry slots,
its flags) are data in its home (engines/<engine>/serving.py LORA), asked through rules.py.
"""

from dataclasses import dataclass

from ..errors import InputError
from ..precision import precision
from .rules import rules_of
# Layer kinds whose projections are q, k, v and o over kv heads of head_dim (layers.py).
ATTENTION_KINDS = ("full", "sliding", "chunked")


@dataclass(frozen=True)
class Lora:
    max_loras: int
    max_rank: int
    loras_given: bool = True       # False: the engine's default slot count applies
    rank_given: bool = True        # False: the exact ideal's default rank (vLLM's, 16)


@dataclass(frozen=True)
class LoraSlots:
    bytes_per_gpu: int
    modules: tuple               # (module, elements per GPU) rows, in the order above
    dtype: str
    slots: int                   # N as the engine allocates it
    rank: int
    lines: tuple


def lora_from(asked) -> Lora | None:
    """The slots asked for (asked: the ServingSettings): max-loras and/or max-lora-rank, the one
    not given at the exact ideal's default (vLLM's: 1 slot, rank 16; an engine with another slot
    default applies its own when sized); None when neither is given."""
    loras, rank = asked.max_loras, asked.max_lora_rank
    if loras is None and rank is None:
        return None
    ideal = rules_of(None).lora
    return Lora(max_loras=ideal.default_slots if loras is None else loras,
                max_rank=ideal.default_rank if rank is None else rank,
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


def _check(lora: Lora, model, rules) -> None:
    """The engine's own refusals (its LoraRules): no slots at all, a rank or vocabulary it refuses."""
    if rules.refusal:
        raise InputError("max-loras", rules.refusal)
    if rules.ranks is not None and lora.max_rank not in rules.ranks:
        raise InputError("max-lora-rank", rules.rank_refusal.format(ranks=", ".join(map(str, rules.ranks)),
                                                                    rank=lora.max_rank))
    if rules.max_vocab is not None and model.vocab_size and model.vocab_size > rules.max_vocab:
        raise InputError("max-loras", rules.vocab_refusal.format(vocab=model.vocab_size, max_vocab=rules.max_vocab))


def _split(width: int, tp: int, what: str) -> int:
    if width % tp:
        raise InputError("tp", f"tp={tp} does not divide the {what} ({width:,}), which LoRA's sharded slots "
                               "(like the base layer) split evenly")
    return width // tp


def slots(lora: Lora, model, tp: int, engine: str | None, pp: int = 1) -> LoraSlots:
    """The adapter slots the busiest GPU holds under tensor parallel `tp` and pipeline parallel
    `pp`, as `engine` allocates them: each stage wraps its own layers, the first its embedding,
    the last its head (vLLM's PPMissingLayer split)."""
    rules = rules_of(engine).lora
    _check(lora, model, rules)
    h, width, vocab = _widths(model)
    n = lora.max_loras if lora.loras_given else rules.default_slots
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
    if rules.embeddings:
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
    given = "" if lora.loras_given else f" (max-loras not given: {rules.default_slots_words} {n})"
    rank_note = "" if lora.rank_given else f" (max-lora-rank not given: {rules_of(None).lora.default_rank_words} {r})"
    lines = [f"LoRA slots per GPU ({rules.words}): N = {n} adapters{given} x rank R = {r}{rank_note}, A and B "
             f"for every target module of each of {layers} layers, in {dtype} (lora_dtype auto: the model's), "
             f"h = {h:,}, I = {width:,}, q = {q0:,}, kv = {kv0:,}, vocab = {vocab:,}, tp = {tp}.",
             f"qkv_proj: A 3 x {n} x {r} x {h:,} + B {n} x {r} x ({q0:,}/{tp} + 2 x {kv_share}) per layer, "
             f"x {layers} layers = {rows[0][1]:,} elements.",
             f"o_proj: A {n} x {r} x {q0:,}/{tp} + B {n} x {h:,} x {r} per layer, x {layers} = {rows[1][1]:,}.",
             f"gate_up_proj: A 2 x {n} x {r} x {h:,} + B {n} x {r} x 2 x {width:,}/{tp} per layer, "
             f"x {layers} = {rows[2][1]:,}.",
             f"down_proj: A {n} x {r} x {width:,}/{tp} + B {n} x {h:,} x {r} per layer, x {layers} = {rows[3][1]:,}."]
    if rules.embeddings:
        lines += [f"embed_tokens: A {n} x {vocab:,} x {r} (whole vocabulary on every GPU) + B {n} x {h:,} x {r} "
                  f"= {rows[4][1]:,}; lm_head: A {n} x {r} x {h:,} + B {n} x {vocab:,} x {r} = {rows[5][1]:,}."]
    else:
        lines += [rules.embeddings_words]
    if staged:
        lines.append(staged.strip())
    lines += [f"{elements:,} elements x {precision(dtype).bits_per_element} bits = {total:,} B per GPU "
              f"({total / (1 << 20):,.2f} MiB), allocated before the KV cache is sized, so it comes out of it "
              f"({rules.source})."]
    if model.multimodal:
        lines.append("Only the language model's modules are counted: the engines put no LoRA on the vision tower "
                     "by default.")
    return LoraSlots(bytes_per_gpu=total, modules=tuple(rows), dtype=dtype, slots=n, rank=r, lines=tuple(lines))


def launch_flags(lora: Lora, engine: str | None) -> list:
    """The flags that ask `engine` for these slots: its slot count's flag (none for an engine
    without slots, or the exact ideal)."""
    rules = rules_of(engine).lora
    if rules.slots_flag is None:
        return []
    n = lora.max_loras if lora.loras_given else rules.default_slots
    return ["--enable-lora", rules.slots_flag, str(n), "--max-lora-rank", str(lora.max_rank)]


def figures(lora: Lora, scenario, result) -> dict:
    """The slots' figures for a report, as the scenario's engine allocates them."""
    engine = scenario.settings.engine
    sized = slots(lora, scenario.serving.target or scenario.model, scenario.deployment.tp, engine,
                  scenario.deployment.pp)
    lines = list(sized.lines)
    release = scenario.settings.release
    lines += [note.words.format(release=release) for note in rules_of(engine).lora.release_notes
              if note.applies(release)]
    lines.append("Not counted: the punica wrapper's index buffers (a few MiB, sized by max_num_batched_tokens) and "
                 "CPU-side adapter copies (--max-cpu-loras, host memory).")
    return {"max_loras": sized.slots, "max_lora_rank": sized.rank, "lora_bytes_per_gpu": sized.bytes_per_gpu,
            "lora_dtype": sized.dtype, "lora_modules": [list(row) for row in sized.modules], "lines": lines}
