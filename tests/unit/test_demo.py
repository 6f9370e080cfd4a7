"""`make demo` end to end: `coteam demo` runs one episode of each benchmark and writes trace, PNG and results."""

from __future__ import annotations

import json

from coteam.cli import main


def test_demo_writes_trace_map_and_results(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    for suite in ("cwah-test", "tdwmat-test"):
        trace = tmp_path / suite / "traces" / f"{suite}-000.json"
        png = trace.with_suffix(".png")
        assert trace.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(trace) in printed and str(png) in printed
        episodes = json.loads((tmp_path / suite / "results.json").read_text())["episodes"]
        assert len(episodes) == 1 and episodes[0]["agents"] == 2
        assert 0.0 <= episodes[0]["transport_rate"] <= 1.0
    assert "demo: cwah-test episode 0" in printed and "demo: tdwmat-test episode 0" in printed
