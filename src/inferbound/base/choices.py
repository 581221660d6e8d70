"""Allowed-value names that the search layer defines its behaviour by and that the option declarations
(faces/options.py: CLI choices, API schemas) list too, kept at the floor so that declaring the options (every
command, ``inferbound estimate`` included) does not import the search package, its evaluation and the serving
simulator under it. The search modules re-export them where they were defined before (search/metrics.py
``SENSE``, ``OBJECTIVES``; search/emit.py ``ENGINES``; search/backends.py ``BACKENDS``): one definition, here."""
from __future__ import annotations

#: search figures and their sense: +1 larger is better, -1 smaller is better (search/metrics.py ranks by it)
SENSE: dict[str, int] = {
    "tok_s_per_gpu": 1, "tok_s_per_user": 1, "tokens_per_joule": 1, "usd_per_mtok": -1, "gpus_for_rate": -1,
    "tok_s": 1, "requests_per_s": 1, "ttft_ms": -1, "tpot_ms": -1, "e2e_ms": -1, "gpus": -1, "watts": -1,
    "usd_per_hour": -1, "concurrency": 1,
}
#: what search ranks by: the one list (the CLI and API choices import it, faces/options.py)
OBJECTIVES = ("tok_s_per_gpu", "tok_s_per_user", "tokens_per_joule", "usd_per_mtok", "gpus_for_rate")
#: engines search/emit.py writes launch commands for
ENGINES = ("vllm", "sglang", "trtllm")
#: where search evaluates layouts (search/backends.py): in local worker processes, or on a Ray cluster
BACKENDS = ("local", "ray")
