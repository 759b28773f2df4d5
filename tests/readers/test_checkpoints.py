"""Exact weights and shape from the user's own files (issue 13): GGUF headers cross-checked
against llama.cpp's own `gguf` package on files written with its GGUFWriter (tensor data left
sparse, so a 5 GB file costs nothing), safetensors headers against the `safetensors` package,
and hostile files refused fast with one message."""

import json
import os
import struct
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gguf as ggml_gguf
from kvcalc import InputError, evaluate
from kvcalc.readers import gguf, safetensors
from support import cli

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from gguf_files import T, llama_8b, write  # noqa: E402


def test_every_ggml_type_has_llama_cpps_block_size():
    for qtype, (block, size) in ggml_gguf.GGML_QUANT_SIZES.items():
        name, our_block, our_size = gguf.GGML_TYPES[int(qtype)]
        assert (name, our_block, our_size) == (qtype.name, block, size)


def test_llama_8b_q4_k_m_header_equals_llama_cpps_reader(tmp_path):
    path = llama_8b(tmp_path / "Llama-3.1-8B-Q4_K_M.gguf")
    started = time.perf_counter()
    header = gguf.read_file(str(path))
    elapsed = time.perf_counter() - started
    reference = ggml_gguf.GGUFReader(str(path))
    assert header.weights_bytes == sum(int(t.n_bytes) for t in reference.tensors) == 5_172_420_608
    assert header.params == sum(int(t.n_elements) for t in reference.tensors) == 8_030_261_248
    assert header.data_offset == reference.data_offset
    assert header.header_bytes < 4 << 20 < os.path.getsize(path)      # the data is never read
    assert elapsed < 2
    cfg = gguf.config_from_header(header)
    assert cfg["num_key_value_heads"] == 8 and cfg["head_dim"] == 128 and cfg["vocab_size"] == 128_256
    assert cfg["max_position_embeddings"] == 131_072


def test_done_when_the_cli_answers_from_the_header_alone(tmp_path):
    path = llama_8b(tmp_path / "Llama-3.1-8B-Q4_K_M.gguf")
    code, out, err = cli("--gguf", str(path), "--context", "8192", "--gpu", "rtx-4090-24gb", "--engine", "exact",
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["weights_bytes"] == 5_172_420_608 and data["kv_dtype"] == "fp16"    # llama.cpp's default cache
    assert data["kv_bytes_per_token"] == 131_072 and data["fits"] is True
    # The same inputs as a share link would carry them reproduce the numbers.
    header = gguf.read_file(str(path))
    again = evaluate({"hf-config": gguf.config_from_header(header), "weights-bytes": str(header.weights_bytes),
                      "params": str(header.params), "context": "8192", "gpu": "rtx-4090-24gb"})
    assert again.result.max_concurrency == data["max_concurrency"]


def test_sliding_and_mla_architectures_read_the_way_llama_cpp_does(tmp_path):
    gemma = write(tmp_path / "gemma3.gguf", "gemma3", [
        ("add_block_count", 12), ("add_context_length", 131072), ("add_embedding_length", 2560),
        ("add_feed_forward_length", 10240), ("add_head_count", 8), ("add_head_count_kv", 4),
        ("add_key_length", 256), ("add_value_length", 256), ("add_sliding_window", 1024)],
        [("token_embd.weight", (262144, 2560), T.Q8_0)])
    model_cfg = gguf.config_from_header(gguf.read_file(str(gemma)))
    kinds = [k for k in model_cfg["layer_types"]]
    assert kinds.count("full_attention") == 2 and kinds[5] == "full_attention" and kinds[0] == "sliding_attention"
    ev = evaluate({"hf-config": model_cfg, "context": "32768"})
    assert ev.ok and sorted({layer.kind for layer in ev.scenario.model.layers}) == ["full", "sliding"]
    deepseek = write(tmp_path / "ds.gguf", "deepseek2", [
        ("add_block_count", 27), ("add_context_length", 163840), ("add_embedding_length", 2048),
        ("add_feed_forward_length", 10944), ("add_head_count", 16), ("add_head_count_kv", 16),
        ("add_key_length", 192), ("add_value_length", 128), ("add_kv_lora_rank", 512),
        ("add_rope_dimension_count", 64), ("add_expert_count", 64), ("add_expert_used_count", 6)],
        [("token_embd.weight", (102400, 2048), T.Q4_K)])
    ev = evaluate({"hf-config": gguf.config_from_header(gguf.read_file(str(deepseek)))})
    assert ev.ok and ev.result.kv_bytes_per_token == 27 * (512 + 64) * 2          # the latent, not K and V


def test_unknown_architecture_names_the_key(tmp_path):
    path = write(tmp_path / "x.gguf", "mamba", [("add_block_count", 4)], [("a.weight", (32,), T.F32)])
    with pytest.raises(InputError) as e:
        gguf.config_from_header(gguf.read_file(str(path)))
    assert "'mamba' is not one we read" in e.value.message
    path = write(tmp_path / "y.gguf", "llama", [("add_block_count", 4)], [("a.weight", (32,), T.F32)])
    with pytest.raises(InputError) as e:
        gguf.config_from_header(gguf.read_file(str(path)))
    assert "llama.embedding_length is missing" in e.value.message


def _header(n_tensors=0, n_keys=0, version=3, magic=b"GGUF") -> bytes:
    return magic + struct.pack("<IQQ", version, n_tensors, n_keys)


@pytest.mark.parametrize("data, words", [
    (b"GGML" + bytes(20), "does not start with the bytes 'GGUF'"),
    (_header(version=4), "version 4"),
    (_header(n_tensors=1 << 60), "claims 1,152,921,504,606,846,976 tensors"),
    (_header(n_keys=1) + struct.pack("<Q", 1 << 40), "past any real header"),
    (_header(n_keys=1) + struct.pack("<Q", 1) + b"k" + struct.pack("<IIQ", 9, 9, 2), "arrays of arrays"),
    (_header(n_keys=1) + struct.pack("<Q", 1) + b"k" + struct.pack("<IIQ", 9, 4, 1 << 40), "past any real header"),
    (_header(n_tensors=1) + struct.pack("<Q", 1) + b"t" + struct.pack("<I", 1) + struct.pack("<Q", 1 << 30)
     + struct.pack("<IQ", 0, 0), "ends past the end of the file"),
    (_header(n_keys=2)[:10], "runs past the end of the file"),
])
def test_hostile_gguf_refused_fast_with_one_message(data, words):
    started = time.perf_counter()
    with pytest.raises(InputError) as e:
        gguf.read_header(data)
    assert words in e.value.message and e.value.field == "gguf"
    assert time.perf_counter() - started < 0.1


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 199))
def test_any_bytes_give_a_header_or_a_readable_refusal(tail, cut):
    data = (_header(n_tensors=1, n_keys=1) + tail)[:24 + cut]
    try:
        gguf.read_header(data)
    except InputError as e:
        assert e.field == "gguf" and e.message
    except gguf.NeedMore:
        pytest.fail("a whole file never needs more bytes")


def test_a_prefix_asks_for_more_and_never_reads_the_data(tmp_path):
    path = llama_8b(tmp_path / "m.gguf")
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        prefix = fh.read(4096)
    with pytest.raises(gguf.NeedMore) as more:
        gguf.read_header(prefix, size)
    assert 4096 < more.value.size < 4 << 20


def test_safetensors_headers_equal_the_safetensors_package(tmp_path):
    from safetensors.numpy import save_file
    tensors = {"model.embed_tokens.weight": np.zeros((320, 64), dtype=np.float16),
               "lm_head.weight": np.zeros((320, 64), dtype=np.float32),
               "model.layers.0.mlp.gate.weight": np.zeros((7, 64), dtype=np.int8)}
    path = tmp_path / "model-00001-of-00001.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    data = path.read_bytes()
    weights = safetensors.read_header(data)
    assert weights.tensor_bytes == sum(t.nbytes for t in tensors.values()) == len(data) - 8 - \
        struct.unpack("<Q", data[:8])[0]
    assert weights.params == sum(t.size for t in tensors.values())
    # The CLI with a preset: the file's bytes replace params x precision. (A file of this
    # model's size, fp8, its data a sparse hole: the CLI refuses bytes no checkpoint of the
    # model could hold, so the tiny file above is not one for Llama 8B.)
    n = 8_030_261_248
    text = json.dumps({"model.embed_tokens.weight": {"dtype": "F8_E4M3", "shape": [n], "data_offsets": [0, n]}})
    big = tmp_path / "model.safetensors"
    big.write_bytes(struct.pack("<Q", len(text)) + text.encode())
    os.truncate(big, 8 + len(text) + n)
    with open(big, "rb") as fh:
        weights = safetensors.read_header(fh.read(8 + len(text)), os.path.getsize(big))
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--weights-file", str(big), "--json")
    assert code == 0 and json.loads(out)["weights_bytes"] == weights.tensor_bytes == n


def test_gpt_oss_index_total_size_gives_weights_and_capacity(tmp_path):
    # A model.safetensors.index.json says the checkpoint's bytes in metadata.total_size; gpt-oss's
    # MXFP4 experts make params x one precision wrong, so without it the weights are unknown.
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 65_248_815_744}, "weight_map": {"a": "b"}}))
    code, out, _ = cli("--model", "openai/gpt-oss-120b", "--gpu", "h100-sxm-80gb", "--weights-file", str(index),
                       "--json")
    data = json.loads(out)
    assert code == 0 and data["weights_bytes"] == 65_248_815_744 and data["max_concurrency"] > 0


def _safetensors(header: dict, data_bytes: int) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + bytes(data_bytes)


@pytest.mark.parametrize("data, words", [
    (b"\x01", "shorter than its 8-byte header length"),
    (struct.pack("<Q", 1 << 40) + b"{}", "claims a 1,099,511,627,776-byte header"),
    (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    (struct.pack("<Q", 5) + b"{nope", "not JSON"),
    (_safetensors({"a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 999]}}, 8), "lie outside the file"),
    (_safetensors({"a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 4]}}, 4), "are not its 4 bytes"),
    (_safetensors({"a": {"dtype": "F16", "shape": "big", "data_offsets": [0, 4]}}, 4), "is not a list of sizes"),
])
def test_hostile_safetensors_refused_with_one_message(data, words):
    with pytest.raises(InputError) as e:
        safetensors.read_header(data)
    assert words in e.value.message and e.value.field == "weights-file"


@pytest.mark.parametrize("name, data, words", [
    ("bad.safetensors", struct.pack("<Q", 5) + b"{nope", "its header is not JSON"),
    ("model.safetensors.index.json", b"{nope", "the index is not JSON"),
    ("model.safetensors.index.json", b'{"metadata": {}}', "this file has none"),
])
def test_cli_says_what_is_wrong_with_each_weights_file(tmp_path, name, data, words):
    # Each file's own refusal, named by its path (every one once came out as "not JSON").
    (tmp_path / name).write_bytes(data)
    code, _, err = cli("--model", "meta-llama/Llama-3.1-8B", "--weights-file", str(tmp_path / name))
    assert code != 0 and words in err and str(tmp_path / name) in err and "--weights-file" in err


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_as_safetensors_give_weights_or_a_readable_refusal(data):
    try:
        weights = safetensors.read_header(data)
    except InputError as e:
        assert e.field == "weights-file" and e.message
    else:
        assert weights.tensor_bytes <= len(data)


def test_quantized_presets_carry_their_checkpoints_bytes():
    # gpt-oss ships MXFP4 experts: params x one precision cannot size it; its index's total_size can.
    e = evaluate({"model": "openai/gpt-oss-20b", "gpu": "h100-sxm-80gb"})
    assert e.result.weights_bytes == 13_761_264_768 and e.result.max_concurrency > 0
    assert any("published checkpoint's 13,761,264,768 bytes" in w for w in e.scenario.warnings)
    assert not any("quantized" in w for w in e.scenario.warnings)
    # Asking for another precision is the user's choice and wins.
    e = evaluate({"model": "openai/gpt-oss-20b", "gpu": "h100-sxm-80gb", "weights-dtype": "bf16"})
    assert e.result.weights_bytes == 2 * 21_000_000_000


def test_a_hybrid_gguf_reads_as_its_config_does(tmp_path):
    # Nemotron-H 56B written the way convert_hf_to_gguf.py writes a Mamba-2 hybrid: per-layer
    # head_count_kv (0 off attention) and feed_forward_length (0 off the MLP layers), the state
    # from ssm.* (inner 256 heads x 64, time_step_rank the heads). Its layers must be the ones
    # its published config.json gives.
    from kvcalc.readers.hfconfig import model_from_config
    from support import hf_fixture
    cfg = hf_fixture("nvidia__Nemotron-H-56B-Base-8K.json")
    pattern = cfg["hybrid_override_pattern"]
    kv = [8 if c == "*" else 0 for c in pattern]
    heads = [64 if c == "*" else 0 for c in pattern]
    ffn = [32768 if c == "-" else 0 for c in pattern]
    path = write(tmp_path / "nemotron.gguf", "nemotron_h", [
        ("add_block_count", len(pattern)), ("add_context_length", 8192), ("add_embedding_length", 8192),
        ("add_feed_forward_length", ffn), ("add_head_count", heads), ("add_head_count_kv", kv),
        ("add_key_length", 128), ("add_value_length", 128), ("add_ssm_conv_kernel", 4),
        ("add_ssm_inner_size", 16384), ("add_ssm_state_size", 256), ("add_ssm_time_step_rank", 256),
        ("add_ssm_group_count", 8)], [("token_embd.weight", (131072, 8192), T.Q8_0)])
    from_gguf = model_from_config(gguf.config_from_header(gguf.read_file(str(path))))
    published = model_from_config(cfg)
    assert [layer.kind for layer in from_gguf.layers] == [layer.kind for layer in published.layers]
    assert from_gguf.layers == published.layers


def test_pipeline_stages_carry_their_own_layers_weights(tmp_path):
    # A GGUF says what each layer weighs: with pp 2 the first stage also holds the token
    # embedding, the second the output head, and the heavier one sets the weights per GPU.
    path = llama_8b(tmp_path / "m.gguf")
    header = gguf.read_file(str(path))
    layers = header.layer_bytes(32)
    assert sum(layers) == header.weights_bytes
    code, out, _ = cli("--gguf", str(path), "--gpus", "2", "--pp", "2", "--gpu", "rtx-4090-24gb", "--json")
    data = json.loads(out)
    first, second = layers[0] + sum(layers[1:17]), sum(layers[17:33]) + layers[33]
    assert data["weights_bytes_per_gpu"] == max(first, second) != -(-header.weights_bytes // 2)
    # A list that does not belong to the model is refused, naming the field.
    bad = evaluate({"model": "meta-llama/Llama-3.1-8B", "layer-weights-bytes": "1,2,3"})
    assert bad.errors[0].field == "layer-weights-bytes" and "expected 34 counts" in bad.errors[0].message


def test_safetensors_shards_give_weights_by_layer(tmp_path):
    from safetensors.numpy import save_file
    tensors = {"model.embed_tokens.weight": np.zeros((100, 8), dtype=np.float16)}
    for i in range(2):
        tensors[f"model.layers.{i}.mlp.up_proj.weight"] = np.zeros((8, 8 * (i + 1)), dtype=np.float16)
    tensors["lm_head.weight"] = np.zeros((100, 8), dtype=np.float32)
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    weights = safetensors.read_header(path.read_bytes())
    assert safetensors.layer_list([weights], 2) == "1600,128,256,3200"
    assert safetensors.layer_list([weights], 3) is None          # a layer no shard holds
