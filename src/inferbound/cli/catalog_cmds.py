"""``inferbound models`` and ``inferbound gpus``: the bundled catalogs."""
from __future__ import annotations

from rich.table import Table

from . import app
from .common import GpuFile, Json, console, labelled, print_json, run


@app.command()
def models(json: Json = False) -> None:
    """List the bundled model catalog: parameters, layers, attention type, KV bytes per token."""
    def body():
        from ..report import model_rows
        rows = model_rows()
        if json:
            return print_json(rows)
        t = Table(title="Model catalog (params in billions; KV per token at bf16, all attention layers; "
                        "attention GQA-n = n KV heads)")
        for c in ("alias", "family", "total B", "active B", "layers", "attention", "experts", "KV B/token"):
            t.add_column(c, justify="right" if c in ("total B", "active B", "layers", "KV B/token") else "left")
        for r in rows:
            t.add_row(r["alias"], r["family"], f"{r['total_params'] / 1e9:.2f}", f"{r['active_params'] / 1e9:.2f}",
                      str(r["layers"]), r["attention"], r["experts"], f"{r['kv_bytes_per_token_bf16']:,.0f}")
        console.print(t)
    run(body)


@app.command()
def gpus(json: Json = False, gpu_file: GpuFile = None) -> None:
    """List the GPU catalog (dense peaks, HBM in GB = 1e9 bytes, links, power, price)."""
    def body():
        from ..hardware import gpu_table, load_catalog, skipped_gpus
        rows = gpu_table(load_catalog(gpu_file))
        skipped = skipped_gpus(gpu_file)
        if json:
            return print_json({"gpus": rows, "skipped": skipped})
        t = Table(title="GPU catalog (dense TFLOP/s; HBM GB = 1e9 B; scale-up GB/s per direction)")
        cols = [("id", "id"), ("bf16 TF", "bf16_tflops"), ("fp8 TF", "fp8_tflops"), ("fp4 TF", "fp4_tflops"),
                ("HBM GB", "hbm_gb"), ("HBM TB/s", "hbm_tb_s"), ("scale-up GB/s", "scaleup_gb_s"),
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
        for gid, why in skipped.items():
            console.print(labelled(f"skipped {gid}:", "yellow", why), highlight=False)
    run(body)
