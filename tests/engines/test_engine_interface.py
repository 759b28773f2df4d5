"""The engine interface is the whole contract (issue 20): an engine is one module with the same
members as vllm.py, sglang.py and llama.cpp's, and one line in the registry. A toy engine that
keeps every token of every layer (the exact ideal's cache, in 1,000-token pages) gets its figures
through the same CLI path as the real ones."""

import json
import types

from kvcalc import engines
from kvcalc.command_line import Launch, requests, shell_join
from kvcalc.engines.result import EngineResult, without_budget
from kvcalc.sizing import cache_bytes
from kvcalc.units import ceil_div
from support import cli

PAGE = 1000


def toy_engine() -> types.ModuleType:
    toy = types.ModuleType("toy")
    toy.NAME, toy.TITLE = "toy", "Toy"
    toy.KV_MEMORY_LOGGED, toy.SEPARATE_V = False, False
    toy.TOKENS_LABEL, toy.REFUSED_MAX_LEN_WORDS, toy.USABLE_WORDS = "pages x 1,000", "", ""
    toy.LABELS = {"engine_max_concurrency": "Requests its pages hold"}
    toy.ALLOCATES_WHOLE_BUDGET = True
    toy.CONCURRENCY_FORMAT = "{:,.2f} requests"
    toy.default_chunk = lambda scenario: 4096
    toy.usable_memory = lambda scenario, chunk, notes, ideal: ideal
    toy.estimate_overhead = lambda scenario, chunk, notes: (None, 1 << 30, None)      # a flat 1 GiB, no band
    toy.stores = lambda precision: precision.name in ("bf16", "fp16")
    toy.explain = lambda scenario, out: ["Toy keeps whole pages of 1,000 tokens."]

    def size(scenario, chunk, budget, notes):
        if budget.kv_bytes_per_gpu is None:
            return without_budget(toy.NAME, toy.TITLE, PAGE, chunk, budget, notes)
        work = scenario.workload
        pages = ceil_div(work.context_tokens, PAGE)
        _, per_request = cache_bytes(scenario.model.layer_counts(), pages * PAGE, work)
        fits = budget.kv_bytes_per_gpu // per_request
        return EngineResult(
            engine=toy.NAME, block_size=PAGE, prefill_chunk=chunk, kv_budget_bytes_per_gpu=budget.kv_bytes_per_gpu,
            kv_bytes_per_request=per_request, kv_tokens=fits * pages * PAGE, max_concurrency=fits,
            starts=fits > 0, max_model_len=work.context_tokens, refusal=None,
            activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
            overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu, budget_source=budget.source,
            log=(f"toy: {fits} requests",), notes=tuple(notes))
    toy.size = size

    def launch(scenario, result=None):
        notes = []
        slots = requests(scenario, result, "toy", "--slots", notes)
        return Launch("toy", shell_join(["toy-serve", "--slots", str(slots)]), tuple(notes))
    toy.launch = launch
    return toy


def test_a_registered_engine_sizes_through_the_cli(monkeypatch):
    """Llama 3.1 8B on an H100 (85,520,809,984 B) at 8,192 tokens: the weights take
    16,060,522,496 B and the toy's overhead 1 GiB, leaving 68,386,545,664 B; a request holds 9
    pages, 9,000 tokens x 131,072 B = 1,179,648,000 B, so 57 fit."""
    monkeypatch.setitem(engines.REGISTRY, "toy", toy_engine())
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--context", "8192",
                         "--engine", "toy", "--json")
    assert code == 0, err
    figures = json.loads(out)
    assert figures["engine"] == "toy"
    assert figures["engine_kv_budget_bytes_per_gpu"] == 85_520_809_984 - 16_060_522_496 - (1 << 30) == 68_386_545_664
    assert figures["engine_kv_bytes_per_request"] == 9000 * 131_072
    assert figures["engine_max_concurrency"] == 57 == 68_386_545_664 // 1_179_648_000
    assert figures["engine_log"] == ["toy: 57 requests"]
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--engine", "toy",
                       "--format", "log")
    assert code == 0 and out == "toy: 57 requests\n"
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--engine", "toy")
    assert code == 0 and "Toy" in out
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--engine", "toy",
                         "--launch", "toy")
    assert code == 0 and out == "toy-serve --slots 57\n", err


def test_a_registered_engine_refuses_what_it_cannot_store(monkeypatch):
    monkeypatch.setitem(engines.REGISTRY, "toy", toy_engine())
    code, _, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "toy", "--kv-dtype", "fp8")
    assert code == 2 and err == "kvcalc: error: --kv-dtype: toy cannot store the KV cache as fp8\n"


def test_every_engine_module_has_the_whole_interface():
    members = [name for name in dir(toy_engine()) if not name.startswith("__")]
    for module in engines.REGISTRY.values():
        missing = [name for name in members if not hasattr(module, name)]
        assert not missing, (module.NAME, missing)
