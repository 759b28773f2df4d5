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

    def bytes_for(self, elements: int) -> int:
        """Bytes for one row of `elements`, rounded up to a whole byte."""
        # Integer form of ceil(elements x bits / 8): this runs for every layer on every update.
        bits = self.bits_per_element
        return ceil_div(elements * bits.numerator, bits.denominator * 8)


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
