"""llama.cpp's serving rules (issue 35): a draft model in a context of its own, a projector file
(--mmproj) for a vision tower, and what it does not have (LoRA slots at a rank, a host-memory KV
tier sized in tokens, a prefix cache shared between slots), as data the shared code in serving/
asks for (engines/serving_rules.py gives each rule's shape). Read in llama.cpp's 2026 sources."""

from ..serving_rules import DraftRules, EncoderRules, LoraRules, OffloadRules, PrefixRules, ServingRules

# common/speculative.cpp SPEC_VOCAB_MAX_SIZE_DIFFERENCE.
VOCAB_SLACK = 128
# llama-context.cpp: n_ctx padded to 256, each of the -np streams pad(n_ctx / np, 256) cells.
CONTEXT_PAD = 256


def _draft_flags(draft) -> list:
    if draft.kind == "mtp":
        return []
    file = f"{(draft.repo or draft.name).split('/')[-1]}.gguf"
    return ["-md", file] + (["--draft-max", str(draft.spec_tokens)] if draft.spec_tokens is not None else [])


DRAFT = DraftRules(
    # common/speculative.cpp common_speculative_init_result: the draft gets a context of its own, f16
    # by default, as many cells as the target's (engines/llamacpp/engine.py places it).
    pools=False,
    spec_tokens_left_to_build=True,          # --draft-max: the build's default, which changed between builds
    mtp_refusal="llama.cpp's MTP (--spec-type draft-mtp, a second context on the target model, 2026) is not "
                "modelled, and its caches for MLA and recurrent layers are not either",
    vocab_slack=VOCAB_SLACK,
    vocab_refusal="the draft's vocabulary ({d:,}) differs from the target's ({t:,}) by more than {slack}: llama.cpp "
                  "refuses it (common/speculative.cpp common_speculative_are_compatible, "
                  "SPEC_VOCAB_MAX_SIZE_DIFFERENCE; \"the target and draft vocabs are not compatible\")",
    own_context_words="llama.cpp gives the draft a context of its own, as many cells as the target's, f16 K and V by "
                      "default (common/speculative.cpp common_speculative_init_result, 2026): its cache is in the "
                      "llama.cpp figures, not in the target's pool.",
    own_context_pad=CONTEXT_PAD,
    multi_gpu_refusal="llama.cpp with a draft over several GPUs is not modelled (how -ngld and -devd place the "
                      "draft's layers); use one GPU",
    flags=_draft_flags)

LORA = LoraRules(refusal="llama.cpp has no LoRA slots: it loads each --lora FILE whole beside the tensors it adapts, "
                         "at the file's own rank and type, so its memory is the adapter files' size (not modelled "
                         "here; add it as overhead)")

ENCODER = EncoderRules(
    # tools/server mtmd_init_from_file: the --mmproj GGUF whole in its own buffer on one device.
    tower_from_checkpoint=False, mmproj=True,
    tp_mode_refusal="llama.cpp has no encoder tp mode: its projector (--mmproj) goes whole on one GPU; give "
                    "mmproj-bytes instead",
    mmproj_flags=("--mmproj", "FILE"),
    # tools/server/server-context.cpp: speculative decoding is refused with a projector.
    mmproj_draft_refusal="llama-server refuses speculative decoding with a multimodal projector (\"err: speculative "
                         "decode is not supported by multimodal\", tools/server/server-context.cpp): leave out "
                         "mmproj-bytes or the draft")

# --cache-ram (MiB) keeps whole slot states in host memory (PR #16391): no tier sized in tokens.
OFFLOAD = OffloadRules(refusal="llama.cpp has no host-memory KV tier sized in tokens: its --cache-ram (MiB, 8192 by "
                               "default) keeps whole prompt states in host memory (llama.cpp PR #16391), which this "
                               "calculator does not model; choose engine vllm or sglang, or leave offload-gib out")

# Each -np slot holds its own cells; a slot reuses its own last prompt's prefix (--cache-reuse),
# never another slot's, so a hit shares no memory.
PREFIX = PrefixRules(refusal="llama.cpp's slots (-np) each keep their own cells and never share a prefix's cache "
                             "between them, so a hit rate changes no memory there; choose engine vllm or sglang, or "
                             "leave prefix-hit-rate out")

SERVING = ServingRules(draft=DRAFT, lora=LORA, encoder=ENCODER, offload=OFFLOAD, prefix=PREFIX)
