"""Reading a config's sizes and switches: the helpers every family builder shares.

``flag`` reads a switch (a constant, or the config key that sets it); ``sized`` an integer size (the
first key present, else the config class's default with a warning, else a formula default); ``core``
the decoder's layers, width, heads, KV heads, head_dim and vocabulary, range- and divisibility-checked;
``mla_fields`` the multi-head latent attention widths (DeepSeek-V3's config keys).
"""
from __future__ import annotations

from typing import Any

from .validate import Reader


def flag(r: Reader, d: dict, value: bool | str) -> bool:
    """A switch: a constant, or the config key that sets it (its class default when absent)."""
    if isinstance(value, bool):
        return value
    return r.bool(value, bool(d.get(value, False)))


def sized(r: Reader, fam: str, defaults: dict, size_defaults: dict, *keys: str, fallback: Any = None,
          kind: str = "width", lo: int | None = None):
    """An integer size: the first of ``keys`` present; else the class's size default (with a warning);
    else ``fallback`` (a formula default, silent); else ConfigError naming the key."""
    v = r.opt_int(*keys, kind=kind, lo=lo)
    if v is not None:
        return v
    for k in keys:
        if k in size_defaults:
            r.warn(f"{k} absent: using the {fam} config class default {size_defaults[k]} "
                   f"(transformers); set it if the checkpoint differs")
            return size_defaults[k]
        if k in defaults:
            return defaults[k]
    if fallback is not None:
        return fallback
    raise r.missing([keys[0]])


def core(r: Reader, fam: str, defaults: dict, size_defaults: dict, layers=("num_hidden_layers",),
         hidden=("hidden_size",), heads=("num_attention_heads",), need_heads: bool = True,
         n: int | None = None) -> dict:
    """Layers, hidden size, heads, KV heads, head_dim, vocab: read, range-checked, divisibility-checked.
    ``n``: the layer count when the family derives it (Nemotron-H: the block pattern's length)."""
    vocab_defaulted = "vocab_size" in defaults or "vocab_size" in size_defaults
    keys = (([layers] if n is None else []) + [hidden] + ([] if vocab_defaulted else [("vocab_size",)])
            + ([heads] if need_heads else []))
    missing = [k[0] for k in keys if r.key_of(*k) is None]
    if missing:
        raise r.missing(missing)
    n = r.int(*layers, kind="layers") if n is None else n
    d = r.int(*hidden, kind="width")
    vocab = sized(r, fam, defaults, size_defaults, "vocab_size", kind="vocab")
    out = dict(n=n, d=d, vocab=vocab)
    if not need_heads:
        return out
    h = r.int(*heads, kind="heads")
    if "num_key_value_heads" in r.raw and r.raw["num_key_value_heads"] is None:
        kv = h  # an explicit null: the config classes' __post_init__ sets one KV head per query head
    else:  # absent: the class's own default (data/model_families.yaml, warned), else one per query head
        kv = sized(r, fam, defaults, size_defaults, "num_key_value_heads", fallback=h, kind="heads")
    hd = r.opt_int("head_dim", kind="width")
    if hd is None and "head_dim" in size_defaults:
        hd = sized(r, fam, defaults, size_defaults, "head_dim")
    if hd is None:
        r.divides(r.key_of(*heads) or heads[0], h, r.key_of(*hidden) or hidden[0], d,
                  "head_dim is absent, so head_dim = hidden_size / num_attention_heads must be an integer")
        hd = d // h
    r.divides("num_key_value_heads", kv, r.key_of(*heads) or heads[0], h,
              "each KV head serves an equal group of query heads")
    out.update(h=h, kv=kv, hd=hd)
    return out


def mla_fields(r: Reader) -> dict:
    """Multi-head latent attention widths: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim (may be 0),
    v_head_dim (all required; ConfigError naming the missing ones) and the optional q_lora_rank."""
    keys = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    missing = [k for k in keys if not r.has(k)]
    if missing:
        raise r.missing(missing)
    out = {k: r.int(k, kind="width", lo=0 if k == "qk_rope_head_dim" else 1) for k in keys}
    out["q_lora_rank"] = r.opt_int("q_lora_rank", kind="width")
    return out
