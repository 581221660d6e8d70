"""The closed-loop accuracy work of issue 19: the KV-cache format a quantized checkpoint is served with
(deploy/checkpoint.py ``KV_AUTO_SOURCE``: the engines' ``--kv-cache-dtype auto`` is the model's dtype),
what it does to the closed loop's KV cap (workloads/closed_loop.py ``kv_running_cap``), and the per-row
breakdown benchmarks/serving_targets.py prints (grouped errors). Every expected value is worked out here
by hand from the rule it checks.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from inferbound import make_deployment
from inferbound.deploy.memory import sequence_kv_bytes
from inferbound.workloads.closed_loop import kv_running_cap

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from serving_targets import concurrency_class, group_errors, metric_class  # noqa: E402

LLAMA_8B = dict(model_type="llama", num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                num_key_value_heads=8, intermediate_size=14336, vocab_size=128256, torch_dtype="bfloat16")
#: DeepSeek-V3's own fp8 block quantization (its config.json): W8A8 with dynamic activations, no KV scheme
FP8_BLOCK = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
             "weight_block_size": [128, 128]}
#: a ModelOpt FP8 checkpoint that states its FP8 KV cache
MODELOPT_FP8_KV = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}


def _dep(qcfg, **kw):
    return make_deployment(model={**LLAMA_8B, "quantization_config": qcfg}, gpu="h100_sxm", **kw)


def test_checkpoint_without_kv_scheme_keeps_a_16_bit_cache():
    """fp8 weights and fp8 activations, but --kv-cache-dtype auto = the model dtype (bf16), as vLLM, SGLang
    and TensorRT-LLM default; the note says so and how to get an fp8 cache."""
    d = _dep(FP8_BLOCK)
    assert (d.dtypes.weight, d.dtypes.act, d.dtypes.kv_dtype) == ("fp8", "fp8", "bf16")
    (note,) = [n for n in d.warnings if n.startswith("KV cache bf16")]
    assert "kv_cache_quant_algo" in note and "--kv-dtype fp8" in note


def test_stated_kv_scheme_and_explicit_kv_dtype_win():
    assert _dep(MODELOPT_FP8_KV).dtypes.kv_dtype == "fp8"  # the checkpoint's kv_cache_quant_algo
    assert _dep(FP8_BLOCK, kv_dtype="fp8").dtypes.kv_dtype == "fp8"  # --kv-dtype
    # --weight-dtype fp8 on a bf16 checkpoint: unchanged, the KV follows the fp8 activations (config.Dtypes)
    assert make_deployment(model=LLAMA_8B, gpu="h100_sxm", weight_dtype="fp8").dtypes.kv_dtype == "fp8"


def test_kv_bytes_and_the_closed_loop_cap_follow_the_kv_format():
    """Llama-3.1-8B: KV per token = 2 (K, V) x 32 layers x 8 heads x 128 x 2 bytes = 131,072 B in bf16,
    65,536 B in fp8. A client at I + O − 1 = 1024 + 1024 − 1 = 2047 tokens holds ceil(2047/16) = 128 blocks
    of 16 = 2048 tokens: 268,435,456 B (bf16) or 134,217,728 B (fp8), so the fp8 cache holds twice the
    clients of the same bytes (K_kv = capacity // per-client bytes)."""
    bf16, fp8 = _dep(FP8_BLOCK), _dep(FP8_BLOCK, kv_dtype="fp8")
    rt16, rt8 = bf16.runtime, fp8.runtime
    assert rt16.block_size == rt8.block_size == 16
    held = math.ceil(2047 / 16) * 16
    assert held == 2048
    assert float(sequence_kv_bytes(bf16, 1, held, rt16)) == pytest.approx(2048 * 131072)
    assert float(sequence_kv_bytes(fp8, 1, held, rt8)) == pytest.approx(2048 * 65536)
    k16, k8 = kv_running_cap(bf16, rt16, 1024, 1024), kv_running_cap(fp8, rt8, 1024, 1024)
    # same weights (the KV format changes no weight byte), so the same KV bytes: K_kv doubles within a client
    assert k8 in (2 * k16, 2 * k16 + 1)


@dataclass
class _Row:
    metric: str
    concurrency: int | None = None


@dataclass
class _Pred:
    row: _Row
    predicted: float | None
    measured: float

    @property
    def covered(self):
        return self.predicted is not None

    @property
    def error(self):
        return None if self.predicted is None else (self.predicted - self.measured) / self.measured


def test_group_errors_by_hand():
    """Errors e = (p − m)/m: a: −0.5 (50 vs 100) and +0.2 (120 vs 100); b: −0.1 (90 vs 100); one row not
    covered. Group a: MAPE (0.5 + 0.2)/2 = 0.35, signed median (−0.5 + 0.2)/2 = −0.15, share 0.7/0.8;
    group b: MAPE 0.1, median −0.1, share 0.1/0.8. Sorted by share, a first."""
    preds = [_Pred(_Row("ttft_ms", 4), 50, 100), _Pred(_Row("ttft_ms", 128), 120, 100),
             _Pred(_Row("tpot_ms", 4), 90, 100), _Pred(_Row("tpot_ms", 4), None, 100)]
    groups = group_errors(preds, lambda p: p.row.metric)
    assert [g["group"] for g in groups] == ["ttft_ms", "tpot_ms"]
    a, b = groups
    assert (a["n"], a["mape"], a["signed_median"], a["share"]) == (2, pytest.approx(0.35), pytest.approx(-0.15),
                                                                   pytest.approx(0.7 / 0.8))
    assert (b["n"], b["mape"], b["signed_median"], b["share"]) == (1, pytest.approx(0.1), pytest.approx(-0.1),
                                                                   pytest.approx(0.1 / 0.8))


def test_classes():
    assert [concurrency_class(n) for n in (None, 1, 3, 16, 17, 128, 512)] == \
        ["open loop", "<= 1", "<= 4", "<= 16", "<= 64", "<= 256", "> 256"]
    assert [metric_class(m) for m in ("ttft_ms", "itl_ms_p50", "ttft_ms_p99", "output_tok_s")] == \
        ["ttft", "itl", "tail", "throughput"]
