"""Model arithmetic: config loading, parameter counts, KV-cache size."""
from .kv import kv_bytes_for_context, kv_bytes_per_token
from .loader import ConfigError, alias_of, catalog_files, load_model, parse_config
from .params import ParamCount, count_params
from .spec import MLA, LayerGroup, ModelSpec, MoE

__all__ = ["ConfigError", "LayerGroup", "MLA", "ModelSpec", "MoE", "ParamCount", "alias_of",
           "catalog_files", "count_params", "kv_bytes_for_context", "kv_bytes_per_token", "load_model",
           "parse_config"]
