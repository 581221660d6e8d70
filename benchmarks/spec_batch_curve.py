"""Speculative decoding's speed-up against batch (docs/features/speculative.md), offline.

Speed-up at a batch B = τ·t_decode(B) / t_step(B) (tok/s with speculation over tok/s without, the same B,
step/speculative.step_cost), for the published points' settings, with the verify pass read as a decode
(step/speculative.verify_load) and, for comparison, as the prefill-attention chunk it was priced as before
issue 20 (prefill_verify_load). Prints a Markdown table.

    .venv/bin/python benchmarks/spec_batch_curve.py
"""
from __future__ import annotations

from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.speculative import drafter_of
from inferbound.step import contract as C
from inferbound.step import speculative as S

BATCHES = (1, 8, 32, 64, 128, 148, 256)

#: (label, deployment keywords, context, published speed-ups {batch: x} with their source)
CASES = (
    ("Llama-3.1-8B EAGLE k=3 a=0.6, 1x H100, vLLM", dict(model="llama-3.1-8b", gpu="h100_sxm", engine_options=dict(
        speculative="eagle", spec_tokens=3, acceptance=0.6)), 600.0, {128: "1.29-1.30"}),
    ("Llama-3.1-8B EAGLE k=3 vLLM rate 0.418, 1x H100", dict(model="llama-3.1-8b", gpu="h100_sxm", engine_options=dict(
        speculative="eagle", spec_tokens=3, acceptance_rate=0.418)), 600.0, {1: "1.80"}),
    ("Llama-3.1-8B EAGLE k=3 a=0.418 (the rate misread)", dict(model="llama-3.1-8b", gpu="h100_sxm",
        engine_options=dict(speculative="eagle", spec_tokens=3, acceptance=0.418)), 600.0, {1: "1.80"}),
    ("Llama-3.1-8B ngram k=3 a=0.6 m=0.3, 1x H100", dict(model="llama-3.1-8b", gpu="h100_sxm", engine_options=dict(
        speculative="ngram", spec_tokens=3, acceptance=0.6, spec_match_rate=0.3)), 600.0, {64: "1.20", 128: "1.11"}),
    ("Llama-3.1-8B ngram k=3 a=0.6 m=1", dict(model="llama-3.1-8b", gpu="h100_sxm", engine_options=dict(
        speculative="ngram", spec_tokens=3, acceptance=0.6)), 600.0, {64: "1.20", 128: "1.11"}),
    ("DeepSeek-V3 MTP k=1 accept length 1.8, 8x H200, SGLang", dict(
        model="deepseek-ai/DeepSeek-V3", gpu="h200_sxm", tp=8, engine="sglang",
        engine_options=dict(speculative="mtp", spec_tokens=1, accept_length=1.8)), 1500.0, {1: "1.8", 32: "1.5"}),
)


def old_step(dep, batch, context):
    """t_step with the verify pass priced as a prefill chunk (before issue 20), the draft's passes the same."""
    dr = drafter_of(dep)
    k = dr.spec.k
    cost = S.with_verify_host(dep, C.price(dep, S.prefill_verify_load(dep.model, batch, context, k)), batch, k)
    if dr.model is not None:
        dl = C.uniform(dr.model, decode=batch, context=context)
        cost = C.add_work(cost, S.draft_cost(dr, lambda ld: C.price(dr.deployment, ld), dl, batch))
    if dr.spec.match < 1:
        plain = C.decode(dep, batch, context)
        cost = C.add_work(C.scale_cost(cost, dr.spec.match), C.scale_cost(plain, 1 - dr.spec.match))
    return float(cost.time)


def main() -> None:
    print("| setting | batch | τ | t_decode ms | t_step ms | speed-up | before issue 20 | published |")
    print("|---|---|---|---|---|---|---|---|")
    for label, kw, ctx, pub in CASES:
        dep = make_deployment(**kw)
        for b in BATCHES:
            cost, tau = S.step_cost(dep, b, ctx)
            t_d, t_s = float(C.decode(dep, b, ctx).time), float(cost.time)
            print(f"| {label} | {b} | {tau:.3f} | {t_d * 1e3:.2f} | {t_s * 1e3:.2f} | {tau * t_d / t_s:.2f}x | "
                  f"{tau * t_d / old_step(dep, b, ctx):.2f}x | {pub.get(b, '')} |")
        cross = S.crossover_batch(dep, ctx)
        print(f"| {label}: stops paying from batch | {'never (<=4096)' if cross is None else cross} | | | | | | |")


if __name__ == "__main__":
    main()
