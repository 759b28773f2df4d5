"""Hostile checkpoint headers (issue 19: nothing crashes, hangs or lies). Each file is made
here (big ones sparse); each budget is bytes read (a file wrapper that counts them) or memory
(tracemalloc's peak), never time."""

import io
import json
import os
import struct
import sys
import tracemalloc

import gguf as ggml_gguf
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kvcalc import InputError
from kvcalc.readers import gguf, safetensors
from kvcalc.readers.checkpoint_files import weights_from_paths
from kvcalc.errors import CHUNK_BYTES, read_header_from

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from gguf_files import (ARRAY, BOOL, F32, I32, STRING, U8, U32, U64, T, layer_tensors, llama_8b, llama_kv,  # noqa: E402
                        raw_gguf, sparse_file, write)

MiB = 1 << 20


class Counting(io.RawIOBase):
    """A file's start (`data`), zeros after it up to `size` bytes: counts the bytes read and
    remembers each read's range."""

    def __init__(self, data: bytes, size: int | None = None):
        self.data, self.size, self.pos, self.ranges = data, len(data) if size is None else size, 0, []

    @property
    def bytes_read(self) -> int:
        return sum(end - start for start, end in self.ranges)

    def seek(self, pos, whence=0):
        self.pos = pos
        return pos

    def read(self, n=-1):
        end = self.size if n < 0 else min(self.size, self.pos + n)
        out = self.data[self.pos:end]
        out += bytes(max(0, end - self.pos - len(out)))
        self.ranges.append((self.pos, end))
        self.pos = end
        return out


class CountingPath(Counting):
    """A real file on disk, counted the same way."""

    def __init__(self, path):
        self.fh, self.size, self.pos, self.ranges = open(path, "rb"), os.path.getsize(path), 0, []

    def read(self, n=-1):
        self.fh.seek(self.pos)
        out = self.fh.read(n)
        self.ranges.append((self.pos, self.pos + len(out)))
        self.pos += len(out)
        return out


def read_gguf(fh):
    return read_header_from(fh, fh.size, gguf.parse)


def refused(call, *words):
    with pytest.raises(InputError) as e:
        call()
    for word in words:
        assert word in e.value.message, e.value.message
    return e.value


def peak_bytes(call):
    tracemalloc.start()
    try:
        try:
            call()
        except InputError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---- 1. tiny headers with wild values ------------------------------------------------------

@pytest.mark.parametrize("block_count, words", [
    ((U64, 1 << 40), "expected 1 to 10,000"),
    ((STRING, "32"), "not a whole number"),
    ((F32, 32.0), "not a whole number"),
    ((I32, -5), "expected 1 to 10,000"),
    ((BOOL, True), "not a whole number"),
    ((U32, 30_000_000), "expected 1 to 10,000"),
    ((U32, 2000), "no blk.N tensors"),
])
def test_wild_block_counts_are_refused_in_a_few_bytes_of_memory(block_count, words):
    # Once: MemoryError, TypeError or a 2.5 GB list, and "Reading the headers..." forever.
    data = raw_gguf(llama_kv(block_count))
    assert peak_bytes(lambda: refused(lambda: gguf.inputs(gguf.read_header(data)), "llama.block_count", words)) \
        < 1 * MiB


def test_a_232_kb_header_claiming_30_million_layers_is_refused_small():
    vocab = ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"tok{i}" for i in range(20_000)]))
    data = raw_gguf(llama_kv((U32, 30_000_000)) + [vocab], layer_tensors(4, dims=(8, 8)))
    data += bytes(-len(data) % 32 + 4 * 4 * 8 * 8)
    assert 200_000 < len(data) < 400_000
    assert peak_bytes(lambda: refused(lambda: gguf.inputs(gguf.read_header(data)), "30,000,000",
                                      "expected 1 to 10,000")) < 4 * MiB


@pytest.mark.parametrize("name", ["blk.².attn_q.weight", "blk.٣.attn_q.weight", "blk.01.attn_q.weight", "blk..x"])
def test_a_layer_number_that_is_not_ascii_digits_is_refused(name):
    # str.isdigit accepts "²" and "٣"; int() then raised ValueError, outside InputError.
    data = raw_gguf(llama_kv(), layer_tensors(4) + [(name, (32,), 0, 4 * 4 * 512 * 64)])
    data += bytes(-len(data) % 32 + 4 * 4 * 512 * 64 + 128)
    refused(lambda: gguf.inputs(gguf.read_header(data)), "is not a layer number")


def test_block_count_is_bounded_by_the_layers_the_tensors_name():
    def header(block_count, layers, extra=()):
        data = raw_gguf(llama_kv((U32, block_count)), layer_tensors(layers) + list(extra))
        return gguf.read_header(data + bytes(-len(data) % 32 + 4 * 4 * 512 * 64 * (layers + len(extra))))
    assert gguf.inputs(header(4, 4))["hf-config"]["num_hidden_layers"] == 4
    refused(lambda: gguf.inputs(header(6, 4)), "block_count is 6 but the tensors name only 4 layers")
    late = ("blk.9.ffn_up.weight", (512, 64), 0, 4 * 4 * 512 * 64)
    refused(lambda: gguf.inputs(header(4, 4, [late])), "names layer 9", "block_count is 4")


@pytest.mark.parametrize("key", ["embedding_length", "attention.head_count", "attention.head_count_kv",
                                 "context_length", "feed_forward_length"])
@pytest.mark.parametrize("value", [(STRING, "4096"), (F32, 1.5), (I32, -1), (U64, 1 << 62), (BOOL, True),
                                   (ARRAY, (STRING, ["a", "b"]))])
def test_every_key_read_is_a_whole_number_in_range(key, value):
    kv = [(k, *v) if k != f"llama.{key}" else (k, *value) for k, *v in llama_kv()]
    data = raw_gguf(kv)
    refused(lambda: gguf.inputs(gguf.read_header(data)), f"llama.{key}")


def test_per_layer_lists_must_have_one_entry_per_layer():
    kv = [("general.architecture", STRING, "nemotron_h"), ("nemotron_h.block_count", U32, 4),
          ("nemotron_h.embedding_length", U32, 512), ("nemotron_h.attention.head_count_kv", ARRAY, (U32, [0, 8, 0])),
          ("nemotron_h.ssm.state_size", U32, 64), ("nemotron_h.ssm.inner_size", U32, 1024),
          ("nemotron_h.ssm.conv_kernel", U32, 4), ("nemotron_h.ssm.time_step_rank", U32, 16),
          ("nemotron_h.ssm.group_count", U32, 1)]
    refused(lambda: gguf.inputs(gguf.read_header(raw_gguf(kv))), "has 3 entries for 4 layers")


# ---- 2. metadata bombs: bytes read bounded by the header, never by the file ----------------

def test_a_5_gb_file_of_empty_vocabulary_strings_is_refused_from_its_first_bytes(tmp_path):
    # The page once read 4.29 GB of it and froze 36 s; the CLI took 297 s and 5.2 GB.
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 21) + b"tokenizer.ggml.tokens" \
        + struct.pack("<IIQ", ARRAY, STRING, 600_000_000)
    path = sparse_file(tmp_path / "bomb.gguf", head, 5 << 30)
    fh = CountingPath(path)
    refused(lambda: read_gguf(fh), "600,000,000 entries", "the limit is 4,194,304")
    assert fh.bytes_read <= CHUNK_BYTES


def test_arrays_past_the_total_entries_cap_are_refused(monkeypatch):
    # Many arrays each under the one-array cap: the total is capped too (smaller caps here, the
    # same code: the real ones would take this test 128 MB of zeros).
    monkeypatch.setattr(gguf, "MAX_ARRAY_ITEMS", 1 << 16)
    kv = [(f"a{i}", ARRAY, (STRING, [""] * 10_000)) for i in range(10)]
    fh = Counting(raw_gguf(kv), 1 << 40)
    refused(lambda: read_gguf(fh), "more than 65,536 entries in all")
    assert fh.bytes_read <= 7 * 10_000 * 8 + 2 * CHUNK_BYTES


def test_strings_past_the_header_cap_are_refused_without_reading_them(tmp_path):
    # Five 60 MiB strings: each is stepped over, never read; the sixth ends past 256 MiB.
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, 6))
    with open(tmp_path / "long.gguf", "wb") as f:
        pos = 0
        for i in range(6):
            entry = bytes(out) + struct.pack("<Q", 2) + f"s{i}".encode() + struct.pack("<IQ", STRING, 60 * MiB)
            f.seek(pos)
            f.write(entry)
            pos += len(entry) + 60 * MiB
            out = bytearray()
    os.truncate(tmp_path / "long.gguf", 2 << 30)
    fh = CountingPath(tmp_path / "long.gguf")
    peak = peak_bytes(lambda: refused(lambda: read_gguf(fh), "longer than 256 MiB"))
    assert fh.bytes_read <= 6 * CHUNK_BYTES and peak < 4 * MiB


def test_2_gb_of_numeric_arrays_are_skipped_unread_and_refused_at_the_cap(tmp_path):
    # Once kept as Python lists: 12 GB for the CLI. Now each is stepped over unread, and the
    # arrays' entries in all are capped (17 of these pass it).
    path = tmp_path / "numbers.gguf"
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 170))
        for i in range(170):
            f.write(struct.pack("<Q", 4) + f"n{i:03}".encode() + struct.pack("<IIQ", ARRAY, U32, 3_000_000))
            f.seek(12_000_000, 1)
    os.truncate(path, 2100 << 20)
    fh = CountingPath(path)
    peak = peak_bytes(lambda: refused(lambda: read_gguf(fh), "n005", "more than 16,777,216 entries in all"))
    assert fh.bytes_read <= 8 * CHUNK_BYTES and peak < 4 * MiB


def test_small_numeric_arrays_are_kept_only_up_to_a_total():
    kv = [(f"n{i}", ARRAY, (U32, list(range(4096)))) for i in range(40)]
    header = gguf.read_header(raw_gguf(kv))
    kept = [v for v in header.metadata.values() if isinstance(v, list)]
    assert len(kept) == gguf.KEPT_ITEMS // 4096 and kept[0] == list(range(4096))
    assert all(isinstance(v, gguf.Skipped) and v.length == 4096 for v in header.metadata.values()
               if not isinstance(v, list))


def test_a_real_header_is_read_once_never_from_byte_0_again(tmp_path):
    # Once: 1 MiB, then 2 MiB from byte 0, then 4 MiB..., parsing again each time.
    path = llama_8b(tmp_path / "m.gguf")
    fh = CountingPath(path)
    header = read_gguf(fh)
    assert header.header_bytes > CHUNK_BYTES and len(fh.ranges) >= 2      # more than one read
    assert fh.bytes_read <= header.header_bytes + CHUNK_BYTES
    ends = [end for _, end in fh.ranges]
    assert all(start >= end for (start, _), end in zip(fh.ranges[1:], ends))     # no byte read twice
    assert header == gguf.read_file(str(path)) and header.weights_bytes == 5_172_420_608


def test_the_header_bytes_never_depend_on_the_files_size(tmp_path):
    # The same header in a 1 MB file and in a sparse 100 GB one: the same bytes read.
    data = raw_gguf(llama_kv(), layer_tensors(4))
    data += bytes(-len(data) % 32)
    reads = []
    for size in (len(data) + 4 * 4 * 512 * 64, 100 << 30):
        fh = Counting(data, size)
        read_gguf(fh)
        reads.append(fh.bytes_read)
    assert reads[0] <= reads[1] <= CHUNK_BYTES


# ---- 4. GGUF nonsense refused, naming what is wrong ----------------------------------------

def _data_for(tensors):
    end = max(offset + 4 * dims[0] * (dims[1] if len(dims) > 1 else 1) for _, dims, _, offset in tensors)
    return end + 64


@pytest.mark.parametrize("kv, tensors, words", [
    (llama_kv() + [("llama.block_count", U32, 4)], layer_tensors(4), "'llama.block_count' appears twice"),
    (llama_kv(), layer_tensors(4) + [("blk.1.ffn_up.weight", (512, 64), 0, 4 * 512 * 64 * 4)],
     "'blk.1.ffn_up.weight' is named twice"),
    (llama_kv(), [("blk.0.a", (512, 64), 0, 0), ("blk.1.a", (512, 64), 0, 1024)], "overlap"),
    (llama_kv(), [("blk.0.a", (512, 64), 0, 0), ("blk.1.a", (512, 64), 0, 0)], "overlap"),
    (llama_kv(), [("blk.0.a", (512, 64), 0, 0), ("blk.1.a", (512, 64), 0, 4 * 512 * 64 + 4)],
     "not a multiple of general.alignment 32"),
])
def test_gguf_nonsense_is_refused(kv, tensors, words):
    data = raw_gguf(kv, tensors)
    data += bytes(-len(data) % 32 + _data_for(tensors))
    refused(lambda: gguf.read_header(data), words)


def test_valid_files_read_as_llama_cpps_reader_reads_them(tmp_path):
    # GGUFWriter's files (every value type, an alignment of 64): the same tensors, offsets and
    # kept values as GGUFReader's, and nothing refused.
    path = write(tmp_path / "all.gguf", "llama", [
        ("add_block_count", 2), ("add_context_length", 4096), ("add_embedding_length", 256),
        ("add_feed_forward_length", 512), ("add_head_count", 4), ("add_head_count_kv", 2),
        ("add_custom_alignment", 64), ("add_array", "test.floats", [0.5, 1.5]), ("add_bool", "test.flag", True),
        ("add_int64", "test.i64", -7), ("add_float64", "test.f64", 2.25), ("add_string", "test.s", "héllo"),
        ("add_token_list", [f"t{i}" for i in range(5000)])],
        [("token_embd.weight", (5000, 256), T.Q8_0), ("blk.0.ffn_up.weight", (512, 256), T.Q4_K),
         ("blk.1.ffn_up.weight", (512, 256), T.F16), ("output.weight", (5000, 256), T.Q6_K)])
    ours, theirs = gguf.read_file(str(path)), ggml_gguf.GGUFReader(str(path))
    assert [(t.name, t.offset, t.bytes) for t in ours.tensors] == \
        [(t.name, int(t.data_offset) - theirs.data_offset, int(t.n_bytes)) for t in theirs.tensors]
    assert ours.data_offset == theirs.data_offset and ours.metadata["general.alignment"] == 64
    assert ours.metadata["test.floats"] == [0.5, 1.5] and ours.metadata["test.flag"] is True
    assert ours.metadata["test.i64"] == -7 and ours.metadata["test.s"] == "héllo"
    assert ours.metadata["tokenizer.ggml.tokens"] == gguf.Skipped(STRING, 5000)
    assert gguf.inputs(ours)["hf-config"]["num_hidden_layers"] == 2


# ---- 3, 4. safetensors: nesting, packing, dtypes, index against shards -----------------------

def _st(header: dict | bytes, data_bytes: int) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + bytes(data_bytes)


def _library_refuses(data: bytes, tmp_path) -> bool:
    from safetensors import safe_open
    path = tmp_path / "probe.safetensors"
    path.write_bytes(data)
    try:
        with safe_open(str(path), "np"):
            return False
    except Exception:
        return True


def test_a_header_nested_50000_deep_is_refused_before_json_loads(monkeypatch):
    # On Pyodide json.loads overflowed the WebAssembly stack: fatal, every later file open failed.
    deep = b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    assert 100_000 < len(deep) < 110_000
    loads = json.loads
    monkeypatch.setattr(json, "loads", lambda s, **k: loads(s, **k) if len(s) < 1000 else pytest.fail("whole text"))
    refused(lambda: safetensors.read_header(_st(deep, 0)), "nests deeper than the format allows")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100)          # nothing in the walk recurses
    try:
        refused(lambda: safetensors.read_header(_st(b'{"a": {"dtype": ' + b"[" * 50_000 + b"}", 0)), "nests")
    finally:
        sys.setrecursionlimit(limit)


def test_an_index_nested_50000_deep_is_refused(tmp_path):
    deep = '{"metadata": {"total_size": 1000000000}, "weight_map": {"a": ' + "[" * 50_000 + "]" * 50_000 + "}}"
    refused(lambda: safetensors.read_index(deep), "nests deeper")
    path = tmp_path / "model.safetensors.index.json"
    path.write_text(deep)
    e = refused(lambda: weights_from_paths([str(path)]), "nests deeper")
    assert e.field == "weights-file" and str(path) in e.message


@pytest.mark.parametrize("header, data_bytes, words", [
    ({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
      "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}, 6, "overlap"),
    ({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
      "b": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]}}, 12, "without gaps"),
    ({"a": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}}, 8, "without gaps"),
    ({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, 8, "fill the file exactly"),
    ({"a": {"dtype": "X99", "shape": [4], "data_offsets": [0, 4]}}, 4, "'X99' is not a safetensors dtype"),
    ({"__metadata__": {"x": 1}, "a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, 4, "__metadata__"),
])
def test_safetensors_nonsense_is_refused_as_the_library_refuses_it(tmp_path, header, data_bytes, words):
    data = _st(header, data_bytes)
    refused(lambda: safetensors.read_header(data), words)
    assert _library_refuses(data, tmp_path)


def test_every_dtype_the_library_knows_is_read(tmp_path):
    for dtype, bits in safetensors.DTYPE_BITS.items():
        data = _st({"a": {"dtype": dtype, "shape": [8], "data_offsets": [0, bits]}}, bits)
        assert safetensors.read_header(data).tensor_bytes == bits and not _library_refuses(data, tmp_path), dtype
    e = refused(lambda: safetensors.read_header(_st({"a": {"dtype": "X99", "shape": [1], "data_offsets": [0, 1]}}, 1)))
    assert "F8_E4M3FNUZ" in e.message and "C64" in e.message


def test_a_duplicate_tensor_name_is_refused():
    text = b'{"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, ' \
           b'"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}'
    refused(lambda: safetensors.read_header(_st(text, 4)), "'a' is named twice")


def _shard(path, tensors: dict):
    header, at = {}, 0
    for name, n in tensors.items():
        header[name] = {"dtype": "BF16", "shape": [n], "data_offsets": [at, at + 2 * n]}
        at += 2 * n
    path.write_bytes(_st(header, 0))
    os.truncate(path, os.path.getsize(path) + at)
    return str(path), at


def _index(path, total, weight_map):
    path.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return str(path)


def test_an_index_and_its_shards_must_agree(tmp_path):
    one, b1 = _shard(tmp_path / "model-00001-of-00002.safetensors", {"model.layers.0.w": 1 << 29})
    two, b2 = _shard(tmp_path / "model-00002-of-00002.safetensors", {"model.layers.1.w": 1 << 29})
    names = {"model.layers.0.w": "model-00001-of-00002.safetensors", "model.layers.1.w": "model-00002-of-00002.safetensors"}
    good = _index(tmp_path / "model.safetensors.index.json", b1 + b2, names)
    total, shards = weights_from_paths([good, one, two])
    assert total == b1 + b2 and len(shards) == 2           # counted once, not index + shards
    assert weights_from_paths([good, one]) == (b1 + b2, [])   # a shard left out: the index's total
    bad = _index(tmp_path / "bad.index.json", 2 * (b1 + b2), names)
    refused(lambda: weights_from_paths([bad, one, two]), "are not one checkpoint", f"{b1 + b2:,}")
    near = _index(tmp_path / "near.index.json", b1 + b2 + 1000, names)
    assert weights_from_paths([near, one, two])[0] == b1 + b2      # within 1%: the shards' exact sum
    stray, _ = _shard(tmp_path / "other.safetensors", {"x": 8})
    refused(lambda: weights_from_paths([good, one, stray]), "other.safetensors is not one of the shards")


def test_an_absurd_index_total_is_refused(tmp_path):
    tiny = _index(tmp_path / "model.safetensors.index.json", 1, {"a": "b.safetensors"})
    refused(lambda: weights_from_paths([tiny]), "total_size is 1: no sharded checkpoint is that small")


# ---- 6. fuzz: mutated valid headers give a header or an InputError, reading little ----------

def _valid_gguf(tmp_path_factory) -> bytes:
    path = write(tmp_path_factory.mktemp("fuzz") / "f.gguf", "llama", [
        ("add_block_count", 2), ("add_context_length", 4096), ("add_embedding_length", 256),
        ("add_feed_forward_length", 512), ("add_head_count", 4), ("add_head_count_kv", 2),
        ("add_token_list", [f"t{i}" for i in range(40)]), ("add_array", "x.ints", [1, 2, 3])],
        [("token_embd.weight", (64, 256), T.Q8_0), ("blk.0.attn_q.weight", (256, 256), T.F16),
         ("blk.1.attn_q.weight", (256, 256), T.Q4_K)])
    with open(path, "rb") as fh:
        return fh.read(4096)


VALID_GGUF = []


@pytest.fixture
def valid_gguf(tmp_path_factory):
    if not VALID_GGUF:
        VALID_GGUF.append(_valid_gguf(tmp_path_factory))
    return VALID_GGUF[0]


def _mutations():
    flip = st.tuples(st.just("flip"), st.integers(0, 4095), st.integers(0, 7))
    word = st.tuples(st.just("u64"), st.integers(0, 4088), st.sampled_from(
        [0, 1, 2, 7, 8, 9, 12, 13, 255, 1 << 16, 1 << 22, (1 << 22) + 1, 1 << 32, 1 << 40, (1 << 64) - 1]))
    small = st.tuples(st.just("u32"), st.integers(0, 4092), st.integers(0, 50))
    return st.lists(st.one_of(flip, word, small), min_size=1, max_size=6)


def _mutate(data: bytes, mutations, cut: int | None) -> bytes:
    out = bytearray(data)
    for kind, at, value in mutations:
        at = min(at, len(out) - 8)
        if kind == "flip":
            out[at] ^= 1 << value
        elif kind == "u64":
            out[at:at + 8] = struct.pack("<Q", value)
        else:
            out[at:at + 4] = struct.pack("<I", value)
    return bytes(out[:cut] if cut is not None else out)


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_mutations(), st.one_of(st.none(), st.integers(0, 4096)), st.booleans())
def test_mutated_gguf_headers_give_a_header_or_an_input_error(valid_gguf, mutations, cut, huge):
    data = _mutate(valid_gguf, mutations, cut)
    fh = Counting(data, 1 << 40 if huge else len(data))      # huge: zeros after, to 1 TB
    try:
        gguf.inputs(read_gguf(fh))
    except InputError as e:
        assert e.field == "gguf" and e.message
    assert fh.bytes_read <= gguf.MAX_HEADER_BYTES + CHUNK_BYTES
    assert fh.bytes_read <= len(data) + 64 * MiB           # in practice: zeros end any list fast


VALID_ST = _st({"__metadata__": {"format": "pt"},
                "model.embed_tokens.weight": {"dtype": "BF16", "shape": [16, 8], "data_offsets": [0, 256]},
                "model.layers.0.w": {"dtype": "F8_E4M3", "shape": [8, 8], "data_offsets": [256, 320]},
                "lm_head.weight": {"dtype": "F32", "shape": [16, 8], "data_offsets": [320, 832]}}, 832)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(_mutations(), st.one_of(st.none(), st.integers(0, len(VALID_ST))), st.booleans())
def test_mutated_safetensors_headers_give_weights_or_an_input_error(mutations, cut, huge):
    data = _mutate(VALID_ST, [(k, at % len(VALID_ST), v) for k, at, v in mutations], cut)
    fh = Counting(data, 1 << 40 if huge else len(data))
    try:
        weights = read_header_from(fh, fh.size, safetensors.parse)
    except InputError as e:
        assert e.field == "weights-file" and e.message
    else:
        assert weights.tensor_bytes <= fh.size
    assert fh.bytes_read <= 8 + safetensors.MAX_HEADER + CHUNK_BYTES


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet='{}[]":,0123456789 abe\\-.', max_size=120))
def test_any_index_text_gives_a_total_or_an_input_error(text):
    try:
        safetensors.read_index(text)
    except InputError as e:
        assert e.field == "weights-file"
