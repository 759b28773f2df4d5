"""Each attention layer's KV dtype, as vLLM builds it: --kv-cache-dtype-skip-layers and TurboQuant's
boundary layers keep the model's dtype where the rest are quantized.

vLLM 0.34.0 (read in its wheel):
- `vllm/model_executor/layers/attention/attention.py` Attention.__init__: a layer whose index
  (extract_layer_index of its prefix) is listed, or any sliding-window layer when
  `sliding_window` is listed, takes kv_cache_dtype "auto", the model's dtype. MLAAttention
  (`mla_attention.py`) reads the indices only.
- `vllm/engine/arg_utils.py` create_engine_config: a `turboquant_*` dtype adds
  TurboQuantConfig.get_boundary_skip_layers to the list: the first and last min(2, layers // 2)
  of num_hidden_layers on a model without state layers, none on a hybrid
  (`vllm/model_executor/layers/quantization/turboquant/config.py`).
- `vllm/platforms/interface.py` _align_heterogeneous_kv_block_size: the quantized layers' block
  grows in steps of max(16, block) until their page covers 16 tokens of a kept layer
  (allocator.specs_of applies it).

Worked example: Llama-3.1-8B (32 layers, 8 KV heads of 128, bf16) under turboquant_k8v4 keeps
layers 0, 1, 30 and 31 in bf16: 4 x 4,096 B + 28 x 8 x 196 B = 16,384 + 43,904 = 60,288 B a token,
against 131,072 B all bf16; the block grows to 16 x cdiv(16 x 4,096, 16 x 2,048) = 32 tokens (vLLM measures
the quantized page as uint8 K and V, 2,048 B a token: the first layer's backend, a kept one's, packs nothing).
"""

from dataclasses import replace

from ...errors import InputError
from ...precision import precision
from . import release as rules

FIELD = "kv-dtype-skip-layers"
BOUNDARY_LAYERS = 2                 # get_boundary_skip_layers' n
ATTENTION_KINDS = ("full", "sliding", "chunked", "mla")
SKIP_SLIDING = "sliding_window"    # the entry that lists every sliding-window layer


def boundary_layers(model) -> set[int]:
    """TurboQuant's boundary layers: none on a hybrid (a model with state layers), else the first and
    last min(2, layers // 2) of the decoder's layers, whatever kind they are."""
    if any(layer.kind == "state" for layer in model.layers):
        return set()
    count = len(model.layers)
    n = min(BOUNDARY_LAYERS, count // 2)
    return set(range(n)) | set(range(count - n, count))


def _entries(skip: tuple, model) -> set[int]:
    """The listed layers, each checked: an index must name a layer that keeps a KV cache."""
    chosen = set()
    for entry in skip:
        if entry == SKIP_SLIDING:
            sliding = {i for i, layer in enumerate(model.layers) if layer.kind == "sliding"}
            if not sliding:
                raise InputError(FIELD, "sliding_window is listed, but this model has no sliding-window layer")
            chosen |= sliding
            continue
        index = int(entry)
        if index >= len(model.layers):
            raise InputError(FIELD, f"layer {index} is listed, but the model has layers 0 to {len(model.layers) - 1}")
        layer = model.layers[index]
        if layer.kind not in ATTENTION_KINDS or layer.held_range(1) is None:
            what = {"state": "a recurrent-state layer"}.get(layer.kind, "a layer with no attention cache")
            raise InputError(FIELD, f"layer {index} is {what}: it keeps no KV cache for a dtype to apply to")
        chosen.add(index)
    return chosen


def kv_layers(model, kv_precision, skip: tuple, release):
    """The model with each kept layer's own KV dtype (the model's), or the model as it is. Refuses
    what vLLM's release does not take and the mixes whose pages are not modelled."""
    hybrid = any(layer.kind == "state" for layer in model.layers)
    if kv_precision.packed:
        rules.check_turboquant(release, kv_precision.name, hybrid)
    if kv_precision.name == "nvfp4":
        rules.check_nvfp4(release)
    if skip:
        rules.check_skip_layers(release)
    chosen, boundary = _entries(skip, model), set()
    if kv_precision.packed:
        if any(layer.kind == "mla" for layer in model.layers):
            # No MLA backend lists a turboquant dtype (triton_mla.py, 0.34.0): "No valid attention backend".
            raise InputError("kv-dtype", f"{kv_precision.name} packs the K and V of attention heads; vLLM's MLA "
                                         "backends take no packed dtype: choose fp8 for an MLA model")
        if any(hasattr(layer, "index_row_bytes") for layer in model.layers):
            raise InputError("kv-dtype", f"{kv_precision.name} packs K and V; a sparse layer's index keys beside "
                                         "them (MiniMax-M3) take no packed slot in vLLM: choose another kv-dtype")
        boundary = boundary_layers(model)
        chosen |= boundary
        quantized_sliding = [i for i, layer in enumerate(model.layers)
                             if layer.kind in ("sliding", "chunked") and i not in chosen]
        if quantized_sliding:
            # 0.26.0 on no backend takes both (TurboQuant's supports_sliding_window is False);
            # before, such a layer took a plain uint8 SlidingWindowSpec.
            raise InputError("kv-dtype", f"{kv_precision.name} has no sliding-window backend in vLLM (layer "
                                         f"{quantized_sliding[0]} slides): choose another kv-dtype")
    native = precision(model.dtype)
    if not chosen or native.name == kv_precision.name:
        return model
    if hybrid and skip:
        raise InputError(FIELD, "a hybrid's state pages are padded to the kept layers' shared page "
                                "(_align_heterogeneous_kv_block_size); that mix is not modelled")
    if kv_precision.name.startswith("nvfp4"):
        raise InputError(FIELD, "which backend's page vLLM aligns NVFP4 to beside kept layers depends on the "
                                "first layer's backend; not modelled: leave the list out or choose fp8")
    kinds = {model.layers[i].kind for i in chosen}
    if "mla" in kinds:
        raise InputError(FIELD, "a kept MLA layer's page is aligned by FullAttentionSpec's K and V of the latent "
                                "(_align_heterogeneous_kv_block_size); not modelled: keep no MLA layer")
    if "sliding" in kinds or "chunked" in kinds:
        raise InputError(FIELD, "kept sliding-window layers take pages padded to the quantized layers' "
                                "(skip_page_size_padded) in blocks vLLM picks per backend; not modelled: "
                                "keep full-attention layers only")
    layers = tuple(replace(layer, kv_dtype=native.name) if i in chosen else layer
                   for i, layer in enumerate(model.layers))
    kept = sorted(chosen)
    note = (f"{len(kept)} layer{'s' if len(kept) > 1 else ''} ({', '.join(map(str, kept[:8]))}"
            f"{', ...' if len(kept) > 8 else ''}) keep their KV cache in {native.name}, the rest in "
            f"{kv_precision.name}" + (" (TurboQuant keeps a dense model's first and last two layers)"
                                      if boundary else ""))
    return replace(model, layers=layers, notes=tuple(model.notes) + (note,))
