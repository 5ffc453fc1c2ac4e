"""Registers the OmegaConf resolver ``registry_datasets`` of ``conf/task/*.yaml`` when
Hydra composes ``conf/`` outside the ``pipeline`` package -- ``dvc exp run -S`` composes
params.yaml in DVC's own process, which scans ``hydra_plugins`` on the repository root
(``.dvc/config`` ``[hydra] plugins_path``, default the root).  The entry points and
``python -m pipeline.params`` register it by importing :mod:`pipeline`."""

from hydra.plugins.search_path_plugin import SearchPathPlugin

import pipeline  # noqa: F401  (registers the resolver)


class ProjlossRegistry(SearchPathPlugin):
    """A no-op search-path plugin: Hydra imports this module, which is all we need."""

    def manipulate_search_path(self, search_path):  # type: ignore[no-untyped-def]
        pass
