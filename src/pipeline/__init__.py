"""pipeline: the experiment workflow around :mod:`projloss`.

Data stages (this package so far):

- :mod:`pipeline.fetch` (``python -m pipeline.fetch``): copy each dataset file from the
  local mirror, or download it, verify its sha256 and write it atomically to
  ``data/raw/<dataset>/``;
- :mod:`pipeline.preprocess` (``python -m pipeline.preprocess``): the paper's protocol
  (own split or 80/20, 25% validation hold-out, standardization) into
  ``data/prepared/<variant>/``, plus the dataset statistics table;
- :func:`pipeline.data.load_prepared`: the Python API the later stages use.

The engine (:mod:`projloss`) never imports this package, so it works without the
``pipeline`` extra (liac-arff, tqdm, pyyaml, hydra-core, ...).
"""
