"""Scaling out on existing distributed engines (never a home-made pool).

- :mod:`.services`: the commands that start a throwaway PostgreSQL cluster, an MLflow
  tracking server on it and a Ray head node (docs/guide/scaling.md, "Scaling out"), and
  context managers that run them on 127.0.0.1 and stop them by PID (tests, benchmarks).
- :mod:`.callbacks`: a Hydra callback that closes the MLflow runs a lost worker left
  RUNNING at the end of a sweep.

The DVC stages' joblib tasks go to a Ray cluster when ``PROJLOSS_RAY_ADDRESS`` is set
(``dvc repro`` scales out; the default stays local): :mod:`pipeline.runs.joblib_backend`,
with the tasks it runs (the runs come before the cluster in the folder order).

Sweeps themselves run through Hydra launcher plugins: ``hydra/launcher=ray_cluster``
(hydra-ray-launcher, ``conf/hydra/launcher/ray_cluster.yaml``), ``submitit_slurm`` /
``submitit_local`` (hydra-submitit-launcher) and ``joblib``.
"""
