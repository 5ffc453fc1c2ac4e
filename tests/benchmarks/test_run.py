"""The runner: RESULTS.md rendered from a per-section record, ``--update`` of some sections."""

from __future__ import annotations

import json

import pytest

from benchmarks import registry, run
from benchmarks.registry import Check, SectionResult


@pytest.fixture
def two_sections(monkeypatch):
    """Two tiny registered sections whose output changes from one run to the next."""
    for var in ("XLA_FLAGS", "JAX_PLATFORMS"):  # run.main sets them: restored after
        monkeypatch.setenv(var, "")
    calls = {"alpha": 0, "beta": 0}

    def make(name: str, goal: float):
        def fn(ctx):
            calls[name] += 1
            k = calls[name]
            return SectionResult(
                f"{name} markdown, run {k}",
                checks=[Check(f"{name} check", float(k), goal)],
                data={f"{name}.k": k},
            )

        return fn

    monkeypatch.setitem(
        registry.SECTIONS, "alpha", registry.Section("alpha", "Alpha", 900, make("alpha", 1), "")
    )
    monkeypatch.setitem(
        registry.SECTIONS, "beta", registry.Section("beta", "Beta", 901, make("beta", 2), "")
    )
    return calls


def test_update_reruns_only_the_given_sections(two_sections, tmp_path, capsys):
    md, rec = tmp_path / "RESULTS.md", tmp_path / "run.json"
    base = ["--sections", "alpha,beta", "--output", str(md), "--json", str(rec)]
    assert run.main(base) == 1  # beta's check: 1 < goal 2
    first = md.read_text()
    assert "alpha markdown, run 1" in first and "beta markdown, run 1" in first
    assert "| FAIL | beta check |" in first
    record = json.loads(rec.read_text())
    assert [s["name"] for s in record["sections"]] == ["alpha", "beta"]

    assert run.main(["--sections", "beta", "--update", str(rec), "--output", str(md)]) == 0
    assert two_sections == {"alpha": 1, "beta": 2}
    second = md.read_text()
    assert "alpha markdown, run 1" in second  # kept from the record
    assert "beta markdown, run 2" in second and "beta markdown, run 1" not in second
    assert "| PASS | beta check |" in second and "| PASS | alpha check |" in second
    assert second.index("## Alpha") < second.index("## Beta")  # registry order kept
    # one line per section says where it was measured (no log of the updates)
    assert "(after 1 runs of `--update` since the first full run)" in second
    assert "- updated " not in second
    lines = [x for x in second.splitlines() if x.startswith("- [`")]
    assert [x.split("`")[1] for x in lines] == ["alpha", "beta"]
    assert lines[0].startswith("- [`alpha`](#alpha): commit ") and "load average" in lines[0]
    record = json.loads(rec.read_text())  # the record is rewritten with the new section
    assert record["data"] == {"alpha.k": 1, "beta.k": 2}
    assert [c["value"] for c in record["checks"]] == [1.0, 2.0]
    assert len(record["updates"]) == 1
    assert not list(tmp_path.glob("*.tmp"))


def test_update_errors_are_one_line(two_sections, tmp_path, capsys):
    rec = tmp_path / "old.json"
    rec.write_text(json.dumps({"machine": {}, "data": {}, "checks": []}))
    assert run.main(["--update", str(rec)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --update needs --sections (the sections to re-run)"
    ]
    assert run.main(["--sections", "beta", "--update", str(rec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no per-section record" in err[0] and "--json FILE" in err[0]
    assert run.main(["--sections", "beta", "--update", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read the benchmark record" in err[0]
    assert two_sections == {"alpha": 0, "beta": 0}  # nothing was run


def test_a_section_measured_apart_names_its_record() -> None:
    """A section that renders a record measured apart (``benchmarks.repro``) gives the
    record's commit and date beside the run that rendered it."""
    record = {
        "updates": [],
        "sections": [
            {"name": "repro", "title": "make repro (all the paper's tables)", "load": [0.2, 0.3],
             "commit": "bbb", "date": "2026-01-02 10:00 UTC",
             "markdown": "Measured apart.\n\nRecord `repro-aaa.json`: commit aaa (full), "
                         "measured 2026-01-01 09:30 UTC on 2 cores"},
        ],
    }  # fmt: skip
    (line,) = run._measured_at(record)[2:]
    assert line == (
        "- [`repro`](#make-repro-all-the-papers-tables): commit aaa, 2026-01-01 09:30 UTC "
        "(measured apart; the section's *Record* line gives the load), rendered at commit "
        "bbb, 2026-01-02 10:00 UTC, load average 0.20 -> 0.30"
    )
