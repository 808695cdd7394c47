"""bench/k128_trace.py, the summary of the per-head kernel's trace, on a small hand-made trace."""
from _util import bench_tool

HEADER = "launch,cta,smid,end,entry,slot,ring,rows," + ",".join(f"rows{w},stored{w}" for w in range(16))


def load_tool():
    return bench_tool("k128_trace")


def cta(launch, n, smid, end, entry, slot, ring, rows, usable, stored):
    """A CTA whose warps 0 and 1 were traced (usable, stored: theirs), the others not (-1)."""
    warps = [f"{usable[w]},{stored[w]}" if w < 2 else "-1,-1" for w in range(16)]
    return f"{launch},{n},{smid},{end},{entry},{slot},{ring},{rows}," + ",".join(warps)


def test_phases_by_fold(tmp_path, capsys):
    rows = [HEADER,
            cta(0, 0, 5, 0, 0.0, 1.0, 2.0, 2.5, (3.0, 4.0), (5.0, 6.0)),
            cta(0, 1, 5, 0, 0.2, 1.2, 2.4, 2.9, (3.2, 4.2), (5.2, 7.0)),
            cta(0, 2, 9, 1, 0.1, 1.1, 2.1, 2.6, (3.1, 4.1), (8.0, 9.5)),
            cta(1, 0, 5, 0, 0.0, 1.0, 2.0, 2.5, (3.0, 4.0), (5.0, 6.0))]
    path = tmp_path / "t.k128.csv"
    path.write_text("\n".join(rows) + "\n")
    load_tool().summarise(str(path))
    out = capsys.readouterr().out
    assert "2 launches" in out
    # launch 0: the folding CTA 2 ends last, at its warp 1's store
    assert "launch 0: span 9.50 us; last CTA 2 (SM 9, fold 1): slot 1.10, ring 2.10, rows 2.60, " \
           "s0_first 3.10, s0_last 4.10, end 9.50" in out
    # medians of the two CTAs without a fold: slot 1.1 (max 1.2), end 6.5 (max 7.0)
    assert "no fold      2    1.10/  1.20    2.20/  2.40    2.70/  2.90    3.10/  3.20    4.10/  4.20    6.50/  7.00" \
        in out
    assert "fold         1    1.10/  1.10" in out
    assert "spans: median 7.75, mean 7.75 us" in out


def test_untraced_warps_skipped(tmp_path, capsys):
    path = tmp_path / "t.k128.csv"
    path.write_text(HEADER + "\n" + cta(0, 0, 1, 0, 0.0, 1.0, 2.0, 3.0, (-1, -1), (-1, -1)) + "\n")
    load_tool().summarise(str(path))
    assert "0 launches" in capsys.readouterr().out
