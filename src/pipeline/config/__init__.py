"""The run configuration: what a run is, checked once at the edge.

- :mod:`.settings`: the known keys of a run config, data settings, config checks;
- :mod:`.composition`: a composition of ``conf/`` groups (task, set, geometry, decoder,
  model) checked against the engine, its estimator and lambda grid;
- :mod:`.experiments`: ``params.yaml`` -> the experiments of the DVC stages and their runs.
"""
