"""The package's data files (``src/inferbound/data/*.yaml``), read once and cached, and the one YAML
reader every module uses: PyYAML's C loader (libyaml; several times faster than the pure-Python one
on the hardware catalog) when the installed PyYAML has it, else the safe Python loader. Both are
safe loaders: plain data only.

Parsing the package's data costs a fresh process about 20 ms (PyYAML builds the objects in Python
even with libyaml), so the parse of a package data file is also kept on disk, like Python's own
bytecode cache: ``$XDG_CACHE_HOME/inferbound`` (default ``~/.cache/inferbound``), one ``marshal`` file
per data file holding the exact YAML text it was parsed from, the installed PyYAML it was parsed with
and the result. A file is used only when both match (a changed data file is parsed again and the file
rewritten), and only plain data is stored (dict, list, str, int, float, bool, None: marshal gives them
back exactly, floats bit for bit). ``INFERBOUND_NO_DISK_CACHE=1`` turns it off; a cache that cannot be
read or written is skipped silently (the file is parsed instead: the same data). User files (hardware
files, calibration files) are never cached.

PyYAML itself is imported only when something is parsed or written (``import yaml`` costs a cold
process about 20 ms, issue 18): a disk-cache hit needs only ``marshal``. The installed PyYAML is
identified without importing it, by its package file (path, size, modification time) and its C
extension's file name (the loader that parse used), so a reinstall or an upgrade parses again.
"""
from __future__ import annotations

import importlib.util
import marshal
import os
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path

_PLAIN = (str, int, float, bool, type(None))


def _yaml():
    """The PyYAML module and its safe loader (C when available), imported on first parse."""
    import yaml
    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def _stamp() -> tuple:
    """The installed PyYAML, read from its files without importing it: ``yaml/__init__.py``'s path,
    size and modification time (ns), and the names of its C extension files (absent: the Python loader)."""
    spec = importlib.util.find_spec("yaml")
    if spec is None or not spec.origin:
        return ("no yaml",)
    st = os.stat(spec.origin)
    ext = sorted(p.name for p in Path(spec.origin).parent.glob("_yaml*"))
    return (spec.origin, st.st_size, st.st_mtime_ns, *ext)


def load_yaml(text: str, cache: str | None = None):
    """Parse YAML text as plain data (safe loader, C implementation when available). ``cache``: the name
    under which this parse of the package's own data is kept on disk (module docstring)."""
    path = _cache_path(cache) if cache is not None else None
    if path is not None:
        try:
            stored_text, stamp, data = marshal.loads(path.read_bytes())
            if stored_text == text and stamp == _stamp():
                return data
        except Exception:  # noqa: BLE001  (absent, unreadable, another format: parse again)
            pass
    yaml, loader = _yaml()
    data = yaml.load(text, Loader=loader)  # noqa: S506  (a safe loader)
    if path is not None and _plain(data):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps((text, _stamp(), data)))
            os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
        except OSError:
            pass
    return data


def yaml_error() -> type[Exception]:
    """PyYAML's parse error class (``except yaml_error() as e``: evaluated only when an exception is raised,
    so a module that catches it does not import PyYAML)."""
    return _yaml()[0].YAMLError


def dump_yaml(doc) -> str:
    """``doc`` (plain data) as YAML text, keys in their order (``yaml.safe_dump(doc, sort_keys=False)``)."""
    return _yaml()[0].safe_dump(doc, sort_keys=False)


def _cache_path(name: str) -> Path | None:
    if os.environ.get("INFERBOUND_NO_DISK_CACHE", "") not in ("", "0"):
        return None
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no home directory
        return None
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-m{marshal.version}"
    return base / "inferbound" / f"{name.replace('/', '_')}.{tag}.marshal"


def _plain(x) -> bool:
    """True when ``x`` is dicts, lists and plain scalars only (what marshal gives back exactly)."""
    t = type(x)
    if t is dict:
        return all(type(k) in _PLAIN and _plain(v) for k, v in x.items())
    if t is list:
        return all(_plain(v) for v in x)
    return t in _PLAIN


@lru_cache(maxsize=None)
def data_yaml(name: str):
    """Parsed ``data/<name>``; callers treat the result as read-only."""
    return load_yaml((resources.files("inferbound") / "data" / name).read_text("utf-8"), cache=name)
