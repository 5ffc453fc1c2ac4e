"""pipeline: the experiment workflow around :mod:`projloss`.

Commands (thin: ``python -m pipeline.<command>``, parse and call a core):
:mod:`pipeline.fetch`, :mod:`pipeline.preprocess`, :mod:`pipeline.train` (one composition
end to end, ``--multirun`` sweeps), :mod:`pipeline.stage` (the commands of ``dvc.yaml``),
``pipeline.report`` (``report/__main__``) and :mod:`pipeline.params` (``params.yaml``).

Folders, one concern each (the flow: data -> config -> runs -> report):

- :mod:`pipeline.data`: the dataset registry, readers, fetch, the paper's protocol and
  the prepared splits; :func:`pipeline.data.load_prepared` is the Python API;
- :mod:`pipeline.config`: the run config, composition checks, experiments of
  ``params.yaml``;
- :mod:`pipeline.runs`: scoring, tune / refit / evaluate (Hydra-free cores), their
  parallel execution, figures, MLflow tracking;
- :mod:`pipeline.report`: the paper's tables and figures (and the repeated-splits report);
- :mod:`pipeline.cluster`: PostgreSQL / MLflow / Ray services, the Ray joblib backend;
- common modules: :mod:`pipeline.errors`, :mod:`pipeline.paths` (the project root and
  every output directory), :mod:`pipeline.fileio`, :mod:`pipeline.lifecycle`,
  :mod:`pipeline.argv`, ``pipeline._hydra``.

No module imports a command module. The engine (:mod:`projloss`) never imports this
package, so it works without the ``pipeline`` extra (liac-arff, tqdm, pyyaml, hydra-core,
mlflow, dvc, matplotlib).
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

from .data.registry import register_resolver as _register_resolver  # noqa: E402

# ``${registry_datasets:...}`` of conf/config.yaml (the default sweep): from the registry.
_register_resolver()
