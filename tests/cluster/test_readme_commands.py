"""The "Scaling out" commands of the guide (``docs/guide/scaling.md``) are the ones the
cluster tests run."""

from __future__ import annotations

import re
import shlex

from docs_pages import page, section
from pipeline.cluster import services

from .test_cluster import FOUR, TINY

SERVER = "http://127.0.0.1:5000"
DB = "postgresql+psycopg2://postgres@127.0.0.1:5432/mlflow"


def _commands() -> list[list[str]]:
    text = section(page("scaling.md"), "## Scaling out")
    lines: list[list[str]] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                lines.append(shlex.split(line))
    return lines


def test_readme_runs_the_tested_commands() -> None:
    readme = _commands()
    sweep = ["python", "-m", "pipeline.train", *TINY, "--multirun"]
    expected = [
        *services.postgres_commands("$D/data", 5432, "$D", "$D/log"),
        services.mlflow_server_command(5000, DB, "$D/artifacts"),
        services.ray_head_command(6379),
        [*sweep, "hydra/launcher=ray_cluster", *FOUR, f"tracking.uri={SERVER}"],
        [*sweep, "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5", *FOUR,
         f"tracking.uri={SERVER}"],
    ]  # fmt: skip
    for cmd in expected:
        assert cmd in readme, f"not in scaling.md's Scaling out section: {shlex.join(cmd)}"


def test_the_tests_postgres_is_the_readmes_pg_ctl_start() -> None:
    """The helper runs the server of the README's ``pg_ctl ... start`` line in the
    foreground (a child that dies with the test run, not a daemon): the same data directory
    and options."""
    start = next(cmd for cmd in _commands() if cmd[:1] == ["pg_ctl"] and "start" in cmd)
    assert services.postgres_server_command(start) == [
        "postgres", "-D", "$D/data", "-p", "5432", "-k", "$D",
        "-c", "listen_addresses=127.0.0.1",
    ]  # fmt: skip
