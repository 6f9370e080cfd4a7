"""`coteam bench`: paper-style comparison of methods on a suite."""

from __future__ import annotations

import json

import pytest

from coteam.cli import main


@pytest.mark.parametrize(("suite", "metric"), [("cwah-test", "total_steps"), ("tdwmat-test", "total")])
def test_bench_writes_table_json_and_chart(tmp_path, capsys, suite, metric):
    out = tmp_path / "bench"
    assert (
        main(["bench", "--suite", suite, "--methods", "rhp,oracle", "--episodes", "0-1", "--quiet", "--out", str(out)])
        == 0
    )
    rows = {r["method"]: r for r in json.loads((out / "comparison.json").read_text())["rows"]}
    assert set(rows) == {"rhp", "oracle"}
    assert rows["oracle"]["vs_oracle"] == pytest.approx(1.0)
    assert all(r["episodes"] == 2 and metric in r for r in rows.values())
    table = (out / "comparison.md").read_text()
    assert ("Total Steps" in table) == (suite == "cwah-test") and "| rhp |" in table and "| oracle |" in table
    assert (out / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "rhp" / "results.json").is_file()
    assert "comparison.md" in capsys.readouterr().out


def test_bench_rejects_unknown_methods(tmp_path):
    assert main(["bench", "--suite", "cwah-test", "--methods", "rhp,telepathy", "--out", str(tmp_path)]) == 2
