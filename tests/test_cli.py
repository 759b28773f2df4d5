"""The CLI: `kvcalc` and `python -m kvcalc`, JSON keys, exit 2 with one line on bad input."""

import json
import os
import subprocess
import sys

import pytest

from kvcalc.reports.link import encode, encode_config

from support import FIXTURES, ROOT, cli, hf_fixture

INT_KEYS = ("kv_bytes_per_token", "kv_bytes_per_request", "kv_bytes_total", "kv_bytes_per_gpu", "weights_bytes")


def cli_json(*argv):
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_seed_deployment_from_the_issue():
    # seed 004 via the CLI flags named in the engine issue
    base = ["--layers", "80", "--kv-heads", "8", "--head-dim", "128", "--kv-dtype", "fp16",
            "--gpus", "8", "--gpu-memory-gib", "80", "--weights-gib", "35", "--overhead-gib", "0.5", "--engine", "exact"]
    for context, n in {"8192": 240, "32768": 60, "131072": 15}.items():
        assert cli_json(*base, "--context", context)["max_concurrency"] == n


def test_json_keys_are_ints_or_null():
    d = cli_json("--model", "meta-llama/llama-3.1-8b", "--context", "8192", "--batch", "4")
    for key in INT_KEYS:
        assert type(d[key]) is int
    assert d["max_concurrency"] is None and d["max_context"] is None
    assert d["kv_bytes_per_token"] == 131_072 and d["kv_bytes_total"] == 4 << 30


def test_manual_mla():
    d = cli_json("--layers", "60", "--mla-rank", "512", "--mla-rope-dim", "64")
    assert d["kv_bytes_per_token"] == 69_120


def test_hf_config_path_and_stdin():
    path = FIXTURES / "hf" / "deepseek-ai__DeepSeek-V3.json"
    assert cli_json("--hf-config", str(path))["kv_bytes_per_token"] == 70_272
    code, out, err = cli("--hf-config", "-", "--json", stdin=path.read_text())
    assert code == 0 and json.loads(out)["kv_bytes_per_token"] == 70_272


@pytest.mark.parametrize("argv, option", [
    (["--model", "nope/nothing"], "--model"),
    (["--model", "meta-llama/Llama-3.1-8B", "--kv-dtype", "fp7"], "--kv-dtype"),
    (["--model", "meta-llama/Llama-3.1-8B", "--context", "-5"], "--context"),
    (["--model", "meta-llama/Llama-3.1-8B", "--context", "0"], "--context"),
    (["--model", "meta-llama/Llama-3.1-8B", "--batch", "1.5"], "--batch"),
    (["--model", "meta-llama/Llama-3.1-8B", "--gpus", "3"], "--tp"),
    (["--model", "meta-llama/Llama-3.1-8B", "--memory-utilization", "1.5"], "--memory-utilization"),
    (["--model", "meta-llama/Llama-3.1-8B", "--gpu", "tpu-v9"], "--gpu"),
    (["--layers", "32", "--kv-heads", "8"], "--head-dim"),
    (["--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--attention-heads", "12"], "--kv-heads"),
    (["--hf-config", "/nonexistent/config.json"], "--hf-config"),
    (["--frobnicate"], "usage"),
])
def test_bad_input_exits_2_with_one_line(argv, option):
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"kvcalc: error: {option}")


def test_memory_without_weights_keeps_kv_figures_and_says_why():
    d = cli_json("--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--gpu-memory-gib", "80")
    assert d["kv_bytes_per_token"] == 131_072 and d["max_concurrency"] is None
    assert any("weights' size needs" in w for w in d["warnings"])


def test_malformed_json_config(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 32,')
    code, _, err = cli("--hf-config", str(bad))
    assert code == 2 and "not valid JSON" in err and "Traceback" not in err


def test_link_round_trip_matches_direct_options():
    # As the page writes a link: it always names the engine (one without keeps meaning the exact ideal).
    values = {"model": "meta-llama/Llama-3.1-70B", "context": "8192", "batch": "32", "kv-dtype": "fp8",
              "gpus": "8", "gpu": "h100-sxm-80gb", "memory-utilization": "0.9", "engine": "vllm"}
    direct = cli_json(*[a for k, v in values.items() for a in (f"--{k}", v)])
    via_link = cli_json("--link", "http://127.0.0.1:8000/#" + encode(values))
    assert direct == via_link and direct["max_concurrency"] > 0


def test_link_with_embedded_config():
    cfg = hf_fixture("openai__gpt-oss-120b.json")
    fragment = encode({"hf-config": cfg, "context": "65536"})
    assert cli_json("--link", "#" + fragment)["kv_bytes_per_request"] == 18 * 2048 * (65536 + 128)


def test_table_output_names_both_units():
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-70B", "--context", "8192", "--batch", "32", "--kv-dtype", "fp16",
                       "--explain")
    assert code == 0 and "80.00 GiB = 85.90 GB" in out and "2 x 128 x 8 kv heads x 2 B" in out


def test_the_default_table_is_the_short_answer_and_explain_the_long_one():
    """Issue 39: the verdict, the headline rows, what the engine prints and its launch command, in
    a screen; --explain (-v) adds every row, the arithmetic and the engine's reasons."""
    argv = ("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--context", "32768", "--batch", "16")
    _, short, _ = cli(*argv)
    _, long, _ = cli(*argv, "-v")
    assert short.splitlines()[0].startswith("Verdict") and long.splitlines()[0] == short.splitlines()[0]
    assert "Max concurrent requests (of 32,768 tokens)  14" in short and "GPU KV cache size: 465,056 tokens" in short
    assert "\nLaunch: vllm serve meta-llama/Llama-3.1-8B --max-model-len 32768 --max-num-seqs 16 " in short
    assert "why:" not in short and "2 x 128 x 8 kv heads x 2 B" not in short and len(short.splitlines()) <= 25
    assert "  # --kv-cache-memory-bytes 60,956,865,498 pins the KV memory computed here" in short
    assert "why:" in long and "2 x 128 x 8 kv heads x 2 B" in long and "Launch:" not in long


def test_python_dash_m_and_console_script_entry():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"))
    proc = subprocess.run([sys.executable, "-m", "kvcalc", "--layers", "32", "--kv-heads", "8", "--head-dim", "128",
                           "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["kv_bytes_per_token"] == 131_072
    proc = subprocess.run([sys.executable, "-m", "kvcalc", "--context", "abc", "--layers", "1"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--context" in proc.stderr


def test_extremes_stay_exact():
    d = cli_json("--model", "meta-llama/Llama-3.1-405B", "--context", "10000000", "--batch", "1000000",
                 "--gpus", "1000", "--tp", "8", "--pp", "125", "--gpu-memory-gib", "80", "--weights-gib", "1000")
    assert d["kv_bytes_total"] == 516_096 * 10_000_000 * 1_000_000
    assert d["max_concurrency"] >= 0


def test_a_closed_pipe_is_quiet():
    """`kvcalc --list-models | head -1` ended in a BrokenPipeError traceback (issue 19)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"))
    proc = subprocess.run(f"'{sys.executable}' -m kvcalc --list-models | head -1", shell=True,
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.count("\n") == 1 and proc.stderr == "", proc.stderr


def test_a_long_link_from_a_file_or_standard_input(tmp_path):
    """A link carrying a pasted config can pass Linux's 128 KiB limit on one argument: --link
    @FILE and --link - read it instead. This config has 300 layers and a big id2label, as
    classification heads' configs do (random names, so the link's zlib cannot shrink them)."""
    import random
    rng = random.Random(19)
    labels = {str(i): "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(40)) for i in range(4000)}
    cfg = dict(hf_fixture("meta-llama__Llama-3.1-8B.json"), num_hidden_layers=300,
               layer_types=["full_attention"] * 300, id2label=labels)
    url = "https://example.invalid/#" + encode({"hf-config": cfg, "context": "4096"})
    assert len(url) > 128 * 1024
    path = tmp_path / "link.txt"
    path.write_text(url + "\n")
    from_file = cli_json("--link", f"@{path}")
    code, out, err = cli("--link", "-", "--json", stdin=url)
    assert code == 0, err
    assert from_file == json.loads(out)
    assert from_file["kv_bytes_per_token"] == 2 * 300 * 8 * 128 * 2


def test_link_files_that_cannot_be_read(tmp_path):
    code, _, err = cli("--link", f"@{tmp_path / 'missing.txt'}")
    assert code == 2 and err.startswith("kvcalc: error: --link: cannot read"), err
    big = tmp_path / "big.txt"
    big.write_text("#" + "a" * (300 * 1024))
    code, _, err = cli("--link", f"@{big}")
    assert code == 2 and "--link: is longer than" in err, err
    code, _, err = cli("--link", "-", "--hf-config", "-", stdin="")
    assert code == 2 and "standard input" in err, err


def test_a_fault_inside_is_a_refusal_not_a_traceback(monkeypatch):
    """Whatever escapes the engine comes out in the refusal's shape, one line, exit 2."""
    import kvcalc.cli

    def broken(*_):
        raise ZeroDivisionError("division by zero")
    monkeypatch.setattr(kvcalc.cli, "table", broken)
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B")
    assert code == 2 and out == ""
    assert err.startswith("kvcalc: error: --model: these inputs reach a case the calculator cannot size "
                          "(ZeroDivisionError: division by zero)"), err
    assert len(err.splitlines()) == 1


def test_from_log_with_model_reads_the_layout_the_logs_figures_imply():
    """Issue 36: vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log names no model and no tp; given the
    model, its 7.71 GiB of KV memory holds its 3,947 blocks (63,152 tokens) only at tp 2, which the
    CLI takes, as the page does once the model is chosen."""
    log = ROOT / "tests" / "fixtures" / "logs" / "vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log"
    code, out, err = cli("--from-log", str(log), "--model", "Qwen/Qwen2.5-32B-Instruct", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["tp"] == 2 and json.loads(out)["engine_kv_tokens"] == 63152
    assert "tp = 2 (implied: 7.71 GiB of KV memory (line 5) holds 3,947 GPU blocks" in err
