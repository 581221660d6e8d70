"""The estimate path's fast paths change no number (issue 18, speed):

- a deployment built again from the same names takes its weights per GPU, Runtime and KV capacity from
  base/caches.py (keyed by its content: deploy/deployment.py ``_DERIVED``), equal to the ones derived
  afresh after ``caches.clear()``; another engine option is another key; a bad option still fails;
- ``validated`` returns the kept pydantic config for the same input (values *and* types), and a bad
  input still fails every time with its one-line error;
- ``engines.resolve_version`` kept per (name, version) while the catalog object is the same;
- ``contract.graph_step`` on one plain-number step (Python floats, graphs.padded_scalar) equals its numpy
  path on the same step as 1-element arrays, and the padded sizes are the engines' capture lists;
- a whole estimate from names (``to_dict``) is equal with every cache cold and with every cache warm.
"""
from __future__ import annotations

import numpy as np
import pytest

import inferbound as ib
from inferbound.base import caches
from inferbound.deploy import engines
from inferbound.deploy.config import Parallelism
from inferbound.deploy.deployment import validated
from inferbound.pricing import graphs as G
from inferbound.step.contract import StepLoad, graph_step, uniform

M = "llama-3.1-8b"


def test_rebuilt_deployment_takes_the_kept_runtime_equal_to_a_fresh_one():
    caches.clear()
    fresh = ib.make_deployment(model=M, gpu="h100_sxm", tp=2)
    again = ib.make_deployment(model=M, gpu="h100_sxm", tp=2)
    assert again == fresh and again is not fresh
    assert again.runtime is fresh.runtime  # the kept pieces, not derived again
    caches.clear()
    cold = ib.make_deployment(model=M, gpu="h100_sxm", tp=2)
    assert cold.runtime is not fresh.runtime
    assert cold.runtime == fresh.runtime
    assert cold.weight_bytes_per_gpu == fresh.weight_bytes_per_gpu
    assert cold.kv_capacity_bytes == fresh.kv_capacity_bytes
    # Llama-3.1-8B in bf16 over TP2, by hand: 8,030,261,248 parameters; the RMSNorms, 32 layers x 2 x 4096 +
    # the final 4096 = 266,240, are whole on each GPU, the rest (embedding and head included) split in two:
    # 2 bytes x ((8,030,261,248 - 266,240) / 2 + 266,240) = 8,030,527,488 bytes per GPU
    assert fresh.weight_bytes_per_gpu == 2 * ((8_030_261_248 - 266_240) / 2 + 266_240) == 8_030_527_488


def test_another_engine_option_is_another_key_and_bad_options_still_fail():
    a = ib.make_deployment(model=M, gpu="h100_sxm", engine_options={"max_num_seqs": 64})
    b = ib.make_deployment(model=M, gpu="h100_sxm", engine_options={"max_num_seqs": 32})
    assert (a.runtime.max_num_seqs, b.runtime.max_num_seqs) == (64, 32)
    for _ in range(2):  # an error is not kept: the second call fails alike
        with pytest.raises(ValueError, match="max_num_seqs=0"):
            ib.make_deployment(model=M, gpu="h100_sxm", engine_options={"max_num_seqs": 0})


def test_validated_keeps_configs_by_value_and_type():
    one = validated(Parallelism, tp=2, pp=1)
    assert validated(Parallelism, tp=2, pp=1) is one
    other = validated(Parallelism, tp=2.0, pp=1)  # 2.0 is another key (pydantic reads it as 2)
    assert other == one
    for _ in range(2):
        with pytest.raises(ValueError, match=r"tp=2.5"):
            validated(Parallelism, tp=2.5)
        with pytest.raises(ValueError, match="collective_algo='bogus' unknown; allowed: auto"):
            validated(Parallelism, tp=2, collective_algo="bogus")
    # an unhashable value (a list) is validated every time, to the same config
    assert validated(Parallelism, tp=1, pp=2, pp_split=[16, 16]).pp_split == (16, 16)


def test_resolve_version_is_kept_per_catalog():
    first = engines.resolve_version("vllm", "0.6.3")
    assert engines.resolve_version("vllm", "0.6.3") is first
    engines.load_engines.cache_clear()  # a new catalog object: resolved again, to an equal answer
    again = engines.resolve_version("vllm", "0.6.3")
    assert again is not first and again.profile.key == first.profile.key and again.note == first.note
    for _ in range(2):
        with pytest.raises(ValueError, match="engine='nope' unknown"):
            engines.resolve_version("nope")


def _as_arrays(load: StepLoad) -> StepLoad:
    one = lambda x: np.asarray([x], dtype=float)  # noqa: E731
    return StepLoad(one(load.tokens), one(load.sampled), one(load.sequences),
                    {k: tuple(one(x) for x in v) for k, v in load.attention.items()}, load.seqgroups)


@pytest.mark.parametrize("engine", [None, "sglang", "trtllm"])
def test_graph_step_scalar_path_equals_the_array_path(engine):
    dep = ib.make_deployment(model=M, gpu="h100_sxm", engine=engine)
    m = dep.model
    loads = [uniform(m, decode=b, context=1000.0) for b in (1, 3, 8, 9, 100, 511, 512, 513, 4000)]
    loads += [uniform(m, prompts=p, new=n) for p, n in ((1, 7.0), (2, 100.0), (8, 1024.0))]
    loads += [uniform(m, decode=5, context=300.0, prompts=1, new=50.0)]
    for load in loads:
        mb, kind = graph_step(dep, load)
        ref, ref_kind = graph_step(dep, _as_arrays(load))
        assert isinstance(mb.tokens, float) or mb is load
        assert float(mb.tokens) == float(np.asarray(ref.tokens).reshape(-1)[0])
        assert kind == int(np.asarray(ref_kind).reshape(-1)[0])


def test_graph_step_pads_to_the_engines_capture_sizes():
    """By hand, from data/cuda_graphs.yaml: vLLM captures 1, 2, 4, 8, then every 8 up to 512 with padding,
    SGLang 1, 2, 4, 8, 12, 16, ... up to 256, TensorRT-LLM 1..31, 32, 64, 128 without padding (a size
    not in its list runs eager)."""
    expect = {None: {3: 4.0, 9: 16.0, 17: 24.0}, "sglang": {3: 4.0, 9: 12.0, 13: 16.0},
              "trtllm": {3: 3.0, 9: 9.0, 64: 64.0}}
    for engine, cases in expect.items():
        dep = ib.make_deployment(model=M, gpu="h100_sxm", engine=engine)
        for batch, padded in cases.items():
            mb, kind = graph_step(dep, uniform(dep.model, decode=batch, context=500.0))
            assert (mb.tokens, kind) == (padded, G.FULL)
    vllm = ib.make_deployment(model=M, gpu="h100_sxm")
    mb, kind = graph_step(vllm, uniform(vllm.model, decode=600, context=500.0))  # above the 512 cap: eager
    assert (float(mb.tokens), kind) == (600.0, G.EAGER)
    trt = ib.make_deployment(model=M, gpu="h100_sxm", engine="trtllm")
    mb, kind = graph_step(trt, uniform(trt.model, decode=40, context=500.0))  # 40: no graph of its own
    assert (float(mb.tokens), kind) == (40.0, G.EAGER)


@pytest.mark.parametrize("kwargs", [dict(model=M, gpu="h100_sxm"),
                                    dict(model="llama-3.1-70b", gpu="h100_sxm", tp=4, engine="sglang"),
                                    dict(model="mixtral-8x7b-v0.1", gpu="mi300x", ep=1)])
def test_estimate_from_names_equal_cold_and_warm(kwargs):
    caches.clear()
    cold = ib.estimate(ib.make_deployment(**kwargs), batch=8, input_len=1000, output_len=200).to_dict()
    warm = ib.estimate(ib.make_deployment(**kwargs), batch=8, input_len=1000, output_len=200).to_dict()
    assert warm == cold


def test_kept_runtime_is_dropped_when_the_engine_catalog_is_reloaded():
    """The kept pieces hold the catalog they were resolved against: a reloaded catalog resolves anew."""
    from inferbound.deploy.engines import load_engines
    from inferbound.deploy.deployment import make_deployment
    a = make_deployment("llama-3.1-8b", "h100_sxm")
    b = make_deployment("llama-3.1-8b", "h100_sxm")
    assert b.runtime is a.runtime  # kept (same catalog object)
    load_engines.cache_clear()
    c = make_deployment("llama-3.1-8b", "h100_sxm")
    assert c.runtime is not a.runtime and c.runtime == a.runtime
