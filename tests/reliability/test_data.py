"""Reliability of the data layer (issue 11): bad input refused at the door, stale or
corrupted prepared data rebuilt, one broken dataset isolated from the others.

Every bad-input case asserts the one-line message (problem, place: dataset, file,
1-based row, remedy) and that nothing was written or lost (``data/prepared`` empty or
unchanged, the raw copy intact).  Files are small and written by the tests; no network.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from pipeline import errors
from pipeline.data import fetch
from pipeline.data import prepare as preprocess
from pipeline.data.api import load_prepared

from ._data_fixtures import (
    FORMATS,
    LR_ROWS,
    OR_TEXT,
    SVM_TEXT,
    cfg_for,
    refuse_network,
    settings_for,
    tree,
    write_dataset,
)

HEADER = "A1,A2,A3,ranking"


def lr_with(line: int, row: str, header: str = HEADER) -> str:
    """The valid label-ranking file with file line ``line`` (>= 2) replaced by ``row``."""
    rows = list(LR_ROWS)
    rows[line - 2] = row
    return header + "\n" + "\n".join(rows) + "\n"


def or_with(line: int, row: str) -> str:
    rows = OR_TEXT.splitlines()
    rows[line - 1] = row
    return "\n".join(rows) + "\n"


def svm_with(line: int, row: str) -> str:
    rows = SVM_TEXT.splitlines()
    rows[line - 1] = row
    return "\n".join(rows) + "\n"


ARFF_OK = FORMATS["mulan_arff"][2]
ARFF_DATA_LINE = ARFF_OK.splitlines().index("@data") + 2  # 1-based line of the first row


def arff_with(k: int, row: str) -> str:
    """The valid ARFF file with data row ``k`` (0-based) replaced by ``row``."""
    lines = ARFF_OK.splitlines()
    lines[ARFF_DATA_LINE - 1 + k] = row
    return "\n".join(lines) + "\n"


# (format, content, expected pieces of the message, row or None)
BAD_INPUTS = {
    # ---- label-ranking CSV
    "lr-nan": ("label_ranking", lr_with(4, "1.0,nan,3.0,a>b>c"), ["'nan' in column 'A2'"], 4),
    "lr-inf": ("label_ranking", lr_with(5, "inf,2.0,3.0,a>b>c"), ["'inf' in column 'A1'"], 5),
    "lr-empty-field": (
        "label_ranking",
        lr_with(6, "1.0,,3.0,a>b>c"),
        ["empty field in column 'A2'", "fill the value in"],
        6,
    ),
    "lr-missing-column": (
        "label_ranking",
        lr_with(7, "1.0,2.0,a>b>c"),
        ["3 fields, the header has 4"],
        7,
    ),
    "lr-extra-column": (
        "label_ranking",
        lr_with(8, "1.0,2.0,3.0,a>b>c,7"),
        ["5 fields, the header has 4", "no extra column"],
        8,
    ),
    "lr-tie": (
        "label_ranking",
        lr_with(5, "1.0,2.0,3.0,a>b=c"),
        ["tie in ranking 'a>b=c'", "ties are not supported", "break the tie"],
        5,
    ),
    "lr-double-gt": (
        "label_ranking",
        lr_with(5, "1.0,2.0,3.0,a>>c"),
        ["empty label in ranking 'a>>c'"],
        5,
    ),
    "lr-unknown-label": (
        "label_ranking",
        lr_with(5, "1.0,2.0,3.0,a>d>c"),
        ["unknown label 'd' in ranking 'a>d>c'", "labels a, b, c"],
        5,
    ),
    "lr-shifted-row": (
        "label_ranking",
        lr_with(5, "2.0,3.0,a>b>c,1.0"),
        ["non-numeric value 'a>b>c' in column 'A3'"],
        5,
    ),
    "lr-incomplete": (
        "label_ranking",
        lr_with(5, "1.0,2.0,3.0,a>b"),
        ["incomplete ranking 'a>b' (misses c)", "partial rankings are not supported"],
        5,
    ),
    "lr-repeated": (
        "label_ranking",
        lr_with(5, "1.0,2.0,3.0,a>a>b"),
        ["repeats label 'a'"],
        5,
    ),
    "lr-non-numeric-feature": (
        "label_ranking",
        lr_with(3, "winter,2.0,3.0,b>a>c", header="season,A2,A3,ranking"),
        ["non-numeric value 'winter' in column 'season'", "drop: [season]", "one-hot"],
        3,
    ),
    "lr-bad-header": (
        "label_ranking",
        lr_with(2, LR_ROWS[0], header="A1,A2,A3,label"),
        ["header must end with a 'ranking' column"],
        1,
    ),
    "lr-binary": ("label_ranking", b"A1,A2\nPK\x03\x04\x00\x00", ["binary file"], 2),
    "lr-not-utf8": ("label_ranking", b"A1,ranking\n\xff\xfe,a>b\n", ["not UTF-8"], 2),
    "lr-empty-file": ("label_ranking", "", ["empty file"], None),
    "lr-header-only": ("label_ranking", HEADER + "\n", ["no rankings"], None),
    # ---- orreview
    "or-nan": ("orreview", or_with(4, "1.0 nan 2"), ["'nan' in column 2"], 4),
    "or-inf": ("orreview", or_with(2, "-inf 1.0 2"), ["'-inf' in column 1"], 2),
    "or-column-count": (
        "orreview",
        or_with(5, "1.0 2"),
        ["2 columns, the first row (line 1) has 3"],
        5,
    ),
    "or-non-numeric": ("orreview", or_with(3, "abc 1.0 2"), ["non-numeric value 'abc'"], 3),
    "or-bad-class": ("orreview", or_with(6, "1.0 2.0 0"), ["class '0' in the last column"], 6),
    "or-binary": ("orreview", b"1 2 1\n\x00\x01\x02", ["binary file"], 2),
    "or-empty-file": ("orreview", "\n\n", ["empty file"], None),
    # ---- LIBSVM
    "svm-nan": ("libsvm", svm_with(4, "1,2 1:nan 3:1"), ["value nan of feature 1"], 4),
    "svm-inf": ("libsvm", svm_with(2, "0 1:1 3:inf"), ["value inf of feature 3"], 2),
    "svm-malformed": ("libsvm", svm_with(3, "1,2 1:abc"), ["malformed LIBSVM data"], None),
    "svm-binary": ("libsvm", b"\x00\x01binary", ["binary file"], 1),
    "svm-empty-file": ("libsvm", "", ["empty file"], None),
    # ---- MULAN ARFF
    "arff-missing": (
        "mulan_arff",
        arff_with(2, "1.5,?,red,0,1"),
        ["missing value '?' in attribute 'f2'"],
        ARFF_DATA_LINE + 2,
    ),
    "arff-inf": (
        "mulan_arff",
        arff_with(3, "inf,1.0,red,0,1"),
        ["infinite value in attribute 'f1'"],
        ARFF_DATA_LINE + 3,
    ),
    "arff-column-count": (
        "mulan_arff",
        arff_with(1, "1.5,2.0,red,0"),
        ["invalid ARFF"],
        ARFF_DATA_LINE + 1,
    ),
    "arff-unknown-category": (
        "mulan_arff",
        arff_with(4, "1.5,2.0,purple,0,1"),
        ["invalid ARFF", "purple"],
        ARFF_DATA_LINE + 4,
    ),
    "arff-binary": ("mulan_arff", b"@relation x\n\x00", ["binary file"], 2),
    "arff-empty-file": ("mulan_arff", " \n", ["empty file"], None),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_refused_with_one_line(tmp_path: Path, case: str) -> None:
    """The reader refuses the file with problem, dataset, file, row and remedy; nothing is
    written to data/prepared and the raw copy is intact."""
    fmt, content, pieces, row = BAD_INPUTS[case]
    data = write_dataset(tmp_path, "u", fmt, content)
    settings = settings_for(tmp_path)
    fetch.run(cfg_for(settings, datasets="u"), opener=refuse_network)
    raw_before = tree(settings.raw_dir)
    with pytest.raises(errors.DataFormatError) as info:
        preprocess.run(cfg_for(settings, datasets="u"))
    message = str(info.value)
    assert "\n" not in message
    for piece in pieces:
        assert piece in message, message
    assert "dataset 'u'" in message and f"file {settings.raw_dir / 'u' / data.name}" in message
    if row is not None:
        assert f", row {row})" in message, message
    assert "; " in message  # a remedy follows the place
    assert tree(settings.prepared_dir) == {}  # nothing written
    assert tree(settings.raw_dir) == raw_before  # nothing lost
    assert not list(tmp_path.rglob("*.part"))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_valid_files_of_each_format_pass(tmp_path: Path, fmt: str) -> None:
    """The fixtures' valid files are accepted (the bad cases differ by one row)."""
    write_dataset(tmp_path, "u", fmt)
    settings = settings_for(tmp_path)
    d = load_prepared("u", settings.as_dict(), opener=refuse_network)
    assert len(d.train[1]) + len(d.val[1]) + len(d.test[1]) in (10, 12)


def test_bad_file_leaves_the_existing_variant_unchanged(tmp_path: Path) -> None:
    """A good prepared variant survives a later bad edit of its source (error, no loss)."""
    data = write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    load_prepared("u", settings.as_dict(), opener=refuse_network)
    before = tree(settings.prepared_dir)
    data.write_text(lr_with(5, "1.0,2.0,3.0,a>b=c"))
    with pytest.raises(errors.DataFormatError, match=r"tie in ranking 'a>b=c' .*row 5\)"):
        load_prepared("u", settings.as_dict(), opener=refuse_network)
    assert tree(settings.prepared_dir) == before


# ------------------------------------------------------------------ item 1: stale data
def test_load_prepared_rebuilds_after_the_path_file_grows(tmp_path: Path) -> None:
    """Editing a user's path: file is seen by load_prepared (re-copied, rebuilt)."""
    data = write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    d = load_prepared("u", settings.as_dict(), opener=refuse_network)
    assert [len(d.train[1]), len(d.val[1]), len(d.test[1])] == [6, 3, 3]
    data.write_text(LR_TEXT_40)
    d = load_prepared("u", settings.as_dict(), opener=refuse_network)
    assert [len(d.train[1]), len(d.val[1]), len(d.test[1])] == [24, 8, 8]
    assert (settings.raw_dir / "u" / data.name).read_text() == LR_TEXT_40


LR_TEXT_40 = HEADER + "\n" + "\n".join(LR_ROWS * 3 + LR_ROWS[:4]) + "\n"


def test_fetch_recopies_an_edited_path_file(tmp_path: Path) -> None:
    """The changed content (not the mtime) triggers a new copy; SHA256SUMS follows."""
    data = write_dataset(tmp_path, "u", "orreview")
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets="u")
    assert fetch.run(cfg, opener=refuse_network)[0].actions == {"u.dat": "path"}
    assert fetch.run(cfg, opener=refuse_network)[0].actions == {"u.dat": "present"}
    data.write_text(OR_TEXT.replace("0.5 9.0 2", "0.7 9.0 2"))
    (report,) = fetch.run(cfg, opener=refuse_network)
    assert report.actions == {"u.dat": "path"}
    assert (settings.raw_dir / "u" / "u.dat").read_bytes() == data.read_bytes()
    sums = fetch.read_checksums(settings.raw_dir / "u")
    from pipeline.fileio import sha256_file

    assert sums == {"u.dat": sha256_file(data)}


def test_preprocess_stage_rebuilds_a_stale_variant(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """fetch + preprocess (the DVC stages) rebuild after the raw file changed."""
    data = write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets="u", report=False)
    fetch.run(cfg, opener=refuse_network)
    preprocess.run(cfg)
    data.write_text(LR_TEXT_40)
    fetch.run(cfg, opener=refuse_network)
    with caplog.at_level(logging.INFO, logger="pipeline"):
        preprocess.run(cfg)
    assert any("u.txt changed since it was built: rebuilding" in r.message for r in caplog.records)
    stats = load_prepared("u", settings.as_dict(), prepare_missing=False).stats
    assert stats["n_samples_raw"] == {"all": 40}


def test_shared_raw_cache_does_not_serve_a_changed_file(tmp_path: Path) -> None:
    """A long-lived RawCache (one process, several stage runs) reads a changed file again."""
    data = write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets="u", report=False)
    cache = preprocess.RawCache()
    fetch.run(cfg, opener=refuse_network)
    preprocess.run(cfg, cache=cache)
    data.write_text(LR_TEXT_40)
    fetch.run(cfg, opener=refuse_network)
    preprocess.run(cfg, cache=cache)
    d = load_prepared("u", settings.as_dict(), prepare_missing=False)
    assert len(d.train[1]) + len(d.val[1]) + len(d.test[1]) == 40


def test_pipeline_train_uses_the_rebuilt_variant(tmp_path: Path) -> None:
    """pipeline.train on a user dataset whose path: file grew trains on all 40 samples."""
    import yaml
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from pipeline import train
    from pipeline.paths import conf_dir

    data = write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        composed = compose("config", overrides=["lambdas.num=2", "tracking.enabled=false"])
    cfg = OmegaConf.to_container(composed, resolve=True)
    cfg["data"] = {**cfg["data"], **settings.as_dict()}
    cfg["dataset"] = yaml.safe_load((tmp_path / "registry" / "u.yaml").read_text())
    cfg["progress"] = False
    train.run(cfg)
    data.write_text(LR_TEXT_40)
    out = train.run(cfg)
    stats = load_prepared("u", settings.as_dict(), prepare_missing=False).stats
    assert stats["n_samples_raw"] == {"all": 40} and stats["n_samples"]["test"] == 8
    assert out["composition"].dataset == "u"


def test_dvc_preprocess_stage_rebuilds_every_stale_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m pipeline.stage preprocess` (the DVC stage) also rebuilds the variants it
    prepares beside the selected settings (here drop_empty of a multilabel dataset)."""
    import shutil

    from pipeline import stage
    from pipeline.data.storage import load_stats
    from pipeline.paths import project_root

    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(project_root() / "conf" / "data", root / "conf" / "data")
    monkeypatch.setenv("PROJLOSS_ROOT", str(root))
    data = write_dataset(tmp_path, "u", "libsvm", SVM_TEXT + "1:0.5\n")  # one empty row
    params = {
        "datasets": "u",
        "data": {"mirror": None, "progress": False, "dataset_dirs": [str(tmp_path / "registry")]},
    }
    stage.fetch(params)
    stage.preprocess(params)
    prepared = root / "data" / "prepared"
    assert sorted(p.name for p in prepared.iterdir()) == ["u", "u+drop_empty"]
    data.write_text(SVM_TEXT + SVM_TEXT + "1:0.5\n")
    stage.fetch(params)
    stage.preprocess(params)
    for name, n in (("u", 21), ("u+drop_empty", 20)):
        assert sum(load_stats(prepared / name)["n_samples"].values()) == n, name


def test_changed_reader_settings_rebuild(tmp_path: Path) -> None:
    """Adding `drop` to the YAML changes the variant's source settings: rebuilt."""
    write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    assert load_prepared("u", settings.as_dict(), opener=refuse_network).train[0].shape[1] == 3
    write_dataset(tmp_path, "u", "label_ranking", options={"drop": ["A2"]})
    d = load_prepared("u", settings.as_dict(), opener=refuse_network)
    assert d.train[0].shape[1] == 2 and d.stats["source"]["options"] == {"drop": ["A2"]}


def test_stale_variant_without_rebuild_is_a_clear_error(tmp_path: Path) -> None:
    data = write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    load_prepared("u", settings.as_dict(), opener=refuse_network)
    data.write_text(LR_TEXT_40)
    fetch.run(cfg_for(settings, datasets="u"), opener=refuse_network)
    stale = r"u\.txt changed since it was built.*preprocess"
    with pytest.raises(errors.PreparedDataError, match=stale):
        load_prepared("u", settings.as_dict(), prepare_missing=False)


# ------------------------------------------------------------- item 9: corrupted files
@pytest.mark.parametrize("victim", ["train.npz", "test.npz", "scaler.npz"])
def test_corrupted_prepared_file_is_rebuilt_by_load_prepared(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, victim: str
) -> None:
    write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    good = load_prepared("u", settings.as_dict(), opener=refuse_network)
    path = good.directory / victim
    path.write_bytes(path.read_bytes()[:100])  # truncated: a BadZipFile to numpy
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        again = load_prepared("u", settings.as_dict(), opener=refuse_network)
    lines = [r.message for r in caplog.records if " is corrupted" in r.message]
    assert len(lines) == 1 and victim in lines[0] and "rebuilding" in lines[0]
    np.testing.assert_array_equal(again.train[0], good.train[0])
    np.testing.assert_array_equal(again.test[1], good.test[1])


def test_corrupted_prepared_file_is_rebuilt_by_the_stage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_dataset(tmp_path, "u", "orreview")
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets="u", report=False)
    fetch.run(cfg, opener=refuse_network)
    (directory,) = preprocess.run(cfg)
    before = tree(directory)
    (directory / "val.npz").write_bytes(b"PK\x03\x04 not a zip")
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        preprocess.run(cfg)
    assert any("val.npz is corrupted" in r.message for r in caplog.records)
    assert tree(directory) == before  # the same bytes again


def test_corrupted_file_without_rebuild_is_one_line(tmp_path: Path) -> None:
    write_dataset(tmp_path, "u", "label_ranking")
    settings = settings_for(tmp_path)
    d = load_prepared("u", settings.as_dict(), opener=refuse_network)
    (d.directory / "train.npz").write_bytes(b"garbage")
    with pytest.raises(errors.PreparedDataError) as info:
        load_prepared("u", settings.as_dict(), prepare_missing=False)
    assert "train.npz is corrupted" in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------ item 2: isolation
def test_one_broken_dataset_among_good_ones(tmp_path: Path) -> None:
    """The good datasets are prepared, the broken one is the one-line error."""
    write_dataset(tmp_path, "good", "label_ranking")
    write_dataset(tmp_path, "good2", "orreview")
    write_dataset(tmp_path, "bad", "orreview", or_with(3, "1.0 inf 2"))
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets=["bad", "good", "good2"])
    fetch.run(cfg, opener=refuse_network)
    with pytest.raises(errors.DataFormatError, match=r"dataset 'bad'.*row 3\)"):
        preprocess.run(cfg)
    assert {p.name for p in settings.prepared_dir.iterdir()} == {"good", "good2"}
    table = (settings.reports_dir / "dataset_stats.csv").read_text()
    assert "good,label_ranking" in table and "bad,ordinal,,,,,,,,,read error" in table


def test_broken_dataset_not_asked_for_does_not_fail_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A fetched but broken dataset only warns (statistics table), exit status 0."""
    write_dataset(tmp_path, "good", "label_ranking")
    write_dataset(tmp_path, "bad", "libsvm", "")
    settings = settings_for(tmp_path)
    fetch.run(cfg_for(settings, datasets="all"), opener=refuse_network)
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        done = preprocess.run(cfg_for(settings, datasets="good"))
    assert [p.name for p in done] == ["good"]
    warnings = [r.message for r in caplog.records if r.message.startswith("warning: ")]
    warnings = [w for w in warnings if "the train split has only" not in w]  # 12 rows: 6
    assert len(warnings) == 1 and "empty file (dataset 'bad'" in warnings[0]


def test_every_failed_dataset_reported_on_its_own_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_dataset(tmp_path, "bad1", "label_ranking", lr_with(4, "1,2,3,a>b=c"))
    write_dataset(tmp_path, "bad2", "mulan_arff", arff_with(0, "?,1,red,0,1"))
    write_dataset(tmp_path, "good", "libsvm")
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets="all")
    fetch.run(cfg, opener=refuse_network)
    with (
        caplog.at_level(logging.ERROR, logger="pipeline"),
        pytest.raises(errors.DatasetFailures, match=r"2 of 3 dataset\(s\) failed: bad1, bad2"),
    ):
        preprocess.run(cfg)
    lines = [r.message for r in caplog.records if r.message.startswith("error: ")]
    assert len(lines) == 2
    assert "dataset 'bad1'" in lines[0] and "row 4)" in lines[0] and "tie" in lines[0]
    assert "dataset 'bad2'" in lines[1] and "missing value" in lines[1]
    assert [p.name for p in settings.prepared_dir.iterdir()] == ["good"]


def test_missing_raw_files_of_one_dataset_do_not_stop_the_others(tmp_path: Path) -> None:
    write_dataset(tmp_path, "good", "label_ranking")
    write_dataset(tmp_path, "unfetched", "orreview")
    settings = settings_for(tmp_path)
    fetch.run(cfg_for(settings, datasets="good"), opener=refuse_network)
    with pytest.raises(errors.MissingRawDataError, match="pipeline.fetch datasets=unfetched"):
        preprocess.run(cfg_for(settings, datasets="all"))
    assert (settings.prepared_dir / "good" / "stats.json").is_file()


def test_fetch_failure_of_one_dataset_does_not_stop_the_others(tmp_path: Path) -> None:
    write_dataset(tmp_path, "good", "label_ranking")
    gone = write_dataset(tmp_path, "gone", "orreview")
    gone.unlink()
    settings = settings_for(tmp_path)
    with pytest.raises(Exception, match=r"not found \(dataset 'gone'.*; fix `path:`") as info:
        fetch.run(cfg_for(settings, datasets="all"), opener=refuse_network)
    assert "\n" not in str(info.value)
    assert (settings.raw_dir / "good" / "u.txt").is_file()
    assert not (settings.raw_dir / "gone").exists()


# ------------------------------------------------------------ item 15: the stats table
def test_stats_table_keeps_rows_of_datasets_not_here(tmp_path: Path) -> None:
    """Preprocessing one dataset in a fresh clone keeps the committed rows of the others
    (the paper's datasets do not become "not fetched")."""
    from pipeline.data.settings import data_settings
    from pipeline.paths import project_root

    root = project_root()
    committed = (root / "reports" / "dataset_stats.csv").read_text()
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "dataset_stats.csv").write_text(committed)
    write_dataset(tmp_path, "mine", "label_ranking", registry=tmp_path / "user")
    settings = data_settings(
        {
            "mirror": None,
            "raw_dir": str(tmp_path / "raw"),
            "prepared_dir": str(tmp_path / "prepared"),
            "reports_dir": str(reports),
            "dataset_dirs": [str(tmp_path / "user"), str(root / "conf" / "dataset")],
            "progress": False,
        }
    )
    cfg = cfg_for(settings, datasets="mine")
    fetch.run(cfg, opener=refuse_network)
    preprocess.run(cfg)
    written = (reports / "dataset_stats.csv").read_text().splitlines()
    old = committed.splitlines()
    names = {r.split(",")[0] for r in old}
    assert [r for r in written if r.split(",")[0] in names] == old  # every old row kept
    assert sum(r.startswith("mine,label_ranking") for r in written) == 1
    md = (reports / "dataset_stats.md").read_text()
    assert "| birds | ours, drop_empty | 134 = |" in md  # the Table 5 comparison kept


# ------------------------------------------------------- items 3 + 8 at the command line
def test_ordinal_split_out_of_range_is_one_line(tmp_path: Path) -> None:
    from ._data_fixtures import run_module

    out = run_module(
        "pipeline.preprocess",
        "datasets=[ERA]",
        "data.ordinal_split=45",
        f"data.raw_dir={tmp_path / 'raw'}",
        f"data.prepared_dir={tmp_path / 'prepared'}",
        f"data.reports_dir={tmp_path / 'reports'}",
        "data.progress=false",
    )
    assert out.returncode == 1, out.stderr
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error: " in ln]
    assert len(errors) == 1 and "Traceback" not in out.stderr
    assert "data.ordinal_split=45 is out of range" in errors[0]
    assert "use an integer in 0..29" in errors[0]
    assert not (tmp_path / "prepared").exists() and not (tmp_path / "reports").exists()


def test_ordinal_split_out_of_range_in_the_api(tmp_path: Path) -> None:
    from pipeline.data.registry import get_spec
    from pipeline.paths import project_root

    settings = settings_for(tmp_path)
    spec = get_spec("ERA", [project_root() / "conf" / "dataset"])
    with pytest.raises(errors.DataSettingError, match=r"splits 0\.\.29"):
        preprocess.splits_to_prepare(spec, settings.replace(ordinal_split=30))


def test_bad_user_file_at_the_command_line_is_one_line(tmp_path: Path) -> None:
    from ._data_fixtures import run_module

    write_dataset(tmp_path, "u", "label_ranking", lr_with(9, "1.0,2.0,3.0,a>b>c,9"))
    overrides = [
        "datasets=u",
        f"data.raw_dir={tmp_path / 'raw'}",
        f"data.prepared_dir={tmp_path / 'prepared'}",
        f"data.reports_dir={tmp_path / 'reports'}",
        f"data.dataset_dirs=[{tmp_path / 'registry'}]",
        "data.progress=false",
    ]
    assert run_module("pipeline.fetch", *overrides).returncode == 0
    out = run_module("pipeline.preprocess", *overrides)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    errors = [ln for ln in (out.stdout + out.stderr).splitlines() if "error: " in ln]
    assert len(errors) == 1
    assert "5 fields, the header has 4 (dataset 'u', file " in errors[0]
    assert ", row 9); " in errors[0]
    assert not (tmp_path / "prepared" / "u").exists()


# ------------------------------------------------------------ item 17: the drop option
def test_drop_option_label_ranking(tmp_path: Path) -> None:
    text = lr_with(2, LR_ROWS[0], header="id,A2,A3,ranking")
    write_dataset(tmp_path, "u", "label_ranking", text, options={"drop": ["id"]})
    d = load_prepared("u", settings_for(tmp_path).as_dict(), opener=refuse_network)
    assert d.train[0].shape[1] == 2


def test_drop_option_removes_a_non_numeric_identifier(tmp_path: Path) -> None:
    """An identifier column that is not numeric is fine once dropped."""
    rows = [f"id{i}," + ",".join(r.split(",")[1:]) for i, r in enumerate(LR_ROWS)]
    text = "name,A2,A3,ranking\n" + "\n".join(rows) + "\n"
    write_dataset(tmp_path, "u", "label_ranking", text, options={"drop": ["name"]})
    d = load_prepared("u", settings_for(tmp_path).as_dict(), opener=refuse_network)
    assert d.train[0].shape[1] == 2


def test_drop_option_mulan_arff_before_one_hot(tmp_path: Path) -> None:
    write_dataset(tmp_path, "u", "mulan_arff")
    settings = settings_for(tmp_path)
    assert (
        load_prepared("u", settings.as_dict(), opener=refuse_network).stats["n_features"] == 5
    )  # f1, f2 and colour one-hot (3)
    write_dataset(tmp_path, "u", "mulan_arff", options={"drop": ["colour"]})
    d = load_prepared("u", settings.as_dict(), opener=refuse_network)
    assert d.stats["n_features"] == 2 and d.stats["n_attributes"] == 2


def test_drop_option_unknown_name(tmp_path: Path) -> None:
    write_dataset(tmp_path, "u", "label_ranking", options={"drop": ["nope"]})
    unknown = r"unknown attribute\(s\) \['nope'\].*A1, A2, A3"
    with pytest.raises(errors.DataFormatError, match=unknown):
        load_prepared("u", settings_for(tmp_path).as_dict(), opener=refuse_network)


@pytest.mark.parametrize("fmt", ["orreview", "libsvm"])
def test_drop_option_needs_named_attributes(tmp_path: Path, fmt: str) -> None:
    write_dataset(tmp_path, "u", fmt, options={"drop": ["x"]})
    with pytest.raises(errors.RegistryError, match="the option drop needs named attributes"):
        load_prepared("u", settings_for(tmp_path).as_dict(), opener=refuse_network)
    assert tree(tmp_path / "prepared") == {}


def test_readme_documents_the_drop_option_and_the_format_constraints() -> None:
    """The guide's "Adding a dataset" (``docs/guide/datasets.md``)."""
    from docs_pages import page, section

    text = section(page("datasets.md"), "## Adding a dataset")
    assert "drop:" in text and "ties" in text and "NaN" in text


# -------------------------------------------------------------- item 11: dataset task
def test_unknown_dataset_task_names_the_valid_tasks() -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from pipeline.config.composition import CompositionError, validate
    from pipeline.paths import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = OmegaConf.to_container(compose("config"), resolve=True)
    cfg["dataset"]["task"] = "ranking"
    with pytest.raises(CompositionError) as info:
        validate(cfg)
    message = str(info.value)
    assert "task 'ranking', which is not a dataset task" in message
    assert "label_ranking, multilabel, ordinal" in message
    assert "cannot use" not in message


def test_unknown_dataset_task_in_the_registry(tmp_path: Path) -> None:
    write_dataset(tmp_path, "u", "label_ranking")
    path = tmp_path / "registry" / "u.yaml"
    path.write_text(path.read_text().replace("task: label_ranking", "task: ranking"))
    from pipeline.data.registry import load_spec

    with pytest.raises(errors.RegistryError, match=r"task must be one of \['label_ranking'"):
        load_spec(path)


# ------------------------------------------ issue 36, items 5 and 10c: size and path
def lr_rows(n: int) -> str:
    """A valid label-ranking file of ``n`` rows."""
    return HEADER + "\n" + "\n".join(LR_ROWS[:n]) + "\n"


def test_one_row_dataset_is_one_line(tmp_path: Path) -> None:
    """Item 5: a one-row dataset is refused before scikit-learn's ValueError traceback:
    one line with the dataset, its row count, the minimum and the remedy; nothing written."""
    write_dataset(tmp_path, "u", "label_ranking", lr_rows(1))
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets="u")
    fetch.run(cfg, opener=refuse_network)
    for build in (lambda: preprocess.run(cfg), lambda: load_prepared("u", settings.as_dict())):
        with pytest.raises(errors.DataFormatError) as info:
            build()
        message = str(info.value)
        assert message == (
            "too few rows for the protocol: 1 row(s), at least 3 needed (one each for train, "
            "validation and test with data.test_size=0.2, data.val_size=0.25) (dataset 'u'); "
            "add rows to its file(s), or use another dataset"
        )
    assert not (settings.prepared_dir / "u").exists()


def test_one_row_train_part_of_a_shipped_split(tmp_path: Path) -> None:
    """Item 5: a dataset with its own split and a one-row train part: the same one line."""
    import yaml

    data = write_dataset(tmp_path, "u", "label_ranking", lr_rows(1))
    (data.parent / "test.txt").write_text(lr_rows(3))
    yaml_file = tmp_path / "registry" / "u.yaml"
    entry = yaml.safe_load(yaml_file.read_text())
    entry["parts"] = {"train": data.name, "test": "test.txt"}
    entry["files"].append({"name": "test.txt", "path": str(data.parent / "test.txt")})
    yaml_file.write_text(yaml.safe_dump(entry))
    with pytest.raises(errors.DataFormatError, match=r"1 row\(s\) in the train part \(at least 2"):
        load_prepared("u", settings_for(tmp_path).as_dict(), opener=refuse_network)


def test_one_row_dataset_at_the_command_line(tmp_path: Path) -> None:
    """Item 5: `pipeline.preprocess` on it: one line, exit status 1, no traceback."""
    from ._data_fixtures import run_module

    write_dataset(tmp_path, "u", "label_ranking", lr_rows(1))
    overrides = [
        "datasets=u",
        f"data.raw_dir={tmp_path / 'raw'}",
        f"data.prepared_dir={tmp_path / 'prepared'}",
        f"data.reports_dir={tmp_path / 'reports'}",
        f"data.dataset_dirs=[{tmp_path / 'registry'}]",
        "data.progress=false",
    ]
    fetch.run(cfg_for(settings_for(tmp_path), datasets="u"), opener=refuse_network)
    out = run_module("pipeline.preprocess", *overrides)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    errors_ = [ln for ln in (out.stdout + out.stderr).splitlines() if "error: " in ln]
    assert len(errors_) == 1 and "too few rows for the protocol: 1 row(s)" in errors_[0]


def test_tiny_train_split_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Item 5: three rows train on one: one warning line from preprocess and from
    load_prepared (what pipeline.train calls); a train split of 10 rows does not warn."""
    write_dataset(tmp_path, "u", "label_ranking", lr_rows(3))
    settings = settings_for(tmp_path)
    cfg = cfg_for(settings, datasets="u", report=False)
    fetch.run(cfg, opener=refuse_network)
    for build in (lambda: preprocess.run(cfg), lambda: load_prepared("u", settings.as_dict())):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="pipeline"):
            build()
        lines = [r.getMessage() for r in caplog.records if "train split" in r.getMessage()]
        assert len(lines) == 1 and "\n" not in lines[0]
        assert lines[0].startswith("warning: dataset 'u' (")
        assert "has only 1 row(s) (validation 1, test 1), fewer than 10" in lines[0]
    big = HEADER + "\n" + "\n".join(LR_ROWS * 2) + "\n"  # 24 rows: train 13
    write_dataset(tmp_path, "u", "label_ranking", big)
    fetch.run(cfg, opener=refuse_network)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        load_prepared("u", settings.as_dict())
    assert not [r for r in caplog.records if "train split" in r.getMessage()]


def test_missing_path_file_names_the_path_and_the_yaml(tmp_path: Path) -> None:
    """Item 10c: a `path:` that does not exist (no URL, no mirror): the message names the
    path and the YAML to fix, and does not send the user to the network."""
    data = write_dataset(tmp_path, "u", "label_ranking")
    data.unlink()
    settings = settings_for(tmp_path)
    with pytest.raises(errors.SourceUnavailableError) as info:
        fetch.run(cfg_for(settings, datasets="u"), opener=refuse_network)
    message = str(info.value)
    yaml_file = tmp_path / "registry" / "u.yaml"
    assert message.startswith(f"local file {data} not found (dataset 'u', file 'u.txt'")
    assert f"; fix `path:` in {yaml_file}" in message
    assert "network" not in message and "\n" not in message
    assert not (settings.raw_dir / "u").exists()
