"""The engine's house (issue 20): `app/kvcalc` imports form no cycle, no import hides inside a
function (where it would only dodge one), each module opens with a docstring saying its job, and
the engine never touches the page (no pyscript, js or pyodide import)."""

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "app" / "kvcalc"
MODULES = sorted(p for p in ENGINE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, node: ast.ImportFrom) -> str:
    """The module an import statement names, resolved against the importing module's package."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    if node.level:
        package = package[:len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


def graph() -> dict:
    names = {module_name(p) for p in MODULES}
    edges = {}
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level:
                base = imported(path, node)
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    targets.add(candidate if candidate in names else base)
        edges[module_name(path)] = targets & names
    return edges


def test_no_import_cycle():
    edges = graph()
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in edges[node]:
            if state.get(nxt) == "open":
                raise AssertionError("import cycle: " + " -> ".join(trail + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = "done"
    for node in edges:
        if node not in state:
            visit(node, [])
    assert len(edges) > 20


def test_no_import_inside_a_function():
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [n for n in ast.walk(func) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not inner, f"{path.relative_to(ENGINE)}:{inner[0].lineno} imports inside {func.name}()"


def test_every_module_says_its_job_and_none_touches_the_page():
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree)
        if path.name == "__main__.py":
            continue
        assert doc and doc.splitlines()[0].strip(), f"{path.relative_to(ENGINE)} has no docstring"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert not roots & {"pyscript", "js", "pyodide"}, f"{path.relative_to(ENGINE)} touches the page"


# The floors of the house, from the ground up (issue 35): shared values, what users bring read in,
# the ideal sizing, the engines, what runs beside the model, the question as typed, one
# evaluation, the answer in words, the inverse question, the CLI. An import goes down or stays.
FLOORS = (
    ("units", "errors", "words", "precision", "command_line", "layers", "model"),
    ("readers",),
    ("experts", "parallel", "sizing"),
    ("engines",),
    ("serving",),
    ("inputs",),
    ("evaluation",),
    ("reports",),
    ("planning",),
    ("cli", "__main__", ""),
)


def floor(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    return next(i for i, names in enumerate(FLOORS) if top in names)


def test_every_import_goes_down_the_floors():
    """readers/ never asks an engine, an engine never asks the serving parts or the options, and
    so on up: a folder that imported one above it would be a loop of folders."""
    for module, targets in graph().items():
        for target in targets:
            assert floor(target) <= floor(module), \
                f"{module} (floor {floor(module)}) imports {target} (floor {floor(target)}), above it"


def layout_map() -> set:
    """The modules docs/architecture.md's Layout table names for app/kvcalc, as paths below it
    without .py (the module map the README links to)."""
    text = (ENGINE.parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    named = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            first = row.split("|")[1]
            named |= {name.strip().strip("`") for name in first.split(", ")}
    return named


def test_readme_layout_names_every_module_once():
    on_disk = {p.relative_to(ENGINE).with_suffix("").as_posix() for p in MODULES
               if p.name not in ("__init__.py", "__main__.py")}
    on_disk |= {p.parent.relative_to(ENGINE).as_posix() + "/" for p in MODULES if p.name == "__init__.py"
                and p.parent != ENGINE}
    named = layout_map()
    assert sorted(on_disk - named) == [], "docs/architecture.md's Layout does not name these"
    assert sorted(named - on_disk) == [], "docs/architecture.md's Layout names what is not there"
