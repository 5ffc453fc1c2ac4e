"""``python -m pipeline.tools.ui_screenshots`` (``make ui-screenshots``): what a researcher
sees in ``mlflow ui``, as PNG files in ``docs/ui/``. On demand, not in CI.

1. Three runs of ``pipeline.train`` on iris into a temporary MLflow store (the data fetched
   from the mirror into the same temporary directory): Birkhoff/Birkhoff (its model
   registered, ``tracking.register=true``), and the cube
   decoded for the entrywise Hamming loss (the task's default, which decodes all-zero
   matrices: flagged) and for the ranking Hamming loss (the paper's cube column).
2. ``mlflow ui`` on 127.0.0.1 at a free port (stopped by its process group at the end,
   also on an error).
3. Headless Chromium (Debian's ``chromium``, driven by Playwright to set the UI's local
   settings: the *Model training* view, no assistant panel) takes:

   - ``runs.png``: the runs table of ``projloss/label_ranking`` in the ``projloss`` saved
     view (dataset, test metric, composition);
   - ``run.png``: a parent run's page (params, metrics, dataset, tags, model);
   - ``run-metrics.png``: its *Model metrics* tab (the validation curve over the λ grid);
   - ``artifacts.png``: its artifacts (the validation-curve figure shown);
   - ``compare.png``: the two cube runs compared;
   - ``first-visit.png``: the experiment as a first visit opens it (a fresh browser: the
     *GenAI* view, whatever the experiment's ``mlflow.experimentKind`` tag says).
4. ``FINGERPRINT``: the fingerprint of the code that decides what MLflow shows
   (:mod:`pipeline.tools.ui_fingerprint`), recorded once every screenshot is written: a
   test fails when that code changes after the screenshots were taken.

Needs ``chromium`` (``apt-get install -y chromium``) and ``playwright`` (``pip install
playwright``; its own browser download is not needed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from pipeline.tools import ui_fingerprint

log = logging.getLogger("pipeline.tools.ui_screenshots")

#: the compositions of the demo store (``pipeline.train`` overrides)
RUNS = (
    ("birkhoff", ["set=birkhoff", "tracking.register=true"]),
    ("cube-entrywise", ["set=cube", "decoder=cube"]),
    ("cube-ranking", ["set=cube", "decoder=cube", "task.target_loss=hamming_ranking"]),
)
#: the UI's local settings (browser localStorage): the model-training view, and the
#: assistant panel not opened on the first visit
LOCAL_STORAGE = {
    "mlflow.workflowType_v1": json.dumps("machine_learning"),
    "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": "true",
}


#: taller pages (pixels): the run page's params and tags, the comparison's tables
HEIGHTS = {"run.png": 1500, "compare.png": 2100}


class ScreenshotError(RuntimeError):
    """A missing tool or a UI that does not come up (one line)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_store(directory: Path) -> tuple[str, dict[str, str]]:
    """Run :data:`RUNS` into ``<directory>/mlflow.db``; return the URI and run ids."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from pipeline import train
    from pipeline.paths import project_root

    uri = f"sqlite:///{directory / 'mlflow.db'}"
    common = [
        f"data.raw_dir={directory / 'raw'}",
        f"data.prepared_dir={directory / 'prepared'}",
        f"data.reports_dir={directory / 'reports'}",
        "data.progress=false",
        "progress=false",
        f"tracking.uri={uri}",
        "dataset=iris",
    ]
    ids = {}
    for key, overrides in RUNS:
        with initialize_config_dir(str(project_root() / "conf"), version_base="1.3"):
            cfg = compose("train", overrides=[*overrides, *common])
        ids[key] = train.run(OmegaConf.to_container(cfg, resolve=True))["run_id"]
    return uri, ids


@contextlib.contextmanager
def mlflow_ui(uri: str, timeout: float = 180.0) -> Iterator[str]:
    """``mlflow ui`` on a free local port; yields its address. Stopped (its whole
    process group: the server starts workers) when the block ends."""
    port = free_port()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    logfile = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        cmd, stdout=logfile, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    address = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(address + "/version", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                logfile.seek(0)
                tail = logfile.read().decode("utf-8", "replace").strip().splitlines()[-1:]
                raise ScreenshotError(f"mlflow ui did not start on {address}: {tail}")
            time.sleep(1.0)
        yield address
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        logfile.close()


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise ScreenshotError("no chromium on PATH; install it: apt-get install -y chromium")


def pages(experiment_id: str, ids: dict[str, str]) -> list[tuple[str, str, str]]:
    """(file, URL fragment, a text to wait for) of each screenshot; the last one is taken
    in a fresh browser context (no local settings)."""
    exp = f"#/experiments/{experiment_id}"
    run = f"{exp}/runs/{ids['birkhoff']}"
    pair = json.dumps([ids["cube-entrywise"], ids["cube-ranking"]])
    return [
        ("runs.png", f"{exp}/runs?viewStateShareKey=projloss", "test.hamming"),
        ("run.png", run, "Datasets"),
        ("run-metrics.png", f"{run}/model-metrics", "tuning/val.hamming"),
        ("artifacts.png", f"{run}/artifacts/figures/validation_curve.png", "config.yaml"),
        (
            "compare.png",
            f'#/compare-runs?runs={pair}&experiments=["{experiment_id}"]',
            "Parallel Coordinates Plot",
        ),
        ("first-visit.png", exp, "Overview"),
    ]


def screenshots(
    address: str, shots: Sequence[tuple[str, str, str]], out: Path, size: tuple[int, int]
) -> list[Path]:
    """Headless Chromium screenshots of ``shots`` into ``out`` (the last one in a fresh
    browser context, see :func:`pages`)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise ScreenshotError("playwright is not installed; pip install playwright") from None
    init = "".join(
        f"localStorage.setItem({json.dumps(k)}, {json.dumps(v)});" for k, v in LOCAL_STORAGE.items()
    )
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            viewport = {"width": size[0], "height": size[1]}
            page = browser.new_page(viewport=viewport)
            page.add_init_script(init)
            for n, (name, fragment, text) in enumerate(shots, 1):
                if n == len(shots):
                    page = browser.new_context(viewport=viewport).new_page()
                page.set_viewport_size({**viewport, "height": HEIGHTS.get(name, size[1])})
                page.goto(f"{address}/{fragment}")
                page.get_by_text(text).first.wait_for(timeout=60_000)
                page.wait_for_timeout(3000)  # charts and lazy panels
                page.screenshot(path=str(out / name))
                written.append(out / name)
                log.info("wrote %s", out / name)
        finally:
            browser.close()
    return written


def experiment_of(uri: str, run_id: str) -> str:
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri).get_run(run_id).info.experiment_id


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.tools.ui_screenshots")
    parser.add_argument("--out", type=Path, default=Path("docs/ui"))
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1100)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    try:
        chromium_path()
        with tempfile.TemporaryDirectory(prefix="projloss-ui-") as tmp:
            uri, ids = make_store(Path(tmp))
            exp = experiment_of(uri, ids["birkhoff"])
            with mlflow_ui(uri) as address:
                screenshots(address, pages(exp, ids), args.out, (args.width, args.height))
        log.info("wrote %s", ui_fingerprint.record(args.out))
    except ScreenshotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
