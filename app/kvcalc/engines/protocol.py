"""The Engine protocol written down: the members an engine's module (engines/<engine>/engine.py)
gives, and the members its start-up log reader (engines/<engine>/log.py) gives. Each member says
what it is, its type or unit, and who asks it. tests/engines/test_engine_protocol.py holds every registered
engine to it, and a toy engine built in the test too.

`Engine` is what every engine must have. `OptionalMembers` is what an engine may leave out: the
registry (engines/__init__.py) keeps each one's default, in one place (DEFAULTS and member() for
data; memory_utilization, data_parallel, usable_words, overhead_words, reservation_words,
count_words, request_bytes_all_gpus, sharing for the callables; attention_tp's alone is kept by
parallel.attention_tp, on the floor below the registry, which asks it), so the shared code never
reads an engine's name. A release-keyed engine gives the five `Releases` members together (releases.py
reads them; an engine without them is not kept by release and refuses engine-version).

Only the test imports this module: the page and the CLI ask the registry, never the protocol.
"""

from fractions import Fraction
from typing import Protocol


class Engine(Protocol):
    """What every engine gives. `scenario` is inputs.scenario.Scenario, `chunk` the prefill chunk
    in tokens, `notes` a list the member may append its notes to (sentences shown beside the
    answer), `out` the engines.result.EngineResult the engine sized."""

    NAME: str
    """Its key: the --engine value, REGISTRY's key, EngineResult.engine ("vllm"). The registry."""
    TITLE: str
    """Its name as it writes it ("vLLM"): every sentence naming it (engines.title)."""
    VENDORS: tuple
    """The GPU vendors its builds run on ("NVIDIA", "AMD", "Apple"): the planner's GPU list."""
    KV_MEMORY_LOGGED: bool
    """Its log prints the KV memory it sized to 0.01 GiB: engines.size gives both ends a given
    kv-memory-gib stands for."""
    SEPARATE_V: bool
    """It stores V in another precision than K (kv-dtype-v): engines._checked refuses it otherwise."""
    TOKENS_LABEL: str
    """What its log calls the token count ("GPU KV cache size"): the report's engine table."""
    REFUSED_MAX_LEN_WORDS: str
    """Whose estimate of the longest context a refusal prints ("vLLM's estimate"), "" for none: the
    report and the verdict."""
    CONCURRENCY_FORMAT: str
    """The concurrency as it prints it, a str.format pattern ("{:,.2f}x"): the report."""
    LABELS: dict
    """The engine card's labels in its log's words, figure key -> label: the report, the page."""
    ALLOCATES_WHOLE_BUDGET: bool
    """Its KV pool takes all the KV memory at start-up (vLLM, SGLang), not only what the requests
    need (llama.cpp): the memory bar."""
    USABLE_WORDS: str
    """A sentence added to the usable memory's row when its overhead is estimated, "" for none: the report."""

    def default_chunk(self, scenario) -> int:
        """Its default prefill chunk in tokens (max_num_batched_tokens, chunked_prefill_size, -ub):
        the registry, the timing, the planner."""

    def usable_memory(self, scenario, chunk: int, notes: list, ideal_usable: int) -> int:
        """Bytes per GPU it may use for the weights, the cache and its overhead (`ideal_usable`:
        the exact ideal's, memory x utilization): the registry's budget, the planner, the source formula."""

    def estimate_overhead(self, scenario, chunk: int, notes: list) -> tuple:
        """(activation peak or None, everything it subtracts beside the weights, the band (low,
        high) of that or None), bytes per GPU: the registry's budget."""

    def size(self, scenario, chunk: int, budget, notes: list):
        """Its answer, an EngineResult, for the KV memory `budget` (engines.result.Budget) leaves:
        the registry (size, answer, longest_context)."""

    def stores(self, kv_precision) -> bool:
        """Whether it can keep the KV cache in this precision.Precision: the registry's check, the sweeps."""

    def explain(self, scenario, out) -> list:
        """Sentences saying how it sized `out`, the first one how it reserves a request: the report."""

    def launch(self, scenario, result=None):
        """The command that starts it as sized (command_line.Launch): serving.launch, the CLI's --launch."""


class OptionalMembers(Protocol):
    """What an engine may leave out; the default the registry gives is in each docstring."""

    ALIASES: tuple
    """Other spellings --engine takes for it ("llamacpp"); default (). The registry's engine_name."""
    FILE_FORMATS: tuple
    """Checkpoint formats that are its own ("gguf"); default (). engines.native_engine."""
    KV_MEMORY_HALF_WIDTH: Fraction
    """Half the width, in GiB, of the KV memory its log prints; default 1/200 (0.01 GiB printed).
    engines.size, inputs.log_flow."""
    CHECKS_ENCODER_SPLIT: bool
    """It refuses a vision tower tp does not divide; default False. serving (encoder)."""
    SPLITS_LAYERS: bool
    """Over several GPUs it splits whole layers (no tensor parallelism); default False. The
    scenario's layout, the planner's layouts."""
    DP_ATTENTION: bool
    """dp > 1 runs data-parallel attention only (Deployment.dp_attention); default False. The scenario."""
    LOG_FIGURES: tuple
    """(name, label, ours_of(result), slack, unit) for figures its log prints beside ours; default
    (). inputs.log_flow."""
    LOG_READER: object
    """Its start-up log reader: the name of a module in its folder ("log"), or a LogReader object;
    default None (no reader). engines.log_readers, inputs.startup_log."""
    FAILURES: object
    """Its failed starts' reader and fixes: the name of a module in its folder ("failures") with
    RULES, PHASE_MARKS, MARKS and fix_kinds(failure); default None. engines.failure_readers,
    inputs.failed_start, reports.fixes."""
    OWN_OPTIONS: tuple
    """Options only it takes ("memory-in-use-gib"); default (). engines.option_owners, the scenario."""
    LOGGED_WHEN_SET: tuple
    """Its options its start-up log prints whenever they are set (vLLM's non-default args): a log
    that does not print one ran with its default, so a what-if that sets it moves the figures;
    default (). The scenario's measured deployment."""
    PADS_CELLS_TO: int
    """It pads the cells a context takes to a multiple of this (llama.cpp: 256); default None. The
    source formula's words."""
    USABLE_BY_GPU: bool
    """Its usable memory depends on the GPU and the settings only, never the layout; default False
    (the planner then asks per layout). The planner."""
    SERVING: object
    """Its serving rules (engines.serving_rules.ServingRules, from engines/<engine>/serving.py): what
    it does with a draft, LoRA slots, an encoder, an offload tier, prefix hits; default None (not
    written down: serving/ refuses those parts for it). serving.rules.
    """

    def memory_utilization(self, scenario, chunk: int) -> Fraction:
        """The share of each GPU it is sized with (its own default where none is given); default
        the deployment's memory utilization. engines.memory_utilization, the report."""

    def attention_tp(self, tp: int, pp: int, dp: int, gpus) -> int:
        """Our tp from the tp given, read in its own words (SGLang's --tp-size under DP attention),
        or None where the tp given is ours; default: tp as given. parallel.attention_tp."""

    def data_parallel(self, moe: bool) -> bool:
        """Whether it runs data-parallel ranks for a model that is (moe) or is not a mixture of
        experts; default True. The planner's layouts (engines.data_parallel)."""

    def usable_words(self, scenario, out, usable: int) -> str:
        """What usable_memory took, in its terms; default "memory utilization U: TITLE allocates
        what it is asked for". The source formula (engines.usable_words)."""

    def overhead_words(self, scenario, out) -> str:
        """What it subtracts beside the weights and the cache; default "TITLE's overhead per GPU,
        estimated". The source formula."""

    def reservation_words(self, scenario, out) -> str:
        """How it reserves one request; default the first line of explain. The source formula."""

    def count_words(self, scenario, out) -> str:
        """How its pool becomes the requests it holds; default "TITLE's own counting". The source formula."""

    def request_bytes_all_gpus(self, scenario, out) -> int:
        """Bytes one request reserves on all GPUs together, or None; default the GPUs x
        out.kv_bytes_per_request. The source formula."""

    def sharing(self, scenario):
        """How its server shares a GPU with servers started before it (engines.result.Sharing:
        what its share is of, its CUDA context, its default port, whether this release can);
        default the exact ideal's: it holds what it needs. engines.sharing, reports.colocation."""

    def kv_layers(self, model, kv_precision, skip, release):
        """The model with each attention layer's own KV dtype where it keeps some apart from the
        run's (vLLM's --kv-cache-dtype-skip-layers, TurboQuant's boundary layers); `skip` the
        kv-dtype-skip-layers entries. Default None: every layer in the run's. inputs.scenario."""


class Releases(Protocol):
    """A release-keyed engine's members, given together (engines/releases.py reads them)."""

    FIRST_RELEASE: str
    """The oldest release its rules were read for, as it prints it ("0.6.4", "b4462")."""
    NEWEST_RELEASE: str
    """The newest release modelled: the one in force when none is given."""
    VERSION_EXAMPLE: str
    """A version as a user would type it, for the refusal's words."""
    VERSIONS_BY_BUILD: bool
    """Its versions are build numbers (llama.cpp's b5192), not PEP 440."""

    def parse_version(self, text: str):
        """The releases.Release a version text names, or None."""


class LogReader(Protocol):
    """An engine's start-up log reader (engines/<engine>/log.py): inputs.startup_log runs every
    registered engine's RULES on each line and completes the one whose lines it found."""

    NAME: str
    """The engine's NAME, whose log this reads."""
    RULES: tuple
    """readers.log_rules.Rule patterns searched in each line, each with its handler."""
    EXPECTED: tuple
    """(option, what the log prints for it, in words) for each input its start-up prints: what a
    log that lacks one is said not to give (startup_log, log_flow)."""

    def complete(self, sink) -> None:
        """Finish the readings once the whole log was read (figures that need several lines)."""


# The members by kind, as the test checks them: data (name -> the type its value has) and
# callables (name -> the names of the arguments it is called with, in order).
def _members(protocol) -> tuple[dict, dict]:
    data = {name: kind for name, kind in protocol.__annotations__.items()}
    calls = {name: value.__code__.co_varnames[1:value.__code__.co_argcount] for name, value in vars(protocol).items()
             if callable(value) and not name.startswith("_")}
    return data, calls


REQUIRED_DATA, REQUIRED_CALLS = _members(Engine)
OPTIONAL_DATA, OPTIONAL_CALLS = _members(OptionalMembers)
RELEASE_DATA, RELEASE_CALLS = _members(Releases)
READER_DATA, READER_CALLS = _members(LogReader)
