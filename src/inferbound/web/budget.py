"""Wall-clock budget of one call, enforced through the library's progress callbacks.

``simulate`` and ``search`` call ``progress(done, total)`` as they go; a :class:`Deadline` passed as
that callback raises :class:`OverBudget` once its seconds are spent, which unwinds the computation.
The route turns it into 422 naming the field to reduce. This backs up the static caps of schemas.py,
which bound the work but not the machine's speed.
"""
from __future__ import annotations

import time

#: default seconds one simulation or search may run (create_app(work_seconds=...))
WORK_SECONDS = 20.0


class OverBudget(Exception):
    """The call's time budget is spent; args: (done, total, seconds)."""


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
