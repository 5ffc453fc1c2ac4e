"""Stage cores: each module has ``run(cfg)`` taking a plain mapping (dict or DictConfig).

The Hydra entry points (:mod:`pipeline.fetch`, :mod:`pipeline.preprocess`) are thin
wrappers around these, so DVC, tests and Python code call the same code without Hydra.
"""
