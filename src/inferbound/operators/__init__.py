"""The work of one forward step, per GPU, per operator: FLOPs and bytes, nothing about time.

A step runs ``batch`` sequences that each add ``new`` tokens after ``past`` cached tokens:
prefill is new=S, past=0; decode is new=1, past=L; a chunk of chunked prefill is anything between.
With T = batch·new tokens in the step and TP degree t (Megatron sharding: heads and MLP columns split
t ways, KV heads split but replicated when t > n_kv; MLA's latent cache is replicated):

- GEMMs (QKV, output, MLP, experts, router, LM head): 2·T·(parameters on this GPU) FLOPs, reading the
  weights once per step (``weight_bytes``) plus input and output activations (``act_bytes``);
- attention: every new token of a sequence scores against the tokens it can see (causal, window-limited):
  K_eff = Σ_{t=past+1}^{past+new} min(t, window) pairs per sequence and head, at 2·(d_qk + d_v) FLOPs
  each; it reads the cached K and V (``kv_bytes``) and writes the new tokens' K and V;
- MoE: a step of T tokens, each routed to k of E experts, touches E·(1-(1-k/E)^T) experts on average
  (uniform routing); their weights are what is read; FLOPs are 2·T·k·(expert parameters);
- norms, residual adds and activation functions: a few FLOPs and one read-write of the activations.

Every quantity broadcasts over numpy arrays of batch / new / past, so one call prices a whole sweep.

Modules: ``op`` (the Op record, collectives), ``attention`` (pairs, cache reads, the kernel),
``layers`` (projections, MLP/experts, norms, embedding, LM head), ``ssm`` (state-space scans),
``step_ops`` (a stage's operators in order).
"""
from .attention import attended_pairs, attention_kinds, attention_op, attention_ops, attention_reads, attention_shape, kind_of, kind_reads, sequence_attention, uniform_attention
from .layers import body_ops, experts_touched, head_ops, layer_ops
from .op import Op, _merged_groups, group_key, regroup
from .ssm import mixer_ops
from .step_ops import decode_ops, forward_ops, in_order, prefill_ops, stage_ops

__all__ = ["Op", "attended_pairs", "attention_kinds", "attention_op", "attention_ops", "attention_reads",
           "attention_shape", "body_ops", "decode_ops", "experts_touched", "forward_ops", "group_key", "head_ops", "in_order",
           "kind_of", "kind_reads", "layer_ops", "mixer_ops", "prefill_ops", "regroup", "sequence_attention",
           "stage_ops", "uniform_attention", "_merged_groups"]
