#!/usr/bin/env python3
"""Compare app/kvcalc/data/architectures.json with a vLLM release's model registry.

    python3 tools/vllm_registry.py SOURCE [--version X] [--write]

SOURCE is a vLLM source tree (a directory holding vllm/model_executor/models/registry.py, as
`fetch` or a git checkout gives it) or a wheel (vllm-X-*.whl, read as a zip, never installed).
It prints what changed since the table was last read:

- new: text-generating or multimodal architectures the table does not list. One that vLLM maps to
  the same module and class as a row the table sizes exactly is an alias of it;
- moved: rows whose vLLM module is another one now;
- gone: rows this release no longer lists, with what it says of them (previously supported up to
  a release, or served by the Transformers backend).

--write adds every new architecture to the table: an alias as exact (the row it shares its class
with), the rest as "not yet" with the module to read. Rows already in the table are left as they
are (the calculator still sizes older releases); their moves and removals are only reported.
The registry is read with `ast`, so nothing of vLLM is imported or run.
"""

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "app" / "kvcalc" / "data" / "architectures.json"
REGISTRY = "vllm/model_executor/models/registry.py"
# The registry's dicts this table follows: name -> (module, class); previously supported:
# name -> the last release that had it.
SERVED = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS")
BY_TRANSFORMERS = ("_TRANSFORMERS_SUPPORTED_MODELS",)
PREVIOUSLY = "_PREVIOUSLY_SUPPORTED_MODELS"


def read_source(source: Path) -> tuple[str, str | None]:
    """(registry.py's text, the release it is from where the source says it)."""
    if source.is_dir():
        text = (source / REGISTRY).read_text(encoding="utf-8")
        version = None
        for name in ("vllm/_version.py", "vllm/version.py"):
            path = source / name
            if path.exists():
                found = re.search(r"""version\s*=\s*['"]([^'"]+)['"]""", path.read_text(encoding="utf-8"))
                version = found[1] if found else None
                if version:
                    break
        return text, version
    with zipfile.ZipFile(source) as wheel:
        text = wheel.read(REGISTRY).decode("utf-8")
        metadata = next((n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")), None)
        version = None
        if metadata:
            found = re.search(r"^Version: (\S+)$", wheel.read(metadata).decode("utf-8"), re.MULTILINE)
            version = found[1] if found else None
    return text, version


def registry_dicts(text: str) -> dict[str, dict]:
    """Every module-level dict literal of the registry, by its name: {key: value}, the values as
    literals ((module, class) tuples, or strings). Spread entries (**other) are left out."""
    out = {}
    for node in ast.parse(text).body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        if target is None or not isinstance(value, ast.Dict):
            continue
        entries = {}
        for key, item in zip(value.keys, value.values):
            if key is None or not isinstance(key, ast.Constant) or not isinstance(key.value, str):
                continue
            try:
                entries[key.value] = ast.literal_eval(item)
            except ValueError:
                continue                # a value built by code: not a registry entry this reads
        out[target] = entries
    return out


def compare(table: dict, dicts: dict[str, dict]) -> dict:
    """{"new": {name: (module, class, alias_of or None)}, "moved": {name: (old, new)},
    "gone": {name: what the registry says}}."""
    rows = table["architectures"]
    served = {}
    for name in SERVED:
        served.update(dicts.get(name, {}))
    transformers = {}
    for name in BY_TRANSFORMERS:
        transformers.update(dicts.get(name, {}))
    previously = dicts.get(PREVIOUSLY, {})
    # The class an exact row's name maps to in this registry: a new name on the same one is its alias.
    exact_by_class = {}
    for name, row in rows.items():
        pair = served.get(name)
        if row["status"] == "exact" and isinstance(pair, tuple) and len(pair) == 2:
            # The row named as the class itself, where there is one (LlamaForCausalLM over InternLM3's).
            if tuple(pair) not in exact_by_class or name == pair[1]:
                exact_by_class[tuple(pair)] = name
    new, moved, gone, unread_aliases = {}, {}, {}, {}
    for name, pair in sorted(served.items()):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            continue
        module, cls = pair
        if name not in rows:
            new[name] = (module, cls, exact_by_class.get((module, cls)))
            continue
        if rows[name]["module"] != module:
            moved[name] = (rows[name]["module"], module)
        if rows[name]["status"] == "not yet" and exact_by_class.get((module, cls)) not in (None, name):
            unread_aliases[name] = (module, cls, exact_by_class[(module, cls)])
    for name in sorted(rows):
        if name in served:
            continue
        if name in previously:
            gone[name] = f"previously supported (last in vLLM {previously[name]})"
        elif name in transformers:
            gone[name] = "served by the Transformers backend"
        else:
            gone[name] = "not in the registry"
    return {"new": new, "moved": moved, "gone": gone, "unread_aliases": unread_aliases}


def report(diff: dict, version: str) -> str:
    lines = [f"vLLM {version}'s registry against {TABLE.relative_to(ROOT)}:"]
    new = diff["new"]
    aliases = {n: v for n, v in new.items() if v[2]}
    lines.append(f"new: {len(new)} ({len(aliases)} aliases of exact rows)")
    lines += [f"  {name}: {module}.{cls}" + (f" = {alias}'s class" if alias else "")
              for name, (module, cls, alias) in new.items()]
    lines.append(f"not yet, but of an exact row's class: {len(diff['unread_aliases'])}")
    lines += [f"  {name}: {module}.{cls} = {alias}'s class" for name, (module, cls, alias) in diff["unread_aliases"].items()]
    lines.append(f"moved: {len(diff['moved'])}")
    lines += [f"  {name}: {old} -> {now}" for name, (old, now) in diff["moved"].items()]
    lines.append(f"gone: {len(diff['gone'])}")
    lines += [f"  {name}: {why}" for name, why in diff["gone"].items()]
    return "\n".join(lines)


# Modules that name architectures in a way an alias may pass: each keys them as vLLM itself does, by
# the config's own architecture names, so an alias meets the same answer there as in vLLM.
KEYED_AS_VLLM = {
    "engines/vllm/profile.py": "the V2 model runner's default list, which vLLM matches against the config's "
                               "architectures names (config/vllm.py _is_default_v2_model_runner_model, 0.27.1)",
    "readers/gguf.py": "a GGUF's general.architecture mapped to the name its config would have, not a rule",
}


def keyed_by_name(name: str, code: Path = ROOT / "app" / "kvcalc") -> list[str]:
    """The calculator's modules that name an architecture in a rule: an alias of it would not meet
    them (vLLM keys some of its own rules by the class, some by the name), so it is not taken as
    exact without reading them. Those that key it as vLLM does (KEYED_AS_VLLM) are left out."""
    quoted = f'"{name}"'
    return sorted(rel for rel in (str(p.relative_to(code)) for p in code.rglob("*.py")
                                  if quoted in p.read_text(encoding="utf-8"))
                  if rel not in KEYED_AS_VLLM)


def write(table: dict, diff: dict, version: str) -> dict:
    """The table with every new architecture added: an alias exact where no rule of the calculator
    names the row it shares its class with, the rest not yet."""
    rows = dict(table["architectures"])
    for name, (module, cls, alias) in {**diff.get("unread_aliases", {}), **diff["new"]}.items():
        source = f"vLLM {version} registry ({module})"
        rules = keyed_by_name(alias) if alias else []
        if alias and not rules:
            rows[name] = {"module": module, "source": source, "status": "exact",
                          "layout": f"as {alias}: vLLM maps both to {cls}"}
        elif alias:
            rows[name] = {"module": module, "source": source, "status": "not yet",
                          "why": f"vLLM {version} maps it to {alias}'s class ({cls}), but rules keyed by {alias}'s "
                                 f"name ({', '.join(rules)}) are not checked for it"}
        else:
            rows[name] = {"module": module, "source": source, "status": "not yet",
                          "why": f"in vLLM {version}'s registry; its cache layout ({module}) has not been read"}
    source = re.sub(r"; checked against vLLM [^;]+'s registry by tools/vllm_registry\.py$", "", table["source"])
    return {"source": f"{source}; checked against vLLM {version}'s registry by tools/vllm_registry.py",
            "architectures": dict(sorted(rows.items()))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a vLLM source tree or wheel")
    parser.add_argument("--version", help="the release it is (default: what the source says)")
    parser.add_argument("--write", action="store_true", help="add the new architectures to the table")
    args = parser.parse_args(argv)
    text, found = read_source(args.source)
    version = args.version or found
    if not version:
        parser.error("the source names no release: give --version")
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    diff = compare(table, registry_dicts(text))
    print(report(diff, version))
    if args.write:
        TABLE.write_text(json.dumps(write(table, diff, version), indent=1, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
