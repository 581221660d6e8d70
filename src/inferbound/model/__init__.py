"""Model arithmetic: config loading, parameter counts, KV-cache and recurrent-state size, quantization."""
from .kv import cache_bytes_for_context, kv_bytes_for_context, kv_bytes_per_token, state_bytes_per_sequence
from .loader import SUPPORTED, ConfigError, alias_of, catalog_files, load_model, parse_config
from .params import LayerParams, ParamCount, count_params, layer_params
from .quant import Quantization
from .spec import MLA, LayerGroup, ModelSpec, MoE

__all__ = ["SUPPORTED", "ConfigError", "LayerGroup", "LayerParams", "MLA", "ModelSpec", "MoE", "ParamCount",
           "Quantization", "alias_of", "cache_bytes_for_context", "catalog_files", "count_params",
           "kv_bytes_for_context", "kv_bytes_per_token", "layer_params", "load_model", "parse_config",
           "state_bytes_per_sequence"]
