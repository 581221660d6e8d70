"""Running a library computation for a request: build the deployment, translate input errors to 422.

Route bodies wrap calls into inferbound in :func:`computing`; a ``ValueError`` (``ConfigError``,
pydantic's ``ValidationError``) or ``ArithmeticError`` from inside is the input's fault and becomes an
:class:`ApiError` (422) naming the request field when the message starts with ``field=``. Nothing
else is caught: an unexpected exception is a bug and must show as one.

Error bands are not computed here: every result carries its own (``error_bands``, from deploy/bands.py,
the lookup the CLI prints from), so a body holds one band per figure, the CLI's.
"""
from __future__ import annotations

from contextlib import contextmanager

from pydantic import BaseModel

from ..deploy.deployment import Deployment, make_deployment
from ..deploy.prefix import check_shared_prefix
from .errors import ApiError, log, to_api_error
from .modelsource import resolve_model
from .schemas import DeploymentIn


@contextmanager
def computing(req: BaseModel):
    """Translate the computation's input errors into ApiError (see module docstring)."""
    try:
        yield
    except (ValueError, ArithmeticError) as e:
        log.info("422 for %s: %s: %s", type(req).__name__, type(e).__name__, e)
        raise to_api_error(e, type(req).model_fields) from None


def deployment(req: DeploymentIn) -> Deployment:
    """The validated deployment of a request (model from the catalog or the pasted config only)."""
    spec = resolve_model(req)
    with computing(req):
        dep = make_deployment(model=spec, **req.deployment_kwargs())
        if all(getattr(req, k, None) in (None, "fixed") for k in ("input_dist", "output_dist", "dataset", "trace")):
            check_shared_prefix(dep.runtime, getattr(req, "input_len", None))  # fixed lengths (deploy/prefix.py)
        return dep


LENGTH_FIELDS = ("input_dist", "output_dist", "dataset")


def lengths_of(req):
    """The request's length mix (workloads/lengths.py) from its LENGTHS fields, else None (fixed lengths)."""
    from ..workloads.lengths import from_options
    return from_options({k: getattr(req, k, None) for k in ("input_len", "output_len", *LENGTH_FIELDS)})


def check_scenario(scenario: str, rate, concurrency, lengths, where: tuple = ()) -> None:
    """The scenario's own options only, as the CLI's estimate checks them: rate/concurrency (exactly one)
    for serving; length distributions and datasets for the steady states. ApiError at ``where`` + field."""
    if scenario == "serving":
        if (rate is None) == (concurrency is None):
            raise ApiError((*where, "rate"), "scenario serving needs exactly one of rate (requests/s, open loop) or "
                                             "concurrency (clients, closed loop)")
        return
    for name, v in (("rate", rate), ("concurrency", concurrency)):
        if v is not None and not (name == "concurrency" and scenario == "max-throughput"):  # requests in flight
            raise ApiError((*where, name), f"{name}={v!r} applies to scenario serving, not scenario {scenario}")
    if scenario == "static":
        for name in LENGTH_FIELDS:
            if getattr(lengths, name, None):
                raise ApiError((*where, name), f"{name} applies to scenario max-throughput and serving (a static "
                                               f"batch has fixed lengths: input_len, output_len)")
