"""Other estimators on the same measured rows, for benchmarks/accuracy_report.py (benchmarks only: never
a dependency of the package).

- llm-analysis (``pip install --no-deps llm-analysis fire six`` in .venv): a static-batch roofline with
  its own GPU table (A100, H100, ...). Each row's model is described to it by its dimensions (layers,
  heads, KV heads, hidden, MLP, vocab: architecture data from inferbound's model configs), its defaults
  for efficiency (1.0 of peak) and dtypes w16a16e16 / w8a8e16 (fp8 and int8 run at 8 bits, int4 as
  w4a16e16). Static rows at the row's batch; max-throughput rows at the largest batch whose weights, KV
  cache and activations fit the GPU by llm-analysis's own memory figures (it has no scheduler). Dense
  models only (llm-analysis models no experts).
- NVIDIA AIConfigurator 0.12.0 (SILICON mode): read from benchmarks/data/aiconfigurator_public.csv, which
  benchmarks/aiconfigurator_compare.py writes in the fit environment.
"""
from __future__ import annotations

import csv
import logging
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AIC_CSV = ROOT / "benchmarks" / "data" / "aiconfigurator_public.csv"
LA_GPUS = {"a100_80gb_sxm": "a100-sxm-80gb", "a100_40gb_sxm": "a100-sxm-40gb", "h100_sxm": "h100-sxm-80gb",
           "h100_pcie": "h100-pcie-80gb", "a100_80gb_pcie": "a100-pcie-80gb"}
LA_DTYPES = {"bf16": "w16a16e16", "fp16": "w16a16e16", "fp8": "w8a8e16", "int8": "w8a8e16", "int4": "w4a16e16"}


def aiconfigurator_predictions(path: Path = AIC_CSV) -> dict:
    """{(case, metric): predicted} of the rows AIConfigurator covers (empty if the file is absent)."""
    if not path.is_file():
        return {}
    with path.open() as f:
        return {(r["case"], r["metric"]): float(r["predicted"]) for r in csv.DictReader(f) if r["predicted"]}


@lru_cache(maxsize=None)
def _la_model(model_id: str):
    from llm_analysis.config import ModelConfig
    from inferbound.model import load_model
    m = load_model(model_id)
    if m.moe is not None or m.mla is not None or m.ssm is not None:
        return None
    # llm-analysis counts an MLP as 2·d·ffn (ungated): a gated MLP of width I is ffn = 1.5·I
    ffn = m.intermediate_size * (1.5 if m.gated_mlp else 1.0)
    return ModelConfig(name=model_id, num_layers=m.num_layers, n_head=m.num_heads, hidden_dim=m.hidden_size,
                       vocab_size=m.vocab_size, max_seq_len=m.max_position_embeddings or 4096,
                       num_key_value_heads=m.num_kv_heads,
                       ffn_embed_dim=int(ffn), expansion_ratio=ffn / m.hidden_size)


def llm_analysis_prediction(row) -> float | None:
    """llm-analysis's value of ``row.metric`` for a static or max-throughput row, None if not covered."""
    try:
        from llm_analysis.analysis import LLMAnalysis
        from llm_analysis.config import ParallelismConfig, get_dtype_config_by_name, get_gpu_config_by_name
    except ImportError:
        return None
    logging.getLogger().setLevel(logging.ERROR)
    gpu = LA_GPUS.get(row.gpu)
    dt = LA_DTYPES.get(row.weight_dtype or "bf16")
    if gpu is None or dt is None or row.scenario not in ("static_batch", "max_throughput") or row.pp > 1:
        return None
    try:
        mc = _la_model(row.model)
    except (ValueError, KeyError):
        return None
    if mc is None:
        return None
    gc, dc = get_gpu_config_by_name(gpu), get_dtype_config_by_name(dt)
    par = ParallelismConfig(tp_size=row.tp)

    def run(batch):
        return LLMAnalysis(mc, gc, dc, par).inference(batch_size_per_gpu=batch, seq_len=max(row.input_len, 1),
                                                      num_tokens_to_generate=row.output_len)
    try:
        if row.scenario == "static_batch":
            batch = row.batch_size
            r = run(batch)
        else:
            mem = gc.mem_per_GPU_in_GB * 1e9
            best, batch, b = None, 0, 1
            while b <= 8192:
                r = run(b)
                used = (r["weight_memory_per_gpu"] + r["kv_cache_memory_per_gpu"] + r["prefill_activation_memory_per_gpu"])
                if used > mem:
                    break
                best, batch, b = r, b, b * 2
            if best is None:
                return None
            r = best
    except Exception:  # noqa: BLE001  (a baseline that cannot price a row does not cover it)
        return None
    dp = max(1, row.num_gpus // (row.tp * row.pp))
    out_s = batch * row.output_len / r["total_latency"] * dp
    values = {"output_tok_s": out_s, "output_tok_s_per_gpu": out_s / row.num_gpus,
              "total_tok_s": out_s * (row.input_len + row.output_len) / max(row.output_len, 1),
              "requests_per_s": out_s / max(row.output_len, 1), "ttft_ms": r["prefill_latency"] * 1e3,
              "itl_ms": r["decode_latency"] * 1e3, "tpot_ms": r["decode_latency"] * 1e3,
              "tok_s_per_user": 1 / r["decode_latency"], "e2e_ms": r["total_latency"] * 1e3}
    return values.get(row.metric)
