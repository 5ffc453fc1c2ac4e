"""The run configuration: what a run is, checked once at the edge.

- :mod:`.settings`: the known keys of a run config, config checks, tracking settings
  (the data settings are :mod:`pipeline.data.settings`');
- :mod:`.composition`: a composition of ``conf/`` groups (task, set, geometry, decoder,
  model) checked against the engine, its estimator and lambda grid;
- :mod:`.scoring`: the metrics of each task (``task.metrics``), the choice of lambda;
- :mod:`.run`: :class:`~.run.RunConfig`, the typed run built from them;
- :mod:`.experiments`: ``params.yaml`` -> the experiments of the DVC stages and their runs.
"""
