"""The shapes of an engine's serving rules (issue 35): what each engine does with the parts a
deployment runs beside the bare model (a draft or MTP heads, LoRA adapter slots, a vision
encoder, a host-memory KV tier, a prefix cache), as frozen data. Each engine's values live in its
own home (engines/<engine>/serving.py, exposed as its module's SERVING); the exact ideal's in
engines/ideal.py. The shared code in serving/ asks these, never an engine's name.

Texts are templates the shared code fills with str.format: each names the fields it takes."""

from dataclasses import dataclass, field
from typing import Callable


def _no_flags(part) -> list:
    return []


@dataclass(frozen=True)
class ReleaseNote:
    """A sentence for the releases before `before` (a release tuple, e.g. (0, 33, 0)): `words`
    with {release}."""
    before: tuple
    words: str

    def applies(self, release) -> bool:
        return release is not None and not release.at_least(*self.before)


@dataclass(frozen=True)
class DraftRules:
    """Speculative decoding: where the draft's KV goes, its default tokens a step, what is refused."""
    # True: the draft's layers join the target's KV pool and its weights split over tp like the
    # target's (vLLM, SGLang, the exact ideal). False: a context of its own, f16, as many cells as
    # the target's, the whole draft on the one GPU (llama.cpp).
    pools: bool = True
    default_spec_tokens: int | None = None     # a fixed default for both kinds (SGLang's 3)
    spec_tokens_left_to_build: bool = False    # the build's own default, not modelled (llama.cpp --draft-max)
    draft_spec_tokens_refusal: str | None = None   # a separate draft without spec-tokens is refused (vLLM)
    mtp_refusal: str | None = None             # MTP heads are not modelled on this engine
    vocab_slack: int = 0                       # vocabularies differing by at most this are accepted
    vocab_refusal: str = ""                    # {t} target's, {d} draft's vocabulary, {slack}
    widens_conv_by_spec_tokens: bool = False   # Gated DeltaNet conv state + spec tokens (vLLM mamba_utils.py)
    pool_words: str = ""                       # how the draft's layers join the pool: {sglang_layers}
    own_context_words: str = ""                # pools False: the draft's own context, in a sentence
    own_context_pad: int = 1                   # pools False: its cells padded to this (llama.cpp 256)
    multi_gpu_refusal: str | None = None       # pools False: a draft over several GPUs, refused
    read_in: ReleaseNote | None = None         # the release its rules were read in, for older ones
    flags: Callable = _no_flags                # draft -> its launch flags


@dataclass(frozen=True)
class LoraRules:
    """LoRA adapter slots allocated at a rank before the KV cache is sized."""
    refusal: str | None = None                 # the engine has no slots (llama.cpp)
    ranks: tuple | None = None                 # the ranks accepted (None: any)
    rank_refusal: str = ""                     # {ranks} {rank}: a rank not among them
    max_vocab: int | None = None               # lm_head LoRA refuses wider vocabularies
    vocab_refusal: str = ""                    # {vocab} {max_vocab}: a wider vocabulary
    default_slots: int = 1                     # slots allocated when max-loras is not given
    default_rank: int = 16                     # the rank when max-lora-rank is not given
    embeddings: bool = True                    # embed_tokens and lm_head carry slots too
    words: str = ""                            # who allocates, in the first line
    default_slots_words: str = ""              # "(max-loras not given: {this} {n})"
    default_rank_words: str = ""               # "(max-lora-rank not given: {this} {r})"
    source: str = ""
    embeddings_words: str = ""                 # embeddings False: what is assumed instead
    release_notes: tuple = ()                  # ReleaseNote for older releases
    slots_flag: str | None = None              # the flag that sets the slot count (None: no launch flags)


@dataclass(frozen=True)
class EncoderRules:
    """A vision encoder: from the checkpoint (a tp mode) or a projector file."""
    tower_from_checkpoint: bool = True         # False: only an mmproj file loads one (llama.cpp)
    mmproj: bool = False                       # takes mmproj-bytes (llama.cpp; the exact ideal accepts it)
    tp_mode_refusal: str | None = None         # mm-encoder-tp-mode refused (llama.cpp)
    data_mode_flags: tuple = ()                # the launch flags of the data mode
    data_mode_words: str = "--mm-encoder-tp-mode data"   # the data mode's flag in a sentence
    data_mode_verified: tuple = ()             # towers whose data mode was read in the source
    data_mode_unverified: str | None = None    # {wrapper}: a sentence for a tower not in data_mode_verified
    # The encoder cache budget, in tokens: the prefill chunk (max_num_batched_tokens), or before
    # preview_before a fixed preview_budget_tokens; its estimate in a sentence ({budget} {hidden}
    # {bits} {cache}). None: no budget estimated, cache_words say where the cache sits.
    cache_budget_words: str | None = None
    preview_before: tuple | None = None
    preview_budget_tokens: int | None = None
    cache_words: str | None = None
    mmproj_flags: tuple = ()                   # the launch flags of a projector file
    mmproj_draft_refusal: str | None = None    # a projector file and a draft together, refused (llama-server)


@dataclass(frozen=True)
class OffloadBackend:
    """One backend of a host-memory KV tier: its scheme, what its size means, its flags."""
    scheme: str                                # "blocks", "pages", "lmcache" or "exact": serving/offload.py's formulas
    scope: str                                 # "engine total", "per rank" or "per worker"
    host_words: str                            # {gib} {gb} {ranks} {engine_ranks} {gpus}
    per_engine: bool = True                    # "engine total": over one engine's tp x pp ranks (False: all GPUs)
    whole_gb: bool = False                     # the flag takes whole decimal GB (SGLang --hicache-size)
    whole_gb_refusal: str = ""                 # {gib}: under one whole GB
    whole_gb_words: str = ""                   # {gib} {gb_typed} {gb}: the GB it takes, in a sentence
    size_flag: str = ""                        # the flag that sizes it, in the rule's words
    flags: tuple = ()                          # {total} {gb} {backend} filled
    env: tuple = ()                            # (name, template) pairs: {gib}
    chunk_tokens: int = 1                      # the block or page when the result does not say (vLLM 16)
    source: str = ""
    source_before: ReleaseNote | None = None   # the source file in older releases (words: the path)
    aligned_from: tuple | None = None          # chunks rounded up to 4 KiB from this release
    replicated_mla_from: tuple | None = None   # one MLA latent for all tp ranks from this release
    policy: str = ""
    policy_before: ReleaseNote | None = None   # the write policy of older releases (words: the policy)
    note_from: tuple | None = None             # a sentence for releases from this one on: note_words
    note_words: str = ""                       # {release}


@dataclass(frozen=True)
class OffloadRules:
    refusal: str | None = None                 # no such tier (llama.cpp)
    backends: tuple = ()                       # (name, OffloadBackend)
    refused_backends: tuple = ()               # (name, why): a backend this engine runs otherwise
    first_release: tuple = ()                  # (backend or None, first release, words with {release})

    def backend(self, name: str) -> OffloadBackend | None:
        return dict(self.backends).get(name)


@dataclass(frozen=True)
class PrefixRules:
    refusal: str | None = None                 # requests never share a prefix's cache (llama.cpp)
    words: str | None = None                   # how a hit is cached (None: the exact ideal's words)


@dataclass(frozen=True)
class ServingRules:
    draft: DraftRules = field(default_factory=DraftRules)
    lora: LoraRules = field(default_factory=LoraRules)
    encoder: EncoderRules = field(default_factory=EncoderRules)
    offload: OffloadRules = field(default_factory=OffloadRules)
    prefix: PrefixRules = field(default_factory=PrefixRules)


# vLLM's refusal of a draft with another vocabulary (config/speculative.py), which the engines that
# need one tokenizer for both are sized by: {t} the target's vocabulary, {d} the draft's.
SAME_VOCAB_REFUSAL = ("vLLM refuses it: \"Target and draft model should have the same vocabulary size. Target "
                      "model vocab_size={t}. Draft model vocab_size={d}. Using models with different tokenizers "
                      "can cause out-of-bounds errors during speculative decoding.\" (config/speculative.py "
                      "verify_equal_vocab_size_if_draft_model)")
