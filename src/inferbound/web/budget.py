"""Wall-clock budget of one call, and how many heavy calls run at once.

``simulate`` and ``search`` call ``progress(done, total)`` as they go; a :class:`Deadline` passed as
that callback raises :class:`OverBudget` once its seconds are spent, which unwinds the computation.
The route turns it into 422 naming the field to reduce. This backs up the static caps of schemas.py,
which bound the work but not the machine's speed.

:func:`heavy_slot`: simulate, search and validate take one of ``app.state.heavy_slots`` (default: half
the CPUs, at least 2) for their duration, waiting at most the work budget for one; a client that
floods the server with them gets 429 instead of starving the cheap endpoints of worker threads, with
``Retry-After``: the work budget in whole seconds (a running simulation or search stops at its budget,
so a slot is likely free by then).
"""
from __future__ import annotations

import math
import os
import threading
import time
from contextlib import contextmanager

from fastapi import HTTPException

from .errors import ApiError

#: default seconds one simulation or search may run (create_app(work_seconds=...))
WORK_SECONDS = 20.0


class OverBudget(Exception):
    """The call's time budget is spent; args: (done, total, seconds)."""

    def api_error(self, field: str, work: str, items: str, advice: str) -> ApiError:
        """422 on ``field``: '<work> stopped after S s of work (D of T <items>): the server's cap per call;
        <advice>' (every route that runs under a Deadline says it this one way)."""
        done, total, seconds = self.args
        return ApiError(field, f"{work} stopped after {seconds:g} s of work ({done:,} of {total:,} {items}): the "
                               f"server's cap per call; {advice}")


class Deadline:
    """A progress callback that raises OverBudget after ``seconds``."""

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        self.end = time.monotonic() + self.seconds

    def __call__(self, done: int, total: int) -> None:
        if time.monotonic() > self.end:
            raise OverBudget(done, total, self.seconds)


def seconds_for(request) -> float:
    """The app's budget (``app.state.work_seconds``) or the default."""
    return float(getattr(request.app.state, "work_seconds", WORK_SECONDS))


def default_slots() -> int:
    return max(2, (os.cpu_count() or 2) // 2)


@contextmanager
def heavy_slot(request):
    """Hold one heavy-work slot of the app for the block; 429 when none frees up within the budget."""
    slots = request.app.state.heavy_slots
    seconds = seconds_for(request)
    if not slots.acquire(timeout=seconds):
        retry = retry_after(seconds)
        raise HTTPException(429, [{"loc": [], "type": "too_many_requests",
                                   "msg": f"the server is busy with other simulations/searches; retry in {retry} s"}],
                            headers={"Retry-After": str(retry)})
    try:
        yield
    finally:
        slots.release()


def retry_after(seconds: float) -> int:
    """Retry-After (RFC 9110 section 10.2.3: delay in whole seconds) of a 429: the work budget, rounded
    up, at least 1 (a running simulation or search stops at its budget)."""
    return max(1, math.ceil(seconds))


def make_slots(n: int | None) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(n or default_slots())
