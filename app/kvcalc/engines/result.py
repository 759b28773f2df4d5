"""What every engine module returns: its figures for one deployment, built by keyword, and how it
shares a GPU with other servers (`Sharing`)."""

from dataclasses import dataclass
from enum import Enum
from fractions import Fraction


class BudgetSource(Enum):
    """Where an engine's KV memory came from; the value is the name the JSON and CSV rows print
    (engine_budget_source)."""
    GIVEN_KV_MEMORY = "kv-memory-gib"   # the KV memory given (kv-memory-gib), typed or read from a log
    GIVEN_OVERHEAD = "overhead-gib"     # the memory left beside the weights and the overhead given
    ESTIMATE = "estimate"               # beside the weights and the engine's estimated overhead
    MEASURED = "measured"               # a log's measured overhead, moved by the estimate for an edit
    NONE = "none"                       # no memory to size in (no GPU or weights, no KV memory)


@dataclass(frozen=True)
class EngineResult:
    engine: str
    block_size: int                    # vLLM's block, SGLang's page, llama.cpp's cell padding
    prefill_chunk: int
    kv_budget_bytes_per_gpu: int | None
    kv_bytes_per_request: int | None   # what the engine reserves for one request at the context
    kv_tokens: int | None              # vLLM "GPU KV cache size", SGLang "#tokens", llama.cpp cells
    max_concurrency: Fraction | None   # unrounded, as vLLM prints it
    starts: bool | None
    max_model_len: int | None          # longest context one request can have
    refusal: str | None
    activation_bytes_per_gpu: int | None
    overhead_bytes_per_gpu: int | None
    budget_source: BudgetSource
    log: tuple[str, ...]
    notes: tuple[str, ...]
    # A KV memory read from a log is rounded to 0.01 GiB: the token counts that rounding allows.
    kv_tokens_range: tuple[int, int] | None = None
    # ... and the maximum concurrencies (a count of blocks // groups x block size may not move where
    # the blocks, and so the concurrency, do).
    max_concurrency_range: tuple | None = None
    # An estimated overhead's band: the engine's answer at its top (least KV memory) and bottom.
    band: tuple | None = None
    # The longest context at which it holds the batch at once, at this KV memory, and what limits
    # it ("memory", "model" or "none"); set once for the inputs on screen (evaluation), not for
    # the side tables' variants.
    max_context: int | None = None
    max_context_limited_by: str | None = None
    # The cache it allocates on its busiest GPU, where that is less than its KV memory (llama.cpp
    # allocates its sequences' cells, split by layers over the GPUs); None: the whole KV memory.
    kv_bytes_on_busiest_gpu: int | None = None
    # The weights per GPU it was sized with where they are not the model's: a log's measurement.
    weights_bytes_per_gpu: int | None = None
    # A refusal that is not the context's, in the verdict's words (vLLM's Mamba-cache-block ceiling).
    refusal_words: str | None = None


@dataclass(frozen=True)
class Band:
    """The engine's answer at one end of the overhead estimate's band."""
    overhead_bytes_per_gpu: int
    kv_bytes_per_gpu: int
    starts: bool | None
    max_concurrency: Fraction | None
    kv_tokens: int | None


@dataclass(frozen=True)
class Budget:
    """The memory an engine is sized in, and where it came from, decided before it allocates."""
    kv_bytes_per_gpu: int | None       # None: no GPU or weights, and no KV memory from a log
    activation_bytes_per_gpu: int | None
    overhead_bytes_per_gpu: int | None
    source: BudgetSource
    band: tuple[int, int] | None = None  # the estimated overhead's (lowest, highest) the calibration allows
    weights_bytes_per_gpu: int | None = None  # the weights subtracted, where not the model's (a log's)


def without_budget(name: str, title: str, block_size: int, chunk: int, budget: Budget, notes: list,
                   kv_bytes_per_request: int | None = None) -> EngineResult:
    """An engine's answer when there is no memory to size in: its settings and what one request
    reserves (that needs no memory), no capacity."""
    return EngineResult(
        engine=name, block_size=block_size, prefill_chunk=chunk, kv_budget_bytes_per_gpu=None,
        kv_bytes_per_request=kv_bytes_per_request, kv_tokens=None, max_concurrency=None, starts=None, max_model_len=None,
        refusal=None, activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
        overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu, budget_source=budget.source, log=(),
        notes=tuple(notes + [f"Give a GPU and the weights, or the KV memory from a log, for {title}'s figures."]))


def torch_total(dep, settings, notes: list) -> int:
    """The GPU's total as PyTorch reports it, which vLLM and SGLang multiply: a few hundred MiB
    under nvidia-smi's; nvidia-smi's when PyTorch's is not on record (said in a note)."""
    if dep.torch_memory_bytes is None and not settings.gpu_memory_given:
        notes.append("This GPU's total as PyTorch reports it is not on record: its nvidia-smi total is used, "
                     "a few hundred MiB high.")
    return dep.torch_memory_bytes or dep.gpu_memory_bytes


@dataclass(frozen=True)
class Sharing:
    """How an engine's server shares a GPU with other servers started before it (reports/colocation
    asks it through engines.sharing): what its memory share is of, what it holds beside what it is
    sized with, and whether this release can share at all."""
    share_of: str               # "total": its share is of the GPU's whole memory and it holds all of it
    #                             (vLLM); "free": of the memory free when it starts (SGLang); "needs":
    #                             it holds what it needs (llama.cpp, the exact ideal)
    context_bytes: int          # per GPU, held beside what it is sized with (its CUDA context)
    port: int                   # the port its server listens on by default (--port)
    words: str                  # the rule in a sentence, with its source
    start_check: bool = False   # it refuses to start where the memory free is under its share of the total
    in_use_option: str | None = None    # the input carrying the memory in use when it starts
    refusal: str | None = None  # why this release cannot be sized beside another server; None: it can
