"""The report stage depends only on the results it reads: the outputs of the experiments
of the current list (through the manifests that ``evaluate@<key>`` writes last,
:mod:`pipeline.runs.manifest`), so that another list run beside it -- ``make
repro-repeated``'s seeds, or a list with its own report directory -- leaves ``dvc status``
of the report stage unchanged, and a clone restored by ``dvc pull`` (the list's outputs
only) sees it as up to date.

The experiments' outputs are written here as their stages would leave them (their content
is not the point: DVC's dependency tracking is), their manifests by the evaluate stage's
own function, and the lock entries are recorded with ``dvc commit``; a few seconds
instead of a pipeline (tests/pipeline/test_dvc.py runs the stages for real).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.params import compose_params
from pipeline.runs import manifest

from .test_dvc import copy_project, dvc_env

DVC = str(Path(sys.executable).parent / "dvc")


def _run(args: list[str], repo: Path) -> str:
    done = subprocess.run(
        args, cwd=repo, env=dvc_env(repo), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _use_list(repo: Path, overrides: list[str], extra: dict | None = None) -> dict:
    """Compose params.yaml with these overrides (``extra``: more experiments)."""
    params = yaml.safe_load(compose_params(overrides))
    params["experiments"].update(extra or {})
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return params


def _outputs(repo: Path, params: dict, key: str, value: str = "0.5") -> None:
    """The outputs of experiment ``key`` as its tune, refit and evaluate stages write them,
    the manifest of its results last (as ``evaluate@<key>`` does)."""
    (repo / f"data/eval/{key}/run").mkdir(parents=True, exist_ok=True)
    (repo / f"data/eval/{key}/run/results.json").write_text(f'{{"headline": {value}}}\n')
    (repo / "data/tuning").mkdir(parents=True, exist_ok=True)
    (repo / f"data/tuning/{key}.json").write_text('{"runs": {}}\n')
    (repo / f"models/{key}/run").mkdir(parents=True, exist_ok=True)
    (repo / f"models/{key}/run/refit.json").write_text("{}\n")
    (repo / "metrics").mkdir(exist_ok=True)
    (repo / f"metrics/{key}.json").write_text("{}\n")
    manifest.write(params, key, root=repo)


def _report_status(repo: Path) -> str:
    return _run([DVC, "status", "report"], repo)


def test_paper_repeated_has_its_own_report_directory() -> None:
    """``make repro-repeated``'s list writes its seeds' manifests to its own folder, never
    to the paper's ``reports/inputs/``."""
    paper = yaml.safe_load(compose_params(["experiments=paper"]))["report"]["dir"]
    repeated = yaml.safe_load(compose_params(["experiments=paper-repeated"]))["report"]["dir"]
    assert paper == "reports" and repeated != paper


def test_another_list_leaves_the_report_stage_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    copy_project(repo)
    monkeypatch.setenv("PROJLOSS_ROOT", str(repo))  # manifest.write's report directory
    _run(["git", "init", "-q"], repo)
    smoke = ["experiments=smoke", "datasets=[iris]"]
    params = _use_list(repo, smoke)
    keys = list(params["experiments"])
    (repo / "data/prepared/iris").mkdir(parents=True)
    (repo / "data/prepared/iris/stats.json").write_text("{}\n")
    for key in keys:
        _outputs(repo, params, key)
    report_dir = repo / params["report"]["dir"]
    assert sorted(p.name for p in (report_dir / "inputs").glob("*.json")) == sorted(
        f"{k}.json" for k in keys
    )
    # the evaluate stages and the report's outputs (as their commands write them),
    # recorded in dvc.lock
    stage = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["report"]
    for out in [*stage["outs"], *stage["metrics"]]:
        path = repo / next(iter(out)).replace("${report.dir}", params["report"]["dir"])
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "x.json").write_text("{}\n")
    _run([DVC, "commit", "--force", *(f"evaluate@{k}" for k in keys), "report"], repo)
    assert "up to date" in _report_status(repo)

    # 1. a repeated-splits list (the smoke list and a seed of it, as paper-repeated is the
    # paper's list and its seeds, with its own report directory):
    # `make repro-repeated` runs its evaluate stages
    seed = {**params["experiments"][keys[0]], "data": {"seed": 1}}
    seeded = _use_list(
        repo, [*smoke, "report.dir=reports/smoke-repeated"], {f"{keys[0]}-seed1": seed}
    )
    _outputs(repo, seeded, f"{keys[0]}-seed1")
    _run([DVC, "commit", "--force", f"evaluate@{keys[0]}-seed1"], repo)
    assert (repo / "reports/smoke-repeated/inputs" / f"{keys[0]}-seed1.json").is_file()
    # 2. a list with its own report directory (the small default list)
    other = _use_list(repo, ["experiments=default", "datasets=[iris]"])
    key = next(iter(other["experiments"]))
    _outputs(repo, other, key)
    assert (repo / other["report"]["dir"] / "inputs" / f"{key}.json").is_file()
    # back to the list: its report stage has not changed
    _use_list(repo, smoke)
    assert "up to date" in _report_status(repo)

    # the report does follow its own list's results
    _outputs(repo, params, keys[0], value="0.25")
    status = _report_status(repo)
    assert "changed deps" in status and "inputs" in status, status
