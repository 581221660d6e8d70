"""GPU prices (hardware/prices.py, data/prices.yaml): every catalog GPU has a cited on-demand $/GPU-hour or
an explicit reason for having none; the loader refuses uncited figures; the user's ``--price GPU=USD`` /
``prices: {gpu: usd}`` replaces the figure on every face, is labelled, and changes cost exactly as energy.py
says; search ranks every priced GPU by $/M tokens.

Cost formula (energy.py), written out here:
    $/s = price_per_hour · GPUs / 3600;   $ per M output tokens = 1e6 · ($/s) / (output tokens / s)

Figures written out (data/prices.yaml, each read from the provider's page as its transcription says):
- h100_sxm: Crusoe $3.90 (2026-09-20); also read Lambda 8x $3.99, RunPod Secure $3.99 (2026-11-09), Nebius
  $4.50 (from 2026-10-01), CoreWeave $49.24/h for 8, AWS p5.48xlarge $55.04/h for 8 (2026-11-09);
- h200_sxm: Crusoe $4.29; RunPod $4.59; Nebius $5.40; CoreWeave $50.44/h for 8;
- b200_hgx: Lambda $6.69; RunPod $6.79; Nebius $8.50; CoreWeave $68.80/h for 8;
- a100_80gb_sxm: RunPod Secure $1.79; Crusoe $2.30; CoreWeave $21.60/h for 8; Lambda $2.79; AWS $27.44705/h for 8;
- gb200_nvl72: CoreWeave $42.00/h for an instance of 4 GPUs.
"""
from __future__ import annotations

import datetime as dt
import json
import warnings
from importlib import resources

import pytest
import yaml
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound.cli import app
import inferbound.cli.search_cmd  # noqa: F401  (registers `search`)
from inferbound.deploy.deployment import make_deployment
from inferbound.workloads.static import estimate
from inferbound.hardware import get_gpu, load_catalog
from inferbound.hardware.prices import check_prices, merge_builtin_prices, parse_price_items, read_price
from inferbound.search import search
from inferbound.workloads.max_throughput import max_throughput

with warnings.catch_warnings():  # starlette's TestClient warns about httpx; not ours to fix
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

DATA = resources.files("inferbound").joinpath("data")
PRICES = yaml.safe_load(DATA.joinpath("prices.yaml").read_text("utf-8"))["prices"]
HW_IDS = [e["id"] for e in yaml.safe_load(DATA.joinpath("hardware.yaml").read_text("utf-8"))["accelerators"]]
CUTOFF = dt.date(2026, 11, 30)  # the rule: prices as last read on or before this date
PRICED = {g for g, p in PRICES.items() if p["usd_per_gpu_hour"] is not None}
H100 = 3.90  # data/prices.yaml h100_sxm
M = "llama-3.1-8b"


# --------------------------------------------------------------------------- the data


def test_every_catalog_gpu_has_a_cited_price_or_a_reason():
    assert sorted(PRICES) == sorted(HW_IDS)  # one entry per hardware.yaml id, none extra
    for gid, p in PRICES.items():
        if p["usd_per_gpu_hour"] is None:
            assert set(p) == {"usd_per_gpu_hour", "reason"}, gid
            assert "(searched:" in p["reason"], (gid, p["reason"])  # where we looked, not a guess
            continue
        assert isinstance(p["usd_per_gpu_hour"], float) and p["usd_per_gpu_hour"] > 0, gid
        assert p["kind"] == "on-demand", gid
        assert p["provider"].strip() and p["instance"].strip(), gid
        assert p["source"].startswith("https://") and p["via"].startswith("https://"), gid
        assert dt.date.fromisoformat(p["as_of"]) <= CUTOFF, gid
    assert len(PRICED) == 13  # 13 of 32 parts have a public on-demand list price under the rule


def test_loaded_gpus_carry_the_cited_price():
    catalog = load_catalog()
    for gid, g in catalog.items():
        p = PRICES[gid]
        assert g.price_per_hour == p["usd_per_gpu_hour"], gid
        assert g.price.by == "catalog" and g.price.usd_per_gpu_hour == p["usd_per_gpu_hour"], gid
        if p["usd_per_gpu_hour"] is None:
            assert g.price.reason == p["reason"]
        else:
            assert (g.price.provider, g.price.source, g.price.as_of) == (p["provider"], p["source"], p["as_of"])


@pytest.mark.parametrize("gid, read, chosen", [
    ("h100_sxm", [3.90, 3.99, 3.99, 4.50, 49.24 / 8, 55.04 / 8], 3.90),
    ("h200_sxm", [4.29, 4.59, 5.40, 50.44 / 8], 4.29),
    ("b200_hgx", [6.69, 6.79, 8.50, 68.80 / 8], 6.69),
    ("a100_80gb_sxm", [1.79, 2.30, 21.60 / 8, 2.79, 27.44705 / 8], 1.79),
    ("gb200_nvl72", [42.00 / 4], 10.50),
])
def test_the_rule_picks_the_lowest_figure_read(gid, read, chosen):
    """The rule of data/prices.yaml: the lowest on-demand list price per GPU-hour among the figures read
    (an instance's price divided by its GPUs)."""
    assert min(read) == pytest.approx(chosen, abs=1e-12)
    assert get_gpu(gid).price_per_hour == pytest.approx(chosen, abs=1e-12)


# --------------------------------------------------------------------------- the loader

ACME = """\
id: acme_x1
name: ACME X1
bf16_dense_tflops: 500
hbm_gb: 96
hbm_tbps: 4.0
scaleup_domain: 1
tdp_w: 800
"""
CITED = {"usd_per_gpu_hour": 2.0, "provider": "ACME Cloud", "instance": "x1.large", "kind": "on-demand",
         "source": "https://acme.example/pricing", "as_of": "2026-10-01"}


def _file(tmp_path, price):
    f = tmp_path / "acme.yaml"
    f.write_text(ACME + yaml.safe_dump({"price": price} if isinstance(price, dict) else price))
    return f


@pytest.mark.parametrize("drop, field", [("source", "price.source"), ("as_of", "price.as_of"),
                                         ("provider", "price.provider"), ("kind", "price.kind")])
def test_a_price_without_its_citation_is_refused_in_one_line(tmp_path, drop, field):
    price = {k: v for k, v in CITED.items() if k != drop}
    with pytest.raises(ValueError) as e:
        get_gpu("acme_x1", extra_paths=[_file(tmp_path, price)])
    msg = str(e.value)
    assert "\n" not in msg and "acme_x1" in msg and field in msg, msg


@pytest.mark.parametrize("change, field", [
    ({"as_of": "2026-13-01"}, "price.as_of"), ({"source": "acme.example/pricing"}, "price.source"),
    ({"kind": "cheap"}, "price.kind"), ({"usd_per_gpu_hour": -1}, "price.usd_per_gpu_hour"),
    ({"usd_per_gpu_hour": "abc"}, "price.usd_per_gpu_hour"), ({"cost": 1}, "price.cost"),
    ({"usd_per_gpu_hour": None}, "price.reason"),
])
def test_a_bad_price_field_is_refused_in_one_line(tmp_path, change, field):
    with pytest.raises(ValueError) as e:
        get_gpu("acme_x1", extra_paths=[_file(tmp_path, {**CITED, **change})])
    msg = str(e.value)
    assert "\n" not in msg and "acme_x1" in msg and field in msg, msg


def test_a_cited_user_price_and_the_legacy_field_load(tmp_path):
    g = get_gpu("acme_x1", extra_paths=[_file(tmp_path, CITED)])
    assert g.price_per_hour == 2.0 and g.price.by == "hardware file" and g.price.as_of == "2026-10-01"
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(ACME.replace("acme_x1", "acme_x2") + "price_usd_per_gpu_hr_approx: 3.0\n")
    g2 = get_gpu("acme_x2", extra_paths=[legacy])
    assert g2.price_per_hour == 3.0 and g2.price.by == "hardware file" and g2.price.source == str(legacy)
    none = tmp_path / "none.yaml"
    none.write_text(yaml.safe_dump({"id": "h100_sxm", "price": {"usd_per_gpu_hour": None, "reason": "we own ours"}}))
    g3 = get_gpu("h100_sxm", extra_paths=[none])  # a file may remove a catalog price, saying why
    assert g3.price_per_hour is None and g3.price.reason == "we own ours"


def test_the_builtin_catalog_must_cite_every_gpu():
    with pytest.raises(ValueError, match="price_usd_per_gpu_hr_approx is not allowed"):
        read_price({"id": "x", "price_usd_per_gpu_hr_approx": 1.0}, None)
    with pytest.raises(ValueError, match="price is missing"):
        read_price({"id": "x"}, None)
    for drop in ("source", "as_of"):  # a built-in figure without its citation is refused too
        with pytest.raises(ValueError, match=f"price.{drop}"):
            read_price({"id": "x", "price": {k: v for k, v in CITED.items() if k != drop}}, None)
    assert read_price({"id": "x", "price": CITED}, None)[1]["by"] == "catalog"
    with pytest.raises(ValueError, match="'b' has no entry"):
        merge_builtin_prices({"a": {}, "b": {}}, {"prices": {"a": {"usd_per_gpu_hour": None, "reason": "r"}}})
    with pytest.raises(ValueError, match="'z' is not a hardware.yaml id"):
        merge_builtin_prices({"a": {}}, {"prices": {"a": {}, "z": {}}})


# --------------------------------------------------------------------------- the override


def test_price_override_changes_cost_exactly_as_the_formula():
    """TP2 on h100_sxm, static batch 8 x (512 in, 64 out): $/s = 2.49·2/3600, output tok/s = 8·64/E2E."""
    base = make_deployment(model=M, gpu="h100_sxm", tp=2)
    mine = make_deployment(model=M, gpu="h100_sxm", tp=2, prices={"h100_sxm": 2.49})
    assert mine.gpu.price_per_hour == 2.49 and mine.gpu.price.by == "--price"
    assert any("--price" in n and "$2.49" in n and "$3.9" in n for n in mine.notes)  # labelled, catalog named
    e = estimate(mine, batch=8, input_len=512, output_len=64)
    dollars_per_s = 2.49 * 2 / 3600
    out_tok_s = 8 * 64 / e.e2e_s
    assert e.energy["usd_per_hour"] == pytest.approx(2.49 * 2, rel=1e-12)
    assert e.energy["usd_per_million_output_tokens"] == pytest.approx(1e6 * dollars_per_s / out_tok_s, rel=1e-12)
    assert (e.energy["price_by"], e.energy["price_from"], e.energy["usd_per_gpu_hour"]) == ("--price", "--price", 2.49)
    e0 = estimate(base, batch=8, input_len=512, output_len=64)  # the price changes cost only, never timing
    assert (e0.energy["price_by"], e0.energy["price_from"]) == ("catalog", "Crusoe on-demand, 2026-09-20")
    assert e0.e2e_s == e.e2e_s
    assert e0.energy["usd_per_million_output_tokens"] == pytest.approx(1e6 * H100 * 2 / 3600 / out_tok_s, rel=1e-12)
    r = max_throughput(mine, input_len=512, output_len=64)
    assert r.usd_per_million_output_tokens == pytest.approx(1e6 * 2.49 * 2 / 3600 / r.output_tok_s, rel=1e-12)


def test_price_override_prices_an_unpriced_gpu():
    g = get_gpu("l4", prices={"l4": 0.5})
    assert get_gpu("l4").price_per_hour is None and g.price_per_hour == 0.5 and g.price.by == "--price"


@pytest.mark.parametrize("prices, words", [
    ({"foo": 2.0}, ["price='foo'", "h100_sxm"]), ({"h100_sxm": -1.0}, ["price=-1.0", "h100_sxm", ">= 0"]),
    ({"h100_sxm": float("inf")}, ["price=inf", ">= 0"]), ({"h100_sxm": float("nan")}, ["price=nan"]),
    ({"h100_sxm": "2"}, ["price='2'"]), ({"h100_sxm": True}, ["price=True"]),
])
def test_bad_prices_are_one_line_errors(prices, words):
    with pytest.raises(ValueError) as e:
        check_prices(prices, load_catalog())
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_price_items_parse():
    assert parse_price_items(["h100_sxm=2.49", "b200_hgx=5.5"]) == {"h100_sxm": 2.49, "b200_hgx": 5.5}
    for bad, word in (("h100_sxm", "GPU=USD"), ("=2", "GPU=USD"), ("h100_sxm=x", "'x'"), ("h100_sxm=-0.1", "'-0.1'"),
                      ("h100_sxm=1e999", "'1e999'"), ("h100_sxm=NaN", "'NaN'")):
        with pytest.raises(ValueError, match=word):
            parse_price_items([bad])
    with pytest.raises(ValueError, match="twice"):
        parse_price_items(["h100_sxm=1", "h100_sxm=2"])


# --------------------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


@pytest.mark.parametrize("args, words", [
    (["estimate", M, "--price", "foo=2"], ["price='foo'", "h100_sxm"]),
    (["estimate", M, "--price", "h100_sxm=abc"], ["price='abc'", "h100_sxm", ">= 0"]),
    (["estimate", M, "--price", "h100_sxm=-1"], ["price='-1'", ">= 0"]),
    (["estimate", M, "--price", "h100_sxm=inf"], ["price='inf'"]),
    (["estimate", M, "--price", "h100_sxm=nan"], ["price='nan'"]),
    (["estimate", M, "--price", "h100_sxm"], ["GPU=USD"]),
    (["estimate", M, "--price", "h100_sxm=1", "--price", "h100_sxm=2"], ["twice"]),
    (["roofline", M, "--price", "foo=2"], ["price='foo'"]),
    (["memory", M, "--price", "h100_sxm=-3"], ["price='-3'"]),
    (["simulate", M, "--requests", "4", "--price", "foo=2"], ["price='foo'"]),
    (["search", M, "--gpus", "h100_sxm", "--max-gpus", "1", "--price", "foo=2"], ["price='foo'"]),
    (["search", M, "--gpus", "h100_sxm", "--max-gpus", "1", "--price", "h100_sxm=x"], ["price='x'"]),
    (["gpus", "--price", "foo=2"], ["price='foo'"]),
])
def test_cli_bad_price_exits_2_with_one_line(runner, args, words):
    assert_one_line_error(runner.invoke(app, args), *words)


def test_cli_labels_the_users_price(runner):
    r = runner.invoke(app, ["estimate", M, "--price", "h100_sxm=2.49", "--batch", "2", "--input", "128",
                            "--output", "16"])
    assert r.exit_code == 0, r.output
    cost = next(ln for ln in r.stdout.splitlines() if "$ per M output tokens" in ln)
    assert "(--price)" in cost, cost
    r = runner.invoke(app, ["estimate", M, "--batch", "2", "--input", "128", "--output", "16"])
    cost = next(ln for ln in r.stdout.splitlines() if "$ per M output tokens" in ln)
    assert "(Crusoe on-demand, 2026-09-20)" in cost, cost
    r = runner.invoke(app, ["estimate", M, "--price", "h100_sxm=2.49", "--json", "--batch", "2", "--input", "128",
                            "--output", "16"])
    e = json.loads(r.stdout)["energy"]
    assert e["usd_per_hour"] == pytest.approx(2.49) and e["price_by"] == "--price"


def test_cli_gpus_shows_price_provider_date_or_reason(runner):
    r = runner.invoke(app, ["gpus", "--json", "--price", "h100_sxm=2.49"])
    assert r.exit_code == 0, r.output
    rows = {row["id"]: row for row in json.loads(r.stdout)["gpus"]}
    assert rows["h100_sxm"]["price_usd_h"] == 2.49 and rows["h100_sxm"]["price_by"] == "--price"
    assert (rows["h200_sxm"]["price_usd_h"], rows["h200_sxm"]["price_provider"], rows["h200_sxm"]["price_as_of"]) \
        == (PRICES["h200_sxm"]["usd_per_gpu_hour"], PRICES["h200_sxm"]["provider"], PRICES["h200_sxm"]["as_of"])
    assert rows["l4"]["price_usd_h"] is None and rows["l4"]["price_note"] == PRICES["l4"]["reason"]
    table = runner.invoke(app, ["gpus", "--price", "h100_sxm=2.49"]).stdout
    assert "(--price)" in table and "Crusoe" in table and "2026-09-20" in table and "no public on-demand" in table


# --------------------------------------------------------------------------- the JSON API


@pytest.fixture(scope="module")
def client():
    from inferbound.web import create_app
    return TestClient(create_app())


BODY = {"model": M, "gpu": "h100_sxm", "batch": 2, "input_len": 128, "output_len": 16}


def test_api_takes_prices(client):
    r = client.post("/api/estimate", json={**BODY, "tp": 2, "prices": {"h100_sxm": 2.49}})
    assert r.status_code == 200, r.text
    e = r.json()["energy"]
    assert e["usd_per_hour"] == pytest.approx(2.49 * 2) and e["price_by"] == "--price"
    out_tok_s = 2 * 16 / (r.json()["e2e_ms"] / 1e3)
    assert e["usd_per_million_output_tokens"] == pytest.approx(1e6 * 2.49 * 2 / 3600 / out_tok_s, rel=1e-9)
    for path, body in (("/api/roofline", BODY), ("/api/memory", BODY),
                       ("/api/simulate", {**{k: v for k, v in BODY.items() if k != "batch"}, "requests": 4})):
        assert client.post(path, json={**body, "prices": {"h100_sxm": 2.49}}).status_code == 200, path
    s = client.post("/api/search", json={"model": M, "gpus": ["h100_sxm", "l4"], "max_gpus": 1, "dtypes": ["bf16"],
                                         "objective": "usd_per_mtok", "prices": {"l4": 0.5}})
    assert s.status_code == 200, s.text
    assert {row["gpu"] for row in s.json()["table"]} == {"h100_sxm", "l4"}  # l4 priced by the request


@pytest.mark.parametrize("prices, loc", [
    ({"foo": 2.0}, ["body", "prices"]), ({"h100_sxm": -1}, ["body", "prices", "h100_sxm"]),
    ({"h100_sxm": "2"}, ["body", "prices", "h100_sxm"]), ({"h100_sxm": True}, ["body", "prices", "h100_sxm"]),
    ([2.0], ["body", "prices"]),
])
@pytest.mark.parametrize("path", ["/api/estimate", "/api/search"])
def test_api_rejects_bad_prices_with_422(client, path, prices, loc):
    body = {**BODY, "prices": prices} if path == "/api/estimate" else \
        {"model": M, "gpus": ["h100_sxm"], "max_gpus": 1, "prices": prices}
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(d["loc"] == loc for d in detail), detail


# --------------------------------------------------------------------------- search


def test_search_by_dollars_ranks_every_priced_gpu():
    """One GPU per layout, bf16: every priced GPU holds Llama-3.1-8B, so every one is ranked, by
    $/M tokens = 1e6 · price · GPUs / 3600 / tok/s, cheapest first; the unpriced ones are named as left out."""
    res = search(M, max_gpus=1, objective="usd_per_mtok", dtypes=["bf16"], top=100, input_len=512, output_len=128)
    assert {r.gpu for r in res.table} == PRICED
    costs = [r.metrics["usd_per_mtok"] for r in res.table]
    assert costs == sorted(costs)
    for r in res.table:
        price = PRICES[r.gpu]["usd_per_gpu_hour"]
        assert r.metrics["usd_per_mtok"] == pytest.approx(1e6 * price * r.unit_gpus / 3600 / r.metrics["tok_s"],
                                                          rel=1e-12)
    assert any("without a price are left out" in n for n in res.notes)
    mine = search(M, gpus=["h100_sxm", "l4"], max_gpus=1, objective="usd_per_mtok", dtypes=["bf16"], top=10,
                  input_len=512, output_len=128, prices={"l4": 0.5, "h100_sxm": 2.49})
    by_gpu = {r.gpu: r for r in mine.table}
    assert set(by_gpu) == {"h100_sxm", "l4"}
    assert by_gpu["l4"].metrics["usd_per_mtok"] == pytest.approx(1e6 * 0.5 / 3600 / by_gpu["l4"].metrics["tok_s"],
                                                                 rel=1e-12)
    assert sum("--price" in n for n in mine.notes) == 2  # each user price named in the result
