"""Fuzz the JSON API from its own OpenAPI schema (schemathesis, in-process ASGI): no input gives a 5xx.

Every operation of /openapi.json is exercised, with schema-valid and schema-violating bodies
(schemathesis' positive and negative generation); nothing is excluded. Random strings almost never
name a catalog model or GPU, so a body hook swaps in real catalog names (and a well-formed CSV for
/api/validate) in part of the examples: the fuzzing then reaches the computations, not only the
input checks. The number of generated examples per operation is small (MAX_EXAMPLES; set
INFERBOUND_FUZZ_EXAMPLES for a deeper, randomized run). Besides them schemathesis' coverage phase sends
every boundary case the schema defines (up to 800 per operation, about 4,100 in all, built when the
module is collected); about a hundred of them are valid, heavy /api/simulate and /api/search bodies that run until the app's
wall-clock budget stops them (422). That budget is WORK_SECONDS = 0.1 s here (20 s in service): at 1 s
those bodies alone took about 100 s; the budget path (OverBudget -> 422) is what they test either way.
A coverage-phase /api/search body that names no GPU searches the whole catalog (445 layouts for an 8B
model: half a second of setup before the budget can stop it, about 50 such bodies); those name one GPU
(SEARCH_GPU), which keeps every field's boundary value. The whole-catalog search is still sent by the
examples phase and by the fuzzing bodies left as generated. Marked ``slow`` (about a minute on 2 cores,
collection included; it was about 3 minutes): CI runs it; ``pytest -m "not slow"`` leaves it out, and
then conftest.py does not even collect this module.
"""
from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is a dev extra: pip install -e '.[dev]'")
from hypothesis import HealthCheck, settings, strategies as st  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from inferbound.hardware import load_catalog  # noqa: E402
from inferbound.model import alias_of, catalog_files  # noqa: E402
from inferbound.web import create_app  # noqa: E402

pytestmark = pytest.mark.slow

DEEP = int(os.environ.get("INFERBOUND_FUZZ_EXAMPLES", "0"))
MAX_EXAMPLES = DEEP or 25
WORK_SECONDS = 0.1   # budget of one simulation or search (create_app(work_seconds=...)); docstring
SEARCH_GPU = "h100_sxm"   # coverage-phase search bodies that name no GPU get this one (docstring)
MODELS = sorted(alias_of(k) for k in catalog_files()) + sorted(catalog_files())[:3]
GPUS = sorted(load_catalog())
CSV_HEADER = ("case,source,model,gpu,num_gpus,tp,pp,scenario,batch_size,num_requests,input_len,output_len,"
              "metric,value\n")

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(work_seconds=WORK_SECONDS))


@st.composite
def csv_text(draw) -> str:
    lines = [CSV_HEADER]
    for i in range(draw(st.integers(1, 4))):
        n = draw(st.sampled_from([1, 2, 4, 8, 3]))
        lines.append(",".join(map(str, [
            f"c{i}", "fuzz", draw(st.sampled_from(MODELS + ["./x", "/etc/passwd"])), draw(st.sampled_from(GPUS)),
            n, draw(st.sampled_from([n, 1, 2])), draw(st.sampled_from([1, 2])),
            draw(st.sampled_from(["static_batch", "max_throughput", "serving"])), draw(st.integers(1, 5000)),
            draw(st.sampled_from(["", "100", "0"])), draw(st.integers(0, 2_000_000)), draw(st.integers(0, 5000)),
            draw(st.sampled_from(["output_tok_s", "ttft_ms", "itl_ms", "bogus"])),
            draw(st.sampled_from(["1", "0", "-3", "nan", "1e308", "x"]))])) + "\n")
    return "".join(lines)


#: layout and engine fields dropped in the "simplified" examples, so that some reach a full computation
OPTIONAL = ("config", "num_gpus", "tp", "pp", "ep", "dp", "nodes", "attention_dp", "pp_split", "microbatches",
            "collective_algo", "sequence_parallel", "emulate", "model_overrides", "gpu_overrides", "kv_dtype",
            "replicas", "prefill_replicas", "decode_replicas", "block_size", "max_num_batched_tokens",
            "max_num_seqs", "num_blocks", "gpu_memory_utilization", "input_dist", "output_dist", "dtypes",
            "max_total_gpus", "max_watts", "max_dollars_per_hour", "slo_ttft_ms", "slo_tpot_ms", "slo_e2e_ms",
            "target_rate", "all_layouts", "token_budget")


@schema.hook
def flatmap_body(context, body):
    """A third of the dict bodies stay as generated; the rest get catalog names (and a readable CSV), and
    half of those also lose their layout and engine fields (defaults apply)."""
    if not isinstance(body, dict):
        return st.just(body)
    search = context.operation is not None and context.operation.path.endswith("/search")

    def swap(variant: int, model: str, gpu: str, csv: str, batch: int, max_gpus: int):
        if variant == 0:
            return body
        out = dict(body)
        if "csv" not in out:  # every other body names a model: make it a catalog one
            out.pop("config", None)
            out["model"] = model
        if "gpu" in out or (variant == 2 and not search):  # a search body names "gpus" instead
            out["gpu"] = gpu
        if "gpus" in out or (variant == 2 and search):  # one GPU type: the whole catalog takes seconds
            out["gpus"] = [gpu]
        if "csv" in out:
            out["csv"] = csv
        if variant == 2:
            for key in OPTIONAL:
                out.pop(key, None)
            for key, v in (("batch", batch), ("max_gpus", max_gpus), ("requests", batch)):
                if key in out:
                    out[key] = v
        return out

    return st.builds(swap, st.integers(0, 2), st.sampled_from(MODELS), st.sampled_from(GPUS), csv_text(),
                     st.integers(1, 64), st.sampled_from([1, 2, 4, 8]))


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=not DEEP, suppress_health_check=list(HealthCheck))
def test_no_server_error(case):
    if (case.meta is not None and case.meta.phase.name == "coverage" and case.operation.path.endswith("/search")
            and isinstance(case.body, dict) and "gpus" not in case.body):
        case.body = {**case.body, "gpus": [SEARCH_GPU]}
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error])
