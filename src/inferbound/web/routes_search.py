"""POST /api/search: ranked deployments and a Pareto frontier (``inferbound.search``), size-capped.

Caps: max_gpus <= options.MAX_SEARCH_GPUS (the CLI's default cap too), (GPU types searched) x max_gpus <=
MAX_SEARCH_SIZE (a quarter with all_layouts), the estimated peak memory within data/search.yaml
``limits.memory_budget_gb`` (the CLI's budget; checked once the space is built, before any layout is
evaluated), the wall-clock budget of budget.py (checked as layouts evaluate), and the frontier thinned to
``max_points``.
The search always runs on the local backend in the server's own process (no Ray address comes from a
client; forking a threaded server is unsafe, so `workers=1`).

As the CLI: the frontier defaults to data/search.yaml ``output.frontier`` (x, y), each frontier carries
the axis labels of the CLI's plot (search/plot.py), ``csv`` is the ranked table of ``--csv``, and
``emit`` returns the launch command of row ``emit_rank`` (``--emit``/``--emit-rank``, search/emit.py),
the search then modelling that engine.
"""
from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Request

from ..hardware import load_catalog
from ..search.plot import _axis  # the CLI plot's axis labels
from ..search.space import search_limits
from .budget import Deadline, OverBudget, heavy_slot, seconds_for
from .compute import computing, lengths_of
from .errors import ApiError, jsonable
from .modelsource import resolve_model
from ..faces.options import ENGINE, engine_options
from .schemas import MAX_SEARCH_SIZE, SearchIn



router = APIRouter(prefix="/api", tags=["search"])


def thin(points: list, n: int) -> list:
    """At most ``n`` of ``points``, evenly spaced by position, first and last kept."""
    if len(points) <= n:
        return points
    idx = np.unique(np.linspace(0, len(points) - 1, n).round().astype(int))
    return [points[i] for i in idx]


@router.post("/search", summary="Search layouts, dtypes and concurrency; ranked table and Pareto frontier")
def search(req: SearchIn, request: Request) -> dict:
    """The top configurations for ``objective`` (each layout at its best concurrency, with why the winner
    wins) and the non-dominated configurations of (frontier_x, frontier_y) among those meeting the SLOs
    and budgets."""
    from ..search import search as run_search  # optional subpackage, imported on use

    types = (len(req.gpus) if req.gpus else len(load_catalog())) * (2 if req.gpu_scale else 1)  # + what-if copies
    size_cap = MAX_SEARCH_SIZE // (4 if req.all_layouts else 1)
    if types * req.max_gpus > size_cap:
        raise ApiError("max_gpus", f"{types} GPU type(s) x max_gpus={req.max_gpus} = {types * req.max_gpus} exceeds "
                                   f"the search size cap {size_cap}{' with all_layouts' if req.all_layouts else ''}; "
                                   f"name fewer GPUs or lower max_gpus")
    if req.emit is not None and req.engine is not None and req.engine.split("@")[0] != req.emit:
        raise ApiError("emit", f"emit={req.emit!r} differs from engine={req.engine!r}: the launch command must be the "
                               f"engine the search modelled; allowed: the same engine, or emit alone")
    spec = resolve_model(req)
    with heavy_slot(request), computing(req):
        try:
            res = run_search(spec, gpus=req.gpus, max_gpus=req.max_gpus, objective=req.objective,
                             slo_ttft_ms=req.slo_ttft_ms, slo_tpot_ms=req.slo_tpot_ms, slo_e2e_ms=req.slo_e2e_ms,
                             max_dollars_per_hour=req.max_dollars_per_hour, max_watts=req.max_watts,
                             max_total_gpus=req.max_total_gpus, target_rate=req.target_rate,
                             input_len=req.input_len, output_len=req.output_len,
                             disaggregated="both" if req.both_modes else req.disaggregated,
                             backend="local", workers=1, progress=Deadline(seconds_for(request)),
                             calibration=req.calibration_arg, dtypes=req.dtypes, all_layouts=req.all_layouts,
                             top=req.top, engine=req.engine or req.emit, prices=req.prices,
                             engine_options=engine_options({o.name: getattr(req, o.name) for o in ENGINE}),
                             gpu_scale=req.gpu_scale, lengths=lengths_of(req), on_size=refuse_over_budget)
        except OverBudget as e:
            raise e.api_error("max_gpus", "search", "layouts evaluated", "name fewer GPUs or lower max_gpus") from None
        x, y = req.frontier_x or res.default_frontier[0], req.frontier_y or res.default_frontier[1]
        out = res.to_dict(frontiers=[(x, y)])
        # the model's own warnings (a long context allowed with allow_long_context, a tower left out): the
        # response says them as estimate's does (the search result carries only what the sweep found)
        out["warnings"] = list(dict.fromkeys([*out.get("warnings", []), *spec.warnings]))
        out["csv"] = res.to_csv()
        out["launch_command"] = launch(req, res)
    frontier = out["frontiers"][0]
    frontier["x_label"], frontier["y_label"] = _axis(x), _axis(y)
    frontier["total"] = len(frontier["points"])
    frontier["points"] = thin(frontier["points"], req.max_points)
    return jsonable(out)


def refuse_over_budget(size) -> None:
    """search's ``on_size``: 422 on max_gpus for a search estimated over the memory budget (as the CLI without
    --no-cap), before any layout is evaluated."""
    if size.over_budget:
        raise ApiError("max_gpus", f"this search is estimated at {size.describe()}, over the budget of "
                                   f"{float(search_limits()['memory_budget_gb']):g} GB; name fewer GPUs, lower "
                                   f"max_gpus, one serving mode or no all_layouts")


def launch(req, res) -> dict | None:
    """{engine, rank, text} of the row ``emit_rank`` for ``emit``, None without emit; ApiError on emit_rank past
    the table (none when no configuration meets the constraints: nothing to launch, said in ``text``)."""
    from ..search import emit_command
    if req.emit is None:
        return None
    if not res.table:
        return {"engine": req.emit, "rank": None, "text": None,
                "note": "no configuration meets the constraints: there is nothing to launch"}
    if req.emit_rank > len(res.table):
        raise ApiError("emit_rank", f"emit_rank={req.emit_rank} must be between 1 and {len(res.table)} (rows of the "
                                    f"table)")
    return {"engine": req.emit, "rank": req.emit_rank,
            "text": emit_command(req.emit, res.model, res.table[req.emit_rank - 1])}
