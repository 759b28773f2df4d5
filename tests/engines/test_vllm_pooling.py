"""vLLM's pooling runner (engines/vllm/pooling.py), worked on a real start-up log:
vllm-qwen3-embedding-8b-h100-8k-v0.12.0.log (SOURCES.md: Zzsf11/VideoCuttingAgent, Qwen3-Embedding-8B
served by `vllm serve` 0.12.0 on an H100 80GB HBM3 at max_model_len 8192). It prints
"Model loading took 14.1062 GiB", "Available KV cache memory: 56.24 GiB", "GPU KV cache size: 409,504
tokens" and "Maximum concurrency for 8,192 tokens per request: 49.99x"; its engine line carries
pooler_config=PoolerConfig(pooling_type='LAST', ...), set only under the pooling runner."""

from fractions import Fraction
from pathlib import Path

import pytest

from kvcalc.engines.vllm import pooling, profile
from kvcalc.engines.vllm.engine import launch
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log

GIB = 1 << 30
LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "vllm-qwen3-embedding-8b-h100-8k-v0.12.0.log"
# Qwen3-Embedding-8B has Qwen3-8B's shapes (36 layers, 8 KV heads of 128, hidden 4096, MLP 12288); its
# config.json names Qwen3ForCausalLM, and vLLM takes the pooling runner from its Sentence Transformers
# modules.json, which the typed input vllm-runner stands for.
TYPED = {"engine": "vllm", "engine-version": "0.12.0", "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb",
         "context": "8192"}


@pytest.mark.parametrize("architecture, runner", [
    ("Qwen3ForCausalLM", "generate"),              # *ForCausalLM: generate (a Sentence Transformers repo says pooling)
    ("LlavaForConditionalGeneration", "generate"),
    ("BertModel", "pooling"),                      # registered embedding class, and *Model
    ("Qwen2Model", "pooling"),
    ("XLMRobertaForSequenceClassification", "pooling"),   # cross-encoder / reranker
    ("Qwen3ForSequenceClassification", "pooling"),        # converted: --convert classify
    ("Qwen2ForRewardModel", "pooling"),
    ("InternLM2ForRewardModel", "pooling"),
    ("GritLM", "pooling"),                         # registered pooling class without a pooling suffix
    ("RobertaForMaskedLM", "pooling"),
    ("ChatGLMModel", "generate"),                  # registered generative class ending in Model
    ("QWenLMHeadModel", "generate"),               # LMHeadModel comes before Model in the table
    ("Qwen2_5OmniModel", "generate"),
])
def test_the_runner_auto_resolves_to_as_vllm_config_model_py_does(architecture, runner):
    assert pooling.architecture_runner(architecture) == runner


def test_the_log_says_pooling_by_its_pooler_config():
    reading = read_log(LOG.read_text())
    assert reading.values["vllm-runner"] == "pooling"
    assert reading.values["loaded-weights-gib"] == "14.1062"
    assert reading.values["kv-memory-gib"] == "56.24"


def test_non_default_args_runner_or_task_say_pooling():
    # The non-default args line as vLLM 0.12.0's api_server prints it (utils.py), with --runner pooling;
    # and 0.9's --task embed.
    VERSION = "(APIServer pid=1) INFO 12-22 14:22:07 [api_server.py:1772] vLLM API server version 0.12.0\n"
    for arg in ("'runner': 'pooling'", "'task': 'embed'", "'convert': 'classify'"):
        line = (VERSION + "(APIServer pid=1) INFO 12-22 14:22:07 [utils.py:253] non-default args: {'model_tag': "
                f"'BAAI/bge-m3', 'model': 'BAAI/bge-m3', {arg}, 'max_model_len': 8192}}")
        assert read_log(line).values.get("vllm-runner") == "pooling", arg
    generate = read_log(VERSION + "(APIServer pid=1) INFO 12-22 14:22:07 [utils.py:253] non-default args: {'model': "
                        "'Qwen/Qwen3-8B', 'max_model_len': 8192}")
    assert "vllm-runner" not in generate.values


def test_typed_as_a_pooling_model_the_kv_memory_is_the_logs_within_0_1_percent():
    e = evaluate({**TYPED, "vllm-runner": "pooling"})
    assert e.ok, e.errors
    out = e.engine
    # 0.9 x 79.19 GiB - weights - overhead; the log: 56.24 GiB, 409,504 tokens, 49.99x.
    assert abs(out.kv_budget_bytes_per_gpu / GIB - 56.24) / 56.24 < 0.001
    assert abs(out.kv_tokens - 409_504) / 409_504 < 0.001
    assert out.kv_tokens == 409_232
    assert abs(float(out.max_concurrency) - 49.99) < 0.05
    # No lm_head loaded: Qwen3-8B's 8,190,735,360 parameters x 2 B less 151,936 x 4,096 x 2 B, plus what
    # vLLM's load counts beside them (quantized_bytes.vllm_loaded_extra): the rope's 40,960 x 128 x 2 B,
    # the embedding's 2 MiB block (593.5 segments: 1 MiB) and 72 q/k norms' 512-byte blocks (256 B
    # each); the log's "Model loading took 14.1062 GiB", ours 14.1080.
    assert out.weights_bytes_per_gpu == 8_190_735_360 * 2 - 151_936 * 4096 * 2 + 40_960 * 128 * 2 + (1 << 20) \
        + 72 * 256
    assert abs(out.weights_bytes_per_gpu / GIB - 14.1062) < 0.01
    assert any("loads no lm_head" in note for note in out.notes)
    assert any("_dummy_pooler_run" in note for note in out.notes)


def test_the_generate_runner_on_the_same_inputs_takes_the_sampler_and_the_head():
    # What the row gave before the runner was modelled: 5.76 GiB of overhead (the native sampler's
    # 1,024 rows x 151,936 entries x 38 B) and the lm_head, 10.6% under the log's KV memory.
    generate = evaluate(TYPED)
    pooled = evaluate({**TYPED, "vllm-runner": "pooling"}).engine
    # The model's own weights, lm_head included, with its 2 MiB block (593.5 segments: 1 MiB more).
    assert generate.engine.weights_bytes_per_gpu - pooled.weights_bytes_per_gpu == 151_936 * 4096 * 2 + (1 << 20)
    assert round(generate.engine.overhead_bytes_per_gpu / GIB, 2) == 5.76
    assert round(generate.engine.kv_budget_bytes_per_gpu / GIB, 2) == 50.27
    assert pooled.overhead_bytes_per_gpu < GIB


def test_the_pooler_warm_up_prices_the_tokens_not_the_vocabulary():
    model = evaluate(TYPED).scenario.model
    release = evaluate(TYPED).scenario.settings.release
    peak, low, path = profile.sampler_peak(model, release, None, 8192, 1024, pooling=True)
    # every token's hidden state (bf16), its fp32 head copy and the normalized fp32 output
    assert peak == low == 8192 * 4096 * (2 + 4 + 4)
    assert "_dummy_pooler_run" in path
    forward, _ = profile.forward_peak(model, release, 1, 8192)
    assert forward > peak            # the forward pass binds, as the log's small overhead shows


def test_pasted_log_keeps_its_figures():
    reading = read_log(LOG.read_text())
    e = evaluate({**reading.values, "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb"})
    assert e.ok, e.errors
    assert e.engine.kv_budget_bytes_per_gpu == int(Fraction("56.24") * GIB)
    assert abs(e.engine.kv_tokens - 409_504) <= 16


def test_launch_says_runner_pooling():
    e = evaluate({**TYPED, "vllm-runner": "pooling"})
    command = launch(e.scenario, e)
    assert "--runner pooling" in command.command


def test_a_pooling_model_runs_the_v1_runner_until_0_29():
    # vllm/config/vllm.py _is_default_v2_model_runner_model (0.28.0): a runner_type other than "generate" is
    # no default V2 model; from 0.29.0 every model runs V2 (0.33.0's V2 runner has its PoolingRunner).
    for version, generate_v2, pooling_v2 in (("0.23.0", True, False), ("0.28.0", True, False), ("0.29.0", True, True)):
        scenario = evaluate({**TYPED, "engine-version": version}).scenario
        model, release = scenario.model, scenario.settings.release
        assert profile.uses_runner_v2(model, release, pooling=False) is generate_v2, version
        assert profile.uses_runner_v2(model, release, pooling=True) is pooling_v2, version
    # so at 0.23.0 the pooling runner's CUDA-graph estimate is subtracted (V1 from 0.21.0), the V2 one's is not
    pooled = evaluate({**TYPED, "engine-version": "0.23.0", "vllm-runner": "pooling"}).engine
    assert any("CUDA graphs subtracted" in note for note in pooled.notes)


def test_launch_before_0_10_2_says_task_embedding():
    # --runner came in 0.10.2; before it --task, whose "embedding" every release from 0.6.4 takes
    e = evaluate({**TYPED, "engine-version": "0.9.2", "vllm-runner": "pooling"})
    assert "--task embedding" in launch(e.scenario, e).command


LOGS = LOG.parent
# Two earlier versions of the same public output file (SOURCES.md): the same launch on other H100 nodes.
RUNNER_AUTO = LOGS / "vllm-qwen3-embedding-8b-h100-8k-runner-auto-v0.12.0.log"        # gpuh07: 55.74 GiB
V011 = LOGS / "vllm-qwen3-embedding-8b-h100-8k-v0.11.0rc2.dev113.log"                  # gpuh13: 56.18 GiB


def test_resolved_runner_auto_line_says_pooling():
    # "Resolved `--runner auto` to `--runner pooling`" (vllm/config/model.py _get_runner_type) and the engine
    # line's pooler_config agree; the non-default args name no runner.
    for path in (RUNNER_AUTO, V011):
        reading = read_log(path.read_text())
        assert reading.values["vllm-runner"] == "pooling", path.name
    assert read_log(V011.read_text()).values["engine-version"] == "0.11.0rc2.dev113+gf9e714813"


def test_the_0_11_dev_log_typed_and_pasted():
    # 56.18 GiB, "num_gpu_blocks is: 25566" (409,056 tokens), 49.93x at 8,192 tokens.
    typed = evaluate({**TYPED, "engine-version": "0.11.0rc2.dev113+gf9e714813", "vllm-runner": "pooling"}).engine
    assert abs(typed.kv_budget_bytes_per_gpu / GIB - 56.18) / 56.18 < 0.001
    assert abs(typed.kv_tokens - 409_056) / 409_056 < 0.001
    pasted = evaluate({**read_log(V011.read_text()).values, "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb"}).engine
    assert pasted.kv_budget_bytes_per_gpu == int(Fraction("56.18") * GIB)
    low, high = pasted.kv_tokens_range                      # what 56.175-56.185 GiB holds
    assert low <= 409_056 <= high


def test_the_same_launch_on_gpuh07_left_half_a_gib_less():
    # The log's 55.74 GiB is 0.50 GiB under the other nodes' 56.24 with the same weights (14.1062 GiB):
    # typed, we stay at 56.21 (+0.8%), well inside the band; pasted, its own figure is kept.
    e = evaluate({**TYPED, "vllm-runner": "pooling"})
    assert abs(e.engine.kv_budget_bytes_per_gpu / GIB - 55.74) / 55.74 < 0.01
    low, high = e.engine.band[0].kv_bytes_per_gpu, e.engine.band[1].kv_bytes_per_gpu
    assert low <= int(Fraction("55.74") * GIB) <= high
    pasted = evaluate({**read_log(RUNNER_AUTO.read_text()).values, "model": "Qwen/Qwen3-8B",
                       "gpu": "h100-sxm-80gb"}).engine
    low, high = pasted.kv_tokens_range
    assert low <= 405_856 <= high
