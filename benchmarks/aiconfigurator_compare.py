"""NVIDIA AIConfigurator's predictions for the public measured rows it covers (side-by-side baseline).

Runs in the offline fit environment, never in the project's venv (AIConfigurator is a benchmark, not a
dependency)::

    /work/fitenv/bin/pip install --no-deps aiconfigurator==0.12.0     # + pandas jinja2 prettytable munch tqdm
    /work/fitenv/bin/python benchmarks/aiconfigurator_compare.py [CSV] [--out FILE]

For every row of ``benchmarks/data/measured_public.csv`` (default) whose GPU, model and scenario
AIConfigurator 0.12.0 covers, it calls ``aiconfigurator.cli.api.cli_estimate`` in SILICON mode (its
measured kernel database, TensorRT-LLM 1.3.0rc20 / vLLM 0.24 / SGLang 0.5.14 tables) with the row's
layout (TP, EP; attention data parallel where the row's notes say DEP), formats and lengths:

- static_batch rows: ``mode="static"`` at the row's batch;
- max_throughput rows: ``mode="agg"`` at the largest batch per rank (up to 4096) whose memory per GPU
  fits 95 % of the GPU's HBM (memory is linear in the batch: batches 16 and 32 give its slope), the
  best of the batches tried being AIConfigurator's maximum throughput;
- serving rows: not covered (no arrival-rate model in its estimate mode).

It writes ``benchmarks/data/aiconfigurator_public.csv`` (case, metric, predicted, note), which
benchmarks/accuracy_report.py reads. Model ids map to the architecture AIConfigurator ships a config for
(MODELS below); a row outside that map, or whose estimate raises, is written with the reason.
"""
from __future__ import annotations

import argparse
import csv
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SYSTEMS = {"h100_sxm": "h100_sxm", "h200_sxm": "h200_sxm", "b200_hgx": "b200_sxm", "gb200_nvl72": "gb200",
           "a100_80gb_sxm": "a100_sxm", "l40s": "l40s", "b300_hgx": "b300_sxm", "gb300_nvl72": "gb300"}
MODELS = [("Llama-3.3-70B", "meta-llama/Meta-Llama-3.1-70B"), ("Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B"),
          ("Llama-3-70B", "meta-llama/Meta-Llama-3.1-70B"), ("Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B"),
          ("Llama-3.1-405B", "meta-llama/Meta-Llama-3.1-405B"),
          ("Llama-4-Maverick", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
          ("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B"), ("Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B"),
          ("DeepSeek-R1", "deepseek-ai/DeepSeek-R1"), ("gpt-oss-120b", "openai/gpt-oss-120b"),
          ("gpt-oss-20b", "openai/gpt-oss-20b"), ("Mixtral-8x7B", "mistralai/Mixtral-8x7B-v0.1")]
BATCHES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def aic_model(model: str) -> str | None:
    for key, path in MODELS:
        if key.lower() in model.lower():
            return path
    return None


def backend_of(framework: str) -> str:
    f = framework.lower()
    return "vllm" if "vllm" in f else ("sglang" if "sglang" in f else "trtllm")


def quant(row: dict, model_path: str, system: str) -> dict:
    w, a, kv = row["weight_dtype"], row["act_dtype"], row["kv_dtype"]
    blackwell = system.startswith(("b", "gb"))
    out = {}
    if "gpt-oss" in model_path:
        out["moe_quant_mode"] = "w4a8_mxfp4_mxfp8" if blackwell else "w4a16_mxfp4"
    elif "DeepSeek" in model_path and w == "fp8":
        out["gemm_quant_mode"], out["moe_quant_mode"] = "fp8_block", "fp8_block"
    elif w == "fp8":
        out["gemm_quant_mode"], out["moe_quant_mode"] = "fp8", "fp8"
    elif w == "fp4":
        out["gemm_quant_mode"], out["moe_quant_mode"] = "nvfp4", "nvfp4"
    kvq = kv or ("fp8" if (a or w) in ("fp8", "fp4") else "")
    if kvq in ("fp8", "bf16"):
        out["kvcache_quant_mode"] = "fp8" if kvq == "fp8" else "bfloat16"
    return out


def layout(row: dict) -> dict:
    n, tp, ep = int(row["num_gpus"]), int(row["tp"] or row["num_gpus"]), int(row["ep"] or 1)
    if "DEP" in (row.get("notes") or "") or "enable_attention_dp true" in (row.get("notes") or ""):
        return {"tp_size": 1, "attention_dp_size": n, "moe_ep_size": n}
    return {"tp_size": tp, "moe_ep_size": ep if ep > 1 else None}


def max_throughput(cli_estimate, kw: dict, cap_gb: float):
    """The agg estimate at the largest batch whose memory per GPU fits ``cap_gb`` (memory is linear in the
    batch: two small batches give its slope), or the best of the batches tried; None if none fits."""
    tried = []

    def run(bs):
        try:
            res = cli_estimate(mode="agg", batch_size=int(bs), **kw).raw
        except RuntimeError as e:  # its own memory check
            if "OOM" in str(e):
                return None
            raise
        if float(res["memory"]) > cap_gb:
            return None
        tried.append(res)
        return res
    a, b = run(BATCHES[0]), run(2 * BATCHES[0])
    if a is not None and b is not None:
        slope = (float(b["memory"]) - float(a["memory"])) / BATCHES[0]
        top = BATCHES[-1] if slope <= 0 else int((cap_gb - float(a["memory"])) / slope + BATCHES[0])
        top = max(2 * BATCHES[0], min(BATCHES[-1], top // 8 * 8))
        if run(top) is None:
            run(int(top * 0.8) // 8 * 8)
    return max(tried, key=lambda x: x["tokens/s"]) if tried else None


def value(raw: dict, metric: str, isl: int, osl: int):
    base = metric.split("_p50")[0].split("_p99")[0]
    table = {"output_tok_s": raw["tokens/s"], "output_tok_s_per_gpu": raw["tokens/s/gpu"], "requests_per_s": raw["seq/s"],
             "total_tok_s": raw["tokens/s"] * (isl + osl) / osl, "ttft_ms": raw["ttft"], "itl_ms": raw["tpot"],
             "tpot_ms": raw["tpot"], "e2e_ms": raw["request_latency"], "tok_s_per_user": raw["tokens/s/user"]}
    return float(table[base]) if base in table else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default=str(ROOT / "benchmarks" / "data" / "measured_public.csv"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "data" / "aiconfigurator_public.csv"))
    a = ap.parse_args()
    logging.disable(logging.WARNING)
    from aiconfigurator.cli.api import cli_estimate
    from inferbound.hardware import get_gpu
    rows = list(csv.DictReader(open(a.csv)))
    by_setup: dict = {}
    for r in rows:
        key = tuple(r[k] for k in ("source", "model", "gpu", "num_gpus", "tp", "ep", "weight_dtype", "act_dtype",
                                   "kv_dtype", "framework", "scenario", "batch_size", "input_len", "output_len"))
        by_setup.setdefault(key, []).append(r)
    out = []
    for i, group in enumerate(by_setup.values()):
        r = group[0]
        system, model = SYSTEMS.get(r["gpu"]), aic_model(r["model"])
        reason, raw = "", None
        if system is None or model is None or r["scenario"] not in ("static_batch", "max_throughput") \
                or not r["input_len"] or not r["output_len"]:
            reason = "not covered: " + ("GPU" if system is None else "model" if model is None else "scenario/lengths")
        else:
            isl, osl = int(r["input_len"]), int(r["output_len"])
            kw = dict(model_path=model, system_name=system, backend_name=backend_of(r["framework"]),
                      database_mode="SILICON", isl=isl, osl=osl, **layout(r), **quant(r, model, system))
            try:
                if r["scenario"] == "static_batch":
                    raw = cli_estimate(mode="static", batch_size=int(r["batch_size"]), **kw).raw
                else:
                    cap = get_gpu(r["gpu"]).hbm_bytes / 1e9 * 0.95
                    raw = max_throughput(cli_estimate, kw, cap)
                    reason = "" if raw is not None else "not covered: no batch fits memory"
            except Exception as e:  # noqa: BLE001  (a baseline's failure is recorded, not fatal)
                reason = f"not covered: {type(e).__name__}: {str(e)[:120]}"
        for g in group:
            v = None if raw is None else value(raw, g["metric"], int(g["input_len"] or 1), int(g["output_len"] or 1))
            out.append({"case": g["case"], "metric": g["metric"], "predicted": "" if v is None else f"{v:.6g}",
                        "note": reason if v is None and reason else ("" if v is not None else "metric not predicted")})
        print(f"{i + 1}/{len(by_setup)} {r['model']} {r['gpu']} {r['scenario']}: {reason or 'ok'}", flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case", "metric", "predicted", "note"])
        w.writeheader()
        w.writerows(out)
    print(f"wrote {a.out}: {sum(1 for o in out if o['predicted'])} of {len(out)} rows predicted")


if __name__ == "__main__":
    main()
