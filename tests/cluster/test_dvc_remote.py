"""A DVC remote (a temporary directory): one copy of the repository runs an experiment's
stages and pushes; a clone pulls the fetched and prepared data and the results, byte for
byte."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mirror import require_mirror
from pipeline.params import compose_params
from pipeline.paths import project_root

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.xdist_group("cluster")]

ROOT = project_root()
COPY = ["pyproject.toml", "dvc.yaml", ".dvcignore", ".dvc/config", ".dvc/.gitignore", ".gitignore",
        "conf", "src", "reports"]  # fmt: skip
#: the outputs of one experiment's stages that the remote carries
PULLED = ["data/raw/iris", "data/prepared/iris", "data/tuning/smoke-cube.json",
          "models/smoke-cube", "data/eval/smoke-cube"]  # fmt: skip


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _same_tree(a: Path, b: Path) -> None:
    if a.is_file():
        assert filecmp.cmp(a, b, shallow=False), a
        return
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert filecmp.cmp(a / rel, b / rel, shallow=False), rel


def test_push_and_pull_through_a_remote(tmp_path: Path) -> None:
    repo, clone, remote = tmp_path / "repo", tmp_path / "clone", tmp_path / "remote"
    for item in COPY:
        src, dst = ROOT / item, repo / item
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dst)
    overrides = ["experiments=smoke", "datasets=[iris]", "lambdas.num=2",
                 f"data.mirror={require_mirror()}", "tracking.enabled=false"]  # fmt: skip
    params = yaml.safe_load(compose_params(overrides))
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PROJLOSS_"))}
    env.update(
        PATH=bindir + os.pathsep + env.get("PATH", ""), PYTHONPATH=str(repo / "src"),
        DVC_NO_ANALYTICS="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
    )  # fmt: skip
    dvc = str(Path(bindir) / "dvc")
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        _run(args, repo, env)
    # the README's commands: the default remote pointed at shared storage, the stages, push
    _run([dvc, "remote", "modify", "storage", "url", str(remote)], repo, env)
    _run([dvc, "repro", "evaluate@smoke-cube"], repo, env)
    out = _run([dvc, "push"], repo, env)
    assert "pushed" in out, out
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-qm", "results"], repo, env)

    # a collaborator (or a node): clone, pull, the same bytes
    _run(["git", "clone", "-q", str(repo), str(clone)], tmp_path, env)
    assert not (clone / "data/prepared").exists()
    pull = [dvc, "pull", "--with-deps", "evaluate@smoke-cube"]  # the stages that ran
    _run(pull, clone, {**env, "PYTHONPATH": str(clone / "src")})
    for rel in PULLED:
        _same_tree(repo / rel, clone / rel)
