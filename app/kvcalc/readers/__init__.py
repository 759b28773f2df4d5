"""What users bring, read into the calculator's types: a config.json (hfconfig, config_keys,
attention_dims, layer_kinds, config_layers, config_dtypes, config_shapes, config_fields, architectures,
params, vision_params), a GGUF, safetensors headers, the presets of models and
GPUs (data/), and the pieces every engine's log reader is made of (log_rules)."""
