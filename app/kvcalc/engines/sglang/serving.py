"""SGLang's serving rules (issue 35): what it does with a draft or MTP heads, LoRA slots, a vision
encoder, a host-memory KV tier (HiCache) and its radix prefix cache, as data the shared code in
serving/ asks for (engines/serving_rules.py gives each rule's shape). Read in SGLang 0.5.23 unless
a rule names another release."""

from ..serving_rules import (SAME_VOCAB_REFUSAL, DraftRules, EncoderRules, LoraRules, OffloadBackend, OffloadRules,
                             PrefixRules, ReleaseNote, ServingRules)


def _draft_flags(draft) -> list:
    flags = ["--speculative-algorithm", "NEXTN" if draft.kind == "mtp" else "STANDALONE"]
    if draft.kind != "mtp":
        flags += ["--speculative-draft-model-path", draft.repo or draft.name]
    if draft.spec_tokens is not None:
        flags += ["--speculative-num-steps", str(draft.spec_tokens), "--speculative-eagle-topk", "1",
                  "--speculative-num-draft-tokens", str(draft.spec_tokens + 1)]
    return flags


DRAFT = DraftRules(
    pools=True,
    # server_args.py _auto_choose_speculative_params: (num_steps, topk, draft tokens) = (3, 1, 4)
    # for STANDALONE and for DeepSeek, GLM and every other target sized here.
    default_spec_tokens=3,
    # Its STANDALONE draft shares the target's tokenizer, as vLLM's check (the one read) demands.
    vocab_refusal="the draft's vocabulary ({d:,}) differs from the target's ({t:,}): speculative decoding needs one "
                  "tokenizer for both; " + SAME_VOCAB_REFUSAL,
    pool_words="(SGLang 0.5.23 pool_configurator.py: cell = cell_target + int(cell_target x L_draft / L_target), "
               "L_draft = {sglang_layers})",
    flags=_draft_flags)

LORA = LoraRules(
    ranks=None, max_vocab=None,
    default_slots=8,                   # arg_groups/fields/lora.py max_loras_per_batch
    embeddings=False, words="SGLang", default_slots_words="SGLang's default --max-loras-per-batch",
    source="SGLang lora/mem_pool.py LoRAMemoryPool.get_lora_A_shape / get_lora_B_shape",
    embeddings_words="SGLang's target modules are its adapters' own (--lora-target-modules, or the union of the "
                     "loaded adapters'); all-linear is assumed here (qkv, o, gate_up, down; no embed_tokens or "
                     "lm_head). Give the adapters' set as overhead if it differs.",
    slots_flag="--max-loras-per-batch")

ENCODER = EncoderRules(
    data_mode_flags=("--mm-enable-dp-encoder",), data_mode_words="--mm-enable-dp-encoder",
    data_mode_unverified="SGLang's data-parallel encoder per model is not verified in its source.",
    cache_words="SGLang keeps its multimodal cache in the memory mem_fraction_static leaves (it lowers the fraction "
                "for a vision tower; see the engine's notes); no encoder budget is added here.")

OFFLOAD = OffloadRules(
    backends=(
        # --enable-hierarchical-cache --hicache-size G: mem_cache/pool_host/base.py HostKVCache.__init__.
        ("native", OffloadBackend(
            scheme="pages", scope="per rank", whole_gb=True,
            whole_gb_refusal="{gib} GiB is under SGLang's smallest --hicache-size, 1 GB (a whole number of decimal GB "
                             "per rank): give at least 0.931323 GiB",
            whole_gb_words="offload-gib {gib} GiB = {gb_typed} GB; SGLang's --hicache-size is a whole number of "
                           "decimal GB per rank, so --hicache-size {gb}.",
            host_words="--hicache-size {gb} GB per rank x {ranks} ranks on the host",
            size_flag="--hicache-size", flags=("--enable-hierarchical-cache", "--hicache-size", "{gb}"),
            chunk_tokens=1,                   # page_size 1 by default
            source="mem_cache/pool_host/base.py HostKVCache.__init__",
            policy="write-through (--hicache-write-policy write_through, the default from 0.5.2)",
            policy_before=ReleaseNote((0, 5, 2), "write-through-selective (--hicache-write-policy "
                                                 "write_through_selective, the default before 0.5.2): only pages hit "
                                                 "more than once are copied to the host"))),),
    refused_backends=(("lmcache", "SGLang runs LMCache with its own --enable-lmcache (0.5.2 on), sized by an LMCache "
                                  "config file this calculator does not model; use offload-backend native (SGLang's "
                                  "HiCache, --hicache-size) or engine vllm"),),
    first_release=((None, (0, 4, 6), "SGLang {release} has no --hicache-size (first in 0.4.6, server_args.py): give "
                                     "engine-version 0.4.6 or later, or leave offload-gib out"),))

# managers/schedule_batch.py _compute_max_prefix_len: whole pages up to input_len - 1.
PREFIX = PrefixRules(words="SGLang's radix cache matches whole pages up to the prompt - 1 (managers/schedule_batch.py "
                           "_compute_max_prefix_len, 0.5.23)")

SERVING = ServingRules(draft=DRAFT, lora=LORA, encoder=ENCODER, offload=OFFLOAD, prefix=PREFIX)
