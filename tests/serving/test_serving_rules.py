"""Each engine's serving rules as data (issue 35): engines/<engine>/serving.py holds what vLLM,
SGLang and llama.cpp do with a draft, LoRA slots, a vision encoder, a host KV tier and a prefix
cache, and the shared code in serving/ asks them through the registry (serving/rules.py), never
an engine's name. One worked example per engine, each figure with the source it was read in; the
exact ideal's rules; and a new engine's rules, which are one more value of the same shapes."""

import ast
import importlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from kvcalc import engines
from kvcalc.engines.serving_rules import LoraRules, ServingRules
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.readers import presets
from kvcalc.serving import ServingSettings, draft, lora, offload
from kvcalc.serving.rules import rules_of

LLAMA_8B = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}


def mtp_heads(tokens):
    return draft.Draft(kind="mtp", name="DeepSeek-V3 MTP", spec_tokens=tokens)


def test_each_engine_module_exposes_its_rules_from_its_own_home():
    for name in ("vllm", "sglang", "llama.cpp"):
        module = engines.REGISTRY[name]
        assert rules_of(name) is module.SERVING
        home = importlib.import_module(module.__name__.rsplit(".", 1)[0] + ".serving")   # engines/<e>/serving.py
        assert home.SERVING is module.SERVING


def test_vllm_lora_ranks_offload_chunks_and_speculative_config():
    rules = rules_of("vllm")
    # vllm/config/lora.py LoRAConfig: max_lora_rank one of these, max_loras 1 and rank 16 by default.
    assert rules.lora.ranks == (1, 8, 16, 32, 64, 128, 256, 320, 512)
    assert (rules.lora.default_slots, rules.lora.default_rank, rules.lora.embeddings) == (1, 16, True)
    # vllm/lora/layers/logits_processor.py: LogitsProcessorWithLoRA refuses a vocabulary past 258,048,
    # so Gemma 3 27B's 262,208 tokens are refused, naming the field.
    assert rules.lora.max_vocab == 258_048
    with pytest.raises(InputError) as e:
        lora.slots(lora.Lora(1, 16), presets.preset_model("google/gemma-3-27b-it"), 1, "vllm")
    assert e.value.field == "max-loras" and "(262,208) is past 258,048" in e.value.message
    # config/speculative.py: MTP heads propose num_speculative_tokens, n_predict by default.
    assert rules.draft.flags(mtp_heads(1)) == ["--speculative-config",
                                               '{"method": "mtp", "num_speculative_tokens": 1}']
    # v1/kv_offload/cpu/spec.py: chunks of one 16-token block x world_size copies, rounded up to
    # the 4 KiB page from 0.23.0; one MLA latent for all ranks from 0.27.0; the flag a total.
    native = rules.offload.backend("native")
    assert (native.scheme, native.scope, native.chunk_tokens, native.aligned_from, native.replicated_mla_from) == (
        "blocks", "engine total", 16, (0, 23, 0), (0, 27, 0))
    # Llama 3.1 8B, 64 GiB at tp 2: 2 x 32 layers x 4 kv heads x 128 x 2 B = 65,536 B a token a rank;
    # one chunk 65,536 x 16 x 2 copies = 2 MiB, so 32,768 chunks of 16 tokens = 524,288 tokens.
    e = evaluate(dict(LLAMA_8B, engine="vllm", tp="2", gpus="2", **{"offload-gib": "64"}))
    t = offload.tier(e.scenario.serving.offload, "vllm", e.scenario, e)
    assert (t.bytes_per_token_per_rank, t.chunk_bytes, t.chunks, t.tokens) == (65_536, 2 * 2 ** 20, 32_768, 524_288)
    assert offload.launch_flags(e.scenario.serving.offload, "vllm") == [
        "--kv-offloading-size", "64", "--kv-offloading-backend", "native"]


def test_sglang_spec_steps_lora_pool_and_whole_gb_hicache():
    rules = rules_of("sglang")
    # server_args.py _auto_choose_speculative_params: (num_steps, topk, draft tokens) = (3, 1, 4).
    assert rules.draft.default_spec_tokens == 3
    assert rules.draft.flags(mtp_heads(3)) == ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
                                               "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    # arg_groups/fields/lora.py max_loras_per_batch 8; lora/mem_pool.py LoRAMemoryPool: any rank,
    # the linears only (no embed_tokens or lm_head).
    assert (rules.lora.default_slots, rules.lora.ranks, rules.lora.embeddings) == (8, None, False)
    assert rules.lora.slots_flag == "--max-loras-per-batch"
    # --mm-enable-dp-encoder is its data mode for a vision tower.
    assert rules.encoder.data_mode_flags == ("--mm-enable-dp-encoder",)
    # mem_cache/pool_host/base.py: --hicache-size takes whole decimal GB per rank (type=int):
    # 64 GiB = 68.719 GB, so 68; LMCache is its own --enable-lmcache, refused as a backend here.
    hicache = rules.offload.backend("native")
    assert (hicache.scheme, hicache.scope, hicache.whole_gb) == ("pages", "per rank", True)
    e = evaluate(dict(LLAMA_8B, engine="sglang", **{"offload-gib": "64"}))
    assert offload.launch_flags(e.scenario.serving.offload, "sglang") == [
        "--enable-hierarchical-cache", "--hicache-size", "68"]
    assert rules.offload.backend("lmcache") is None and "--enable-lmcache" in dict(rules.offload.refused_backends)[
        "lmcache"]


def test_llama_cpp_draft_context_projector_and_what_it_has_not():
    rules = rules_of("llama.cpp")
    # common/speculative.cpp: the draft gets its own context (not the target's pool), vocabularies
    # may differ by SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128; llama-context.cpp pads n_ctx to 256.
    assert (rules.draft.pools, rules.draft.vocab_slack, rules.draft.own_context_pad) == (False, 128, 256)
    # tools/server mtmd_init_from_file: the --mmproj GGUF, never an encoder tp mode.
    assert rules.encoder.mmproj_flags == ("--mmproj", "FILE")
    assert not rules.encoder.tower_from_checkpoint and "--mmproj" in rules.encoder.tp_mode_refusal
    # No LoRA slots (each --lora FILE whole), no host tier in tokens (--cache-ram, PR #16391), no
    # prefix shared between -np slots: each refused by the shared code in the engine's own words.
    asked = ServingSettings(max_loras=4, offload_gib=8, prefix_hit_rate=1, prefix_tokens=2048)
    e = evaluate(dict(LLAMA_8B, engine="llama.cpp", **{"max-loras": "4"}))
    assert [err.field for err in e.errors] == ["max-loras"] and "--lora FILE whole" in e.errors[0].message
    with pytest.raises(InputError) as caught:
        offload.offload_from(asked, "llama.cpp")
    assert caught.value.field == "offload-gib" and "--cache-ram" in caught.value.message
    assert "(-np)" in rules.prefix.refusal
    # tools/server/server-context.cpp: "speculative decode is not supported by multimodal".
    e = evaluate(dict(LLAMA_8B, engine="llama.cpp", **{"draft-model": "meta-llama/Llama-3.2-1B",
                                                        "mmproj-bytes": "8238080"}))
    assert [err.field for err in e.errors] == ["draft-model"]
    assert "speculative decoding with a multimodal projector" in e.errors[0].message


def test_the_exact_ideal_takes_vllms_lora_set_and_one_logical_copy_of_a_tier():
    ideal = rules_of(None)
    assert ideal.lora.ranks == rules_of("vllm").lora.ranks and ideal.lora.slots_flag is None
    assert ideal.lora.words == "vLLM's rule (the exact ideal)"
    assert {name: backend.scheme for name, backend in ideal.offload.backends} == {"native": "exact", "lmcache": "exact"}
    assert ideal.draft.pools and ideal.draft.flags(mtp_heads(1)) == []


def test_a_new_engine_is_one_more_value_of_the_same_shapes(monkeypatch):
    """An engine that allocates 2 LoRA slots of the linears by default: the shared formula sizes
    them, half of SGLang's 4 x 64 slots for Llama 3.1 8B (1,342,177,280 B): 671,088,640 B."""
    toy = SimpleNamespace(NAME="toy", TITLE="Toy", SERVING=ServingRules(lora=LoraRules(
        default_slots=2, embeddings=False, words="Toy", default_slots_words="Toy's default",
        source="toy.py", embeddings_words="The linears only.", slots_flag="--toy-loras")))
    monkeypatch.setitem(engines.REGISTRY, "toy", toy)
    sized = lora.slots(lora.Lora(2, 64, loras_given=False), presets.preset_model("meta-llama/Llama-3.1-8B"), 1, "toy")
    assert (sized.slots, sized.bytes_per_gpu) == (2, 671_088_640)
    assert lora.launch_flags(lora.Lora(2, 64, loras_given=False), "toy") == [
        "--enable-lora", "--toy-loras", "2", "--max-lora-rank", "64"]
    # An engine whose serving rules are not written down refuses a part, naming the engine.
    monkeypatch.setitem(engines.REGISTRY, "bare", SimpleNamespace(NAME="bare", TITLE="Bare"))
    with pytest.raises(InputError) as e:
        lora.slots(lora.Lora(1, 16), presets.preset_model("meta-llama/Llama-3.1-8B"), 1, "bare")
    assert e.value.field == "engine" and "Bare's rules" in e.value.message


def test_serving_compares_no_engine_name():
    """No `==`, `!=` or `in` against "vllm", "sglang" or "llama.cpp" in serving/ (their rules are
    data in engines/)."""
    names = {"vllm", "sglang", "llama.cpp"}
    found = []
    for path in (Path(__file__).resolve().parents[2] / "app" / "kvcalc" / "serving").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                consts = [c for side in sides for c in ast.walk(side) if isinstance(c, ast.Constant)]
                found += [f"{path.name}:{node.lineno}" for c in consts if c.value in names]
    assert found == []
