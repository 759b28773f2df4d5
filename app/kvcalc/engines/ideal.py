"""The exact ideal's serving rules (no engine chosen): a draft pooled beside the target's layers,
any tier as one logical copy of the cache, every prefix token shared, vLLM's LoRA set (the one
read module by module) and llama.cpp's projector file, in the shapes of engines/serving_rules.py."""

from dataclasses import replace

from .serving_rules import SAME_VOCAB_REFUSAL, DraftRules, EncoderRules, OffloadBackend, OffloadRules, PrefixRules, ServingRules
from .llamacpp import serving as llamacpp_serving
from .vllm import serving as vllm_serving

_ONE_COPY = dict(scheme="exact", scope="engine total", per_engine=False,
                 host_words="{gib} GiB over the {gpus} GPUs, {ranks} of them on the host",
                 policy="none: the ideal holds exactly the tier's bytes of one logical copy")

IDEAL = ServingRules(
    draft=DraftRules(pools=True,
                     vocab_refusal="the draft's vocabulary ({d:,}) differs from the target's ({t:,}): speculative "
                                   "decoding needs one tokenizer for both; " + SAME_VOCAB_REFUSAL,
                     pool_words="(every engine that pools it, vLLM and SGLang, keeps it beside the target's)"),
    lora=replace(vllm_serving.LORA, words="vLLM's rule (the exact ideal)", release_notes=(), slots_flag=None),
    # It takes llama.cpp's projector file, with the refusal of a draft beside it.
    encoder=EncoderRules(mmproj=True, mmproj_draft_refusal=llamacpp_serving.ENCODER.mmproj_draft_refusal),
    offload=OffloadRules(backends=(
        ("native", OffloadBackend(**_ONE_COPY)),
        # Sized as one logical copy too; what the host holds and the flags follow LMCache's per-worker size.
        ("lmcache", OffloadBackend(**dict(_ONE_COPY, scope="per worker", host_words=vllm_serving.OFFLOAD.backend(
            "lmcache").host_words))))),
    prefix=PrefixRules(words="the exact ideal: every token of the prefix, up to the prompt - 1"))
