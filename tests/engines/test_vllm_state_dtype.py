"""A hybrid's recurrent state dtype and the backend's block size, as vLLM's start-up log shows them
(engines/vllm/state_dtype.py), worked from real public logs of Qwen3.6-27B on Intel Arc Pro B70
cards under vLLM 0.23.0 (tests/fixtures/logs, URLs in SOURCES.md).

- "Setting kv cache block size to 64 for FLASH_ATTN backend": XPU's attention takes 64-token blocks,
  so the hybrid's attention block grows in steps of 64 (vllm/platforms/interface.py).
- "Setting attention block size to 448 tokens": at tp 1 a full-attention token is 4,096 B a layer;
  the Gated DeltaNet state is 30,720 conv + 786,432 SSM elements. With the SSM part in float32 (the
  config's mamba_ssm_dtype) it is 3,207,168 B and the block would be 832 tokens; in bfloat16 it is
  1,634,304 B and the block 448 = 64 x cdiv(1,634,304, 64 x 4,096). This W4A16 checkpoint keeps its
  state in the model's dtype: the printed 448 says so, and the log's 12.28% padding is
  448 x 4,096 / 1,634,304 - 1.
"""

from pathlib import Path

import pytest

from kvcalc.evaluation import evaluate
from kvcalc.inputs.options import parse_options
from kvcalc.inputs.startup_log import implied, read_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
W4A16 = "vllm-qwen3.6-27b-w4a16-arc-b70-xpu-tp1-util095-8k-v0.23.0.log"
INT4_TP2 = "vllm-qwen3.6-27b-int4-2xarc-b70-xpu-tp2-8k-v0.23.0.log"
QWEN36 = "Qwen/Qwen3.5-27B"       # the preset of Qwen3.6-27B's geometry (its config's float32 state)


def reading_of(name: str, model: str | None = None):
    reading = read_log((LOGS / name).read_text(encoding="utf-8"), "vllm")
    values = dict(reading.values) | ({"model": model} if model else {})
    return implied(reading, values), values


def test_the_backend_block_size_line_is_read():
    reading, _ = reading_of(INT4_TP2)
    block = next(r for r in reading.read if r.option == "block-size")
    assert block.text == "64" and "Setting kv cache block size to 64 for FLASH_ATTN" in block.line


def test_w4a16_state_in_bfloat16_is_implied_by_the_448_token_block():
    reading, _ = reading_of(W4A16)
    state = next(r for r in reading.read if r.option == "mamba-ssm-dtype")
    assert (state.text, state.line_number) == ("bf16", 15)
    assert "(the config says fp32)" in state.how
    engine = evaluate(dict(reading.values)).engine
    # "GPU KV cache size: 20,107 tokens", "Maximum concurrency for 8,192 tokens per request: 2.45x"
    assert engine.kv_tokens == 20_107
    assert f"{float(engine.max_concurrency):.2f}" == "2.45"
    # The engine started (line 20, "init engine ... took 312.08 s"): no Mamba-block refusal.
    assert engine.refusal is None and engine.refusal_words is None
    assert "Setting attention block size to 448 tokens" in "\n".join(engine.log)
    assert "Padding mamba page size by 12.28%" in "\n".join(engine.log)


def test_float32_state_keeps_the_config_where_the_block_says_so():
    # The int4 checkpoint at tp 2 prints 832 tokens: 64 x cdiv(1,603,584, 64 x 2,048), its state
    # in float32 as its config says; nothing is implied.
    reading, values = reading_of(INT4_TP2, QWEN36)
    reading = implied(reading, values)
    assert all(r.option != "mamba-ssm-dtype" for r in reading.read)
    engine = evaluate(dict(reading.values) | {"model": QWEN36}).engine
    assert "Setting attention block size to 832 tokens" in "\n".join(engine.log)
    assert "Padding mamba page size by 6.26%" in "\n".join(engine.log)


def test_the_option_sets_the_state_and_refuses_eight_bits():
    values = {"engine": "vllm", "engine-version": "0.23.0", "model": QWEN36, "gpu": "h100-sxm-80gb",
              "block-size": "64", "kv-dtype": "bf16", "kv-memory-gib": "10"}
    bf16 = evaluate(values | {"mamba-ssm-dtype": "bfloat16"}).engine
    fp32 = evaluate(values).engine
    assert "Setting attention block size to 448 tokens" in "\n".join(bf16.log)
    assert "Setting attention block size to 832 tokens" in "\n".join(fp32.log)
    parsed, errors = parse_options({"mamba-ssm-dtype": "fp8"})
    assert [e.field for e in errors] == ["mamba-ssm-dtype"]
    assert "float32, bfloat16 or float16" in errors[0].message


def test_auto_in_the_args_is_the_default_not_a_dtype():
    text = (LOGS / W4A16).read_text(encoding="utf-8")
    given = "'enable_prefix_caching': False, "
    assert given in text
    auto = read_log(text.replace(given, given + "'mamba_ssm_cache_dtype': 'auto', "), "vllm")
    # "auto" is no dtype: what the state is comes from the 448-token block alone, as without the key.
    state = next(r for r in auto.read if r.option == "mamba-ssm-dtype")
    assert state.how.startswith("implied") and state.line_number == 15
    flagged = read_log(text.replace(given, given + "'mamba_ssm_cache_dtype': 'float32', "), "vllm")
    assert flagged.values["mamba-ssm-dtype"] == "float32"
    # Set by the user, the flag is theirs: the 448-token block implies nothing over it.
    assert implied(flagged, dict(flagged.values)).values["mamba-ssm-dtype"] == "float32"
