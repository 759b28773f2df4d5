"""vLLM's serving rules (issue 35): what it does with a draft or MTP heads, LoRA slots, a vision
encoder, a host-memory KV tier and a prefix cache, as data the shared code in serving/ asks for
(engines/serving_rules.py gives each rule's shape). Read in the vLLM 0.33.0 wheel unless a rule
names another release; docs/research/issue-26-engine-rules.md has the reading."""

from ..serving_rules import (SAME_VOCAB_REFUSAL, DraftRules, EncoderRules, LoraRules, OffloadBackend, OffloadRules,
                             PrefixRules, ReleaseNote, ServingRules)


def speculative_config(draft) -> str:
    """The --speculative-config value (config/speculative.py SpeculativeConfig's fields)."""
    parts = ['"method": "mtp"'] if draft.kind == "mtp" else \
        [f'"model": "{draft.repo or draft.name}"', '"method": "draft_model"']
    if draft.spec_tokens is not None:
        parts.append(f'"num_speculative_tokens": {draft.spec_tokens}')
    return "{" + ", ".join(parts) + "}"


def _draft_flags(draft) -> list:
    return ["--speculative-config", speculative_config(draft)]


DRAFT = DraftRules(
    pools=True,
    # config/speculative.py: num_speculative_tokens defaults to the MTP heads' n_predict; a draft
    # model needs it given.
    draft_spec_tokens_refusal="vLLM needs num_speculative_tokens for a draft model (config/speculative.py: "
                              "\"num_speculative_tokens must be provided with speculative model unless the draft "
                              "model config contains an n_predict parameter\"): give spec-tokens",
    vocab_refusal="the draft's vocabulary ({d:,}) differs from the target's ({t:,}): " + SAME_VOCAB_REFUSAL,
    # mamba_utils.py gated_delta_net_state_shape: conv_kernel_size - 1 + num_spec.
    widens_conv_by_spec_tokens=True,
    pool_words="(vLLM: KVCacheSpec.is_draft is compare=False, so a draft layer with the target's spec is one more "
               "layer of its group; gpu_model_runner.py get_kv_cache_spec, 0.33.0)",
    read_in=ReleaseNote((0, 33, 0), "The draft's pooling and loading rules were read in vLLM 0.33.0; vLLM {release} "
                                    "is sized by the same rules, not read in its own code."),
    flags=_draft_flags)

# vllm/config/lora.py: the ranks LoRAConfig accepts, and its defaults (max_loras 1, max_lora_rank 16).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
# vllm/lora/layers/logits_processor.py: LogitsProcessorWithLoRA refuses wider vocabularies.
LORA_MAX_VOCAB = 258_048

LORA = LoraRules(
    ranks=LORA_RANKS, rank_refusal="vLLM accepts a max LoRA rank of {ranks} (vllm/config/lora.py), not {rank:,}",
    max_vocab=LORA_MAX_VOCAB,
    vocab_refusal="vLLM refuses LoRA on an lm_head whose vocabulary ({vocab:,}) is past {max_vocab:,} "
                  "(LogitsProcessorWithLoRA)",
    default_slots=1, default_rank=16, embeddings=True, words="vLLM",
    default_slots_words="vLLM's default --max-loras", default_rank_words="vLLM's default rank",
    source="vLLM lora/layers/*.py create_lora_weights, 0.33.0",
    release_notes=(ReleaseNote((0, 12, 0), "vLLM {release} also held lora_extra_vocab_size = 256 extra rows in "
                                           "embed_tokens and lm_head (removed in 0.12.0); their exact shapes are not "
                                           "verified, so they are not counted."),),
    slots_flag="--max-loras")

ENCODER = EncoderRules(
    data_mode_flags=("--mm-encoder-tp-mode", "data"), data_mode_words="--mm-encoder-tp-mode data",
    # Models whose tower declares supports_encoder_tp_data, checked in its source (qwen2_5_vl.py).
    data_mode_verified=("qwen2_5_vl",),
    data_mode_unverified="vLLM runs data mode only for models with supports_encoder_tp_data; not verified for "
                         "{wrapper} (falling back to weights would make this an overestimate).",
    cache_budget_words="Encoder cache budget: {budget:,} tokens (encoder_cache_size = max_num_batched_tokens, "
                       "config/scheduler.py; an image larger than that raises it to its own tokens). Estimate: "
                       "{budget:,} x {hidden:,} (text hidden) x {bits} bits = {cache:,} B per GPU, held during the "
                       "profiling run; it sits inside the activation peak the overhead estimate bounds, so it is not "
                       "added again.",
    # The 0.6.x V1 preview hard-coded the budget (PR #11210); max_num_batched_tokens from 0.7.0.
    preview_before=(0, 7, 0), preview_budget_tokens=16_384)

OFFLOAD = OffloadRules(
    backends=(
        # config/vllm.py _post_init_kv_transfer_config: cpu_bytes_to_use = X x 2^30 for the
        # OffloadingConnector; CPUOffloadingSpec cuts it into one block x world_size copies.
        ("native", OffloadBackend(
            scheme="blocks", scope="engine total", per_engine=True,
            host_words="--kv-offloading-size {gib} GiB is the total over the engine's {engine_ranks} ranks, {ranks} "
                       "of them on the host",
            size_flag="--kv-offloading-size",
            flags=("--kv-offloading-size", "{total}", "--kv-offloading-backend", "{backend}"),
            chunk_tokens=16,                  # vllm/config/cache.py block_size's default
            source="v1/kv_offload/cpu/spec.py CPUOffloadingSpec.__init__",
            source_before=ReleaseNote((0, 19, 0), "v1/kv_offload/cpu.py CPUOffloadingSpec.__init__"),
            aligned_from=(0, 23, 0),          # BLOCK_SIZE_ALIGNMENT = mmap.PAGESIZE
            replicated_mla_from=(0, 27, 0),   # kv_connector/v1/offloading/config.py
            policy="write-through: each completed chunk is stored as it is computed; the GPU copy stays")),
        # --kv-offloading-backend lmcache: LMCache's max_local_cpu_size per worker.
        ("lmcache", OffloadBackend(
            scheme="lmcache", scope="per worker",
            host_words="max_local_cpu_size {gib} GiB per worker x {ranks} workers on the host",
            flags=("--kv-offloading-size", "{total}", "--kv-offloading-backend", "{backend}"),
            env=(("LMCACHE_MAX_LOCAL_CPU_SIZE", "{gib}"),),     # lmcache/v1/config.py reads LMCACHE_<KEY>
            policy="write-through: each whole 256-token chunk is stored as it is computed",
            note_from=(0, 23, 0),
            note_words="; vLLM {release} runs LMCacheMPConnector and does not pass --kv-offloading-size on "
                       "(config/vllm.py): the LMCache server's max_local_cpu_size sizes it"))),
    first_release=(
        (None, (0, 11, 1), "vLLM {release} has no --kv-offloading-size (first in 0.11.1): give engine-version 0.14.0 "
                           "or later, or leave offload-gib out"),
        ("native", (0, 14, 0), "vLLM {release}'s native offload passes num_cpu_blocks 0, and v1/kv_offload/cpu.py "
                               "raises 'num_cpu_blocks must be specified' (0.11.1-0.13.0): give engine-version 0.14.0 "
                               "or later, or offload-backend lmcache")))

# v1/core/kv_cache_utils.py request_block_hasher hashes full blocks only; kv_cache_manager.py
# get_computed_blocks stops at num_tokens - 1.
PREFIX = PrefixRules(words="vLLM hashes full blocks only and stops at the prompt - 1 (v1/core/kv_cache_manager.py "
                           "get_computed_blocks, 0.33.0)")

SERVING = ServingRules(draft=DRAFT, lora=LORA, encoder=ENCODER, offload=OFFLOAD, prefix=PREFIX)
