"""The precisions a config names beside its dtype: the weights' (quantization_config), the cache's
(quantization_config.kv_cache_scheme) and the recurrent state's (mamba_ssm_cache_dtype, Qwen3.5's
mamba_ssm_dtype), each as vLLM reads it."""

from .config_fields import ConfigFields, show
from ..errors import InputError
from ..precision import precision

# vLLM MODELS_CONFIG_MAP (vllm/model_executor/models/config.py): Qwen3_5ForConditionalGenerationConfig
# copies text_config.mamba_ssm_dtype into cache_config.mamba_ssm_cache_dtype for these only; the
# text-only twins' Qwen3_5ForCausalLMConfig calls it too (0.34.0).
SSM_DTYPE_ARCHITECTURES = {"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                           "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"}


def state_dtype(f: ConfigFields, model_type: str, architecture: str | None = None) -> str | None:
    """Precision of the recurrent state where it differs from the model's, from every key vLLM
    reads (vllm/model_executor/models/config.py): mamba_ssm_cache_dtype (float32 by default for
    Nemotron-H, NemotronHForCausalLMConfig), and Qwen3.5's text_config.mamba_ssm_dtype
    (Qwen3_5ForConditionalGenerationConfig, for its two architectures only)."""
    value = f.cfg.get("mamba_ssm_cache_dtype")
    if isinstance(value, str) and value != "auto":
        return _dtype_name(f, "mamba_ssm_cache_dtype", value)
    value = f.cfg.get("mamba_ssm_dtype")
    if value is not None:
        if architecture not in SSM_DTYPE_ARCHITECTURES:
            raise InputError(f.prefix + "mamba_ssm_dtype", f"vLLM copies it into the state's dtype only for "
                             f"{', '.join(sorted(SSM_DTYPE_ARCHITECTURES))}, not {show(architecture)}; whether "
                             "this model's state is kept in it is not known")
        if not isinstance(value, str):
            raise InputError(f.prefix + "mamba_ssm_dtype", f"expected a dtype name, got {show(value)}")
        return None if value == "auto" else _dtype_name(f, "mamba_ssm_dtype", value)
    return "fp32" if model_type == "nemotron_h" else None


def _dtype_name(f: ConfigFields, key: str, value: str) -> str:
    name = precision(value, field=f.prefix + key).name
    if name not in ("fp32", "fp16", "bf16"):
        raise InputError(f.prefix + key, f"unexpected state dtype {show(value)}; expected float32, float16 or bfloat16")
    return name


def read_weights_dtype(cfg: dict, dtype: str):
    """Weights precision from quantization_config; None where bits per weight are not uniform."""
    quant = cfg.get("quantization_config")
    if quant is None:
        return dtype, None
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    if method == "fp8":
        return "fp8", "weights are fp8 (quantization_config)"
    return None, (f"the checkpoint is quantized ({method[:30] or 'unknown method'}): its weight size is not "
                  "params x one precision; give the weights precision (weights-dtype) or size (weights-gib)")


def kv_cache_scheme(quant) -> str | None:
    """fp8 where a checkpoint's quantization_config carries an 8-bit float kv_cache_scheme (ModelOpt,
    compressed-tensors), which vLLM's Attention turns "auto" into; any other scheme is refused."""
    scheme = quant.get("kv_cache_scheme") if isinstance(quant, dict) else None
    if scheme is None:
        return None
    if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
        return "fp8"
    raise InputError("quantization_config.kv_cache_scheme", f"{show(scheme)} is not a KV scheme this calculator "
                                                            "knows (8-bit float only)")
