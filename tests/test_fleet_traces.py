"""fleet/traces.py: the published trace formats read as arrivals (excerpts in tests/data/traces/, README there).

Expected figures are worked by hand from the rows written out here, or counted from the excerpt's raw text
by plain string splitting (not by the reader under test).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inferbound.fleet.traces import read_trace

DATA = Path(__file__).parent / "data" / "traces"
CONV = DATA / "AzureLLMInferenceTrace_conv_head200.csv"
CODE = DATA / "AzureLLMInferenceTrace_code_head100.csv"
BURST = DATA / "BurstGPT_quoted_rows.csv"
MOON = DATA / "mooncake_conversation_trace_head100.jsonl"


def _raw_csv_columns(path: Path, a: int, b: int) -> tuple[list[int], list[int]]:
    rows = [ln.split(",") for ln in path.read_text().splitlines()[1:] if ln.strip()]
    return [int(r[a]) for r in rows], [int(r[b]) for r in rows]


def test_azure_conversation_excerpt():
    t = read_trace(CONV)
    assert t.fmt == "azure" and len(t) == 200 and t.source == CONV.name
    # row 1 2023-11-16 18:15:46.6805900, row 2 18:15:50.9951690: 50.9951690 - 46.6805900 = 4.314579 s
    assert t.arrival_s[0] == 0.0
    assert t.arrival_s[1] == pytest.approx(4.314579, abs=1e-9)
    # row 200 18:16:47.9441270: 61 s + (47.9441270 - 46.6805900) = 61.263537 s
    assert t.arrival_s[-1] == pytest.approx(61.263537, abs=1e-9)
    assert (t.input_len[:2] == [374, 396]).all() and (t.output_len[:2] == [44, 109]).all()
    ins, outs = _raw_csv_columns(CONV, 1, 2)
    assert t.input_len.sum() == sum(ins) and t.output_len.sum() == sum(outs)
    assert t.input_len.mean() == pytest.approx(sum(ins) / 200)
    assert t.prefix_hashes is None and t.session_id is None and t.notes == ()
    assert t.arrival_s.dtype == np.float64 and t.input_len.dtype == np.int64


def test_azure_code_excerpt():
    t = read_trace(CODE, "azure")
    assert len(t) == 100
    # 18:17:03.9799600 -> 18:17:04.0319600: 0.052 s; last row 18:20:16.1421010: 3 min 12.1621410 s = 192.162141 s
    assert t.arrival_s[1] == pytest.approx(0.052, abs=1e-9)
    assert t.arrival_s[-1] == pytest.approx(192.162141, abs=1e-9)
    assert (t.input_len[:3] == [4808, 3180, 110]).all() and (t.output_len[:3] == [10, 8, 27]).all()
    ins, outs = _raw_csv_columns(CODE, 1, 2)
    assert t.output_len.mean() == pytest.approx(sum(outs) / 100)


def test_azure_2024_timestamps_with_utc_offset(tmp_path):
    # constructed rows (not from a trace) in the 2024 week-long files' timestamp form
    p = tmp_path / "AzureLLMInferenceTrace_conv_1week.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2024-05-10 00:00:00.009930+00:00,100,10\n"
                 "2024-05-10 01:00:01.000000+01:00,200,20\n")  # 01:00:01 at +01:00 = 00:00:01 UTC
    t = read_trace(p)
    # 00:00:01.000000 - 00:00:00.009930 = 0.99007 s
    assert t.arrival_s.tolist() == pytest.approx([0.0, 0.99007], abs=1e-9)


def test_burstgpt_quoted_rows():
    t = read_trace(BURST)
    assert t.fmt == "burstgpt" and len(t) == 3
    # Timestamps 5, 45, 118 s: 0, 40, 113 from the first
    assert t.arrival_s.tolist() == [0.0, 40.0, 113.0]
    # mean prompt (472 + 1087 + 417) / 3 = 1976 / 3; mean output (18 + 230 + 276) / 3 = 524 / 3
    assert t.input_len.mean() == pytest.approx(1976 / 3)
    assert t.output_len.mean() == pytest.approx(524 / 3)
    assert t.session_id is None


def test_burstgpt_3_sessions_and_failures(tmp_path):
    # constructed rows in BurstGPT_3's published column order (README "Schema"), not from the trace
    p = tmp_path / "BurstGPT_3.csv"
    p.write_text("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                 "10,s-a,1.5,ChatGPT,100,20,120,Conversation log\n"
                 "12,,0.7,GPT-4,50,5,55,API log\n"
                 "13,s-b,0.1,ChatGPT,80,0,80,Conversation log\n"  # a failure: Response tokens 0
                 "15,s-a,2.0,ChatGPT,300,40,340,Conversation log\n"
                 "16,s-c,1.0,ChatGPT,0,9,9,Conversation log\n")  # no prompt: cannot be served
    t = read_trace(p)
    assert len(t) == 3  # 5 rows - 1 failure - 1 empty prompt
    assert t.arrival_s.tolist() == [0.0, 2.0, 5.0]
    assert t.session_id.tolist() == [0, -1, 0]  # s-a first seen -> 0; empty -> none
    assert t.input_len.tolist() == [100, 50, 300]
    assert any("1 failed requests dropped" in n for n in t.notes)
    assert any("1 requests with Request tokens = 0 dropped" in n for n in t.notes)


def test_mooncake_excerpt():
    t = read_trace(MOON)
    assert t.fmt == "mooncake" and len(t) == 100 and t.block_tokens == 512
    raw = [json.loads(ln) for ln in MOON.read_text().splitlines()]
    # first row: 6758 prompt tokens in ceil(6758 / 512) = 14 blocks (13 * 512 = 6656 < 6758), ids 0..13
    assert t.input_len[0] == 6758 and t.prefix_hashes[0] == tuple(range(14))
    # timestamps in ms: the last row's 33000 ms is 33.0 s after the first (0 ms)
    assert t.arrival_s[-1] == 33.0 and raw[-1]["timestamp"] == 33000
    assert t.input_len.sum() == sum(r["input_length"] for r in raw)
    assert t.output_len.sum() == sum(r["output_length"] for r in raw)
    # every request of the conversation trace starts with the shared block 0 (a system prompt)
    assert all(h[0] == 0 for h in t.prefix_hashes)
    assert t.session_id is None and t.notes == ()


def test_unsorted_rows_are_sorted_with_a_note(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"timestamp": 2000, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
                 '{"timestamp": 500, "input_length": 20, "output_length": 2, "hash_ids": [2]}\n')
    t = read_trace(p)
    assert t.arrival_s.tolist() == [0.0, 1.5] and t.input_len.tolist() == [20, 10]
    assert t.prefix_hashes == ((2,), (1,))
    assert any("sorted by arrival" in n for n in t.notes)


def test_inferbound_own_format(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,input_len,output_len\n3.5,100,10\n4.0,200,20\n")
    t = read_trace(p)
    assert t.fmt == "inferbound" and t.arrival_s.tolist() == [0.0, 0.5] and t.output_len.tolist() == [10, 20]


@pytest.mark.parametrize("text, needle", [
    ("time,prompt,completion\n1,2,3\n", "header=['completion', 'prompt', 'time'] is not a known trace format"),
    ('{"t": 1, "in": 2}\n', "keys=['in', 't'] are not a known trace format"),
])
def test_unknown_format_is_one_line_naming_what_is_allowed(tmp_path, text, needle):
    p = tmp_path / "x.csv"
    p.write_text(text)
    with pytest.raises(ValueError) as e:
        read_trace(p)
    msg = str(e.value)
    assert needle in msg and "line 1" in msg and "allowed: azure" in msg and "\n" not in msg


def test_bad_values_and_format_mismatch_are_one_line(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:47,abc,5\n")
    with pytest.raises(ValueError, match=r"^trace a\.csv line 3: ContextTokens='abc' must be an integer token count >= 0$"):
        read_trace(p)
    q = tmp_path / "b.csv"
    q.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,374,44\n")
    with pytest.raises(ValueError, match=r"line 2: TIMESTAMP='yesterday' must be a date and time"):
        read_trace(q)
    with pytest.raises(ValueError, match=r"line 1: .* is not the mooncake format .*it reads as azure$"):
        read_trace(CONV, "mooncake")
    with pytest.raises(ValueError, match=r"^traffic.format='csv' unknown; allowed: azure, burstgpt, mooncake, inferbound$"):
        read_trace(CONV, "csv")
    with pytest.raises(ValueError, match=r"is not a file"):
        read_trace(tmp_path / "missing.csv")
