"""A multimodal checkpoint served text-only: the model as the engine builds it without its vision
tower (vLLM --language-model-only from 0.17.0, or --limit-mm-per-prompt 0 for every modality from
0.10.2: the model files build `visual = None`, and from 0.15 `_mark_tower_model` skips every tower;
vllm/config/multimodal.py get_limit_per_prompt, vllm/multimodal/registry.py
supports_multimodal_inputs, read in the 0.10.2, 0.12.0, 0.17.0 and 0.22.0 wheels). What the tower
held goes out of the weights, its tensors out of each rank's split, and the model is text-only for
the profiling run (no encoder pass: the registry runs it "in text-only mode")."""

from dataclasses import replace

from ..errors import InputError
from ..model import Model, VisionTower
from ..precision import precision

FIELD = "language-model-only"


def without_tower(model: Model) -> Model:
    """`model` without its vision tower and projector: their parameters out of the count, their
    bytes (at the model's 16-bit dtype, as the checkpoints and the quantized formats priced here
    keep them) out of the checkpoint's and the config's weights. A text-only model is returned as
    it is; a multimodal one whose tower is not counted here is refused, since what leaves the
    weights would not be known."""
    if not model.multimodal:
        return model
    shapes = model.shapes
    tower = shapes.vision if shapes is not None else None
    if tower is None or tower.unread is not None or not tower.groups:
        why = (f"{tower.unread.field}: {tower.unread.message}" if tower is not None and tower.unread is not None
               else "no vision_config was read with it")
        raise InputError(FIELD, f"{model.name}'s vision tower is not counted here ({why}), so what serving it "
                                "text-only leaves out of the weights is not known: paste its full config.json")
    params = sum(rows * cols for _, rows, cols in tower.groups)
    tower_bytes = precision(model.dtype).bytes_for(params)
    kept = [(t, b) for t, b in zip(shapes.tensors, shapes.tensor_bytes or (None,) * len(shapes.tensors))
            if t.role != "vision"]
    tensors = tuple(t for t, _ in kept)
    tensor_bytes = tuple(b for _, b in kept) if shapes.tensor_bytes is not None else None
    dropped = f"{params:,} parameters, {tower_bytes:,} B"
    return replace(
        model, multimodal=False, vision_shape=None,
        params=_less(model.params, params), active_params=_less(model.active_params, params),
        checkpoint_bytes=_less(model.checkpoint_bytes, tower_bytes),
        config_weights_bytes=_less(model.config_weights_bytes, tower_bytes),
        notes=model.notes + (f"served text-only (language-model-only): the engine builds no vision tower ({dropped} "
                             "out of the weights) and profiles no encoder pass",),
        shapes=replace(shapes, tensors=tensors, tensor_bytes=tensor_bytes,
                       vision=VisionTower(groups=(), unread=None, wrapper=tower.wrapper, tp_splits=(),
                                          unsplit_heads=None)))


def _less(total: int | None, part: int) -> int | None:
    return None if total is None else total - part
