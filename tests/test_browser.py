"""Browser test of the page: Debian's chromium (headless) driven by Playwright, against a live server.

The server runs in a background thread on a free 127.0.0.1 port; nothing is fetched from the network
(the page's Content-Security-Policy only allows its own origin, and the test fails on any request to
another origin). Skips when /usr/bin/chromium or the playwright package is absent (`.ci/setup`
installs chromium with apt). With INFERBOUND_UPDATE_SCREENSHOT=1 the launch-command test refreshes
docs/img/web.png (a serving steady state under an SLO, its frontier and the top row's launch command) and
the comparison test docs/img/web_compare.png, the screenshots the docs show.
Downloads (CSV, launch commands) are Blob URLs of the page's own origin, which the check allows.
"""
from __future__ import annotations

import json
import os
import re
import urllib.request
import shutil
import socket
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dev extra: pip install -e '.[dev]'")
uvicorn = pytest.importorskip("uvicorn")

from inferbound.web import create_app  # noqa: E402

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
DOCS_IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
DOCS_SCREENSHOT = DOCS_IMG / "web.png"


@pytest.fixture(scope="module")
def base_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(allowed_hosts=["127.0.0.1"]), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, base_url):
    pg = browser.new_page(viewport={"width": 1440, "height": 1000})
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("request", lambda r: None if r.url.startswith((base_url, "data:", "blob:" + base_url))
          else problems.append(f"request to another origin: {r.url}"))
    pg.problems = problems
    yield pg
    pg.close()


def settled(pg, timeout=30_000):
    sync_api.expect(pg.locator("body")).to_have_attribute("data-state", re.compile("^(ready|error)$"), timeout=timeout)


def test_changing_the_gpu_changes_the_numbers(page, base_url, tmp_path):
    page.goto(base_url + "/")
    settled(page)
    tpot = page.locator("#m-tpot .value")
    sync_api.expect(tpot).to_have_text(re.compile(r"^[\d.,]+ ms$"))
    before = tpot.inner_text()
    assert page.locator("#membar .seg").count() >= 3  # weights, KV, activations, reserve
    assert page.locator("#roofline svg circle").count() > 5
    page.select_option("#gpu", "b200_hgx")
    sync_api.expect(tpot).not_to_have_text(before, timeout=30_000)
    settled(page)
    assert parse_qs(urlsplit(page.url).query)["gpu"] == ["b200_hgx"]  # the URL holds the state
    assert page.get_attribute("body", "data-state") == "ready"
    sync_api.expect(page.locator("body")).to_have_attribute("data-search", "ready", timeout=60_000)
    page.screenshot(path=str(tmp_path / "web.png"), full_page=True)
    assert (tmp_path / "web.png").stat().st_size > 10_000
    assert page.problems == []


def test_a_link_reproduces_the_view(page, browser, base_url):
    query = "?model=llama-3.1-70b&gpu=h100_sxm&num_gpus=4&weight_dtype=fp8&act_dtype=fp8&batch=32"
    page.goto(base_url + "/" + query)
    settled(page)
    assert page.input_value("#model") == "llama-3.1-70b"
    assert page.input_value("#num_gpus") == "4"
    summary = page.inner_text("#summary")
    assert "4x h100_sxm TP4" in summary and "compute fp8" in summary
    fresh = browser.new_page()
    fresh.goto(page.url)  # the same address in a new tab shows the same numbers
    settled(fresh)
    assert fresh.inner_text("#m-tpot .value") == page.inner_text("#m-tpot .value")
    fresh.close()
    assert page.problems == []


def test_bad_input_shows_the_field_error(page, base_url):
    page.goto(base_url + "/?tp=3")
    settled(page)
    sync_api.expect(page.locator("#errors")).to_contain_text("tp: tp=3 must divide")
    assert "invalid" in page.get_attribute("#tp", "class")
    page.fill("#tp", "2")
    settled(page)
    sync_api.expect(page.locator("#errors")).to_be_hidden()


def test_a_deployment_that_does_not_fit_leads_with_it(page, base_url):
    """Llama-3.1-405B in bf16 on one H100 (810 GB of weights, 80 GB of HBM): the banner comes first with the
    reason, and every card is marked hypothetical; a fitting deployment hides both."""
    page.goto(base_url + "/?model=llama-3.1-405b&gpu=h100_sxm&num_gpus=1&weight_dtype=bf16&act_dtype=bf16")
    settled(page)
    banner = page.locator("#fitbanner")
    sync_api.expect(banner).to_be_visible()
    sync_api.expect(banner).to_contain_text("DOES NOT FIT")
    sync_api.expect(banner).to_contain_text("hypothetical")
    assert "hypothetical" in page.get_attribute("#cards", "class")
    page.goto(base_url + "/?model=llama-3.1-8b&gpu=h100_sxm")
    settled(page)
    sync_api.expect(banner).to_be_hidden()
    assert "hypothetical" not in (page.get_attribute("#cards", "class") or "")
    assert page.problems == []


# ---------- the planner's page (issue 14) ----------

def api(base_url: str, path: str, body: dict) -> dict:
    """The same server's JSON API, called directly (loopback)."""
    req = urllib.request.Request(base_url + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def figure(text: str) -> float:
    """The number at the start of a card's value ('1,234 tok/s', '37.1 ms')."""
    return float(text.split()[0].replace(",", "").lstrip("$"))


def searched(pg, timeout=60_000):
    sync_api.expect(pg.locator("body")).to_have_attribute("data-search", "ready", timeout=timeout)


def compared(pg, timeout=60_000):
    sync_api.expect(pg.locator("body")).to_have_attribute("data-compare", "ready", timeout=timeout)


def posted(path):
    return lambda r: r.url.endswith(path) and r.method == "POST"


PAGE_70B = {"model": "llama-3.1-70b", "gpu": "h100_sxm", "num_gpus": 4, "pp": 1, "ep": 1, "dp": 1,
            "weight_dtype": "bf16", "act_dtype": "bf16"}


def test_serving_mode_is_the_analytic_steady_state(page, base_url):
    page.goto(base_url + "/?model=llama-3.1-70b&num_gpus=4")
    settled(page)
    page.select_option("#scenario", "serving")
    page.select_option("#load", "concurrency")
    with page.expect_response(lambda r: posted("/api/estimate")(r.request) and
                              (r.request.post_data_json or {}).get("concurrency") == 32):
        page.fill("#concurrency", "32")
    settled(page)
    sync_api.expect(page.locator("#sim-title")).to_have_text("Serving steady state")
    assert page.is_visible("#concurrency") and not page.is_visible("#rate")
    want = api(base_url, "/api/estimate", {**PAGE_70B, "scenario": "serving", "concurrency": 32, "think_time": 0,
                                           "input_len": 1024, "output_len": 256})
    assert figure(page.inner_text("#m-tpot .value")) == pytest.approx(want["tpot_s"] * 1e3, rel=5e-3)
    assert figure(page.inner_text("#m-ttft .value")) == pytest.approx(want["ttft_s"]["mean"] * 1e3, rel=5e-3)
    assert figure(page.inner_text("#m-tput .value")) == pytest.approx(want["output_tok_s"], rel=5e-3)
    assert "requests in service" in page.inner_text("#sim")
    q = parse_qs(urlsplit(page.url).query)
    assert q["scenario"] == ["serving"] and q["load"] == ["concurrency"] and q["concurrency"] == ["32"]
    assert page.get_attribute("body", "data-state") == "ready"
    assert page.problems == []


def test_memory_and_time_split_follow_the_scenario(page, base_url):
    """Static batch 1: the KV of one sequence and two phases. Max throughput: the KV of its operating
    concurrency (the API's view) and one steady-state step; serving: its count in service."""
    page.goto(base_url + "/?model=llama-3.1-70b&num_gpus=4&batch=1")
    settled(page)
    kv = page.locator("#membar .seg[data-key=kv_cache]")
    static_kv = kv.get_attribute("title")
    assert page.locator("#split .phase").count() == 2
    page.select_option("#scenario", "max-throughput")
    sync_api.expect(page.locator("#mem-note")).to_contain_text("max-throughput point", timeout=30_000)
    settled(page)
    want = api(base_url, "/api/estimate", {**PAGE_70B, "scenario": "max-throughput", "input_len": 1024,
                                           "output_len": 256})["view"]
    assert f"{want['memory']['kv_cache'] / 1e9:.2f} GB" in kv.get_attribute("title") != static_kv
    assert f"{want['memory']['weights'] / 1e9:.2f} GB" in page.get_attribute("#membar .seg[data-key=weights]", "title")
    assert page.locator("#split .phase").count() == 1
    head = page.inner_text("#split .phase-head")
    assert "Steady-state step" in head and f"{want['step']['bound']}-bound" in head
    assert figure(head.split("token")[1]) == pytest.approx(want["step"]["time_s"] * 1e3, rel=5e-3)
    page.select_option("#scenario", "serving")
    sync_api.expect(page.locator("#mem-note")).to_contain_text("requests in service", timeout=30_000)
    settled(page)
    serving = api(base_url, "/api/estimate", {**PAGE_70B, "scenario": "serving", "rate": 1, "input_len": 1024,
                                              "output_len": 256})["view"]
    assert f"{serving['memory']['kv_cache'] / 1e9:.2f} GB" in kv.get_attribute("title")
    assert page.problems == []


@pytest.mark.parametrize("scenario", ["static", "max-throughput", "serving", "simulate"])
def test_not_fitting_leads_in_every_mode(page, base_url, scenario):
    """405B in bf16 on one H100 fits in no mode: the banner and the hypothetical cards in each. A batch that
    does not fit as a static batch is no reason to flag the max-throughput point, which sizes its own."""
    page.goto(base_url + f"/?model=llama-3.1-405b&num_gpus=1&scenario={scenario}")
    settled(page)
    sync_api.expect(page.locator("#fitbanner")).to_be_visible()
    sync_api.expect(page.locator("#fitbanner")).to_contain_text("DOES NOT FIT")
    assert "hypothetical" in page.get_attribute("#cards", "class")
    if scenario == "max-throughput":
        page.goto(base_url + "/?model=llama-3.1-8b&batch=4096&scenario=static")
        settled(page)
        sync_api.expect(page.locator("#fitbanner")).to_be_visible()
        page.select_option("#scenario", "max-throughput")
        sync_api.expect(page.locator("#fitbanner")).to_be_hidden(timeout=30_000)
        assert "hypothetical" not in (page.get_attribute("#cards", "class") or "")


def test_slo_and_budget_inputs_reach_the_search(page, base_url):
    page.goto(base_url + "/?model=llama-3.1-8b&search_max_gpus=4")
    settled(page)
    searched(page)
    with page.expect_response(lambda r: posted("/api/search")(r.request) and
                              (r.request.post_data_json or {}).get("max_total_gpus") == 2) as resp:
        page.fill("#slo_tpot_ms", "20")
        page.fill("#max_total_gpus", "2")
    body = resp.value.request.post_data_json
    assert body["slo_tpot_ms"] == 20 and body["max_total_gpus"] == 2
    searched(page)
    res = resp.value.json()
    assert len(res["constraints"]) == 2
    for label in res["constraints"]:
        assert label in page.inner_text("#pareto-reason")
    tpot = page.locator("#pareto-table tbody tr td:nth-child(7)").all_inner_texts()
    assert tpot and all(float(t.replace(",", "")) <= 20 for t in tpot)
    q = parse_qs(urlsplit(page.url).query)
    assert q["slo_tpot_ms"] == ["20"] and q["max_total_gpus"] == ["2"]
    assert page.problems == []


def test_the_ranked_table_downloads_as_csv(page, base_url):
    with page.expect_request(posted("/api/search")) as req:
        page.goto(base_url + "/?model=llama-3.1-8b&search_max_gpus=2")
    settled(page)
    searched(page)
    with page.expect_download() as dl:
        page.click("#pareto-csv")
    assert dl.value.suggested_filename == "inferbound-search.csv"
    text = Path(dl.value.path()).read_bytes().decode()
    assert text == api(base_url, "/api/search", req.value.post_data_json)["csv"]
    rows = page.locator("#pareto-table tbody tr").count()
    assert text.count("\n") == rows + 1 and text.startswith("rank,")
    assert page.problems == []


def test_the_launch_command_of_the_top_row_downloads(page, base_url, tmp_path):
    page.goto(base_url + "/?model=llama-3.1-70b&num_gpus=4&scenario=serving&load=concurrency&concurrency=32"
                         "&slo_tpot_ms=50")
    settled(page)
    searched(page)
    with page.expect_response(lambda r: posted("/api/search")(r.request) and
                              (r.request.post_data_json or {}).get("emit") == "vllm") as resp:
        page.select_option("#emit", "vllm")
    searched(page)
    launch = resp.value.json()["launch_command"]
    assert launch["rank"] == 1
    text = launch["text"]
    # the checkpoint that was priced: an fp8 winner launches the published FP8 one (data/checkpoints.yaml)
    ckpt = "nvidia/Llama-3.1-70B-Instruct-FP8" if " fp8, " in text.splitlines()[0] else "meta-llama/Llama-3.1-70B"
    assert f"vllm serve {ckpt}" in text and "--tensor-parallel-size" in text
    sync_api.expect(page.locator("#launch")).to_have_text(text.strip())
    with page.expect_download() as dl:
        page.click("#launch-dl")
    assert dl.value.suggested_filename == "launch-vllm.sh"
    assert Path(dl.value.path()).read_bytes().decode() == "#!/bin/sh\n" + text
    assert parse_qs(urlsplit(page.url).query)["emit"] == ["vllm"]
    page.evaluate("window.scrollTo(0, 0)")  # the controls are sticky: shoot them at the top
    page.screenshot(path=str(tmp_path / "web.png"), full_page=True)
    if os.environ.get("INFERBOUND_UPDATE_SCREENSHOT"):  # refresh the docs' screenshot (docs/web.md)
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "web.png", DOCS_SCREENSHOT)
    assert page.problems == []


def test_compare_view(page, browser, base_url, tmp_path):
    """Two deployments side by side: rows from /api/compare with ratios to the first, a bar chart, the CSV,
    and a link that reproduces the comparison."""
    page.goto(base_url + "/?model=llama-3.1-70b&num_gpus=4&scenario=serving&load=concurrency&concurrency=16")
    settled(page)
    page.click("#cmp-add")
    compared(page)
    page.click("#cmp-add")
    compared(page)
    second = page.locator('#cmp-edit tr[data-row="1"]')
    second.locator('[data-field="label"]').fill("H200 fp8")
    second.locator('[data-field="gpu"]').select_option("h200_sxm")
    second.locator('[data-field="num_gpus"]').fill("2")
    with page.expect_response(lambda r: posted("/api/compare")(r.request) and
                              len({d.get("gpu") for d in r.request.post_data_json["deployments"]}) == 2 and
                              r.request.post_data_json["deployments"][1].get("weight_dtype") == "fp8") as resp:
        second.locator('[data-field="weight_dtype"]').select_option("fp8")
    compared(page)
    body = resp.value.request.post_data_json
    assert body["workload"] == {"scenario": "serving", "input_len": 1024, "output_len": 256, "concurrency": 16,
                                "think_time": 0}
    want = api(base_url, "/api/compare", body)
    rows = page.locator("#cmp-rows tbody tr")
    sync_api.expect(rows).to_have_count(2)
    assert rows.nth(1).locator("td").nth(1).inner_text() == "H200 fp8"
    cell = rows.nth(1).locator('td[data-metric="tok_s_per_gpu"]').inner_text()
    assert f"×{want['rows'][1]['ratio']['tok_s_per_gpu']:.2f}" in cell
    assert figure(cell) == pytest.approx(want["rows"][1]["metrics"]["tok_s_per_gpu"], rel=5e-3)
    panels = page.locator("#cmp-chart .bar-panel")
    assert panels.count() == len(want["metrics"])  # serving: every figure has a value
    assert page.locator("#cmp-chart rect.bar").count() == 2 * panels.count()
    with page.expect_download() as dl:
        page.click("#cmp-csv")
    assert Path(dl.value.path()).read_bytes().decode() == want["csv"]  # byte for byte (csv's \r\n kept)
    if os.environ.get("INFERBOUND_UPDATE_SCREENSHOT"):  # docs/web.md shows the comparison panel
        page.locator("#compare-panel").screenshot(path=str(DOCS_IMG / "web_compare.png"))
    fresh = browser.new_page()
    fresh.goto(page.url)  # the link holds the compared deployments
    settled(fresh)
    compared(fresh)
    sync_api.expect(fresh.locator("#cmp-rows tbody tr")).to_have_count(2)
    assert fresh.locator("#cmp-rows tbody tr").nth(1).locator('td[data-metric="tok_s_per_gpu"]').inner_text() == cell
    fresh.close()
    page.locator("#cmp-edit .cmp-remove").first.click()
    sync_api.expect(page.locator("#cmp-rows tbody tr")).to_have_count(1, timeout=30_000)
    assert page.problems == []


def test_compare_marks_the_bad_cell(page, base_url):
    page.goto(base_url + "/?model=llama-3.1-70b&num_gpus=4")
    settled(page)
    page.click("#cmp-add")
    compared(page)
    page.locator('#cmp-edit [data-field="num_gpus"]').fill("3")
    page.locator('#cmp-edit [data-field="tp"]').fill("3")
    sync_api.expect(page.locator("body")).to_have_attribute("data-compare", "error", timeout=30_000)
    sync_api.expect(page.locator("#cmp-status")).to_contain_text("tp=3 must divide")
    assert "invalid" in page.locator('#cmp-edit [data-field="tp"]').get_attribute("class")


def test_engine_feature_controls(page, base_url):
    page.goto(base_url + "/?model=llama-3.1-70b&num_gpus=4")
    settled(page)
    tpot, ttft = figure(page.inner_text("#m-tpot .value")), figure(page.inner_text("#m-ttft .value"))
    with page.expect_request(lambda r: posted("/api/estimate")(r) and
                             (r.post_data_json or {}).get("speculative") == "eagle") as req:
        page.select_option("#speculative", "eagle")
    body = req.value.post_data_json
    assert (body["spec_tokens"], body["acceptance"]) == (3, 0.7)  # filled in for EAGLE
    settled(page)
    assert page.input_value("#spec_tokens") == "3" and page.input_value("#acceptance") == "0.7"
    assert figure(page.inner_text("#m-tpot .value")) != tpot
    page.select_option("#speculative", "")
    settled(page)
    with page.expect_response(lambda r: posted("/api/estimate")(r.request) and
                              (r.request.post_data_json or {}).get("prefix_hit_rate") == 0.5):
        page.fill("#prefix_hit_rate", "0.5")
    settled(page)
    assert figure(page.inner_text("#m-ttft .value")) < ttft  # half of every prompt comes from the cache
    assert parse_qs(urlsplit(page.url).query)["prefix_hit_rate"] == ["0.5"]
    page.goto(base_url + "/?model=llama-3.1-70b&gpu=gh200&num_gpus=1&weight_dtype=fp8&act_dtype=fp8"
                         "&scenario=max-throughput&input_len=8192&output_len=1024")
    settled(page)
    assert "host tier" not in page.inner_text("#membar")
    with page.expect_request(lambda r: posted("/api/search")(r) and
                             (r.post_data_json or {}).get("kv_offload") == "host"):
        page.select_option("#kv_offload", "host")  # the search models it too
    sync_api.expect(page.locator("#membar")).to_contain_text("of evicted prefixes", timeout=30_000)  # the host tier holds evicted prefixes (issue 20)
    settled(page)
    assert page.get_attribute("body", "data-state") == "ready"
    assert page.problems == []


def test_frontier_axes_are_the_clis(page, base_url):
    """search --plot draws data/search.yaml output.frontier (x, y) with search/plot.py's labels: so does the page."""
    pytest.importorskip("inferbound.search")
    from inferbound.search.plot import _axis
    from inferbound.search.space import search_defaults
    x, y = search_defaults()["output"]["frontier"]
    page.goto(base_url + "/?model=llama-3.1-8b&search_max_gpus=2")
    settled(page)
    searched(page)
    chart = page.locator("#pareto")
    assert (chart.get_attribute("data-x"), chart.get_attribute("data-y")) == (x, y)
    labels = chart.locator("svg text.alabel").all_text_contents()
    assert labels == [_axis(x), _axis(y)]  # the x label is drawn first, then the (rotated) y label
    assert chart.locator("svg path.current").count() == 1  # this deployment, starred
    assert page.problems == []
