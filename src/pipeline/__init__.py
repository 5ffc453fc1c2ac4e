"""pipeline: the experiment workflow around :mod:`projloss`.

Data:

- :mod:`pipeline.fetch` (``python -m pipeline.fetch``): copy each dataset file from the
  local mirror, or download it, verify its sha256 and write it atomically to
  ``data/raw/<dataset>/``;
- :mod:`pipeline.preprocess` (``python -m pipeline.preprocess``): the paper's protocol
  (own split or 80/20, 25% validation hold-out, standardization) into
  ``data/prepared/<variant>/``, plus the dataset statistics table;
- :func:`pipeline.data.load_prepared`: the Python API the training stages use.

Experiments (compositions of the Hydra groups of ``conf/``):

- :mod:`pipeline.composition`: validate a composition, build its estimator;
- :mod:`pipeline.stages` ``tune`` / ``refit`` / ``evaluate``: the Hydra-free cores (lambda
  on validation, refit on train + validation, test metrics, predictions, figures);
- :mod:`pipeline.train` (``python -m pipeline.train [--multirun]``): one composition end
  to end, logged to MLflow (:mod:`pipeline.tracking`);
- :mod:`pipeline.stage` (``python -m pipeline.stage <stage> [experiment]``): the commands
  of ``dvc.yaml``, reading ``params.yaml`` (:mod:`pipeline.params`,
  :mod:`pipeline.experiments`).

The engine (:mod:`projloss`) never imports this package, so it works without the
``pipeline`` extra (liac-arff, tqdm, pyyaml, hydra-core, mlflow, dvc, matplotlib).
"""

from .registry import register_resolver as _register_resolver

# ``${registry_datasets:...}`` of conf/config.yaml (the default sweep): from the registry.
_register_resolver()
