"""vLLM's hybrid KV cache manager turned off (release.hybrid_manager, from vllm/config/vllm.py
VllmConfig.__post_init__ read in the wheels 0.10.2-0.34.0): --disable-hybrid-kv-cache-manager, chunked local
attention without VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE, or a --kv-transfer-config connector that
does not support it (every connector before 0.22.0). unify_hybrid_kv_cache_specs then charges each sliding or
chunked layer for the whole max_model_len, and a model with state layers does not start."""

import pytest

from kvcalc.engines.releases import release as parse_release
from kvcalc.engines.vllm import release as rules
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.serving.launch import launch
from support import hf_fixture

GEMMA3 = {"engine": "vllm", "model": "google/gemma-3-27b-it", "context": "32768", "gpu": "h100-sxm-80gb",
          "kv-memory-gib": "20"}
# Llama 4 Maverick's text_config shapes (48 layers, 8 KV heads of 128, chunked local attention over 8,192 tokens,
# every fourth layer global), as in test_vllm_allocator's Scout: the two share them.
MAVERICK = {"model_type": "llama4", "text_config": {
    "model_type": "llama4_text", "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "hidden_size": 5120, "attention_chunk_size": 8192}}


def test_gemma_3_27b_with_the_manager_off_keeps_every_layer_at_the_whole_context():
    """62 layers of 2 x 16 x 128 x 2 B = 8,192 B a token: 507,904 B, one group. 20 GiB // (16 x 507,904) = 2,642
    blocks of 16: 42,272 tokens; a request of 32,768 tokens 2,048 blocks, 1.29x. On (0.33.0), the 52 sliding layers
    keep window - 1 + two batches of 8,192 in flight: 62,557 tokens and 1.91x."""
    off = evaluate(GEMMA3 | {"hybrid-kv-cache-manager": "off"})
    assert off.ok, off.errors
    assert (off.engine.kv_tokens, f"{float(off.engine.max_concurrency):.2f}") == (2_642 * 16, "1.29")
    assert off.engine.log[0].startswith("Hybrid KV cache manager is disabled for this hybrid model")
    on = evaluate(GEMMA3)
    assert (on.engine.kv_tokens, f"{float(on.engine.max_concurrency):.2f}") == (62_557, "1.91")
    assert not any("Hybrid KV cache manager" in line for line in on.engine.log)


def test_chunked_local_attention_turns_it_off_by_default():
    """Maverick at 430,000 tokens a request, as ai-dynamo/dynamo#3643 ran it (FP8, 8 GPUs; its log: "Hybrid KV
    cache manager is disabled for this hybrid model", "GPU KV cache size: 739,536 tokens", "Maximum concurrency
    for 430,000 tokens per request: 1.72x"). Off, one group of 48 layers: 739,536 tokens are 46,221 blocks of 16,
    a request cdiv(430,000, 16) = 26,875 of them: 46,221 / 26,875 = 1.7198, printed 1.72x. The KV memory that
    gives 46,221 blocks at tp 8 (one KV head a GPU: 48 x 512 B a token) is 46,221 x 16 x 24,576 B."""
    memory = 46_221 * 16 * 24_576
    inputs = {"engine": "vllm", "engine-version": "0.10.2", "hf-config": MAVERICK, "context": "430000", "tp": "8",
              "gpus": "8", "kv-memory-gib": str(memory / (1 << 30))}
    off = evaluate(inputs)
    assert off.ok, off.errors
    assert off.engine.kv_tokens == 739_536 and f"{float(off.engine.max_concurrency):.2f}" == "1.72"
    on = evaluate(inputs | {"hybrid-kv-cache-manager": "on"})
    assert on.ok and float(on.engine.max_concurrency) > 3
    command = launch(on.scenario, "vllm", on).command
    assert command.startswith("env VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 vllm serve")


@pytest.mark.parametrize("release, connector, on", [
    ("0.21.0", "NixlConnector", False),          # before 0.22.0 any connector turns it off
    ("0.22.0", "NixlConnector", True),           # SupportsHMA from 0.18.0, asked from 0.22.0
    ("0.22.0", "LMCacheConnectorV1", False),     # never SupportsHMA
    ("0.22.0", "OffloadingConnector", True),
    ("0.33.0", "UMBPStoreConnector", False),     # SupportsHMA from 0.34.0
    ("0.33.0", "MyConnector", False),            # a custom class: not known to subclass SupportsHMA
])
def test_a_connector_keeps_it_on_only_where_it_supports_it(release, connector, on):
    assert rules.hybrid_manager(parse_release(release), None, connector, False)[0] is on
    out = evaluate(GEMMA3 | {"engine-version": release, "kv-connector": connector})
    assert out.ok and any("Hybrid KV cache manager is disabled" in line for line in out.engine.log) is not on


def test_an_offload_tier_brings_its_connector_where_vllm_sets_it_first():
    """--kv-offloading-size sets kv_transfer_config (_post_init_kv_transfer_config) after the manager's rule in
    0.20.0 and 0.21.0, before it from 0.26.0 (read in those wheels): LMCache's connector turns it off only
    there; the native OffloadingConnector supports it from 0.21.0. A connector given beside it is vLLM's
    error (a MultiConnector is asked for)."""
    def off(inputs):
        out = evaluate(GEMMA3 | inputs)
        assert out.ok, out.errors
        return any("Hybrid KV cache manager is disabled" in line for line in out.engine.log)
    assert not off({"engine-version": "0.21.0", "offload-gib": "64", "offload-backend": "lmcache"})
    assert off({"engine-version": "0.26.0", "offload-gib": "64", "offload-backend": "lmcache"})
    assert not off({"engine-version": "0.26.0", "offload-gib": "64"})
    both = evaluate(GEMMA3 | {"offload-gib": "64", "kv-connector": "NixlConnector"})
    assert [e.field for e in both.errors] == ["kv-connector"] and "MultiConnector" in both.errors[0].message


def test_chunked_attention_with_an_mtp_draft_keeps_it_off():
    assert rules.hybrid_manager(parse_release("0.33.0"), None, None, True, True)[0] is False
    with pytest.raises(InputError, match="explicitly enabled"):
        rules.hybrid_manager(parse_release("0.33.0"), "on", None, True, True)


def test_a_model_with_state_layers_does_not_start_without_it():
    cfg = hf_fixture("Qwen__Qwen3.5-27B.json")
    out = evaluate({"engine": "vllm", "hf-config": cfg, "kv-connector": "LMCacheConnectorV1", "kv-memory-gib": "20"})
    assert [e.field for e in out.errors] == ["kv-connector"]
    assert out.errors[0].message.startswith("Failed to promote local KV cache specs to one unified type.")
    old = evaluate({"engine": "vllm", "hf-config": cfg, "hybrid-kv-cache-manager": "off", "engine-version": "0.26.0",
                    "kv-memory-gib": "20"})
    assert [e.field for e in old.errors] == ["hybrid-kv-cache-manager"]
    assert "failed to convert the KV cache specs to one unified type" in old.errors[0].message


def test_an_enable_that_cannot_hold_is_vllms_error():
    out = evaluate(GEMMA3 | {"kv-connector": "LMCacheConnectorV1", "hybrid-kv-cache-manager": "on"})
    assert [e.field for e in out.errors] == ["hybrid-kv-cache-manager"]
    assert "explicitly enabled but is not supported" in out.errors[0].message
    assert [e.field for e in evaluate(GEMMA3 | {"kv-connector": "bad name!"}).errors] == ["kv-connector"]
    older = evaluate(GEMMA3 | {"hybrid-kv-cache-manager": "off", "engine-version": "0.9.2"})
    assert [e.field for e in older.errors] == ["hybrid-kv-cache-manager"]


def test_the_log_and_the_command_give_them():
    version = "INFO 05-01 10:00:00 [api_server.py:1623] vLLM API server version 0.33.0\n"
    args = ("(APIServer pid=1) INFO 05-01 10:00:00 [api_utils.py:273] non-default args: {'model': "
            "'google/gemma-3-27b-it', 'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector', "
            "kv_role='kv_both'), 'disable_hybrid_kv_cache_manager': True}")
    values = read_log(version + args, "vllm").values
    assert (values["kv-connector"], values["hybrid-kv-cache-manager"]) == ("NixlConnector", "off")
    command = ("vllm serve google/gemma-3-27b-it --kv-transfer-config "
               "'{\"kv_connector\":\"LMCacheConnectorV1\",\"kv_role\":\"kv_both\"}' --disable-hybrid-kv-cache-manager")
    values = read_log(version + command, "vllm").values
    assert (values["kv-connector"], values["hybrid-kv-cache-manager"]) == ("LMCacheConnectorV1", "off")
    warned = ("WARNING 10-15 08:43:28 [kv_cache_utils.py:1034] Hybrid KV cache manager is disabled for this hybrid "
              "model, This means we do not enable any optimizations for saving KV cache memory (e.g., dropping the KV "
              "cache outside the sliding window). The compute of layers like sliding window is still saved.")
    # The warning is a state vLLM derived, shown but not taken as the flag (a launch would write it).
    reading = read_log(version + warned, "vllm")
    assert "hybrid-kv-cache-manager" not in reading.values and "hybrid_manager_off" in reading.printed
    e = evaluate(GEMMA3 | {"kv-connector": "NixlConnector", "hybrid-kv-cache-manager": "off"})
    command = launch(e.scenario, "vllm", e).command
    assert "--kv-transfer-config" in command and "NixlConnector" in command
    assert command.endswith("--disable-hybrid-kv-cache-manager") or "--disable-hybrid-kv-cache-manager " in command
