"""The page's fleet panel (web/static/fleet.js): the example day posted as YAML, its table and charts drawn.

Uses the browser fixtures of tests/test_browser.py (Debian's chromium, playwright); skipped without them."""
from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api")
from test_browser import base_url, browser, page, settled, sync_api  # noqa: E402,F401  (fixtures)


def test_fleet_panel_runs_the_day(page, base_url):  # noqa: F811
    page.goto(base_url + "/")
    settled(page)
    with page.expect_response(lambda r: r.url.endswith("/api/fleet"), timeout=60_000) as resp:
        page.click("#fleet-run")
    r = resp.value
    assert r.status == 200, r.text()
    result = r.json()["result"]
    rows = page.locator("#fleet-out table tbody tr")
    sync_api.expect(rows).to_have_count(1 + len(result["pools"]))  # the fleet, then each pool
    assert rows.nth(0).locator("td").nth(1).inner_text() == f"{result['requests']:,}"
    assert page.locator("#fleet-out svg").count() == 4
    page.locator("#fleet-yaml").fill("traffic: {rate: {mean: -1, peak_to_mean: 1, period: 24h}, duration: 1m}\n"
                                     "pools: [{name: a, model: llama-3.1-8b, gpu: h100_sxm, replicas: 1}]\n")
    page.click("#fleet-run")
    sync_api.expect(page.locator("#fleet-errors")).to_contain_text("fleet.traffic.rate.mean: traffic.rate.mean=-1",
                                                                   timeout=30_000)
    # the 422 itself is the one console line (the browser logs every failed request)
    assert [p for p in page.problems if "status of 422" not in p] == []
