"""bench/pipe_trace.py, the summary of the replay pipeline's trace, on a small hand-made trace."""
from _util import bench_tool


def load_tool():
    return bench_tool("pipe_trace")


def summary_of(tmp_path, capsys, rows):
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    load_tool().summarise(str(path))
    return capsys.readouterr().out


def test_summary_of_two_ctas(tmp_path, capsys):
    # CTA 0: three items of 1 us; CTA 1: 1 us, a 5 us item (a fold), 1 us, so it ends last
    rows = ["cta,item,issue_us,full_us,done_us",
            "0,-1,0,0.000,0.000", "0,0,2.0,5.0,6.0", "0,1,-1,6.5,7.5", "0,2,-1,8.0,9.0",
            "1,-1,0,0.100,0.100", "1,0,2.5,6.0,7.0", "1,1,-1,7.5,12.5", "1,2,-1,13.0,14.0"]
    out = summary_of(tmp_path, capsys, rows)
    assert "2 CTAs, 6 items traced" in out
    assert "item 0 issued   min   2.00  median   2.25" in out
    assert "wait per item   min   0.50  median   0.50  mean   0.50  max   0.50" in out
    # median compute 1 us: the 5 us item is the only slow one
    assert "slow items (compute > 2.00 us) per CTA: min   0.00  median   0.50  mean   0.50  max   1.00" in out
    assert "end             min   9.00  median  11.50  mean  11.50  max  14.00" in out
    assert out.rstrip().endswith("slowest CTAs:  1 (end 14.00, 3 items, 1 slow), 0 (end 9.00, 3 items, 0 slow)")


def test_no_items(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("cta,item,issue_us,full_us,done_us\n0,-1,0,0.000,0.000\n")
    load_tool().summarise(str(path))
    assert "no items" in capsys.readouterr().out


def test_producer_columns(tmp_path, capsys):
    # item 0: begun at 1, copy issued at 2, handed over at 4, landed at 5 (the copy came last);
    # item 1: begun at 4, handed over at 9, landed at 8.5 (the header came last)
    rows = ["cta,item,issue_us,full_us,done_us,begin_us,hand_us",
            "0,-1,0,0.000,0.000,0.000,0.000", "0,0,2.0,5.0,6.0,1.0,4.0", "0,1,4.5,8.5,9.5,4.0,9.0"]
    out = summary_of(tmp_path, capsys, rows)
    assert "producer: begun to handed over  min   3.00  median   4.00  mean   4.00  max   5.00" in out
    assert "producer: begun to copy issued  min   0.50  median   0.75  mean   0.75  max   1.00" in out
    assert "landed minus handed over        min  -0.50  median   0.25  mean   0.25  max   1.00" in out
