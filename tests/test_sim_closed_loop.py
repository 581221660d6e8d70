"""Closed-loop clients in the simulator (--concurrency, --think-time): every client has one request in
flight or is thinking, so the interactive response-time law N = X·(R + Z) holds (X requests/s, R the mean
end-to-end time, Z the think time; Little's law on the whole loop). The CLI prints both sides."""
from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.sim import simulate


@pytest.mark.parametrize("clients, think", [(16, 0.0), (16, 0.5), (4, 0.0)])
def test_response_time_law_on_the_simulated_loop(clients, think):
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    s = simulate(dep, concurrency=clients, think_time=think, requests=400, input_len=512, output_len=128,
                 seed=0).summary
    assert s["concurrency"] == clients and s["think_time_s"] == think
    # Z is the mean of the think times this run drew (exponential per client, sources.ClosedLoop): the law
    # holds for the realized Z, not for its nominal mean (384 draws of mean 0.5 s average 0.5 ± 0.026 s)
    n = s["requests_per_s"] * (s["e2e_ms_mean"] / 1e3 + s["think_time_s_mean"])
    # a finite run starts with every client's first request at once and ends with the last ones draining:
    # the law holds to a few per cent over 400 requests
    assert n == pytest.approx(clients, rel=0.05)


def test_cli_prints_both_sides_of_the_law():
    r = CliRunner().invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100_sxm", "--concurrency", "8",
                                 "--think-time", "0.2", "--requests", "200", "--input", "512",
                                 "--output", "64"])
    assert r.exit_code == 0, r.output
    m = re.search(r"closed loop: requests/s × \(E2E \+ think\) vs clients\s*│?\s*([\d.,]+) vs 8", r.output)
    assert m, r.output
    assert float(m.group(1).replace(",", "")) == pytest.approx(8, rel=0.05)
