"""The report stage depends only on the results it reads: the outputs of the experiments
of the current list (through the manifests of ``collect@<key>``,
:mod:`pipeline.runs.manifest`), so that another list run beside it -- ``make
repro-repeated``'s seeds, or a list with its own report directory -- leaves ``dvc status``
of the report stage unchanged, and a clone restored by ``dvc pull`` (the list's outputs
only) sees it as up to date.

The experiments' outputs are written here as their stages would leave them (their content
is not the point: DVC's dependency tracking is), the collect stages run for real, and the
report's lock entry is recorded with ``dvc commit``; a few seconds instead of a pipeline.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from pipeline.params import compose_params

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


def _outputs(repo: Path, key: str, value: str = "0.5") -> None:
    """The outputs of experiment ``key`` as its tune, refit and evaluate stages write them."""
    (repo / f"data/eval/{key}/run").mkdir(parents=True, exist_ok=True)
    (repo / f"data/eval/{key}/run/results.json").write_text(f'{{"headline": {value}}}\n')
    (repo / "data/tuning").mkdir(parents=True, exist_ok=True)
    (repo / f"data/tuning/{key}.json").write_text('{"runs": {}}\n')
    (repo / f"models/{key}/run").mkdir(parents=True, exist_ok=True)
    (repo / f"models/{key}/run/refit.json").write_text("{}\n")


def _report_status(repo: Path) -> str:
    return _run([DVC, "status", "report"], repo)


def test_another_list_leaves_the_report_stage_unchanged(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    copy_project(repo)
    _run(["git", "init", "-q"], repo)
    smoke = ["experiments=smoke", "datasets=[iris]"]
    params = _use_list(repo, smoke)
    keys = list(params["experiments"])
    (repo / "data/prepared/iris").mkdir(parents=True)
    (repo / "data/prepared/iris/stats.json").write_text("{}\n")
    for key in keys:
        _outputs(repo, key)
    _run([DVC, "repro", "--single-item", *(f"collect@{k}" for k in keys)], repo)
    report_dir = repo / params["report"]["dir"]
    assert sorted(p.name for p in (report_dir / "inputs").glob("*.json")) == sorted(
        f"{k}.json" for k in keys
    )
    # the report's outputs (as its command writes them), recorded in dvc.lock
    stage = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["report"]
    for out in [*stage["outs"], *stage["metrics"]]:
        path = repo / next(iter(out)).replace("${report.dir}", params["report"]["dir"])
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "x.json").write_text("{}\n")
    _run([DVC, "commit", "--force", "report"], repo)
    assert "up to date" in _report_status(repo)

    # 1. a repeated-splits list (the smoke list and a seed of it, as paper-repeated is the
    # paper's list and its seeds): `make repro-repeated` runs its evaluate stages
    seed = {**params["experiments"][keys[0]], "data": {"seed": 1}}
    _use_list(repo, smoke, {f"{keys[0]}-seed1": seed})
    _outputs(repo, f"{keys[0]}-seed1")
    # 2. a list with its own report directory (the small default list), collected too
    other = _use_list(repo, ["experiments=default", "datasets=[iris]"])
    key = next(iter(other["experiments"]))
    _outputs(repo, key)
    _run([DVC, "repro", "--single-item", f"collect@{key}"], repo)
    assert (repo / other["report"]["dir"] / "inputs" / f"{key}.json").is_file()
    # back to the list: its report stage has not changed
    _use_list(repo, smoke)
    assert "up to date" in _report_status(repo)

    # the report does follow its own list's results
    _outputs(repo, keys[0], value="0.25")
    _run([DVC, "repro", "--single-item", f"collect@{keys[0]}"], repo)
    status = _report_status(repo)
    assert "changed deps" in status and "inputs" in status, status
