"""Every command of the documentation is run by a test (issue 13, Build 4; issue 35).

The documentation is ``README.md`` and the pages of the user guide, ``docs/guide/*.md``
(:mod:`docs_pages`). :data:`TESTED` maps each command of their ``bash`` blocks to the
test(s) that run it -- as written, or with a tiny grid (``lambdas.num=2``, one dataset
instead of a whole task's list) -- and, for the commands that need a cluster, the network
or hours, the test that runs their local or dry-run equivalent (say which in the comment).
:func:`test_every_documented_command_is_tested` fails when a page gains a command that is
not in :data:`TESTED`, or when a mapped test does not exist.
:func:`test_every_former_readme_command_has_a_page` keeps what the README held before it
became a front page (issue 35): each (section, command) of the former README, frozen in
``tests/data/former_readme_commands.txt``, must be a command of the page its section moved
to (:data:`MOVED`). The commands that no other test ran before are run here:
``python -m pipeline.train`` as in the guide (tiny grid), ``mlflow ui``, ``make -n``,
``dvc remote modify``, ``dvc metrics show <file>`` and the cluster launchers composed by
Hydra (dry run).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from docs_pages import pages
from stores import empty_store

from .conftest import ROOT, data_overrides

BIN = Path(sys.executable).parent
FORMER = ROOT / "tests" / "data" / "former_readme_commands.txt"

DVC = "tests/pipeline/test_dvc.py::test_dvc_repro"
VIEWS = "tests/pipeline/test_dvc_views.py::"
HERE = "tests/pipeline/test_readme_commands.py::"
CLUSTER = "tests/cluster/test_cluster.py::"
TRAIN = HERE + "test_train_command"

#: documented command -> the tests that run it (or its tiny-grid / local / dry-run
#: equivalent); the comments name the former README's sections (see MOVED for their pages)
TESTED: dict[str, tuple[str, ...]] = {
    # The two commands: `make` recipes (dry run) and what they run
    "make repro": (HERE + "test_make_targets", DVC),
    "make test": (HERE + "test_make_targets",),  # and CI runs it (.ci/run)
    # the documentation site: the recipe (dry run) and the build it runs (in make test)
    "make docs": (
        HERE + "test_make_targets",
        "tests/docs/test_build.py::test_the_site_builds_with_warnings_as_errors",
    ),
    "make docs-serve": (HERE + "test_make_targets",),
    ".venv/bin/dvc metrics show": (VIEWS + "test_dvc_metrics_show_fits_a_screen",),
    ".venv/bin/mlflow ui --backend-store-uri sqlite:///mlflow.db": (HERE + "test_mlflow_ui",),
    # Reproducing the paper
    "python -m pipeline.report": (DVC,),  # the report stage's command
    "python -m pipeline.preload dvc repro": ("tests/pipeline/test_dvc.py::test_dvc_repro",),
    "python -m pipeline.tools.reference_checks": (
        "tests/pipeline/tools/test_reference_checks.py::"
        "test_semi_dual_plan_is_the_projection_up_to_its_tolerance",
    ),  # on demand (minutes): its building blocks
    "dvc exp run -S experiments=default": (DVC,),  # `dvc exp run -S` on the smoke list
    # significance: the target (dry run), the report of R seeds (R = 3), its summary
    "make repro-repeated": (
        HERE + "test_make_targets",
        "tests/pipeline/report/test_repeated.py::test_user_dataset_in_the_repeated_report",
    ),
    "python -m pipeline.report.repeated report --repeats 10": (
        "tests/pipeline/report/test_repeated.py::test_user_dataset_in_the_repeated_report",
    ),
    ".venv/bin/dvc metrics show metrics/repeated.json": (HERE + "test_named_metrics_files",),
    # the report from the committed per-split values alone (its core, build_from_splits)
    "python -m pipeline.report.repeated report --from-splits reports/repeated/splits.csv": (
        "tests/pipeline/report/test_committed_reports.py::"
        "test_repeated_report_is_a_function_of_splits_csv",
    ),
    # PyTorch: the installs need the network (not run); the test checks the extra they
    # install and that `make venv` installs the CPU build first
    "pip install 'projloss[torch]'": (HERE + "test_torch_extra",),
    "pip install torch --index-url https://download.pytorch.org/whl/cu124": (
        HERE + "test_torch_extra",
    ),
    # Experiments: each command with a tiny grid (a task sweep on one dataset)
    "python -m pipeline.train": (TRAIN,),
    "python -m pipeline.train task=multilabel set=unit_cube dataset=scene": (TRAIN,),
    "python -m pipeline.train task=ordinal set=reals decoder=round": (TRAIN,),
    "python -m pipeline.train task=label_ranking set=permutahedron model=poly model.degree=3": (
        TRAIN,
    ),
    "python -m pipeline.train set=knapsack task=multilabel --multirun": (TRAIN,),
    "python -m pipeline.train task=label_ranking set=cube,birkhoff decoder=birkhoff --multirun": (
        TRAIN,
    ),
    # Neural models: the iris run in-process (small network, two lambdas), the sweep as
    # typed (small network), and the list's make target (dry run) and report
    "python -m pipeline.train task=label_ranking set=birkhoff model=mlp dataset=iris": (
        "tests/pipeline/test_mlp.py::test_iris_end_to_end_into_a_temporary_store",
    ),
    "python -m pipeline.train task=label_ranking model=mlp set=birkhoff,permutahedron "
    "dataset=iris,wine --multirun": (
        "tests/pipeline/test_mlp.py::test_command_line_multirun_over_sets_and_datasets",
    ),
    "make repro-mlp": (
        HERE + "test_make_targets",
        "tests/pipeline/test_mlp.py::test_dvc_stages_with_the_mlp",
        "tests/pipeline/report/test_mlp.py::test_side_by_side_and_findings",
    ),
    # Tracking
    "mlflow ui --backend-store-uri sqlite:///mlflow.db": (HERE + "test_mlflow_ui",),
    'MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true python -c "import mlflow; m = '
    "mlflow.sklearn.load_model('models:/<model id>')\"": (
        "tests/pipeline/test_train.py::test_end_to_end_into_a_temporary_store",
    ),
    "python -m pipeline.train tracking.enabled=false": (TRAIN,),
    "python -m pipeline.train set=cube decoder=cube": (TRAIN,),
    "python -m pipeline.train set=cube decoder=cube task.target_loss=hamming_ranking": (TRAIN,),
    # The DVC pipeline (tiny experiment list in a temporary repository)
    "dvc repro": (DVC,),
    "dvc exp run -S task=multilabel -S set=knapsack": (DVC,),
    "dvc exp run -S seed=1 -S lambdas.num=5": (DVC,),
    "dvc params diff": (DVC,),
    "dvc dag --collapse-foreach-matrix": (VIEWS + "test_dvc_dag_fits_a_screen",),
    "dvc metrics show": (VIEWS + "test_dvc_metrics_show_fits_a_screen",),
    "dvc metrics diff main": (VIEWS + "test_dvc_plots_diff_compares_two_commits",),
    "dvc metrics show metrics/lr.json": (HERE + "test_named_metrics_files",),
    "dvc plots show": (VIEWS + "test_dvc_plots_show_renders_the_curves_and_the_bars",),
    "dvc plots diff main": (VIEWS + "test_dvc_plots_diff_compares_two_commits",),
    "dvc exp show --only-changed --drop 'experiments\\.|^data/|^models'": (DVC,),
    # Results that travel (a temporary clone and remote)
    "dvc push": (DVC, "tests/cluster/test_dvc_remote.py::test_push_and_pull_through_a_remote"),
    "git clone <this repository> projloss-copy && cd projloss-copy && dvc pull": (DVC,),
    "dvc status": (DVC,),
    "dvc pull": (DVC, "tests/cluster/test_dvc_remote.py::test_push_and_pull_through_a_remote"),
    "dvc remote modify storage url s3://my-bucket/projloss": (HERE + "test_remote_modify",),
    "dvc remote modify storage url gs://my-bucket/projloss": (HERE + "test_remote_modify",),
    "dvc remote modify storage url ssh://login-node/shared/projloss": (
        HERE + "test_remote_modify",
    ),
    "dvc remote modify --local storage url /mnt/shared/projloss-dvc": (
        HERE + "test_remote_modify",
    ),
    # Scaling out: one machine
    "python -m pipeline.train task=ordinal set=reals,unit_cube,order_simplex --multirun "
    "hydra/launcher=joblib hydra.launcher.n_jobs=2": (
        "tests/pipeline/test_train.py::test_multirun_with_the_joblib_launcher",
    ),
    # Scaling out on 127.0.0.1: the cluster tests run these commands (test_readme_commands
    # of tests/cluster checks the guide (scaling.md) spells them as they do)
    "D=$(mktemp -d)": (
        "tests/cluster/test_readme_commands.py::test_readme_runs_the_tested_commands",
    ),
    "initdb -D $D/data -A trust -U postgres": (CLUSTER + "test_services_are_stopped_by_pid",),
    'pg_ctl -D $D/data -l $D/log -w start -o "-p 5432 -k $D -c listen_addresses=127.0.0.1"': (
        CLUSTER + "test_services_are_stopped_by_pid",
        # the tests run its server in the foreground (postgres, the same options)
        "tests/cluster/test_readme_commands.py::test_the_tests_postgres_is_the_readmes_pg_ctl_start",
    ),
    'psql -h 127.0.0.1 -p 5432 -U postgres -c "create database mlflow"': (
        CLUSTER + "test_services_are_stopped_by_pid",
    ),
    "mlflow server --host 127.0.0.1 --port 5000 --backend-store-uri "
    "postgresql+psycopg2://postgres@127.0.0.1:5432/mlflow --artifacts-destination "
    "$D/artifacts --workers 2": (CLUSTER + "test_submitit_local_sweep_on_the_tracking_server",),
    "ray start --head --block --node-ip-address 127.0.0.1 --port 6379 --num-cpus 2 "
    "--object-store-memory 100000000 --include-dashboard false --disable-usage-stats": (
        CLUSTER + "test_ray_sweep_with_a_worker_killed",
    ),
    "export RAY_ADDRESS=127.0.0.1:6379": (CLUSTER + "test_ray_sweep_with_a_worker_killed",),
    "python -m pipeline.train task=label_ranking dataset=iris lambdas.num=2 "
    "tracking.heatmap_samples=1 --multirun hydra/launcher=ray_cluster "
    "set=birkhoff,permutahedron lambdas.high=1e3,1e4 tracking.uri=http://127.0.0.1:5000": (
        CLUSTER + "test_eight_jobs_at_once_on_the_server",
    ),
    "python -m pipeline.train task=label_ranking dataset=iris lambdas.num=2 "
    "tracking.heatmap_samples=1 --multirun hydra/launcher=submitit_local "
    "hydra.launcher.timeout_min=5 set=birkhoff,permutahedron lambdas.high=1e3,1e4 "
    "tracking.uri=http://127.0.0.1:5000": (
        CLUSTER + "test_submitit_local_sweep_on_the_tracking_server",
    ),
    "PROJLOSS_RAY_ADDRESS=127.0.0.1:6379 dvc repro": (
        "tests/cluster/test_joblib_backend.py::test_stage_tasks_on_the_ray_cluster",
    ),
    # Run it on a cluster: needs one. Each maps to its local equivalent above, or to a dry
    # run (the launchers composed by Hydra with the guide's overrides)
    "git clone <this repository> $SHARED/projloss && cd $SHARED/projloss": (DVC,),
    "python3 -m venv .venv && .venv/bin/pip install -e '.[cluster]'": (
        HERE + "test_make_targets",  # make venv: the same install, '.[dev]' includes cluster
    ),
    "mlflow server --host 0.0.0.0 --port 5000 --backend-store-uri "
    "postgresql+psycopg2://mlflow:PASSWORD@db-host/mlflow --artifacts-destination "
    "s3://my-bucket/mlartifacts --workers 4": (
        CLUSTER + "test_submitit_local_sweep_on_the_tracking_server",
    ),
    "export MLFLOW_TRACKING_URI=http://tracking-host:5000": (
        "tests/pipeline/test_tracking.py::test_uris",
    ),
    "python -m pipeline.fetch && python -m pipeline.preprocess": (
        "tests/pipeline/test_entry_points.py::test_command_line",
    ),
    "python -m pipeline.train task=multilabel set=unit_cube,knapsack --multirun "
    "hydra/launcher=submitit_slurm hydra.launcher.partition=cpu "
    "hydra.launcher.cpus_per_task=2 hydra.launcher.timeout_min=60": (
        HERE + "test_cluster_sweeps_compose",
    ),
    "ray start --head --port 6379": (CLUSTER + "test_ray_sweep_with_a_worker_killed",),
    "ray start --address=head-node:6379": (CLUSTER + "test_ray_sweep_with_a_worker_killed",),
    "RAY_ADDRESS=head-node:6379 python -m pipeline.train task=label_ranking set=cube,birkhoff "
    "--multirun hydra/launcher=ray_cluster": (
        HERE + "test_cluster_sweeps_compose",
        CLUSTER + "test_ray_sweep_with_a_worker_killed",
    ),
    "PROJLOSS_RAY_ADDRESS=head-node:6379 dvc repro": (
        "tests/cluster/test_joblib_backend.py::test_stage_tasks_on_the_ray_cluster",
    ),
    # Datasets (every mirrored dataset: the session fixture raw_all and the table test)
    "python -m pipeline.fetch": ("tests/pipeline/test_entry_points.py::test_command_line",),
    "python -m pipeline.preprocess": (
        "tests/pipeline/test_entry_points.py::test_command_line",
        "tests/pipeline/stages/test_preprocess.py::test_every_mirrored_dataset_and_the_table",
    ),
    "python -m pipeline.fetch 'datasets=[birds,iris]'": (HERE + "test_dataset_commands",),
    "python -m pipeline.preprocess datasets=ordinal data.ordinal_split=all": (
        "tests/pipeline/test_cli.py::test_preprocess_logs_one_line_per_dataset",
        "tests/pipeline/stages/test_preprocess.py::test_all_splits",
    ),
    "python -m pipeline.preprocess datasets=birds data.drop_empty=true": (
        HERE + "test_dataset_commands",
    ),
    # needs the network: its offline failure (tests never download)
    "python -m pipeline.fetch datasets=mediamill data.mirror=null": (
        "tests/pipeline/stages/test_fetch.py::test_upstream_only_datasets_fail_offline",
    ),
}


#: the former README's section -> the page that holds its commands now (issue 35)
MOVED: dict[str, str] = {
    "The two commands": "README.md",
    "Reproducing the paper": "docs/guide/reproduce.md",
    "Are the paper's findings significant?": "docs/guide/significance.md",
    "Experiments: `python -m pipeline.train`": "docs/guide/experiments.md",
    "Tracking: MLflow": "docs/guide/tracking.md",
    "The DVC pipeline": "docs/guide/dvc.md",
    "Scaling out": "docs/guide/scaling.md",
    "Run it on a cluster": "docs/guide/scaling.md",
    "Datasets": "docs/guide/datasets.md",
    "Neural models": "docs/guide/neural-models.md",
    "PyTorch": "docs/guide/pytorch.md",
}


def readme_commands(text: str) -> list[tuple[str, str]]:
    """(section, command) of every line of the ``bash`` blocks of one page: continuation
    lines joined, trailing ``  # comments`` and comment lines dropped, blanks collapsed;
    the section is the text of the last heading (``#`` to ``###``) outside a code block."""
    found: list[tuple[str, str]] = []
    section = ""
    pattern = r"^(#{1,3}) ([^\n]*)$|^```(\w*)\n(.*?)^```"
    for m in re.finditer(pattern, text, flags=re.S | re.M):
        if m.group(1):
            section = m.group(2)
            continue
        if m.group(3) != "bash":
            continue
        for line in m.group(4).replace("\\\n", " ").splitlines():
            line = re.split(r"\s+#\s", " " + line, maxsplit=1)[0].strip()
            if line and not line.startswith("#"):
                found.append((section, " ".join(line.split())))
    return found


def documented_commands() -> list[tuple[str, str, str]]:
    """(page, section, command) of every page of :func:`docs_pages.pages`."""
    return [(name, s, c) for name, text in pages().items() for s, c in readme_commands(text)]


def former_commands() -> list[tuple[str, str]]:
    """(section, command) of the former README (``#`` lines: comments)."""
    lines = FORMER.read_text(encoding="utf-8").splitlines()
    return [tuple(x.split("\t", 1)) for x in lines if x and not x.startswith("#")]


def test_the_parser_reads_headings_and_bash_blocks_only() -> None:
    """Headings of any level set the section, ``#`` lines inside any code block do not; a
    ``yaml`` or ``text`` block gives no command; continuations and comments as above."""
    text = (
        "# Page\n\n```bash\nmake repro   # the job\n```\n## Second\n```yaml\n"
        "# conf/x.yaml\nname: x\n```\n```bash\n# a comment\npython -m a \\\n  b=1\n```\n"
    )
    assert readme_commands(text) == [("Page", "make repro"), ("Second", "python -m a b=1")]


def test_every_documented_command_is_tested() -> None:
    commands = {c for _, _, c in documented_commands()}
    missing = sorted(commands - set(TESTED))
    assert not missing, (
        "commands of README.md or docs/guide/ that no test runs (add one, then map it in "
        "TESTED):\n" + "\n".join(missing)
    )
    stale = sorted(set(TESTED) - commands)
    assert not stale, "TESTED maps commands no page has any more:\n" + "\n".join(stale)
    for command, tests in TESTED.items():
        for test in tests:
            path, name = test.split("::")
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {name}\(", source, flags=re.M), f"{command}: no {test}"


def test_every_former_readme_command_has_a_page() -> None:
    """Nothing the README held is lost: each command of the former README (77 (section,
    command) pairs) is a command of the page its section moved to, and so stays mapped
    to its tests by :data:`TESTED`."""
    former = former_commands()
    assert len(former) == 77 and {s for s, _ in former} == set(MOVED), former
    held: dict[str, set[str]] = {}
    for name, _, command in documented_commands():
        held.setdefault(command, set()).add(name)
    lost = [f"{s}: {c} (now in: {sorted(held.get(c, ())) or 'no page'})"
            for s, c in former if MOVED[s] not in held.get(c, ())]  # fmt: skip
    assert not lost, "commands of the former README not in the page they moved to:\n" + (
        "\n".join(lost)
    )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HYDRA_"))}
    for key in ("PROJLOSS_DEBUG", "PROJLOSS_MIRROR", "RAY_ADDRESS", "PROJLOSS_RAY_ADDRESS"):
        env.pop(key, None)
    env.update(
        PATH=str(BIN) + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=str(ROOT / "src"),
        MLFLOW_DISABLE_TELEMETRY="true",
        DVC_NO_ANALYTICS="1",
    )
    return env


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def test_torch_extra() -> None:
    """The PyTorch install (pytorch.md): the ``torch`` extra of the installed projloss asks for
    a torch range that the installed build satisfies, the dev extra includes it, and
    ``make venv`` installs the pinned CPU build before the extras."""
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement

    reqs = [Requirement(r) for r in requires("projloss") or []]
    torch_reqs = [r for r in reqs if r.name == "torch" and r.marker is not None
                  and r.marker.evaluate({"extra": "torch"})]  # fmt: skip
    assert torch_reqs, reqs
    spec = torch_reqs[0].specifier
    assert spec.contains(version("torch").split("+")[0]), (spec, version("torch"))
    assert not spec.contains("3.0"), spec  # a real range, not an open-ended one
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    dev = text.split("\ndev = [", 1)[1].split("]\n", 1)[0]
    assert "torch" in dev, dev
    if shutil.which("make") is not None:
        done = _run(["make", "-n", "-W", "pyproject.toml", "venv"], ROOT)
        lines = done.stdout.splitlines()
        first = next(i for i, x in enumerate(lines) if "pip install --quiet 'torch==" in x)
        extras = next(i for i, x in enumerate(lines) if "-e '.[dev]'" in x)
        assert first < extras, lines


def test_make_targets() -> None:
    """``make -n``: the recipes the documented make commands run (``make repro`` is ``dvc
    repro`` under ``pipeline.preload`` with the venv's python first on PATH; ``make test``
    ruff and pytest; ``make repro-repeated`` the seeds' stages and the significance
    report)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")

    def recipe(*target: str) -> str:
        done = _run(["make", "-n", "-W", "pyproject.toml", *target], ROOT)
        assert done.returncode == 0, done.stderr
        return done.stdout

    venv = recipe("venv")  # the install of `make venv`, the cluster extra included
    assert "pip install --quiet -e '.[dev]'" in venv
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    dev = text.split("\ndev = [", 1)[1].split("]\n", 1)[0]
    assert "cluster" in dev, dev
    assert re.search(
        r'^PATH="\S+/\.venv/bin:\$PATH" '
        r"\.venv/bin/python -m pipeline\.preload \.venv/bin/dvc repro$",
        recipe("repro"),
        re.M,
    )
    test = recipe("test")
    assert ".venv/bin/python -m ruff check src tests benchmarks" in test
    assert ".venv/bin/python -m pytest -n 2 tests" in test
    repeated = recipe("repro-repeated", "REPEATS=3")
    # the paper's experiments (seed 0) under the paper's params.yaml, then the seeds
    first, then = repeated.split("python -m pipeline.params experiments=paper-repeated")
    assert "targets --repeats 3 --only paper" in first
    assert "targets --repeats 3 --only seeds" in then
    assert ".venv/bin/python -m pipeline.report.repeated report --repeats 3" in repeated
    docs = recipe("docs")  # the build tests/docs/test_build.py runs, into site/
    assert ".venv/bin/python -m sphinx -W --keep-going -b html -d site/.doctrees docs site" in docs
    assert "http.server 8000 --bind 127.0.0.1 --directory site" in recipe("docs-serve")
    mlp = recipe("repro-mlp")  # the MLP list's stages only (not the report stage), then its
    assert "python -m pipeline.params experiments=mlp" in mlp  # report; params.yaml restored
    assert "dvc repro evaluate@lr-mlp evaluate@ml-mlp evaluate@ml-tmc2007_500-mlp" in " ".join(
        mlp.replace("\\\n", " ").split()
    )
    assert ".venv/bin/python -m pipeline.report.mlp" in mlp


def _train_commands() -> list[str]:
    """The ``pipeline.train`` commands of the Experiments and Tracking pages (and the
    README's, which repeats one of them)."""
    names = ("README.md", "docs/guide/experiments.md", "docs/guide/tracking.md")
    found = {c for name, _, c in documented_commands() if name in names}
    return sorted(c for c in found if c.startswith("python -m pipeline.train"))


@pytest.mark.slow
@pytest.mark.parametrize("command", _train_commands())
def test_train_command(
    command: str, prepared, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The guide's ``python -m pipeline.train`` command with a tiny grid (two lambdas, a
    task's sweep on its smallest dataset): exit 0, one summary line per job."""
    args = shlex.split(command)[3:]
    if "--multirun" in args and not any(a.startswith("dataset=") for a in args):
        args.append("dataset=emotions" if "task=multilabel" in args else "dataset=iris")
    jobs = 1
    for a in args:
        if "=" in a and not a.startswith(("hydra", "dataset=")):
            jobs *= len(a.split("=", 1)[1].split(","))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    if "tracking.enabled=false" not in args:  # a copy of an empty store (not created here)
        uri = empty_store(tmp_path_factory, tmp_path / "mlflow.db")
    tiny = [f"tracking.uri={uri}", "tracking.log_models=false", "tracking.figures=false"]
    tiny += ["lambdas.num=2", "progress=false", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    done = _run([sys.executable, "-m", "pipeline.train", *args, *tiny,
                 *data_overrides(prepared)], tmp_path)  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    summaries = re.findall(
        r"^\S+ \| (?:label_ranking|ordinal|multilabel) .* \| [\d.]+ s", out, re.M
    )
    assert len(summaries) == jobs, out
    assert "Traceback" not in out
    db = tmp_path / "mlflow.db"
    if "tracking.enabled=false" in args:
        assert not db.exists()
    else:  # each job's run is in the store
        with contextlib.closing(sqlite3.connect(db)) as conn:
            (n_runs,) = conn.execute("SELECT count(*) FROM runs").fetchone()
        assert n_runs >= jobs, out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_mlflow_ui(tmp_path: Path) -> None:
    """``mlflow ui --backend-store-uri sqlite:///mlflow.db`` serves the store (on a free
    port of 127.0.0.1 here; stopped by PID)."""
    port = _free_port()
    args = [str(BIN / "mlflow"), "ui", "--backend-store-uri", "sqlite:///mlflow.db",
            "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    log = (tmp_path / "ui.log").open("w")
    # Without MLflow's job runner (on by default in MLflow 3): a runner and about six huey
    # consumers, each a Python importing mlflow, that serving the store does not use; on
    # CI's two cores they competed with the server's four workers starting.
    env = {**_env(), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    assert r.read().strip() == b"OK"
                    break
            except OSError:
                assert proc.poll() is None, (tmp_path / "ui.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "ui.log").read_text()
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/search?max_results=5"
        with urllib.request.urlopen(url, timeout=10) as r:
            assert b'"Default"' in r.read()
        assert (tmp_path / "mlflow.db").is_file()  # relative to the working directory
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        log.close()


def _dvc_repo(tmp_path: Path, *items: str) -> Path:
    """A git repository with the project's DVC files and ``items`` (paths of the root)."""
    repo = tmp_path / "repo"
    for item in ("dvc.yaml", "params.yaml", ".dvc/config", ".dvc/plots", *items):
        src, dst = ROOT / item, repo / item
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def test_remote_modify(tmp_path: Path) -> None:
    """Pointing the default remote elsewhere needs no extra package (pushing does)."""
    repo = _dvc_repo(tmp_path)
    dvc = str(BIN / "dvc")
    default = _run([dvc, "remote", "list"], repo)
    assert default.returncode == 0, default.stderr
    assert default.stdout.split()[:2] == ["storage", str(tmp_path / "projloss-dvc-remote")]
    modify = {c: None for _, _, c in documented_commands() if c.startswith("dvc remote modify")}
    for command in sorted(modify, key=lambda c: "--local" in c):  # .dvc/config.local wins
        done = _run([dvc, *shlex.split(command)[1:]], repo)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        listed = _run([dvc, "remote", "list"], repo).stdout
        assert listed.split()[:2] == ["storage", shlex.split(command)[-1]], listed
    assert "/mnt/shared/projloss-dvc" in (repo / ".dvc/config.local").read_text()
    assert "ssh://login-node/shared/projloss" in (repo / ".dvc/config").read_text()


def test_named_metrics_files(tmp_path: Path) -> None:
    """``dvc metrics show <file>``: the committed files that are not the summary."""
    repo = _dvc_repo(tmp_path, "metrics/lr.json", "metrics/repeated.json")
    for name in ("lr", "repeated"):
        done = _run([str(BIN / "dvc"), "metrics", "show", f"metrics/{name}.json"], repo)
        assert done.returncode == 0, done.stderr
        assert f"metrics/{name}.json" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("launcher", "target"),
    [
        ("submitit_slurm", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
        ("ray_cluster", "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher"),
    ],
)
def test_cluster_sweeps_compose(launcher: str, target: str) -> None:
    """Dry run of the cluster sweeps of scaling.md (no SLURM, no Ray cluster here): each job's
    config composes with the launcher and its overrides, and the launcher is the plugin."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    (command,) = {  # the cluster's command, not the one run on 127.0.0.1
        c for _, _, c in documented_commands()
        if f"hydra/launcher={launcher}" in c and "127.0.0.1" not in c
    }  # fmt: skip
    args = shlex.split(command)
    args = args[args.index("pipeline.train") + 1 :]
    overrides = [a for a in args if a != "--multirun"]
    first_job = [a.split(",")[0] if "," in a else a for a in overrides]
    GlobalHydra.instance().clear()
    with initialize_config_dir(str(ROOT / "conf"), version_base=None):
        cfg = compose("train", overrides=first_job, return_hydra_config=True)
    GlobalHydra.instance().clear()
    assert cfg.hydra.launcher._target_ == target
    for a in overrides:
        if a.startswith("hydra.launcher."):
            key, value = a.split("=", 1)
            assert str(cfg.hydra.launcher[key.removeprefix("hydra.launcher.")]) == value


def test_dataset_commands(tmp_path: Path, mirror: Path) -> None:
    """``fetch 'datasets=[birds,iris]'`` then ``preprocess datasets=birds
    data.drop_empty=true`` (the commands of datasets.md, into temporary directories)."""
    dirs = [f"data.mirror={mirror}", f"data.raw_dir={tmp_path / 'raw'}",
            f"data.prepared_dir={tmp_path / 'prepared'}",
            f"data.reports_dir={tmp_path / 'reports'}", "data.progress=false"]  # fmt: skip
    commands = [c for _, _, c in documented_commands()]
    for command in (
        "python -m pipeline.fetch 'datasets=[birds,iris]'",
        "python -m pipeline.preprocess datasets=birds data.drop_empty=true",
    ):
        assert command in commands
        done = _run([sys.executable, *shlex.split(command)[1:], *dirs], tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == ["birds", "iris"]
    assert (tmp_path / "prepared/birds+drop_empty/stats.json").is_file()
