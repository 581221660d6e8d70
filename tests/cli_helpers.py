"""Assertions shared by the CLI tests."""
from __future__ import annotations


def assert_one_line_error(r, *words):
    """A CliRunner result that failed the project's way: exit 2, nothing on stdout, one `error:` line on
    stderr naming ``words``, no traceback."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert not r.stdout.strip(), r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error:")
    for w in words:
        assert w in lines[0], lines[0]
