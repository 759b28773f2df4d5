"""The Engine protocol (issue 35, app/kvcalc/engines/protocol.py) holds for every registered
engine and for a toy one registered here; a new engine is one folder and one register() line, its
log reader asked through the registry; and no code outside app/kvcalc/engines/ compares an
engine's name (the shared code asks the registry instead)."""

import ast
import inspect
import re
import types
from fractions import Fraction
from pathlib import Path

import pytest

from kvcalc import engines
from kvcalc.command_line import Launch
from kvcalc.engines import protocol
from kvcalc.engines.result import EngineResult, without_budget
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.log_rules import Rule

ENGINE = Path(__file__).resolve().parents[2] / "app" / "kvcalc"


def _kind_ok(value, kind) -> bool:
    return kind is object or isinstance(value, kind)


def _callable_with(value, arguments: tuple) -> bool:
    """Whether `value` takes the protocol's `arguments`, by name and in order, by its signature
    (so it can be called with them positionally)."""
    if not callable(value):
        return False
    names = [name for name, parameter in inspect.signature(value).parameters.items()
             if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
    return tuple(names) == tuple(arguments)


def protocol_faults(engine) -> list[str]:
    """What `engine` lacks or gives wrongly of protocol.Engine (and of the optional members it gives)."""
    faults = []
    for name, kind in protocol.REQUIRED_DATA.items():
        if not hasattr(engine, name):
            faults.append(f"{name} missing")
        elif not _kind_ok(getattr(engine, name), kind):
            faults.append(f"{name} is {type(getattr(engine, name)).__name__}, not {kind.__name__}")
    for name, arguments in protocol.REQUIRED_CALLS.items():
        if not hasattr(engine, name):
            faults.append(f"{name}() missing")
        elif not _callable_with(getattr(engine, name), arguments):
            faults.append(f"{name}() does not take ({', '.join(arguments)})")
    for name, kind in protocol.OPTIONAL_DATA.items():
        if hasattr(engine, name) and not (getattr(engine, name) is None or _kind_ok(getattr(engine, name), kind)):
            faults.append(f"{name} is {type(getattr(engine, name)).__name__}, not {kind.__name__}")
    for name, arguments in protocol.OPTIONAL_CALLS.items():
        if hasattr(engine, name) and not _callable_with(getattr(engine, name), arguments):
            faults.append(f"{name}() does not take ({', '.join(arguments)})")
    given = [name for name in (*protocol.RELEASE_DATA, *protocol.RELEASE_CALLS) if hasattr(engine, name)]
    if given and len(given) != len(protocol.RELEASE_DATA) + len(protocol.RELEASE_CALLS):
        faults.append(f"gives the release members {given} but not all of them")
    return faults


def test_every_registered_engine_satisfies_the_protocol():
    assert engines.ENGINES == ("vllm", "sglang", "llama.cpp")
    for name, engine in engines.REGISTRY.items():
        assert engine.NAME == name
        assert protocol_faults(engine) == [], name


def test_the_protocol_names_every_member_the_engines_share():
    """Each member the three engines all give is written down (required or optional): a member
    the shared code reads from every engine cannot go undocumented."""
    shared = set.intersection(*({n for n in vars(e) if not n.startswith("_")} for e in engines.REGISTRY.values()))
    documented = {*protocol.REQUIRED_DATA, *protocol.REQUIRED_CALLS, *protocol.OPTIONAL_DATA,
                  *protocol.OPTIONAL_CALLS, *protocol.RELEASE_DATA, *protocol.RELEASE_CALLS}
    # What each imports for its own use (classes, modules, helpers of other modules) is no member.
    imported = {n for n in shared if any(
        inspect.ismodule(getattr(e, n)) or getattr(getattr(e, n), "__module__", e.__name__) != e.__name__
        for e in engines.REGISTRY.values())}
    own = shared - imported - documented
    # Constants each keeps for its own rules: the KV precisions its stores() reads, its byte unit.
    assert own <= {"KV_PRECISIONS", "MIB"}, own - {"KV_PRECISIONS", "MIB"}


def test_each_optional_data_member_has_its_one_default_in_the_registry():
    assert set(engines.DEFAULTS) == set(protocol.OPTIONAL_DATA)
    for name, default in engines.DEFAULTS.items():
        assert default is None or isinstance(default, protocol.OPTIONAL_DATA[name]), name
    # The exact ideal (no engine) and an engine that leaves one out read the same default.
    assert engines.member(None, "KV_MEMORY_HALF_WIDTH") == Fraction(1, 200)
    assert engines.member(engines.REGISTRY["vllm"], "KV_MEMORY_HALF_WIDTH") == Fraction(1, 200)
    assert engines.member(engines.REGISTRY["sglang"], "KV_MEMORY_HALF_WIDTH") == Fraction(1, 100)


def test_every_engines_log_reader_is_asked_of_the_registry():
    readers = engines.log_readers()
    assert [r.NAME for r in readers] == ["vllm", "sglang", "llama.cpp"]
    for reader in readers:
        assert reader.__name__ == f"kvcalc.engines.{reader.NAME.replace('.', '')}.log"
        for name, kind in protocol.READER_DATA.items():
            assert isinstance(getattr(reader, name), kind), (reader.NAME, name)
        assert all(isinstance(rule, Rule) for rule in reader.RULES)
        assert _callable_with(reader.complete, protocol.READER_CALLS["complete"])


def test_the_options_only_one_engine_takes_are_its_own():
    assert engines.option_owners() == {
        "vllm-runner": "vllm", "vllm-entry": "vllm", "vllm-engine": "vllm", "enforce-eager": "vllm",
        "max-cudagraph-capture-size": "vllm", "prefix-caching": "vllm",
        "language-model-only": "vllm", "limit-mm-per-prompt": "vllm", "kv-dtype-skip-layers": "vllm", "hybrid-kv-cache-manager": "vllm", "kv-connector": "vllm",
        "memory-in-use-gib": "sglang",
        "flash-attn": "llama.cpp", "n-gpu-layers": "llama.cpp", "n-cpu-moe": "llama.cpp",
            "tensor-split": "llama.cpp"}
    out = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "sglang",
                    "n-gpu-layers": "10"})
    assert [(e.field, e.message) for e in out.errors] == [
        ("n-gpu-layers", "applies to llama.cpp only; choose engine llama.cpp to use it")]


# A toy engine: one cell per token, every layer's K and V in it, a flat 1 GiB overhead. -----------

def one_cell_engine() -> types.SimpleNamespace:
    toy = types.SimpleNamespace(
        NAME="one-cell", TITLE="OneCell", ALIASES=("onecell", "one_cell"), VENDORS=("NVIDIA",),
        KV_MEMORY_LOGGED=False, SEPARATE_V=False, TOKENS_LABEL="cells", REFUSED_MAX_LEN_WORDS="",
        CONCURRENCY_FORMAT="{:,.2f} requests", LABELS={"engine_kv_tokens": "Cells"},
        ALLOCATES_WHOLE_BUDGET=True, USABLE_WORDS="")
    toy.default_chunk = lambda scenario: 2048
    toy.usable_memory = lambda scenario, chunk, notes, ideal_usable: ideal_usable
    toy.estimate_overhead = lambda scenario, chunk, notes: (None, 1 << 30, None)
    toy.stores = lambda kv_precision: kv_precision.name == "bf16"
    toy.explain = lambda scenario, out: ["OneCell keeps one cell per token of every request."]
    toy.launch = lambda scenario, result=None: Launch("one-cell", "one-cell-serve", ())

    def size(scenario, chunk, budget, notes):
        cell = sum(layer.row_bytes(scenario.workload.kv_precision, scenario.deployment.tp)
                   for layer in scenario.model.layers)
        if budget.kv_bytes_per_gpu is None:
            return without_budget(toy.NAME, toy.TITLE, 1, chunk, budget, notes)
        cells = budget.kv_bytes_per_gpu // cell
        context = scenario.workload.context_tokens
        return EngineResult(
            engine=toy.NAME, block_size=1, prefill_chunk=chunk, kv_budget_bytes_per_gpu=budget.kv_bytes_per_gpu,
            kv_bytes_per_request=cell * context, kv_tokens=cells, max_concurrency=Fraction(cells, context),
            starts=cells >= context, max_model_len=min(cells, context), refusal=None,
            activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
            overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu, budget_source=budget.source,
            log=(f"one-cell: {cells} cells",), notes=tuple(notes))
    toy.size = size

    def seen(match, sink, number, line):
        sink.take("batch", match.group(1), number, line)
    toy.LOG_READER = types.SimpleNamespace(
        NAME="one-cell", RULES=(Rule(re.compile(r"one-cell-serve: (\d+) slots"), seen, signature=True,
                                     needle="one-cell-serve"),),
        EXPECTED=(("batch", "the slots"), ("gpu", "the GPU")), complete=lambda sink: None)
    return toy


@pytest.fixture
def one_cell():
    toy = one_cell_engine()
    engines.register(toy)
    try:
        yield toy
    finally:
        engines.unregister(toy.NAME)
    assert engines.ENGINES == ("vllm", "sglang", "llama.cpp") and "onecell" not in engines.ALIASES


def test_a_toy_engine_satisfies_the_protocol_and_is_one_register_line(one_cell):
    assert protocol_faults(one_cell) == []
    broken = one_cell_engine()
    del broken.stores
    broken.size = lambda scenario, budget, notes: None
    broken.SEPARATE_V = "no"
    broken.FIRST_RELEASE = "1.0"
    assert protocol_faults(broken) == [
        "SEPARATE_V is str, not bool", "size() does not take (scenario, chunk, budget, notes)", "stores() missing",
        "gives the release members ['FIRST_RELEASE'] but not all of them"]
    assert engines.ENGINES == ("vllm", "sglang", "llama.cpp", "one-cell")
    assert engines.engine_name(" OneCell ") == "one-cell" == engines.engine_name("one_cell")
    with pytest.raises(ValueError):
        engines.register(types.SimpleNamespace(NAME="other", ALIASES=("llamacpp",)))   # llama.cpp's alias


def test_a_toy_engine_is_sized_end_to_end(one_cell):
    """Llama 3.1 8B in bf16 on an H100 SXM (85,520,809,984 B) at 8,192 tokens: the weights take
    16,060,522,496 B and the toy's overhead 1 GiB, leaving 68,386,545,664 B of cells of 32 layers x
    8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B: 521,747 cells, 63.69 requests of 8,192."""
    out = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "context": "8192",
                    "engine": "onecell"})
    assert out.ok, out.errors       # evaluate() sized it (and held its figures to the checks)
    engine = engines.size(out.scenario, out.result)      # its answer, as the registry dispatches it
    assert engine.engine == "one-cell"
    assert engine.kv_budget_bytes_per_gpu == 85_520_809_984 - 16_060_522_496 - (1 << 30) == 68_386_545_664
    assert engine.kv_tokens == 68_386_545_664 // 131_072 == 521_747
    assert engine.max_concurrency == Fraction(521_747, 8192)
    assert engine.log == ("one-cell: 521747 cells",)
    # The planner's rules for it are the registry's defaults: ranks, no layer split, a room per layout.
    assert engines.data_parallel(one_cell, moe=False) and not engines.member(one_cell, "SPLITS_LAYERS")
    refused = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "one-cell", "kv-dtype": "fp8"})
    assert [(e.field, e.message) for e in refused.errors] == [
        ("kv-dtype", "one-cell cannot store the KV cache as fp8")]


def test_a_toy_engines_log_is_read_through_the_registry(one_cell):
    reading = read_log("boot\none-cell-serve: 12 slots\n")
    assert reading.engine == "one-cell" and reading.values == {"engine": "one-cell", "batch": "12"}
    assert reading.not_read == ("the GPU",)
    with pytest.raises(InputError) as e:
        read_log("nothing an engine prints\n")
    assert e.value.message.startswith("is not a start-up log of vLLM, SGLang, llama.cpp or OneCell:")


def test_an_unregistered_engine_is_gone():
    assert "one-cell" not in engines.REGISTRY
    with pytest.raises(InputError):
        engines.engine_name("onecell")
    with pytest.raises(InputError) as e:
        read_log("nothing an engine prints\n")
    assert e.value.message.startswith("is not a start-up log of vLLM, SGLang or llama.cpp:")


# No engine-name comparison outside app/kvcalc/engines/ -------------------------------------------

# Every spelling of an engine: its NAME, TITLE and ALIASES (and the old llama.cpp ones), lower-cased.
NAMES = frozenset({n.lower() for e in engines.REGISTRY.values()
                   for n in (e.NAME, e.TITLE, *engines.member(e, "ALIASES"))}
                  | {"vllm", "sglang", "llama.cpp", "llamacpp", "llama-cpp", "llama_cpp"})


def _is_name(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip().lower() in NAMES


def _constants(paths) -> set:
    """Module-level names bound to an engine's name or a tuple of them (parallel.SGLANG = "sglang"):
    comparing with them is comparing with the names."""
    out = set()
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):     # A, B = "vllm", "sglang"
                    out |= {t.id for t, v in zip(target.elts, node.value.elts) if isinstance(t, ast.Name) and _is_name(v)}
                elif isinstance(target, ast.Name) and (_is_name(node.value) or (
                        isinstance(node.value, (ast.Tuple, ast.List)) and any(_is_name(v) for v in node.value.elts))):
                    out.add(target.id)          # VLLM = "vllm"; ENGINES = ("vllm", "sglang")
    return out


def _engine_modules(tree) -> set:
    """Names an engine's own module is imported as (`from ..engines.vllm import engine as vllm`):
    their .NAME is an engine's name."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and re.match(r"(kvcalc\.)?engines\.\w+$", node.module):
            out |= {alias.asname or alias.name for alias in node.names}
    return out


def engine_name_comparisons(root: Path = ENGINE) -> list[str]:
    """file:line and the code of each engine-name comparison outside engines/: a Compare (==, !=,
    in, not in) with an engine's name, a tuple or list holding one, a constant bound to one or an
    engine module's NAME; a match case on one; a dict keyed by engine names (a dispatch); an
    engine's name as a subscript or .get() key."""
    paths = [p for p in sorted(root.rglob("*.py")) if p.relative_to(root).parts[0] != "engines"]
    constants = _constants(paths)
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        modules = _engine_modules(tree)

        def named(node) -> bool:
            if _is_name(node):
                return True
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                return any(named(e) for e in node.elts)
            if isinstance(node, ast.Name):
                return node.id in constants
            if isinstance(node, ast.Attribute):
                return node.attr in constants or (node.attr == "NAME" and isinstance(node.value, ast.Name)
                                                  and node.value.id in modules)
            return False

        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                hit = any(named(x) for x in (node.left, *node.comparators))
            elif isinstance(node, ast.MatchValue):
                hit = named(node.value)
            elif isinstance(node, ast.Dict):
                hit = any(k is not None and named(k) for k in node.keys)
            elif isinstance(node, ast.Subscript):
                hit = named(node.slice)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                hit = bool(node.args) and named(node.args[0])
            else:
                hit = False
            if hit:
                code = (ast.get_source_segment(text, node) or "").split("\n")[0][:90]
                found.append(f"{path.relative_to(root)}:{node.lineno}: {code}")
    return sorted(set(found), key=lambda s: (s.split(":")[0], int(s.split(":")[1])))


def test_the_counter_finds_each_kind_of_comparison(tmp_path):
    """The counter is no test that cannot fail: each kind it looks for, planted in a module, is found."""
    planted = tmp_path / "kvcalc"
    (planted / "engines").mkdir(parents=True)
    (planted / "engines" / "ok.py").write_text('NAME = "vllm"\nif x == "vllm": pass\n')
    (planted / "shared.py").write_text(
        'from .engines.sglang import engine as sglang\nSGL, X = "sglang", 1\n'
        'a = engine == "llama.cpp"\nb = engine in ("vllm", None)\nc = engine != SGL\nd = e == sglang.NAME\n'
        'f = {"vLLM": 1}\ng = table["llamacpp"]\nh = values.get("SGLang")\n'
        'match engine:\n    case "vllm": pass\n'
        'i = engine == "exact"\nj = "vllm is fast"\nk = ("vllm", "sglang")\n')
    assert [line.split(":")[1] for line in engine_name_comparisons(planted)] == \
        ["3", "4", "5", "6", "7", "8", "9", "11"]


def test_no_engine_name_is_compared_outside_the_engines_folder():
    found = engine_name_comparisons()
    print(f"{len(found)} engine-name comparisons outside app/kvcalc/engines/:", *found, sep="\n  ")
    assert found == []
