"""The CLI as users install it: `pip install .` builds a wheel, and that wheel alone (no source
tree, no editable install on the path) must carry every package the CLI imports. The editable
install the other tests use hid a wheel without `kvcalc.engines` (issue 19)."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gguf_files import llama_8b

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The `kvcalc` script of a fresh venv that has only the built wheel in it."""
    work = tmp_path_factory.mktemp("wheel")
    # Built from a copy of what the wheel is made of: setuptools writes build/ into the tree it
    # builds, and two test workers building the one checkout at once trip over each other's.
    source = work / "source"
    shutil.copytree(ROOT / "app" / "kvcalc", source / "app" / "kvcalc",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q",
                            "--disable-pip-version-check", "-w", str(work / "dist")],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "dist").glob("kvcalc-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
    bin_dir = work / "venv" / ("Scripts" if os.name == "nt" else "bin")
    done = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--disable-pip-version-check", str(wheel)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return wheel, bin_dir / "kvcalc", work


def run(script, *argv, cwd):
    # Run from an empty folder with a clean environment, so nothing from the source tree is importable.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(script), *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_the_wheel_carries_every_engine_package(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = sorted(str(p.parent.relative_to(ROOT / "app")) for p in (ROOT / "app" / "kvcalc").rglob("__init__.py"))
    assert "kvcalc/engines" in packages
    for package in packages:
        assert f"{package}/__init__.py" in names, package
    for data in (ROOT / "app" / "kvcalc" / "data").glob("*.json"):
        assert f"kvcalc/data/{data.name}" in names
    assert not any(name.startswith("web/") for name in names), "the page's browser modules stay out of the wheel"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llama.cpp", None])
def test_the_installed_cli_sizes_with_every_engine(installed, engine, tmp_path):
    _, kvcalc, _ = installed
    argv = ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--context", "8192", "--json"]
    if engine:
        argv += ["--engine", engine]
    done = run(kvcalc, *argv, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # Llama 3.1 8B: 2 x 32 layers x 8 kv heads x 128 x 2 B = 131,072 B per token (bf16).
    assert out["kv_bytes_per_token"] == 131_072
    if engine:
        assert out["engine"] == engine and out["engine_starts"] is True


def test_the_installed_cli_lists_models_reads_gguf_and_refuses(installed, tmp_path):
    _, kvcalc, _ = installed
    listed = run(kvcalc, "--list-models", cwd=tmp_path)
    assert listed.returncode == 0 and "meta-llama/Llama-3.1-8B" in listed.stdout, listed.stderr
    path = llama_8b(tmp_path / "llama.gguf")
    done = run(kvcalc, "--gguf", str(path), "--context", "4096", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2     # f16 cache
    refused = run(kvcalc, "--model", "meta-llama/Llama-3.1-8B", "--context", "0", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.startswith("kvcalc: error: --context:"), refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_installed_cli_plans(installed, tmp_path):
    _, kvcalc, _ = installed
    done = run(kvcalc, "--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm", "--plan", "--plan-gpus",
               "h100-sxm-80gb", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["plan"]
    # Llama 3.1 8B in bf16 is 16 GB of weights: one H100 80GB holds it and a request of 8,192 tokens.
    assert (row["gpu"], row["gpus"], row["fits"]) == ("h100-sxm-80gb", 1, True)
