"""Crash consistency of ``dvc repro``, measured (issue 36): SIGKILL at seeded random
instants spread over a run, each followed by a resume (``dvc repro`` under a preload server).

A tiny experiment list (one experiment on iris, two compositions: the stages fit them in
pool workers; two lambdas) runs once uninterrupted with ``make repro``'s command,
``python -m pipeline.preload dvc repro`` (numba's cache of the copy filled first), as the
reference: its results are kept and the start of each stage (DVC's ``Running stage``
line) is timed. :data:`INSTANTS` instants are drawn (``random.Random(SEED)``, printed) in
``[0, duration]``: one inside each stage first, then uniformly over the run, and so on.

For an instant ``t`` inside stage ``S``: ``S`` is made out of date as a change of its
parameters would (its entry removed from ``dvc.lock``; DVC's run cache emptied, else it
would restore the reference's outputs instead of running), ``dvc repro`` runs -- alternately
under the preload server and plain -- and is killed ``t - start(S)`` seconds after its own
``Running stage 'S'`` line (or as soon as ``S``'s command is done, when it is quicker than
in the reference: DVC is then recording it), with SIGKILL, alternately to the whole
process group (``dvc``, the stage processes, their pool workers, the preload command; its
server is in its own session and gets SIGTERM through ``PR_SET_PDEATHSIG``) and to ``dvc``
alone (its stage gets SIGTERM, :func:`pipeline.lifecycle.die_with_parent`). When every
process of the killed run is gone, the resume is ``make repro``'s ``dvc repro`` under a
preload server, one server started once for all the resumes (:func:`resume_server`: its
imports, 5-20 s here, paid once, not 20 times; the test then takes about 5 minutes, not 9)
(run cache emptied again: a first interruption finds none). If DVC refuses because the
kill cut ``dvc.lock`` (DVC rewrites it in place), the README's command (``rm dvc.lock``)
is applied and the resume run again; the table says so.

Checked after each resume: ``metrics/`` byte-identical to the reference's, the outputs of
``tune``/``refit``/``evaluate`` (``data/tuning``, ``models``, ``data/eval``) too -- their JSON
files without the wall-clock timings (``*seconds``) and MLflow run ids --, the report's
tables and views (``runs.csv`` and its README without run ids and statuses); no temporary
(``.*.part``, ``.*.tmp``) in any output directory; ``dvc.lock`` complete; no MLflow run
RUNNING; no process of the killed run or of the resume left (each command's processes
carry a token in their environment, ``/proc/<pid>/environ``; the resumes' server has no
child left); the resume's stages ran in that server; what the killed run left in
``$TMPDIR`` is noted. At the end ``dvc status`` is clean.

The outcome table (instant, launcher, kill, stage running, what the resume did, outcome,
seconds) is printed (``pytest -s``) and written to ``crash-outcomes.md`` in the test's
temporary directory, with each instant's output (``instant-NN.log``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.params import compose_params

from .test_dvc import copy_project, dvc_env

#: the number of kill instants (``$PROJLOSS_CRASH_INSTANTS`` to try more or fewer) and the
#: seed of their draw
INSTANTS = int(os.environ.get("PROJLOSS_CRASH_INSTANTS", "20"))
SEED = 36
#: the experiment list: one experiment, two compositions (pool workers), two lambdas
EXPERIMENT = "crash"
RUNS = {"cube-cube": ["set=cube", "decoder=cube"], "reals-cube": ["set=reals", "decoder=cube"]}
#: compared with the reference after every resume
RESULTS = ("metrics", "data/tuning", "models", "data/eval")
#: DVC outputs (directories) searched for temporaries and truncated files
OUTPUT_DIRS = ("data/raw", "data/prepared", *RESULTS, "reports")
#: the environment variable that marks the processes of one launched command
TOKEN = "PROJLOSS_CRASH_TOKEN"
RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")
#: seconds a launched command may take (a hung resume fails the test instead of hanging)
TIMEOUT = 240.0
#: seconds the processes of a killed run may take to end (SIGTERM's clean-up included)
GONE_TIMEOUT = 30.0


@dataclass
class Launch:
    """A launched ``dvc repro``: its process, its output lines with their times."""

    proc: subprocess.Popen[str]
    token: str
    started: float
    lines: list[tuple[float, str]] = field(default_factory=list)
    reader: threading.Thread | None = None

    def read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic() - self.started, line.rstrip("\n")))

    def stage_starts(self) -> list[tuple[str, float]]:
        return [
            (m.group(1), t)
            for t, line in list(self.lines)
            if (m := re.match(r"Running stage '([^']+)'", line))
        ]

    def phase(self, at: float) -> str:
        """What ran ``at`` seconds after the start: the stage, or DVC between stages."""
        phase, stage = "dvc starting", ""
        for t, line in list(self.lines):
            if t > at:
                break
            if m := re.match(r"Running stage '([^']+)'", line):
                phase = stage = m.group(1)
            elif re.match(r"stage \S+ done in", line):
                phase = f"dvc recording {stage} (its command done)"
            elif line.startswith(("Updating lock file", "Generating lock file")):
                phase = f"dvc writing dvc.lock ({stage})"
        return phase

    def wait(self) -> int:
        code = self.proc.wait(timeout=TIMEOUT)
        if self.reader is not None:
            self.reader.join(timeout=30)
        return code

    @property
    def output(self) -> str:
        return "\n".join(line for _, line in self.lines)


def launch(repo: Path, env: dict[str, str], command: list[str], token: str) -> Launch:
    proc = subprocess.Popen(
        command,
        cwd=repo,
        env={**env, TOKEN: token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: os.killpg reaches all of it
    )
    run = Launch(proc, token, time.monotonic())
    run.reader = threading.Thread(target=run.read, daemon=True)
    run.reader.start()
    return run


def processes_of(token: str) -> list[str]:
    """The live processes whose environment carries ``TOKEN=token`` (pid and command)."""
    want = f"{TOKEN}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if want not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                if f.read().rpartition(")")[2].split()[0] in ("Z", "X"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # gone meanwhile, or not ours
            continue
        found.append(f"{entry} {cmd[:100]}")
    return found


def dvc_pid(run: Launch, preload: bool) -> int | None:
    """The ``dvc`` process of ``run`` (the launcher's child under the preload command)."""
    if not preload:
        return run.proc.pid
    try:
        children = Path(f"/proc/{run.proc.pid}/task/{run.proc.pid}/children").read_text()
    except OSError:
        return None
    for pid in map(int, children.split()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"/dvc") for part in cmd[:2]):
            return pid
    return None


def normalized(path: Path) -> bytes:
    """A result file as compared: JSON without its wall-clock timings and run ids."""
    data = path.read_bytes()
    if path.suffix != ".json" or path.parts[-2:-1] == ("metrics",):
        return data

    def strip(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if not k.endswith("seconds")}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        if isinstance(obj, str):
            return RUN_ID.sub("<run>", obj)
        return obj

    return json.dumps(strip(json.loads(data)), sort_keys=True).encode()


def snapshot(repo: Path) -> dict[str, bytes]:
    """The results and the report's text files (run ids masked) of ``repo``."""
    out = {}
    for top in RESULTS:
        for path in sorted((repo / top).rglob("*")):
            if path.is_file() and path.name != ".gitignore":
                out[str(path.relative_to(repo))] = normalized(path)
    for path in sorted((repo / "reports/smoke").rglob("*")):
        if path.parent.name == "inputs":  # the results' digests (run ids, timings): above
            continue
        if path.is_file() and path.suffix in (".csv", ".md", ".json"):
            text = path.read_text(encoding="utf-8")
            if path.name in ("runs.csv", "README.md"):
                text = RUN_ID.sub("<run>", text)
                text = re.sub(r"\b(FINISHED|RUNNING|KILLED|SCHEDULED|FAILED)\b", "<s>", text)
            out[str(path.relative_to(repo))] = text.encode()
    return out


def temporaries(repo: Path) -> list[str]:
    return sorted(
        str(p.relative_to(repo))
        for top in OUTPUT_DIRS
        for p in (repo / top).rglob(".*")
        if p.name.endswith(".part") or p.name.endswith(".tmp")
    )


def running_runs(repo: Path) -> list[str]:
    db = repo / "mlflow.db"
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT run_uuid, name FROM runs WHERE status = 'RUNNING'").fetchall()
    return [f"{uuid[:8]} {name}" for uuid, name in rows]


def run_statuses(repo: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{repo / 'mlflow.db'}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())


#: DVC's message when dvc.lock is empty or cut short
LOCK_REFUSAL = "'./dvc.lock' validation failed"


def lock_damage(repo: Path) -> str:
    """How a killed ``dvc`` left ``dvc.lock``: "" (complete or absent), else "empty" / "cut
    short"."""
    try:
        text = (repo / "dvc.lock").read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    if not text:
        return "empty"
    try:
        lock = yaml.safe_load(text)
    except yaml.YAMLError:
        return "cut short"
    stages = lock.get("stages") if isinstance(lock, dict) else None
    if not isinstance(stages, dict) or not all("cmd" in v for v in stages.values()):
        return "cut short"
    return ""


#: DVC's message when its lock of running stages (``.dvc/tmp/rwlock``) is empty or cut
RWLOCK_REFUSAL = "Unable to read RWLock-file '.dvc/tmp/rwlock'. JSON structure is corrupted"


def rwlock_damage(repo: Path) -> str:
    """How a killed ``dvc`` left ``.dvc/tmp/rwlock`` (DVC rewrites it in place, as
    ``dvc.lock``): "" (valid or absent), else "empty" / "cut short"."""
    try:
        text = (repo / ".dvc/tmp/rwlock").read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    if not text:
        return "empty"
    try:
        json.loads(text)
    except ValueError:
        return "cut short"
    return ""


def ran(run: Launch) -> list[str]:
    return [stage for stage, _ in run.stage_starts()]


def make_repo(root: Path, mirror: Path) -> Path:
    """A copy of the project with the crash list in params.yaml, committed to git."""
    root.mkdir()
    copy_project(root)
    overrides = [
        "experiments=smoke",
        "datasets=[iris]",
        "lambdas.num=2",
        f"data.mirror={mirror}",
        "tracking.log_models=false",
        "tracking.figures=false",
    ]
    params = yaml.safe_load(compose_params(overrides))
    smoke = params["experiments"]["smoke-cube"]
    params["experiments"] = {EXPERIMENT: {**smoke, "runs": dict(RUNS)}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    env = dvc_env(root)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    return root


@dataclass
class Instant:
    index: int
    launcher: str  # "preload" or "plain"
    at: float  # seconds after the start of the reference run
    stage: str  # the reference's stage running at ``at``
    offset: float  # seconds after that stage's start (negative: before the first stage)
    target: str  # "group" or "dvc"


def draw(ref: Launch, n: int, seed: int, launchers: list[str]) -> list[Instant]:
    """``n`` instants in ``[0, duration]`` of the reference: one inside each stage first
    (from its ``Running stage`` line to the next), then uniformly over the whole run; the
    launcher and the kill target alternate (each stage is killed both ways)."""
    rng = random.Random(seed)
    starts, end = ref.stage_starts(), ref.lines[-1][0]
    picks = []
    while len(picks) < n:
        for k, (_stage, start) in enumerate(starts):
            stop = starts[k + 1][1] if k + 1 < len(starts) else end
            picks.append(rng.uniform(start, stop))
        picks += [rng.uniform(0.0, end) for _ in range(len(starts))]
    out = []
    for i, at in enumerate(picks[:n]):
        stage, start = starts[0]
        for name, t in starts:
            if t <= at:
                stage, start = name, t
        launcher = launchers[i % len(launchers)]
        target = ("group", "dvc")[(i // len(launchers) + i // len(starts)) % 2]
        out.append(Instant(i, launcher, at, stage, at - start, target))
    return out


def stage_done(run: Launch, instant: Instant) -> bool:
    """Whether ``run`` has gone past the end of the instant's stage's command."""
    seen = False
    for _t, line in list(run.lines):
        if line == f"Running stage '{instant.stage}':":
            seen = True
        elif seen and (
            line.startswith(("Updating lock file", "Generating lock file", "Running stage"))
            or re.match(r"(stage \S+ done in|wrote \d+ files to)", line)
        ):
            return True
    return False


def forget(repo: Path, stage: str) -> None:
    """Make ``stage`` out of date, as a change of its parameters or code would: its entry
    removed from ``dvc.lock`` (the stages after it run again when its outputs change: the
    tuning JSON holds the new MLflow run ids), DVC's run cache emptied (it would restore
    its outputs from the reference instead of running it)."""
    shutil.rmtree(repo / ".dvc/cache/runs", ignore_errors=True)
    lock = yaml.safe_load((repo / "dvc.lock").read_text(encoding="utf-8"))
    del lock["stages"][stage]
    (repo / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False), encoding="utf-8")


@contextlib.contextmanager
def resume_server(repo: Path, env: dict[str, str]) -> Iterator[tuple[int, dict[str, str]]]:
    """One preload server for every resume (its PID and the resumes' environment): a resume
    is ``make repro``'s ``dvc repro`` under a preload server, without that server's start
    (its imports: 5-20 s here) paid again at each of the 20 instants. Started as
    :func:`pipeline.preload.running_server` does, with the runs' environment and
    directory (the server serves only stage processes of the same Python and settings),
    in a session of its own (a group kill does not reach it), its socket outside the runs'
    ``$TMPDIR`` (which the checks empty)."""
    directory = tempfile.mkdtemp(prefix="crash-preload-", dir="/tmp")
    path = os.path.join(directory, "socket")
    with open(os.path.join(directory, "server.log"), "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.preload_server", path],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(path + ".ready") and proc.poll() is None:
            assert time.monotonic() < deadline, "the resumes' preload server did not start"
            time.sleep(0.05)
        assert proc.poll() is None, Path(directory, "server.log").read_text()
        yield proc.pid, {**env, "PIPELINE_PRELOAD": path}
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(directory, ignore_errors=True)


def server_children(pid: int) -> list[str]:
    """The children of the resumes' preload server still alive (pid and command), its
    kernel compiler aside (started with the server, it ends by itself)."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    out = []
    for kid in kids:
        try:
            cmd = Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "--compile-kernels" not in cmd:
            out.append(f"{kid} {cmd.strip()}")
    return out


def kill_and_resume(
    repo: Path,
    env: dict[str, str],
    commands: dict[str, list[str]],
    instant: Instant,
    resumes: tuple[int, dict[str, str]],
) -> dict[str, Any]:
    """One instant: the run from its stage killed at its offset, the resume, the checks."""
    base = commands[instant.launcher]
    first = instant.stage == "fetch"
    forget(repo, instant.stage)
    token = f"k{instant.index}"
    run = launch(repo, env, base, token)
    # the stage's start in this run (the offset is from it; before the first stage: from
    # the launch)
    deadline = time.monotonic() + TIMEOUT
    while instant.offset >= 0 or not first:
        starts = dict(run.stage_starts())
        if instant.stage in starts:
            when = run.started + starts[instant.stage] + max(instant.offset, 0.0)
            break
        if run.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{base} never ran {instant.stage}:\n{run.output}")
        time.sleep(0.005)
    else:
        when = run.started + instant.at
    # the kill at the planned time, or as soon as the stage is done (its own timing can be
    # shorter than in the reference): then DVC is recording it (hashes, cache, dvc.lock)
    while time.monotonic() < when and run.proc.poll() is None and not stage_done(run, instant):
        time.sleep(0.002)
    killed_at = time.monotonic() - run.started
    phase = run.phase(killed_at)
    pids = [int(p.split()[0]) for p in processes_of(token)]
    if run.proc.poll() is not None:
        outcome_kill = "ended before the kill"
    elif instant.target == "group":
        os.killpg(run.proc.pid, signal.SIGKILL)
        outcome_kill = "killed"
    else:
        pid = dvc_pid(run, instant.launcher == "preload")
        assert pid is not None, f"no dvc process under {run.proc.pid}"
        os.kill(pid, signal.SIGKILL)
        outcome_kill = "killed"
    status = run.wait()
    # the resume when every process of the killed run is gone (reaped: DVC takes a zombie
    # for a live holder of its rwlock and refuses to run)
    deadline = time.monotonic() + GONE_TIMEOUT
    while time.monotonic() < deadline and (
        processes_of(token) or any(os.path.exists(f"/proc/{pid}") for pid in pids)
    ):
        time.sleep(0.05)
    gone_after = time.monotonic() - run.started - killed_at
    damaged = {"dvc.lock": lock_damage(repo), ".dvc/tmp/rwlock": rwlock_damage(repo)}
    shutil.rmtree(repo / ".dvc/cache/runs", ignore_errors=True)
    # the resume: make repro's dvc repro under a preload server, whatever was killed
    server, resume_env = resumes
    base = commands["plain"]
    resume = launch(repo, resume_env, base, f"r{instant.index}")
    resumed = resume.wait()
    refused = ""
    refusals = {"dvc.lock": LOCK_REFUSAL, ".dvc/tmp/rwlock": RWLOCK_REFUSAL}
    for path, message in refusals.items():
        if resumed != 0 and damaged[path] and message in resume.output:
            # DVC rewrites dvc.lock and its rwlock in place (open "w", then the text):
            # killed in between, it leaves one empty or cut, and refuses to run; the
            # README's one command
            refused += f"refused: {path} {damaged[path]}; then `rm {path}` and the resume "
            refused += "again ran "
            (repo / path).unlink()
            resume = launch(repo, resume_env, base, f"r{instant.index}")
            resumed = resume.wait()
    deadline = time.monotonic() + GONE_TIMEOUT  # the server's child of the last stage
    while server_children(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    return {
        "server_left": server_children(server),
        "tmp": env["TMPDIR"],
        "refused": refused,
        "gone_after": gone_after,
        "instant": instant,
        "phase": phase,
        "killed_at": killed_at,
        "kill": outcome_kill,
        "status": status,
        "resume_status": resumed,
        "resume_ran": ran(resume),
        "resume_output": resume.output,
        "seconds": time.monotonic() - run.started,
        "killed_output": run.output,
        "killed_lines": list(run.lines),
    }


def check(repo: Path, reference: dict[str, bytes], result: dict) -> list[str]:
    """The problems after a resume (empty: consistent)."""
    problems = []
    if result["resume_status"] != 0:
        tail = result["resume_output"].splitlines()[-5:]
        problems.append(f"the resume failed ({result['resume_status']}): {' | '.join(tail)}")
    ran_on = [
        line
        for t, line in result["killed_lines"]
        if t > result["killed_at"] + 0.5 and re.match(r"stage \S+ done in", line)
    ]
    if ran_on:  # its dvc dead: a stage that runs alone, beside the resume's
        problems.append(f"a stage of the killed run went on to its end: {ran_on}")
    if "the preload server does not run this stage" in result["resume_output"]:
        problems.append("the resume's stages did not run in its preload server")
    if left := processes_of(f"k{result['instant'].index}"):
        problems.append(f"processes of the killed run left: {left}")
    tmp = Path(result["tmp"])
    result["tmp_left"] = sorted(p.name for p in tmp.iterdir())
    for path in tmp.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    for leftover in processes_of(f"r{result['instant'].index}") + result["server_left"]:
        problems.append(f"process of the resume left: {leftover}")
    if temps := temporaries(repo):
        problems.append(f"temporaries: {temps}")
    if runs := running_runs(repo):
        problems.append(f"MLflow runs RUNNING: {runs}")
    now = snapshot(repo)
    differ = sorted(k for k in set(now) | set(reference) if now.get(k) != reference.get(k))
    if differ:
        problems.append(f"differ from the uninterrupted run: {differ}")
    try:
        yaml.safe_load((repo / "dvc.lock").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        problems.append(f"dvc.lock unreadable: {exc}")
    return problems


def resume_summary(result: dict) -> str:
    ran_ = result["resume_ran"]
    text = result["refused"] + (", ".join(ran_) if ran_ else "nothing to run")
    restored = re.findall(r"Stage '([^']+)' is cached - skipping run", result["resume_output"])
    if restored:
        text += f"; {', '.join(restored)} restored from DVC's cache"
    superseded = result["resume_output"].count("marked KILLED, superseded by")
    if superseded:
        text += f"; marked {superseded} orphaned MLflow run(s) KILLED"
    return text


def table(results: list[dict], problems: list[list[str]]) -> str:
    lines = [
        "| # | launcher | kill | instant (s) | running when killed | killed run's exit "
        "| the resume ran | outcome | s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for result, found in zip(results, problems, strict=True):
        i: Instant = result["instant"]
        target = "process group" if i.target == "group" else "dvc alone"
        kill = result["kill"]
        exit_ = f"{result['status']}" if kill == "killed" else kill
        exit_ += f", all gone in {result['gone_after']:.1f} s"
        outcome = "consistent" if not found else "; ".join(found)
        if result.get("tmp_left"):
            outcome += f" (left in $TMPDIR: {', '.join(result['tmp_left'])})"
        lines.append(
            f"| {i.index + 1} | {i.launcher} | SIGKILL {target} | {i.at:.2f} "
            f"({i.stage} +{max(i.offset, 0):.2f}) | {result['phase']} | {exit_} "
            f"| {resume_summary(result)} | {outcome} | {result['seconds']:.0f} |"
        )
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.long
def test_dvc_repro_resumes_after_sigkill_at_any_instant(
    tmp_path: Path, mirror: Path, short_tmp: Path
) -> None:
    repo = make_repo(tmp_path / "repo", mirror)
    # unbuffered: DVC's lines are timed as they are written; a private TMPDIR (short: the
    # preload server's socket is made there) shows what a killed run leaves in it; DVC
    # runs each stage as `$SHELL -c '<cmd>'`: /bin/sh (dash, as where $SHELL is unset,
    # e.g. CI) stays between dvc and the stage, where bash would exec it
    tmp = short_tmp
    env = {**dvc_env(repo), "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp), "SHELL": "/bin/sh"}
    dvc = str(Path(sys.executable).parent / "dvc")
    commands = {
        "preload": [sys.executable, "-m", "pipeline.preload", dvc, "repro"],
        "plain": [dvc, "repro"],
    }
    # numba's disk cache of the copy completed first (copy_project brings the kernels this
    # checkout has cached; the rest compiled here, every set's, as the preload server's
    # kernel compiler does on a fresh clone): the reference is then timed as the runs it
    # stands for
    subprocess.run(
        [sys.executable, "-m", "pipeline.preload_server", "--compile-kernels"],
        cwd=repo,
        env=env,
        check=True,
        timeout=TIMEOUT,
    )
    ref = launch(repo, env, [*commands["preload"], "-f"], "ref")
    assert ref.wait() == 0, ref.output
    assert len(ran(ref)) == 6, ref.output  # 5 stages, then the report
    reference = snapshot(repo)
    assert running_runs(repo) == []
    for path in tmp.iterdir():  # the reference's own (none expected): not the kills'
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    instants = draw(ref, INSTANTS, SEED, list(commands))
    log = [
        f"instants (seed {SEED}, s): " + ", ".join(f"{i.at:.2f}" for i in instants),
        f"reference (preload): {ref.lines[-1][0]:.1f} s; stages start at "
        + ", ".join(f"{s} {t:.1f}" for s, t in ref.stage_starts()),
    ]
    print("\n".join(log), flush=True)

    results, problems = [], []
    with resume_server(repo, env) as resumes:
        for instant in instants:
            result = kill_and_resume(repo, env, commands, instant, resumes)
            results.append(result)
            problems.append(check(repo, reference, result))
            (tmp_path / f"instant-{instant.index + 1:02d}.log").write_text(
                f"killed run ({instant}):\n{result['killed_output']}\n\nresume:\n"
                f"{result['resume_output']}\n",
                encoding="utf-8",
            )
            print(table(results[-1:], problems[-1:]).splitlines()[-1], flush=True)
    report = "\n".join([*log, "", table(results, problems), "", f"{run_statuses(repo)}"])
    (tmp_path / "crash-outcomes.md").write_text(report + "\n", encoding="utf-8")
    print(report)
    bad = [r for r, p in zip(results, problems, strict=True) if p]
    assert not bad, (
        report
        + "\n\n"
        + "\n\n".join(
            f"#{r['instant'].index + 1} killed run:\n{r['killed_output']}\nresume:\n"
            f"{r['resume_output']}"
            for r in bad[:3]
        )
    )
    # every stage was hit by at least one kill; DVC agrees that everything is up to date
    if INSTANTS >= len(ran(ref)):
        assert {r["instant"].stage for r in results} >= set(ran(ref))
    status = subprocess.run(
        [dvc, "status"], cwd=repo, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert "Data and pipelines are up to date" in status.stdout, status.stdout + status.stderr
