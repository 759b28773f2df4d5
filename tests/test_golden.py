"""Golden outputs: 42 CLI commands and 10 share links, their exit code, standard output and
standard error recorded in tests/golden/ and compared byte for byte. A change to the engine's
house (issue 20) must leave every one identical; a change of behaviour updates the recordings on
purpose, with the reason in the commit:

    KVCALC_RECORD_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_golden.py
"""

import os
from pathlib import Path

import pytest

from gguf_files import llama_8b
from kvcalc.reports.link import encode
from support import FIXTURES, cli, hf_fixture

GOLDEN = Path(__file__).resolve().parent / "golden"
RECORD = os.environ.get("KVCALC_RECORD_GOLDEN") == "1"
HF = FIXTURES / "hf"
GGUF = "@gguf"          # stands for a Llama 3.1 8B Q4_K_M-like GGUF written by the test

SEED = ["--layers", "80", "--kv-heads", "8", "--head-dim", "128", "--context", "8192", "--batch", "32",
        "--gpus", "8", "--gpu-memory-gib", "80", "--weights-gib", "35", "--overhead-gib", "0.5"]
L70 = ["--model", "meta-llama/Llama-3.1-70B", "--context", "8192", "--batch", "32", "--kv-dtype", "fp8",
       "--gpus", "8", "--gpu", "h100-sxm-80gb", "--memory-utilization", "0.9"]
L8 = ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb"]
V3 = ["--model", "deepseek-ai/DeepSeek-V3", "--context", "131072", "--kv-dtype", "fp8"]
L70_4 = ["--model", "meta-llama/Llama-3.1-70B", "--gpu", "h100-sxm-80gb", "--gpus", "4", "--kv-dtype", "fp8",
         "--batch", "32", "--context", "32768"]
EXACT = ["--engine", "exact"]     # the exact ideal, which the CLI sized by default before issue 34

COMMANDS = {
    "seed-custom-table": SEED + EXACT,
    "seed-custom-json": SEED + EXACT + ["--json"],
    "llama70b-fp8-tp8-table": L70 + EXACT,
    "llama70b-fp8-tp8-json": L70 + EXACT + ["--json"],
    "llama70b-csv": L70 + EXACT + ["--format", "csv"],
    "llama70b-markdown": L70 + EXACT + ["--format", "markdown"],
    "llama70b-gb": L70 + EXACT + ["--unit", "gb"],
    "qwen3-32b-launch-vllm": ["--model", "Qwen/Qwen3-32B", "--context", "32768", *EXACT, "--launch", "vllm"],
    "qwen3-32b-launch-sglang": ["--model", "Qwen/Qwen3-32B", "--context", "32768", *EXACT, "--launch", "sglang"],
    "qwen3-32b-launch-llamacpp": ["--model", "Qwen/Qwen3-32B", "--context", "32768", *EXACT, "--launch",
                                  "llama.cpp"],
    "llama8b-vllm-json": L8 + ["--engine", "vllm", "--json"],
    "llama8b-sglang-table": L8 + ["--engine", "sglang", "--context", "32768", "--batch", "16"],
    "llama8b-llamacpp-4090": ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "rtx-4090-24gb", "--engine", "llama.cpp",
                              "--kv-dtype", "q8_0", "--batch", "4"],
    "qwen3-30b-vllm-log": ["--model", "Qwen/Qwen3-30B-A3B", "--tp", "8", "--context", "262144", "--engine", "vllm",
                           "--kv-memory-gib", "12.22", "--format", "log"],
    "deepseek-v3-sglang-log": V3 + ["--gpus", "8", "--gpu", "h200-141gb", "--engine", "sglang", "--format", "log"],
    "llama70b-llamacpp-log": ["--model", "meta-llama/Llama-3.1-70B", "--gpus", "2", "--gpu", "a100-sxm-80gb",
                              "--engine", "llama.cpp", "--context", "16384", "--format", "log"],
    "deepseek-v3-mla-tp8-json": V3 + ["--gpus", "8", "--gpu", "h200-141gb", *EXACT, "--json"],
    "deepseek-v3-pp2-table": V3 + ["--gpus", "16", "--pp", "2", "--gpu", "h100-sxm-80gb", "--engine", "vllm"],
    "gemma2-sliding-json": ["--model", "google/gemma-2-9b", "--context", "32768", "--gpu", "l40s-48gb", *EXACT,
                            "--json"],
    "gemma3-27b-sliding-table": ["--model", "google/gemma-3-27b-it", "--context", "131072", "--gpu", "h100-sxm-80gb",
                                 *EXACT],
    "qwen3-next-hybrid-vllm-json": ["--model", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--tp", "4", "--gpus", "4",
                                    "--gpu", "h100-sxm-80gb", "--engine", "vllm", "--json"],
    "nemotron-h-config-table": ["--hf-config", str(HF / "nvidia__Nemotron-H-56B-Base-8K.json"), "--gpus", "4",
                                "--gpu", "h100-sxm-80gb", "--params", "56B", *EXACT],
    "jamba-table": ["--model", "ai21labs/Jamba-v0.1", "--context", "65536", "--gpu", "h100-sxm-80gb", *EXACT],
    "gpt-oss-120b-vllm-json": ["--model", "openai/gpt-oss-120b", "--gpu", "h100-sxm-80gb", "--engine", "vllm", "--json"],
    "mixtral-config-json": ["--hf-config", str(HF / "mistralai__Mixtral-8x7B-v0.1.json"), "--gpus", "2",
                            "--gpu", "a100-sxm-80gb", *EXACT, "--json"],
    "llama8b-prefix-blocks-json": L8 + ["--prefix-tokens", "2048", "--block-size", "16", "--batch", "64",
                                        "--context", "16384", *EXACT, "--json"],
    "custom-mla-table": ["--layers", "61", "--mla-rank", "512", "--mla-rope-dim", "64", "--context", "65536",
                         "--batch", "8", "--gpus", "8", "--gpu", "h200-141gb", "--params", "671B",
                         "--weights-dtype", "fp8", *EXACT],
    "gguf-table": ["--gguf", GGUF, "--context", "8192", "--gpu", "rtx-4090-24gb", *EXACT],
    "gguf-llamacpp-log": ["--gguf", GGUF, "--context", "32768", "--gpu", "rtx-4090-24gb", "--engine", "llama.cpp",
                          "--format", "log"],
    "refuse-context-0": ["--model", "meta-llama/Llama-3.1-8B", "--context", "0", *EXACT],
    "refuse-tp-3": ["--model", "meta-llama/Llama-3.1-8B", "--tp", "3", "--gpus", "3", *EXACT],
    "refuse-unknown-model": ["--model", "nobody/no-such-model", *EXACT],
    "refuse-engine": L8 + ["--engine", "tgi"],
    "refuse-log-without-engine": L8 + EXACT + ["--format", "log"],
    # No --engine: the CLI sizes as the page does, the newest vLLM release modelled (issue 34: the
    # exact ideal said "Fits, 37" where the page said "Does not fit: vLLM holds 29.79").
    "default-vllm-llama70b-4xh100-table": L70_4,
    "default-vllm-llama70b-4xh100-json": L70_4 + ["--json"],
}
# Issue 39: the table is the short answer by default; these recordings are the long form, --explain.
EXPLAINED = ("seed-custom-table", "llama70b-fp8-tp8-table", "llama70b-gb", "llama8b-sglang-table",
             "llama8b-llamacpp-4090", "deepseek-v3-pp2-table", "gemma3-27b-sliding-table", "nemotron-h-config-table",
             "jamba-table", "custom-mla-table", "gguf-table", "default-vllm-llama70b-4xh100-table")
COMMANDS.update({name: COMMANDS[name] + ["--explain"] for name in EXPLAINED})
COMMANDS.update({
    # The short answer: the verdict, the headline rows, what the engine prints, its launch command.
    "short-llama8b-sglang": L8 + ["--engine", "sglang", "--context", "32768", "--batch", "16"],
    "short-default-vllm-llama70b-4xh100": L70_4,
    "short-llama8b-llamacpp-4090": ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "rtx-4090-24gb", "--engine",
                                    "llama.cpp", "--kv-dtype", "q8_0", "--batch", "4"],
    "short-llama70b-fp8-tp8-exact": L70 + EXACT,
    "short-gguf": ["--gguf", GGUF, "--context", "8192", "--gpu", "rtx-4090-24gb", *EXACT],
    "short-llama70b-bf16-h100-does-not-start": ["--model", "meta-llama/Llama-3.1-70B", "--gpu", "h100-sxm-80gb",
                                                "--context", "8192"],
})

LINKS = {
    "link-model-context": ({"model": "google/gemma-2-9b", "context": "32768"}, ["--json"]),
    "link-embedded-config": ({"hf-config": hf_fixture("openai__gpt-oss-120b.json"), "context": "65536",
                              "gpu": "h100-sxm-80gb"}, ["--explain"]),
    "link-tp-without-gpus": ({"model": "meta-llama/Llama-3.1-8B", "tp": "4"}, ["--json"]),
    "link-sglang": ({"model": "Qwen/Qwen3-32B", "gpu": "h100-sxm-80gb", "engine": "sglang", "gpus": "2"}, ["--explain"]),
    "link-gb": ({"model": "meta-llama/Llama-3.1-70B", "gpu": "a100-sxm-80gb", "gpus": "4", "unit": "gb"}, ["--explain"]),
    "link-override-batch": ({"model": "meta-llama/Llama-3.1-8B", "gpu": "l4-24gb", "batch": "2"},
                            ["--batch", "8", "--json"]),
    "link-vllm-log": ({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm",
                       "kv-dtype": "fp8"}, ["--format", "log"]),
    "link-mla-csv": ({"model": "deepseek-ai/DeepSeek-V3", "gpu": "h200-141gb", "gpus": "8", "kv-dtype": "fp8"},
                     ["--format", "csv"]),
}
RAW_LINKS = {
    # Fragments as a stranger may write them: every bad entry is ignored with its reason.
    "link-bad-values": "#model=meta-llama/Llama-3.1-8B&context=-1&batch=%3Cb%3E&zzz=1&kv-dtype=fp8",
    "link-repeated-keys": "#model=google/gemma-2-9b&context=2048&context=999999&batch=3&pin=x",
}


def run_case(name: str, argv: list, tmp_path) -> str:
    if GGUF in argv:
        path = llama_8b(tmp_path / "llama-8b.gguf")
        argv = [str(path) if a == GGUF else a for a in argv]
    code, out, err = cli(*argv)
    # Paths of this machine are not part of the answer.
    out, err = (text.replace(str(tmp_path), "<tmp>").replace(str(FIXTURES), "<fixtures>") for text in (out, err))
    return f"exit {code}\n--- stdout\n{out}--- stderr\n{err}"


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if RECORD:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no recording for {name}: record with KVCALC_RECORD_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {path.name}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_output_is_unchanged(name, tmp_path):
    check(name, run_case(name, COMMANDS[name], tmp_path))


@pytest.mark.parametrize("name", sorted(LINKS) + sorted(RAW_LINKS))
def test_link_output_is_unchanged(name, tmp_path):
    if name in LINKS:
        values, extra = LINKS[name]
        url = "http://127.0.0.1:8000/#" + encode(values)
    else:
        url, extra = "http://127.0.0.1:8000/" + RAW_LINKS[name], ["--explain"]
    check(name, run_case(name, ["--link", url, *extra], tmp_path))


def test_every_recording_has_its_case():
    names = set(COMMANDS) | set(LINKS) | set(RAW_LINKS)
    assert len(COMMANDS) >= 30 and len(LINKS) + len(RAW_LINKS) >= 10
    assert {p.stem for p in GOLDEN.glob("*.txt")} == names
