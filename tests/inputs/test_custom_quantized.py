"""A model typed by its dimensions with a quantized weights-dtype is priced tensor by tensor, as a
config's is: the linear layers in the format, the embeddings, lm_head and norms in 16 bits (AWQ and
GPTQ never quantize them).

Worked example: llava-1.5-13b AWQ on an RTX 4080 under vLLM 0.10.2 (tests/fixtures/logs/vllm-llava-
1.5-13b-awq-rtx4080-util078-2k-eager-v0.10.2.log, URL in SOURCES.md). vLLM resolved it as
LlamaForCausalLM (text only), so its text model's dimensions are the whole model: 40 layers of width
5,120, MLP 13,824, vocabulary 32,064, 40 heads of 128.
- embeddings and lm_head: 2 x 32,064 x 5,120 x 2 B = 656,670,720 B
- linear layers: 40 x (4 x 5,120^2 + 3 x 5,120 x 13,824) = 12,687,769,600 parameters, at 4 bits
  6,343,884,800 B, with a 16-bit scale per 128 inputs 198,246,400 B
- norms: (2 x 40 + 1) x 5,120 x 2 B = 829,440 B
7,199,631,360 B = 6.71 GiB; the log's "Model loading took 6.8147 GiB" also holds AWQ's zero points
and what loading adds. Priced as 4 bits throughout (the old rule), the embeddings lost 0.46 GiB and
the KV came out 11.7% over the log's 5.32 GiB.
"""

import json
from pathlib import Path

from kvcalc.evaluation import evaluate

ROOT = Path(__file__).resolve().parents[1]
ROW_FILE = "vllm-llava-1.5-13b-awq-rtx4080-util078-2k-eager-v0.10.2.log"


def row():
    rows = json.loads((ROOT / "fixtures/logs/corpus/vllm.json").read_text(encoding="utf-8"))["logs"]
    return next(r for r in rows if r["file"] == ROW_FILE)


def test_typed_dims_with_int4_keep_embeddings_in_16_bits():
    inputs = row()["inputs"]
    assert inputs["weights-dtype"] == "int4" and "params" not in inputs
    e = evaluate(inputs)
    assert e.ok, e.errors
    assert e.result.weights_bytes_per_gpu == 656_670_720 + 6_343_884_800 + 198_246_400 + 829_440 == 7_199_631_360
    assert "embeddings, head, norms" in e.scenario.model.config_weights_rule


def test_the_llava_13b_awq_kv_comes_within_half_a_percent_of_its_log():
    printed = row()["printed"]
    engine = evaluate(row()["inputs"]).engine
    # "Available KV cache memory: 5.32 GiB", "GPU KV cache size: 6,960 tokens"
    assert abs(engine.kv_budget_bytes_per_gpu / (1 << 30) / printed["kv_gib"] - 1) < 0.005
    assert abs(engine.kv_tokens / printed["kv_tokens"] - 1) < 0.005


def test_unquantized_dims_still_price_every_parameter_in_the_model_dtype():
    inputs = {k: v for k, v in row()["inputs"].items() if k != "weights-dtype"}
    e = evaluate(inputs)
    params = 12_687_769_600 + 2 * 32_064 * 5_120 + 81 * 5_120
    assert e.scenario.model.params == params and e.result.weights_bytes_per_gpu == 2 * params
