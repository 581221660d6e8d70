"""A Deployment is a plain frozen value; whatever is kept between calls lives in base/caches.py.

docs/design.md, "Rules the code keeps": equal deployments are equal and hash alike, what a deployment
derives (Runtime, weights per GPU, KV capacity) is computed at construction and again by
dataclasses.replace, and no workload leaves a memo on it.
"""
from __future__ import annotations

import dataclasses

import pytest

from inferbound import estimate, make_deployment
from inferbound.base import caches
from inferbound.deploy.runtime import offline_runtime
from inferbound.pricing.collectives import comm_pricer_of
from inferbound.sim import simulate
from inferbound.workloads import max_throughput


def _fields(dep) -> set[str]:
    return {f.name for f in dataclasses.fields(dep)}


def test_equal_deployments_are_equal_and_hash_alike():
    a = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2)
    # the same GPU rebuilt (an override that keeps its value makes a new GPU object of equal content)
    b = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2, gpu_overrides={"efficiency.kernel_curves": True})
    assert a is not b and a.gpu is not b.gpu
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert a != make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=1)
    assert a.calibration is None  # the tests run without a calibration (conftest)
    assert a != make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2, calibration="default")


def test_a_deployment_is_frozen_and_carries_no_memo():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm",
                          engine_options={"speculative": "eagle", "spec_tokens": 3, "acceptance": 0.7})
    with pytest.raises(dataclasses.FrozenInstanceError):
        dep.engine = "sglang"  # type: ignore[misc]
    estimate(dep, batch=4, input_len=512, output_len=64).to_dict()
    max_throughput(dep, input_len=512, output_len=64)
    simulate(dep, rate=4, requests=20, input_len=256, output_len=16)
    comm_pricer_of(dep), offline_runtime(dep)
    assert set(vars(dep)) == _fields(dep)  # nothing but its own fields: no service, no memo


def test_replace_derives_the_runtime_and_kv_capacity_anew():
    """vLLM's default max_num_seqs on an H100 is 1024 (data/engines.yaml); overriding it with replace()
    gives a runtime with the new cap, and fewer weights per GPU at TP2 leave more KV room per GPU."""
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    capped = dataclasses.replace(dep, engine_options=(("max_num_seqs", 64),))
    assert capped.runtime.max_num_seqs == 64 != dep.runtime.max_num_seqs
    wider = dataclasses.replace(dep, par=dep.par.model_copy(update={"tp": 2}))
    assert wider.weight_bytes_per_gpu == pytest.approx(dep.weight_bytes_per_gpu / 2, rel=0.02)
    assert wider.kv_capacity_bytes > dep.kv_capacity_bytes


def test_caches_are_named_in_one_registry_and_clear_empties_them():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    first = estimate(dep, batch=8, input_len=1024, output_len=128)
    sizes = caches.sizes()
    assert sizes["step bodies and heads"] > 0 and sizes["collective pricer per deployment"] > 0
    caches.clear()
    assert all(n == 0 for n in caches.sizes().values())
    again = estimate(dep, batch=8, input_len=1024, output_len=128)  # rebuilt: the same numbers
    assert (again.ttft_s, again.tpot_s) == (first.ttft_s, first.tpot_s)


def test_deployments_that_differ_only_in_formats_share_a_collective_pricer():
    """The collective pricer depends on the GPU, the layout, the engine and the calibration only."""
    bf16 = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2)
    fp8 = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2, weight_dtype="fp8", act_dtype="fp8")
    assert comm_pricer_of(bf16) is comm_pricer_of(fp8)
    assert comm_pricer_of(bf16) is not comm_pricer_of(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=4))
