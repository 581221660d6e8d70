"""Typed option groups (faces/groups.py) and the Python API over them (``inferbound.search(model, query)``,
``inferbound.simulate(dep, load)``, faces/api.py): issue 18, item 4.

- every group's JSON schema holds every option of its declared group(s) (options.py) with the declaration's
  help, default, bounds and allowed values, and nothing else; the class docstring lists them;
- a bad value is one line naming the field (the declaration's own message where it has one); the groups are
  frozen and refuse unknown fields;
- the typed calls equal the long-form library functions called with the same options, and the CLI's
  ``search`` / ``simulate`` JSON equals what the long-form path gives (the CLI goes through the groups now).
"""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

import inferbound as ib
import inferbound.search
import inferbound.sim
from inferbound import make_deployment
from inferbound.cli import app
from inferbound.cli.common import to_jsonable
from inferbound.faces import options as opts
from inferbound.faces import groups
from inferbound.faces.groups import (SKIPPED, SPECS, DeploymentOptions, EngineSettings, Lengths, OptionError,
                                     SearchQuery, ServingLoad, field_of)
from inferbound.model import load_model
from inferbound.web import schemas

runner = CliRunner()


def _members(name: str):
    """The declarations a group is built from, less the ones it states it leaves out."""
    _, sources, _ = SPECS[name]
    skipped = SKIPPED.get(name, {})
    return [o for g in sources for o in g if o.name not in skipped]


def _facts(prop: dict) -> dict:
    """A JSON-schema property with an Optional's branches merged (``anyOf: [{...}, {type: null}]``)."""
    out = dict(prop)
    for branch in prop.get("anyOf", ()):
        out.update({k: v for k, v in branch.items() if k != "type"})
    return out


@pytest.mark.parametrize("name", sorted(SPECS))
def test_schema_holds_every_option_of_the_group_as_declared(name):
    model = getattr(groups, name)
    props = model.model_json_schema()["properties"]
    members = _members(name)
    assert list(props) == [o.name for o in members]  # every option, in declaration order, nothing else
    for o in members:
        p = _facts(props[o.name])
        assert p["description"] == o.help, o.name
        if o.default is not opts.REQUIRED:
            assert p.get("default") == o.default, o.name
        for key, bound in (("minimum", o.ge), ("exclusiveMinimum", o.gt), ("maximum", o.le),
                           ("exclusiveMaximum", o.lt)):
            assert p.get(key) == bound, (o.name, key)  # the library's bounds: le, never the API's work cap
        if o.choices is not None:
            allowed = p.get("enum") or p.get("items", {}).get("enum")
            assert tuple(allowed) == tuple(o.choices), o.name
        assert f"    {o.name}: {o.help}" in model.__doc__  # the generated attribute docstrings


def test_the_groups_are_the_declared_groups():
    """The five groups name the declared tuples they are built from: ServingLoad is options.SERVING but the
    reply's timeline; SearchQuery is SEARCH (but what the faces print) + LENGTHS + ENGINE + the searched
    GPUs' overrides and files."""
    assert [o.name for o in _members("DeploymentOptions")] == [o.name for o in opts.DEPLOYMENT]
    assert [o.name for o in _members("EngineSettings")] == [o.name for o in opts.ENGINE]
    assert [o.name for o in _members("Lengths")] == [o.name for o in opts.LENGTHS]
    assert set(ServingLoad.model_fields) == {o.name for o in opts.SERVING} - {"timeline"}
    searched = {o.name for o in opts.SEARCH} - {"model", "no_cap", "emit", "emit_rank", "frontier_x", "frontier_y",
                                                 "max_points"}
    assert set(SearchQuery.model_fields) == searched | {o.name for o in opts.LENGTHS + opts.ENGINE} | \
        {"gpu_overrides", "gpu_file"}
    # a command's own bound is the group's: search's output_len >= 2 (a TPOT needs a second token), simulate's 1
    assert SearchQuery.model_json_schema()["properties"]["output_len"]["minimum"] == 2
    assert ServingLoad.model_json_schema()["properties"]["output_len"]["minimum"] == 1


def test_web_fields_come_from_the_same_builder():
    """The JSON API's request fields are field_of(o, schemas.API_FACE): the same description and default as
    the group's field, the work cap api_le as the API's maximum."""
    web = schemas.SearchIn.model_json_schema()["properties"]
    ours = SearchQuery.model_json_schema()["properties"]
    for o in _members("SearchQuery"):
        if not o.api:
            assert o.name not in web, o.name
            continue
        if o.name in schemas._SKIP:  # the API's own form (schemas.ModelIn: 'default' or 'none', never a file)
            continue
        w, g = _facts(web[o.name]), _facts(ours[o.name])
        assert w["description"] == g["description"] and w.get("default") == g.get("default"), o.name
        if o.api_le is not None:
            assert w["maximum"] == o.api_le and g.get("maximum") == o.le, o.name
    max_gpus = opts.by_name(opts.SEARCH)["max_gpus"]
    assert field_of(max_gpus, schemas.API_FACE)[1].metadata != field_of(max_gpus)[1].metadata  # the cap: web only


@pytest.mark.parametrize("group, values, words", [
    (SearchQuery, {"max_gpus": 0}, ["max_gpus=0", ">= 1"]),
    (SearchQuery, {"objective": "fast"}, ["objective='fast'", "tok_s_per_gpu"]),
    (SearchQuery, {"dtypes": ["fp9"]}, ["dtypes", "fp9", "bf16"]),
    (SearchQuery, {"output_len": 1}, ["output_len=1", ">= 2"]),
    (SearchQuery, {"gpuss": ["h100_sxm"]}, ["gpuss", "not an option of SearchQuery", "gpus"]),
    (SearchQuery, {"gpus": "h100_sxm"}, ["gpus='h100_sxm'", "tuple"]),  # a bare string is not split silently
    (ServingLoad, {"rate": 0}, ["rate=0", "greater than 0"]),
    (ServingLoad, {"rate": float("nan")}, ["rate=nan"]),
    (ServingLoad, {"requests": 2.5}, ["requests=2.5", "integer"]),
    (ServingLoad, {"think_time": -1}, ["think_time=-1", ">= 0"]),
    (DeploymentOptions, {"collective_algo": "fast"}, ["collective_algo='fast'", "ring"]),
    (DeploymentOptions, {"tp": "2"}, ["tp='2'", "number"]),  # strict: no "2" for 2
    (DeploymentOptions, {"comm_overlap": 1.5}, ["comm_overlap=1.5", "<= 1"]),
    (DeploymentOptions, {"attention_dp": "yes"}, ["attention_dp='yes'", "boolean"]),
    (EngineSettings, {"acceptance": 1.0}, ["acceptance=1.0", "< 1"]),
    (EngineSettings, {"kv_reservation": "some"}, ["kv_reservation='some'", "max"]),
    (Lengths, {"dataset": 3}, ["dataset=3", "string"]),
])
def test_a_bad_value_is_one_line_naming_the_field(group, values, words):
    with pytest.raises(OptionError) as e:
        group(**values)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)
    with pytest.raises(OptionError):  # the same through of(): a dict, or keyword changes
        group.of(values)


def test_lengths_group_is_the_mix_of_its_options():
    from inferbound.workloads.lengths import describe, from_dataset, from_spec
    assert Lengths().mix(1024, 256) is None  # fixed lengths: no mix
    sharegpt, spread = Lengths(dataset="sharegpt").mix(1024, 256), Lengths(input_dist="uniform:100:300").mix(200, 50)
    assert describe(sharegpt) == describe(from_dataset("sharegpt"))
    assert describe(spread) == describe(from_spec(200, 50, "uniform:100:300", None))
    with pytest.raises(ValueError, match="dataset and input_dist"):
        Lengths(dataset="sharegpt", input_dist="uniform:100:300").mix(1024, 256)


def test_groups_are_frozen_values():
    q = SearchQuery(gpus=["h100_sxm"], max_gpus=2)
    assert q.gpus == ("h100_sxm",)  # lists held as tuples
    with pytest.raises(ValidationError, match="frozen"):
        q.max_gpus = 4
    assert SearchQuery.of(q) is q and SearchQuery.of(q, max_gpus=4).max_gpus == 4 and q.max_gpus == 2
    assert SearchQuery.of({"max_gpus": 2, "gpus": ["h100_sxm"]}) == q
    with pytest.raises(OptionError, match="SearchQuery"):
        SearchQuery.of(["max_gpus", 2])


def test_api_errors_name_the_field_before_any_work():
    with pytest.raises(OptionError, match="max_gpus=0"):
        ib.search("llama-3.1-8b", max_gpus=0)
    with pytest.raises(OptionError, match="rate=-1"):
        ib.simulate(None, rate=-1)
    with pytest.raises(OptionError, match="not an option of ServingLoad"):
        ib.simulate(None, {"rates": 2})
    with pytest.raises(ValueError, match="engine"):
        ib.search("llama-3.1-8b", engine="nope", gpus=["h100_sxm"], max_gpus=1)


# ---------- the typed calls equal the long-form ones ----------

def _search_dict(res) -> dict:
    d = res.to_dict()
    d.pop("elapsed_s")
    return d


def test_search_model_query_equals_the_long_form():
    q = SearchQuery(gpus=["h100_sxm", "a100_80gb_sxm"], max_gpus=2, objective="tok_s_per_user", slo_tpot_ms=50,
                    input_len=512, output_len=128, engine="sglang", max_num_seqs=64, top=5)
    long_form = inferbound.search.search("llama-3.1-8b", gpus=["h100_sxm", "a100_80gb_sxm"], max_gpus=2,
                                         objective="tok_s_per_user", slo_tpot_ms=50, input_len=512, output_len=128,
                                         engine="sglang", engine_options={"max_num_seqs": 64}, top=5, workers=1)
    typed = ib.search("llama-3.1-8b", q, workers=1)
    assert _search_dict(typed) == _search_dict(long_form)
    as_dict = ib.search("llama-3.1-8b", q.values(), workers=1)
    as_kwargs = ib.search("llama-3.1-8b", workers=1, **q.values())
    assert _search_dict(as_dict) == _search_dict(as_kwargs) == _search_dict(long_form)
    assert typed.warnings == [] and "warnings" not in typed.to_dict()


def test_search_lengths_from_the_query_equal_a_mix():
    from inferbound.workloads.lengths import from_dataset
    typed = ib.search("llama-3.1-8b", gpus=["h100_sxm"], max_gpus=1, dataset="sharegpt", workers=1)
    long_form = inferbound.search.search("llama-3.1-8b", gpus=["h100_sxm"], max_gpus=1,
                                         lengths=from_dataset("sharegpt"), workers=1)
    assert _search_dict(typed) == _search_dict(long_form)


def test_simulate_dep_load_equals_the_long_form():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="sglang",
                          engine_options={"max_num_seqs": 32})
    load = ServingLoad(rate=4.0, requests=30, input_len=256, output_len=64, seed=3, slo_ttft_ms=200)
    long_form = inferbound.sim.simulate(dep, rate=4.0, requests=30, input_len=256, output_len=64, seed=3,
                                        slo_ttft_ms=200)
    assert ib.simulate(dep, load).to_dict() == long_form.to_dict()
    # the deployment as typed options: the same deployment, so the same run
    typed = ib.simulate(DeploymentOptions(model="llama-3.1-8b"), load,
                        engine=EngineSettings(engine="sglang", max_num_seqs=32))
    assert typed.deployment == dep and typed.to_dict() == long_form.to_dict()
    as_dicts = ib.simulate({"model": "llama-3.1-8b", "engine": "sglang", "max_num_seqs": 32}, load.values())
    assert as_dicts.to_dict() == long_form.to_dict()
    with pytest.raises(OptionError, match="carries its engine"):
        ib.simulate(dep, load, engine={"engine": "vllm"})


def test_closed_loop_through_the_load():
    dep = make_deployment()
    long_form = inferbound.sim.simulate(dep, concurrency=4, think_time=0.5, requests=20, input_len=128,
                                        output_len=32)
    typed = ib.simulate(dep, concurrency=4, think_time=0.5, requests=20, input_len=128, output_len=32)
    assert typed.to_dict() == long_form.to_dict()


def test_long_context_refused_or_a_warning():
    """input_len + output_len = 131,000 + 200 = 131,200 > 131,072 (Llama-3.1-8B's max_position_embeddings)."""
    with pytest.raises(ValueError, match=r"input_len=131000 .*allow_long_context=True"):
        ib.search("llama-3.1-8b", gpus=["h100_sxm"], max_gpus=1, input_len=131000, output_len=200)
    res = ib.search("llama-3.1-8b", gpus=["h100_sxm"], max_gpus=1, input_len=131000, output_len=200,
                    allow_long_context=True, workers=1)
    assert len(res.warnings) == 1 and "131,200 tokens exceeds max_position_embeddings=131,072" in res.warnings[0]
    assert res.to_dict()["warnings"] == res.warnings
    with pytest.raises(ValueError, match="max_position_embeddings"):
        ib.simulate(None, requests=1, input_len=131000, output_len=200)
    run = ib.simulate(None, requests=1, input_len=131000, output_len=200, allow_long_context=True)
    assert any("131,200 tokens" in w for w in run.deployment.warnings)


def test_search_is_the_package_and_the_typed_call():
    import inferbound.search.result  # importing a submodule leaves the package callable
    assert ib.search is inferbound.search and callable(ib.search)
    assert ib.search.search.__module__ == "inferbound.search"  # the long form, still there
    assert ib.simulate.__module__ == "inferbound.faces.api"


# ---------- the CLI goes through the groups; its output is the long-form path's ----------

def _cli_json(args: list[str]) -> dict:
    r = runner.invoke(app, args, terminal_width=200)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_cli_simulate_json_equals_the_long_form_path():
    out = _cli_json(["simulate", "--requests", "30", "--rate", "4", "--input", "256", "--output", "64",
                     "--engine", "sglang", "--max-num-seqs", "32", "--json"])
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="sglang", engine_options={"max_num_seqs": 32})
    res = inferbound.sim.simulate(dep, rate=4.0, requests=30, input_len=256, output_len=64)
    expected = {**res.to_dict(), "warnings": list(dict.fromkeys(dep.warnings))}
    assert out == json.loads(json.dumps(to_jsonable(expected)))


def test_cli_search_json_equals_the_long_form_path():
    out = _cli_json(["search", "llama-3.1-8b", "--gpus", "h100_sxm", "--max-gpus", "2", "--workers", "1",
                     "--objective", "tokens_per_joule", "--json"])
    res = inferbound.search.search(load_model("llama-3.1-8b"), gpus=["h100_sxm"], max_gpus=2,
                                   objective="tokens_per_joule", workers=1,
                                   top=opts.by_name(opts.SEARCH)["top"].default)
    expected = json.loads(json.dumps(to_jsonable({**res.to_dict([res.default_frontier]), "files": []})))
    for d in (out, expected):
        d.pop("elapsed_s")
    assert out == expected
