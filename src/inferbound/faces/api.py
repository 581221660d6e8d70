"""The typed Python API of search and simulation: ``search(model, query)`` and ``simulate(dep, load)``.

Each takes its options as one typed group (faces/groups.py: a :class:`SearchQuery`, a :class:`ServingLoad`),
a dict of its fields, or keyword arguments, validated into the group (a bad value: one line naming the
field, the value and what is allowed), and calls the long-form library function with them
(``inferbound.search.search``, ``inferbound.sim.simulate``), returning its result object unchanged. The
CLI's ``search`` and ``simulate`` commands build the same groups from their parsed options and call these.

What they add to the long forms is what the CLI did around them: the serving engine named by a search is
checked before the sweep (deploy/runtime.profile_of), and a request longer than the model's context
(deploy/contextlen.py: ``input_len + output_len > max_position_embeddings``, fixed lengths only) is refused
in one line unless ``allow_long_context``, which makes it a warning (search: ``SearchResult.warnings``;
simulate: the deployment's notes, ``SimResult.deployment.warnings``).
"""
from __future__ import annotations

from typing import Callable

from ..deploy.contextlen import context_note
from ..deploy.deployment import Deployment, make_deployment
from ..deploy.runtime import profile_of
from ..model import ModelSpec, load_model
from .. import search as search_package, sim as sim_package  # their long forms looked up when called
from ..search import SearchResult, SearchSize
from ..sim import SimResult
from .groups import (DeploymentOptions, EngineSettings, OptionError, SearchQuery, ServingLoad, context_checked,
                     deployment_kwargs)

#: how the Python API names the allowance in its long-context error (the CLI passes --allow-long-context)
PYTHON_FLAG = "allow_long_context=True"


def deployment_of(options: DeploymentOptions | dict | None = None,
                  engine: EngineSettings | dict | None = None) -> Deployment:
    """The deployment of typed options: make_deployment(**deployment options, engine, engine_options).
    A dict may hold the fields of both groups (each goes to its own)."""
    if isinstance(options, dict) and engine is None:
        engine = {k: v for k, v in options.items() if k in EngineSettings.model_fields}
        options = {k: v for k, v in options.items() if k not in EngineSettings.model_fields}
    d, e = DeploymentOptions.of(options), EngineSettings.of(engine)
    return make_deployment(**deployment_kwargs({**d.values(), **e.values()}))


def search(model: str | dict | ModelSpec, query: SearchQuery | dict | None = None, *, backend: str = "local",
           ray_address: str | None = None, workers: int | None = None,
           progress: Callable[[int, int], None] | None = None, on_size: Callable[[SearchSize], None] | None = None,
           long_context_flag: str = PYTHON_FLAG, **options) -> SearchResult:
    """Best deployments of ``model`` for ``query`` (a :class:`SearchQuery`, a dict of its fields, or its fields
    as keyword arguments ``options``; see ``inferbound.search.search`` for what each does).

    ``backend`` (local or ray), ``ray_address`` and ``workers`` say where layouts are evaluated (never what
    they evaluate to); ``progress(done, total)`` and ``on_size(size)`` as in ``inferbound.search.search``.
    ``long_context_flag``: how the caller's face names the allowance in the long-context error.

        >>> import inferbound as ib
        >>> res = ib.search("llama-3.1-8b", gpus=["h100_sxm"], max_gpus=1)
        >>> res.table[0].rank
        1
    """
    q = SearchQuery.of(query, **options)
    if q.engine is not None:
        profile_of(q.engine)  # an unknown engine or version: one line now, not after the sweep
    m = model if isinstance(model, ModelSpec) else load_model(model)
    lengths = q.mix()
    warning = None if lengths is not None else \
        context_note(m, q.input_len, q.output_len, q.allow_long_context, flag=long_context_flag)
    res = search_package.search(m, gpus=_list(q.gpus), max_gpus=q.max_gpus, objective=q.objective,
                               slo_ttft_ms=q.slo_ttft_ms, slo_tpot_ms=q.slo_tpot_ms, slo_e2e_ms=q.slo_e2e_ms,
                               max_dollars_per_hour=q.max_dollars_per_hour, max_watts=q.max_watts,
                               max_total_gpus=q.max_total_gpus, target_rate=q.target_rate, input_len=q.input_len,
                               output_len=q.output_len, disaggregated="both" if q.both_modes else q.disaggregated,
                               backend=backend, ray_address=ray_address, progress=progress, calibration=q.calibration,
                               dtypes=_list(q.dtypes), all_layouts=q.all_layouts, top=q.top, engine=q.engine,
                               engine_options=q.engine_options(), gpu_overrides=q.gpu_overrides,
                               gpu_files=_list(q.gpu_file), lengths=lengths, gpu_scale=q.gpu_scale, prices=q.prices,
                               workers=workers, on_size=on_size)
    if warning is not None:
        res.warnings.append(warning)
    return res


def simulate(dep: Deployment | DeploymentOptions | dict | None = None, load: ServingLoad | dict | None = None, *,
             engine: EngineSettings | dict | None = None, progress: bool | Callable[[int, int], None] = False,
             long_context_flag: str = PYTHON_FLAG, **options) -> SimResult:
    """Simulate serving ``load`` (a :class:`ServingLoad`, a dict of its fields, or its fields as keyword
    arguments ``options``; see ``inferbound.sim.simulate``) on ``dep``: a :class:`Deployment` (its engine
    settings are its own), or :class:`DeploymentOptions` / a dict (with ``engine``: :class:`EngineSettings`;
    a dict may hold the engine fields too), built with make_deployment. ``progress``: True for a progress bar,
    or a callback(done, total).

        >>> import inferbound as ib
        >>> r = ib.simulate({"model": "llama-3.1-8b"}, rate=2, requests=50, input_len=256, output_len=64)
        >>> r["completed"]
        50
    """
    ld = ServingLoad.of(load, **options)
    if isinstance(dep, Deployment):
        if engine is not None:
            raise OptionError("engine: a Deployment carries its engine settings; allowed: engine=None with a "
                              "Deployment, or DeploymentOptions / a dict with engine=EngineSettings")
    else:
        dep = deployment_of(dep, engine)
    dep = context_checked(dep, ld, long_context_flag)
    return sim_package.simulate(dep, rate=ld.rate, requests=ld.requests, input_len=ld.input_len,
                                output_len=ld.output_len, trace=ld.trace, seed=ld.seed, replicas=ld.replicas,
                                prefill_replicas=ld.prefill_replicas, decode_replicas=ld.decode_replicas,
                                num_blocks=ld.num_blocks, input_dist=ld.input_dist, output_dist=ld.output_dist,
                                concurrency=ld.concurrency, think_time=ld.think_time, dataset=ld.dataset,
                                slo_ttft_ms=ld.slo_ttft_ms, slo_tpot_ms=ld.slo_tpot_ms, slo_e2e_ms=ld.slo_e2e_ms,
                                progress=progress, prefill_layout=ld.prefill_layout,
                                decode_layout=ld.decode_layout)


def _list(items):
    return None if items is None else list(items)
