"""Hardware catalog: builds :class:`GPU` objects from ``data/hardware.yaml`` + ``data/efficiency.yaml``
(+ ``data/prices.yaml``: each GPU's cited $/GPU-hour, hardware/prices.py).

Unit conversion (vendor units in the YAML, SI in :class:`GPU`)::

    peak_flops[dt]  = <dt>_dense_tflops * 1e12       (fp32 <- fp32_tflops, int8 <- int8_dense_tops)
    hbm_bytes       = hbm_device_bytes               (data/device_memory.yaml or a user entry: the device total
                                                      CUDA/HIP report, which engines size by: vLLM's
                                                      total_gpu_memory, SGLang's total MiB; cited per GPU)
                      else hbm_gb * 1e9              (hbm_gb * 2**30 for HBM_GIB_IDS, marked "# GiB"). The
                      datasheet "80 GB" of an H100 is 85.05e9 B as CUDA reports it (HBM stacks are binary
                      sizes), so the decimal reading understates the KV cache by ~7 % where no total is cited.
    hbm_bw          = hbm_tbps * 1e12
    scaleup_bw      = scaleup_bw_gbps_unidir * 1e9   (else bidir / 2; PCIe-only cards: else pcie_bw)
    scaleout_bw     = scaleout_gbps_per_gpu * 1e9 / 8   (Gb/s -> bytes/s; null -> 0)
    pcie_bw         = PCIE_X16_BW[pcie_gen]          (per direction; null -> 0)
    price_per_hour  = price.usd_per_gpu_hour     (prices.py: a cited figure, or null with a reason)
    nvlink          = scaleup_domain > 1 and scaleup_tech does not start with "none"
    nvls            = nvlink and NVSwitch / NVLink Switch in scaleup_tech and arch Hopper/Blackwell
    power           = idle/compute/memory fractions (efficiency.yaml) * tdp_w

Built-in entries without a bf16/fp16 peak, HBM size/bandwidth or a TDP are *skipped*, never dropped
silently: ``skipped_gpus()`` returns {id: reason}. A TDP missing from hardware.yaml may be supplied
as ``power: {tdp_w: ...}`` in efficiency.yaml or in a user file.

User hardware files
-------------------
YAML files named in ``extra_paths`` and in ``$INFERBOUND_HARDWARE_PATH`` (``os.pathsep``-separated
files or directories; a directory contributes its ``*.yaml``/``*.yml``, sorted) add or amend GPUs.
A file holds one entry (a mapping with ``id``) or a list under ``accelerators:``, in the schema of
one hardware.yaml entry plus optional ``efficiency:`` (keys of :class:`Efficiency`) and ``power:``
(``idle_fraction_of_tdp``, ``compute_fraction``, ``memory_fraction``, ``tdp_w``, or absolute
``idle_w``/``compute_w``/``memory_w`` in watts, which win over fractions) mappings, and optional
explicit ``nvlink`` / ``nvls`` booleans. An entry whose ``id`` is already in the catalog is merged
key by key over it (so ``{id: tpu_v5e, tdp_w: 200}`` completes a skipped entry); a new id must be
complete. Files are applied in order: the environment variable's, then ``extra_paths``; later wins.
Errors in user files raise ValueError naming the file, the entry and the field. See docs/hardware.md.

Layering of efficiency figures: efficiency.yaml ``defaults`` < ``gpus.<id>`` < user ``efficiency:``
/ ``power:`` < ``get_gpu(overrides=...)``. ``compute_by_dtype`` is replaced as a whole by a layer
that sets it.
"""
from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from inferbound.base.datafiles import load_yaml, yaml_error
from inferbound.base.dtypes import DTYPES
from inferbound.hardware.precision import peak_flops, resolve_compute_dtype  # noqa: F401  (re-export)
from inferbound.hardware.prices import LEGACY_KEY, check_prices, merge_builtin_prices, price_fields, read_price, with_price
from inferbound.hardware.spec import GPU, Efficiency, Power

HARDWARE_ENV = "INFERBOUND_HARDWARE_PATH"

#: catalog dtype -> hardware.yaml key (TFLOP/s or TOP/s, dense)
PEAK_KEYS: dict[str, str] = {"fp32": "fp32_tflops", "bf16": "bf16_dense_tflops",
                             "fp16": "fp16_dense_tflops", "fp8": "fp8_dense_tflops",
                             "int8": "int8_dense_tops", "fp4": "fp4_dense_tflops"}

#: ids whose hbm_gb hardware.yaml marks "# GiB" (Google/AWS docs give GiB): converted with 2**30
HBM_GIB_IDS: frozenset[str] = frozenset({"tpu_v4", "tpu_v5p", "tpu7x_ironwood", "trainium2",
                                         "inferentia2"})

#: PCIe x16 bandwidth per direction, bytes/s, by generation. PCI-SIG: 8/16/32/64 GT/s per lane for
#: gen 3/4/5/6, i.e. ~1/2/4/8 GB/s per lane after encoding; x16 -> 16/32/64/128 GB/s (approximate).
PCIE_X16_BW: dict[int, float] = {3: 16e9, 4: 32e9, 5: 64e9, 6: 128e9}

EFFICIENCY_KEYS = frozenset(Efficiency.model_fields)
POWER_KEYS = frozenset({"idle_fraction_of_tdp", "compute_fraction", "memory_fraction", "tdp_w",
                        "idle_w", "compute_w", "memory_w"})
#: keys a user entry may hold besides those seen in hardware.yaml entries
EXTRA_ENTRY_KEYS = frozenset({"efficiency", "power", "nvlink", "nvls", "price", "hbm_device_bytes", LEGACY_KEY})


class _Skip(Exception):
    """A built-in entry lacks a figure the model needs (the message is the reason)."""


def _yaml(name: str) -> Any:
    return load_yaml(resources.files("inferbound").joinpath("data", name).read_text("utf-8"), cache=name)


def _check_layer(layer: dict, where: str) -> None:
    """Reject unknown keys in an efficiency layer (flat efficiency keys + ``power:`` mapping)."""
    for key, value in layer.items():
        if key == "power":
            if not isinstance(value, dict):
                raise ValueError(f"{where}: power must be a mapping of {', '.join(sorted(POWER_KEYS))}")
            for pkey in value:
                if pkey not in POWER_KEYS:
                    raise ValueError(f"{where}: power.{pkey} is not a power key; "
                                     f"allowed: {', '.join(sorted(POWER_KEYS))}")
        elif key not in EFFICIENCY_KEYS:
            raise ValueError(f"{where}: {key} is not an efficiency key; "
                             f"allowed: {', '.join(sorted(EFFICIENCY_KEYS))}")


@functools.lru_cache(maxsize=1)
def _builtin() -> tuple[dict[str, dict], dict, dict[str, dict], frozenset[str]]:
    """Parsed package data: (entries by id, defaults layer, per-GPU layers, known entry keys)."""
    hw, eff = _yaml("hardware.yaml"), _yaml("efficiency.yaml")
    entries = merge_builtin_prices({e["id"]: e for e in hw["accelerators"]}, _yaml("prices.yaml"))
    for gid, dm in (_yaml("device_memory.yaml").get("gpus") or {}).items():
        if gid not in entries:
            raise ValueError(f"device_memory.yaml gpus.{gid}: {gid!r} is not a hardware.yaml id")
        entries[gid] = dict(entries[gid], hbm_device_bytes=float(dm["bytes"]))
    _check_layer(eff["defaults"], "efficiency.yaml defaults")
    for gid, layer in (eff.get("gpus") or {}).items():
        if gid not in entries:
            raise ValueError(f"efficiency.yaml gpus.{gid}: {gid!r} is not a hardware.yaml id")
        _check_layer(layer, f"efficiency.yaml gpus.{gid}")
    known = frozenset(k for e in entries.values() for k in e) | EXTRA_ENTRY_KEYS
    return entries, eff["defaults"], eff.get("gpus") or {}, known


def _merge_layers(*layers: dict) -> tuple[dict, dict]:
    """Merge efficiency layers key by key; returns (efficiency kwargs, power kwargs)."""
    eff: dict = {}
    power: dict = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            if key == "power":
                power.update(value or {})
            else:
                eff[key] = value
    return eff, power


def _num(e: dict, key: str, default: float | None = None) -> float | None:
    """Numeric field ``key`` of an entry (None -> ``default``); ValueError naming the field otherwise."""
    value = e.get(key)
    if value is None:
        return default
    try:   # str accepted because YAML 1.1 reads "1e9" (no dot) as a string
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            return float(value)
    except ValueError:
        pass
    raise ValueError(f"{key}={value!r} is invalid: expected a number or null")


def _power(power: dict, tdp: float | None) -> dict:
    """Power kwargs: absolute watts where given, else fraction * TDP (fractions from efficiency.yaml)."""
    tdp = _num(power, "tdp_w", tdp)
    if tdp is None:
        raise _Skip("tdp_w is null and no power.tdp_w is given (the power model needs a TDP); "
                    "supply one in a user hardware file")
    out = {"tdp_w": tdp}
    for watts, frac in (("idle_w", "idle_fraction_of_tdp"), ("compute_w", "compute_fraction"),
                        ("memory_w", "memory_fraction")):
        given = _num(power, watts)
        out[watts] = given if given is not None else _num(power, frac) * tdp
    return out


def _to_gpu(e: dict, layers: list[dict], origin: str | None = None) -> GPU:
    """Convert one hardware.yaml-schema entry (vendor units) into a GPU (SI). Raises _Skip. ``origin``: the
    user file that set the entry's price or added the GPU (None: the built-in price, which
    prices.read_price checks strictly)."""
    gid = e["id"]
    peaks = {dt: _num(e, key) * 1e12 for dt, key in PEAK_KEYS.items() if e.get(key) is not None}
    if "bf16" not in peaks and "fp16" not in peaks:
        raise _Skip("no bf16/fp16 dense peak (bf16_dense_tflops and fp16_dense_tflops are null)")
    if e.get("hbm_gb") is None or e.get("hbm_tbps") is None:
        raise _Skip("hbm_gb or hbm_tbps is null")
    gen = e.get("pcie_gen")
    if gen is not None and gen not in PCIE_X16_BW:
        raise ValueError(f"pcie_gen={gen!r} is not known; allowed: {', '.join(map(str, PCIE_X16_BW))} or null")
    pcie_bw = PCIE_X16_BW[gen] if gen is not None else 0.0
    tech = str(e.get("scaleup_tech") or "")
    domain = int(_num(e, "scaleup_domain", 1.0))
    nvlink = e.get("nvlink", domain > 1 and not tech.strip().lower().startswith("none"))
    switched = "nvswitch" in tech.lower() or "nvlink switch" in tech.lower()
    arch = str(e.get("arch") or "")
    nvls = e.get("nvls", bool(nvlink and switched and arch.startswith(("Hopper", "Blackwell"))))
    if e.get("scaleup_bw_gbps_unidir") is not None:
        scaleup_bw = _num(e, "scaleup_bw_gbps_unidir") * 1e9
    elif e.get("scaleup_bw_gbps_bidir") is not None:
        scaleup_bw = _num(e, "scaleup_bw_gbps_bidir") * 1e9 / 2
    else:
        scaleup_bw = 0.0 if nvlink else pcie_bw   # no fabric figure: PCIe-only cards talk over PCIe
    gib = gid in HBM_GIB_IDS
    datasheet = _num(e, "hbm_gb") * (2**30 if gib else 1e9)
    device = e.get("hbm_device_bytes")
    eff, power = _merge_layers(*layers)
    price_per_hour, price = read_price(e, origin)
    return GPU.model_validate(dict(   # nested dicts: pydantic errors then name 'efficiency.compute' etc.
        id=gid, name=str(e.get("name") or gid), vendor=str(e.get("vendor") or ""),
        peak_flops=peaks,
        hbm_bytes=datasheet if device is None else _num(e, "hbm_device_bytes"),
        hbm_datasheet_bytes=None if device is None else datasheet,
        hbm_bw=_num(e, "hbm_tbps") * 1e12,
        scaleup_bw=scaleup_bw, scaleup_domain=domain, scaleup_tech=tech, nvlink=nvlink, nvls=nvls,
        scaleout_bw=_num(e, "scaleout_gbps_per_gpu", 0.0) * 1e9 / 8,
        pcie_bw=pcie_bw,
        price_per_hour=price_per_hour, price=price,
        efficiency=eff,
        power=_power(power, _num(e, "tdp_w")),
        sources=[str(s) for s in e.get("sources") or []],
    ))


def _one_line(err: ValidationError, prefix: str = "") -> str:
    """First pydantic error as 'field=value is invalid: what is allowed'."""
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "value"
    msg = first["msg"].removeprefix("Value error, ")
    return f"{prefix}{field}={first.get('input')!r} is invalid: {msg}"


def _user_files(extra_paths: list[Path] | None) -> list[Path]:
    """Files from $INFERBOUND_HARDWARE_PATH, then extra_paths (directories expand to *.yaml/*.yml)."""
    named = [("INFERBOUND_HARDWARE_PATH", p) for p in os.environ.get(HARDWARE_ENV, "").split(os.pathsep) if p]
    named += [("extra_paths", str(p)) for p in extra_paths or []]
    files: list[Path] = []
    for origin, name in named:
        path = Path(name).expanduser()
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{origin} entry {name!r} does not exist; expected a YAML file or a directory")
    return files


def _read_user_file(path: Path, known: frozenset[str]) -> list[dict]:
    """Entries of one user hardware file, checked for shape and unknown keys."""
    try:
        data = load_yaml(path.read_text("utf-8"))
    except yaml_error() as exc:
        raise ValueError(f"hardware file {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if isinstance(data, dict) and "accelerators" in data:
        entries = data["accelerators"]
    elif isinstance(data, dict) and "id" in data:
        entries = [data]
    else:
        raise ValueError(f"hardware file {path}: expected a mapping with 'id' or a list under 'accelerators:'")
    if not isinstance(entries, list):
        raise ValueError(f"hardware file {path}: 'accelerators' must be a list of mappings")
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("id"), str):
            raise ValueError(f"hardware file {path}: every entry must be a mapping with a string 'id'")
        for key in e:
            if key not in known:
                raise ValueError(f"hardware file {path}, gpu {e['id']!r}: {key!r} is not a hardware.yaml "
                                 f"field; allowed: {', '.join(sorted(known))}")
        for key in ("efficiency", "power"):
            if e.get(key) is not None and not isinstance(e[key], dict):
                raise ValueError(f"hardware file {path}, gpu {e['id']!r}: {key} must be a mapping")
        layer = dict(e.get("efficiency") or {}) | ({"power": e["power"]} if e.get("power") else {})
        _check_layer(layer, f"hardware file {path}, gpu {e['id']!r}")
    return entries


@functools.lru_cache(maxsize=16)
def _build(files: tuple[tuple[str, int, int], ...]) -> tuple[dict[str, GPU], dict[str, str]]:
    """(catalog, skipped) for the built-in data plus user ``files`` ((path, mtime_ns, size): cache key)."""
    entries, defaults, gpu_layers, known = _builtin()
    raw = {gid: dict(e) for gid, e in entries.items()}
    user_layers: dict[str, list[dict]] = {}
    origin: dict[str, str] = {}
    price_from: dict[str, str] = {}  # the user file that set a GPU's price (or added the GPU)
    for name, _mtime, _size in files:
        for e in _read_user_file(Path(name), known):
            gid = e["id"]
            layer = dict(e.get("efficiency") or {}) | ({"power": e["power"]} if e.get("power") else {})
            user_layers.setdefault(gid, []).append(layer)
            drop = {"price"} if LEGACY_KEY in e else {LEGACY_KEY} if "price" in e else set()  # the file's price wins
            if "hbm_gb" in e and "hbm_device_bytes" not in e:
                drop.add("hbm_device_bytes")  # the file's hbm_gb wins over the built-in device total
            raw[gid] = {k: v for k, v in raw.get(gid, {}).items() if k not in drop} | \
                {k: v for k, v in e.items() if k not in ("efficiency", "power")}
            if "price" in e or LEGACY_KEY in e or gid not in entries:
                price_from[gid] = name
            origin[gid] = name
    catalog: dict[str, GPU] = {}
    skipped: dict[str, str] = {}
    for gid, e in raw.items():
        layers = [defaults, gpu_layers.get(gid, {}), *user_layers.get(gid, [])]
        where = f"hardware file {origin[gid]}, gpu {gid!r}: " if gid in origin else f"gpu {gid!r}: "
        try:
            catalog[gid] = _to_gpu(e, layers, price_from.get(gid))
        except _Skip as why:
            if gid in origin:
                raise ValueError(f"{where}{why}") from None
            skipped[gid] = str(why)
        except ValidationError as err:
            raise ValueError(_one_line(err, where)) from None
        except ValueError as err:
            raise ValueError(f"{where}{err}") from None
    return catalog, skipped


def _key(extra_paths: list[Path] | None) -> tuple[tuple[str, int], ...]:
    return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in _user_files(extra_paths))


def load_catalog(extra_paths: list[Path] | None = None) -> dict[str, GPU]:
    """All loadable GPUs by id (built-in data + user files); cached until a user file changes."""
    return dict(_build(_key(extra_paths))[0])


def skipped_gpus(extra_paths: list[Path] | None = None) -> dict[str, str]:
    """Built-in hardware.yaml ids that could not be loaded, with the reason (for ``inferbound gpus``)."""
    return dict(_build(_key(extra_paths))[1])


def apply_overrides(gpu: GPU, overrides: dict[str, Any]) -> GPU:
    """Copy of ``gpu`` with fields replaced (SI units): 'hbm_bw', 'efficiency.compute', 'power.idle_w',
    'peak_flops.fp8' (None removes the dtype), 'efficiency.compute_by_dtype.fp8'."""
    data = gpu.model_dump()
    subfields = {"efficiency": EFFICIENCY_KEYS, "power": frozenset(Power.model_fields)}
    for key, value in overrides.items():
        parts = str(key).split(".")
        head = parts[0]
        if head not in GPU.model_fields:
            raise ValueError(f"override {key!r} is not a GPU field; allowed: {', '.join(GPU.model_fields)}")
        if len(parts) == 1:
            data[head] = value
        elif head in subfields and len(parts) == 2:
            if parts[1] not in subfields[head]:
                raise ValueError(f"override {key!r}: {parts[1]!r} is not a {head} field; "
                                 f"allowed: {', '.join(sorted(subfields[head]))}")
            data[head][parts[1]] = value
        elif (head == "peak_flops" and len(parts) == 2) or (
                parts[:2] == ["efficiency", "compute_by_dtype"] and len(parts) == 3):
            target = data["peak_flops"] if head == "peak_flops" else data["efficiency"]["compute_by_dtype"]
            if parts[-1] not in DTYPES:
                raise ValueError(f"override {key!r}: {parts[-1]!r} is not a dtype; allowed: {', '.join(DTYPES)}")
            if value is None:
                target.pop(parts[-1], None)
            else:
                target[parts[-1]] = value
        else:
            raise ValueError(f"override {key!r}: dotted keys allowed are efficiency.<field>, power.<field>, "
                             f"peak_flops.<dtype>, efficiency.compute_by_dtype.<dtype>")
    if "price_per_hour" in overrides and "price" not in overrides:  # the figure is now the user's, not the cited one
        usd = overrides["price_per_hour"]
        if usd is None:
            data["price"] = {"usd_per_gpu_hour": None, "by": "--gpu-set", "reason": "removed with price_per_hour=null"}
        elif isinstance(usd, (int, float)) and not isinstance(usd, bool) and usd >= 0:
            data["price"] = {"usd_per_gpu_hour": usd, "by": "--gpu-set", "note": "set with price_per_hour (uncited)"}
    try:
        return GPU.model_validate(data)
    except ValidationError as err:
        raise ValueError(_one_line(err)) from None


def get_gpu(gpu_id: str, overrides: dict[str, Any] | None = None,
            extra_paths: list[Path] | None = None, prices: dict[str, float] | None = None) -> GPU:
    """The catalog GPU ``gpu_id`` with optional field ``overrides`` (see :func:`apply_overrides`), then the
    user's ``prices`` ({GPU id: USD per GPU-hour}, ids checked against the catalog; prices.py) applied."""
    catalog, skipped = _build(_key(extra_paths))
    if gpu_id not in catalog:
        if gpu_id in skipped:
            raise ValueError(f"gpu={gpu_id!r} is in hardware.yaml but was skipped: {skipped[gpu_id]}")
        raise ValueError(f"gpu={gpu_id!r} is not in the catalog; known: {', '.join(sorted(catalog))}")
    gpu = catalog[gpu_id]
    gpu = apply_overrides(gpu, overrides) if overrides else gpu
    prices = check_prices(prices, catalog)
    return with_price(gpu, prices[gpu_id]) if prices and gpu_id in prices else gpu


def _scaled(value: float | None, unit: float) -> float | None:
    return None if value is None else round(value / unit, 3)


def gpu_table(catalog: dict[str, GPU] | None = None) -> list[dict[str, Any]]:
    """Rows for ``inferbound gpus``, in vendor units (column names carry the unit; None = absent)."""
    catalog = load_catalog() if catalog is None else catalog
    return [{
        "id": g.id, "name": g.name,
        "bf16_tflops": _scaled(g.peak_flops.get("bf16"), 1e12),
        "fp8_tflops": _scaled(g.peak_flops.get("fp8"), 1e12),
        "fp4_tflops": _scaled(g.peak_flops.get("fp4"), 1e12),
        "hbm_gb": _scaled(g.hbm_datasheet_bytes or g.hbm_bytes, 1e9),   # datasheet, decimal GB (1e9 bytes)
        "hbm_device_gib": _scaled(g.hbm_bytes, 2**30),       # what the engines size by (device_memory.yaml)
        "hbm_tb_s": _scaled(g.hbm_bw, 1e12),
        "scaleup_gb_s": _scaled(g.scaleup_bw, 1e9),          # per direction
        "scaleup_domain": g.scaleup_domain,
        "scaleout_gbit_s": _scaled(g.scaleout_bw * 8, 1e9),  # NIC Gb/s per GPU
        "tdp_w": g.power.tdp_w,
        **price_fields(g),
        "eff_compute": g.efficiency.compute,
        "eff_memory": g.efficiency.memory,
    } for g in catalog.values()]
