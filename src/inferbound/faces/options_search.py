"""Options of ``search`` (faces/options.py re-exports every name): ``SEARCH``, the dtype combinations it sweeps
and the figures a frontier may plot; the shared options it takes (model, lengths, SLOs, prices, calibration)
are the declarations of options_deploy.py and options_workload.py, with search's own help or bounds (Opt.but)."""
from __future__ import annotations

from ..base.choices import ENGINES as ENGINE_NAMES, OBJECTIVES, SENSE
from ..base.datafiles import data_yaml
from .opt import Opt, declare as _o
from .options_deploy import CALIBRATION, GPU_SCALE, MODEL, PRICES
from .options_workload import INPUT_LEN, LONG_CONTEXT, OUTPUT_LEN, SLO_E2E_MS, SLO_TPOT_MS, SLO_TTFT_MS

#: the dtype combinations search sweeps (data/search.yaml space.dtypes)
#: data/search.yaml, read here rather than through search/space.py (search_defaults, dtype_combos: the same file)
#: so that declaring the options does not import the search package
_SEARCH_YAML = data_yaml("search.yaml")
SEARCH_DTYPES = tuple(c["name"] for c in _SEARCH_YAML["space"]["dtypes"])
#: search figures a frontier may plot (search/metrics.py SENSE)
METRICS = tuple(SENSE)


MAX_SEARCH_GPUS = 72  # largest layout a search sweeps (one NVL72 rack): the JSON API's cap, the CLI's unless --no-cap

SEARCH: tuple[Opt, ...] = (
    MODEL,
    _o("gpus", "list_str", None, "GPU ids, comma-separated (default: the whole catalog)"),
    _o("max_gpus", "int", _SEARCH_YAML["space"]["max_gpus"], "largest layout in GPUs (data/search.yaml "
       "space.max_gpus)", ge=1, api_le=MAX_SEARCH_GPUS),
    _o("no_cap", "bool", False, f"lift the search's size caps: --max-gpus above {MAX_SEARCH_GPUS} (the JSON API's "
       "cap) and the peak-memory budget (data/search.yaml limits.memory_budget_gb)", api=False),
    _o("objective", "str", "tok_s_per_gpu", "what to maximize or minimize", choices=OBJECTIVES),
    SLO_TTFT_MS.but(help="time-to-first-token SLO (ms)"),
    SLO_TPOT_MS.but(help="TPOT / ITL SLO (ms)"),
    SLO_E2E_MS.but(help="end-to-end latency SLO (ms)"),
    _o("max_dollars_per_hour", "float", None, "budget: $/h of the fleet", gt=0, api_le=1e9),
    _o("max_watts", "float", None, "budget: watts of the fleet", gt=0, api_le=1e12),
    _o("max_total_gpus", "int", None, "budget: GPUs of the fleet", ge=1, api_le=1_000_000, flags=("--gpu-budget",)),
    _o("target_rate", "float", None, "requests/s the fleet must serve", gt=0, api_le=1e9),
    INPUT_LEN,
    OUTPUT_LEN.but(ge=2),  # search.search: a TPOT needs a second output token
    LONG_CONTEXT,
    _o("disaggregated", "bool", False, "separate prefill and decode pools"),
    _o("both_modes", "bool", False, "sweep aggregated and disaggregated serving, ranked together"),
    _o("dtypes", "list_str", None, f"dtype combinations: {','.join(SEARCH_DTYPES)}", choices=SEARCH_DTYPES),
    _o("all_layouts", "bool", False, "also PP inside NVLink islands, partial EP"),
    _o("top", "int", 10, "rows of the ranked table", ge=1, api_le=100),
    PRICES,
    GPU_SCALE.but(help="also search a what-if copy of every GPU, NAME=FACTOR[,...]: hbm_bw, flops, hbm_gb, link_bw, "
                       "scaleup_bw, scaleout_bw, pcie_bw"),
    CALIBRATION,
    _o("emit", "str", None, "print a launch command for this engine (the search then models it)",
       choices=ENGINE_NAMES),
    _o("emit_rank", "int", 1, "row whose launch command --emit prints", ge=1, api_le=100),
    _o("frontier_x", "str", None, "frontier x axis (default: data/search.yaml output.frontier)", choices=METRICS,
       cli=False),
    _o("frontier_y", "str", None, "frontier y axis (default: data/search.yaml output.frontier)", choices=METRICS,
       cli=False),
    _o("max_points", "int", 500, "frontier points returned, thinned evenly along x", ge=2, le=2000, cli=False),
)
