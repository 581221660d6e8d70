"""``inferbound models`` lists the short aliases that resolve (issue 21, item 6: ``llama-3.3-70b``, the
README's own example, resolves to ``meta-llama/Llama-3.3-70B-Instruct`` but was not shown)."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.faces.report import with_short_aliases
from inferbound.model.loader import resolve


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_short_aliases_are_grouped_by_id_without_the_long_alias():
    rows = [{"alias": "a-instruct", "id": "org/A-Instruct"}, {"alias": "b", "id": "org/B"}]
    by_alias = {"a-instruct": "org/A-Instruct", "a": "org/A-Instruct", "a-chat": "org/A-Instruct", "b": "org/B"}
    got = with_short_aliases(rows, by_alias)
    # by hand: A-Instruct has three names, its own alias dropped -> ["a", "a-chat"]; B only its own
    assert [r["short_aliases"] for r in got] == [["a", "a-chat"], []]
    assert got[0]["alias"] == "a-instruct" and "short_aliases" not in rows[0]  # the input rows are not changed


def test_models_lists_the_short_aliases_and_each_resolves_to_its_row():
    r = run("models", "--json")
    assert r.exit_code == 0, r.output
    rows = {row["id"]: row for row in json.loads(r.output)}
    # the README's example: the catalog id is the Instruct release, the short name drops "-instruct"
    assert rows["meta-llama/Llama-3.3-70B-Instruct"]["alias"] == "llama-3.3-70b-instruct"
    assert rows["meta-llama/Llama-3.3-70B-Instruct"]["short_aliases"] == ["llama-3.3-70b"]
    assert rows["meta-llama/Llama-2-7b-hf"]["short_aliases"] == ["llama-2-7b"]  # "-hf" dropped
    assert rows["meta-llama/Llama-3.1-8B"]["short_aliases"] == []  # its alias is already the short name
    listed = [(a, hf_id) for hf_id, row in rows.items() for a in row["short_aliases"]]
    assert len(listed) >= 2
    for short, hf_id in listed:  # the loader (another code path) resolves every listed name to that model
        assert resolve(short)[0] == hf_id, short
        assert short != rows[hf_id]["alias"]


def test_models_table_has_the_short_alias_column():
    r = run("models")
    assert r.exit_code == 0, r.output
    assert "short alias" in r.output
    line = next(ln for ln in r.output.splitlines() if "llama-3.3-70b-instruct" in ln)
    assert line.count("llama-3.3-70b") == 2  # the long alias, then the short one beside it
