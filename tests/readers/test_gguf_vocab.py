"""A GGUF's vocabulary from its tensor table (issue 34, item 7).

vLLM's and SGLang's overhead estimates and llama.cpp's compute buffer need the vocabulary size;
a GGUF without `{arch}.vocab_size` or the tokenizer's token list in its metadata still gives it in
its tensors: llama.cpp builds token_embd.weight (and output.weight, unless tied) as {n_embd,
n_vocab} (src/llama-model.cpp load_tensors), ggml's dims innermost first. The files are written
with llama.cpp's own gguf package (tests/gguf_files.py)."""

import json

import gguf as ggml_gguf
import pytest

from kvcalc.readers import gguf
from kvcalc.errors import InputError
from kvcalc.readers.params import count_params
from support import cli

from gguf_files import T, write

META = [("add_block_count", 4), ("add_context_length", 8192), ("add_embedding_length", 512),
        ("add_feed_forward_length", 1536), ("add_head_count", 8), ("add_head_count_kv", 2),
        ("add_key_length", 64), ("add_value_length", 64), ("add_name", "Tiny Llama")]
LAYERS = [(f"blk.{i}.ffn_up.weight", (1536, 512), T.Q8_0) for i in range(4)]


def tiny(path, tokens: bool, tied: bool = False, rows: int = 32000):
    """A 4-layer llama of width 512: 32,000 tokens in its embedding (Q4_K) and head (Q6_K)."""
    meta = META + ([("add_token_list", [f"t{i}" for i in range(32000)])] if tokens else [])
    head = [] if tied else [("output.weight", (rows, 512), T.Q6_K)]
    return write(path, "llama", meta, [("token_embd.weight", (rows, 512), T.Q4_K)] + head + LAYERS)


def figures(path, engine):
    code, out, err = cli("--gguf", str(path), "--engine", engine, "--gpu", "rtx-4090-24gb", "--context", "4096",
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    shown = {k: data.get(k) for k in ("max_concurrency", "kv_bytes_per_token", "weights_bytes", "engine_kv_tokens",
                                      "overhead_bytes_per_gpu", "activation_bytes_per_gpu", "prefill_flops")}
    return shown, err


def test_the_token_embedding_gives_the_vocabulary(tmp_path):
    path = tiny(tmp_path / "no-tokens.gguf", tokens=False)
    reference = ggml_gguf.GGUFReader(str(path))
    embd = next(t for t in reference.tensors if t.name == "token_embd.weight")
    assert list(embd.shape) == [512, 32000]          # llama.cpp's own reader: n_embd, then n_vocab
    header = gguf.read_file(str(path))
    assert "tokenizer.ggml.tokens" not in header.metadata and "llama.vocab_size" not in header.metadata
    assert gguf.config_from_header(header)["vocab_size"] == 32000
    # Tied to the embedding (no output.weight): the embedding alone gives it.
    tied = gguf.read_file(str(tiny(tmp_path / "tied.gguf", tokens=False, tied=True)))
    assert gguf.config_from_header(tied)["vocab_size"] == 32000


@pytest.mark.parametrize("engine", ["exact", "vllm", "sglang", "llama.cpp"])
def test_a_gguf_without_a_token_list_sizes_in_every_engine_mode(tmp_path, engine):
    # Before: vLLM refused ("--vocab-size: vLLM's start-up overhead is estimated from the model's
    # vocab size"), the exact ideal left the parameters uncounted and llama.cpp its compute buffer.
    bare, said = figures(tiny(tmp_path / "bare.gguf", tokens=False), engine)
    listed, _ = figures(tiny(tmp_path / "listed.gguf", tokens=True), engine)
    assert bare == listed
    if engine != "exact":
        assert bare["engine_kv_tokens"]          # the engine sized its pool
    # The parameters from the config's shapes: 32,000 x 512 twice (embedding and head), and per
    # layer 2 x 512 x 512 (q, o) + 2 x 128 x 512 (k, v) + 3 x 1536 x 512 + 2 x 512 (norms), plus
    # the final norm: the count the vocabulary makes possible.
    layer = 2 * 512 * 512 + 2 * 128 * 512 + 3 * 1536 * 512 + 2 * 512
    cfg = gguf.config_from_header(gguf.read_file(str(tmp_path / "bare.gguf")))
    assert count_params(cfg).total == 2 * 32000 * 512 + 4 * layer + 512 == 44_831_232
    assert "vocab" not in said


def test_a_table_that_contradicts_the_metadata_is_refused(tmp_path):
    # llama.cpp refuses to load it ("tensor 'token_embd.weight' has wrong shape"): neither figure is
    # sized from.
    path = tiny(tmp_path / "odd.gguf", tokens=True, rows=32064)
    with pytest.raises(InputError) as e:
        gguf.config_from_header(gguf.read_file(str(path)))
    assert e.value.field == "gguf"
    assert "vocabulary of 32,000 tokens but token_embd.weight has 32,064 rows" in e.value.message
    code, _, err = cli("--gguf", str(path))
    assert code != 0 and err.count("\n") == 1 and "--gguf" in err


def test_an_embedding_of_another_width_is_refused(tmp_path):
    path = write(tmp_path / "wide.gguf", "llama", META, [("token_embd.weight", (32000, 1024), T.F16)] + LAYERS)
    with pytest.raises(InputError) as e:
        gguf.config_from_header(gguf.read_file(str(path)))
    assert "[1024, 32000]" in e.value.message and "[embedding_length 512, vocabulary]" in e.value.message
