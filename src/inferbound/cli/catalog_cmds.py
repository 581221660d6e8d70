"""``inferbound models`` and ``inferbound gpus``: the bundled catalogs."""
from __future__ import annotations

from rich.table import Table

from ..faces.options import GPU_FILE, JSON, PRICES
from . import app
from .common import console, labelled, print_json, run
from .params import annotation, declared, parse


@app.command()
@declared
def models(json: annotation(JSON)) -> None:
    """List the bundled model catalog: parameters, layers, attention type, KV bytes per token, and the
    short aliases that also resolve (``llama-3.3-70b`` for ``llama-3.3-70b-instruct``)."""
    def body():
        from ..faces.report import model_rows
        rows = model_rows()  # with short_aliases (faces.report.with_short_aliases), as /api/models
        if json:
            return print_json(rows)
        t = Table(title="Model catalog (params in billions; KV per token at bf16, all attention layers; "
                        "attention GQA-n = n KV heads; short alias: another name that resolves to it)")
        for c in ("alias", "short alias", "family", "total B", "active B", "layers", "attention", "experts",
                  "KV B/token"):
            t.add_column(c, justify="right" if c in ("total B", "active B", "layers", "KV B/token") else "left")
        for r in rows:
            t.add_row(r["alias"], ", ".join(r["short_aliases"]), r["family"], f"{r['total_params'] / 1e9:.2f}",
                      f"{r['active_params'] / 1e9:.2f}", str(r["layers"]), r["attention"], r["experts"],
                      f"{r['kv_bytes_per_token_bf16']:,.0f}")
        console.print(t)
    run(body)


@app.command()
@declared
def gpus(json: annotation(JSON), gpu_file: annotation(GPU_FILE), prices: annotation(PRICES)) -> None:
    """List the GPU catalog (dense peaks, HBM in GB = 1e9 bytes, links, power) and each GPU's price: the cited
    on-demand $/GPU-hour with its provider and date, the user's (--price), or why there is none."""
    def body():
        from ..hardware import apply_prices, check_prices, gpu_table, load_catalog, skipped_gpus
        catalog = load_catalog(gpu_file)
        priced = apply_prices(catalog.values(), check_prices(parse(PRICES, prices), catalog))
        rows = gpu_table({g.id: g for g in priced})
        skipped = skipped_gpus(gpu_file)
        if json:
            return print_json({"gpus": rows, "skipped": skipped})
        t = Table(title="GPU catalog (dense TFLOP/s; HBM GB = 1e9 B; scale-up GB/s per direction)")
        cols = [("id", "id"), ("bf16 TF", "bf16_tflops"), ("fp8 TF", "fp8_tflops"), ("fp4 TF", "fp4_tflops"),
                ("HBM GB", "hbm_gb"), ("device GiB", "hbm_device_gib"), ("HBM TB/s", "hbm_tb_s"),
                ("scale-up GB/s", "scaleup_gb_s"),
                ("domain", "scaleup_domain"), ("NIC Gb/s", "scaleout_gbit_s"), ("TDP W", "tdp_w"),
                ("$/h", "price_usd_h"), ("eff c/m", None)]
        for name, _ in cols:
            t.add_column(name, justify="left" if name == "id" else "right")
        for r in rows:
            cells = ["-" if key and r[key] is None else (f"{r['eff_compute']:.2f}/{r['eff_memory']:.2f}"
                     if key is None else f"{r[key]:g}" if isinstance(r[key], float) else str(r[key]))
                     for _, key in cols]
            t.add_row(*cells)
        console.print(t)
        _price_table(rows)
        for gid, why in skipped.items():
            console.print(labelled(f"skipped {gid}:", "yellow", why), highlight=False)
    run(body)


def _price_table(rows: list[dict]) -> None:
    """Each GPU's $/GPU-hour and where it comes from (data/prices.yaml, hardware/prices.py)."""
    t = Table(title="Prices: lowest on-demand list $/GPU-hour among the providers of the rule in data/prices.yaml "
                    "(docs/hardware.md); (--price) = yours")
    for c in ("id", "$/GPU-h", "from", "as of", "source, or why no price"):
        t.add_column(c, justify="right" if c == "$/GPU-h" else "left", overflow="fold")
    for r in rows:
        usd, by = r["price_usd_h"], r["price_by"]
        if usd is None:
            t.add_row(r["id"], "-", by if by not in (None, "catalog") else "", "", r["price_note"] or "no price given")
        elif by == "catalog":
            t.add_row(r["id"], f"{usd:g}", f"{r['price_provider']}, {r['price_instance']} ({r['price_kind']})",
                      r["price_as_of"], r["price_source"])
        else:
            t.add_row(r["id"], f"{usd:g}", f"({by})", r["price_as_of"] or "", r["price_note"] or r["price_source"] or "")
    console.print(t)
