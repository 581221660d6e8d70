"""JSON API (inferbound.web) through FastAPI's test client.

Numbers are compared with direct calls of the Python API on the same inputs (the API must be a thin,
faithful layer); bad input must give 422 naming the field, never a 500; the server must never read a
file a client names; work caps give 422.
"""
from __future__ import annotations

import json
import warnings

import pytest

with warnings.catch_warnings():  # starlette's TestClient warns about httpx; not ours to fix
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

import inferbound as ib
from inferbound.step import contract as step
from inferbound.workloads.static import decode_contexts
from inferbound.deploy.memory import max_batch, max_context, memory_report
from inferbound.model import catalog_files
from inferbound.validation import predict_rows, read_csv
from inferbound.web import create_app
from inferbound.web import schemas
from inferbound.pricing.collectives import comm_pricer_of

CATALOG_8B = json.loads(catalog_files()["meta-llama/Llama-3.1-8B"].read_text())


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def post(client, path, body, status=200):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    return r.json()


def loc_of(r) -> list:
    return [d["loc"] for d in r.json()["detail"]]


# ---------- catalogs ----------

def test_models_endpoint_lists_the_catalog(client):
    rows = client.get("/api/models").json()
    assert {r["id"] for r in rows} == set(catalog_files())
    by_alias = {r["alias"]: r for r in rows}
    m = ib.load_model("llama-3.1-70b")
    assert by_alias["llama-3.1-70b"]["total_params"] == ib.count_params(m).total
    assert by_alias["llama-3.1-70b"]["kv_bytes_per_token_bf16"] == pytest.approx(ib.kv_bytes_per_token(m, "bf16"))


def test_gpus_endpoint_lists_the_catalog_in_gb(client):
    rows = client.get("/api/gpus").json()["gpus"]
    assert {r["id"] for r in rows} == set(ib.load_catalog())
    h100 = next(r for r in rows if r["id"] == "h100_sxm")
    assert h100["hbm_gb"] == pytest.approx(80)                                   # the datasheet's GB
    assert h100["hbm_device_gib"] == pytest.approx(ib.get_gpu("h100_sxm").hbm_bytes / 2**30, abs=1e-3)


def test_meta_reports_caps_and_features(client):
    meta = client.get("/api/meta").json()
    assert meta["limits"]["batch"] == schemas.MAX_BATCH
    assert meta["dtypes"][:2] == ["fp32", "bf16"]
    assert set(meta["features"]) == {"simulate", "search"}


def test_search_literals_match_the_library():
    search = pytest.importorskip("inferbound.search", reason="inferbound.search not installed")
    assert set(schemas.Objective.__args__) == set(search.OBJECTIVES)
    assert set(schemas.Metric.__args__) == set(search.SENSE)


# ---------- estimate, roofline, memory against the Python API ----------

DEPLOYMENTS = [
    {"model": "llama-3.1-8b", "gpu": "h100_sxm"},
    {"model": "meta-llama/Llama-3.1-70B", "gpu": "h100_sxm", "num_gpus": 4, "weight_dtype": "fp8", "act_dtype": "fp8"},
    {"model": "mixtral-8x7b-v0.1", "gpu": "a100_80gb_sxm", "tp": 4, "ep": 2, "kv_dtype": "fp8", "emulate": True},
    {"model": "llama-3.1-70b", "gpu": "h100_sxm", "tp": 2, "pp": 2, "dp": 2},
]


@pytest.mark.parametrize("dep", DEPLOYMENTS)
def test_static_estimate_equals_python_api(client, dep):
    got = post(client, "/api/estimate", {**dep, "batch": 16, "input_len": 2048, "output_len": 128})
    want = ib.estimate(batch=16, input_len=2048, output_len=128, **dep).to_dict()
    assert got["scenario"] == "static"
    for key in ("ttft_ms", "tpot_ms", "e2e_ms", "output_tok_s", "output_tok_s_per_gpu", "tok_s_per_user",
                "max_batch_at_context", "decode_gemm_compute_bound_batch", "num_gpus", "model", "compute_dtype"):
        assert got[key] == pytest.approx(want[key]), key
    assert got["memory"] == pytest.approx(want["memory"])
    assert got["energy"] == pytest.approx(want["energy"])
    for phase in ("prefill", "decode"):
        assert got[phase]["split_s"] == pytest.approx(want[phase]["split_s"])
        assert got[phase]["bound"] == want[phase]["bound"]


def test_max_throughput_equals_python_api(client):
    body = {"model": "llama-3.1-8b", "gpu": "h200_sxm", "input_len": 512, "output_len": 512, "num_requests": 3000}
    got = post(client, "/api/estimate", {**body, "scenario": "max-throughput"})
    want = ib.max_throughput(model="llama-3.1-8b", gpu="h200_sxm", input_len=512, output_len=512,
                             num_requests=3000).to_dict()
    for key, v in want.items():
        assert got[key] == (pytest.approx(v) if isinstance(v, float) else v), key


def test_roofline_matches_step_costs_and_obeys_the_roof(client):
    dep = {"model": "llama-3.1-70b", "gpu": "h100_sxm", "num_gpus": 4}
    got = post(client, "/api/roofline", {**dep, "batch": 32, "input_len": 1000, "output_len": 300})
    d = ib.make_deployment(**dep)
    # H100 has measured kernel curves: the roof is the datasheet's (989 TFLOP/s bf16, 3.35 TB/s)
    assert comm_pricer_of(d).kernels.curves is not None
    assert got["peak_flop_s"] == pytest.approx(989e12, rel=1e-12) and got["hbm_bytes_s"] == pytest.approx(3.35e12)
    assert got["ridge_flop_per_byte"] == pytest.approx(989e12 / 3.35e12, rel=1e-12)
    ctxs = decode_contexts(1000, 300)
    ctx = float(ctxs[len(ctxs) // 2])
    assert got["decode_context"] == ctx
    costs = {"prefill": step.prefill(d, 32, 1000),
             "decode": step.decode(d, 32, ctx)}
    for phase, cost in costs.items():
        rows = got["phases"][phase]
        assert [r["name"] for r in rows] == [p.op.name for p in cost.ops]
        assert sum(r["time_s"] for r in rows) == pytest.approx(sum(float(p.total) for p in cost.ops))
        assert any(r["kind"] == "collective" for r in rows)  # TP4 all-reduces are listed beside operators
        for r in rows:
            if r["kind"] != "collective" and r["flops"] > 0:  # a roofline: no operator above either roof
                assert r["achieved_flop_s"] <= got["peak_flop_s"] * (1 + 1e-9)
                assert r["achieved_flop_s"] <= r["intensity"] * got["hbm_bytes_s"] * (1 + 1e-9)


def test_memory_equals_python_api(client):
    got = post(client, "/api/memory", {"model": "qwen3-32b", "gpu": "l40s", "num_gpus": 2, "batch": 4,
                                       "input_len": 4000, "output_len": 1000})
    d = ib.make_deployment(model="qwen3-32b", gpu="l40s", num_gpus=2)
    rep = memory_report(d, 4, 5000, step_tokens=4 * 4000)
    assert got["weights"] == pytest.approx(float(rep.weights))
    assert got["kv_cache"] == pytest.approx(float(rep.kv_cache))
    assert got["fits"] == bool(rep.fits)
    assert got["max_batch_at_context"] == int(max_batch(d, 5000))
    assert got["max_context_at_batch"] == max_context(d, 4)


def test_pasted_config_gives_the_catalog_models_numbers(client):
    by_name = post(client, "/api/estimate", {"model": "llama-3.1-8b", "gpu": "b200_hgx"})
    pasted = post(client, "/api/estimate", {"config": CATALOG_8B, "gpu": "b200_hgx"})
    assert pasted["tpot_ms"] == pytest.approx(by_name["tpot_ms"])
    assert pasted["memory"]["weights"] == by_name["memory"]["weights"]
    smaller = post(client, "/api/estimate", {"config": {**CATALOG_8B, "num_hidden_layers": 16}, "gpu": "b200_hgx"})
    assert smaller["memory"]["weights"] < by_name["memory"]["weights"]


def test_model_overrides_apply(client):
    got = post(client, "/api/memory", {"model": "llama-3.1-8b", "model_overrides": {"num_hidden_layers": 8}})
    d = ib.make_deployment(model="llama-3.1-8b", model_overrides={"num_hidden_layers": 8})
    assert got["weights"] == pytest.approx(float(memory_report(d, 8, 1280).weights))


def test_error_bands_come_from_the_servers_calibration(client, tmp_path, monkeypatch):
    cal = tmp_path / "cal.yaml"
    cal.write_text("schema_version: 1\nglobal: {}\ngpus: {}\nbands: {'*/latency': 0.21, '*/throughput': 0.13}\n")
    monkeypatch.setenv("INFERBOUND_CALIBRATION", str(cal))
    got = post(client, "/api/estimate", {"model": "llama-3.1-8b"})
    assert got["error_bands"] == {"ttft": 0.21, "tpot": 0.13, "throughput": 0.13}
    none = post(client, "/api/estimate", {"model": "llama-3.1-8b", "calibration": "none"})
    assert none["error_bands"] == {}


# ---------- simulate, search, validate ----------

def test_simulate_equals_python_api(client):
    pytest.importorskip("inferbound.sim", reason="inferbound.sim (serving simulator) not installed yet")
    from inferbound.sim import simulate
    body = {"model": "llama-3.1-8b", "gpu": "h100_sxm", "rate": 4, "requests": 60, "input_len": 300,
            "output_len": 40, "seed": 7, "output_dist": "uniform:10:60"}
    got = post(client, "/api/simulate", body)
    want = simulate(**{**body, "output_dist": "uniform:10:60"}).to_dict()
    for key in ("completed", "steps", "duration_s", "ttft_ms_p50", "tpot_ms_p99", "output_tok_s",
                "joules_per_output_token", "preemptions"):
        assert got[key] == pytest.approx(want[key]), key


def test_search_equals_python_api(client):
    search = pytest.importorskip("inferbound.search", reason="inferbound.search not installed").search
    got = post(client, "/api/search", {"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "max_gpus": 2, "top": 3,
                                       "max_points": 5})
    want = search("llama-3.1-8b", gpus=["h100_sxm"], max_gpus=2, top=3)
    assert [r["layout"] for r in got["table"]] == [r.layout for r in want.table]
    assert got["table"][0]["objective_value"] == pytest.approx(want.table[0].objective_value)
    frontier = want.frontier()
    assert got["frontiers"][0]["total"] == len(frontier)
    assert len(got["frontiers"][0]["points"]) == min(5, len(frontier))
    assert got["frontiers"][0]["points"][0] == pytest.approx(frontier[0])


VALIDATION_CSV = """case,source,model,gpu,num_gpus,tp,pp,scenario,batch_size,input_len,output_len,metric,value
a,s1,meta-llama/Llama-3.1-8B,h100_sxm,1,1,1,static_batch,8,1024,128,output_tok_s,900
b,s1,meta-llama/Llama-3.1-8B,h100_sxm,1,1,1,static_batch,8,1024,128,ttft_ms,150
c,s2,meta-llama/Llama-3.1-70B,h100_sxm,4,4,1,max_throughput,,512,512,output_tok_s,5000
d,s2,./private/config.json,h100_sxm,1,1,1,static_batch,1,128,128,output_tok_s,50
e,s2,meta-llama/Llama-3.1-8B,h100_sxm,1,1,1,static_batch,,128,128,output_tok_s,50
"""


def test_validate_csv_text_equals_python_api(client, tmp_path):
    got = post(client, "/api/validate", {"csv": VALIDATION_CSV})
    path = tmp_path / "m.csv"
    path.write_text(VALIDATION_CSV)
    rows, bad = read_csv(path)
    want = predict_rows([r for r in rows if r.case != "d"])
    by_case = {r["case"]: r for r in got["rows"]}
    for p in want:
        assert by_case[p.row.case]["predicted"] == pytest.approx(p.predicted)
        assert by_case[p.row.case]["error"] == pytest.approx(p.error)
    assert by_case["d"]["predicted"] is None and "not a catalog name" in by_case["d"]["reason"]
    assert [u["case"] for u in got["unreadable"]] == [u.case for u in bad] == ["e"]
    assert got["overall"]["n"] == 3


# ---------- bad input: 422 naming the field ----------

BAD = [
    ("/api/estimate", {"model": "llama-3.1-8b", "gpu": "h999"}, ["body", "gpu"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "weight_dtype": "fp3"}, ["body", "weight_dtype"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "act_dtype": "int4"}, ["body", "act_dtype"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "tp": 3}, ["body", "tp"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "num_gpus": 4, "tp": 2}, ["body", "num_gpus"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "ep": 2}, ["body", "ep"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "config": CATALOG_8B}, ["body"]),
    ("/api/estimate", {"gpu": "h100_sxm"}, ["body"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "batch": 0}, ["body", "batch"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "batch": schemas.MAX_BATCH + 1}, ["body", "batch"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "input_len": schemas.MAX_TOKENS + 1}, ["body", "input_len"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "num_gpus": schemas.MAX_GPUS + 1}, ["body", "num_gpus"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "scenario": "max-throughput", "output_len": 1}, ["body", "output_len"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "surprise": 1}, ["body", "surprise"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "gpu_overrides": {"hbm_bw": -1}}, ["body"]),
    ("/api/estimate", {"model": "llama-3.1-8b", "calibration": "/etc/cal.yaml"}, ["body", "calibration"]),
    ("/api/estimate", {"config": {"model_type": "llama"}}, ["body", "config"]),
    ("/api/estimate", {"config": {**CATALOG_8B, "hidden_size": [1]}}, ["body", "config"]),
    ("/api/estimate", {"config": {**CATALOG_8B, "num_hidden_layers": 10**9}}, ["body", "config"]),
    ("/api/estimate", {"config": {**{k: v for k, v in CATALOG_8B.items() if k != "hidden_size"}, "text_config": 5}},
     ["body", "config"]),
    ("/api/estimate", {"config": {**CATALOG_8B, "vocab_size": 1e300}}, ["body", "config"]),
    ("/api/memory", {"model": "llama-3.1-405b", "gpu": "l4"}, None),  # fits nowhere: still 200 (fits=false)
    ("/api/simulate", {"model": "llama-3.1-8b", "requests": schemas.MAX_SIM_REQUESTS + 1}, ["body", "requests"]),
    ("/api/simulate", {"model": "llama-3.1-8b", "requests": 20000, "output_len": 100}, ["body", "requests"]),
    ("/api/simulate", {"model": "llama-3.1-8b", "output_dist": "exponential:1e9"}, ["body", "output_dist"]),
    ("/api/simulate", {"model": "llama-3.1-8b", "rate": 0}, ["body", "rate"]),
    ("/api/simulate", {"model": "llama-3.1-8b", "rate": "fast"}, ["body", "rate"]),
    ("/api/search", {"model": "llama-3.1-8b", "max_gpus": 64}, ["body", "max_gpus"]),
    ("/api/search", {"model": "llama-3.1-8b", "gpus": ["nope"]}, ["body", "gpus"]),
    ("/api/search", {"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "objective": "speed"}, ["body", "objective"]),
    ("/api/validate", {"csv": "a,b\n1,2\n"}, ["body", "csv"]),
    ("/api/validate", {"csv": VALIDATION_CSV.splitlines()[0] + "\n" + "x\n" * 5001}, ["body", "csv"]),
]


@pytest.mark.parametrize("path,body,loc", BAD, ids=[f"{p}:{json.dumps(b)[:60]}" for p, b, _ in BAD])
def test_bad_input_is_422_naming_the_field(client, path, body, loc):
    if path in ("/api/simulate", "/api/search"):
        pytest.importorskip("inferbound." + path.rsplit("/", 1)[1].replace("simulate", "sim"))
    r = client.post(path, json=body)
    if loc is None:
        assert r.status_code == 200 and r.json()["fits"] is False
        return
    assert r.status_code == 422, r.text
    assert loc in loc_of(r) or any(l[: len(loc)] == loc for l in loc_of(r)), r.text
    assert all(d["msg"] for d in r.json()["detail"])


@pytest.mark.parametrize("name", ["/etc/passwd", "../llama-3.1-8b", "./llama-3.1-8b", "~/models/x", "C:\\models",
                                  "meta-llama/../../etc", "meta-llama/Not-A-Model", "llama-3.1-8b/config.json",
                                  "file:///etc/passwd", "a" * 300])
def test_path_like_or_unknown_model_names_are_422(client, name):
    r = client.post("/api/estimate", json={"model": name})
    assert r.status_code == 422
    assert ["body", "model"] in loc_of(r)


def test_a_file_named_like_a_model_is_never_read(client, tmp_path, monkeypatch):
    """The library's loader prefers a local path over the catalog; the API must not."""
    for name in ("llama-3.1-8b", "meta-llama/Llama-3.1-8B"):
        decoy = tmp_path / name
        decoy.mkdir(parents=True)
        (decoy / "config.json").write_text(json.dumps({**CATALOG_8B, "num_hidden_layers": 2}))
    monkeypatch.chdir(tmp_path)
    assert ib.load_model("llama-3.1-8b").num_layers == 2  # the trap works on the Python API
    for name in ("llama-3.1-8b", "meta-llama/Llama-3.1-8B"):
        got = post(client, "/api/memory", {"model": name})
        want = memory_report(ib.make_deployment(model=CATALOG_8B), 8, 1280)
        assert got["weights"] == pytest.approx(float(want.weights))


def test_oversized_body_is_422(client):
    body = json.dumps({"config": {**CATALOG_8B, "pad": "x" * 1_100_000}})
    r = client.post("/api/estimate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["type"] == "value_error.body_too_large"


def test_streamed_oversized_body_is_422(client):
    def chunks():
        yield b'{"csv": "'
        for _ in range(200):
            yield b"x" * 10_000
        yield b'"}'
    r = client.post("/api/validate", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert "body" in r.json()["detail"][0]["loc"]


def test_nan_and_infinity_are_422(client):
    r = client.post("/api/estimate", content=b'{"model": "llama-3.1-8b", "comm_overlap": NaN}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422
    r = client.post("/api/estimate", content=b'{"config": {"hidden_size": Infinity}}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422


def test_simulation_past_the_time_budget_is_422():
    pytest.importorskip("inferbound.sim", reason="inferbound.sim not installed yet")
    slow = TestClient(create_app(work_seconds=0.0))
    r = slow.post("/api/simulate", json={"model": "llama-3.1-8b", "requests": 50, "output_len": 20})
    assert r.status_code == 422
    assert "stopped after" in r.json()["detail"][0]["msg"]


def test_heavy_calls_beyond_the_slots_get_429():
    pytest.importorskip("inferbound.sim", reason="inferbound.sim not installed yet")
    app = create_app(work_seconds=0.2, heavy_slots=1)
    busy = TestClient(app)
    app.state.heavy_slots.acquire()  # another simulation holds the only slot
    try:
        r = busy.post("/api/simulate", json={"model": "llama-3.1-8b", "requests": 5})
        assert r.status_code == 429
        assert busy.post("/api/memory", json={"model": "llama-3.1-8b"}).status_code == 200  # cheap calls still run
    finally:
        app.state.heavy_slots.release()
    # once the slot is free a heavy call runs (a light one: the 0.2 s budget is not what this test is about)
    light = {"model": "llama-3.1-8b", "requests": 5, "output_len": 16}
    assert busy.post("/api/simulate", json=light).status_code == 200


def test_responses_are_made_json_safe():
    """JSON has no NaN/infinity: the encoder the routes use turns them into null (else the reply is a 500)."""
    import numpy as np

    from inferbound.web.errors import jsonable
    got = jsonable({"a": float("inf"), "b": np.float64("nan"), "c": np.array([1.0, -np.inf]), "d": (np.int64(3),)})
    assert got == {"a": None, "b": None, "c": [1.0, None], "d": [3]}
    json.dumps(got, allow_nan=False)


# ---------- page, assets, hosts ----------

def test_page_and_assets_are_local(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for asset in ("/static/app.js", "/static/charts.js", "/static/style.css"):
        r = client.get(asset)
        assert r.status_code == 200, asset
        text = r.text.replace("http://www.w3.org/2000/svg", "")  # an XML namespace, never fetched
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, asset
    assert "http" not in page.text.replace('href="/openapi.json"', "")


def test_openapi_schema_lists_every_endpoint(client):
    paths = set(client.get("/openapi.json").json()["paths"])
    assert {"/api/estimate", "/api/roofline", "/api/memory", "/api/models", "/api/gpus", "/api/validate"} <= paths
    assert client.get("/docs").status_code == 404  # the swagger page loads a CDN: off


def test_unknown_host_is_refused_when_hosts_are_restricted():
    app = create_app(allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1:8000").get("/api/meta").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/api/meta").status_code == 400


def test_serve_binds_loopback_by_default(monkeypatch):
    from typer.testing import CliRunner

    import uvicorn
    from inferbound.cli import app
    from inferbound.cli import serve_cmd  # noqa: F401  (registers the command)
    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda web, **kw: calls.append(kw))
    assert CliRunner().invoke(app, ["serve", "--port", "8123"]).exit_code == 0
    assert calls[-1] == {"host": "127.0.0.1", "port": 8123, "log_level": "info"}
    assert serve_cmd.is_loopback("::1") and not serve_cmd.is_loopback("0.0.0.0")


# ---------- issue 14: serving scenario, scenario views, compare, search exports ----------

H100_70B = {"model": "llama-3.1-70b", "gpu": "h100_sxm", "num_gpus": 4}
KV_70B_BF16 = 2 * 2 * 80 * 8 * 128  # K and V x bf16 bytes x 80 layers x 8 KV heads x 128 head dim, per token


@pytest.mark.parametrize("load", [{"rate": 2.0}, {"concurrency": 24, "think_time": 0.5}])
def test_serving_estimate_equals_python_api(client, load):
    from inferbound.workloads.serving import serving
    got = post(client, "/api/estimate", {**H100_70B, "scenario": "serving", "input_len": 2000, "output_len": 300, **load})
    want = serving(ib.make_deployment(**H100_70B), input_len=2000, output_len=300, **load).to_dict()
    assert got["scenario"] == "serving"
    for key in ("in_service", "decode_batch", "busy_share", "step_time_s", "tpot_s", "output_tok_s", "requests_per_s",
                "joules_per_output_token", "usd_per_million_output_tokens", "limited_by", "bound", "mode"):
        assert got[key] == (pytest.approx(want[key]) if isinstance(want[key], float) else want[key]), key
    assert got["ttft_s"] == pytest.approx(want["ttft_s"])


def test_max_throughput_view_is_its_own_operating_point(client):
    """Memory at the operating concurrency C, by hand: KV = C x held tokens x KV bytes per token / TP (the KV
    heads split over TP4); held tokens = I + O/2 (reservation current) or I + O (max), in whole blocks;
    activations of a step at the token budget T = T x (4d + (2 ff + (n_h + 2 n_kv) h)/tp) x 2 B + S x vocab/tp x 4 B
    (S = min(C, T) sampled rows); weights as the static estimate's. The time split adds up to the step time."""
    got = post(client, "/api/estimate", {**H100_70B, "scenario": "max-throughput", "input_len": 1024, "output_len": 256})
    mem, step_ = got["view"]["memory"], got["view"]["step"]
    c, block = got["concurrency"], got["block_size"]
    held = 1024 + (256 / 2 if got["kv_reservation"] == "current" else 256)
    held = -(-held // block) * block
    assert mem["held_tokens"] == held
    assert mem["kv_cache"] == pytest.approx(c * held * KV_70B_BF16 / 4)
    assert mem["kv_cache"] <= mem["kv_capacity"] * (1 + 1e-9)  # the KV cache binds at most at its capacity
    t = mem["token_budget"]
    width = 4 * 8192 + (2 * 28672 + (64 + 2 * 8) * 128) / 4
    rows = min(-(-c // 1), t)
    assert mem["activations"] == pytest.approx(t * width * 2 + rows * 128256 / 4 * 4)
    static = post(client, "/api/estimate", {**H100_70B})
    assert mem["weights"] == pytest.approx(static["memory"]["weights"])
    assert mem["fits"] is True and "max-throughput point" in mem["basis"]
    assert step_["time_s"] == pytest.approx(got["step_time_s"])
    assert sum(step_["split_s"].values()) == pytest.approx(got["step_time_s"], rel=1e-6)
    assert step_["bound"] == got["bound"]


def test_serving_view_is_at_its_count_in_service(client):
    got = post(client, "/api/estimate", {**H100_70B, "scenario": "serving", "concurrency": 32})
    mem, step_ = got["view"]["memory"], got["view"]["step"]
    held = 1024 + (256 / 2 if mem["kv_reservation"] == "current" else 256)
    held = -(-held // 16) * 16
    assert mem["in_flight"] == pytest.approx(got["in_service"])
    assert mem["kv_cache"] == pytest.approx(got["in_service"] * held * KV_70B_BF16 / 4)
    assert sum(step_["split_s"].values()) == pytest.approx(got["step_time_s"], rel=1e-6)
    assert step_["decode_batch"] == pytest.approx(got["decode_batch"])
    assert 0 < step_["prefill_step_share"] < 1  # decode-only steps and steps that carry prompt chunks


def test_kv_offload_view_keeps_running_kv_on_the_gpu(client):
    """The host tier holds evicted prefixes (docs/features/kv-offload.md): the running batch's KV stays on the
    GPU, so the operating point is unchanged and the view shows the tier's pool apart."""
    body = {"model": "llama-3.1-70b", "gpu": "gh200", "num_gpus": 1, "weight_dtype": "fp8", "act_dtype": "fp8",
            "scenario": "max-throughput", "input_len": 8192, "output_len": 1024}
    plain = post(client, "/api/estimate", body)
    host = post(client, "/api/estimate", {**body, "kv_offload": "host"})
    assert host["concurrency"] == pytest.approx(plain["concurrency"])
    m = host["view"]["memory"]
    assert m["kv_host_pool"] > 0 and m["kv_in_host"] == 0.0
    assert m["kv_on_gpu"] == pytest.approx(m["kv_cache"]) and m["kv_cache"] <= m["kv_capacity"]


def test_requests_and_its_old_name(client):
    base = {"model": "llama-3.1-8b", "scenario": "max-throughput", "input_len": 512, "output_len": 128}
    new = post(client, "/api/estimate", {**base, "requests": 700})
    old = post(client, "/api/estimate", {**base, "num_requests": 700})
    assert new["num_requests"] == old["num_requests"] == 700
    assert new["run_s"] == pytest.approx(old["run_s"])
    r = client.post("/api/estimate", json={**base, "requests": 700, "num_requests": 800})
    assert r.status_code == 422 and "num_requests" in r.text


def test_max_throughput_takes_length_mixes(client):
    from inferbound.workloads.lengths import from_options
    body = {"model": "llama-3.1-8b", "gpu": "h100_sxm", "scenario": "max-throughput", "input_len": 1000,
            "output_len": 200, "output_dist": "uniform:50:350"}
    got = post(client, "/api/estimate", body)
    mix = from_options({"input_len": 1000, "output_len": 200, "output_dist": "uniform:50:350"})
    want = ib.max_throughput(model="llama-3.1-8b", gpu="h100_sxm", input_len=1000, output_len=200, lengths=mix)
    assert got["output_tok_s"] == pytest.approx(want.output_tok_s)
    assert got["lengths"] == want.lengths
    ds = post(client, "/api/estimate", {**body, "output_dist": None, "dataset": "sharegpt"})
    assert ds["lengths"].startswith("sharegpt") or "sharegpt" in ds["lengths"]


SCENARIO_BAD = [
    ({"scenario": "serving"}, ["body", "rate"]),
    ({"scenario": "serving", "rate": 1, "concurrency": 4}, ["body", "rate"]),
    ({"scenario": "static", "rate": 1}, ["body", "rate"]),
    ({"scenario": "max-throughput", "rate": 4}, ["body", "rate"]),  # concurrency is its requests in flight; rate no
    ({"scenario": "static", "dataset": "sharegpt"}, ["body", "dataset"]),
    ({"scenario": "max-throughput", "dataset": "nope"}, ["body", "dataset"]),
    ({"scenario": "serving", "rate": 1e6}, ["body", "rate"]),  # overload names the capacity
    ({"scenario": "serving", "rate": 0}, ["body", "rate"]),
    ({"scenario": "max-throughput", "input_dist": "normal:abc"}, ["body", "input_dist"]),
    ({"speculative": "draft:llama-3.2-1b", "spec_tokens": 3, "acceptance": 0.7}, ["body", "speculative"]),
    ({"speculative": "eagle", "spec_tokens": 3, "acceptance": 1.0}, ["body", "acceptance"]),
    ({"speculative": "medusa"}, ["body", "speculative"]),
]


def test_max_throughput_takes_a_stated_concurrency(client):
    """max-throughput with concurrency 64: the requests in flight are capped at 64 (the engine's running cap
    per replica, workloads/max_throughput.with_concurrency), as the library computes it."""
    got = post(client, "/api/estimate", {"model": "llama-3.1-8b", "scenario": "max-throughput", "concurrency": 64})
    want = ib.max_throughput(model="llama-3.1-8b", gpu="h100_sxm", num_requests=10_000, concurrency=64)
    assert got["stated_concurrency"] == 64 and got["max_num_seqs"] == 64 and got["concurrency"] <= 64
    assert got["output_tok_s"] == pytest.approx(want.output_tok_s)


@pytest.mark.parametrize("extra,loc", SCENARIO_BAD, ids=[json.dumps(b)[:60] for b, _ in SCENARIO_BAD])
def test_scenario_options_are_checked(client, extra, loc):
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", **extra})
    assert r.status_code == 422, r.text
    assert loc in loc_of(r), r.text


def test_speculative_decoding_reaches_the_estimate(client):
    """tau = (1 - a^(k+1)) / (1 - a) tokens per target step: k = 3, a = 0.7 gives (1 - 0.2401) / 0.3."""
    got = post(client, "/api/estimate", {**H100_70B, "scenario": "max-throughput", "speculative": "eagle",
                                         "spec_tokens": 3, "acceptance": 0.7})
    assert got["tokens_per_step"] == pytest.approx((1 - 0.7 ** 4) / 0.3)
    assert got["view"]["step"]["tokens_per_step"] == pytest.approx((1 - 0.7 ** 4) / 0.3)


COMPARE = {"workload": {"scenario": "serving", "concurrency": 16, "input_len": 1024, "output_len": 256},
           "deployments": [{"model": "llama-3.1-70b", "gpu": "h100_sxm", "tp": 4},
                           {"model": "llama-3.1-70b", "gpu": "h200_sxm", "tp": 2, "weight_dtype": "fp8",
                            "label": "H200 fp8"}]}


def test_compare_equals_python_api(client):
    from inferbound.faces import compare as cmp
    got = post(client, "/api/compare", COMPARE)
    workload, deps = cmp.parse(COMPARE)
    want = cmp.compare(workload, deps)
    assert [r["label"] for r in got["rows"]] == ["4x h100_sxm TP4, bf16", "H200 fp8"]  # formats differ
    for g, w in zip(got["rows"], want):
        assert g["metrics"] == pytest.approx(w.metrics)
        assert (g["fits"], g["bound"], g["deployment"]) == (w.fits, w.bound, w.deployment)
    first, second = got["rows"][0]["metrics"], got["rows"][1]["metrics"]
    assert all(v == pytest.approx(1.0) for v in got["rows"][0]["ratio"].values() if v is not None)
    assert got["rows"][1]["ratio"]["tok_s_per_gpu"] == pytest.approx(second["tok_s_per_gpu"] / first["tok_s_per_gpu"])
    assert got["csv"] == cmp.to_csv(want)
    assert got["csv"].count("\n") == 3  # header + one line per deployment


def test_compare_static_and_max_throughput(client):
    for w in ({"scenario": "static", "batch": 4}, {"scenario": "max-throughput", "requests": 2000}):
        got = post(client, "/api/compare", {"workload": w, "deployments": [{"model": "llama-3.1-8b"},
                                                                           {"model": "llama-3.1-8b", "gpu": "h200_sxm"}]})
        assert len(got["rows"]) == 2 and got["workload"]["scenario"] == w["scenario"]
        assert (got["rows"][0]["metrics"]["ttft_ms"] is None) == (w["scenario"] == "max-throughput")


COMPARE_BAD = [
    ({**COMPARE, "deployments": [{"model": "llama-3.1-8b"}] * (schemas.MAX_COMPARE_DEPLOYMENTS + 1)}, ["body", "deployments"]),
    ({**COMPARE, "deployments": []}, ["body", "deployments"]),
    ({**COMPARE, "deployments": [{"model": "llama-3.1-70b", "tp": 3}]}, ["body", "deployments", 0, "tp"]),
    ({**COMPARE, "deployments": [{"model": "llama-3.1-8b"}, {"model": "/etc/passwd"}]}, ["body", "deployments", 1, "model"]),
    ({**COMPARE, "deployments": [{"model": "no-such-model"}]}, ["body", "deployments", 0, "model"]),
    ({**COMPARE, "deployments": [{"model": "llama-3.1-8b", "gpu_file": "/etc/x.yaml"}]}, ["body", "deployments", 0, "gpu_file"]),
    ({**COMPARE, "deployments": [{"model": "llama-3.1-8b", "calibration": "/etc/cal.yaml"}]},
     ["body", "deployments", 0, "calibration"]),
    ({"workload": {"scenario": "serving"}, "deployments": [{"model": "llama-3.1-8b"}]}, ["body", "workload", "rate"]),
    ({"workload": {"input_len": 200000}, "deployments": [{"model": "llama-3.1-8b"}]}, ["body", "workload", "input_len"]),
    ({"workload": {"scenario": "nope"}, "deployments": [{"model": "llama-3.1-8b"}]}, ["body", "workload", "scenario"]),
    ({"workload": {"trace": "/etc/passwd"}, "deployments": [{"model": "llama-3.1-8b"}]}, ["body", "workload", "trace"]),
    ({"workload": {}, "deployments": [{"model": "llama-3.1-8b"}], "extra": 1}, ["body", "extra"]),
]


def test_compare_marks_an_overloaded_row_and_prices_the_rest(client):
    """A rate one deployment cannot serve is not bad input: the row says so (its reason names the rate and
    the ceiling) and the other rows are still priced. 1x H100 with Llama-3.1-8B serves tens of requests/s,
    far below 1e6; at 1 req/s every deployment keeps up."""
    rows = post(client, "/api/compare", {"workload": {"scenario": "serving", "rate": 1e6},
                                         "deployments": [{"model": "llama-3.1-8b"}, {"model": "llama-3.1-8b", "tp": 2}]})["rows"]
    assert len(rows) == 2
    for row in rows:
        assert row["bound"] == "overloaded" and row["metrics"]["ttft_ms"] is None
        assert any("rate=1e+06 req/s overloads" in w for w in row["warnings"])
    ok = post(client, "/api/compare", {"workload": {"scenario": "serving", "rate": 1.0},
                                       "deployments": [{"model": "llama-3.1-8b"}]})["rows"]
    assert ok[0]["bound"] != "overloaded" and ok[0]["metrics"]["ttft_ms"] > 0


@pytest.mark.parametrize("body,loc", COMPARE_BAD, ids=[json.dumps(b)[:70] for b, _ in COMPARE_BAD])
def test_compare_bad_input_is_422_at_the_field(client, body, loc):
    r = client.post("/api/compare", json=body)
    assert r.status_code == 422, r.text
    assert loc in loc_of(r), r.text
    assert all(d["msg"] and "\n" not in d["msg"] for d in r.json()["detail"])


def test_compare_never_reads_a_file_named_like_a_model(client, tmp_path, monkeypatch):
    decoy = tmp_path / "llama-3.1-8b"
    decoy.mkdir()
    (decoy / "config.json").write_text(json.dumps({**CATALOG_8B, "num_hidden_layers": 2}))
    monkeypatch.chdir(tmp_path)
    got = post(client, "/api/compare", {"workload": {"batch": 1}, "deployments": [{"model": "llama-3.1-8b"}]})
    want = ib.estimate(ib.make_deployment(model=CATALOG_8B), batch=1, input_len=1024, output_len=256)
    assert got["rows"][0]["metrics"]["tpot_ms"] == pytest.approx(want.tpot_s * 1e3)


def test_compare_past_the_time_budget_is_422():
    slow = TestClient(create_app(work_seconds=0.0))
    r = slow.post("/api/compare", json=COMPARE)
    assert r.status_code == 422 and "stopped after" in r.json()["detail"][0]["msg"]


def test_search_exports_csv_launch_command_and_the_clis_axes(client):
    search = pytest.importorskip("inferbound.search", reason="inferbound.search not installed")
    from inferbound.search.plot import _axis
    from inferbound.search.space import search_defaults
    got = post(client, "/api/search", {"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "max_gpus": 2, "top": 3,
                                       "emit": "sglang"})
    want = search.search("llama-3.1-8b", gpus=["h100_sxm"], max_gpus=2, top=3, engine="sglang")
    x, y = search_defaults()["output"]["frontier"]
    f = got["frontiers"][0]
    assert (f["x"], f["y"]) == (x, y) == tuple(want.default_frontier)
    assert (f["x_label"], f["y_label"]) == (_axis(x), _axis(y))
    assert got["csv"] == want.to_csv()
    assert got["launch_command"]["rank"] == 1 and got["launch_command"]["engine"] == "sglang"
    assert got["launch_command"]["text"] == search.emit_command("sglang", want.model, want.table[0])
    assert "sglang.launch_server" in got["launch_command"]["text"]
    r = client.post("/api/search", json={"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "max_gpus": 1,
                                         "emit": "vllm", "engine": "sglang"})
    assert r.status_code == 422 and ["body", "emit"] in loc_of(r)
    r = client.post("/api/search", json={"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "max_gpus": 1, "top": 2,
                                         "emit": "vllm", "emit_rank": 3})
    assert r.status_code == 422 and ["body", "emit_rank"] in loc_of(r)


def test_search_takes_slos_budgets_and_lengths(client):
    pytest.importorskip("inferbound.search", reason="inferbound.search not installed")
    body = {"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "max_gpus": 4, "top": 5}
    got = post(client, "/api/search", {**body, "slo_tpot_ms": 20, "max_total_gpus": 2})
    assert got["table"] and all(r["metrics"]["tpot_ms"] <= 20 for r in got["table"])
    assert all(r["unit_gpus"] * r["replicas"] <= 2 for r in got["table"])
    assert len(got["constraints"]) == 2
    mixed = post(client, "/api/search", {**body, "output_dist": "uniform:50:450", "output_len": 250})
    assert "uniform:50:450" in mixed["workload"]["lengths"]


def test_every_script_and_style_of_the_page_is_local(client):
    import re
    page = client.get("/").text
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    assert {"/static/common.js", "/static/planner.js", "/static/app.js", "/static/charts.js"} <= set(assets)
    for asset in assets:
        r = client.get(asset)
        assert r.status_code == 200, asset
        text = r.text.replace("http://www.w3.org/2000/svg", "")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, asset


def test_search_says_an_allowed_long_context(client):
    """GPT-2's context is 1,024 tokens (n_positions): 1,000 + 100 tokens exceed it. Without the allowance the
    request is refused at input_len; with it the search runs and its response carries the warning, as the
    CLI's search prints it."""
    body = {"model": "gpt2", "gpus": ["h100_sxm"], "max_gpus": 1, "input_len": 1000, "output_len": 100, "top": 1}
    r = client.post("/api/search", json=body)
    assert r.status_code == 422 and ["body", "input_len"] in loc_of(r), r.text
    got = post(client, "/api/search", {**body, "allow_long_context": True})
    assert any("1,024" in w or "1024" in w for w in got["warnings"]), got["warnings"]
