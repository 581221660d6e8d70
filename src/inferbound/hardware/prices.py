"""GPU rental prices: the cited catalog figure of data/hardware.yaml, the user's own (``--price``), checks.

Cost (energy.py) uses one number per GPU, ``GPU.price_per_hour`` in USD per GPU-hour::

    $/s of a deployment = price_per_hour · GPUs / 3600
    $ per million output tokens = 1e6 · ($/s) / (output tokens/s)

``GPU.price`` (:class:`~inferbound.hardware.spec.Price`) says where that number comes from. Every
data/hardware.yaml id has one entry in data/prices.yaml, either a cited list price::

    h100_sxm: {usd_per_gpu_hour: 3.90, provider: Crusoe, instance: "...", kind: on-demand,
               source: https://..., as_of: "2026-09-20", via: https://..., note: "..."}

or no figure and the reason::

    l4: {usd_per_gpu_hour: null, reason: "no public on-demand price found (searched: ...)"}

The loader refuses a figure without provider, source (an http(s) URL), kind and as_of (YYYY-MM-DD),
an id without an entry and an entry without an id: one line naming the GPU and the field. How the figure
is chosen (the rule) is stated in the header of data/prices.yaml and in docs/hardware.md. hardware.yaml
stays a verbatim copy of the project's reference table; its bare approximate ``price_usd_per_gpu_hr_approx``
is not used. A user hardware file may give ``price:`` in the same schema, or the older bare
``price_usd_per_gpu_hr_approx: X``, read as the user's own uncited figure (``by: hardware file``).

``--price GPU=USD`` (CLI, repeatable) and ``prices: {gpu: usd}`` (JSON API) replace a catalog GPU's
figure with the user's (``by: --price``); every output that shows the cost labels it "(--price)".
"""
from __future__ import annotations

import datetime as _dt
import math
from typing import Any, Iterable

from .spec import GPU

PRICE_KEYS = ("usd_per_gpu_hour", "provider", "instance", "kind", "source", "as_of", "via", "note", "reason")
PRICE_KINDS = ("on-demand", "reserved", "spot", "committed")
LEGACY_KEY = "price_usd_per_gpu_hr_approx"  # the bare number of older hardware files (uncited)
ALLOWED = "a finite number >= 0 (USD per GPU-hour)"


def _number(value: Any) -> float | None:
    """``value`` as a finite float >= 0, else None (bools are not numbers; YAML 1.1 may give "1e9" strings)."""
    if isinstance(value, bool):
        return None
    try:
        x = float(value) if isinstance(value, (int, float, str)) else None
    except ValueError:
        return None
    return x if x is not None and math.isfinite(x) and x >= 0 else None


def _date(value: Any) -> str | None:
    """'YYYY-MM-DD' of a date, a datetime or such a string; None when it is not a calendar date."""
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            return None
    return None


def merge_builtin_prices(entries: dict[str, dict], data: dict | None) -> dict[str, dict]:
    """hardware.yaml ``entries`` with their data/prices.yaml ``price:`` (the reference table's bare
    approximate figure dropped: not used). Every id needs exactly one entry; one-line ValueError otherwise."""
    table = (data or {}).get("prices") or {}
    for gid in table:
        if gid not in entries:
            raise ValueError(f"prices.yaml: {gid!r} is not a hardware.yaml id; allowed: {', '.join(entries)}")
    missing = [gid for gid in entries if gid not in table]
    if missing:
        raise ValueError(f"prices.yaml: gpu {missing[0]!r} has no entry; allowed: a cited price or "
                         f"usd_per_gpu_hour: null with a reason")
    return {gid: {k: v for k, v in e.items() if k != LEGACY_KEY} | {"price": table[gid]}
            for gid, e in entries.items()}


def read_price(entry: dict, origin: str | None) -> tuple[float | None, dict | None]:
    """(price_per_hour, Price fields) of one hardware-file entry; ``origin`` is the user file (None: built-in).
    ValueError 'price.<field>=<value> is invalid: <what is allowed>' on a bad or uncited price."""
    if LEGACY_KEY in entry and "price" not in entry:
        if origin is None:
            raise ValueError(f"{LEGACY_KEY} is not allowed in the built-in catalog; allowed: price: "
                             f"{{usd_per_gpu_hour, provider, instance, kind, source, as_of}} or "
                             f"{{usd_per_gpu_hour: null, reason}}")
        raw = entry[LEGACY_KEY]
        if raw is None:
            return None, None
        usd = _number(raw)
        if usd is None:
            raise ValueError(f"{LEGACY_KEY}={raw!r} is invalid: expected {ALLOWED} or null")
        return usd, {"usd_per_gpu_hour": usd, "by": "hardware file", "source": origin,
                     "note": f"the file's own figure ({LEGACY_KEY}, uncited)"}
    if "price" not in entry or entry["price"] is None:
        if origin is None:
            raise ValueError("price is missing; allowed: price: {usd_per_gpu_hour, provider, instance, kind, "
                             "source, as_of} or {usd_per_gpu_hour: null, reason}")
        return None, None
    p = entry["price"]
    if not isinstance(p, dict):
        raise ValueError(f"price={p!r} is invalid: expected a mapping with {', '.join(PRICE_KEYS)}")
    for key in p:
        if key not in PRICE_KEYS:
            raise ValueError(f"price.{key} is not a price field; allowed: {', '.join(PRICE_KEYS)}")
    by = "catalog" if origin is None else "hardware file"
    text = {k: str(p[k]).strip() for k in ("provider", "instance", "kind", "source", "via", "note", "reason")
            if p.get(k) is not None and str(p[k]).strip()}
    if p.get("usd_per_gpu_hour") is None:
        if "reason" not in text:
            raise ValueError("price.reason is missing: a price with usd_per_gpu_hour null must say why there is "
                             "no price (e.g. 'not rented publicly')")
        return None, {"usd_per_gpu_hour": None, "by": by, **{k: v for k, v in text.items()}}
    usd = _number(p["usd_per_gpu_hour"])
    if usd is None:
        raise ValueError(f"price.usd_per_gpu_hour={p['usd_per_gpu_hour']!r} is invalid: expected {ALLOWED} or null")
    for key in ("provider", "source", "kind"):
        if key not in text:
            raise ValueError(f"price.{key} is missing: a price needs provider, source (URL), kind and as_of "
                             f"(YYYY-MM-DD)")
    if not text["source"].startswith(("https://", "http://")):
        raise ValueError(f"price.source={text['source']!r} is invalid: expected the http(s) URL of the pricing page")
    if text["kind"] not in PRICE_KINDS:
        raise ValueError(f"price.kind={text['kind']!r} is invalid: allowed: {', '.join(PRICE_KINDS)}")
    as_of = _date(p.get("as_of"))
    if as_of is None:
        shown = "missing" if p.get("as_of") is None else f"{p['as_of']!r}, not a date"
        raise ValueError(f"price.as_of is {shown}: a price needs the date its source read or published it "
                         f"(YYYY-MM-DD)")
    return usd, {"usd_per_gpu_hour": usd, "by": by, **text, "as_of": as_of}


def parse_price_items(items: list[str] | None, flag: str = "--price") -> dict[str, float] | None:
    """``['h100_sxm=2.49', ...]`` -> {'h100_sxm': 2.49}; one-line ValueError on a bad item."""
    if not items:
        return None
    out: dict[str, float] = {}
    for item in items:
        gid, sep, value = str(item).partition("=")
        gid = gid.strip()
        if not sep or not gid:
            raise ValueError(f"price={item!r} ({flag}) must look like GPU=USD, e.g. {flag} h100_sxm=2.49")
        usd = _number(value.strip()) if value.strip().lower().lstrip("+-") not in ("inf", "infinity", "nan") else None
        if usd is None:
            raise ValueError(f"price={value.strip()!r} for {gid!r} ({flag}) is invalid: expected {ALLOWED}")
        if gid in out:
            raise ValueError(f"price for {gid!r} ({flag}) is given twice; allowed: one {flag} per GPU")
        out[gid] = usd
    return out


def check_prices(prices: dict | None, known: Iterable[str]) -> dict[str, float] | None:
    """``prices`` ({GPU id: USD per GPU-hour}) with every id in ``known`` and every value a finite number >= 0;
    one-line ValueError starting 'price=' (the JSON field ``prices``, the CLI's --price) otherwise."""
    if not prices:
        return None
    if not isinstance(prices, dict):
        raise ValueError(f"price={prices!r} is invalid: expected {{GPU id: USD per GPU-hour}}")
    known = set(known)
    out = {}
    for gid, value in prices.items():
        if gid not in known:
            raise ValueError(f"price={gid!r} names no catalog GPU; allowed: --price GPU=USD (prices: {{GPU: USD}}) "
                             f"with GPU one of {', '.join(sorted(known))}")
        usd = _number(value) if not isinstance(value, str) else None
        if usd is None:
            raise ValueError(f"price={value!r} for {gid!r} is invalid: expected {ALLOWED}")
        out[gid] = usd
    return out


def with_price(gpu: GPU, usd: float, by: str = "--price") -> GPU:
    """Copy of ``gpu`` at the user's ``usd`` per GPU-hour, labelled ``by`` (the catalog figure kept in the note)."""
    old = gpu.price
    if gpu.price_per_hour is None or old is None:
        was = "catalog: no price"
    elif old.by == "catalog":
        was = f"catalog: ${gpu.price_per_hour:g}/GPU-h, {old.provider} {old.kind}, {old.as_of}"
    else:
        was = f"before: ${gpu.price_per_hour:g}/GPU-h from {old.by}"
    data = gpu.model_dump()
    data["price_per_hour"] = usd
    data["price"] = {"usd_per_gpu_hour": usd, "by": by, "note": f"the user's figure ({was})"}
    return GPU.model_validate(data)


def apply_prices(gpus: Iterable[GPU], prices: dict[str, float] | None) -> list[GPU]:
    """``gpus`` with the user's ``prices`` (already checked) applied to those they name."""
    return [with_price(g, prices[g.id]) if prices and g.id in prices else g for g in gpus]


def price_tag(gpu: GPU) -> str:
    """' (--price)', ' (Crusoe on-demand, 2026-09-20)' or '' (no price): the label a cost figure carries."""
    p = gpu.price
    if gpu.price_per_hour is None:
        return ""
    if p is None or p.by != "catalog":
        return f" ({p.by if p is not None else 'user'})"
    return f" ({p.provider} {p.kind}, {p.as_of})"


def price_fields(gpu: GPU) -> dict[str, Any]:
    """The price columns of ``inferbound gpus`` / GET /api/gpus."""
    p = gpu.price
    return {"price_usd_h": gpu.price_per_hour,
            "price_by": None if p is None else p.by,
            "price_provider": None if p is None else p.provider,
            "price_instance": None if p is None else p.instance,
            "price_kind": None if p is None else p.kind,
            "price_as_of": None if p is None else p.as_of,
            "price_source": None if p is None else p.source,
            "price_via": None if p is None else p.via,
            "price_note": None if p is None else (p.reason if gpu.price_per_hour is None else p.note)}


def price_note(gpu: GPU) -> str | None:
    """The note a deployment carries when its GPU's price is the user's, not the catalog's."""
    p = gpu.price
    if gpu.price_per_hour is None or p is None or p.by not in ("--price", "--gpu-set"):
        return None
    return f"cost uses ${gpu.price_per_hour:g} per GPU-hour for {gpu.id} from {p.by}: {p.note or 'uncited'}"
