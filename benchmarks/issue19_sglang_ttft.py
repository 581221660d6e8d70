"""Issue 19: why TTFT on SGLang 0.5.7 (InferenceX issue 870 rows) is predicted 3-4x too short.

Prints, for every ``p-infx870`` TTFT row of benchmarks/data/measured_public.csv (ms, means over requests;
the front end ``request_overhead_s`` of the calibration, ``fe``, added where the validation adds it):

- ``pred``: the validation's prediction (validation/predict.py: lengths 0.9 x nominal are not whole, so
  workloads/serving.py treats arrivals as random, the steady state);
- ``lone``: one prompt of the row's mean length prefilled alone (``estimate`` batch 1) + fe: the floor;
- ``waves``: the closed loop's wave model (workloads/closed_loop.py) at the lengths rounded to whole
  tokens, with the InferenceX launch's ``--chunked-prefill-size 32768 --max-prefill-tokens 32768``
  (benchmarks/single_node/dsr1_fp8_h200.sh, InferenceX commit 8d81e0bf4, 2026-02-19): every client in
  lockstep, the upper end of what waves can do;
- ``sim``: the protocol replayed in the simulator: N clients, 10 N prompts, lengths uniform on
  [int(0.8 L), L] (InferenceX utils/bench_serving/benchmark_serving.py ``sample_uniform``), seed 0, B 32768.

Then the split of the measured TTFT at 4 clients into a part that scales with the prompt and one that does
not, from the 1k/8k and 8k/1k rows (same clients, TPOT 10.9 / 12.1 ms):

    slope = (TTFT_8k − TTFT_1k) / (I_8k − I_1k)        intercept = TTFT_1k − slope · I_1k

for the measurement and for ``lone``. Run: ``.venv/bin/python benchmarks/issue19_sglang_ttft.py``.
"""
from __future__ import annotations

from inferbound.deploy.deployment import make_deployment
from inferbound.sim import simulate
from inferbound.validation import predict as P
from inferbound.validation.dataset import read_csv
from inferbound.workloads.lengths import Mix
from inferbound.workloads.serving import serving

CSV = "benchmarks/data/measured_public.csv"
BUDGET = 32768  # --chunked-prefill-size / --max-prefill-tokens of the InferenceX launch (docstring)
RANGE_RATIO = 0.8  # --random-range-ratio of the rows (their notes)
NOMINAL = {922: 1024, 7373: 8192}  # 0.9 x nominal -> nominal (mean of uniform [0.8 L, L] is 0.9 L)


def _dep(row, budget: int | None):
    opts = P.row_engine_options(row)
    if budget:
        opts["token_budget"] = budget
    return make_deployment(model=row.model, gpu=row.gpu, num_gpus=row.num_gpus, tp=row.tp,
                           engine=P.row_engine(row), engine_options=opts)


def figures(row) -> dict[str, float]:
    """The four figures of the module docstring for one TTFT row, in ms."""
    dep = P.deployment_for(row)
    fe = P._front_end_ms(dep)
    i, o = int(round(row.input_len)), int(round(row.output_len))
    lone = P.estimate(dep, batch=1, input_len=i, output_len=2).ttft_s * 1e3 + fe
    big = _dep(row, BUDGET)
    waves = serving(big, concurrency=row.concurrency, lengths=Mix((1.0,), (float(i),), (float(o),)),
                    requests=row.num_requests).ttft_s["mean"] * 1e3 + fe
    li, lo = NOMINAL[i], NOMINAL[o]
    sim = simulate(big, requests=10 * row.concurrency, concurrency=row.concurrency, seed=0,
                   input_dist=f"uniform:{int(li * RANGE_RATIO)}:{li}",
                   output_dist=f"uniform:{int(lo * RANGE_RATIO)}:{lo}").summary
    return {"pred": P.predict_serving(dep, row)["ttft_ms"], "lone": lone, "waves": waves,
            "sim": sim["ttft_ms_mean"] + fe, "sim_p50": sim["ttft_ms_p50"] + fe, "fe": fe}


def main() -> None:
    rows, _ = read_csv(CSV)
    rows = [r for r in rows if r.case.startswith("p-infx870") and r.metric == "ttft_ms"]
    print(f"engine profile: {P.deployment_for(rows[0]).runtime.label}")
    print("| case | N | I/O | measured | pred | lone | waves | sim mean | sim p50 | measured − lone |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    at4 = {}
    for r in rows:
        f = figures(r)
        print(f"| {r.case} | {r.concurrency} | {r.input_len:g}/{r.output_len:g} | {r.value:.0f} | {f['pred']:.0f} "
              f"| {f['lone']:.0f} | {f['waves']:.0f} | {f['sim']:.0f} | {f['sim_p50']:.0f} | {r.value - f['lone']:.0f} |")
        if r.concurrency == 4:
            at4[r.input_len] = (r.value, f["lone"])
    if len(at4) == 2:
        (i1, (m1, l1)), (i8, (m8, l8)) = sorted(at4.items())
        for name, a, b in (("measured", m1, m8), ("lone prefill", l1, l8)):
            slope = (b - a) / (i8 - i1)
            print(f"N=4 {name}: slope {slope * 1e3:.1f} us/token, intercept {a - slope * i1:.0f} ms")


if __name__ == "__main__":
    main()
