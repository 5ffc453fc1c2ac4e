"""The handwritten section: ridge_cholesky and ordinal_mae against scikit-learn."""

from __future__ import annotations

from benchmarks import handwritten
from benchmarks.registry import SECTIONS, Context


def test_handwritten_section_compares_with_the_library_versions():
    assert SECTIONS["handwritten"].run is handwritten.run
    res = handwritten.run(Context(quick=True, min_time=0.005, log=lambda msg: None))
    names = [c.name for c in res.checks]
    assert len(names) == 4
    by_name = dict(zip(names, res.checks, strict=True))
    # the results: the library's (exact equality for the mean, 1e-12 for the solve)
    assert by_name[names[0]].status == "PASS" and by_name[names[2]].value == 1.0
    assert res.data["handwritten/mae/identical"] is True
    assert 0 <= res.data["handwritten/ridge/diff"] <= 1e-12
    for n, d in handwritten.RIDGE_SHAPES:
        assert f"| {n} x {d} |" in res.markdown
    assert res.data["handwritten/ridge/speedup"] > 0 and res.data["handwritten/mae/speedup"] > 0
