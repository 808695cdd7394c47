"""bench/ab_table.py, the table of an A/B call's tagged bench lines, on hand-made lines."""
from _util import bench_tool


def load_tool():
    return bench_tool("ab_table")


def line(tag, batch, packed, replay):
    """A line as the device calls write it: the tag, then `replayssm bench`'s staggered line."""
    head = "%-22s %4d  16 staggered |  %9.2f  %9.2f  %.3fx |" % (tag, batch, packed, replay, packed / replay)
    return head + "    25.462    14.923  1.706x |   1969.4   1041.4 |  50.1%  26.5%"


LINES = [line("A/gdn", 12, 12.0, 14.0), line("B/gdn", 12, 11.0, 15.0), line("A/gdn", 16, 15.0, 16.0),
         "[12 s] round 1", "# a comment", line("A/gdn", 12, 12.2, 14.0), line("B/gdn", 12, 11.1, 15.0)]


def test_means_best_and_spread():
    tool = load_tool()
    runs = tool.parse(LINES)
    assert runs == {"A/gdn": {12: [12.0, 12.2], 16: [15.0]}, "B/gdn": {12: [11.0, 11.1]}}
    out = tool.table(runs)
    assert out[0] == "| variant | B = 12 | B = 16 |"
    assert out[2] == "| A/gdn | 12.10 | **15.00** |"
    assert out[3] == "| B/gdn | **11.05** |  |"
    assert out[-1].startswith("Means of up to 2 rounds; the largest spread between rounds 0.20")
    assert "(A/gdn, B = 12)" in out[-1]


def test_replay_column_and_filters(tmp_path, capsys):
    tool = load_tool()
    path = tmp_path / "bench.txt"
    path.write_text("\n".join(LINES) + "\n")
    assert tool.main([str(path), "--time", "replay", "--match", "^A/", "--batches", "16"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["| variant | B = 16 |", "|---|---|", "| A/gdn | **16.00** |"]
    assert tool.main([str(path), "--match", "nothing"]) == 1


def test_verify_lines():
    """A verify line carries its tokens and the tokens accepted around the row phases."""
    tool = load_tool()
    lines = [
        "L3/gdn   128  16  4 staggered 3.49 |     545.96     159.76  3.417x |  2168.488   388.162  5.587x |",
        "M/gdn    128  16  4 staggered 3.48 |     545.90     160.10  3.410x |  2168.488   388.162  5.587x |",
        "L3/gdn     8  16  4 inphase 4.00 |      38.09      23.50  1.621x |   135.530    24.269  5.584x |",
    ]
    assert tool.parse(lines, "replay") == {"L3/gdn": {128: [159.76], 8: [23.50]}, "M/gdn": {128: [160.10]}}
