"""Generate ``conf/dataset/*.yaml`` from the mirror's ``MANIFEST.tsv``.

Usage::

    python -m pipeline.tools.gen_registry [--manifest PATH] [--out conf/dataset]

MANIFEST.tsv gives, per file: task, dataset, path in the mirror, size, sha256, the exact
source ``github:owner/repo@commit:path`` and the upstream URL.  The source becomes the
first download URL (``raw.githubusercontent.com`` at the pinned commit, byte-identical to
the mirror); a direct upstream file URL, when MANIFEST has one, is the fallback.  What
MANIFEST does not say (format, parts, reader options, domain, the paper's Table 5 row)
is in :data:`EXTRA` below, as are the two upstream-only datasets (``mediamill``, LIBSVM
``tmc2007``) whose sha256 is unknown offline (trust on first use at fetch).
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from ..data.settings import data_settings
from ..paths import conf_dir

LIBSVM_ML = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multilabel"
MULAN_HOME = "http://mulan.sourceforge.net/datasets-mlc.html"

#: the paper's Table 5 (multilabel dataset statistics)
PAPER = {
    "birds": (134, 45, 172, 260, 19, 1.96),
    "cal500": (376, 126, 101, 68, 174, 25.98),
    "emotions": (293, 98, 202, 72, 6, 1.82),
    "mediamill": (22353, 7451, 12373, 120, 101, 4.54),
    "scene": (908, 303, 1196, 294, 6, 1.06),
    "tmc2007": (16139, 5380, 7077, 30438, 22, 2.22),
    "yeast": (1125, 375, 917, 103, 14, 4.17),
}
PAPER["tmc2007_500"] = PAPER["tmc2007"]
#: what the comparison with the paper's Table 5 shows (printed under the table)
PAPER_NOTES = {
    "birds": (
        "The paper's counts are those of drop_empty=true (samples without labels removed). "
        "Features: the paper counts 260 attributes; one-hot encoding the nominal `location` "
        "(12 values) gives 271 columns."
    ),
    "cal500": (
        "No official split. The paper's 376/126 and 25.98 labels are reproduced by "
        "train_test_split(all 502 samples, test_size=0.25, random_state=0): its dev split was "
        "drawn from all samples, the 101 test samples included. We follow the protocol: "
        "20% test first, then 25% of the rest."
    ),
    "tmc2007": "The paper's version (30438 features); needs the network (upstream only).",
    "tmc2007_500": (
        "Same samples, labels and split as the paper's tmc2007, 500 features instead of "
        "30438 (MULAN's reduced version, the one in the mirror)."
    ),
    "mediamill": "Upstream only: cannot be checked offline.",
}

#: mirror dataset name -> registry name (when they differ)
RENAME = {"tmc2007": "tmc2007_500"}

EXTRA: dict[str, dict[str, Any]] = {
    "birds": {
        "type": "Audio",
        "format": "mulan_arff",
        "options": {"labels_xml": "birds.xml"},
        "parts": {"train": "birds-train.arff", "test": "birds-test.arff"},
        "description": "MULAN birds (dense ARFF, 2 nominal features one-hot encoded).",
    },
    "cal500": {
        "type": "Music",
        "format": "mulan_arff",
        "options": {"labels_xml": "cal500.xml"},
        "parts": {"all": "cal500.arff"},
        "description": "MULAN CAL500 (dense ARFF, no official split: 80/20).",
    },
    "emotions": {
        "type": "Music",
        "format": "mulan_arff",
        "options": {"labels_xml": "emotions.xml"},
        "parts": {"train": "emotions-train.arff", "test": "emotions-test.arff"},
        "description": "MULAN emotions (dense ARFF); emotions.arff is the union, unused.",
    },
    "scene": {
        "type": "Images",
        "format": "libsvm",
        "options": {"n_features": 294, "n_labels": 6},
        "sparse": False,
        "parts": {"train": "scene_train.bz2", "test": "scene_test.bz2"},
        "homepage": f"{LIBSVM_ML}.html",
        "description": "LIBSVM scene (dense content, stored dense).",
    },
    "yeast": {
        "type": "Micro-array",
        "format": "libsvm",
        "options": {"n_features": 103, "n_labels": 14},
        "sparse": False,
        "parts": {"train": "yeast_train.svm.bz2", "test": "yeast_test.svm.bz2"},
        "homepage": f"{LIBSVM_ML}.html",
        "description": "LIBSVM yeast (dense content, stored dense).",
    },
    "tmc2007_500": {
        "type": "Text",
        "format": "mulan_arff",
        "options": {"labels_xml": "tmc2007-500.xml"},
        "sparse": True,
        "parts": {"train": "tmc2007-500-train.arff", "test": "tmc2007-500-test.arff"},
        "description": (
            "MULAN tmc2007-500: the SIAM TMC 2007 text data reduced to the 500 top binary "
            "word features (sparse ARFF). Same samples, labels and split as `tmc2007`, "
            "which is the paper's 30438-feature LIBSVM version."
        ),
    },
    "tmc2007": {
        "type": "Text",
        "format": "libsvm",
        "options": {"n_features": 30438, "n_labels": 22},
        "sparse": True,
        "parts": {"train": "tmc2007_train.svm.bz2", "test": "tmc2007_test.svm.bz2"},
        "homepage": f"{LIBSVM_ML}.html",
        "description": (
            "LIBSVM tmc2007 (SIAM TMC 2007 text data, 30438 features): the paper's version. "
            "Upstream only (no mirror copy); sha256 trusted on first use."
        ),
        "files": [
            {"name": "tmc2007_train.svm.bz2", "urls": [f"{LIBSVM_ML}/tmc2007_train.svm.bz2"]},
            {"name": "tmc2007_test.svm.bz2", "urls": [f"{LIBSVM_ML}/tmc2007_test.svm.bz2"]},
        ],
    },
    "mediamill": {
        "type": "Video",
        "format": "libsvm",
        "options": {"n_features": 120, "n_labels": 101},
        "sparse": False,
        "parts": {"train": "train-exp1.svm.bz2", "test": "test-exp1.svm.bz2"},
        "homepage": f"{LIBSVM_ML}.html",
        "description": (
            "LIBSVM mediamill (experiment 1 split, 120 features, 101 labels). Upstream only "
            "(no mirror copy); sha256 trusted on first use."
        ),
        "files": [
            {"name": "train-exp1.svm.bz2", "urls": [f"{LIBSVM_ML}/mediamill/train-exp1.svm.bz2"]},
            {"name": "test-exp1.svm.bz2", "urls": [f"{LIBSVM_ML}/mediamill/test-exp1.svm.bz2"]},
        ],
    },
}

_SOURCE = re.compile(r"^github:(?P<repo>[^@]+)@(?P<commit>[0-9a-f]{40}):(?P<path>.+)$")


def raw_url(source: str) -> str:
    """``github:owner/repo@commit:path`` -> its raw.githubusercontent.com URL."""
    m = _SOURCE.match(source)
    if not m:
        raise ValueError(f"unexpected source {source!r}")
    return f"https://raw.githubusercontent.com/{m['repo']}/{m['commit']}/{m['path']}"


def _is_file_url(url: str) -> bool:
    return not url.endswith((".html", ".zip")) and "github.com/" not in url


def build(manifest: Path) -> dict[str, dict[str, Any]]:
    """Registry entries (plain dicts) for every dataset of MANIFEST plus :data:`EXTRA`."""
    rows: dict[str, list[dict[str, str]]] = defaultdict(list)
    with open(manifest, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            rows[RENAME.get(row["dataset"], row["dataset"])].append(row)
    entries: dict[str, dict[str, Any]] = {}
    for name, files in rows.items():
        task = files[0]["task"]
        entry: dict[str, Any] = {"name": name, "task": task}
        if task == "label_ranking":
            (only,) = files
            entry |= {"format": "label_ranking", "parts": {"all": Path(only["relative_path"]).name}}
        elif task == "ordinal":
            n = len(files) // 2
            entry |= {
                "format": "orreview",
                "parts": {"train": f"train_{name}.{{split}}", "test": f"test_{name}.{{split}}"},
                "n_splits": n,
            }
        else:
            entry |= EXTRA[name]
        entry.setdefault("homepage", files[0]["upstream_url"])

        def key(r: dict[str, str]) -> tuple[str, int]:
            stem, _, idx = Path(r["relative_path"]).name.rpartition(".")
            return (stem, int(idx)) if idx.isdigit() else (Path(r["relative_path"]).name, -1)

        entry["files"] = []
        for r in sorted(files, key=key):
            urls = [raw_url(r["source"])]
            if _is_file_url(r["upstream_url"]):
                urls.append(r["upstream_url"])
            entry["files"].append(
                {
                    "name": Path(r["relative_path"]).name,
                    "bytes": int(r["bytes"]),
                    "sha256": r["sha256"],
                    "mirror": r["relative_path"],
                    "urls": urls,
                }
            )
        entries[name] = entry
    for name in ("tmc2007", "mediamill"):
        entries[name] = {"name": name, "task": "multilabel", **EXTRA[name]}
    for name, entry in entries.items():
        if name in PAPER:
            keys = ("train", "dev", "test", "features", "classes", "avg_labels")
            entry["paper"] = dict(zip(keys, PAPER[name], strict=True))
            if name in PAPER_NOTES:
                entry["paper"]["note"] = PAPER_NOTES[name]
    return entries


_ORDER = ("name", "task", "type", "format", "options", "sparse", "parts", "n_splits")
_ORDER += ("homepage", "description", "paper")


def dump(entry: dict[str, Any]) -> str:
    """YAML text of one entry: scalars block style, one flow-style line per file."""
    head = "# Generated by `python -m pipeline.tools.gen_registry` from MANIFEST.tsv.\n"
    out = [head]
    for k in _ORDER:
        if k in entry:
            out.append(yaml.safe_dump({k: entry[k]}, sort_keys=False, width=100))
    out.append("files:\n")
    for f in entry["files"]:
        line = yaml.safe_dump(f, default_flow_style=True, sort_keys=False, width=10_000)
        out.append(f"  - {line.strip()}\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> None:
    """Write one YAML file per dataset."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=conf_dir() / "dataset")
    args = parser.parse_args(argv)
    manifest = args.manifest
    if manifest is None:
        mirror = data_settings().mirror
        if mirror is None:
            parser.error("no mirror configured: pass --manifest")
        manifest = mirror / "MANIFEST.tsv"
    args.out.mkdir(parents=True, exist_ok=True)
    for name, entry in build(manifest).items():
        (args.out / f"{name}.yaml").write_text(dump(entry), encoding="utf-8")
        print(f"wrote {args.out / (name + '.yaml')}")


if __name__ == "__main__":
    main()
