"""Fleet simulator: a day of traffic through a router over pools of replicas, with autoscaling
(``inferbound fleet FILE.yaml``, docs/fleet.md).

Modules: ``spec`` (the YAML schema), ``traffic`` (diurnal Poisson, sessions, traces via ``traces``),
``routers`` (the policies, each cited), ``autoscale`` (HPA-style scaling), ``replica`` (one resumable replica
over sim/), ``backends`` (this process, forked workers, Ray actors), ``run`` (routing and the in-step
windows), ``closed_loop`` (sessions timed after their replies), ``result`` (the --json figures), ``itl``
(pooled inter-token gaps), ``sizing`` (--size-for-slo), ``startup`` (replica startup),
``plot`` (the day as a PNG).

    >>> from inferbound.fleet import fleet
    >>> fleet("docs/fleet-example.yaml")["requests"] > 0  # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path

from .result import build
from .run import run_fleet
from .sizing import size_for_slo
from .spec import FleetSpec, parse, read

__all__ = ["fleet", "run_fleet", "build", "size_for_slo", "FleetSpec", "parse", "read"]


def fleet(spec: FleetSpec | str | Path | dict, **backend) -> dict:
    """The --json dict of a fleet file, a parsed mapping or a FleetSpec (backend: backend=, workers=, ray_address=)."""
    if isinstance(spec, dict):
        spec = parse(spec)
    elif not isinstance(spec, FleetSpec):
        spec = read(spec)
    return build(run_fleet(spec, **backend))
