"""Fetch stage: mirror copies, checksums, atomic writes, clear errors, no network."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import io
import shutil
import threading
import urllib.error
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.data import fetch
from pipeline.data.fetch import fetch_dataset, read_checksums, verify_raw
from pipeline.data.registry import CHECKSUMS, get_spec
from pipeline.errors import (
    ChecksumError,
    DatasetFailures,
    SourceUnavailableError,
    UnknownDatasetError,
)

from ..conftest import ROOT, cfg_for, make_settings


def offline(url: str, timeout: float) -> Any:
    """An opener simulating an unreachable network (raises like urlopen would)."""
    raise urllib.error.URLError(f"simulated: no network for {url}")


def files_in(directory: Path) -> list[str]:
    """Every entry of a directory, hidden ones (temporaries) included."""
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_all_mirrored_files_match_manifest(raw_all, manifest, registry) -> None:
    """Every MANIFEST file was fetched from the mirror with its sha256 and size."""
    by_path = {}
    for spec in registry.values():
        for f in spec.files:
            if f.mirror:
                by_path[f.mirror] = (spec.name, f)
    assert set(by_path) == {row["relative_path"] for row in manifest}
    for row in manifest:
        name, f = by_path[row["relative_path"]]
        assert (f.sha256, f.bytes) == (row["sha256"], int(row["bytes"]))
        dest = raw_all.raw_dir / name / f.name
        assert dest.stat().st_size == int(row["bytes"])
        assert sha(dest) == row["sha256"]
    for spec in registry.values():
        if spec.mirrored:
            recorded = read_checksums(raw_all.raw_dir / spec.name)
            assert recorded == {f.name: f.sha256 for f in spec.files}
            assert not [n for n in files_in(raw_all.raw_dir / spec.name) if n.startswith(".")]


def test_rerun_skips_present_files(tmp_path: Path, mirror: Path) -> None:
    settings = make_settings(tmp_path, mirror)
    spec = get_spec("iris", settings.dataset_dirs)
    first = fetch_dataset(spec, settings, opener=offline)
    assert first.actions == {"iris.txt": "mirror"}
    dest = settings.raw_dir / "iris" / "iris.txt"
    mtime = dest.stat().st_mtime_ns
    second = fetch_dataset(spec, settings, opener=offline)
    assert second.actions == {"iris.txt": "present"}
    assert dest.stat().st_mtime_ns == mtime
    # a damaged local copy is fetched again
    dest.write_bytes(b"garbage")
    third = fetch_dataset(spec, settings, opener=offline)
    assert third.actions == {"iris.txt": "mirror"}
    assert sha(dest) == spec.files[0].sha256


def _copy_mirror(mirror: Path, dest: Path, rel_paths: list[str]) -> Path:
    for rel in rel_paths:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(mirror / rel, dest / rel)
    return dest


def test_corrupted_mirror_file(tmp_path: Path, mirror: Path) -> None:
    spec = get_spec("birds", [ROOT / "conf" / "dataset"])
    fake = _copy_mirror(mirror, tmp_path / "mirror", [f.mirror for f in spec.files])
    victim = fake / "multilabel/birds/birds-train.arff"
    data = bytearray(victim.read_bytes())
    data[1000] ^= 0x01  # one byte changed, same size
    victim.write_bytes(bytes(data))
    settings = make_settings(tmp_path, fake)
    with pytest.raises(ChecksumError) as info:
        fetch_dataset(spec, settings, opener=offline)
    msg = str(info.value)
    assert "'birds'" in msg and "'birds-train.arff'" in msg and "mismatch" in msg
    assert "Remedy" in msg
    raw = settings.raw_dir / "birds"
    # the first file (birds-test.arff) was fine; the corrupted one left nothing behind
    assert "birds-train.arff" not in files_in(raw)
    assert not [n for n in files_in(raw) if n.endswith(".part")]


def test_missing_file_no_network(tmp_path: Path, mirror: Path) -> None:
    spec = get_spec("emotions", [ROOT / "conf" / "dataset"])
    rels = [f.mirror for f in spec.files if not f.name.endswith("test.arff")]
    fake = _copy_mirror(mirror, tmp_path / "mirror", rels)
    settings = make_settings(tmp_path, fake)
    with pytest.raises(SourceUnavailableError) as info:
        fetch_dataset(spec, settings, opener=offline)
    msg = str(info.value)
    assert "no mirror, no network" in msg
    assert "'emotions'" in msg and "'emotions-test.arff'" in msg
    assert "simulated: no network" in msg  # the URL error is reported
    raw = settings.raw_dir / "emotions"
    assert "emotions-test.arff" not in files_in(raw)
    assert not [n for n in files_in(raw) if n.endswith(".part")]
    # the files that were available were kept and recorded (a re-run resumes)
    assert set(read_checksums(raw)) == {f.name for f in spec.files} - {"emotions-test.arff"}


def test_unknown_dataset(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, None)
    with pytest.raises(UnknownDatasetError) as info:
        fetch.run(cfg_for(settings, datasets=["birds", "no_such_data"]), opener=offline)
    msg = str(info.value)
    assert "'no_such_data'" in msg and "valid names" in msg
    assert "birds" in msg and "tmc2007_500" in msg
    assert files_in(settings.raw_dir) == []  # nothing fetched before failing


@pytest.mark.parametrize("name", ["mediamill", "tmc2007"])
@pytest.mark.parametrize("opener", [offline, None], ids=["injected", "urlopen"])
def test_upstream_only_datasets_fail_offline(tmp_path: Path, mirror: Path, name, opener) -> None:
    """No mirror copy: the clear error (with the real urlopen the network guard of
    conftest makes the host unreachable, so nothing leaves the machine)."""
    settings = make_settings(tmp_path, mirror, timeout=1)
    with pytest.raises(SourceUnavailableError, match="no mirror, no network") as info:
        fetch.run(cfg_for(settings, datasets=name), opener=opener)
    assert f"'{name}'" in str(info.value)
    assert "csie.ntu.edu.tw" in str(info.value)  # the URL tried
    assert [n for n in files_in(settings.raw_dir / name) if n != CHECKSUMS] == []


def _user_spec(tmp_path: Path, url: str, sha256: str | None, size: int | None) -> Path:
    entry: dict[str, Any] = {"name": "dl.svm", "urls": [url]}
    if sha256:
        entry["sha256"] = sha256
    if size is not None:
        entry["bytes"] = size
    doc = {
        "name": "dl",
        "task": "multilabel",
        "format": "libsvm",
        "parts": {"all": "dl.svm"},
        "files": [entry],
    }
    reg = tmp_path / "registry"
    reg.mkdir(exist_ok=True)
    (reg / "dl.yaml").write_text(yaml.safe_dump(doc))
    return reg


def test_download_trust_on_first_use(tmp_path: Path, caplog) -> None:
    """A file without sha256 is downloaded (file:// URL), its hash reported and recorded;
    later runs verify against that record."""
    src = tmp_path / "upstream" / "dl.svm"
    src.parent.mkdir()
    src.write_text("0,1 1:1 2:3\n1 2:1\n")
    reg = _user_spec(tmp_path, src.as_uri(), None, None)
    settings = make_settings(tmp_path, None, dataset_dirs=[str(reg)])
    spec = get_spec("dl", settings.dataset_dirs)
    with caplog.at_level("WARNING"):
        report = fetch_dataset(spec, settings)
    assert report.actions == {"dl.svm": "download"}
    assert report.trusted == {"dl.svm": sha(src)}
    assert sha(src) in caplog.text and "first" in caplog.text
    assert read_checksums(settings.raw_dir / "dl") == {"dl.svm": sha(src)}
    assert fetch_dataset(spec, settings).actions == {"dl.svm": "present"}
    # the local copy changes: it no longer matches the recorded hash
    (settings.raw_dir / "dl" / "dl.svm").write_text("0 1:2\n")
    with pytest.raises(ChecksumError):
        verify_raw(spec, settings.raw_dir)
    # and the upstream file changed too: the re-download is refused
    src.write_text("0 1:5\n")
    with pytest.raises(ChecksumError, match="recorded"):
        fetch_dataset(spec, settings)


def test_download_wrong_checksum(tmp_path: Path) -> None:
    src = tmp_path / "dl.svm"
    src.write_text("0 1:1\n")
    reg = _user_spec(tmp_path, src.as_uri(), "0" * 64, None)
    settings = make_settings(tmp_path, None, dataset_dirs=[str(reg)])
    with pytest.raises(ChecksumError, match="'dl.svm'"):
        fetch.run(cfg_for(settings, datasets="dl"))
    assert [n for n in files_in(settings.raw_dir / "dl") if n != CHECKSUMS] == []


class _Flaky:
    """An opener whose stream breaks after some bytes (an interrupted download)."""

    def __init__(self, payload: bytes, fail: bool) -> None:
        self.payload, self.fail = payload, fail

    @contextlib.contextmanager
    def __call__(self, url: str, timeout: float):
        payload, fail = self.payload, self.fail

        class Stream(io.BytesIO):
            def read(self, n: int = -1) -> bytes:
                if fail and self.tell() > 0:
                    raise ConnectionResetError("connection reset (simulated)")
                return super().read(min(n, 4) if n and n > 0 else 4)

        yield Stream(payload)


def test_interrupted_download_leaves_no_partial_file(tmp_path: Path) -> None:
    payload = b"0 1:1 2:2\n1 2:1\n"
    reg = _user_spec(tmp_path, "https://example.invalid/dl.svm", None, len(payload))
    settings = make_settings(tmp_path, None, dataset_dirs=[str(reg)])
    spec = get_spec("dl", settings.dataset_dirs)
    with pytest.raises(SourceUnavailableError, match="connection reset"):
        fetch_dataset(spec, settings, opener=_Flaky(payload, fail=True))
    assert [n for n in files_in(settings.raw_dir / "dl") if n != CHECKSUMS] == []
    report = fetch_dataset(spec, settings, opener=_Flaky(payload, fail=False))
    assert report.actions == {"dl.svm": "download"}
    assert (settings.raw_dir / "dl" / "dl.svm").read_bytes() == payload


def test_stale_temporaries_are_removed(tmp_path: Path, mirror: Path) -> None:
    settings = make_settings(tmp_path, mirror)
    stale = settings.raw_dir / "iris" / ".iris.txt.abc123.part"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"half")
    fetch.run(cfg_for(settings, datasets="iris"), opener=offline)
    assert files_in(settings.raw_dir / "iris") == [CHECKSUMS, "iris.txt"]


def test_local_http_server(tmp_path: Path) -> None:
    """The default opener downloads over HTTP (from a server on the loopback interface)."""
    served = tmp_path / "www"
    served.mkdir()
    (served / "dl.svm").write_text("0 1:1\n1 1:2\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))

    class Quiet(handler.func):  # type: ignore[name-defined]
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(served))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/dl.svm"
        reg = _user_spec(tmp_path, url, sha(served / "dl.svm"), None)
        settings = make_settings(tmp_path, None, dataset_dirs=[str(reg)])
        reports = fetch.run(cfg_for(settings, datasets="dl"))
        assert reports[0].actions == {"dl.svm": "download"}
        missing = url.replace("dl.svm", "nothing.svm")
        reg = _user_spec(tmp_path, missing, None, None)
        with pytest.raises(SourceUnavailableError, match="404"):
            fetch.run(cfg_for(settings, datasets="dl", data={**settings.as_dict(), "force": True}))
    finally:
        server.shutdown()
        server.server_close()


def test_one_failure_does_not_stop_the_others(
    tmp_path: Path, mirror: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(tmp_path, mirror)
    with pytest.raises(DatasetFailures, match=r"2 of 3 dataset\(s\) failed: mediamill, tmc2007"):
        fetch.run(cfg_for(settings, datasets=["mediamill", "iris", "tmc2007"]), opener=offline)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("error: ")]
    assert len(lines) == 2 and "'mediamill'" in lines[0] and "'tmc2007'" in lines[1]
    assert (settings.raw_dir / "iris" / "iris.txt").is_file()
    assert not (settings.raw_dir / "mediamill").exists()  # no empty directory left
