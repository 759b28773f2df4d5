"""One small immutable value type per layer kind, each owning its byte formula.

Shaped after vLLM's `vllm/v1/kv_cache_interface.py` (FullAttentionSpec, SlidingWindowSpec,
MLAAttentionSpec, MambaSpec): a model is a tuple of these. Adding a kind is adding a class
with the members of the `Layer` protocol below; each also writes its own terms of the arithmetic.

`row_bytes` is what one token costs in this layer on one GPU, rounded up to whole bytes
once, here, and nowhere else. `held_range(context_tokens)` is the half-open range of token
positions the layer still holds when a request has reached `context_tokens`; None for a layer
that keeps no per-token cache. `state_bytes` is a fixed per-sequence state (Mamba, DeltaNet).
"""

from dataclasses import dataclass, field
from typing import Protocol

from .errors import InputError
from .precision import Precision, precision as by_name
from .units import ceil_div
from .words import bytes_each


class Layer(Protocol):
    """What every layer kind provides."""
    kind: str        # full, sliding, chunked, mla, state, none
    title: str       # the kind in words

    def row_bytes(self, precision: Precision, tp: int = 1) -> int:
        """One token's cache in this layer on one GPU, whole bytes."""

    def held_range(self, context_tokens: int) -> tuple[int, int] | None:
        """Positions [start, end) still held at this context; None for no per-token cache."""

    def state_bytes(self, precision: Precision, tp: int = 1) -> int:
        """A fixed state per sequence (Mamba, DeltaNet), whatever the context."""

    def check_tp(self, tp: int) -> None:
        """Refuse a tensor-parallel size this layer cannot be split by."""

    def flops_per_key(self, q_heads: int) -> int:
        """Attention FLOPs of one query token against one cached key."""

    def keys_total(self, tokens: int) -> int:
        """Keys attended by the tokens at positions 1..tokens together."""

    def arithmetic(self, kv: Precision, state: Precision, count: int) -> str | None:
        """This kind's line of the written-out arithmetic for `count` such layers."""

    def window_held(self, context_tokens: int) -> tuple[int, str] | None:
        """(window, words) where this layer holds less than the context."""

    def tp_note(self, tp: int) -> str | None:
        """How tensor parallelism splits (or replicates) this layer's cache, in words."""


def _split_heads(heads: int, tp: int) -> int:
    # vLLM ModelConfig.get_num_kv_heads / SGLang get_num_kv_heads: below one head per rank,
    # each rank keeps one whole replicated head.
    return max(1, heads // tp)


def _check_head_split(heads: int, tp: int, what: str) -> None:
    # vLLM refuses a split where neither count divides the other.
    if tp <= heads and heads % tp:
        raise InputError("tp", f"{heads} {what} cannot be split evenly over tp={tp}; "
                               f"use a tp that divides {heads}")
    if tp > heads and tp % heads:
        raise InputError("tp", f"tp={tp} is more than {heads} {what} and not a multiple of it, "
                               f"so heads cannot be replicated evenly")


@dataclass(frozen=True)
class FullAttention:
    """MHA, GQA or MQA: K and V rows for every token of the context."""
    kv_heads: int
    head_dim: int
    v_head_dim: int | None = None  # when V is narrower or wider than K
    # This layer's own KV dtype where it is not the run's (vLLM --kv-cache-dtype-skip-layers and
    # TurboQuant's boundary layers keep the model's dtype): a precision name, None for the run's.
    kv_dtype: str | None = field(default=None, kw_only=True)

    kind = "full"
    title = "full attention"

    def row_bytes(self, precision: Precision, tp: int = 1) -> int:
        heads = _split_heads(self.kv_heads, tp)
        own = by_name(self.kv_dtype) if self.kv_dtype else precision
        return own.kv_row_bytes(heads, self.head_dim, self.v_head_dim or self.head_dim)

    def arithmetic(self, kv: Precision, state: Precision, count: int) -> str:
        own = by_name(self.kv_dtype) if self.kv_dtype else kv
        row = self.row_bytes(kv)
        kept = f" (kept in {own.name})" if self.kv_dtype else ""
        packed = own.kv_head_words(self.head_dim, self.v_head_dim or self.head_dim)
        if packed:
            return (f"{self.title}{kept}: {own.name} slot: {packed} x {self.kv_heads} kv heads"
                    f" = {row:,} B per token per layer; x {count} layers = {row * count:,} B")
        dims = self.head_dim + (self.v_head_dim or self.head_dim)
        factor = f"2 x {self.head_dim}" if dims == 2 * self.head_dim else f"({self.head_dim} + {self.v_head_dim})"
        return (f"{self.title}{kept}: {factor} x {self.kv_heads} kv heads x {bytes_each(own)}"
                f" = {row:,} B per token per layer; x {count} layers = {row * count:,} B")

    def window_held(self, context_tokens: int):
        return None

    def tp_note(self, tp: int) -> str:
        return f"kv heads per GPU = max(1, {self.kv_heads} // {tp}) = {_split_heads(self.kv_heads, tp)}"

    def held_range(self, context_tokens: int):
        return (0, context_tokens)

    def state_bytes(self, precision: Precision, tp: int = 1) -> int:
        return 0

    def check_tp(self, tp: int) -> None:
        _check_head_split(self.kv_heads, tp, "kv heads")

    def flops_per_key(self, q_heads: int) -> int:
        """One query token against one cached key: q.k and the weighted V, 2 FLOPs a multiply-add."""
        return 2 * q_heads * (self.head_dim + (self.v_head_dim or self.head_dim))

    def keys_total(self, tokens: int) -> int:
        """Keys attended by the tokens at positions 1..tokens together (causal: t at position t)."""
        return tokens * (tokens + 1) // 2


@dataclass(frozen=True)
class SlidingWindowAttention(FullAttention):
    """Holds only the last `window` tokens (vLLM SlidingWindowSpec, llama.cpp iSWA cache)."""
    window: int = 0

    kind = "sliding"
    title = "sliding window"

    def held_range(self, context_tokens: int):
        return (max(0, context_tokens - self.window), context_tokens)

    def window_held(self, context_tokens: int):
        return (self.window, f"window layers hold min({context_tokens:,}, {self.window:,}) = "
                             f"{min(context_tokens, self.window):,}")

    def keys_total(self, tokens: int) -> int:
        inside = min(tokens, self.window)          # positions still shorter than the window
        return inside * (inside + 1) // 2 + (tokens - inside) * self.window


@dataclass(frozen=True)
class ChunkedLocalAttention(SlidingWindowAttention):
    """Attends within fixed chunks (Llama 4 attention_chunk_size). Sized at its peak, a full
    chunk, the way vLLM's ChunkedLocalAttentionSpec reserves it."""

    kind = "chunked"
    title = "chunked local"

    def keys_total(self, tokens: int) -> int:
        # A token attends only the tokens of its own chunk before it.
        full, rest = divmod(tokens, self.window)
        return full * self.window * (self.window + 1) // 2 + rest * (rest + 1) // 2


@dataclass(frozen=True)
class IndexedAttention(FullAttention):
    """Full attention plus a sparse-attention index key per token (MiniMax-M3's sparse layers,
    vLLM MiniMaxM3IndexerCache): one bf16 vector of the index dim, whatever the KV precision, and
    not split by tensor parallelism. Engines that do not model the index cache refuse it."""
    index_row_bytes: int = 0

    title = "full attention + index keys"

    def row_bytes(self, precision: Precision, tp: int = 1) -> int:
        return super().row_bytes(precision, tp) + self.index_row_bytes

    def arithmetic(self, kv: Precision, state: Precision, count: int) -> str:
        row = self.row_bytes(kv)
        kv = by_name(self.kv_dtype) if self.kv_dtype else kv
        return (f"{self.title}: 2 x {self.head_dim} x {self.kv_heads} kv heads x {bytes_each(kv)} + "
                f"{self.index_row_bytes:,} B of index key = {row:,} B per token per layer; x {count} layers "
                f"= {row * count:,} B")

    def tp_note(self, tp: int) -> str:
        return super().tp_note(tp) + "; the index key is kept whole on every GPU"


@dataclass(frozen=True)
class MLAAttention:
    """Multi-head latent attention: one compressed latent plus a shared RoPE key per token.

    vLLM MLAAttentionSpec / SGLang MLATokenToKVPool store kv_lora_rank + qk_rope_head_dim
    elements, no factor 2, and every tensor-parallel rank holds the whole latent.
    """
    kv_lora_rank: int
    rope_dim: int
    indexer_row_bytes: int = 0   # DeepSeek-V3.2's fp8 indexer key, whatever the KV precision
    kv_dtype: str | None = field(default=None, kw_only=True)   # as FullAttention's

    kind = "mla"
    title = "MLA latent"

    def arithmetic(self, kv: Precision, state: Precision, count: int) -> str:
        row = self.row_bytes(kv)
        own = by_name(self.kv_dtype) if self.kv_dtype else kv
        kept = f" (kept in {own.name})" if self.kv_dtype else ""
        return (f"MLA latent{kept}: ({self.kv_lora_rank} + {self.rope_dim}) x {bytes_each(own)} = {row:,} B per token"
                f" per layer (one latent, no factor 2); x {count} layers = {row * count:,} B")

    def window_held(self, context_tokens: int):
        return None

    def tp_note(self, tp: int) -> str:
        return "the MLA latent is replicated on every tensor-parallel GPU"

    def row_bytes(self, precision: Precision, tp: int = 1) -> int:
        if self.kv_dtype:
            precision = by_name(self.kv_dtype)
        if precision.packed:
            raise InputError("kv-dtype", f"{precision.name} packs the K and V of attention heads; an MLA latent "
                                         "has none (vLLM's TurboQuant backend runs no MLA): choose another kv-dtype")
        if self.indexer_row_bytes and precision.name.startswith("fp8"):
            # Sparse MLA (DeepSeek-V3.2) in fp8 is stored as "fp8_ds_mla": the latent in fp8 with
            # an fp32 scale per 128 elements, the rope part kept in 16 bits, 512 + 16 + 128 = 656
            # bytes (vLLM MLAAttentionSpec, SGLang calculate_mla_kv_cache_dim).
            latent = self.kv_lora_rank + ceil_div(self.kv_lora_rank, 128) * 4
            return latent + self.rope_dim * 2 + self.indexer_row_bytes
        return precision.bytes_for(self.kv_lora_rank + self.rope_dim) + self.indexer_row_bytes

    def held_range(self, context_tokens: int):
        return (0, context_tokens)

    def state_bytes(self, precision: Precision, tp: int = 1) -> int:
        return 0

    def check_tp(self, tp: int) -> None:
        return None

    def flops_per_key(self, q_heads: int) -> int:
        # Decode runs MLA absorbed (vLLM, SGLang, FlashMLA): each head scores the latent plus the
        # rope key, then sums latents: (rank + rope) + rank multiply-adds per head and key.
        return 2 * q_heads * (2 * self.kv_lora_rank + self.rope_dim)

    def keys_total(self, tokens: int) -> int:
        return tokens * (tokens + 1) // 2


@dataclass(frozen=True)
class StateSpaceLayer:
    """Linear attention or state-space layer (Mamba, Gated DeltaNet): a fixed state per
    sequence, whatever the context (vLLM MambaSpec: conv state + ssm state). The state is
    split over tensor-parallel ranks by its `heads`."""
    conv_elements: int
    ssm_elements: int
    heads: int
    label: str = "state-space"
    ssm_dtype: str | None = None   # the recurrent state's own precision, when not the model's

    kind = "state"
    title = "fixed state"

    def row_bytes(self, precision: Precision, tp: int = 1) -> int:
        return 0

    def arithmetic(self, kv: Precision, state: Precision, count: int) -> str:
        ssm = by_name(self.ssm_dtype) if self.ssm_dtype else state
        elements = (f"{self.conv_elements + self.ssm_elements:,} elements x {bytes_each(state)}" if ssm == state else
                    f"{self.conv_elements:,} conv elements x {bytes_each(state)} + {self.ssm_elements:,} SSM "
                    f"elements x {bytes_each(ssm)} ({ssm.name})")
        return (f"{self.label}: fixed state {elements} = {self.state_bytes(state):,} B per request per layer; "
                f"x {count} layers")

    def window_held(self, context_tokens: int):
        return None

    def tp_note(self, tp: int):
        return None

    def held_range(self, context_tokens: int):
        return None

    def state_bytes(self, precision: Precision, tp: int = 1) -> int:
        ssm_precision = by_name(self.ssm_dtype) if self.ssm_dtype else precision
        share = self.heads // tp if tp <= self.heads else 1
        conv = precision.bytes_for(self.conv_elements * share // self.heads)
        return conv + ssm_precision.bytes_for(self.ssm_elements * share // self.heads)

    def flops_per_key(self, q_heads: int) -> int:
        # The state update does not grow with the context; its projections are in the parameters.
        return 0

    def keys_total(self, tokens: int) -> int:
        return 0

    def check_tp(self, tp: int) -> None:
        # vLLM divides state heads over ranks and never replicates them.
        if tp > self.heads or self.heads % tp:
            raise InputError("tp", f"tp={tp} does not divide the {self.heads} {self.label} heads")


@dataclass(frozen=True)
class NoCache:
    """A layer that keeps nothing between steps (an MLP-only block in a hybrid)."""

    kind = "none"
    title = "no cache"

    def row_bytes(self, precision: Precision, tp: int = 1) -> int:
        return 0

    def arithmetic(self, kv: Precision, state: Precision, count: int):
        return None

    def window_held(self, context_tokens: int):
        return None

    def tp_note(self, tp: int):
        return None

    def flops_per_key(self, q_heads: int) -> int:
        return 0

    def keys_total(self, tokens: int) -> int:
        return 0

    def held_range(self, context_tokens: int):
        return None

    def state_bytes(self, precision: Precision, tp: int = 1) -> int:
        return 0

    def check_tp(self, tp: int) -> None:
        return None


KINDS = (FullAttention, SlidingWindowAttention, ChunkedLocalAttention, IndexedAttention, MLAAttention,
         StateSpaceLayer, NoCache)
