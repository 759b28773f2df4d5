"""Hostile logs (issue 34, Bad input): reading is linear in the log's size whatever its lines hold,
and a number no engine prints is said naming its own option, never the catch-all refusal.

Every rule of every reader (startup_log.vllm, .sglang, .llamacpp) is fed lines built from its own
needle and the literal words of its own pattern, repeated: the shapes that made a backtracking
pattern take 20-50 s on one 64K-character line. Time is compared, never asserted: the same
megabyte read as short lines and as long ones costs about the same CPU when each line's work is
linear (a pattern quadratic in its line costs 16 times more at 16 times the length), and a 16 MB
log costs about 16 times a 1 MB one (allowed up to 40) when nothing accumulates per line.
"""

import re
import resource
import subprocess
import sys
import time

import pytest

from kvcalc.errors import InputError
from kvcalc.inputs.startup_log import MAX_LINE_CHARS, MAX_LOG_CHARS, LogReader, read_log
from kvcalc.engines.llamacpp import log as llamacpp
from kvcalc.engines.sglang import log as sglang
from kvcalc.engines.vllm import log as vllm
from hostile_lines import line_of, units
from support import ROOT

MODULES = (vllm, sglang, llamacpp)
RULES = [(m.NAME, i, rule) for m in MODULES for i, rule in enumerate(m.RULES)]
MB = 1 << 20
LINEAR = 40          # 16 times the text: about 16 times the CPU, never the 256 of a quadratic reader
FIXTURES = ROOT / "tests/fixtures/logs"


def log_of(parts: list[str], line_length: int, size: int) -> str:
    """`size` characters of lines `line_length` long, each of one part repeated, the parts in turn."""
    lines, total, i = [], 0, 0
    while total < size:
        line = line_of(parts[i % len(parts)], min(line_length, size - total))
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def read(text: str, engine: str | None = None):
    """The reading, or the one-line refusal: anything else (a traceback) fails the test."""
    try:
        return read_log(text, engine)
    except InputError as e:
        assert "\n" not in e.message and len(e.message) < 400, e.message
        return e


def cpu(fn, *args) -> float:
    """The least CPU time of two runs (a busy machine adds to a run, never takes away)."""
    best = None
    for _ in range(2):
        start = time.process_time()
        fn(*args)
        spent = time.process_time() - start
        best = spent if best is None else min(best, spent)
    return max(best, 1e-3)


@pytest.mark.parametrize("engine,index,rule", RULES, ids=[f"{e}-{i}" for e, i, _ in RULES])
def test_a_rules_own_words_repeated_in_long_lines_cost_no_more_than_in_short_ones(engine, index, rule):
    # Half a megabyte of this rule's hostile lines, 4K characters each and 64K each (the longest line
    # the reader reads): a pattern that backtracks over its line costs 16 times more in the long.
    parts = units(rule)
    short, long = log_of(parts, 4 << 10, MB // 2), log_of(parts, MAX_LINE_CHARS, MB // 2)
    ratio = cpu(read, long) / cpu(read, short)
    assert ratio < 4, f"{engine} rule {index} ({rule.pattern.pattern[:60]}): 64K lines cost {ratio:.1f}x 4K lines"
    # A line of 1 MB is read as its first MAX_LINE_CHARS characters: no dearer than a line of those.
    ratio = cpu(read, line_of(parts[0], MB) + "\n") / cpu(read, line_of(parts[0], MAX_LINE_CHARS) + "\n")
    assert ratio < 4, f"{engine} rule {index}: a 1 MB line cost {ratio:.1f}x a 64K one"


def test_a_line_of_a_megabyte_is_read_as_its_first_64k_characters():
    # llama.cpp's KV buffer rule, the one that took 20-50 s on a 64K line: a 1 MB line of its words
    # is read up to the reader's line limit, as fast as a line of that limit.
    # Its needle, then one word as long as the line: the device name the pattern looked for at
    # every one of its characters, each time to the line's end.
    rule = next(r for r in llamacpp.RULES if r.needle == "KV buffer size")
    hostile = "KV buffer size " + line_of("CUDA0", MB) + "\n"
    limit = hostile[:MAX_LINE_CHARS] + "\n"
    short = "".join(hostile[:4096] + "\n" for _ in range(MAX_LINE_CHARS // 4096))
    assert rule.pattern.search(limit) is None
    assert isinstance(read(hostile), InputError)        # no size in it: no start-up read
    assert cpu(read, hostile) / cpu(read, limit) < 4
    assert cpu(read, limit) / cpu(read, short) < 4      # 64K in one line costs what 16 lines of 4K do


def _fed_in_slices(text: str) -> LogReader:
    reader = LogReader()
    for start in range(0, len(text), 64 << 10):
        reader.feed(text[start:start + (64 << 10)])
    return reader


def test_a_line_without_end_is_carried_not_copied_with_every_slice():
    # The page feeds 64K slices: a 16 MB line with no line end was copied whole with each one
    # (256 copies of up to 16 MB). It is carried at the reader's line limit: each feed reads its
    # slice and at most MAX_LINE_CHARS + 1 characters left open.
    one, sixteen = "x" * MB, "x" * (16 * MB)
    reader = _fed_in_slices(sixteen)
    assert reader.feeds == 256
    assert reader.largest_feed <= (64 << 10) + MAX_LINE_CHARS + 1
    assert cpu(_fed_in_slices, sixteen) / cpu(_fed_in_slices, one) < LINEAR


# Start-up lines as each engine prints them, with a counter: thousands of them, each different,
# are the repeated buffer, cache and pool lines that once grew a copied list per line.
REPEATED = {
    "vllm": ["(Worker_TP{i} pid={i}) INFO [gpu_worker.py:359] Available KV cache memory: {i}.5 GiB",
             "(Worker_TP0 pid=1) INFO [kv_cache_utils.py:1087] GPU KV cache size: {i:,} tokens",
             "INFO [kv_cache_utils.py:1091] Maximum concurrency for 40,960 tokens per request: {i}.25x",
             "INFO [gpu_model_runner.py:2392] Model loading took {i}.0786 GiB and 10.2 seconds",
             "ERROR ValueError: ValueError: {i} KV cache is needed, which is larger than the available KV cache "
             "memory ({i}.5 GiB)"],
    "sglang": ["[2025-05-14 09:29:03 TP{i}] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, "
               "avail mem={i}.49 GB, mem usage=15.35 GB.",
               "[2025-05-14 09:29:03 TP{i}] KV Cache is allocated. #tokens: {i}, K size: {i}.80 GB, V size: 27.80 GB",
               "[2025-05-14 09:29:03 TP0] Capture cuda graph end. Time elapsed: 5.1 s. mem usage={i}.5 GB. avail "
               "mem=7.9 GB.",
               "[2025-05-14 09:29:03 TP0] max_total_num_tokens={i}, chunked_prefill_size=8192, "
               "max_prefill_tokens=16384, max_running_requests={i}, context_len=40960"],
    "llama.cpp": ["llama_kv_cache_unified:      CUDA{i} KV buffer size =  {i}.00 MiB",
                  "llama_kv_cache_unified: size = {i}.00 MiB ({i} cells,  64 layers,  1/1 seqs), K (f16): 1.00 MiB, "
                  "V (f16): 1.00 MiB",
                  "load_tensors:        CUDA{i} model buffer size = {i}.52 MiB",
                  "llama_context:      CUDA{i} compute buffer size =   {i}.01 MiB",
                  "  Device {i}: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes",
                  "llama_kv_cache_unified: layer {i}: dev = CUDA0"],
}


def engine_log(engine: str, size: int) -> str:
    """`size` characters of an engine's start-up lines, each different, with every one of its rules'
    hostile lines (4K characters) among them."""
    module = next(m for m in MODULES if m.NAME == engine)
    hostile = [line_of(u, 4 << 10) for rule in module.RULES for u in units(rule)[:3]]
    lines, total, i = [], 0, 0
    while total < size:
        line = REPEATED[engine][i % len(REPEATED[engine])].format(i=i) if i % 50 else hostile[(i // 50) % len(hostile)]
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llama.cpp"])
def test_a_16_mb_log_costs_about_16_times_a_1_mb_one(engine):
    small, large = engine_log(engine, MB), engine_log(engine, 16 * MB - 4096)
    assert len(large) <= MAX_LOG_CHARS
    read(small, engine)                # warm: the large one is read (twice) by cpu() below, through read()
    ratio = cpu(read, large, engine) / cpu(read, small, engine)   # each a reading, or a one-line refusal
    assert ratio < LINEAR, f"{engine}: 16 MB cost {ratio:.1f}x 1 MB"


def _cli(path) -> tuple[float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "kvcalc", "--from-log", str(path)], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT / "app"), "PATH": "/usr/bin:/bin"}, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), done


def test_the_cli_reads_a_16_mb_hostile_log_in_linear_time_and_answers_in_one_line(tmp_path):
    # llama.cpp's lines (the rules that backtracked worst), on `kvcalc --from-log`.
    small, large = tmp_path / "small.log", tmp_path / "large.log"
    small.write_text(engine_log("llama.cpp", MB))
    large.write_text(engine_log("llama.cpp", 16 * MB - 4096))
    small_cpu, small_run = _cli(small)
    large_cpu, large_run = _cli(large)
    for run in (small_run, large_run):
        assert run.returncode != 0 and "Traceback" not in run.stderr
        errors = [line for line in run.stderr.splitlines() if line.startswith("kvcalc: error:")]
        assert len(errors) == 1 and "more than one start-up" in errors[0], run.stderr[-400:]
    assert large_cpu / small_cpu < LINEAR


def test_the_cli_reads_every_rules_hostile_lines_in_16_mb_in_linear_time(tmp_path):
    # Every rule's own needle and words (three lines each), 64K-character lines of them, over 1 MB
    # and over 16 MB, on `kvcalc --from-log`: lines of all three engines, refused in one line.
    # Three units a rule while a 64K line each fits in 16 MB, else two (258 lines of 64K do not).
    each = 3 if sum(len(units(rule)[:3]) for _, _, rule in RULES) * MAX_LINE_CHARS < 16 * MB else 2
    parts = [u for _, _, rule in RULES for u in units(rule)[:each]]
    assert len(parts) * MAX_LINE_CHARS < 16 * MB            # every part has a line of the 16 MB log
    small, large = tmp_path / "small.log", tmp_path / "large.log"
    small.write_text(log_of(parts, MAX_LINE_CHARS, MB))
    large.write_text(log_of(parts, MAX_LINE_CHARS, 16 * MB - 4096))
    small_cpu, small_run = _cli(small)
    large_cpu, large_run = _cli(large)
    for run in (small_run, large_run):
        assert run.returncode != 0 and "Traceback" not in run.stderr
        assert len([line for line in run.stderr.splitlines() if line.startswith("kvcalc: error:")]) == 1, \
            run.stderr[-400:]
    assert large_cpu / small_cpu < LINEAR


# --- numbers as no engine prints them --------------------------------------------------------------

HOSTILE_NUMBERS = ["1,234.5", "9" * 5000, "1.2.3", "4\u00b2", "NaN", "1e400", "\u0661\u0662.5"]
# (fixture, the line's printed figure, how the note names it): vllm-qwen3-30b-a3b-h100-tp2 prints
# "Available KV cache memory: 41.68 GiB"; sglang-qwen3-8b "K size: 27.80 GB"; llamacpp-qwen25-coder
# "CUDA0 KV buffer size =  2788.00 MiB".
PRINTED = [("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log", "Available KV cache memory: {} GiB", "41.68",
            "kv-memory-gib"),
           ("sglang-qwen3-8b-tp1-mfs090.log", "K size: {} GB", "27.80", "kv-memory-gib (K size)"),
           ("sglang-qwen3-8b-tp1-mfs090.log", "mem usage={} GB", "15.35", "loaded-weights-gib (mem usage)"),
           ("llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log", "CUDA0 KV buffer size =  {} MiB", "2788.00",
            "kv-memory-gib (KV buffer)"),
           ("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log", "Model loading took {} GiB", None,
            "loaded-weights-gib")]


@pytest.mark.parametrize("number", HOSTILE_NUMBERS, ids=["thousands", "5000-digits", "1.2.3", "superscript", "nan",
                                                         "1e400", "arabic-indic"])
@pytest.mark.parametrize("fixture,printed,value,option", PRINTED, ids=["vllm-kv", "sglang-k", "sglang-weights",
                                                                       "llamacpp-kv", "vllm-weights"])
def test_a_number_no_engine_prints_is_said_naming_its_option(fixture, printed, value, option, number):
    text = (FIXTURES / fixture).read_text()
    if value is None:                   # the printed value as it is in the fixture
        value = re.search(re.escape(printed).replace(r"\{\}", r"([\d.]+)"), text)[1]
    line = printed.format(value)
    assert line in text
    reading = read(text.replace(line, printed.format(number)))
    said = [note for note in reading.notes if note.startswith("line ") and f"{option} " in note and "not taken" in note]
    assert len(said) == 1, reading.notes
    assert number[:40] in said[0] or repr(number[:37])[1:-1] in said[0]
    taken = option.split()[0]
    if taken in reading.values:         # a figure of another line may give it; never this one
        assert reading.values[taken] != number


def test_the_cli_names_the_option_of_a_number_no_engine_prints(tmp_path):
    # vLLM's "Available KV cache memory: NaN GiB": the CLI's notes say kv-memory-gib was not taken,
    # and its answer is sized from the rest, never the catch-all "cannot size" naming --model.
    text = (FIXTURES / "vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log").read_text()
    log = tmp_path / "nan.log"
    log.write_text(text.replace("Available KV cache memory: 41.68 GiB", "Available KV cache memory: NaN GiB"))
    _, run = _cli(log)
    assert "Traceback" not in run.stderr and "cannot size" not in run.stderr
    assert "kv-memory-gib 'NaN' not taken" in run.stderr


def test_a_pebibyte_of_kv_memory_is_read_as_typed_and_one_more_gib_is_not():
    # kv-memory-gib allows up to 1,048,576 GiB (1 PiB): read as the option types it, for the verdict
    # to weigh against the card; past it, said.
    text = (FIXTURES / "vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log").read_text()
    line = "Available KV cache memory: 41.68 GiB"
    assert read(text.replace(line, "Available KV cache memory: 1048576 GiB")).values["kv-memory-gib"] == "1048576"
    over = read(text.replace(line, "Available KV cache memory: 1048577 GiB"))
    assert "kv-memory-gib" not in over.values
    assert any("kv-memory-gib '1048577' not taken (1,048,577 is too large" in note for note in over.notes)


@pytest.mark.parametrize("fixture", ["vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log",
                                     "sglang-qwen3-8b-tp1-mfs090.log",
                                     "llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log"])
def test_two_start_ups_in_one_paste_are_refused(fixture):
    # The same public log pasted twice: two start-ups, refused in one line, never read as one.
    text = (FIXTURES / fixture).read_text()
    answer = read(text + text)
    assert isinstance(answer, InputError) and "more than one start-up" in answer.message, answer


def test_a_thousand_bad_lines_are_said_in_a_few_notes():
    # Each "Available KV cache memory: NaN GiB" line is not taken; the notes say the first 20 and
    # how many more, not one a line.
    text = (FIXTURES / "vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log").read_text()
    bad = "".join(f"(Worker_TP0 pid=1) INFO Available KV cache memory: NaN{i} GiB\n" for i in range(1000))
    reading = read(text + bad)
    assert len(reading.notes) <= 45
    assert any(note.startswith("and 980 more values not taken") for note in reading.notes)


# --- a draft's config names its own option ------------------------------------------------------------

@pytest.mark.parametrize("text,words", [("{bad", "not valid JSON"), ("[]", "must be a JSON object"),
                                        ('{"a":' * 100 + "1" + "}" * 100, "nests 100 levels deep")])
def test_a_draft_configs_errors_name_draft_hf_config(tmp_path, text, words):
    # The file given to --draft-hf-config, and the same text in a link's draft-hf-config: each
    # refusal names the draft's option, never --hf-config (the target's).
    import zlib, base64
    from kvcalc.reports.link import decode_config
    config = tmp_path / "draft.json"
    config.write_text(text)
    run = subprocess.run([sys.executable, "-m", "kvcalc", "--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm",
                          "--draft-hf-config", str(config), "--spec-tokens", "3"], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT / "app"), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert run.stderr.startswith(f"kvcalc: error: --draft-hf-config: ") and words in run.stderr, run.stderr
    packed = base64.urlsafe_b64encode(zlib.compress(text.encode())).decode().rstrip("=")
    with pytest.raises(InputError) as refused:
        decode_config(packed, "draft-hf-config")
    assert refused.value.field == "draft-hf-config" and words in refused.value.message


# --- the planner's searches, bounded before they start -------------------------------------------------

EVERY_PRECISION = "fp32,fp16,bf16,fp8,fp8_e4m3,fp8_e5m2,int8,int4,q8_0,q5_1,q5_0,q4_1,q4_0,iq4_nl,nvfp4"


def _searches(monkeypatch):
    """Counts the planner's searches (one per GPU type and precision pair): its work, by counting."""
    from kvcalc.planning import plan
    calls = []
    real = plan._search
    monkeypatch.setattr(plan, "_search", lambda *a, **k: calls.append(a[1]["gpu"]) or real(*a, **k))
    return plan, calls


def test_a_plan_over_every_precision_at_4096_gpus_is_refused_before_it_searches(monkeypatch):
    # 15 x 15 precisions on every GPU type ran 34 s of CPU: refused in one line naming the option,
    # after no search at all.
    from kvcalc.inputs.options import parse_options
    plan, calls = _searches(monkeypatch)
    typed, errors = parse_options({"model": "meta-llama/Llama-3.1-70B", "context": "131072", "batch": "4096",
                                   "plan-max-gpus": "4096", "plan-kv-dtypes": EVERY_PRECISION,
                                   "plan-weights-dtypes": EVERY_PRECISION})
    assert not errors
    with pytest.raises(InputError) as refused:
        plan.plan(typed)
    assert refused.value.field == "plan-kv-dtypes" and "15 KV x 15 weight precisions" in refused.value.message
    assert calls == []
    # The whole table at 4096 GPUs: 515 GPU counts on each GPU type, refused alike.
    typed, _ = parse_options({"model": "meta-llama/Llama-3.1-70B", "plan-max-gpus": "4096"})
    with pytest.raises(InputError) as refused:
        plan.plan(typed, everything=True)
    assert refused.value.field == "plan-max-gpus" and "at most 800" in refused.value.message
    assert calls == []


def test_the_largest_plan_allowed_runs_its_searches_and_no_more(monkeypatch):
    # Every GPU type at 4 x 3 precisions, up to 4096 GPUs: one search per GPU type and pair at
    # most (fewer where a pair's fewest GPUs are already beaten), within MAX_SEARCHES.
    from kvcalc.inputs.options import parse_options
    from kvcalc.planning.ask import MAX_SEARCHES
    plan, calls = _searches(monkeypatch)
    typed, _ = parse_options({"model": "meta-llama/Llama-3.1-70B", "context": "131072", "batch": "4096",
                              "plan-max-gpus": "4096", "plan-kv-dtypes": "fp8,bf16,int4,fp16",
                              "plan-weights-dtypes": "bf16,fp8,int4"})
    found = plan.plan(typed)
    gpus = {row.gpu for row in found.rows}
    assert 0 < len(calls) <= len(gpus) * 12 <= MAX_SEARCHES
    assert found.best is not None and found.best.gpus > 64          # past the default limit, as asked


def test_a_single_view_that_does_not_fit_pulls_no_unbounded_plan(monkeypatch):
    # `kvcalc` without --plan, on an H100 that cannot hold the batch: the verdict's "what you need"
    # asks the planner, whose refusal leaves the single view standing, after no search.
    from kvcalc import cli
    from kvcalc.evaluation import evaluate
    plan, calls = _searches(monkeypatch)
    evaluation = evaluate({"model": "meta-llama/Llama-3.1-70B", "gpu": "h100-sxm-80gb", "context": "131072",
                           "batch": "4096", "plan-max-gpus": "4096", "plan-kv-dtypes": EVERY_PRECISION,
                           "plan-weights-dtypes": EVERY_PRECISION})
    assert evaluation.ok
    assert cli._plan_best(evaluation) is None
    assert calls == []


def test_the_option_parser_states_the_plans_bounds():
    # --help says the bounds ask.check_bounds enforces, in the words of the options they narrow.
    from kvcalc.planning import ask
    from kvcalc.inputs.options import OPTION_BY_NAME
    assert f"at most {ask.MAX_SEARCHES}" in OPTION_BY_NAME["plan-kv-dtypes"].help
    assert f"at most {ask.MAX_EVERY_COUNT} GPU counts" in OPTION_BY_NAME["plan-max-gpus"].help
