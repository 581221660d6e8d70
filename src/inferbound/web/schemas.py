"""Request bodies of the JSON API, built from the declared options (options.py) that also build the CLI,
so both faces take the same options with the same names, defaults, ranges and help; each field by
faces/groups.field_of, the builder of the Python API's typed groups (DeploymentOptions, SearchQuery, ...),
here with the JSON face's types and work caps (``API_FACE``). The request models are not the groups
themselves: they add the API's own fields and checks (a pasted ``config``, GPU-id patterns, no server
file), keep pydantic's error list for the 422 body, and leave out what only the CLI and the library take.

Every numeric field has an upper bound, so one request cannot ask for unbounded work (an option's
``api_le``, or the module constants below; they appear in the OpenAPI schema). A deployment names its model either by
catalog name (``model``: an alias such as ``llama-3.1-8b`` or a catalog HF id) or by a pasted
``config`` (the config.json object) — exactly one of the two. Server files are never named: there is
no field for a path, a hardware file or a calibration file.
"""
from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from ..faces import options as opts
from ..faces.groups import Face, field_of

#: caps on the work one request may ask for (those of one option: its declaration's ``api_le``, options.py)
MAX_GPUS = opts.MAX_GPUS
MAX_BATCH = opts.MAX_BATCH
MAX_TOKENS = opts.MAX_TOKENS      # prompt or output tokens of one request
MAX_OFFLINE_REQUESTS = opts.MAX_OFFLINE_REQUESTS  # max-throughput: requests issued at once (closed form, cheap)
MAX_TOKEN_BUDGET = opts.MAX_TOKEN_BUDGET
MAX_SIM_REQUESTS = opts.MAX_SIM_REQUESTS
MAX_SIM_OUTPUT = opts.MAX_SIM_OUTPUT  # output tokens of one simulated request
MAX_SIM_OUTPUT_TOKENS = 1_000_000  # output tokens of all simulated requests together
MAX_SIM_REPLICAS = 64
MAX_CSV_CHARS = 1_000_000
MAX_OVERRIDES = 64
MAX_CONFIG_LAYERS = 1024          # num_hidden_layers of a pasted config
MAX_CONFIG_NUMBER = 1e12          # any number in a pasted config or override
MAX_SEARCH_GPUS = opts.MAX_SEARCH_GPUS  # largest layout a search sweeps (one NVL72 rack)
MAX_SEARCH_SIZE = 256             # GPU types x max_gpus of one search (x4 with all_layouts)
MAX_FRONTIER_POINTS = int(opts.by_name(opts.SEARCH)["max_points"].le)

MAX_COMPARE_DEPLOYMENTS = 8        # deployments of one /api/compare call (the CLI takes compare.MAX_DEPLOYMENTS)
#: inferbound.search's objectives and frontier metrics: the library's own tuples (search/metrics.py), through
#: options.py, as every field with allowed values (each field's Literal is its declaration's ``choices``)
Objective = Literal[opts.OBJECTIVES]  # type: ignore[valid-type]
Metric = Literal[opts.METRICS]  # type: ignore[valid-type]
#: the API's calibration: the server's ('default': $INFERBOUND_CALIBRATION or the packaged fit) or none (catalog
#: priors); never a file a client names (the CLI's --calibration also takes a YAML path: options.CALIBRATION)
Calibration = Literal["default", "none"]
Scalar = float | int | bool | str | None
GPU_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,99})?$"
GpuId = Annotated[str, Field(pattern=GPU_PATTERN)]
DIST_PATTERN = r"^(fixed|uniform:[0-9.eE+]+:[0-9.eE+]+|normal:[0-9.eE+]+:[0-9.eE+]+|exponential(:[0-9.eE+]+)?)$"


def check_numbers(value: Any, where: str, depth: int = 0) -> None:
    """Every number inside ``value`` is finite and at most MAX_CONFIG_NUMBER in size; nesting <= 16."""
    if depth > 16:
        raise ValueError(f"{where} is nested more than 16 levels deep")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or abs(value) > MAX_CONFIG_NUMBER:
            raise ValueError(f"{where}={value!r} must be a finite number of magnitude <= {MAX_CONFIG_NUMBER:g}")
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        check_numbers(v, f"{where}.{k}", depth + 1)


class Strict(BaseModel):
    """Unknown fields are errors; NaN and infinity are not numbers here."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, protected_namespaces=())


class Checked(Strict):
    """Length distribution specs (input_dist, output_dist), where a model declares them, checked on their own."""

    @field_validator("input_dist", "output_dist", check_fields=False)
    @classmethod
    def _dist(cls, v):
        if v is not None and (len(v) > 64 or not re.match(DIST_PATTERN, v)):
            raise ValueError("must be fixed, uniform:LO:HI, normal:MEAN:STD or exponential[:MEAN]")
        return v


ONE_MODEL = ("Exactly one of `model` (a catalog alias, HF id or variant id) or `config` (a pasted config.json) "
             "names the model.")


def _one_of_model_or_config(schema: dict) -> None:
    """OpenAPI: exactly one of ``model`` (a string) or ``config`` (an object); a null one counts as absent."""
    schema["oneOf"] = [{"title": "by catalog name", "required": ["model"], "properties": {"model": {"type": "string"}}},
                       {"title": "by pasted config.json", "required": ["config"],
                        "properties": {"config": {"type": "object"}}}]
    text = schema.get("description", "")
    if ONE_MODEL not in text:
        schema["description"] = f"{text} {ONE_MODEL}".strip()


class ModelIn(Checked):
    """A model by catalog name or pasted config.json (exactly one), optional overrides, the calibration."""

    model_config = ConfigDict(json_schema_extra=_one_of_model_or_config)

    model: str | None = Field(None, pattern=MODEL_PATTERN, max_length=201,
                              description="catalog alias or HF id from GET /api/models (never a path)",
                              examples=["llama-3.1-8b"])
    config: dict[str, Any] | None = Field(None, description="a pasted HuggingFace config.json (instead of model)")
    model_overrides: dict[str, Scalar] | None = Field(None, max_length=MAX_OVERRIDES,
                                                      description="config.json keys or ModelSpec fields to set")
    calibration: Calibration = Field(
        "default", description="'default': the server's calibration ($INFERBOUND_CALIBRATION or the packaged "
                               "fit); 'none': catalog priors")

    @field_validator("config", "model_overrides")
    @classmethod
    def _finite(cls, v, info):
        if v is not None:
            check_numbers(v, info.field_name)
        return v

    @property
    def calibration_arg(self) -> str | None:
        """The library's argument: None resolves $INFERBOUND_CALIBRATION, then the packaged fit."""
        return None if self.calibration == "default" else self.calibration

    @field_validator("engine", check_fields=False)
    @classmethod
    def _engine(cls, v):
        if v is not None:
            from ..deploy.runtime import profile_of
            profile_of(v)  # ValueError naming the engine or version and the known ones: 422 on this field
        return v

    @field_validator("prices", check_fields=False)
    @classmethod
    def _prices(cls, v):
        if v:
            from ..hardware import check_prices, load_catalog
            check_prices(v, load_catalog())  # a GPU id not in the catalog: 422 on this field, naming the known ids
        return v

    @field_validator("speculative", check_fields=False)
    @classmethod
    def _speculative(cls, v):
        """eagle, mtp or ngram. ``draft:MODEL`` is refused here: the library loads a draft model by name, which
        looks for a local path of that name first, and the API reads no file a client names."""
        if v is not None:
            from ..deploy.speculative import parse_method
            method, _ = parse_method(v)  # ValueError naming the value and the allowed methods: 422 on this field
            if method == "draft":
                raise ValueError(f"speculative={v!r}: a draft model is not offered by the web API (the library would "
                                 f"load it by name, local paths first; the API reads no file a client names); "
                                 f"allowed: eagle, mtp, ngram (the CLI takes draft:MODEL)")
        return v

    @model_validator(mode="after")
    def _one_model(self):
        if (self.model is None) == (self.config is None):
            raise ValueError("give exactly one of 'model' (a catalog name) or 'config' (a pasted config.json)")
        return self



#: how the JSON API types a declared option (faces/groups.py field_of, which also builds the typed groups of the
#: Python API): JSON values, the work caps ``api_le``, and these item caps
API_FACE = Face(api=True, max_items=MAX_OVERRIDES, max_list=MAX_CONFIG_LAYERS)


def _field(o: opts.Opt):
    """(annotation, Field) of one declared option in the API: the typed groups' field builder, JSON face."""
    return field_of(o, API_FACE)


def _model(name: str, base, groups, skip=(), doc: str = ""):
    fields = {o.name: _field(o) for g in groups for o in g if o.api and o.name not in skip}
    return create_model(name, __base__=base, __doc__=doc, **fields)


def gpu_id(v: str) -> str:
    """``v`` when it has the shape of a catalog GPU id (GPU_PATTERN), else a one-line ValueError."""
    if not re.match(GPU_PATTERN, v):
        raise ValueError(f"gpu={v!r} is not a GPU id; allowed: ids from GET /api/gpus")
    return v


class _DeploymentBase(ModelIn):
    @field_validator("gpu", check_fields=False)
    @classmethod
    def _gpu_id(cls, v: str) -> str:
        return gpu_id(v)

    @field_validator("gpu_overrides", "model_overrides", check_fields=False)
    @classmethod
    def _finite_overrides(cls, v, info):
        if v is not None:
            check_numbers(v, info.field_name)
        return v

    @field_validator("gpu_overrides", check_fields=False)
    @classmethod
    def _gpu_overrides_apply(cls, v, info):
        """Each override applied to the named catalog GPU now, so a bad key or value is a 422 on this field
        (an unknown ``gpu`` is reported on ``gpu`` later)."""
        gpu = info.data.get("gpu")
        if v and isinstance(gpu, str):
            from ..hardware import apply_overrides, load_catalog
            catalog = load_catalog()
            if gpu in catalog:
                try:
                    apply_overrides(catalog[gpu], v)
                except (ValueError, TypeError) as e:
                    raise ValueError(f"gpu_overrides: {e}") from None
        return v

    def deployment_kwargs(self) -> dict:
        """Keyword arguments of make_deployment except the model (resolved separately, see modelsource)."""
        d = {o.name: getattr(self, o.name) for o in opts.DEPLOYMENT
             if o.api and o.name not in ("model", "model_overrides", "calibration")}
        d["pp_split"] = tuple(d["pp_split"]) if d.get("pp_split") is not None else None
        d["gpu_overrides"] = d.get("gpu_overrides") or None
        v = {o.name: getattr(self, o.name) for o in opts.ENGINE}
        return {**d, "calibration": self.calibration_arg, "engine": self.engine,
                "engine_options": opts.engine_options(v)}


_SKIP = ("model", "calibration")  # ModelIn declares them (catalog name or pasted config; never a server file)
DeploymentIn = _model("DeploymentIn", _DeploymentBase, (opts.DEPLOYMENT, opts.ENGINE), _SKIP,
                      "Model + GPU + parallel layout + dtypes + serving engine (the fields of make_deployment).")
WorkloadIn = _model("WorkloadIn", DeploymentIn, (opts.STATIC,), (),
                    "A deployment and a static batch: ``batch`` prompts of ``input_len`` tokens, ``output_len`` "
                    "generated.")


_EstimateFields = _model("_EstimateFields", WorkloadIn, (opts.ESTIMATE, opts.LENGTHS), (), "")


class EstimateIn(_EstimateFields):
    """``static``: one batch (TTFT, TPOT, memory, energy, split); ``max-throughput``: offline operating point
    (``requests`` issued); ``serving``: the analytic steady state at ``rate`` requests/s or ``concurrency``
    clients (``think_time``). ``input_dist``/``output_dist``/``dataset`` describe the request lengths of
    max-throughput and serving. The two steady states also return ``view``: memory per GPU and the time
    split of their own operating point."""

    num_requests: int | None = Field(None, ge=1, le=MAX_OFFLINE_REQUESTS,
                                     description="the same as requests (the name older clients send)")

    @model_validator(mode="after")
    def _requests_alias(self):
        if self.num_requests is not None:
            if "requests" in self.model_fields_set and self.requests != self.num_requests:
                raise ValueError(f"num_requests={self.num_requests} and requests={self.requests} given together; "
                                 f"allowed: one of them (num_requests is the older name of requests)")
            self.requests = self.num_requests
        return self


_SIM_RATE = opts.by_name(opts.SERVING)["rate"]


class _SimulateBase(DeploymentIn):
    @field_validator("rate", check_fields=False)
    @classmethod
    def _rate(cls, v):
        """The declared range of a simulation's rate (options.SERVING), or 'inf'."""
        if v != "inf" and not _SIM_RATE.gt < v <= _SIM_RATE.api_le:
            raise ValueError(f"rate must be > {_SIM_RATE.gt:g} and <= {_SIM_RATE.api_le:g} requests/s, or 'inf'")
        return v


SimulateIn = _model("SimulateIn", _SimulateBase, (opts.SERVING,), (),
                    "Serving simulation: Poisson arrivals at ``rate`` (or all at once, 'inf'), or ``concurrency`` "
                    "closed-loop clients; continuous batching under the engine's rules.")


class ValidateIn(Strict):
    """Measured rows as CSV text (the schema of inferbound.validation.dataset), predicted and scored."""

    csv: str = Field(..., max_length=MAX_CSV_CHARS, description="CSV text with a header row and at least one row")
    calibration: Calibration = "default"

    @field_validator("csv")
    @classmethod
    def _has_rows(cls, v: str) -> str:
        lines = [ln for ln in v.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise ValueError(f"csv has {'no header and ' if not lines else ''}no rows under its header; allowed: "
                             f"a header row and at least one measured row")
        return v

    @property
    def calibration_arg(self) -> str | None:
        return None if self.calibration == "default" else self.calibration


class _SearchBase(ModelIn):
    @field_validator("gpus", check_fields=False)
    @classmethod
    def _gpu_ids(cls, v):
        if v is not None:
            if not 1 <= len(v) <= 64:
                raise ValueError("name 1..64 GPU ids, or null for the whole catalog")
            for g in v:
                if not re.match(GPU_PATTERN, g):
                    raise ValueError(f"gpu={g!r} is not a GPU id; allowed: ids from GET /api/gpus")
        return v

    @field_validator("dtypes", mode="before", check_fields=False)
    @classmethod
    def _dtypes(cls, v):
        allowed = opts.SEARCH_DTYPES
        if isinstance(v, list) and (not 1 <= len(v) <= len(allowed) or any(d not in allowed for d in v)):
            raise ValueError(f"dtypes must list 1..{len(allowed)} of {', '.join(allowed)}")
        return v


SearchIn = _model("SearchIn", _SearchBase, (opts.SEARCH, opts.LENGTHS, opts.ENGINE), _SKIP,
                  "Search GPU types x counts x layouts x dtypes x concurrency for ``objective`` under SLOs and budgets, "
                  "under one serving engine. Size cap: (GPU types searched) x max_gpus <= MAX_SEARCH_SIZE, a quarter "
                  "of it with all_layouts; ``gpus`` null means the whole catalog. The frontier is thinned to "
                  "``max_points`` evenly along x; ``frontier_x``/``frontier_y`` default to data/search.yaml "
                  "``output.frontier`` (the CLI's plot). ``emit``: the launch command of row ``emit_rank`` for "
                  "that engine (the search then models it, as the CLI's --emit). The reply's ``csv`` is the ranked "
                  "table as the CLI's --csv writes it.")


_CompareWorkload = _model("CompareWorkloadIn", Checked, (opts.STATIC, opts.ESTIMATE, opts.LENGTHS), (),
                          "The workload every deployment of a comparison runs (compare.py): the scenario and its "
                          "options, as ``inferbound compare``'s ``workload:`` mapping.")
CompareDeploymentIn = create_model("CompareDeploymentIn", __base__=DeploymentIn,
                                   __doc__="One deployment of a comparison (the fields of make_deployment) and an "
                                           "optional label.",
                                   label=(str | None, Field(None, max_length=100, description="row label")))


class CompareIn(Strict):
    """Deployments side by side under one workload (``inferbound compare``): one row per deployment with each
    figure's ratio to the first. At most MAX_COMPARE_DEPLOYMENTS deployments."""

    workload: _CompareWorkload = Field(default_factory=_CompareWorkload)  # type: ignore[valid-type]
    deployments: list[CompareDeploymentIn] = Field(..., min_length=1, max_length=MAX_COMPARE_DEPLOYMENTS)  # type: ignore[valid-type]


MAX_COMMAND_CHARS = 4000  # one pasted command line of /api/bench
_BENCH = opts.by_name(opts.BENCH)


class _BenchBase(Strict):
    @field_validator("gpu", check_fields=False)
    @classmethod
    def _gpu_id(cls, v: str) -> str:
        return gpu_id(v)


BenchIn = create_model(
    "BenchIn", __base__=_BenchBase,
    __doc__="A benchmark's own command lines (``inferbound bench``): the serve command and the load tool's command "
            "line as pasted text, replayed on ``gpu``; the reply's ``result`` is the JSON the CLI's --json prints.",
    **{o.name: _field(o) for o in opts.BENCH if o.api},
    serve=(str | None, Field(None, max_length=MAX_COMMAND_CHARS, description=_BENCH["serve_command"].help)),
    load=(str, Field(..., min_length=1, max_length=MAX_COMMAND_CHARS,
                     description=_BENCH["load_command"].help.replace("after --: ", ""))),
    engine=(str | None, Field(None, max_length=64, pattern=r"^[a-z][a-z0-9_-]*(@[A-Za-z0-9_.\-]+)?$",
                              description=_BENCH["engine"].help)),
)


MAX_FLEET_YAML_CHARS = 20_000  # the pasted fleet file of /api/fleet


class _FleetBase(Strict):
    @model_validator(mode="after")
    def _one_source(self):
        if (self.fleet is None) == (self.yaml is None):
            raise ValueError("give exactly one of fleet (the fleet file as a JSON mapping) and yaml (its text)")
        if self.fleet is not None:
            check_numbers(self.fleet, "fleet")
        return self


FleetIn = create_model(
    "FleetIn", __base__=_FleetBase,
    __doc__="A day of traffic over pools of replicas (``inferbound fleet FILE.yaml``): the fleet file's content as "
            "a JSON mapping (``fleet``) or as YAML text (``yaml``); the reply's ``result`` is the JSON the CLI's "
            "--json prints. Over the API the traffic is ``rate`` (a server-side trace file is refused).",
    **{o.name: _field(o) for o in opts.FLEET if o.api},
    fleet=(dict[str, Any] | None, Field(None, description="the fleet file as JSON: traffic, pools, router, slo, "
                                                          "optional autoscale, sessions, seed (docs/fleet.md)")),
    yaml=(str | None, Field(None, max_length=MAX_FLEET_YAML_CHARS, description="the fleet file's YAML text")),
)
