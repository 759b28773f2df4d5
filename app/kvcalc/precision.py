"""Storage precisions as exact bits per element, block scales included.

Sources: llama.cpp `ggml/src/ggml-common.h` block layouts (32 elements a block: q8_0 34 bytes,
q5_1 24, q5_0 22, q4_1 20, q4_0 18, iq4_nl 18); NVIDIA NVFP4 (4-bit values plus one fp8
scale per 16 elements). Per-tensor fp8 scales are a few bytes per layer and left out, as
vLLM and SGLang leave them out of their cell sizes.
"""

from dataclasses import dataclass
from fractions import Fraction

from .errors import InputError
from .units import ceil_div


@dataclass(frozen=True)
class Precision:
    name: str
    bits_per_element: Fraction
    description: str

    packed = False       # a format that packs each head's K and V into one slot (PackedKV)

    def bytes_for(self, elements: int) -> int:
        """Bytes for one row of `elements`, rounded up to a whole byte."""
        # Integer form of ceil(elements x bits / 8): this runs for every layer on every update.
        bits = self.bits_per_element
        return ceil_div(elements * bits.numerator, bits.denominator * 8)

    def kv_row_bytes(self, heads: int, head_dim: int, v_head_dim: int) -> int:
        """One token's K and V over `heads` heads of one layer."""
        return self.bytes_for(heads * (head_dim + v_head_dim))

    def kv_head_words(self, head_dim: int, v_head_dim: int) -> str | None:
        """How one head's slot is counted, where the format packs it (None: elements x bits)."""
        return None


@dataclass(frozen=True)
class PackedKV(Precision):
    """vLLM's TurboQuant KV formats (vllm/model_executor/layers/quantization/turboquant/config.py,
    0.34.0): a head's K and V packed into one slot a token. Keys at 8 bits are fp8 as they are;
    fewer bits are Lloyd-Max indices plus an fp16 norm; values are uniform codes plus an fp16
    scale and zero; the slot is rounded up to an even byte count (slot_size_aligned).
    Worked, head_dim 128, turboquant_4bit_nc: keys 64 + 2, values 64 + 4, slot 134 B a head."""
    key_bits: int = 8
    value_bits: int = 4

    packed = True

    def _key_bytes(self, head_dim: int) -> int:
        return head_dim if self.key_bits == 8 else ceil_div(head_dim * self.key_bits, 8) + 2

    def _value_bytes(self, head_dim: int) -> int:
        return ceil_div(head_dim * self.value_bits, 8) + 4

    def slot_bytes(self, head_dim: int) -> int:
        slot = self._key_bytes(head_dim) + self._value_bytes(head_dim)
        return slot + slot % 2

    def kv_row_bytes(self, heads: int, head_dim: int, v_head_dim: int) -> int:
        if v_head_dim != head_dim:
            # TurboQuantConfig.from_cache_dtype takes one head size for both.
            raise InputError("kv-dtype", f"{self.name} packs K and V of one head size; this layer's V heads are "
                                         f"{v_head_dim} wide against K's {head_dim}: choose another kv-dtype")
        return heads * self.slot_bytes(head_dim)

    def kv_head_words(self, head_dim: int, v_head_dim: int) -> str:
        key = (f"{head_dim} B fp8" if self.key_bits == 8
               else f"{ceil_div(head_dim * self.key_bits, 8)} + 2 B norm")
        value = f"{ceil_div(head_dim * self.value_bits, 8)} + 4 B scale and zero"
        slot = self._key_bytes(head_dim) + self._value_bytes(head_dim)
        even = "" if slot % 2 == 0 else f", {slot} rounded up to even"
        return f"K {key} + V {value} = {self.slot_bytes(head_dim)} B a head{even}"


_ALL = (
    Precision("fp32", Fraction(32), "32-bit float"),
    Precision("fp16", Fraction(16), "16-bit float"),
    Precision("bf16", Fraction(16), "bfloat16"),
    Precision("fp8", Fraction(8), "8-bit float (e4m3 by default)"),
    Precision("fp8_e4m3", Fraction(8), "8-bit float, 4-bit exponent"),
    Precision("fp8_e5m2", Fraction(8), "8-bit float, 5-bit exponent"),
    Precision("int8", Fraction(8), "8-bit integer"),
    Precision("int4", Fraction(4), "4-bit integer, scales not counted"),
    Precision("q8_0", Fraction(17, 2), "llama.cpp: 32 x int8 + fp16 scale = 34 B/32"),
    Precision("q5_1", Fraction(6), "llama.cpp: 24 B per 32 elements"),
    Precision("q5_0", Fraction(11, 2), "llama.cpp: 22 B per 32 elements"),
    Precision("q4_1", Fraction(5), "llama.cpp: 20 B per 32 elements"),
    Precision("q4_0", Fraction(9, 2), "llama.cpp: 18 B per 32 elements"),
    Precision("iq4_nl", Fraction(9, 2), "llama.cpp: 18 B per 32 elements"),
    Precision("nvfp4", Fraction(9, 2), "4-bit float + fp8 scale per 16 elements"),
    # TurboQuant's presets (TQ_PRESETS); bits_per_element is the nominal K and V bits' mean.
    PackedKV("turboquant_k8v4", Fraction(6), "vLLM TurboQuant: fp8 keys, 4-bit values", 8, 4),
    PackedKV("turboquant_4bit_nc", Fraction(4), "vLLM TurboQuant: 4-bit keys and values", 4, 4),
    PackedKV("turboquant_k3v4_nc", Fraction(7, 2), "vLLM TurboQuant: 3-bit keys, 4-bit values", 3, 4),
    PackedKV("turboquant_3bit_nc", Fraction(3), "vLLM TurboQuant: 3-bit keys and values", 3, 3),
)

PRECISIONS: dict[str, Precision] = {p.name: p for p in _ALL}

# The dtypes an engine keeps a recurrent (SSM) state in (vllm/config/cache.py MambaDType, SGLang's
# --mamba-ssm-dtype): never 8 bits.
STATE_DTYPES = ("fp32", "bf16", "fp16")

# Spellings found in config.json (torch_dtype) and in engine flags.
_ALIASES = {
    "float32": "fp32", "f32": "fp32", "float": "fp32",
    "float16": "fp16", "f16": "fp16", "half": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8_e4m3", "e4m3": "fp8_e4m3", "fp8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2", "e5m2": "fp8_e5m2",
    "fp4": "nvfp4",
}


def precision(name: str, field: str = "kv-dtype") -> Precision:
    if not isinstance(name, str):
        raise InputError(field, f"expected a precision name, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key in PRECISIONS:
        return PRECISIONS[key]
    allowed = ", ".join(PRECISIONS)
    raise InputError(field, f"unknown precision {name[:40]!r}; allowed: {allowed}")
