"""data/kernels.yaml as data: the measured GPUs' entries, each parsed when first asked for, and the rest
(schema, provenance, dtypes, priors). pricing/kernels/curves.py builds curves from it; deploy/bands.py reads
which GPUs are measured and which are priors derived from one.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..base.datafiles import load_yaml


@lru_cache(maxsize=1)
def _sections() -> tuple[str, dict[str, str]]:
    """kernels.yaml cut into (everything but the measured GPUs' entries, {gpu id: its entry's text}).

    The file is large (about 25 kB per measured GPU) and one run prices one or two GPUs, so each GPU's
    entry is parsed when first asked for. The writer (benchmarks/kernel_fit/writer.py) puts each entry
    under ``gpus:`` as a two-space-indented ``id:`` line followed by deeper lines; comment lines between
    entries are dropped. tests/test_kernels.py checks that the parts parse to the whole file."""
    text = (resources.files("inferbound") / "data" / "kernels.yaml").read_text("utf-8")
    rest, entries, current, in_gpus = [], {}, None, False
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            in_gpus, current = line.rstrip() == "gpus:", None
            if not in_gpus:
                rest.append(line)
            continue
        if in_gpus:
            if line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":") \
                    and not line.lstrip().startswith("#"):
                current = line.strip()[:-1]
                entries[current] = []
            elif current is not None and line.startswith("    "):
                entries[current].append(line)
            continue
        rest.append(line)
    return "\n".join(rest) + "\n", {g: "\n".join(ls) + "\n" for g, ls in entries.items()}


@lru_cache(maxsize=1)
def _meta() -> dict:
    """kernels.yaml without the measured GPUs: schema, provenance, units, dtypes, priors."""
    return load_yaml(_sections()[0], cache="kernels.yaml")


@lru_cache(maxsize=None)
def _measured(gpu_id: str) -> dict | None:
    """One measured GPU's entry of kernels.yaml (None if it has none)."""
    block = _sections()[1].get(gpu_id)
    if block is None:
        return None
    return load_yaml(block.replace("\n    ", "\n").removeprefix("    "), cache=f"kernels.yaml-{gpu_id}")


def measured_gpus() -> list[str]:
    """Ids of the GPUs with measured curves, in the file's order."""
    return list(_sections()[1])


@lru_cache(maxsize=1)
def load_data() -> dict:
    """Parsed kernels.yaml, every GPU entry included; read-only."""
    return {**_meta(), "gpus": {g: _measured(g) for g in measured_gpus()}}


@lru_cache(maxsize=1)
def prior_templates() -> dict[str, str]:
    """{GPU id with a prior (and no measurement): the measured GPU its curves are derived from}."""
    measured = set(measured_gpus())
    return {g: str(r["derived_from"]) for g, r in (_meta().get("priors") or {}).items() if g not in measured}
