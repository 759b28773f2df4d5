"""What a start-up log's reading means for the answer, said the same on the page and the CLI:
the model the log names when no preset is it (the figures are then withheld, never computed for
the model that happened to be chosen), the layout it leaves unsaid, and where the log's printed
figures and ours differ by more than the log's rounding.

The log's model is resolved by `startup_log.rules.model_entry` (the readers' own resolver): a
reading without a "model" value whose log printed a model path names a model no preset is."""

from fractions import Fraction

from .. import engines
from . import startup_log
from ..errors import InputError
from ..readers.log_rules import unread_gpu
from .options import MANUAL_FIELDS, MODEL_INPUTS
from ..units import GIB

# The inputs that set the layout a log ran with, where its engine's reader expects them.
LAYOUT = ("tp", "pp", "gpus")
LAYOUT_GIVEN = ("tp", "pp", "dp", "gpus")    # any of them set by the user answers the layout
# The log's figures we give too: (name in Reading.printed, what it is, the EngineResult attribute).
FIGURES = (("kv_tokens", "KV cache tokens", "kv_tokens"),
           ("max_concurrency", "maximum concurrency", "max_concurrency"),
           ("kv_memory_gib", "KV memory per GPU", "kv_budget_bytes_per_gpu"))
PRINTED_HALF = Fraction(1, 200)      # vLLM prints its concurrency and memories to 2 decimals


def model_given(reading) -> bool:
    """Whether the reading gives the model: a preset, a config or llama.cpp's dimensions."""
    return any(name in reading.values for name in ("model", "hf-config", *MANUAL_FIELDS))


def named_model(reading) -> str | None:
    """The model the log names (as it printed it) when no preset of identical shape was found."""
    if model_given(reading):
        return None
    text = _printed_path(reading)
    return text[:120] if text else None


def _printed_path(reading) -> str | None:
    """The model path the log printed, or None; a word with no letter or digit in it (a
    command's "\\" line end) names nothing."""
    path = None if reading is None else reading.printed.get("model_path")
    text = None if path is None else str(path.value).strip()
    return text if text and any(c.isalnum() for c in text) else None


def unresolved(reading, config: str, choose: str) -> str | None:
    """Why the figures are withheld, in the words of the surface (`config`: how to give a
    config.json there; `choose`: how to choose a model, with a {what} slot), or None when the
    log's model is known."""
    name = named_model(reading)
    if name is None:
        return None
    return (f"the log names the model {name!r}, which is no preset here: {config}, "
            f"or {choose.format(what='of its shape')}")


def served_path(reading) -> str | None:
    """The model path the log's server was started with (a local copy's, or a repo id), for the
    commands that restart it."""
    text = _printed_path(reading)
    return text if text and len(text) <= 300 else None


def same_model(config, name: str) -> bool:
    """Whether the pasted config.json is the model a log names: the last part of its
    `_name_or_path`, the way a local copy keeps the repo's name."""
    path = config.get("_name_or_path") if isinstance(config, dict) else None
    if not isinstance(path, str) or not path.strip() or not name:
        return False
    return path.strip().rstrip("/").rsplit("/", 1)[-1].lower() == name.strip().rstrip("/").rsplit("/", 1)[-1].lower()


def no_model(reading, config: str, choose: str) -> str | None:
    """The log names no model at all: which one it ran is the user's to say."""
    if model_given(reading) or named_model(reading) is not None:
        return None
    return f"the log names no model: {config}, or {choose.format(what='its server ran')}"


def cli_refusal(reading) -> InputError | None:
    """`kvcalc --from-log` without a model of its own, when the log's model is not known."""
    config, choose = "give its config.json with --hf-config FILE", "choose a model {what} with --model ID"
    message = unresolved(reading, config, choose) or no_model(reading, config, choose)
    return None if message is None else InputError("model", message)


def unknown_layout(reading) -> tuple[str, ...]:
    """The layout inputs the log's engine prints and this log did not: the user must give them."""
    module = next((m for m in startup_log._modules() if m.NAME == reading.engine), None)
    expected = {option for option, _ in getattr(module, "EXPECTED", ())}
    return tuple(name for name in LAYOUT if name in expected and name not in reading.values)


def assumed_layout(reading, evaluation, user_gave: bool) -> list[tuple[str, int]]:
    """(option, the value in force) for each layout input the log does not give, while the user
    has not given the layout either (`user_gave`: any of LAYOUT_GIVEN set by them)."""
    deployment = evaluation.scenario.deployment if evaluation is not None and evaluation.scenario else None
    unknown = unknown_layout(reading)
    if deployment is None or user_gave or not unknown:
        return []
    in_force = {"tp": deployment.tp, "pp": deployment.pp}
    in_force["gpus"] = evaluation.values.get("gpus", deployment.tp * deployment.pp)
    return [(name, in_force[name]) for name in unknown]


# The inputs that say which GPU a log ran on: a preset, or the total PyTorch reported.
GPU_GIVEN = ("gpu", "gpu-memory-gib")


def assumed_gpu(reading, evaluation, user_gave: bool) -> str | None:
    """The GPU in force (its name, or its memory) when the log names none and prints no total,
    while the user has not chosen one either: the memory checks then use a card the log never
    named, which the summary must say (its KV figures still hold: they are the log's)."""
    deployment = evaluation.scenario.deployment if evaluation is not None and evaluation.scenario else None
    if deployment is None or user_gave or any(name in reading.values for name in GPU_GIVEN):
        return None
    if deployment.gpu is not None:
        return deployment.gpu.name
    if deployment.gpu_memory_bytes:
        return f"a GPU of {float(Fraction(deployment.gpu_memory_bytes, GIB)):,.2f} GiB"
    return None


def gpu_unsaid(reading) -> str:
    """Why the log gives no GPU, for the sentence beside `assumed_gpu`: it named none, or it named
    one that no preset is, or that fits several (the reader's words: "the log's GPU 'X' is no
    preset: ...")."""
    return unread_gpu(reading.printed) or "the log does not say its GPU"


def no_cache(reading) -> str | None:
    """The engine the log ran had no memory for its KV cache (it printed a KV memory of zero or
    less, or a pool of 0 tokens): it did not start, which no estimate of ours may paper over. The
    sentence names the line, what it printed and by how much it fell short; None otherwise."""
    empty = reading.printed.get("kv_pool_empty")
    if empty is None:
        return None
    printed, short, refusal = empty.value
    if short is None:
        by = ""
    elif short == 0:
        by = ", not a byte left for it"
    else:
        by = f", {float(short):,.2f} GiB short of any"
    return (f"the log's engine will not start: line {empty.line_number:,} printed {printed!r}: no memory for its "
            f"KV cache{by} ({refusal}); the figures here are not what it ran")


def mismatches(reading, evaluation) -> list[tuple[str, str, str, int]]:
    """(what, the log printed, these inputs give, the log's line) for each figure that differs by
    more than the log's rounding: its KV memory to 2 decimals (SGLang's K + V to twice that), the
    token counts that rounding allows (`kv_tokens_range`), its concurrency to 2 decimals."""
    engine = evaluation.engine if evaluation is not None and evaluation.ok else None
    if engine is None or engine.engine != reading.engine:
        return []
    half = engines.member(engines.REGISTRY.get(reading.engine), "KV_MEMORY_HALF_WIDTH")
    spread = engine.kv_tokens_range
    rows = []
    for name, what, attribute in FIGURES:
        printed, ours = reading.printed.get(name), getattr(engine, attribute, None)
        if printed is None or ours is None:
            continue
        value = printed.value
        if name == "kv_tokens":
            low, high = sorted(spread) if spread else (ours, ours)
            differs = not min(low, ours) <= value <= max(high, ours)
        elif name == "max_concurrency":
            slack = PRINTED_HALF
            if spread and engine.kv_tokens:
                slack += Fraction(ours) * abs(spread[1] - spread[0]) / engine.kv_tokens
            if engine.max_concurrency_range:
                slack = max(slack, PRINTED_HALF + max(abs(Fraction(end) - Fraction(ours))
                                                      for end in engine.max_concurrency_range))
            differs = abs(Fraction(value) - Fraction(ours)) > slack
        else:
            differs = abs(Fraction(value) - Fraction(ours, GIB)) > half
        if differs:
            rows.append((what, printed.text or _figure(name, value), _figure(name, ours, computed=True), printed.line_number))
    # The figures an engine prints in its own terms (llama.cpp's MiB of its KV buffers, its
    # layers), each beside ours for the same cells (the engine's LOG_FIGURES).
    for name, what, ours_of, slack, unit in engines.member(engines.REGISTRY.get(reading.engine), "LOG_FIGURES"):
        printed, ours = reading.printed.get(name), ours_of(engine)
        if printed is None or ours is None:
            continue
        if abs(Fraction(printed.value) - Fraction(ours)) > slack:
            rows.append((what, printed.text or _engine_figure(printed.value, unit),
                         _engine_figure(ours, unit), printed.line_number))
    return rows + model_facts(reading, evaluation)


# The model's facts a log prints of its weights' file (llama.cpp's GGUF metadata, "gguf_*", or
# its print_info lines, "info_*"), each beside the chosen model's: (the printed name after its
# prefix, what it is, the chosen Model's figure). Its KV layers are LOG_FIGURES' own row.
MODEL_FACTS = (("hidden", "the model's width (n_embd)", lambda model: model.hidden_size),
               ("attention-heads", "its attention heads (n_head)", lambda model: model.attention_heads),
               ("kv-heads", "its KV heads (n_head_kv)",
                lambda model: _one({layer.kv_heads for layer in model.layers if getattr(layer, "kv_heads", None)})),
               ("vocab", "its vocabulary (n_vocab)", lambda model: model.vocab_size))


def _one(values: set):
    return next(iter(values)) if len(values) == 1 else None


def model_facts(reading, evaluation) -> list[tuple[str, str, str, int]]:
    """(what, the log printed, the chosen model has, the log's line) for each fact of the model
    the log printed that the chosen model contradicts: the log ran another model."""
    model = evaluation.scenario.model if evaluation is not None and evaluation.scenario is not None else None
    if model is None:
        return []
    rows = []
    for name, what, ours_of in MODEL_FACTS:
        printed = reading.printed.get("gguf_" + name) or reading.printed.get("info_" + name)
        ours = ours_of(model)
        if printed is None or ours is None or not isinstance(printed.value, int):
            continue
        if printed.value != ours:
            rows.append((what, f"{printed.value:,}", f"{ours:,}", printed.line_number))
    return rows


def _engine_figure(value, unit: str) -> str:
    if unit == "MiB":
        return f"{float(value):,.2f} MiB"
    return f"{int(value):,} {unit}"


def _figure(name: str, value, computed: bool = False) -> str:
    if name == "kv_memory_gib":
        gib = Fraction(value, GIB) if computed else Fraction(value)
        return f"{float(gib):,.2f} GiB"
    if name == "max_concurrency":
        return f"{float(value):,.2f}x"
    return f"{int(value):,}"


def mismatch_text(rows) -> str:
    """One sentence for the summary: each figure the log printed that these inputs do not give."""
    if not rows:
        return ""
    parts = [f"{what} {printed} (line {line:,}), these inputs {ours}" for what, printed, ours, line in rows]
    return "Not as the log printed: " + "; ".join(parts)


# The inputs a form holds whether or not the log gave them: while the user has not touched one since
# the paste, it is the log's (unsaid there), not the user's.
LAYOUT_AND_DTYPE = ("tp", "gpus", "pp", "dp", "kv-dtype")


def implied_for_model(reading, current: dict, applied: dict):
    """(reading, inputs taken) once a model is given over a log naming none (a preset, a
    config.json, dimensions): what the log's figures imply for it (startup_log.implied), as
    `kvcalc --from-log --model` reads it. `current` is the form's inputs, `applied` the form as
    the log left it: a layout or KV dtype changed since is the user's and stays."""
    if reading.values.get("model") or not any(name in current for name in MODEL_INPUTS):
        return reading, {}
    values = dict(current)
    for name in LAYOUT_AND_DTYPE:
        if current.get(name) == applied.get(name):
            if name in reading.values:
                values[name] = reading.values[name]
            else:
                values.pop(name, None)
    again = startup_log.implied(reading, values)
    taken = {k: v for k, v in again.values.items() if k not in MODEL_INPUTS and current.get(k) != v}
    return again, taken if again is not reading else {}
