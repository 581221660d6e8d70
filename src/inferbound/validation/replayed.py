"""A serving row that carries its benchmark's command line (``bench_command``): the tool's protocol replayed.

The command is read by bench/ (the tool's flag names and defaults: number of prompts, warm-ups, max concurrency,
request rate, lengths with the tool's sampling) and replayed on the row's deployment (bench/replay.py; trtllm-bench
with the limits it derives, bench/trtllm.runtime_for). The row's metrics over the measured requests (warm-ups and
guidellm's transient phases excluded), as the serving clients compute them (bench/report.py): TTFT = first token −
send, TPOT = (latency − TTFT)/(N − 1) per request with N > 1, ITL = every gap between consecutive tokens pooled, E2E
= finish − send; means and numpy percentiles; throughput = tokens or requests / D, D from the start to the last
finish (report.duration); tok_s_per_user = 1000/mean TPOT; the decode bound at the mean number in flight (Σ
latency/D). ``front_end_ms`` (the calibration's request overhead) is added to TTFT and E2E, as for every serving
row. The row's input_len/output_len must agree with the command's mean lengths (within 1 % + 1 token): a row whose
columns and command disagree is refused with both values.
"""
from __future__ import annotations

import numpy as np

from ..bench.replay import replay
from ..bench.report import duration
from ..bench.tools import TRTLLM_TOOLS, parse_load
from ..bench.trtllm import runtime_for
from ..deploy.bands import PERCENTILES
from ..deploy.deployment import Deployment
from ..step import contract as step


def _agree(name: str, stated, drawn) -> None:
    """A stated mean length agrees with the replay's draw within 1 % + 1 token, or three standard errors of the
    draw's mean where the command samples lengths (a row may state the distribution's mean, the replay draws
    its prompts)."""
    drawn = np.asarray(drawn, dtype=float)
    replayed = float(drawn.mean())
    tol = max(0.01 * stated + 1, 3.0 * float(drawn.std()) / np.sqrt(drawn.size)) if stated is not None else 0.0
    if stated is not None and abs(replayed - stated) > tol:
        raise ValueError(f"{name}={stated:g} disagrees with the bench_command's mean {replayed:g} tokens; allowed: "
                         f"the command's lengths or a blank {name}")


def predict_replayed(dep: Deployment, command: str, input_len, output_len, front_end_ms: float) -> dict:
    """{metric: value} of the replayed benchmark (module docstring); one-line ValueErrors."""
    proto = parse_load(command)
    rt = runtime_for(dep, proto) if proto.tool in TRTLLM_TOOLS else None
    out = replay(dep, proto, rt)
    w, c = proto.report.get("warmup", 0), proto.report.get("cooldown", 0)
    keep = slice(w, out.outputs.size - c)
    s, f, e = out.send_s[keep], out.first_s[keep], out.finish_s[keep]
    ins, N = out.inputs[keep].astype(float), out.outputs[keep].astype(float)
    _agree("input_len", input_len, ins)
    _agree("output_len", output_len, N)
    D = duration(out)
    bound = step.decode(dep, max(1.0, float((e - s).sum()) / D), float(ins.mean() + N.mean() / 2)).bound
    gen = N > 1
    tpot = (e[gen] - f[gen]) / (N[gen] - 1)
    values = {"ttft_ms": (f - s) * 1e3 + front_end_ms, "tpot_ms": tpot * 1e3, "itl_ms": out.itl_s * 1e3,
              "e2e_ms": (e - s) * 1e3 + front_end_ms}
    res = {"output_tok_s": N.sum() / D, "output_tok_s_per_gpu": N.sum() / D / dep.par.num_gpus,
           "total_tok_s": (ins.sum() + N.sum()) / D, "requests_per_s": N.size / D,
           "tok_s_per_user": 1e3 / float(np.mean(tpot * 1e3)) if tpot.size else None,
           "_bound_decode": str(bound), "_bound_prefill": "compute"}
    for metric, x in values.items():
        if x.size:
            res[metric] = float(np.mean(x))
            for p in PERCENTILES:
                res[f"{metric}_{p}"] = float(np.percentile(x, float(p[1:])))
    return {k: v for k, v in res.items() if v is not None}
