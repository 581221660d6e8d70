"""Every user-facing option, declared once: the CLI's typer parameters (cli/params.py) and the JSON
API's request schemas (web/schemas.py) are both built from these declarations, so the two faces take
the same options with the same names, defaults, help and ranges. Every CLI command's options are here,
the CLI-only ones too (files, --json, validate, calibrate, probe, serve, the catalogs).

An :class:`Opt` names the keyword (the Python argument and the JSON field), its kind, its default,
its help text, its CLI flag(s), its valid range (``ge``/``gt``/``le``/``lt``, checked on both faces with
a one-line error), its allowed values (``choices``: the tuple constant of the lowest layer that uses
them, imported here, never a second copy) and, for the API only, a work cap (``api_le``) and whether
each face offers it at all.

One declaration per name: :func:`_o` (opt.declare) refuses a name declared twice. Where commands genuinely differ
(search needs output_len >= 2 for a TPOT, a simulation caps the output length of a request, estimate
issues 10,000 requests where simulate simulates 1,000), the command's group states its own default,
bounds or help once, here, with :meth:`Opt.but`, which keeps the declaration it derives from (``base``).

The declarations live in four modules by group, imported here in declaration order, every name re-exported
(``from inferbound.faces.options import X`` is the one import path): options_deploy.py, options_workload.py,
options_search.py, options_commands.py.

Groups: ``DEPLOYMENT`` (model, GPU, layout, dtypes: make_deployment), ``ENGINE`` (the serving engine
and its overrides: runtime.resolve), ``STATIC`` (a static batch), ``ESTIMATE`` (its scenario),
``LENGTHS`` (request length mixes), ``SERVING`` (a simulated workload), ``SEARCH``; and per command
``ESTIMATE_OUTPUT``, ``SIMULATE_OUTPUT``, ``SEARCH_OUTPUT``, ``COMPARE``, ``VALIDATE``, ``CALIBRATE``,
``PROBE``, ``SERVE``, ``MODELS``, ``GPUS``.
"""
from __future__ import annotations

from .opt import DECLARED, REQUIRED, Opt, any_given, by_name, declare as _o  # noqa: F401  (re-exported)
# the allowed-value tuples the declarations use, under the names readers of options.py know them by
from ..base.dtypes import DTYPES  # noqa: F401
from ..deploy.config import COLLECTIVE_ALGOS, EP_A2A  # noqa: F401
from ..deploy.offload import MODES as KV_OFFLOAD_MODES  # noqa: F401
from ..deploy.runtime import PREEMPTIONS, RESERVATIONS  # noqa: F401
from ..base.choices import BACKENDS, ENGINES as ENGINE_NAMES, OBJECTIVES, SENSE  # noqa: F401  (not search/: cold start)
from ..validation.dataset import SCENARIOS as ROW_SCENARIOS  # noqa: F401
from .options_deploy import (MAX_GPUS, MAX_BATCH, MAX_TOKENS, MAX_TOKEN_BUDGET, _default_engine, PRICES, MODEL,
                             CALIBRATION, GPU_FILE, MODEL_OVERRIDES, GPU_OVERRIDES, GPU_SCALE, DEPLOYMENT,
                             ENGINE_OPT, ENGINE, engine_options)  # noqa: F401
from .options_workload import (SCENARIOS, LONG_CONTEXT, MAX_SIM_REQUESTS, SIM_REQUESTS_CLI_CAP, MAX_SIM_OUTPUT,
                               MAX_OFFLINE_REQUESTS, INPUT_LEN, OUTPUT_LEN, REQUESTS, RATE, CONCURRENCY,
                               THINK_TIME, SLO_TTFT_MS, SLO_TPOT_MS, SLO_E2E_MS, STATIC, SCENARIO, PREFILL_LAYOUT,
                               DECODE_LAYOUT, IMAGES, ESTIMATE, INPUT_DIST, OUTPUT_DIST, TRACE, DATASET, LENGTHS,
                               SERVING)  # noqa: F401
from .options_search import (SEARCH_DTYPES, METRICS, MAX_SEARCH_GPUS, SEARCH)  # noqa: F401
from .options_commands import (CV_KEYS, LOG_LEVELS, JSON, STRICT, PLOT, CSV, OUT, FILE, ESTIMATE_OUTPUT,
                               SIMULATE_OUTPUT, SEARCH_OUTPUT, COMPARE, VALIDATE, CALIBRATE, PROBE, SERVE, MODELS,
                               GPUS, BENCH, FLEET)  # noqa: F401
