"""``python -m pipeline.preload COMMAND``: the stages forked from one preloaded interpreter.

Real processes throughout: the command starts its server (a process in its own session)
and stops it by PID; a stand-in stage (``preload_target.py``) shows what the child gets
(its argv, directory, environment, streams, exit status, signals) and what the server
refuses; ``dvc repro`` under it on the smoke experiments gives the same metrics as plain
``dvc repro``, every stage in a fork of the server.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .conftest import ROOT
from .test_dvc import preload_servers

HERE = Path(__file__).resolve().parent
#: a stage process: prints its PID, hands its command line to the server (target: the
#: stand-in stage), exits with the child's status (97: the server did not run it)
CLIENT = (
    "import os, sys; print('client', os.getpid(), flush=True); "
    "from pipeline.preload import delegate; "
    "s = delegate(sys.argv[1:], target='preload_target:main'); sys.exit(97 if s is None else s)"
)


def _env(tmp: Path, src: Path = ROOT / "src", **extra: str) -> dict[str, str]:
    """The environment of a preload command whose server's socket is under ``tmp``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MLFLOW_", "PROJLOSS_", "PIPELINE_", "NUMBA_OPT"))
    }
    env.update(
        PYTHONPATH=os.pathsep.join([str(src), str(HERE)]),
        TMPDIR=str(tmp),
        MLFLOW_DISABLE_TELEMETRY="true",
        **extra,
    )
    return env


def _preload(*command: str, modules: str = "numpy") -> list[str]:
    return [sys.executable, "-m", "pipeline.preload", "--modules", modules, *command]


def _readline(proc: subprocess.Popen[str], prefix: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(prefix):
            return line
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"no line {prefix!r} from {proc.args}")


def test_child_gets_the_command_and_its_status_is_the_commands(
    tmp_path: Path, short_tmp: Path
) -> None:
    """The child runs with the stage process's argv, directory, environment and streams;
    the stage process and the preload command exit with its status; no server is left."""
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        _preload(sys.executable, "-c", CLIENT, "exit:3", "a b"),
        cwd=work,
        env=_env(short_tmp, PRELOAD_TEST="hello"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    client = int(done.stdout.split("client ", 1)[1].split()[0])
    line = next(x for x in done.stdout.splitlines() if x.startswith("argv"))
    assert line.startswith(f"argv exit:3 a b cwd {work} env hello ppid "), line
    assert int(line.rsplit(" ", 1)[1]) != client  # a child of the server, not the client
    assert "note:" not in done.stderr
    assert preload_servers(short_tmp) == []


def test_a_signal_reaches_the_child_and_a_dead_client_ends_it(
    tmp_path: Path, short_tmp: Path
) -> None:
    """SIGINT to the stage process is forwarded (the child's KeyboardInterrupt, status
    130); SIGKILL of the stage process makes the server send the child SIGTERM; the
    server is stopped in both cases."""
    marker = tmp_path / "terminated"
    for signum in (signal.SIGINT, signal.SIGKILL):
        proc = subprocess.Popen(
            _preload(sys.executable, "-c", CLIENT),
            cwd=tmp_path,
            env=_env(short_tmp, MARKER=str(marker)),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            client = int(_readline(proc, "client").split()[1])
            ready = _readline(proc, "ready").split()
            assert int(ready[2]) != client
            os.kill(client, signum)
            if signum == signal.SIGINT:
                assert _readline(proc, "interrupted")
                assert proc.wait(60) == 130
            else:
                deadline = time.monotonic() + 30
                while not marker.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert marker.read_text(encoding="utf-8") == "terminated"
                assert proc.wait(60) == 128 + signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert preload_servers(short_tmp) == []


def test_changed_sources_or_settings_run_the_stage_in_its_own_process(
    tmp_path: Path, short_tmp: Path
) -> None:
    """After a source file of the package changes, or with another value of a setting read
    at import time (NUMBA_OPT), the server refuses: one line on stderr, the stage process
    runs the stage itself (here: the client's status 97)."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "src" / "pipeline", src / "pipeline", ignore=ignore)
    script = (
        f'"$PY" -c "$CLIENT" exit:0 && "$PY" -c "$CLIENT" exit:0; echo "first=$?"; '
        f'NUMBA_OPT=1 "$PY" -c "$CLIENT" exit:0; echo "settings=$?"; '
        f'touch {src / "pipeline" / "lifecycle.py"}; "$PY" -c "$CLIENT" exit:0; echo "source=$?"'
    )
    done = subprocess.run(
        _preload("sh", "-c", script),
        cwd=tmp_path,
        env=_env(short_tmp, src=src, PY=sys.executable, CLIENT=CLIENT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "first=0" in done.stdout and "settings=97" in done.stdout
    assert "source=97" in done.stdout
    notes = [x for x in done.stderr.splitlines() if x.startswith("note:")]
    assert len(notes) == 2, done.stderr
    assert "other import-time settings: NUMBA_OPT" in notes[0]
    assert f"{src / 'pipeline' / 'lifecycle.py'} changed since the server started" in notes[1]
    assert preload_servers(short_tmp) == []


def test_a_refused_stage_gets_its_own_signal_handlers_back(short_tmp: Path) -> None:
    """A stage the server refuses (here: another NUMBA_OPT) runs in its process with the
    handlers it had before (Ctrl-C still interrupts it), not the forwarding ones. The
    client sets its own handler first: what Python starts with depends on the caller (a
    shell without job control starts background commands with SIGINT ignored)."""
    client = (
        "import signal; from pipeline.preload import delegate; "
        "own = lambda *_: None; signal.signal(signal.SIGINT, own); "
        "s = delegate([], target='preload_target:main'); "
        "print('local', s is None, signal.getsignal(signal.SIGINT) is own)"
    )
    done = subprocess.run(
        _preload("sh", "-c", 'NUMBA_OPT=1 "$PY" -c "$C"'),
        env=_env(short_tmp, PY=sys.executable, C=client),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "local True True" in done.stdout, (done.stdout, done.stderr)
    assert preload_servers(short_tmp) == []


#: prints ``compiling N``: the kernel compilers (``--compile-kernels``) alive with $CACHE as
#: their numba cache
COMPILERS = (
    "import os, pathlib; n = 0\n"
    "for p in pathlib.Path('/proc').iterdir():\n"
    "    try:\n"
    "        cmd = (p / 'cmdline').read_bytes(); env = (p / 'environ').read_bytes()\n"
    "    except OSError:\n"
    "        continue\n"
    "    n += b'--compile-kernels' in cmd.split(b'\\0') and os.environb[b'CACHE'] in env\n"
    "print('compiling', n)"
)


def test_kernels_compile_in_another_process_while_stages_run(
    tmp_path: Path, short_tmp: Path
) -> None:
    """With the engine among the modules and an empty numba cache, the kernels compile in a
    process of their own (``--compile-kernels``) while the server runs stages: two stages
    are served before it ends (they do not wait for it); a stage forked after it ends finds
    the kernels loaded (from the cache it filled); no compiler is left afterwards."""
    cache = tmp_path / "numba-cache"
    script = (
        '"$PY" -c "$CLIENT" exit:0 && "$PY" -c "$CLIENT" exit:0 && "$PY" -c "$COMPILERS"; '
        'i=0; until "$PY" -c "$CLIENT" kernels | grep -q \'kernels [1-9]\'; do '
        "i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.2; done; "
        '"$PY" -c "$CLIENT" kernels'
    )
    env = _env(
        short_tmp,
        PY=sys.executable,
        CLIENT=CLIENT,
        COMPILERS=COMPILERS,
        NUMBA_CACHE_DIR=str(cache),
        CACHE=f"NUMBA_CACHE_DIR={cache}",
    )
    done = subprocess.run(
        _preload("sh", "-c", script, modules="numpy,projloss,projloss.sets"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "compiling 1" in done.stdout, (done.stdout, done.stderr)
    kernels = int(done.stdout.rsplit("kernels ", 1)[1].split()[0])
    assert kernels > 0, done.stdout
    assert any(cache.rglob("*.nbi"))  # the compiler filled the cache
    assert preload_servers(short_tmp) == []
    probe = subprocess.run(
        [sys.executable, "-c", COMPILERS], env=env, capture_output=True, text=True
    )
    assert probe.stdout.strip() == "compiling 0"


def test_what_only_later_stages_need_is_imported_once_the_server_is_ready(
    tmp_path: Path, short_tmp: Path
) -> None:
    """skops (MLflow's model format: refit and evaluate log and load models) is not among
    the imports that the first stage waits for: the server says it is ready without it,
    serves the stage that waited, then imports it while no stage waits; a stage forked
    after that (in the server: not refused) has it."""
    script = (
        '"$PY" -c "$CLIENT" skops; i=0; '
        'until "$PY" -c "$CLIENT" skops | grep -q "skops 1"; do '
        "i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.2; done; "
        '"$PY" -c "$CLIENT" skops'
    )
    done = subprocess.run(
        # slow_import (1 s) last: the first stage surely connects before the server is ready
        _preload("sh", "-c", script, modules="numpy,pipeline.runs.model_packaging,slow_import"),
        cwd=tmp_path,
        env=_env(short_tmp, PY=sys.executable, CLIENT=CLIENT, SLOW_IMPORT="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = [line for line in done.stdout.splitlines() if line.startswith("skops")]
    assert seen[0] == "skops 0" and seen[-1] == "skops 1", done.stdout
    assert "note:" not in done.stderr, done.stderr  # every stage ran in a fork
    assert preload_servers(short_tmp) == []


def test_a_light_stage_runs_here_while_the_server_imports(tmp_path: Path, short_tmp: Path) -> None:
    """While the server imports (here a module that takes 3 s), a stage that does not wait
    for it (fetch, preprocess: ``delegate(wait=False)``) runs in its own process, with one
    note; a stage that waits is served when the imports are done, and so is a light one
    after that."""
    light = CLIENT.replace(
        "target='preload_target:main'", "target='preload_target:main', wait=False"
    )
    script = (
        '"$PY" -c "$LIGHT" exit:0; echo "light=$?"; "$PY" -c "$CLIENT" exit:0; '
        'echo "waited=$?"; "$PY" -c "$LIGHT" exit:0; echo "light after=$?"'
    )
    done = subprocess.run(
        _preload("sh", "-c", script, modules="numpy,slow_import"),
        cwd=tmp_path,
        env=_env(short_tmp, PY=sys.executable, CLIENT=CLIENT, LIGHT=light, SLOW_IMPORT="3"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "light=97" in done.stdout and "waited=0" in done.stdout, done.stdout
    assert "light after=0" in done.stdout, done.stdout
    notes = [x for x in done.stderr.splitlines() if x.startswith("note:")]
    assert notes == [
        "note: the preload server is still importing; running the stage in this process"
    ], done.stderr
    assert preload_servers(short_tmp) == []


def test_no_server_runs_the_stage_here(tmp_path: Path) -> None:
    """``PIPELINE_PRELOAD`` naming no socket: a one-line notice, the stage runs here."""
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, "exit:0"],
        env=_env(tmp_path, PIPELINE_PRELOAD=str(tmp_path / "none")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 97
    assert done.stderr.startswith(f"note: no preload server at {tmp_path / 'none'}")
    assert len(done.stderr.splitlines()) == 1


def test_a_killed_preload_command_leaves_no_socket_directory(
    tmp_path: Path, short_tmp: Path
) -> None:
    """``kill -9`` of ``python -m pipeline.preload`` (``make repro`` killed): its server
    ends (SIGTERM, ``PR_SET_PDEATHSIG``) and removes its socket's private directory, which
    the killed command can no longer remove."""
    _kill_when(_preload("sleep", "60"), tmp_path, short_tmp, "pipeline-preload-*/socket.ready")
    assert preload_servers(short_tmp) == []
    assert list(short_tmp.iterdir()) == []


def _kill_when(command: list[str], cwd: Path, tmp: Path, pattern: str, poll: float = 0.05) -> None:
    """Start the preload ``command`` (``$TMPDIR``: ``tmp``), ``kill -9`` its process group as
    soon as ``pattern`` matches in ``tmp``, and wait for its servers to end."""
    proc = subprocess.Popen(command, cwd=cwd, env=_env(tmp), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp.glob(pattern)):
            assert time.monotonic() < deadline, f"no {pattern} in {tmp}"
            assert proc.poll() is None
            time.sleep(poll)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 30
        while preload_servers(tmp) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_server_stopped_during_its_first_model_save_leaves_nothing(
    tmp_path: Path, short_tmp: Path
) -> None:
    """The server saves a first model once it is ready (MLflow's scan of the packages, for
    the refit and evaluate stages), into a temporary folder: killed meanwhile (the
    command killed, the server ended by ``PR_SET_PDEATHSIG``), it removes that folder
    too (found by the crash test: ``projloss-warm-up-*`` left in ``$TMPDIR``)."""
    command = _preload("sleep", "60", modules="numpy,pipeline.runs.model_packaging")
    # the save takes 0.5-2.5 s: polled every millisecond
    _kill_when(command, tmp_path, short_tmp, "projloss-warm-up-*", poll=0.001)
    assert preload_servers(short_tmp) == []
    assert list(short_tmp.iterdir()) == []
