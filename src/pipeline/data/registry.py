"""The dataset registry: one YAML file per dataset under ``conf/dataset/``.

The same files are the Hydra group ``dataset`` (``dataset=<name>`` selects one) and are
read directly here to list, select and validate datasets.  A dataset YAML holds::

    name: birds                  # = the file name without .yaml
    task: multilabel             # label_ranking | ordinal | multilabel
    type: Audio                  # domain (the paper's Table 5 "Type" column), optional
    format: mulan_arff           # reader: label_ranking | orreview | mulan_arff | libsvm
    options: {labels_xml: birds.xml}   # reader keyword arguments
    sparse: null                 # store X sparse (true), dense (false), or as read (null)
    parts: {train: birds-train.arff, test: birds-test.arff}   # or {all: file}
    n_splits: null               # k when the part names contain "{split}" (0..k-1)
    homepage: http://...         # where the data set is described (not downloaded)
    paper: {...}                 # the paper's statistics, for the comparison table
    files:                       # every file to fetch
      - name: birds-train.arff   # file name under data/raw/<name>/
        bytes: 539367            # optional: size check
        sha256: 8f21...          # optional: when missing, trust on first use (see fetch)
        mirror: multilabel/birds/birds-train.arff   # path in the local mirror, optional
        path: /some/local/file   # a local source file (user datasets), optional
        urls: [https://...]      # download URLs, tried in order, optional

A file is taken from ``path``, else from the mirror, else from its URLs (see
:mod:`pipeline.data.fetch`).  A dataset is *mirrored* when every file has a ``mirror``.

**A user's dataset named like one of the project's** (``mydir/iris.yaml`` with
``data.dataset_dirs=[mydir,conf/dataset]``) would write the project's ``data/raw/iris``
(documented as byte-identical to upstream) and ``data/prepared/iris``: it is refused
(:class:`~pipeline.errors.RegistryError`, naming both files) unless its YAML says
``override: true``.  Then it takes the project dataset's place in the selections (the
first registry directory wins) under the name ``user-<name>`` (:data:`USER_PREFIX`): its
outputs are ``data/raw/user-iris`` and ``data/prepared/user-iris``, its MLflow runs are
named ``user-iris``, and a warning names both files.  A copy of the project's YAML (the
same mapping) is the project's dataset, not a user's.

**A broken YAML** (unparsable, unknown key, a refused name) fails only the selections that
include it (:func:`select` with ``failures``): by its name, ``all``, or a task or
``mirrored`` when its ``task:`` / ``mirror:`` entries say so; other selections skip it.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import DatasetError, DataSettingError, RegistryError, UnknownDatasetError
from ..plain import to_plain

log = logging.getLogger(__name__)

#: task (the engine's, :data:`projloss.tasks.TASKS`) -> the label kinds of the datasets it
#: runs on (a dataset YAML's ``task``): multiclass runs on the ordinal datasets' classes
DATASET_TASKS: dict[str, tuple[str, ...]] = {
    "label_ranking": ("label_ranking",),
    "ordinal": ("ordinal",),
    "multilabel": ("multilabel",),
    "multiclass": ("ordinal",),
}
#: the label kinds of the datasets (a dataset YAML's ``task``), in the registry's order
TASKS = tuple(dict.fromkeys(t for kinds in DATASET_TASKS.values() for t in kinds))
#: reader format -> the task whose labels it produces
FORMAT_TASK = {
    "label_ranking": "label_ranking",
    "orreview": "ordinal",
    "mulan_arff": "multilabel",
    "libsvm": "multilabel",
}
#: keywords of a dataset selector (besides task names and dataset names)
KEYWORDS = ("all", "mirrored")
#: the name prefix of a user's dataset that overrides a project dataset of the same name
#: (``override: true``): ``user-iris``.  A valid dataset name (letters, digits, ``_.-``),
#: so it works unquoted in Hydra overrides, as a directory name, in DVC paths and MLflow
#: run names; unlike ``iris@mydir`` it does not depend on the directory's name (two
#: ``mydir``s elsewhere, or a moved directory, would change or collide).
USER_PREFIX = "user-"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_SHA = re.compile(r"^[0-9a-f]{64}$")
_TOP_KEYS = {
    "name",
    "task",
    "type",
    "format",
    "options",
    "sparse",
    "parts",
    "n_splits",
    "homepage",
    "description",
    "paper",
    "files",
    "override",
}
#: the per-dataset record of verified checksums in data/raw/<name>/ (sha256sum format)
CHECKSUMS = "SHA256SUMS"
_FILE_KEYS = {"name", "bytes", "sha256", "mirror", "path", "urls", "url"}


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset and where to get it."""

    name: str
    sha256: str | None = None
    bytes: int | None = None
    mirror: str | None = None
    path: str | None = None
    urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class DatasetSpec:
    """A validated registry entry (see the module docstring for the fields)."""

    name: str
    task: str
    format: str
    files: tuple[FileSpec, ...]
    parts: dict[str, str]
    n_splits: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    sparse: bool | None = None
    type: str | None = None
    homepage: str | None = None
    description: str | None = None
    paper: dict[str, Any] | None = None
    source: Path | None = None
    override: bool = False

    @property
    def mirrored(self) -> bool:
        """True when every file has a copy in the local mirror."""
        return all(f.mirror for f in self.files)

    @property
    def has_split(self) -> bool:
        """True when the dataset ships its own train/test split."""
        return "train" in self.parts

    def file(self, name: str) -> FileSpec:
        """The file entry called ``name``."""
        for f in self.files:
            if f.name == name:
                return f
        raise RegistryError(f"dataset {self.name!r} has no file {name!r}")

    def part_files(self, split: int | None = None) -> dict[str, str]:
        """Part name -> file name, with ``{split}`` filled in for indexed splits."""
        if self.n_splits is None:
            return dict(self.parts)
        if split is None or not 0 <= split < self.n_splits:
            raise DataSettingError(
                f"data.ordinal_split={split!r} is out of range (dataset {self.name!r} has the "
                f"splits 0..{self.n_splits - 1}); use an integer in 0..{self.n_splits - 1}, a "
                "list of them or 'all'"
            )
        return {part: tmpl.format(split=split) for part, tmpl in self.parts.items()}

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], source: Path | None = None) -> DatasetSpec:
        """Validate a registry mapping (a parsed YAML file or a Hydra ``dataset`` node)."""
        m = to_plain(mapping)
        where = f" in {source}" if source is not None else ""
        if not isinstance(m, dict):
            raise RegistryError(f"a dataset entry must be a mapping{where}")
        name = m.get("name") or (source.stem if source is not None else None)
        if not isinstance(name, str) or not _NAME.match(name):
            raise RegistryError(f"invalid or missing dataset name {name!r}{where}")
        if source is not None and name != source.stem:
            raise RegistryError(
                f"dataset name {name!r} differs from its file name {source.name!r}; "
                "Hydra selects datasets by file name, so they must agree"
            )
        ctx = f"dataset {name!r}{where}"

        def fail(msg: str) -> RegistryError:
            return RegistryError(f"{ctx}: {msg}")

        unknown = sorted(set(m) - _TOP_KEYS)
        if unknown:
            raise fail(f"unknown key(s) {unknown}; valid: {sorted(_TOP_KEYS)}")
        task, fmt = m.get("task"), m.get("format")
        if task not in TASKS:
            raise fail(f"task must be one of {list(TASKS)}, got {task!r}")
        if fmt not in FORMAT_TASK:
            raise fail(f"format must be one of {sorted(FORMAT_TASK)}, got {fmt!r}")
        if FORMAT_TASK[fmt] != task:
            raise fail(f"format {fmt!r} gives {FORMAT_TASK[fmt]} labels, not {task}")
        files = tuple(_file_spec(f, fail) for f in (m.get("files") or []))
        if not files:
            raise fail("'files' must list at least one file")
        names = [f.name for f in files]
        if len(set(names)) != len(names):
            raise fail("file names must be unique")
        parts = m.get("parts")
        if not isinstance(parts, dict) or set(parts) not in ({"all"}, {"train", "test"}):
            raise fail("'parts' must be {all: <file>} or {train: <file>, test: <file>}")
        if not all(isinstance(v, str) for v in parts.values()):
            raise fail("'parts' values must be file names")
        n_splits = m.get("n_splits")
        templated = any("{split}" in v for v in parts.values())
        if n_splits is not None:
            if isinstance(n_splits, bool) or not isinstance(n_splits, int) or n_splits < 1:
                raise fail(f"n_splits must be a positive integer, got {n_splits!r}")
            if not templated:
                raise fail("n_splits is set but the part names have no '{split}'")
        elif templated:
            raise fail("the part names contain '{split}' but n_splits is not set")
        splits: Iterable[int | None] = range(n_splits) if n_splits else [None]
        for s in splits:
            for part, tmpl in parts.items():
                fname = tmpl.format(split=s) if s is not None else tmpl
                if fname not in names:
                    raise fail(f"part {part!r} uses file {fname!r}, which 'files' does not list")
        options = m.get("options") or {}
        if not isinstance(options, dict):
            raise fail("'options' must be a mapping")
        sparse = m.get("sparse")
        if sparse not in (None, True, False):
            raise fail(f"'sparse' must be true, false or null, got {sparse!r}")
        paper = m.get("paper")
        if paper is not None and not isinstance(paper, dict):
            raise fail("'paper' must be a mapping")
        override = m.get("override", False)
        if not isinstance(override, bool):
            raise fail(f"'override' must be true or false, got {override!r}")
        return cls(
            name=name,
            task=task,
            format=fmt,
            files=files,
            parts=dict(parts),
            n_splits=n_splits,
            options=dict(options),
            sparse=sparse,
            type=m.get("type"),
            homepage=m.get("homepage"),
            description=m.get("description"),
            paper=paper,
            source=source,
            override=override,
        )


def _file_spec(entry: Any, fail: Any) -> FileSpec:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise fail(f"each file needs a 'name', got {entry!r}")
    unknown = sorted(set(entry) - _FILE_KEYS)
    if unknown:
        raise fail(f"file {entry['name']!r}: unknown key(s) {unknown}")
    fname = entry["name"]
    if "/" in fname or "\\" in fname or fname.startswith(".") or fname == CHECKSUMS:
        raise fail(f"file name {fname!r} must be a plain file name (not {CHECKSUMS})")
    sha = entry.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not _SHA.match(sha.lower())):
        raise fail(f"file {fname!r}: sha256 must be 64 hex digits, got {sha!r}")
    size = entry.get("bytes")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise fail(f"file {fname!r}: bytes must be a non-negative integer, got {size!r}")
    urls = entry.get("urls") or []
    if isinstance(urls, str):
        urls = [urls]
    if entry.get("url"):
        urls = [entry["url"], *urls]
    if not all(isinstance(u, str) for u in urls):
        raise fail(f"file {fname!r}: urls must be strings")
    if not (entry.get("mirror") or entry.get("path") or urls):
        raise fail(f"file {fname!r} has no source: give 'path', 'mirror' or 'urls'")
    return FileSpec(
        name=fname,
        sha256=sha.lower() if sha else None,
        bytes=size,
        mirror=entry.get("mirror"),
        path=entry.get("path"),
        urls=tuple(urls),
    )


# libyaml's C parser when available: the ordinal files list 60 files each.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CACHE: dict[Path, tuple[tuple[int, int], DatasetSpec]] = {}
_RAW: dict[Path, tuple[tuple[int, int], Any]] = {}


def load_mapping(path: Path) -> dict[str, Any]:
    """One dataset YAML file as written (a copy; parsed once while the file is unchanged):
    the mapping :func:`load_spec` validates, and the ``dataset`` node of a run config
    (:func:`pipeline.config.experiments.dataset_node`)."""
    path = Path(path).resolve()
    try:
        st = path.stat()
        key = (st.st_mtime_ns, st.st_size)
        if path not in _RAW or _RAW[path][0] != key:
            with open(path, encoding="utf-8") as f:
                data = yaml.load(f, Loader=_Loader)  # a safe loader (C or Python)
            _RAW[path] = (key, data or {})
    except yaml.YAMLError as exc:
        raise RegistryError(f"cannot parse dataset file {path}: {exc}") from exc
    return copy.deepcopy(_RAW[path][1])


def load_spec(path: Path) -> DatasetSpec:
    """Read and validate one dataset YAML file (cached while the file is unchanged).

    A file outside the project's registry (``conf/dataset/``) named like one of its
    datasets is refused, or renamed ``user-<name>`` with ``override: true`` (see the
    module docstring and :func:`_check_clash`).
    """
    path = Path(path).resolve()
    st = path.stat()
    key = (st.st_mtime_ns, st.st_size)
    if path in _CACHE and _CACHE[path][0] == key:
        spec = _CACHE[path][1]
    else:
        spec = DatasetSpec.from_mapping(load_mapping(path), source=path)
        _CACHE[path] = (key, spec)
    return _check_clash(spec, path)


def project_registry() -> Path | None:
    """The project's own registry directory (``<root>/conf/dataset``), resolved; None when
    the project root cannot be found."""
    from ..errors import PipelineError
    from ..paths import conf_dir

    try:
        return (conf_dir() / "dataset").resolve()
    except PipelineError:
        return None


#: the overriding user files already announced (one warning per file and process)
_WARNED: set[Path] = set()


def _check_clash(spec: DatasetSpec, path: Path) -> DatasetSpec:
    """``spec`` as the registry uses it: refused when a user's file (outside the project's
    registry) takes the name of a project dataset, renamed ``user-<name>`` (with a warning
    naming both files) when it says ``override: true``; unchanged otherwise."""
    project = project_registry()
    if project is None or path.parent == project:
        return spec
    theirs = project / path.name
    if not theirs.is_file() or load_mapping(theirs) == load_mapping(path):
        return spec  # no clash, or a copy of the project's YAML (the same dataset)
    new = USER_PREFIX + spec.name
    if not spec.override:
        raise RegistryError(
            f"dataset {spec.name!r} of {path} has the name of the project's dataset "
            f"{theirs}, whose data/raw/{spec.name} and data/prepared/{spec.name} it would "
            f"overwrite; rename it (its file and name:), or add `override: true` to {path} to "
            f"use it in that dataset's place under the name {new!r}"
        )
    if path not in _WARNED:
        _WARNED.add(path)
        log.warning(
            "warning: dataset %r of %s (override: true) replaces the project's %s under the "
            "name %r: its files go to data/raw/%s and data/prepared/%s, its MLflow runs are "
            "named %s",
            spec.name,
            path,
            theirs,
            new,
            new,
            new,
            new,
        )
    return dataclasses.replace(spec, name=new)


@dataclass(frozen=True)
class BrokenFile:
    """A dataset YAML the registry refuses, with what can still be read of it: the
    ``task:`` and whether every file has a ``mirror`` (None: unknown), so that only the
    selections that include it fail (:func:`select`)."""

    name: str
    path: Path
    error: RegistryError
    task: str | None = None
    mirrored: bool | None = None

    def selected_by(self, item: str) -> bool:
        """Whether the selector item ``item`` includes this file."""
        if item == "all" or item == self.name or item == USER_PREFIX + self.name:
            return True
        if item == "mirrored":
            return bool(self.mirrored)
        return item in TASKS and self.task == item


def _broken(path: Path, error: RegistryError) -> BrokenFile:
    task = mirrored = None
    try:
        m = load_mapping(path)
    except RegistryError:
        m = None
    if isinstance(m, dict):
        task = m.get("task") if isinstance(m.get("task"), str) else None
        files = m.get("files")
        if isinstance(files, list):
            mirrored = bool(files) and all(isinstance(f, dict) and f.get("mirror") for f in files)
    return BrokenFile(path.stem, path, error, task, mirrored)


def list_specs(
    dirs: Sequence[Path], broken: dict[str, BrokenFile] | None = None
) -> dict[str, DatasetSpec]:
    """Every dataset defined in ``dirs`` (``*.yaml``), by name; the first directory wins
    (a later file of the same file name is not read).

    A file the registry refuses raises its :class:`RegistryError`, or, when ``broken`` is
    given, is recorded there (by file name without ``.yaml``) and left out.
    """
    specs: dict[str, DatasetSpec] = {}
    seen: set[str] = set()
    for d in dirs:
        if not Path(d).is_dir():
            continue
        for path in sorted(Path(d).glob("*.yaml")):
            if path.stem in seen:
                continue
            seen.add(path.stem)
            try:
                spec = load_spec(path)
            except RegistryError as exc:
                if broken is None:
                    raise
                broken[path.stem] = _broken(path.resolve(), exc)
                continue
            specs.setdefault(spec.name, spec)
    return dict(sorted(specs.items(), key=lambda kv: (TASKS.index(kv[1].task), kv[0].lower())))


def get_spec(name: str | Mapping[str, Any] | DatasetSpec, dirs: Sequence[Path]) -> DatasetSpec:
    """The dataset called ``name`` (or a spec given as a mapping, validated).

    ``user-<name>`` also finds a user's ``<name>.yaml`` that overrides a project dataset
    (the name its outputs and runs carry).
    """
    if isinstance(name, DatasetSpec):
        return name
    if not isinstance(name, str):
        return DatasetSpec.from_mapping(name)
    for d in dirs:
        path = Path(d) / f"{name}.yaml"
        if path.is_file():
            return load_spec(path)
    if name.startswith(USER_PREFIX):
        base = name.removeprefix(USER_PREFIX)
        for d in dirs:
            path = Path(d) / f"{base}.yaml"
            if path.is_file() and path.resolve().parent != project_registry():
                spec = load_spec(path)
                if spec.name == name:
                    return spec
    valid = list(list_specs(dirs, broken={}))
    raise UnknownDatasetError(
        f"unknown dataset {name!r}; valid names: {', '.join(valid)}. "
        f"To add a dataset, write {Path(dirs[0]) / (name + '.yaml')} (docs/guide/datasets.md)."
    )


def select(
    selector: str | Sequence[str] | None,
    dirs: Sequence[Path],
    failures: dict[str, DatasetError] | None = None,
    skipped: dict[str, DatasetError] | None = None,
) -> list[DatasetSpec]:
    """The datasets a selector names, in registry order, without duplicates.

    A selector is a dataset name, ``all``, ``mirrored`` (every dataset with a mirror copy),
    a task name (every dataset of that task), or a list (or comma-separated string) of
    those.  ``None`` means ``mirrored``.

    A broken YAML (:class:`BrokenFile`) the selector includes raises its error, or, when
    ``failures`` is given, is recorded there (file name -> error) so that the caller goes
    on with the others; one it does not include is left out (recorded in ``skipped``).
    """
    if selector is None:
        selector = "mirrored"
    items = [s.strip() for s in selector.split(",")] if isinstance(selector, str) else selector
    items = [str(s) for s in items if str(s).strip()]
    if not items:
        raise ValueError("empty dataset selector; give names, 'all', 'mirrored' or a task")
    broken: dict[str, BrokenFile] = {}
    specs = list_specs(dirs, broken)
    chosen: dict[str, DatasetSpec] = {}
    hit: dict[str, DatasetError] = {}
    for item in items:
        hit.update({n: b.error for n, b in broken.items() if b.selected_by(item)})
        if item == "all":
            chosen.update(specs)
        elif item == "mirrored":
            chosen.update({n: s for n, s in specs.items() if s.mirrored})
        elif item in TASKS and item not in specs:
            chosen.update({n: s for n, s in specs.items() if s.task == item})
        elif not any(b.name == item or USER_PREFIX + b.name == item for b in broken.values()):
            spec = get_spec(item, dirs)
            chosen[spec.name] = spec
    if hit and failures is None:
        raise next(iter(hit.values()))
    if failures is not None:
        failures.update(hit)
    if skipped is not None:
        skipped.update({n: b.error for n, b in broken.items() if n not in hit})
    order = {n: i for i, n in enumerate(specs)}
    return sorted(chosen.values(), key=lambda s: order.get(s.name, len(order)))


#: the OmegaConf resolver of :func:`task_datasets` (``conf/config.yaml``'s sweep)
RESOLVER = "registry_datasets"


def task_datasets(
    task: str, dirs: Sequence[str | Path] | str | None = None, form: str = "list"
) -> list[str] | str:
    """The datasets a task can run on that need no download, in registry order.

    Derived from the ``task:`` of each dataset YAML in ``dirs`` (default ``conf/dataset``):
    every dataset of the task whose files all have a ``mirror`` copy or a local ``path``
    -- the paper's mirrored datasets and a user's own, not the upstream-only mediamill
    and tmc2007.  ``task`` is a dataset task or a pipeline task (``multiclass`` runs on
    the ordinal datasets).  These are what a bare ``--multirun`` sweeps (the resolver
    ``${registry_datasets:${task.name},${data.dataset_dirs},sweep}`` of
    ``conf/config.yaml``) and what the "valid datasets" errors list.  ``form="sweep"``
    joins them with commas (Hydra's sweep syntax).  A broken YAML that is (or may be, its
    ``task:`` unreadable) of this task raises its :class:`RegistryError`; one of another
    task is left out.

    >>> task_datasets("label_ranking")  # the committed conf/dataset YAMLs
    ['authorship', 'glass', 'iris', 'vehicle', 'vowel', 'wine']
    """
    from ..paths import project_root, resolve

    wanted = (task,) if task in TASKS else DATASET_TASKS.get(task)
    if not wanted:
        valid = sorted({*TASKS, *DATASET_TASKS})
        raise RegistryError(f"unknown task {task!r}; valid tasks: {', '.join(valid)}")
    if dirs is None:
        dirs = ["conf/dataset"]
    elif isinstance(dirs, str | Path):
        dirs = [dirs]
    root = project_root()
    broken: dict[str, BrokenFile] = {}
    specs = list_specs([resolve(str(d), root) for d in dirs], broken)
    for b in broken.values():  # a broken YAML of another task does not stop this one
        if b.task is None or b.task in wanted:
            raise b.error
    # the file name: what dataset=<name> selects (a user's override is named user-<name>)
    names = [
        s.source.stem if s.source is not None else n
        for n, s in specs.items()
        if s.task in wanted and all(f.mirror or f.path for f in s.files)
    ]
    if form == "sweep":
        return ",".join(names)
    if form != "list":
        raise ValueError(f"form must be 'list' or 'sweep', got {form!r}")
    return names


def register_resolver() -> None:
    """Register :func:`task_datasets` as the OmegaConf resolver ``registry_datasets``."""
    from omegaconf import ListConfig, OmegaConf

    def resolver(task: str, dirs: Any = None, form: str = "list") -> Any:
        plain = dirs if dirs is None or isinstance(dirs, str) else list(dirs)
        out = task_datasets(task, plain, form)
        # a ListConfig, not a list: OmegaConf.resolve can store it in place
        return ListConfig(out) if isinstance(out, list) else out

    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, resolver)
