"""The commands' output paths: checked before the work, written after it without losing the result.

:func:`check_file` and :func:`check_folder` run before a command starts its work (a search, a
simulation, a fit, a probe): a path that cannot be written is one line naming the option and the
path (exit code 2) before any of it is spent. Writability is tested by opening the file for writing
(creating it and removing it again when it is new, or a scratch file in the folder): ``os.access``
says yes to root, and a pseudo file system such as ``/proc`` or a read-only mount only says no
when a file is actually created.

:class:`Writes` runs the writes after the work: a write that still fails (disk full, the folder
removed meanwhile) is kept, not raised, so the command prints its result first and only then the
one-line error of :meth:`Writes.finish` (exit code 2).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from .common import fail


def _shown(option: str, path: Path) -> str:
    return f"{option}={str(path)!r}"


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def check_file(path: Path | str | None, option: str, suffixes: str | tuple[str, ...] | None = None) -> Path | None:
    """``path`` (user folder expanded) when a file can be written there, else a ValueError naming
    ``option`` and the path: the suffix is one of ``suffixes``, the path is not a folder, its folder
    exists, and the file opens for writing (an existing file is opened for appending and left as it
    is; a new one is created and removed again)."""
    if path is None:
        return None
    given = Path(path)
    shown = _shown(option, given)
    if suffixes is not None:
        allowed = (suffixes,) if isinstance(suffixes, str) else tuple(suffixes)
        if given.suffix.lower() not in allowed:
            raise ValueError(f"{shown} must end in {' or '.join(allowed)}")
    full = given.expanduser()
    if full.is_dir():
        raise ValueError(f"{shown} is a folder; allowed: a file path in an existing folder")
    parent = full.parent
    if parent.exists() and not parent.is_dir():
        raise ValueError(f"{shown}: {str(parent)!r} is a file, not a folder")
    if not parent.is_dir():
        raise ValueError(f"{shown}: folder {str(parent)!r} does not exist; allowed: a file in an existing folder")
    try:
        if full.exists():  # opened, not truncated; non-blocking, so a FIFO without a reader fails, not hangs
            os.close(os.open(full, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        else:
            os.close(os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            os.unlink(full)
    except OSError as e:
        raise ValueError(f"{shown} cannot be written: {_reason(e)} (folder {str(parent)!r}); allowed: a file "
                         f"in a folder this user may write") from None
    return full


def check_folder(path: Path | str | None, option: str) -> Path | None:
    """``path`` (user folder expanded) when it is, or can be created as, a folder files can be written
    into, else a ValueError naming ``option`` and the path. Nothing is created: a scratch file is made
    and removed in the folder, or in its nearest existing parent when it is still missing."""
    if path is None:
        return None
    given = Path(path)
    shown = _shown(option, given)
    full = given.expanduser()
    if full.exists() and not full.is_dir():
        raise ValueError(f"{shown} is a file; allowed: a folder (created if missing)")
    base = full
    while not base.exists() and base.parent != base:
        base = base.parent
    if not base.is_dir():
        raise ValueError(f"{shown}: {str(base)!r} is a file, not a folder")
    try:
        fd, scratch = tempfile.mkstemp(dir=base, prefix=".inferbound-check-")
        os.close(fd)
        os.unlink(scratch)
    except OSError as e:
        where = "" if base == full else f" (its folder {str(base)!r})"
        raise ValueError(f"{shown} cannot be written{where}: {_reason(e)}; allowed: a folder this user may "
                         f"write, or one it may create") from None
    return full


class Writes:
    """The writes a command makes after its work. :meth:`write` runs one and keeps an OSError instead of
    raising it; the command prints its result (naming :attr:`written`), then calls :meth:`finish`, which
    ends it with one error line (exit code 2) when a write failed."""

    def __init__(self) -> None:
        self.written: list[Path] = []
        self.failed: list[str] = []

    def write(self, option: str, path: Path | None, fn: Callable[[Path], object]) -> Path | None:
        """``fn(path)`` (which writes the file and may return the path written); None when ``path`` is
        None or the write failed."""
        if path is None:
            return None
        try:
            out = fn(path)
        except OSError as e:
            self.failed.append(f"{_shown(option, Path(path))}: {_reason(e)}")
            return None
        done = Path(out) if isinstance(out, (str, os.PathLike)) else Path(path)
        self.written.append(done)
        return done

    def finish(self) -> None:
        """One ``error:`` line and exit code 2 when a write failed (after the result was printed)."""
        if self.failed:
            fail(f"could not write {'; '.join(self.failed)}; the result above is complete, only the "
                 f"file{'s are' if len(self.failed) > 1 else ' is'} missing")
