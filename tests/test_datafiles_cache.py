"""The on-disk cache of parsed package YAML (datafiles.py): what it gives back is what PyYAML parses,
a changed text is parsed again, non-plain data is not stored, and it can be turned off."""
import marshal

import yaml

from inferbound.base import datafiles


def _fresh(text):
    return yaml.load(text, Loader=datafiles._LOADER)


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
