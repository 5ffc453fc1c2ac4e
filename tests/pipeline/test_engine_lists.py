"""One list each of tasks, geometries and models: the engine's; the pipeline's metadata is
keyed by the engine's names."""

from __future__ import annotations

import pytest

from pipeline.config.composition import BASELINE_MODELS, NEURAL_MODELS, validate
from pipeline.config.scoring import _registry
from pipeline.config.settings import MODEL_KEYS
from pipeline.data.registry import DATASET_TASKS, TASKS
from pipeline.errors import CompositionError
from projloss._validation import GEOMETRIES
from projloss.estimators._base import MODELS
from projloss.tasks import TASKS as ENGINE_TASKS


def test_pipeline_metadata_is_keyed_by_the_engine_tasks() -> None:
    assert list(DATASET_TASKS) == list(ENGINE_TASKS)
    assert set(_registry()) == set(ENGINE_TASKS)  # the metrics of each task
    assert TASKS == ("label_ranking", "ordinal", "multilabel")  # the datasets' label kinds


def test_models_are_the_engine_models_and_the_baselines() -> None:
    assert list(MODEL_KEYS) == [*MODELS, *NEURAL_MODELS, *BASELINE_MODELS]


@pytest.mark.parametrize(
    ("group", "bad", "valid"),
    [
        ("geometry", "l2", str(GEOMETRIES)),
        ("model", "svm", str([*MODELS, *NEURAL_MODELS, *BASELINE_MODELS])),
    ],
)
def test_errors_name_the_engine_lists(group: str, bad: str, valid: str) -> None:
    cfg = {
        "task": {"name": "label_ranking"},
        "dataset": {"name": "iris", "task": "label_ranking"},
        "set": {"name": "birkhoff"},
        "decoder": {"name": "same"},
        "geometry": {"name": "euclidean"},
        "model": {"name": "linear"},
        group: {"name": bad},
    }
    with pytest.raises(CompositionError, match=r"valid (geometries|models)") as exc:
        validate(cfg)
    assert valid in str(exc.value)
