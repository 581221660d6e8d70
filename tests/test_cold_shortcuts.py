"""Shortcuts a cold estimate takes (issue 18) give what the long way gives: the model loader's first alias
table (names and ids only) against the full one, and the engine profiles' plain-data copy against deepcopy."""
import copy

from inferbound.deploy import engines
from inferbound.model import loader
from inferbound.model.variants import aliases


def test_quick_alias_table_agrees_with_the_full_one():
    files = loader.catalog_files()
    full = {**aliases(sorted(files)), **{k.lower(): k for k in files}}
    quick = {**{loader.alias_of(k): k for k in sorted(files)}, **{k.lower(): k for k in files}}
    assert set(quick) <= set(full) and all(full[k] == v for k, v in quick.items())
    assert set(full) - set(quick)   # short names (mixtral-8x7b) are only in the full table
    # hand-picked: a name, an id in another case, and a short name that needs the full table
    assert loader.resolve("llama-3.1-8b")[0] == "meta-llama/Llama-3.1-8B"
    assert loader.resolve("META-LLAMA/llama-3.1-70b")[0] == "meta-llama/Llama-3.1-70B"
    assert loader.resolve("mixtral-8x7b")[0] == "mistralai/Mixtral-8x7B-v0.1"


def test_profile_copy_equals_deepcopy_and_shares_no_container():
    raw = {"a": [1, 2.5, {"b": None, "c": [True, "x"]}], "d": {"e": {"f": 3}}, "g": (1, 2)}
    out = engines._copy(raw)
    assert out == copy.deepcopy(raw)
    assert out["a"] is not raw["a"] and out["a"][2] is not raw["a"][2] and out["d"]["e"] is not raw["d"]["e"]
    out["a"][2]["c"].append("y")
    assert raw["a"][2]["c"] == [True, "x"]   # the original is untouched


def test_merged_catalog_equals_the_deepcopy_merge(monkeypatch):
    fast = engines.load_engines()
    engines.load_engines.cache_clear()
    monkeypatch.setattr(engines, "_copy", copy.deepcopy)
    try:
        assert engines.load_engines() == fast
    finally:
        engines.load_engines.cache_clear()
