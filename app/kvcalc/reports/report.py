"""Words and numbers for people: JSON keys, sizes in GiB or GB, and the formula written out."""

from collections import Counter
from fractions import Fraction

from .. import engines
from ..serving import figures as serving_figures
from ..engines.result import BudgetSource
from . import source_formula
from ..evaluation import Evaluation
from ..parallel import summary_words as parallel_words
from ..inputs.scenario import Scenario
from ..sizing import cache_bytes, generation_work
from .time_report import decode_bound_line, timing_json, timing_lines, timing_texts
from .verdict import kv_memory_contradiction, verdict
from ..words import both, plural, rate, size

JSON_INT_KEYS = ("kv_bytes_per_token", "kv_bytes_per_request", "kv_bytes_total", "kv_bytes_per_gpu",
                 "kv_bytes_all_gpus", "kv_bytes_shared_prefix", "kv_state_bytes_per_request",
                 "weights_bytes", "weights_bytes_per_gpu", "gpu_memory_bytes", "usable_bytes_per_gpu",
                 "kv_budget_bytes_per_gpu", "max_concurrency", "max_context", "kv_equals_weights_context")

def to_json(scenario: Scenario, evaluation: Evaluation, unit: str = "gib") -> dict:
    result = evaluation.result
    out = {key: getattr(result, key) for key in JSON_INT_KEYS}
    # One set of figures: with an engine chosen, what fits is as it sizes it; the exact ideal's
    # own figures stay under exact_ideal.
    out["max_concurrency"] = evaluation.capacity
    out["max_context"], limited_by = evaluation.context_limit
    if kv_memory_contradiction(scenario, evaluation) is not None:
        # A KV memory the card cannot hold beside the weights: what it would give is no answer.
        out["max_concurrency"] = out["max_context"] = limited_by = None
    out["kv_budget_bytes_per_gpu"] = evaluation.budget_bytes_per_gpu
    out["usable_bytes_per_gpu"] = usable_bytes_per_gpu(evaluation)
    judged = verdict(scenario, evaluation, unit)
    timing = evaluation.timing
    # A decode speed only means something for a deployment that fits.
    step = None if judged.fits is False else timing.decode_step_seconds if timing else result.decode_step_seconds
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    out.update({
        "fits": judged.fits,
        "weights_exact": None if result.weights_bytes is None else dep.weights_exact,
        "verdict": judged.sentence,
        "model": model.hf_repo or model.name,
        "layers": len(model.layers),
        "layer_kinds": dict(sorted(Counter(layer.kind for layer in model.layers).items())),
        "context": work.context_tokens,
        "batch": work.batch,
        "kv_dtype": work.kv_precision.name,
        "kv_bits_per_element": _plain(work.kv_precision.bits_per_element),
        "block_size": work.block_size_tokens if work.block_size_tokens > 1 else "off",   # "off": no paging
        "prefix_tokens": work.prefix_tokens,
        "gpus": dep.gpus, "tp": dep.tp, "pp": dep.pp, "gpu": dep.gpu.name if dep.gpu else None,
        # Under SGLang's DP attention tp is its --tp-size (every GPU of a stage), as typed.
        **({"tp": dep.tp * dep.dp, "dp": dep.dp, "attention_tp": dep.tp, "dp_attention": True}
           if dep.dp_attention else {}),
        "memory_utilization": _utilization_in_force(scenario, evaluation),
        "overhead_bytes_per_gpu": dep.overhead_bytes,
        "max_context_limited_by": limited_by,
        "decode_step_seconds": None if step is None else float(step),
        "decode_tokens_per_s_per_request": None if step is None else float(1 / step),
        "decode_tokens_per_s_total": None if step is None else float(work.batch / step),
        "warnings": list(scenario.warnings),
    })
    out.update(timing_json(timing if judged.fits is not False else None, evaluation.timing_missing
                           or ("the configuration does not fit" if timing else None)))
    out.update(engine_json(evaluation.engine))
    out["engine_version"] = None if scenario.settings.release is None or evaluation.engine is None else \
        str(scenario.settings.release)
    out["sized_as"] = "exact ideal" if evaluation.engine is None else \
        " ".join(filter(None, (engines.title(evaluation.engine.engine), out["engine_version"])))
    if evaluation.engine is not None and evaluation.engine.overhead_bytes_per_gpu is not None:
        out["overhead_bytes_per_gpu"] = evaluation.engine.overhead_bytes_per_gpu   # the engine's, estimated or given
    out["source_formula"] = source_formula.json_of(scenario, evaluation)
    out.update(serving_figures(scenario, evaluation))
    out["exact_ideal"] = None if evaluation.engine is None else {
        "max_concurrency": result.max_concurrency, "max_context": result.max_context,
        "max_context_limited_by": result.max_context_limited_by,
        "kv_budget_bytes_per_gpu": result.kv_budget_bytes_per_gpu, "usable_bytes_per_gpu": result.usable_bytes_per_gpu,
        "memory_utilization": _plain(dep.memory_utilization), "overhead_bytes_per_gpu": dep.overhead_bytes}
    return out


def _utilization_in_force(scenario: Scenario, evaluation: Evaluation):
    """The memory utilization the sizing in force applied: the one given to the exact ideal, the
    engine's (given, or its own default: vLLM 0.33.0's 0.92, SGLang's derived fraction); null
    where a KV memory from a log stands in for it."""
    if evaluation.engine is None:
        return _plain(scenario.deployment.memory_utilization)
    share = engines.memory_utilization(scenario, evaluation.engine)
    return None if share is None else _plain(share)


def usable_bytes_per_gpu(evaluation: Evaluation) -> int | None:
    """The memory the sizing in force may use per GPU: the engine's (its utilization of the total
    PyTorch reports, or SGLang's static fraction) when its overhead is known, else memory x
    utilization. None where an engine's is not known (a KV memory read from a log)."""
    result = evaluation.result
    engine = evaluation.engine
    if engine is None:
        return result.usable_bytes_per_gpu
    weights = result.weights_bytes_per_gpu if engine.weights_bytes_per_gpu is None else engine.weights_bytes_per_gpu
    if engine.kv_budget_bytes_per_gpu is None or engine.overhead_bytes_per_gpu is None or weights is None:
        return None
    return engine.kv_budget_bytes_per_gpu + weights + engine.overhead_bytes_per_gpu


ENGINE_KEYS = ("engine", "engine_block_size", "engine_prefill_chunk", "engine_kv_bytes_per_request",
               "engine_kv_budget_bytes_per_gpu", "engine_kv_tokens", "engine_max_concurrency", "engine_starts",
               "engine_max_model_len", "engine_refusal", "activation_bytes_per_gpu", "engine_budget_source",
               "engine_kv_tokens_range", "overhead_band_bytes_per_gpu", "engine_max_concurrency_band", "engine_log")


def engine_json(engine) -> dict:
    """The engine's figures under their JSON keys; null where no engine was asked for."""
    if engine is None:
        return dict.fromkeys(ENGINE_KEYS)
    return {
        "engine": engine.engine, "engine_block_size": engine.block_size, "engine_prefill_chunk": engine.prefill_chunk,
        "engine_kv_bytes_per_request": engine.kv_bytes_per_request,
        "engine_kv_budget_bytes_per_gpu": engine.kv_budget_bytes_per_gpu, "engine_kv_tokens": engine.kv_tokens,
        "engine_max_concurrency": None if engine.max_concurrency is None else float(engine.max_concurrency),
        "engine_starts": engine.starts, "engine_max_model_len": engine.max_model_len,
        "engine_refusal": engine.refusal, "activation_bytes_per_gpu": engine.activation_bytes_per_gpu,
        "engine_budget_source": engine.budget_source.value,
        "engine_kv_tokens_range": None if engine.kv_tokens_range is None else list(engine.kv_tokens_range),
        # The estimate's band, lowest overhead first, and the concurrency at the same two ends
        # (null where the engine would not start there).
        "overhead_band_bytes_per_gpu": None if not engine.band else
        [end.overhead_bytes_per_gpu for end in reversed(engine.band)],
        "engine_max_concurrency_band": None if not engine.band else
        [None if end.max_concurrency is None or not end.starts else float(end.max_concurrency)
         for end in reversed(engine.band)],
        "engine_log": list(engine.log),
    }


def _kept_words(model) -> str:
    kept = [layer.kv_dtype for layer in model.layers if getattr(layer, "kv_dtype", None)]
    return f" ({len(kept)} layer{'s' if len(kept) > 1 else ''} kept in {kept[0]})" if kept else ""


def _precision_words(kv) -> str:
    # A packed format's bits are a nominal mean; its description says what a head's slot holds.
    return f"{kv.name} ({kv.description})" if kv.packed else f"{kv.name} ({_plain(kv.bits_per_element)} bits)"


def _plain(value: Fraction):
    return int(value) if value.denominator == 1 else float(value)


def formula_lines(scenario: Scenario, evaluation: Evaluation, unit: str, fits: bool | None) -> list[str]:
    """The arithmetic, written out with this configuration's numbers (seeds' style); `fits` is
    the verdict's, which the caller has already reached."""
    result = evaluation.result
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    kv, lines = work.kv_precision, []
    groups = model.layer_counts()
    for layer, count in groups.items():
        line = layer.arithmetic(kv, work.state_precision, count)
        if line:
            lines.append(line)
    lines.append(f"KV per token = {result.kv_bytes_per_token:,} B ({size(result.kv_bytes_per_token, unit)})")
    windows = sorted({held for layer in groups if (held := layer.window_held(work.context_tokens))})
    held = f"{work.context_tokens:,} tokens" + "".join(f"; {words}" for _, words in windows)
    if work.block_size_tokens > 1:
        held += f"; rounded up to blocks of {work.block_size_tokens} tokens"
    lines.append(f"Per request: {held} -> {result.kv_bytes_per_request:,} B ({size(result.kv_bytes_per_request, unit)})")
    if result.kv_bytes_shared_prefix:
        lines.append(f"Shared prefix of {work.prefix_tokens:,} tokens stored once: {result.kv_bytes_shared_prefix:,} B")
    per_request_private = result.kv_bytes_per_request - result.kv_bytes_shared_prefix
    lines.append(f"Total = {per_request_private:,} B x {plural(work.batch, 'request')}"
                 + (f" + {result.kv_bytes_shared_prefix:,} B shared" if result.kv_bytes_shared_prefix else "")
                 + f" = {result.kv_bytes_total:,} B ({size(result.kv_bytes_total, unit)})")
    if dep.gpus > 1:
        notes = list(dict.fromkeys(note for layer in groups if (note := layer.tp_note(dep.tp))))
        ranks = "" if dep.dp == 1 else (f", dp{' attention' if dep.dp_attention else ''}={dep.dp}: each rank's "
                                        f"GPUs hold only its own "
                                        f"{plural(result.rank_batch, 'request')}")
        lines.append(f"Per GPU ({'attention ' if dep.dp_attention else ''}tp={dep.tp}, pp={dep.pp}{ranks}): " + "; ".join(notes + [
            f"most loaded GPU holds {result.kv_bytes_per_gpu:,} B ({size(result.kv_bytes_per_gpu, unit)})"]))
    if evaluation.engine is not None:
        lines.extend(_engine_capacity_lines(scenario, evaluation, unit))
    elif result.kv_budget_bytes_per_gpu is not None:
        util = dep.memory_utilization
        util_text = "" if util == 1 else f" x {float(util):g}"
        lines.append(f"KV budget per GPU = {size(dep.gpu_memory_bytes, unit)}{util_text} - weights "
                     f"{size(result.weights_bytes_per_gpu, unit)} - overhead {size(dep.overhead_bytes, unit)} = "
                     f"{size(result.kv_budget_bytes_per_gpu, unit)}"
                     + (" (before activations and runtime memory: set an overhead, or size as an engine, "
                        "which subtracts its own)" if not dep.overhead_bytes else ""))
        stage_shared, stage_private = _heaviest_stage(scenario)
        if stage_private and result.kv_budget_bytes_per_gpu >= 0:
            shared_text = f"({size(result.kv_budget_bytes_per_gpu, unit)} - {size(stage_shared, unit)} shared)" \
                if stage_shared else size(result.kv_budget_bytes_per_gpu, unit)
            lines.append(f"Max concurrency = floor({shared_text} / {size(stage_private, unit)} per request per GPU)"
                         f" = {result.max_concurrency:,}")
        if result.max_context is not None:
            why = {"memory": "memory", "model": "the model's max_position_embeddings"}[result.max_context_limited_by]
            lines.append(f"Max context for {plural(work.batch, 'request')} = {plural(result.max_context, 'token')}"
                         f" (limited by {why})")
    if result.decode_step_seconds and fits is False:
        lines.append("Decode bound: not given, because this configuration does not fit (the verdict says why)")
    elif evaluation.timing is not None:
        lines.extend(timing_lines(scenario, evaluation.timing, unit))
    elif result.decode_step_seconds:
        lines.append(decode_bound_line(scenario, result))
    return lines


# How an engine's overhead came about, in a phrase.
SOURCE_WORDS = {BudgetSource.ESTIMATE: "estimated", BudgetSource.MEASURED: "the log's, moved by the estimate for your edit"}


def engine_memory_line(scenario: Scenario, evaluation: Evaluation, unit: str) -> str | None:
    """How the engine's KV memory per GPU comes about, with these numbers."""
    result = evaluation.result
    engine, name = evaluation.engine, engines.title(evaluation.engine.engine)
    if engine.kv_budget_bytes_per_gpu is None:
        return None
    if engine.budget_source is BudgetSource.GIVEN_KV_MEMORY:
        return f"KV memory per GPU ({name}) = {size(engine.kv_budget_bytes_per_gpu, unit)}, as your engine reported it"
    usable = usable_bytes_per_gpu(evaluation)
    weights = result.weights_bytes_per_gpu if engine.weights_bytes_per_gpu is None else engine.weights_bytes_per_gpu
    logged = "" if engine.weights_bytes_per_gpu is None else " (the log's, moved by your edit)" \
        if engine.budget_source is BudgetSource.MEASURED else f" (as {name} places them)"
    line = f"KV memory per GPU ({name}) = usable {size(usable, unit)} - weights {size(weights, unit)}{logged}"
    if engine.overhead_bytes_per_gpu:        # SGLang subtracts none: its activations live in what it leaves
        what = SOURCE_WORDS.get(engine.budget_source, "yours")
        band = "" if not engine.band else (f"; its band {size(engine.band[1].overhead_bytes_per_gpu, unit)} to "
                                           f"{size(engine.band[0].overhead_bytes_per_gpu, unit)}")
        line += f" - overhead {size(engine.overhead_bytes_per_gpu, unit)} ({what}{band})"
    return line + f" = {size(engine.kv_budget_bytes_per_gpu, unit)}"


def _engine_capacity_lines(scenario: Scenario, evaluation: Evaluation, unit: str) -> list[str]:
    """The budget, the requests and the longest context as the chosen engine sizes them, with the
    exact ideal's answer named beside (it is what no engine allocates)."""
    result = evaluation.result
    engine, name, work = evaluation.engine, engines.title(evaluation.engine.engine), scenario.workload
    lines = []
    memory = engine_memory_line(scenario, evaluation, unit)
    if memory:
        lines.append(memory)
    if engine.starts and engine.max_concurrency is not None:
        ideal = "" if result.max_concurrency is None else \
            f" (the exact ideal, no engine's rules: {plural(result.max_concurrency, 'request')})"
        lines.append(f"Max concurrency ({name}) = {float(engine.max_concurrency):,.2f} requests of "
                     f"{work.context_tokens:,} tokens -> {plural(evaluation.capacity, 'request')} at once{ideal}")
    elif engine.starts is False:
        lines.append(f"Max concurrency ({name}): none, it does not start with these inputs (the verdict says why)")
    longest, limited_by = evaluation.context_limit
    if longest is not None and limited_by is not None:
        why = {"memory": f"{name}'s KV memory", "model": "the model's max_position_embeddings"}[limited_by]
        lines.append(f"Max context for {plural(work.batch, 'request')} ({name}, at this KV memory) = "
                     f"{plural(longest, 'token')} (limited by {why})")
    return lines


def _heaviest_stage(scenario: Scenario):
    """(shared, per request) bytes on the GPU that limits concurrency."""
    work, dep = scenario.workload, scenario.deployment
    best = None
    for stage, _ in scenario.model.stage_groups(dep.pp):
        shared, private = cache_bytes(stage, work.context_tokens, work, dep.tp)
        if private and (best is None or private > best[1]):
            best = (shared, private)
    return best or (0, 0)


# The rows the short answer keeps (the CLI's default; --explain prints every row and the arithmetic).
SHORT_ROWS = ("Verdict", "Model", "KV precision", "KV per token", "KV per request", "KV per GPU", "Weights per GPU",
              "Max concurrent requests", "Max context")


def table(evaluation: Evaluation, unit: str = "gib", explain: bool = True, command: str | None = None) -> str:
    """The figures as a table. `explain`: every row, the arithmetic and why each engine figure is
    what it is; else the short answer: the verdict, the headline rows and what runs beside the
    model, what the engine prints, the notes, and `command` (its launch command, where one is made)."""
    scenario = evaluation.scenario
    judged = verdict(scenario, evaluation, unit)
    rows, serving = _rows(evaluation, judged, unit)
    parts = _serving_rows(serving)
    rows = rows + parts if explain else [(k, v) for k, v in rows if k.startswith(SHORT_ROWS)] + parts
    width = max(len(k) for k, _ in rows)
    out = [f"{k.ljust(width)}  {v}" for k, v in rows]
    if explain:
        out.append("")
        out.extend("  " + line for line in formula_lines(scenario, evaluation, unit, judged.fits))
        for name, part in serving["serving"].items():
            out.append("")
            out.append(f"{SERVING_TITLES[name]}:")
            out.extend("  " + line for line in part.get("lines", ()))
    engine = engine_texts(scenario, evaluation, unit)
    if engine["title"]:
        out.append("")
        out.append(f"Sized as {engine['title']} allocates:")
        out.extend("  " + line for line in engine["log"].splitlines())
        if explain:
            out.extend(f"  why: {line}" for line in engine["why"])
    out.extend(f"note: {w}" for w in scenario.warnings)
    if not explain:
        out += (["", f"Launch: {command}"] if command else []) + [
            "", "--explain: the arithmetic, and why each figure is what it is"]
    return "\n".join(out)


def _rows(evaluation: Evaluation, judged, unit: str) -> tuple[list, dict]:
    """The table's (label, value) rows, every one, and the serving figures the rows of what runs
    beside the model come from."""
    scenario, result = evaluation.scenario, evaluation.result
    rows = [
        ("Verdict", judged.sentence),
        ("Model", f"{scenario.model.name} ({len(scenario.model.layers)} layers)"),
        ("KV precision", _precision_words(scenario.workload.kv_precision)),
    ]
    work = scenario.workload
    requests = plural(work.batch, "request")
    weights = (lambda n: both(n) if scenario.deployment.weights_exact or n is None
               else f"≈ {size(n, 'gib')} = {size(n, 'gb')} (from a rounded parameter count)")
    withheld = "n/a (the KV memory contradicts these inputs: the verdict says why)" \
        if kv_memory_contradiction(scenario, evaluation) is not None else None
    rows += [
        ("KV per token (all layers)", both(result.kv_bytes_per_token)),
        (f"KV per request (at {work.context_tokens:,} tokens)", both(result.kv_bytes_per_request)),
        (f"KV total ({requests}, one copy)", both(result.kv_bytes_total)),
        (f"KV per GPU ({requests}; tp={result.tp}, pp={result.pp})" if result.dp == 1 else
         f"KV per GPU ({plural(result.rank_batch, 'request')} a rank; "
         + (f"attention tp={result.tp}, pp={result.pp}, dp attention={result.dp})"
            if evaluation.scenario.deployment.dp_attention else f"tp={result.tp}, pp={result.pp}, dp={result.dp})"),
         both(result.kv_bytes_per_gpu)),
    ] + ([(f"KV on all GPUs ({requests}, every copy)", both(result.kv_bytes_all_gpus))]
         if result.kv_bytes_all_gpus != result.kv_bytes_total else []) + [
        ("Weights (all GPUs)", weights(result.weights_bytes)),
        ("Weights per GPU" + (" (with the parts below)" if scenario.serving.added_weights_bytes_per_gpu else ""),
         weights(result.weights_bytes_per_gpu)),
        (f"Max concurrent requests (of {work.context_tokens:,} tokens)",
         withheld or "n/a (needs GPU memory and the weights' size)" if withheld or evaluation.capacity is None
         else f"{evaluation.capacity:,}"),
        (f"Max context ({requests})", withheld or _max_context_text(evaluation)),
        ("KV = weights at context (per GPU)", "n/a" if result.kv_equals_weights_context is None
         else f"{result.kv_equals_weights_context:,} tokens"),
    ]
    return rows, serving_figures(scenario, evaluation)


SERVING_TITLES = {"draft": "Speculative decoding", "lora": "LoRA adapters", "encoder": "Vision encoder",
                  "offload": "KV offload tier", "prefix_hits": "Prefix cache hits"}


def _serving_rows(data: dict) -> list:
    """The table's rows for what runs beside the model: each part's headline figure, from
    serving.figures."""
    rows = []
    if data["draft_weights_bytes_per_gpu"] is not None:
        rows.append(("Draft weights per GPU", both(data["draft_weights_bytes_per_gpu"])))
    if data["draft_kv_bytes_per_gpu"] is not None:
        rows.append(("Draft KV per GPU", both(data["draft_kv_bytes_per_gpu"])))
    if data["lora_bytes_per_gpu"] is not None:
        rows.append(("LoRA slots per GPU", both(data["lora_bytes_per_gpu"])))
    if data["encoder_weights_bytes"] is not None:
        rows.append(("Vision encoder weights", both(data["encoder_weights_bytes"])))
    if data["offload_tokens"] is not None:
        rows.append(("Offload tier holds", f"{data['offload_tokens']:,} tokens"
                     + ("" if data["offload_requests"] is None else f" ({plural(data['offload_requests'], 'request')})")))
    if data["expected_requests_fit"] is not None:
        rows.append(("Requests that fit (expected, hit rate)", f"{float(data['expected_requests_fit']):,.2f}"))
    return rows


def _max_context_text(evaluation: Evaluation) -> str:
    longest, limited_by = evaluation.context_limit
    if limited_by is None and evaluation.engine is not None and evaluation.engine.refusal_words:
        return "n/a (it does not start at any context: the verdict says why)"
    if limited_by is None:
        return "n/a (needs GPU memory and the weights' size)"
    if longest is None:
        return "unbounded (every layer's cache is capped)"
    suffix = " (model limit)" if limited_by == "model" else ""
    return f"{longest:,} tokens{suffix}"


def conditions(scenario: Scenario, evaluation: Evaluation, unit: str = "gib") -> str:
    """The inputs every headline figure depends on, in one line."""
    work, dep = scenario.workload, scenario.deployment
    if dep.gpu is not None:
        gpus = f"{dep.gpus:,} x {dep.gpu.name}"
    elif dep.gpu_memory_bytes:
        gpus = f"{plural(dep.gpus, 'GPU')} of {size(dep.gpu_memory_bytes, unit)}"
    else:
        gpus = "no GPU chosen"
    parallel = f" ({parallel_words(dep)})" if dep.gpus > 1 else ""
    sized = f" · sized as {engines.title(evaluation.engine.engine)} allocates" if evaluation.engine else ""
    return (f"{scenario.model.name} · {plural(work.context_tokens, 'token')} per request · "
            f"{plural(work.batch, 'request')} · KV {work.kv_precision.name} · {gpus}{parallel}{sized}")


def metric_conditions(scenario: Scenario, evaluation: Evaluation) -> dict:
    """What each figure is for, said beside it: per token or request, for how many, per GPU or all."""
    result = evaluation.result
    work, dep = scenario.workload, scenario.deployment
    ctx, batch = f"{work.context_tokens:,} tokens", plural(work.batch, "request")
    gpus = plural(dep.gpus, "GPU")
    rules = f"{engines.title(evaluation.engine.engine)}'s rules" if evaluation.engine else "exact ideal"
    # The cache's own sizes are the model's, whatever the engine: with one chosen they say so.
    ideal = "; exact ideal" if evaluation.engine else ""
    copies = result.kv_bytes_all_gpus / result.kv_bytes_total if result.kv_bytes_total else 1
    return {
        "max_concurrency": f"of {ctx} each, on {gpus} ({rules})",
        "kv_bytes_per_request": f"one request at {ctx}, all GPUs together, one copy{ideal}",
        "kv_bytes_per_gpu": f"{batch} of {ctx}, on the most loaded GPU{ideal}",
        "max_context": f"for {batch}, on {gpus} ({rules}" + (", at its KV memory)" if evaluation.engine else ")"),
        "kv_bytes_per_token": f"one token, every layer, one copy{ideal}",
        "kv_bytes_total": f"{batch} of {ctx}, one copy{ideal}",
        "kv_bytes_all_gpus": (f"{batch} of {ctx}, every copy on all {gpus}: tensor parallelism keeps "
                              f"{copies:.3g} copies{ideal}" if copies > 1 else
                              f"{batch} of {ctx}, all {gpus} together: each holds its own share, no copies{ideal}")
        if dep.gpus > 1 else f"{batch} of {ctx}, on the one GPU{ideal}",
        "weights_bytes": f"all {gpus} together" if dep.gpus > 1 else "on the one GPU",
        "weights_bytes_per_gpu": f"each of {gpus}" if dep.gpus > 1 else "the one GPU",
        "kv_equals_weights_context": (f"per GPU: {batch}' cache on the most loaded GPU against its weights"
                                      if work.batch > 1 else
                                      "per GPU: one request's cache on the most loaded GPU against its weights")
        + ideal,
        "decode_tokens_per_s_per_request": f"a lower bound at {batch} of {ctx}, from memory bandwidth",
    }


def page_texts(scenario: Scenario, evaluation: Evaluation, unit: str = "gib") -> dict:
    """Every text the page's results show, for the browser module and for the build, which
    writes the default view into the HTML so it is correct before Python starts."""
    result = evaluation.result
    data = to_json(scenario, evaluation, unit)
    metrics = {}      # key -> (exact value, the figure, its exact form or a second part)
    dep = scenario.deployment
    for key in ("kv_bytes_per_token", "kv_bytes_per_request", "kv_bytes_total", "kv_bytes_per_gpu",
                "kv_bytes_all_gpus", "weights_bytes", "weights_bytes_per_gpu"):
        value = data[key]
        if value is None:
            metrics[key] = (value, "n/a (give parameters or weights)", "")
        elif key.startswith("weights") and not dep.weights_exact:
            # From a rounded parameter count: to the byte would claim a precision it does not have.
            metrics[key] = (value, "≈ " + size(value, unit), "from a rounded parameter count")
        else:
            metrics[key] = (value, size(value, unit), f"{value:,} B")
    no_weights = "n/a: give the weights (Advanced: Parameters or Weights)"
    no_budget = "n/a: choose a GPU (or its memory)" if dep.gpu_memory_bytes is None else no_weights
    if kv_memory_contradiction(scenario, evaluation) is not None:
        no_budget = "n/a: the KV memory contradicts these inputs (the verdict says why)"
    metrics["max_concurrency"] = (data["max_concurrency"], no_budget if data["max_concurrency"] is None
                                  else f"{data['max_concurrency']:,}", "")
    ctx, limit = data["max_context"], data["max_context_limited_by"]
    if limit is None and evaluation.engine is not None and evaluation.engine.refusal_words:
        no_context = "n/a: it does not start at any context (the verdict says why)"   # as the CLI says it
    else:
        no_context = no_budget
    metrics["max_context"] = (ctx, no_context if limit is None else "unbounded: every layer's cache is capped"
                              if ctx is None else plural(ctx, "token"), "the model's limit" if limit == "model" else "")
    cross = data["kv_equals_weights_context"]
    metrics["kv_equals_weights_context"] = (cross, "n/a" if cross is None else plural(cross, "token"), "")
    tps = data["decode_tokens_per_s_per_request"]
    no_speed = "n/a: choose a GPU preset" if dep.bandwidth_bytes_per_s is None else \
        "n/a: it does not fit" if data["fits"] is False else no_weights
    metrics["verdict"] = ("" if data["fits"] is None else str(data["fits"]).lower(), data["verdict"], "")
    metrics["decode_tokens_per_s_per_request"] = (
        (None, no_speed, "") if tps is None else
        (int(tps), f"≤ {rate(tps)} tokens/s per request", f"≤ {rate(data['decode_tokens_per_s_total'])} in total"))
    metrics.update(_overhead_metrics(scenario, evaluation, data, unit))
    time_texts = timing_texts(scenario, evaluation, data["fits"], unit)
    metrics.update(time_texts["metrics"])
    model = scenario.model
    kinds = ", ".join(f"{n} {k}" for k, n in data["layer_kinds"].items())
    work = generation_work(scenario.workload.context_tokens)
    return {
        "data": data,
        "conditions": conditions(scenario, evaluation, unit),
        "metric_conditions": {**metric_conditions(scenario, evaluation), **overhead_conditions(scenario, evaluation, unit),
                              **time_texts["conditions"]},
        "time_live": time_texts["live"],
        "engine": engine_texts(scenario, evaluation, unit),
        "metrics": {k: ("" if v is None else str(v), figure, exact) for k, (v, figure, exact) in metrics.items()},
        "model_line": f"{model.name}: {len(model.layers)} layers ({kinds}); KV stored as "
                      f"{scenario.workload.kv_precision.name}{_kept_words(model)}; tp={result.tp}, pp={result.pp}.",
        "formula": formula_lines(scenario, evaluation, unit, data["fits"]) + [f"Note: {w}" for w in scenario.warnings],
        "live": {"work-tokens": f"{work.tokens:,}", "work-without": f"{work.without_cache:,}",
                 "work-with": f"{work.with_cache:,}", "crossover": "n/a" if cross is None else f"{cross:,}"},
    }


def _overhead_metrics(scenario: Scenario, evaluation: Evaluation, data: dict, unit: str) -> dict:
    """The overhead subtracted per GPU and the activation peak in it, as the sizing in force has them."""
    engine = evaluation.engine
    overhead = None if engine is not None and engine.budget_source is BudgetSource.GIVEN_KV_MEMORY else \
        data["overhead_bytes_per_gpu"]
    activation = None if engine is None else engine.activation_bytes_per_gpu
    out = {}
    for key, value in (("overhead_bytes_per_gpu", overhead), ("activation_bytes_per_gpu", activation)):
        out[key] = (value, "n/a" if value is None else size(value, unit), "" if value is None else f"{value:,} B")
    return out


def overhead_conditions(scenario: Scenario, evaluation: Evaluation, unit: str) -> dict:
    engine = evaluation.engine
    if engine is None:
        given = scenario.deployment.overhead_bytes
        return {"overhead_bytes_per_gpu": "yours: the exact ideal subtracts only what you set" if given else
                "none: the exact ideal subtracts nothing; size as an engine for its estimate",
                "activation_bytes_per_gpu": "n/a: the exact ideal has none; an engine's estimate is part of its overhead"}
    name = engines.title(engine.engine)
    band = "" if not engine.band else (f" (band {size(engine.band[1].overhead_bytes_per_gpu, unit)} to "
                                       f"{size(engine.band[0].overhead_bytes_per_gpu, unit)})")
    overhead = {BudgetSource.GIVEN_KV_MEMORY: f"n/a: your log gives {name}'s KV memory, which already leaves it out",
                BudgetSource.GIVEN_OVERHEAD: f"yours, in place of {name}'s estimate",
                BudgetSource.ESTIMATE: f"{name}'s, estimated{band}: subtracted before the KV cache",
                BudgetSource.MEASURED: f"the log's, moved by {name}'s estimate for what you changed{band}",
                BudgetSource.NONE: f"{name}'s, estimated{band}"}[engine.budget_source]
    if engine.budget_source is BudgetSource.ESTIMATE and not engine.overhead_bytes_per_gpu:
        overhead = f"none subtracted: {name} keeps its activations in the share its memory cap leaves"
    activation = f"{name}'s profiling run, estimated: part of the overhead" \
        if engine.activation_bytes_per_gpu is not None else f"n/a: {name}'s estimate has no separate activation peak"
    return {"overhead_bytes_per_gpu": overhead, "activation_bytes_per_gpu": activation}


def engine_texts(scenario: Scenario, evaluation: Evaluation, unit: str = "gib") -> dict:
    """What the page shows for the chosen engine: its figures, its start-up lines, and why they
    differ from the exact ideal. Empty when no engine was chosen."""
    result = evaluation.result
    engine = evaluation.engine
    if engine is None:
        return {"title": "", "metrics": {}, "why": [], "log": "", "labels": {}}
    rules = engines.REGISTRY[engine.engine]
    name = rules.TITLE
    work = scenario.workload
    conc = engine.max_concurrency

    def nbytes(n):
        return ("" if n is None else str(n), "n/a" if n is None else size(n, unit), "" if n is None else f"{n:,} B")
    metrics = {
        "engine_starts": ("" if engine.starts is None else str(engine.starts).lower(),
                          "unknown: give a GPU and weights, or the KV memory" if engine.starts is None else
                          "yes" if engine.starts else "no: it refuses", ""),
        "engine_max_concurrency": ("" if conc is None else f"{float(conc):.6g}",
                                   "n/a" if conc is None else rules.CONCURRENCY_FORMAT.format(float(conc)),
                                   f"requests of {work.context_tokens:,} tokens at once"),
        "engine_kv_tokens": ("" if engine.kv_tokens is None else str(engine.kv_tokens),
                             "n/a" if engine.kv_tokens is None else plural(engine.kv_tokens, "token"),
                             rules.TOKENS_LABEL),
        "engine_kv_budget_bytes_per_gpu": nbytes(engine.kv_budget_bytes_per_gpu),
        "engine_kv_bytes_per_request": nbytes(engine.kv_bytes_per_request),
        "engine_max_model_len": ("" if engine.max_model_len is None else str(engine.max_model_len),
                                 "n/a" if engine.max_model_len is None else plural(engine.max_model_len, "token"),
                                 rules.REFUSED_MAX_LEN_WORDS if engine.refusal else ""),
    }
    band = engine.band
    overhead = engine.overhead_bytes_per_gpu
    metrics["engine_overhead_band"] = (
        "" if not band else f"{band[1].overhead_bytes_per_gpu},{band[0].overhead_bytes_per_gpu}",
        ("n/a" if overhead is None else size(overhead, unit) + (" (yours)" if engine.budget_source is BudgetSource.GIVEN_OVERHEAD
                                                                  else "")) if not band else
        f"{size(overhead, unit)} (band {size(band[1].overhead_bytes_per_gpu, unit)} to "
        f"{size(band[0].overhead_bytes_per_gpu, unit)})",
        "" if not band else "at the band's ends: " + ", ".join(
            ("does not start" if not end.starts else f"{float(end.max_concurrency):,.2f}x") + f" at {label}"
            for end, label in ((band[1], "the least"), (band[0], "the most"))))
    why = []
    if engine.budget_source is BudgetSource.GIVEN_KV_MEMORY:
        why.append(engine_memory_line(scenario, evaluation, unit) + ".")
        if engine.kv_tokens_range and engine.kv_tokens_range[0] != engine.kv_tokens_range[1]:
            low, high = engine.kv_tokens_range
            why.append(f"A log prints that memory to 0.01 GiB, so the token count it prints lies between "
                       f"{low:,} and {high:,}; {engine.kv_tokens:,} is the middle's.")
    elif engine.budget_source in (BudgetSource.ESTIMATE, BudgetSource.GIVEN_OVERHEAD, BudgetSource.MEASURED) and engine.kv_budget_bytes_per_gpu is not None:
        why.append(engine_memory_line(scenario, evaluation, unit) + "."
                   + (rules.USABLE_WORDS if engine.budget_source is BudgetSource.ESTIMATE else ""))
        if engine.band:
            top, bottom = engine.band
            top_words, bottom_words = ("does not start" if not end.starts else
                                       f"holds {float(end.max_concurrency):,.2f}x" for end in (top, bottom))
            ends = f"{name} gives the same figures at both ends" if top_words == bottom_words else \
                f"at the top {name} {top_words}, at the bottom it {bottom_words}"
            why.append(f"The overhead is an estimate; the logs it was calibrated on put it between "
                       f"{size(bottom.overhead_bytes_per_gpu, unit)} and {size(top.overhead_bytes_per_gpu, unit)}: "
                       f"{ends}.")
    why.extend(rules.explain(scenario, engine))
    ideal_concurrency = result.max_concurrency
    if ideal_concurrency is not None and conc is not None:
        why.append(f"The exact ideal fits {ideal_concurrency:,} requests of {work.context_tokens:,} tokens; "
                   f"{name} {float(conc):,.2f}" + (f" on each of its {scenario.deployment.dp} data-parallel ranks "
                   f"({float(conc * scenario.deployment.dp):,.2f} in all)." if scenario.deployment.dp > 1 else "."))
    why.extend(engine.notes)
    release = scenario.settings.release
    if release is not None and not scenario.settings.release_given:
        why.append(f"These are {name} {release}'s rules, the newest release modelled; give your engine release "
                   f"(--engine-version) for its own: defaults and overhead differ between releases.")
    title = name if release is None else f"{name} {release}"
    labels = dict(ENGINE_LABELS, **rules.LABELS)
    if engine.refusal and rules.REFUSED_MAX_LEN_WORDS:
        labels["engine_max_model_len"] = f"Longest context one request can have ({rules.REFUSED_MAX_LEN_WORDS})"
    return {"title": title, "metrics": metrics, "why": why, "log": "\n".join(engine.log), "labels": labels}


# The engine card's labels where an engine's own words (its module's LABELS) do not replace them.
ENGINE_LABELS = {"engine_starts": "Starts", "engine_max_concurrency": "Requests of this context at once",
                 "engine_kv_tokens": "KV cache size", "engine_kv_budget_bytes_per_gpu": "KV memory per GPU",
                 "engine_kv_bytes_per_request": "Reserved per request, per GPU",
                 "engine_max_model_len": "Longest context one request can have",
                 "engine_overhead_band": "Overhead per GPU, estimated"}
