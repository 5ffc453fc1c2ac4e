"""pipeline: the experiment workflow around :mod:`projloss`.

Commands (thin: ``python -m pipeline.<command>``, parse and call a core):
:mod:`pipeline.fetch`, :mod:`pipeline.preprocess`, :mod:`pipeline.train` (one composition
end to end, ``--multirun`` sweeps), :mod:`pipeline.stage` (the commands of ``dvc.yaml``),
``pipeline.report`` (``report/__main__``, and :mod:`pipeline.report.repeated`),
:mod:`pipeline.params` (``params.yaml``), the preload server ``pipeline.preload_server``
(started by ``python -m pipeline.preload``) and the developer tools
:mod:`pipeline.tools`.

Folders, one concern each:

- :mod:`pipeline.data`: the data settings, the dataset registry, readers, fetch, the
  paper's protocol and the prepared splits; :func:`pipeline.data.load_prepared` is the
  Python API;
- :mod:`pipeline.config`: the run config (:class:`~pipeline.config.run.RunConfig`), its
  checks, the compositions, the metrics of each task and the choice of lambda, the
  experiments of ``params.yaml``;
- :mod:`pipeline.runs`: tune / refit / evaluate (Hydra-free cores), their parallel
  execution (locally or on Ray), figures, MLflow tracking, the sweep callbacks;
- :mod:`pipeline.cluster`: PostgreSQL / MLflow / Ray services, the orphan-run callback;
- :mod:`pipeline.report`: the paper's tables and figures (and the repeated-splits report);
- common modules: every other top-level module: :mod:`pipeline.errors`,
  :mod:`pipeline.paths` (the project root and every output directory),
  :mod:`pipeline.fileio`, :mod:`pipeline.plain`, :mod:`pipeline.lifecycle`,
  :mod:`pipeline.argv`, ``pipeline._hydra``, :mod:`pipeline.sweep_stop`,
  :mod:`pipeline.preload` (its :func:`~pipeline.preload.delegate` is a library of the
  commands; ``python -m pipeline.preload`` is also a command) and this package itself.

The folders are in one order, each importing only its own layer and the layers before it
(imports inside functions count)::

    common -> data -> config -> runs -> cluster | report -> commands

cluster and report share a rank and import neither each other; no module imports a
command module. What a lower layer needs lives there (the data settings in
:mod:`pipeline.data.settings`, the metrics in :mod:`pipeline.config.scoring`, the Ray
backend of the runs' tasks in :mod:`pipeline.runs.joblib_backend`).
:mod:`pipeline.tools.import_graph` checks it (``tests/pipeline/tools/test_import_graph.py``).
The engine (:mod:`projloss`) never imports this package, so it works without the
``pipeline`` extra (liac-arff, tqdm, pyyaml, hydra-core, mlflow, dvc, matplotlib).
"""

import os as _os

#: this process and the parent it started with, noted before any other import (0.7 s of
#: them in a stage on a busy machine): :func:`pipeline.lifecycle.die_with_parent` counts
#: a parent that died meanwhile (``dvc`` killed as it started the stage) as dead
STARTED = (_os.getpid(), _os.getppid())


def _parent_of(pid: int) -> int:
    """The parent PID of ``pid`` (``/proc/<pid>/stat``), 0 if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


#: the parent's parent at the same moment: DVC starts a stage through ``$SHELL -c``, and a
#: shell that does not exec its one command (dash, ``/bin/sh`` where ``$SHELL`` is unset)
#: stays between them; :func:`pipeline.lifecycle.die_with_parent` watches this one then
STARTED_GRANDPARENT = _parent_of(STARTED[1])
