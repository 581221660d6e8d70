"""Short aliases without a version suffix (``mixtral-8x7b`` for ``mistralai/Mixtral-8x7B-v0.1``), only where
one catalog id has that short name, and the same ``short_aliases`` in ``/api/models`` as in ``inferbound
models --json``."""
from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.model import catalog_files
from inferbound.model.loader import resolve
from inferbound.model.variants import aliases

# the tokens a short alias may leave out of a catalog name, written out here from data/model_variants.yaml's
# prose (fine-tune tokens, a 4-digit release stamp, a trailing version, the "Meta-" prefix), not read from it
DROPPABLE = {"instruct", "chat", "it", "pt", "base", "thinking", "hf"}


def _may_shorten_to(name: str, short: str) -> bool:
    """Whether catalog name ``name`` (lower-cased, after org/) shortens to ``short`` by dropping whole tokens
    that are fine-tune tokens, release stamps or a last version token, keeping the rest in order."""
    toks = name.lower().removeprefix("meta-").split("-")
    want = short.split("-")
    kept = []
    for i, t in enumerate(toks):
        if (t in DROPPABLE or re.fullmatch(r"\d{4}", t)
                or (i == len(toks) - 1 and re.fullmatch(r"v\d+(\.\d+)*", t))):
            continue
        kept.append(t)
    full = [t for t in toks if t not in DROPPABLE and not re.fullmatch(r"\d{4}", t)]
    return want in (kept, full)


def test_mixtral_short_ids_resolve_to_the_versioned_catalog_entries():
    assert resolve("mixtral-8x7b")[0] == "mistralai/Mixtral-8x7B-v0.1"
    assert resolve("mixtral-8x22b")[0] == "mistralai/Mixtral-8x22B-v0.1"
    assert resolve("mixtral-8x7b-v0.1")[0] == "mistralai/Mixtral-8x7B-v0.1"  # the long alias still works


def test_an_ambiguous_short_id_is_no_alias():
    cat = sorted(catalog_files())
    # the catalog has Mistral-7B-v0.1 and Mistral-7B-Instruct-v0.3: "mistral-7b" names both, so neither gets it
    assert {"mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.3"} <= set(cat)
    assert "mistral-7b" not in aliases(cat)
    # on a made-up catalog with one Mistral-7B only, the short name is an alias of it
    assert aliases(["org/Mistral-7B-v0.1"])["mistral-7b"] == "org/Mistral-7B-v0.1"
    assert "mistral-7b" not in aliases(["org/Mistral-7B-v0.1", "org/Mistral-7B-v0.2"])
    # a version token inside a name is not a suffix: nothing is dropped from it
    assert "foo-7b" not in aliases(["org/Foo-v2-7B"])


def test_every_short_alias_names_exactly_one_catalog_id():
    cat = sorted(catalog_files())
    names = {hf_id: hf_id.split("/", 1)[-1] for hf_id in cat}
    by_alias = aliases(cat)
    assert len(by_alias) > len(cat)  # there are short aliases at all
    for short, hf_id in by_alias.items():
        exact = [c for c, n in names.items() if n.lower() == short]
        if exact:  # an id's own lower-cased name: that id, and only it
            assert exact == [hf_id], short
            continue
        shorten = [c for c, n in names.items() if _may_shorten_to(n, short)]
        assert shorten == [hf_id], (short, shorten)
        assert resolve(short)[0] == hf_id


def test_api_models_carries_the_same_short_aliases_as_the_cli():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient
    from inferbound.web import create_app
    api = {r["id"]: r["short_aliases"] for r in TestClient(create_app()).get("/api/models").json()}
    r = CliRunner().invoke(app, ["models", "--json"])
    assert r.exit_code == 0, r.output
    cli = {row["id"]: row["short_aliases"] for row in json.loads(r.output)}
    assert api == cli
    assert api["mistralai/Mixtral-8x7B-v0.1"] == ["mixtral-8x7b"]  # its alias mixtral-8x7b-v0.1 is left out
    assert api["meta-llama/Llama-3.3-70B-Instruct"] == ["llama-3.3-70b"]
