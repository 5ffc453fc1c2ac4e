"""Running a composition: tune -> refit -> evaluate, Hydra-free.

- :mod:`.tune`: one fit per lambda of the grid, scored on validation
  (:mod:`pipeline.config.scoring`);
- :mod:`.refit`: the chosen lambda(s) refitted on train + validation, saved;
- :mod:`.evaluate`: test metrics, predictions, figures (:mod:`.figures`);
- :mod:`.stages`: the DVC experiment stages (every run of an experiment), over
  :mod:`.sweeps` (a run as a sweep over its splits: a plain run is a sweep of one);
  :mod:`.data_stages`: the DVC data stages (fetch, preprocess);
- :mod:`.parallel`: the worker tasks of a stage (one per run or per split), joblib;
  :mod:`.joblib_backend`: those tasks on a Ray cluster (``PROJLOSS_RAY_ADDRESS``);
- :mod:`.tracking`: MLflow runs (a recording tracker when tracking is off);
- :mod:`.callbacks`: Hydra callbacks of a sweep (progress lines, run summaries).
"""
