"""Score the calculator on the accuracy corpus of public start-up logs (make accuracy).

Every row of tests/fixtures/logs/corpus/*.json is one real log (its URL in SOURCES.md; the format
in docs/accuracy.md). Each is scored twice:
- typed: the inputs a user would type for that start-up (its launch flags and its GPU), sized as
  the CLI and the page size them;
- pasted: the log itself read as the page reads a pasted log (startup_log.read_log), then sized;
  where the log does not name a model we can resolve, the row's model is chosen, as a user would.
The figures compared are those the log prints: the overhead (everything the engine subtracted
besides the weights), the available KV memory per GPU, the KV tokens and the maximum concurrency.

    python3 tools/accuracy.py                 # the tables
    python3 tools/accuracy.py --rows [PART]   # every row's figures beside ours
    python3 tools/accuracy.py --engine vllm   # one engine's rows
    python3 tools/accuracy.py --docs          # rewrite docs/accuracy.md's tables and README's line

It is a report, not a test: tests/test_accuracy_corpus.py checks that the corpus is well formed.
"""

import argparse
import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "tools")]

from kvcalc.engines import releases  # noqa: E402
from kvcalc.errors import InputError  # noqa: E402
from kvcalc.evaluation import evaluate  # noqa: E402
from kvcalc.inputs.options import MODEL_INPUTS  # noqa: E402
from kvcalc.inputs.startup_log import implied, read_log  # noqa: E402
from kvcalc.readers.hfconfig import parse_config_text  # noqa: E402
import readme_block  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
LOGS = FIXTURES / "logs"
CORPUS = LOGS / "corpus"
GIB = 1 << 30
# Inputs a corpus row may not hold: each is a figure a log measures, which typed inputs do not know.
MEASURED = ("kv-memory-gib", "loaded-weights-gib", "activation-gib", "non-torch-gib", "cudagraph-gib",
            "overhead-gib", "memory-in-use-gib", "measured-with")
# (name, what the log prints, how it is compared): a relative error in % or an absolute one in GiB.
METRICS = (("overhead", "GiB"), ("kv", "%"), ("tokens", "%"), ("concurrency", "%"))
# What the peers publish of their own accuracy (their READMEs, as issue 36 quotes them).
PEERS = ("| vllm-memory-estimator (published) | 231 vLLM logs | KV per token 8.44% (595% on DeepSeek-V4-Pro) |",
         "| llm-d planner (published) | 53 vLLM 0.19 runs | max concurrency 15.34% |")
WORSE_THAN = 10.0       # % off on the KV memory, tokens or concurrency: a miss to explain


def parts(engine: str | None = None, only: str | None = None) -> list[dict]:
    rows = []
    for path in [pathlib.Path(only)] if only else sorted(CORPUS.glob("*.json")):
        for row in json.loads(path.read_text(encoding="utf-8"))["logs"]:
            if engine is None or row["engine"] == engine:
                rows.append(dict(row, part=path.name))
    return rows


def typed_inputs(row: dict) -> dict:
    values = dict(row["inputs"])
    if "hf-config" in values and isinstance(values["hf-config"], str):
        values["hf-config"] = parse_config_text((FIXTURES / values["hf-config"]).read_text(encoding="utf-8"))
    for name in ("draft-hf-config",):
        if isinstance(values.get(name), str):
            values[name] = parse_config_text((FIXTURES / values[name]).read_text(encoding="utf-8"))
    return values


def printed_overhead(printed: dict) -> float | None:
    """GiB the engine subtracted besides the weights, as the log implies it: requested (total x
    utilization) - weights - available KV memory. None when the log prints too little."""
    if "requested_gib" in printed and "weights_gib" in printed and "kv_gib" in printed:
        return printed["requested_gib"] - printed["weights_gib"] - printed["kv_gib"]
    return None


def ours(evaluation) -> dict:
    engine = evaluation.engine
    out = {}
    if engine is None:
        return out
    # The KV memory on a GPU: the pool it sizes in, or what it allocates where that is less (llama.cpp
    # allocates its sequences' cells, not all the memory left).
    kv = engine.kv_bytes_on_busiest_gpu if engine.kv_bytes_on_busiest_gpu is not None else engine.kv_budget_bytes_per_gpu
    if kv is not None:
        out["kv"] = kv / GIB
    if engine.kv_tokens is not None:
        out["tokens"] = engine.kv_tokens
    if engine.max_concurrency is not None:
        out["concurrency"] = float(engine.max_concurrency)
    if engine.overhead_bytes_per_gpu is not None:
        out["overhead"] = engine.overhead_bytes_per_gpu / GIB
    if engine.band is not None:
        ends = sorted(end.overhead_bytes_per_gpu / GIB for end in engine.band)
        out["band"] = (ends[0], ends[-1])
    return out


def theirs(row: dict) -> dict:
    printed = row["printed"]
    out = {}
    for name, key in (("kv", "kv_gib"), ("tokens", "kv_tokens"), ("concurrency", "max_concurrency")):
        if printed.get(key) is not None:
            out[name] = printed[key]
    overhead = printed_overhead(printed)
    if overhead is not None:
        out["overhead"] = overhead
    return out


def errors(row: dict, sized: dict) -> dict:
    """Ours against the log's: % for the KV memory, tokens and concurrency; GiB for the overhead."""
    log, out = theirs(row), {}
    for name, unit in METRICS:
        if name in log and name in sized:
            if unit == "GiB":
                out[name] = sized[name] - log[name]
            elif log[name] > 0:
                out[name] = 100.0 * (sized[name] - log[name]) / log[name]
    if log.get("kv") is not None and "kv" in sized and log["kv"] <= 0:
        # A log whose KV memory is nil or negative is a refusal to start: ours must refuse too.
        out["refusal"] = 0.0 if sized["kv"] <= 0 else 100.0
    return out


def size_typed(row: dict):
    try:
        return evaluate(typed_inputs(row))
    except InputError as e:
        return e


def size_pasted(row: dict):
    """As the page takes a pasted log: its inputs; the row's model only where the log names none
    we can resolve (the user then picks it)."""
    try:
        reading = read_log((LOGS / row["file"]).read_text(encoding="utf-8", errors="replace"), row["engine"])
    except InputError as e:
        return e, False
    values = dict(reading.values)
    evaluation = evaluate(values)
    chosen = False
    if not evaluation.ok and any(err.field in MODEL_INPUTS or err.field == "model" for err in evaluation.errors) \
            or not any(name in values for name in MODEL_INPUTS):
        model = {k: v for k, v in typed_inputs(row).items() if k in MODEL_INPUTS}
        values = {k: v for k, v in values.items() if k not in MODEL_INPUTS} | model
        values = implied(reading, values).values | model     # what the log's figures imply, given the model
        evaluation, chosen = evaluate(values), True
    return evaluation, chosen


def release_group(row: dict) -> str:
    """Rows grouped as the engines' rules change: vLLM by minor release lines, SGLang by minor,
    llama.cpp by thousands of builds."""
    version = row.get("version") or row["inputs"].get("engine-version") or ""
    engine = row["engine"]
    found = releases.pep440(version.lstrip("v")) if engine != "llama.cpp" else releases.build_number(version)
    if found is None:
        return f"{engine} (release not printed)"
    major, minor = found.key[:2]
    if engine == "vllm":
        if (major, minor) < (0, 10):
            return "vllm 0.5-0.9"
        if (major, minor) < (0, 15):
            return "vllm 0.10-0.14"
        if (major, minor) < (0, 20):
            return "vllm 0.15-0.19"
        if (major, minor) < (0, 25):
            return "vllm 0.20-0.24"
        return "vllm 0.25+"
    if engine == "sglang":
        return f"sglang {major}.{minor}"
    return f"llama.cpp b{major // 1000}xxx"


def score(row: dict) -> dict:
    typed = size_typed(row)
    pasted, chosen = size_pasted(row)
    out = {"row": row, "group": release_group(row), "log": theirs(row), "chosen": chosen}
    for how, evaluation in (("typed", typed), ("pasted", pasted)):
        if isinstance(evaluation, InputError):
            out[how] = {"refused": f"{evaluation.field}: {evaluation.message}"}
        elif not evaluation.ok:
            out[how] = {"refused": "; ".join(f"{e.field}: {e.message}" for e in evaluation.errors)[:300]}
        else:
            sized = ours(evaluation)
            out[how] = {"sized": sized, "errors": errors(row, sized)}
    return out


def unexplained(scored: dict, how: str = "typed") -> bool:
    """A miss past WORSE_THAN % on the KV memory, tokens or concurrency, with no term named that
    typed inputs cannot know, or whose log lies outside our band."""
    result = scored[how]
    if "errors" not in result:
        return False
    worst = max((abs(v) for k, v in result["errors"].items() if k != "overhead"), default=0.0)
    if worst <= WORSE_THAN:
        return False
    if not scored["row"].get("unknowable"):
        return True
    band, overhead = result["sized"].get("band"), scored["log"].get("overhead")
    return band is not None and overhead is not None and not band[0] <= overhead <= band[1]


def explained(scored: dict, how: str) -> bool:
    """A row whose log names a term typed inputs cannot know (its `unknowable`: experts held on
    the CPU by an out-of-tree build, a Windows driver...): scored and listed, but left out of the
    typed means, which are the error on what can be known. A pasted log measures that term itself:
    every pasted row counts."""
    return how == "typed" and bool(scored["row"].get("unknowable"))


def summary(scored: list[dict], how: str) -> list[str]:
    groups: dict[str, list[dict]] = {}
    for s in scored:
        groups.setdefault(s["group"], []).append(s)
        groups.setdefault(s["row"]["engine"] + " (all)", []).append(s)
    groups["all engines"] = scored
    lines = [f"| {how} | logs | sized | explained, not in the means | overhead, mean / worst (GiB) | "
             "available KV, mean / worst | KV tokens, mean / worst | concurrency, mean / worst | refusals foreseen | "
             "over 10%, unexplained |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def cell(values, unit):
        if not values:
            return "-"
        mean = statistics.fmean(abs(v) for v in values)
        worst = max(values, key=abs)
        return f"{mean:.2f} / {worst:+.2f}" if unit == "GiB" else f"{mean:.1f}% / {worst:+.1f}% ({len(values)})"
    for name in sorted(groups, key=lambda g: (g == "all engines", g.endswith("(all)"), g)):
        rows = groups[name]
        sized = [s for s in rows if "errors" in s[how]]
        counted = [s for s in sized if not explained(s, how)]
        cells = [cell([s[how]["errors"][m] for m in [metric] for s in counted if m in s[how]["errors"]], unit)
                 for metric, unit in METRICS]
        refusals = [s[how]["errors"]["refusal"] for s in sized if "refusal" in s[how]["errors"]]
        foreseen = f"{refusals.count(0.0)} of {len(refusals)}" if refusals else "-"
        lines.append(f"| {name} | {len(rows)} | {len(sized)} | {len(sized) - len(counted)} | " + " | ".join(cells) +
                     f" | {foreseen} | {sum(unexplained(s, how) for s in rows)} |")
    return lines


def row_lines(scored: list[dict]) -> list[str]:
    lines = []
    for s in scored:
        row = s["row"]
        lines.append(f"{row['file']} ({row['engine']} {row.get('version') or '?'}, {s['group']})")
        log = s["log"]
        lines.append("  log:    " + ", ".join(f"{k} {_fmt(k, v)}" for k, v in log.items()))
        for how in ("typed", "pasted"):
            result = s[how]
            if "refused" in result:
                lines.append(f"  {how}: REFUSED {result['refused']}")
                continue
            sized, errs = result["sized"], result["errors"]
            text = ", ".join(f"{k} {_fmt(k, sized[k])} ({_err(k, errs[k])})" if k in errs else f"{k} {_fmt(k, sized[k])}"
                             for k in ("overhead", "kv", "tokens", "concurrency") if k in sized)
            if "band" in sized:
                text += f", band {sized['band'][0]:.2f}-{sized['band'][1]:.2f}"
            flag = "  <-- over 10%, unexplained" if unexplained(s, how) else ""
            lines.append(f"  {how}:" + " " * (7 - len(how)) + text + (" [model chosen]" if how == "pasted" and s["chosen"] else "") + flag)
    return lines


def _fmt(name, value) -> str:
    if name == "tokens":
        return f"{int(value):,}"
    if name == "concurrency":
        return f"{value:.2f}x"
    return f"{value:.2f} GiB"


def _err(name, value) -> str:
    return f"{value:+.2f} GiB" if name == "overhead" else f"{value:+.1f}%"


def headline(scored: list[dict]) -> str:
    """README's lines: the whole corpus, typed and pasted, as the peers publish theirs."""
    lines = ["| who | corpus | mean absolute error (median) |", "| --- | --- | --- |"]
    for how in ("typed", "pasted"):
        sized = [s for s in scored if "errors" in s[how]]
        counted = [s for s in sized if not explained(s, how)]

        def mean(metric, rows):
            values = [abs(s[how]["errors"][metric]) for s in rows if metric in s[how]["errors"]]
            if not values:
                return "-"
            # Two decimals: the bars are whole percents, and 1.97% must not read as 2.0%.
            return f"{statistics.fmean(values):.2f}% ({statistics.median(values):.2f}%) over {len(values)} logs"
        text = (f"available KV memory {mean('kv', counted)}; concurrency {mean('concurrency', counted)}; "
                f"KV tokens {mean('tokens', counted)}")
        if len(counted) < len(sized):
            text += (f"; left out, {len(sized) - len(counted)} logs naming a term typed inputs cannot give "
                     f"(with them, available KV memory {mean('kv', sized)})")
        lines.append(f"| ours, from {'the inputs typed' if how == 'typed' else 'the pasted log'} | "
                     f"{len(scored)} public logs, 3 engines | {text} |")
    return "\n".join(lines + list(PEERS))


def markdown(scored: list[dict]) -> str:
    return "\n".join(summary(scored, "typed") + [""] + summary(scored, "pasted"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="?", const="", metavar="PART", help="print every row (of one part file)")
    parser.add_argument("--engine", choices=("vllm", "sglang", "llama.cpp"))
    parser.add_argument("--docs", action="store_true", help="rewrite docs/accuracy.md's tables and README's summary")
    args = parser.parse_args(argv)
    rows = parts(args.engine, args.rows or None)
    scored = [score(row) for row in rows]
    if args.rows is not None:
        print("\n".join(row_lines(scored)))
        print()
    text = markdown(scored)
    if args.docs:
        readme_block.replace("accuracy", text, "docs/accuracy.md")
        readme_block.replace("accuracy", headline(scored))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
