"""Issue 2 report: parameter counts against the published ones, KV bytes per token, and a sample
estimate with its per-phase bounds. Run: .venv/bin/python benchmarks/model_report.py"""
from __future__ import annotations

from inferbound import count_params, kv_bytes_per_token, load_model
from inferbound import estimate

# Published counts (model cards, as listed in shared/reference/models/README.md); "with_embedding"
# marks cards whose activated count includes the input embedding (Qwen, Llama 4, Mixtral).
PUBLISHED = [
    ("meta-llama/Llama-3.1-8B", "8.03", None, False), ("meta-llama/Llama-3.1-70B", "70.6", None, False),
    ("meta-llama/Llama-3.1-405B", "405", None, False), ("mistralai/Mixtral-8x7B-v0.1", "46.7", "12.9", True),
    ("mistralai/Mixtral-8x22B-v0.1", "141", "39", True), ("deepseek-ai/DeepSeek-V3", "671", "37", False),
    ("Qwen/Qwen3-30B-A3B", "30.5", "3.3", True), ("Qwen/Qwen3-235B-A22B", "235", "22", True),
    ("openai/gpt-oss-120b", "117", "5.1", False), ("openai/gpt-oss-20b", "21", "3.6", False),
    ("mistralai/Mistral-7B-v0.1", "7.24", None, False), ("meta-llama/Llama-2-7b-hf", "6.74", None, False),
    ("meta-llama/Llama-2-70b-hf", "69", None, False),
]


def main() -> None:
    print(f"{'model':42} {'total B':>9} {'published':>9} {'err':>7} {'active B':>9} {'published':>9} {'err':>7} "
          f"{'KV B/token bf16':>15}")
    for hf_id, total, active, with_emb in PUBLISHED:
        m = load_model(hf_id)
        p = count_params(m)
        act = p.active + (p.embedding if with_emb else 0)
        t_err = p.total / (float(total) * 1e9) - 1
        a_txt = f"{act / 1e9:9.2f} {active:>9} {act / (float(active) * 1e9) - 1:+7.1%}" if active else " " * 27
        print(f"{hf_id:42} {p.total / 1e9:9.2f} {total:>9} {t_err:+7.1%} {a_txt} {kv_bytes_per_token(m, 'bf16'):15,.0f}")
    e = estimate(model="llama-3.1-70b", gpu="h100_sxm", num_gpus=4, batch=64, input_len=2048, output_len=256,
                 calibration="none")
    print(f"\nLlama-3.1-70B on 4x H100 TP4, batch 64, 2048/256 (catalog priors): TTFT {e.ttft_s * 1e3:.0f} ms, "
          f"TPOT {e.tpot_s * 1e3:.1f} ms, {e.output_tok_s_per_gpu:.0f} tok/s/GPU")
    print(" ", e.prefill.explanation)
    print(" ", e.decode.explanation)


if __name__ == "__main__":
    main()
