"""The end-of-sweep closer of runs left RUNNING (:mod:`pipeline.cluster.callbacks`) asks a
tracking server that does not answer again every ``every`` seconds, MLflow's own retries
off meanwhile: a server that never answers is one error after ``retry_for`` seconds, not
MLflow's minutes of retries. (A server that comes back: the closer after
``tests/cluster/test_cluster.py::test_the_server_restarted_mid_sweep``.)"""

from __future__ import annotations

import os
import socket
import time

import pytest

from pipeline.cluster.callbacks import close_with_retries
from pipeline.runs.store import connection_lost


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_never_answers_is_one_error_after_the_retry_window() -> None:
    port = _free_port()  # nothing listens there
    before = os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES")
    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        close_with_retries(f"http://127.0.0.1:{port}", "sweep-1", retry_for=1.0, every=0.25)
    assert connection_lost(caught.value), caught.value
    # MLflow's own retries (7, waits doubling from 2 s) are off meanwhile, and back after
    assert time.monotonic() - start < 10.0
    assert os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES") == before
