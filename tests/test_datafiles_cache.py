"""The on-disk cache of parsed package YAML (datafiles.py): what it gives back is what PyYAML parses,
a changed text is parsed again, non-plain data is not stored, and it can be turned off; a hit does not
import PyYAML, another PyYAML parses again, and a cache that cannot be written still gives the parse."""
import marshal
import os
import subprocess
import sys

import pytest
import yaml

from inferbound.base import datafiles


def _fresh(text):
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def test_cached_parse_equals_fresh_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERBOUND_NO_DISK_CACHE", raising=False)
    text = "a: 0.1\nb: [1, 2.5e-3, true, null, 'x']\nc: {2: 1e9, d: 7}\n"   # YAML 1.1: 1e9 is a string
    first = datafiles.load_yaml(text, cache="t.yaml")
    files = list((tmp_path / "inferbound").iterdir())
    assert len(files) == 1
    stored_text, _stamp, stored = marshal.loads(files[0].read_bytes())
    assert stored_text == text and stored == _fresh(text)
    second = datafiles.load_yaml(text, cache="t.yaml")   # from the file
    assert second == first == _fresh(text)
    assert [type(v) for v in second["b"]] == [int, float, bool, type(None), str]
    assert second["c"] == {2: "1e9", "d": 7}
    assert second is not first   # a new object, as a parse is


def test_changed_text_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERBOUND_NO_DISK_CACHE", raising=False)
    assert datafiles.load_yaml("v: 1\n", cache="t.yaml") == {"v": 1}
    assert datafiles.load_yaml("v: 2\n", cache="t.yaml") == {"v": 2}
    assert datafiles.load_yaml("v: 2\n", cache="t.yaml") == {"v": 2}


def test_dates_are_not_stored_and_off_switch(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERBOUND_NO_DISK_CACHE", raising=False)
    d = datafiles.load_yaml("when: 2026-09-20\n", cache="d.yaml")   # a datetime.date: not plain data
    assert str(d["when"]) == "2026-09-20"
    assert not (tmp_path / "inferbound").exists()
    monkeypatch.setenv("INFERBOUND_NO_DISK_CACHE", "1")
    assert datafiles.load_yaml("v: 1\n", cache="t.yaml") == {"v": 1}
    assert not (tmp_path / "inferbound").exists()


def test_unreadable_cache_file_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERBOUND_NO_DISK_CACHE", raising=False)
    datafiles.load_yaml("v: 1\n", cache="t.yaml")
    (f,) = (tmp_path / "inferbound").iterdir()
    f.write_bytes(b"not marshal data")
    assert datafiles.load_yaml("v: 1\n", cache="t.yaml") == {"v": 1}
    assert marshal.loads(f.read_bytes())[2] == {"v": 1}   # rewritten


def test_another_pyyaml_parses_again(tmp_path, monkeypatch):
    """A file written under another PyYAML installation (its stamp) is not trusted: parsed again, rewritten."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERBOUND_NO_DISK_CACHE", raising=False)
    datafiles.load_yaml("v: 1\n", cache="t.yaml")
    (f,) = (tmp_path / "inferbound").iterdir()
    f.write_bytes(marshal.dumps(("v: 1\n", ("another yaml",), {"v": 99})))   # same text, other installation
    assert datafiles.load_yaml("v: 1\n", cache="t.yaml") == {"v": 1}
    assert marshal.loads(f.read_bytes())[1] == datafiles._stamp()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_cache_dir_still_parses(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERBOUND_NO_DISK_CACHE", raising=False)
    tmp_path.chmod(0o500)
    try:
        assert datafiles.load_yaml("v: [1, 2]\n", cache="t.yaml") == {"v": [1, 2]}
        assert not (tmp_path / "inferbound").exists()
    finally:
        tmp_path.chmod(0o700)


def test_unwritable_cache_path_still_parses(tmp_path, monkeypatch):
    """The cache directory's place is a file (cannot be made, whoever runs): the parse is returned, no error."""
    (tmp_path / "inferbound").write_text("a file where the cache directory would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERBOUND_NO_DISK_CACHE", raising=False)
    assert datafiles.load_yaml("v: [1, 2]\n", cache="t.yaml") == {"v": [1, 2]}
    assert datafiles.load_yaml("v: [1, 2]\n", cache="t.yaml") == {"v": [1, 2]}


def test_a_hit_does_not_import_pyyaml(tmp_path):
    """The second process reads the package's data from the disk cache without importing PyYAML (cold start)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("INFERBOUND_NO_DISK_CACHE", None)
    code = ("import sys; from inferbound.base.datafiles import data_yaml; d = data_yaml('hardware.yaml'); "
            "print(len(d['accelerators']) > 0, 'yaml' in sys.modules)")
    run = lambda: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                 check=True).stdout.split()
    assert run() == ["True", "True"]     # first: parsed (PyYAML imported), written
    assert run() == ["True", "False"]    # then: read back, PyYAML not imported


def test_yaml_error_and_dump_are_pyyamls(tmp_path):
    """The lazy names stand for PyYAML's own: its parse error class (a broken user hardware file is still the
    one-line error naming the file) and safe_dump in the given key order."""
    from inferbound.hardware.catalog import _read_user_file
    assert datafiles.yaml_error() is yaml.YAMLError
    bad = tmp_path / "acme.yaml"
    bad.write_text("id: acme\npeaks: [1, 2\n")
    with pytest.raises(ValueError, match=r"hardware file .*acme.yaml: not valid YAML"):
        _read_user_file(bad, frozenset())
    doc = {"z": 1, "a": [0.5, None], "m": {"k": "v"}}
    assert datafiles.dump_yaml(doc) == "z: 1\na:\n- 0.5\n- null\nm:\n  k: v\n"
    assert yaml.safe_load(datafiles.dump_yaml(doc)) == doc
