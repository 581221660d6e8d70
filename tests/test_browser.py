"""Browser test of the page: Debian's chromium (headless) driven by Playwright, against a live server.

The server runs in a background thread on a free 127.0.0.1 port; nothing is fetched from the network
(the page's Content-Security-Policy only allows its own origin, and the test fails on any request to
another origin). Skips when /usr/bin/chromium or the playwright package is absent (`.ci/setup`
installs chromium with apt). With INFERBOUND_UPDATE_SCREENSHOT=1 the first test also refreshes
docs/img/web.png, the screenshot the docs show.
"""
from __future__ import annotations

import os
import re
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
DOCS_SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "img" / "web.png"


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
    pg.on("request", lambda r: None if r.url.startswith(base_url) or r.url.startswith("data:")
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
    page.screenshot(path=str(tmp_path / "web.png"), full_page=True)
    assert (tmp_path / "web.png").stat().st_size > 10_000
    if os.environ.get("INFERBOUND_UPDATE_SCREENSHOT"):  # refresh the README's screenshot (docs/web.md)
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "web.png", DOCS_SCREENSHOT)
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
