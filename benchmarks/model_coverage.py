"""How many of transformers' causal-LM model types inferbound reads exactly, and which it refuses and why.

Runs the comparison of tests/test_transformers_wide.py (``tests/_meta_count.check``: the class default of
every entry of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``, built on the meta device, against
``count_params`` / ``kv_bytes_for_context`` / ``state_bytes_per_sequence``; with ``--switches`` also every
boolean switch flipped) over the same table (data/refused_families.yaml) and prints the counts the
README's models section quotes, the exact types, and the refused ones grouped by reason. Offline, CPU,
about a minute.

    .venv/bin/python benchmarks/model_coverage.py [--switches] [--markdown]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from transformers import __version__ as hf_version  # noqa: E402
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES  # noqa: E402

from _meta_count import check, check_switches, refused_table  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switches", action="store_true", help="also flip every boolean switch (slower)")
    ap.add_argument("--markdown", action="store_true", help="print the README table rows")
    args = ap.parse_args()
    t0 = time.time()
    table = refused_table()
    types = sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    exact, refused, failed = [], defaultdict(list), []
    for t in types:
        out = check(t, table)
        if out.status == "exact" and args.switches and (problems := check_switches(t)):
            out.status, out.detail = "wrong", "; ".join(problems)
        if out.status == "exact":
            exact.append(t)
        elif out.status == "refused":
            refused[table[t][0]].append(t)
        else:
            failed.append(out)
    n_ref = sum(len(v) for v in refused.values())
    by_choice = sum(len(v) for g, v in refused.items() if g.startswith("by choice"))
    print(f"transformers {hf_version}: {len(types)} causal-LM model types (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)")
    print(f"exact (parameters to the parameter, KV and state to the element): {len(exact)}")
    print(f"refused in one line, listed with the reason: {n_ref} ({by_choice} by choice, "
          f"{n_ref - by_choice} not yet priced or read)")
    print(f"wrong or unlisted (the test fails on these): {len(failed)}")
    for o in failed:
        print(f"  {o.model_type}: {o.status}: {o.detail}")
    if args.markdown:
        print("\n| | model types |\n|---|---|")
        print(f"| exact ({len(exact)}) | {', '.join(exact)} |")
        for group, ts in refused.items():
            print(f"| refused, {group} ({len(ts)}) | {', '.join(ts)} |")
    else:
        print("\nexact:", ", ".join(exact))
        for group, ts in refused.items():
            print(f"\nrefused, {group} ({len(ts)}):\n  {', '.join(ts)}")
    print(f"\n({time.time() - t0:.0f} s{', switches flipped' if args.switches else ''})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
