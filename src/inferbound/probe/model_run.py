"""A real Llama-style decoder in PyTorch with random weights, and its timed prefill and decode steps.

Architecture (HF transformers ``modeling_llama.py``; Touvron et al. 2023, "LLaMA"), per layer::

    a   = RMSNorm(x);  q, k, v = split(W_qkv · a);  q, k = RoPE(q), RoPE(k)
    x   = x + W_o · softmax(q·kᵀ/√d_head + causal mask) · v          (GQA: n_kv K/V heads, each shared
    b   = RMSNorm(x);  x = x + W_down · (SiLU(W_gate · b) ⊙ W_up · b)   by n_h/n_kv query heads)

RMSNorm(x) = x / √(mean(x²) + ε) · g (Zhang & Sennrich 2019); RoPE (Su et al. 2021, "RoFormer") with
θ = 10000 (the value changes no work); GQA (Ainslie et al. 2023). The embedding, a final RMSNorm
and the LM head (tied to the embedding when the config says so) close the model. Weights are random
normal with std 0.02 (LlamaConfig's ``initializer_range`` default): timing does not depend on values.

KV cache: per layer a tensor [B, n_kv, L_max, d_head] for K and one for V. A decode step writes the
new token's K, V at position L and attends over positions 0..L, reading 2·n_kv·d_head·(L+1) values
per layer and sequence — the KV bytes the predictor charges. Without the cache (``decode_no_cache``)
step j recomputes the whole prefix of S + j tokens, as ``estimate.no_kv_cache_decode_time`` assumes.
Decode steps at a long context start from a cache filled with random values instead of a prefill
(a step's work does not depend on the values). Logits are computed for the last token of each
sequence only and the next token is their argmax (greedy sampling).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..model import ModelSpec, load_model
from .device import TORCH_DTYPES, synchronize, time_calls

#: std of the random weights: LlamaConfig.initializer_range default (HF transformers)
INIT_STD = 0.02
#: RoPE base: LlamaConfig.rope_theta default (HF transformers); any value does the same work
ROPE_THETA = 10000.0
#: RMSNorm epsilon: LlamaConfig.rms_norm_eps default (HF transformers)
RMS_EPS = 1e-6
SUPPORTED = "dense Llama-style decoders (gated MLP, RMSNorm, full attention, no MoE, no MLA)"


def check_supported(m: ModelSpec) -> None:
    """ValueError naming the first architecture field the probe's PyTorch decoder does not build."""
    checks = (("moe", m.moe is not None, "set"), ("mla", m.mla is not None, "set"),
              ("gated_mlp", not m.gated_mlp, m.gated_mlp), ("layernorm_bias", m.layernorm_bias, True),
              ("parallel_attention", m.parallel_attention, True),
              ("learned_positions", m.learned_positions > 0, m.learned_positions),
              ("norms_per_layer", m.norms_per_layer != 2, m.norms_per_layer),
              ("layers.attention", any(g.attention != "full" for g in m.layers),
               ",".join(sorted({g.attention for g in m.layers}))))
    for field, bad, value in checks:
        if bad:
            raise ValueError(f"model {m.name}: {field}={value!r} is not supported by probe; allowed: {SUPPORTED}")


@dataclass
class Layer:
    ln1: torch.Tensor
    wqkv: torch.Tensor
    bqkv: torch.Tensor | None
    wo: torch.Tensor
    bo: torch.Tensor | None
    ln2: torch.Tensor
    wgu: torch.Tensor            # gate and up projections stacked: [2·ff, d]
    bgu: torch.Tensor | None
    wdown: torch.Tensor
    bdown: torch.Tensor | None


class KVCache:
    """Per-layer K and V tensors [B, n_kv, max_len, d_head]."""

    def __init__(self, m: ModelSpec, batch: int, max_len: int, dtype: torch.dtype, device: str):
        shape = (batch, m.num_kv_heads, max_len, m.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(m.num_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(m.num_layers)]

    def fill_random(self, length: int, tile: int = 256) -> None:
        """Values in positions 0..length-1 standing in for a prefill of ``length`` tokens: uniform random
        in the first ``tile`` positions, repeated after (a copy is far cheaper than drawing every value)."""
        for t in self.k + self.v:
            head = t[:, :, :min(length, tile)].uniform_(-1.0, 1.0)
            for start in range(tile, length, tile):
                n = min(tile, length - start)
                t[:, :, start:start + n] = head[:, :, :n]


class TorchDecoder:
    """The decoder of ``m`` in PyTorch (see module docstring), random weights, ``dtype`` on ``device``."""

    def __init__(self, m: ModelSpec, dtype: str = "fp32", device: str = "cpu", seed: int = 0):
        check_supported(m)
        self.m, self.device, self.dtype = m, device, TORCH_DTYPES[dtype]
        self._gen = torch.Generator(device=device).manual_seed(seed)   # local: no global RNG side effect
        d, hd, ff = m.hidden_size, m.head_dim, m.intermediate_size
        qkv = (m.num_heads + 2 * m.num_kv_heads) * hd

        def w(*shape: int) -> torch.Tensor:
            return torch.empty(*shape, dtype=self.dtype, device=device).normal_(0.0, INIT_STD, generator=self._gen)

        def ones(n: int) -> torch.Tensor:
            return torch.ones(n, dtype=self.dtype, device=device)

        def bias(n: int, on: bool) -> torch.Tensor | None:
            return torch.zeros(n, dtype=self.dtype, device=device) if on else None

        self.embed = w(m.vocab_size, d)
        self.layers = [Layer(ones(d), w(qkv, d), bias(qkv, m.qkv_bias), w(d, m.num_heads * hd), bias(d, m.out_bias),
                             ones(d), w(2 * ff, d), bias(2 * ff, m.mlp_bias), w(d, ff), bias(d, m.mlp_bias))
                       for _ in range(m.num_layers)]
        self.norm = ones(d)
        self.lm_head = self.embed if m.tie_embeddings else w(m.vocab_size, d)
        self._rope_len = 0

    @property
    def num_params(self) -> int:
        """Parameters held (the tied LM head counted once)."""
        tensors = [self.embed, self.norm] + ([] if self.m.tie_embeddings else [self.lm_head])
        tensors += [t for layer in self.layers for t in vars(layer).values() if t is not None]
        return sum(t.numel() for t in tensors)

    def new_cache(self, batch: int, max_len: int) -> KVCache:
        return KVCache(self.m, batch, max_len, self.dtype, self.device)

    def _rope(self, length: int) -> None:
        """cos/sin tables for positions 0..length-1 (HF rotate-half convention)."""
        if length <= self._rope_len:
            return
        hd = self.m.head_dim
        inv = 1.0 / (ROPE_THETA ** (torch.arange(0, hd, 2, device=self.device, dtype=torch.float32) / hd))
        freqs = torch.outer(torch.arange(length, device=self.device, dtype=torch.float32), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self._cos, self._sin, self._rope_len = emb.cos().to(self.dtype), emb.sin().to(self.dtype), length

    def _rms(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * g

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def forward(self, ids: torch.Tensor, pos: int = 0, cache: KVCache | None = None) -> torch.Tensor:
        """Logits [B, vocab] of the last token of each sequence; ``ids`` [B, T] start at position ``pos``.

        With ``cache`` the new K, V are written at pos..pos+T-1 and attention reads positions 0..pos+T-1;
        T > 1 is allowed only at pos = 0 (a prefill) or without a cache.
        """
        m = self.m
        b, t = ids.shape
        if t > 1 and pos > 0:
            raise ValueError(f"pos={pos} with {t} new tokens: chunked steps are not supported; allowed: pos=0 or 1 token")
        h, kv, hd, ff = m.num_heads, m.num_kv_heads, m.head_dim, m.intermediate_size
        self._rope(pos + t)
        cos, sin = self._cos[pos:pos + t], self._sin[pos:pos + t]
        x = F.embedding(ids, self.embed)
        for i, layer in enumerate(self.layers):
            qkv = F.linear(self._rms(x, layer.ln1), layer.wqkv, layer.bqkv)
            q, k, v = qkv.split((h * hd, kv * hd, kv * hd), dim=-1)
            q = self._rotate(q.view(b, t, h, hd).transpose(1, 2), cos, sin)
            k = self._rotate(k.view(b, t, kv, hd).transpose(1, 2), cos, sin)
            v = v.view(b, t, kv, hd).transpose(1, 2)
            if cache is not None:
                cache.k[i][:, :, pos:pos + t] = k
                cache.v[i][:, :, pos:pos + t] = v
                k, v = cache.k[i][:, :, :pos + t], cache.v[i][:, :, :pos + t]
            a = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1, enable_gqa=kv != h)
            x = x + F.linear(a.transpose(1, 2).reshape(b, t, h * hd), layer.wo, layer.bo)
            gate, up = F.linear(self._rms(x, layer.ln2), layer.wgu, layer.bgu).split((ff, ff), dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer.wdown, layer.bdown)
        return F.linear(self._rms(x[:, -1], self.norm), self.lm_head)

    def random_ids(self, batch: int, length: int) -> torch.Tensor:
        return torch.randint(0, self.m.vocab_size, (batch, length), device=self.device, generator=self._gen)


@torch.inference_mode()
def prefill(dec: TorchDecoder, batch: int, seq: int, repeats: int, warmup: int = 1,
            decode_steps: int = 0) -> tuple[list[float], list[float]]:
    """Seconds of each timed prefill of ``batch`` x ``seq`` tokens, then of each of ``decode_steps``
    decode steps continuing from the prefilled cache (contexts seq .. seq+decode_steps-1)."""
    ids = dec.random_ids(batch, seq)
    cache = dec.new_cache(batch, seq + decode_steps + 1)
    last: list[torch.Tensor] = []
    pre = time_calls(lambda: last.append(dec.forward(ids, 0, cache)), repeats, warmup, dec.device)
    return pre, _steps(dec, cache, last[-1].argmax(-1, keepdim=True), seq, decode_steps)


def _steps(dec: TorchDecoder, cache: KVCache, token: torch.Tensor, context: int, steps: int,
           warmup: int = 1) -> list[float]:
    """Time ``steps`` greedy decode steps from ``context`` cached tokens (warm-up steps rewrite position
    ``context`` and are untimed)."""
    for _ in range(warmup if steps else 0):
        dec.forward(token, context, cache)
    out = []
    for j in range(steps):
        synchronize(dec.device)
        t0 = time.perf_counter()
        token = dec.forward(token, context + j, cache).argmax(-1, keepdim=True)
        synchronize(dec.device)
        out.append(time.perf_counter() - t0)
    return out


@torch.inference_mode()
def decode(dec: TorchDecoder, batch: int, context: int, steps: int, warmup: int = 1) -> list[float]:
    """Seconds of each of ``steps`` KV-cached decode steps of ``batch`` sequences after ``context``
    cached tokens (random cache contents, see module docstring)."""
    cache = dec.new_cache(batch, context + steps + 1)
    cache.fill_random(context)
    return _steps(dec, cache, dec.random_ids(batch, 1), context, steps, warmup)


@torch.inference_mode()
def decode_no_cache(dec: TorchDecoder, batch: int, context: int, steps: int) -> list[float]:
    """Seconds of each of ``steps`` decode steps without a KV cache: step j (1..steps) runs the whole
    prefix of context + j tokens and keeps the last token's argmax."""
    ids = dec.random_ids(batch, context)
    out = []
    for _ in range(steps):
        nxt = dec.random_ids(batch, 1)
        synchronize(dec.device)
        t0 = time.perf_counter()
        ids = torch.cat((ids, nxt), dim=1)
        nxt = dec.forward(ids).argmax(-1, keepdim=True)
        synchronize(dec.device)
        out.append(time.perf_counter() - t0)
    return out


#: config of the overhead probe: a decoder so small that its step time is all dispatch (64-wide
#: matrices take well under a microsecond); the layer counts bracket the per-layer cost
TINY_CONFIG = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
               "intermediate_size": 128, "vocab_size": 256, "tie_word_embeddings": True}
OVERHEAD_LAYERS = (1, 9)
OVERHEAD_STEPS, OVERHEAD_CONTEXT = 25, 16


def step_overheads(device: str, dtype: str) -> dict:
    """Best decode-step seconds of the tiny decoder at each of OVERHEAD_LAYERS layer counts (batch 1,
    context OVERHEAD_CONTEXT; best of OVERHEAD_STEPS, the microbenchmarks' convention for a fixed cost);
    the hardware entry derives per-operator and per-step overheads from them."""
    times = {}
    for n in OVERHEAD_LAYERS:
        m = load_model({**TINY_CONFIG, "num_hidden_layers": n, "_name_or_path": f"probe-tiny-{n}"})
        dec = TorchDecoder(m, dtype, device)
        times[n] = min(decode(dec, 1, OVERHEAD_CONTEXT, OVERHEAD_STEPS, warmup=5))
    return {"layers": list(OVERHEAD_LAYERS), "step_s": [times[n] for n in OVERHEAD_LAYERS],
            "config": dict(TINY_CONFIG)}
