"""Collate declared datasets into one JSONL per dataset type, streaming.

Each declaration's rows are read once: they feed the dataset's metrics, get their prompt
rendered, lose their legacy ``agent_ref``, and either are stamped with their declaring instance
(flat datasets) or become tasks with stable IDs (datasets that declare a taskset). Their task
fields are validated as flat fields, once per source row, so errors cite the source line; for a
task that is its ``task_input``, which holds every task field exactly where the row had it.
Every output is staged as a temp file and renamed only when the whole run succeeded, so a
refused run leaves the previous outputs untouched and source files are never written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

from gym_assets.config.model import (
    ENVIRONMENTS,
    MODELS,
    DatasetType,
    DeclaredDataset,
    bound_resources_server,
)
from gym_assets.config.plugins import SERVERS_PACKAGE
from gym_assets.config.routing import resolve_dataset_agent, taskset_environment_server
from gym_assets.errors import ConfigError, UserError
from gym_assets.fileio import (
    atomic_link,
    atomic_write_text,
    atomic_writer,
    iter_jsonl,
    json_line,
    parse_json_bytes,
)
from gym_assets.modes import COLLATION_MODES, CollationMode, ValidationLevel, ValidationMode
from gym_assets.records import keys
from gym_assets.spill import HashSpill
from gym_assets.tasks.collation_model import (
    CollationInput,
    CollationReport,
    DatasetSummary,
    OutputFile,
)
from gym_assets.tasks.materialize import (
    IdTypeTally,
    MaterializeError,
    materialize_task,
    own_id_field,
    stable_task_id,
)
from gym_assets.tasks.metrics import (
    DatasetMetrics,
    dump_metrics,
    metrics_document,
    sidecar_differences,
)
from gym_assets.tasks.prompts import PromptConfig, load_prompt_config
from gym_assets.tasks.schemas import (
    REQUEST_FIELD,
    SINGLE_AGENT_SCHEMA,
    SchemaLoadError,
    ServerDir,
    TaskSchema,
    load_metrics_hook,
    load_task_schema,
    owner_dir,
    resources_dir,
)
from gym_assets.tasks.task_inputs import request_is_valid
from gym_assets.tasks.validation import TaskDataValidator, resolve_validation_mode

IN_SCOPE_TYPES: Mapping[CollationMode, tuple[DatasetType, ...]] = {
    "train_preparation": ("train", "validation", "benchmark"),
    "example_validation": ("example",),
}
LISTED_DUPLICATES = 5
KEPT_DUPLICATES = 100
PREVIEW_ROWS = 3
PROGRESS_EVERY = 100_000
_MISSING = object()


class _Discarded(Exception):
    """Raised into staged writers to make them drop their temp files."""


class _StagedFile:
    """An output being written to a temp file, with its running digest and row count."""

    def __init__(self, path: Path, handle: IO[bytes]):
        self.path = path
        self.handle = handle
        self.digest = hashlib.sha256()
        self.rows = 0

    def describe(self) -> OutputFile:
        return OutputFile(str(self.path), self.digest.hexdigest(), self.rows)


class _Stage:
    """Temp files of one dataset type, renamed into place together or dropped together."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self.files: list[_StagedFile] = []
        self.aliases: list[tuple[Path, _StagedFile]] = []

    def open(self, path: Path) -> _StagedFile:
        staged = _StagedFile(path, self._stack.enter_context(atomic_writer(path, "wb")))
        self.files.append(staged)
        return staged

    def alias(self, path: Path, staged: _StagedFile) -> _StagedFile:
        """``path`` will be a second name of ``staged`` (linked when the stage commits)."""
        self.aliases.append((path, staged))
        return staged

    def commit(self) -> list[OutputFile]:
        self._stack.close()
        outputs = [staged.describe() for staged in self.files]
        for path, staged in self.aliases:
            atomic_link(staged.path, path)
            outputs.append(OutputFile(str(path), staged.digest.hexdigest(), staged.rows))
        return outputs

    def discard(self) -> None:
        self._stack.__exit__(_Discarded, _Discarded(), None)


@dataclass
class _Plan:
    """One declaration, with everything resolved before any row is read."""

    input: CollationInput
    prepared_path: Path
    prompt: PromptConfig | None
    validator: TaskDataValidator | None
    metrics: DatasetMetrics
    summary: DatasetSummary


class _TypeState:
    """State shared by all declarations of one dataset type (IDs are unique per type)."""

    def __init__(self, track_duplicates: bool, spill_dir: Path):
        self.source_task_index = -1
        self.track_duplicates = track_duplicates
        self.spill_dir = spill_dir
        self.ids: dict[str, HashSpill] = {}  # taskset -> hashes of the IDs seen, not the IDs
        self.duplicates: list[str] = []
        self.duplicate_count = 0

    def record(self, taskset: str, task_id: str) -> None:
        ids = self.ids.get(taskset)
        if ids is None:
            ids = self.ids[taskset] = HashSpill(self.spill_dir, repeats=True)
        ids.add(hash(task_id))

    def find_duplicates(self, plans: Sequence[_Plan]) -> None:
        """Name every ID that a second row repeats, with both places, exactly.

        The first pass kept hashes only; an ID hashed twice is a candidate. This pass reads the
        sources again (only when there is a candidate) for the candidates' real IDs and lines,
        so that a hash collision reports nothing and the report is the one a pass keeping
        every ID would write: in source order, the first place against each later one.
        """
        candidates = {taskset: ids.repeated() for taskset, ids in self.ids.items()}
        first_places: dict[tuple[str, str], str] = {}
        for plan in plans:
            taskset = plan.summary.taskset
            wanted = candidates.get(taskset) if taskset is not None else None
            if taskset is None or not wanted:
                continue
            for line, row in iter_jsonl(plan.input.source_path):
                task_id = stable_task_id(row)
                if task_id is None or hash(task_id) not in wanted:
                    continue
                here = f"{plan.summary.label} line {line}"
                first = first_places.setdefault((taskset, task_id), here)
                if first is here:
                    continue
                self.duplicate_count += 1
                if len(self.duplicates) < KEPT_DUPLICATES:
                    self.duplicates.append(f"{taskset}/{task_id} ({first}; {here})")


def collate(
    config: Mapping[str, Any],
    inputs: Sequence[CollationInput],
    output_dir: Path,
    *,
    conflicts_dir: Callable[[], Path],
    mode: CollationMode = "train_preparation",
    validation: ValidationMode = "auto",
    overwrite_metrics_conflicts: bool = False,
    progress: Callable[[str], None] | None = None,
    servers_package: str = SERVERS_PACKAGE,
) -> CollationReport:
    """Collate the in-scope declarations of ``inputs`` (in the given order) into ``output_dir``.

    Writes ``{type}.jsonl`` and ``{type}_metrics.json`` per in-scope type, one prepared file per
    declaration, and each dataset's metrics sidecar. Refusals are ``UserError``s and leave no
    collated output behind; a metrics conflict writes only the ``*_conflict.json`` files, into
    the directory ``conflicts_dir()`` gives, asked for at the first conflict only (never beside
    a sidecar, which may lie in the configs tree).
    """
    types = in_scope_types(mode)
    validation_mode = resolve_validation_mode(validation, mode)
    report = CollationReport(mode=mode, validation_mode=validation_mode)
    say: Callable[[str], None] = progress or (lambda _message: None)
    _refuse_model_server_datasets(inputs)
    selected = [i for t in types for i in inputs if i.declared.dataset.type == t]
    _check_sources(selected)
    schemas = _SchemaCache(report, servers_package)
    used_paths: set[Path] = set()
    plans = [
        _plan(config, item, output_dir, used_paths, validation_mode, schemas, servers_package)
        for item in selected
    ]
    stages: dict[str, _Stage] = {}
    try:
        for dataset_type in types:
            type_plans = [p for p in plans if p.summary.type == dataset_type]
            if type_plans:
                stages[dataset_type] = _collate_type(
                    dataset_type, type_plans, output_dir, validation_mode, report, say
                )
        conflicts = _settle_metrics(
            plans,
            stages,
            output_dir,
            _ConflictFiles(conflicts_dir),
            report,
            overwrite_metrics_conflicts,
        )
    except BaseException:
        for stage in stages.values():
            stage.discard()
        raise
    for stage in stages.values():
        report.outputs.extend(stage.commit())
    report.outputs.sort(key=lambda output: output.path)
    report.datasets = [plan.summary for plan in plans]
    report.validation_reports = [
        plan.summary.validation for plan in plans if plan.summary.validation is not None
    ]
    report.tasksets = sorted({plan.summary.taskset for plan in plans if plan.summary.taskset})
    if conflicts:
        raise UserError(
            "Found conflicting aggregate metrics that need to be corrected: "
            + "; ".join(conflicts)
            + f". {CONFLICT_FIX}"
        )
    return report


def in_scope_types(mode: str) -> tuple[DatasetType, ...]:
    """The dataset types ``mode`` collates, in the order their files are written."""
    for known, types in IN_SCOPE_TYPES.items():  # any string may come in: no typed lookup
        if known == mode:
            return types
    raise UserError(f"unknown collation mode {mode!r}; use one of {', '.join(COLLATION_MODES)}")


def _refuse_model_server_datasets(inputs: Sequence[CollationInput]) -> None:
    on_models = [i.label for i in inputs if i.declared.instance.kind == MODELS]
    if on_models:
        raise ConfigError(
            f"Datasets cannot be declared on model servers: {on_models}. Declare them on the "
            "resources server or agent whose tasks they are."
        )


def _check_sources(selected: Sequence[CollationInput]) -> None:
    """Refuse before anything is written if a source file is missing (one that is there but
    not a regular file is refused by the reader, by what it is)."""
    for item in selected:
        if item.source_path.exists():
            continue
        dataset = item.declared.dataset
        hint = (
            "run `gym-assets prepare` for this benchmark first"
            if dataset.prepare_script
            else "check the dataset's jsonl_fpath"
        )
        raise UserError(
            f"dataset '{dataset.name}' of '{item.declared.instance.name}' is missing on disk; "
            + hint,
            path=item.source_path,
        )


class _SchemaCache:
    """Loads each server's schema once per run; a broken one is skipped with one warning."""

    def __init__(self, report: CollationReport, package: str):
        self._report = report
        self._package = package
        self._loaded: dict[ServerDir, TaskSchema | None] = {}

    def get(self, where: ServerDir | None) -> TaskSchema | None:
        if where is None:
            return None
        if where not in self._loaded:
            try:
                schema = load_task_schema(where.kind, where.implementation, package=self._package)
            except SchemaLoadError as exc:
                self._report.warn(
                    f"Skipping task_data validation for {where.implementation}: {exc}"
                )
                schema = None
            self._loaded[where] = schema
        return self._loaded[where]


def _prepared_path(item: CollationInput, output_dir: Path, used: set[Path]) -> Path:
    """First unused of ``<stem>_prepare[.<instance>[.<dataset>[.<k>]]].jsonl``."""
    stem = item.source_path.stem
    instance = item.declared.instance.name
    dataset = item.declared.dataset.name
    candidates = [
        f"{stem}_prepare.jsonl",
        f"{stem}_prepare.{instance}.jsonl",
        f"{stem}_prepare.{instance}.{dataset}.jsonl",
    ]
    k = 2
    while True:
        for name in candidates:
            path = output_dir / name
            if path not in used:
                used.add(path)
                return path
        candidates = [f"{stem}_prepare.{instance}.{dataset}.{k}.jsonl"]
        k += 1


def _plan(
    config: Mapping[str, Any],
    item: CollationInput,
    output_dir: Path,
    used: set[Path],
    validation_mode: ValidationLevel,
    schemas: _SchemaCache,
    package: str,
) -> _Plan:
    declared = item.declared
    dataset = declared.dataset
    owner = owner_dir(config, declared.instance)
    environment: ServerDir | None = None
    if dataset.taskset is not None:
        # Route validation runs first: collation drops the declaring instance and any pin, so
        # a pin on a taskset dataset of any type is refused here rather than silently lost.
        resolve_dataset_agent(
            config, declared.instance.name, dataset.agent, taskset=dataset.taskset
        )
        server = taskset_environment_server(config, dataset.taskset)
        environment = ServerDir(ENVIRONMENTS, server.implementation)
        bound = resources_dir(config, bound_resources_server(server.config))
        owner = bound or owner
    prompt = None
    if item.prompt_config_path is not None:
        if dataset.type != "benchmark":
            raise ConfigError(
                f"dataset '{dataset.name}' of '{declared.instance.name}' has a prompt_config, "
                f"but prompt configs apply to benchmark datasets only (this one is "
                f"{dataset.type}); build responses_create_params.input in the data instead"
            )
        prompt = load_prompt_config(item.prompt_config_path)
    prepared = _prepared_path(item, output_dir, used)
    summary = DatasetSummary(
        label=item.label,
        type=dataset.type,
        source=str(item.source_path),
        prepared=str(prepared),
        taskset=dataset.taskset,
    )
    validator = None
    if validation_mode != "off":
        validator = _validator(item, environment, owner, schemas)
    hook_dir = owner_dir(config, declared.instance)
    hook = None
    if hook_dir is not None:
        hook = load_metrics_hook(hook_dir.kind, hook_dir.implementation, package=package)
    hook_owner = hook_dir.implementation if hook_dir else ""
    metrics = DatasetMetrics(hook, hook_owner, spill_dir=output_dir)
    return _Plan(item, prepared, prompt, validator, metrics, summary)


def _validator(
    item: CollationInput,
    environment: ServerDir | None,
    owner: ServerDir | None,
    schemas: _SchemaCache,
) -> TaskDataValidator | None:
    """Taskset datasets: the routed environment's schema; flat ones: the single-agent schema."""
    if environment is None:
        env_schema: TaskSchema | None = SINGLE_AGENT_SCHEMA
        env_name = "single-agent"
    else:
        env_schema = schemas.get(environment)
        env_name = environment.implementation
    owner_schema = schemas.get(owner)
    if env_schema is None and owner_schema is None:
        return None
    return TaskDataValidator(
        server_name=owner.implementation if owner_schema and owner else env_name,
        dataset_fpath=str(item.source_path),
        environment=env_schema,
        owner=owner_schema,
    )


def _collate_type(
    dataset_type: str,
    plans: Sequence[_Plan],
    output_dir: Path,
    validation_mode: ValidationLevel,
    report: CollationReport,
    say: Callable[[str], None],
) -> _Stage:
    """Write the type's declarations and its ``{type}.jsonl``: with one declaration that file
    is the same bytes as the declaration's prepared file, so it becomes a second name of it."""
    stage = _Stage()
    collated_path = output_dir / f"{dataset_type}.jsonl"
    try:
        collated = stage.open(collated_path) if len(plans) > 1 else None
        state = _TypeState(track_duplicates=validation_mode != "off", spill_dir=output_dir)
        prepared: _StagedFile | None = None
        for plan in plans:
            say(f"{dataset_type}: collating {plan.summary.label} from {plan.input.source_path}")
            prepared = stage.open(plan.prepared_path)
            outputs = (prepared,) if collated is None else (prepared, collated)
            _collate_dataset(plan, state, outputs, report, say)
            _finish_dataset(plan, validation_mode, report)
        if state.track_duplicates:
            state.find_duplicates(plans)
        _check_duplicates(state, validation_mode, report)
        if collated is None:
            assert prepared is not None, "a type is collated only when it has a declaration"
            collated = stage.alias(collated_path, prepared)
    except BaseException:
        stage.discard()
        raise
    report.rows += collated.rows
    return stage


def _collate_dataset(
    plan: _Plan,
    state: _TypeState,
    outputs: tuple[_StagedFile, ...],
    report: CollationReport,
    say: Callable[[str], None],
) -> None:
    """The per-row loop; kept flat because it runs once per source row."""
    item, summary, metrics, validator, prompt = (
        plan.input,
        plan.summary,
        plan.metrics,
        plan.validator,
        plan.prompt,
    )
    source = item.source_path
    instance = item.declared.instance.name
    taskset = item.declared.dataset.taskset
    repeats = item.declared.dataset.num_repeats
    # Bound methods and local counters: this loop is the whole cost of a run.
    add_metrics = metrics.add_row
    validate = validator.validate if validator is not None else None
    writes = [(staged.handle.write, staged.digest.update) for staged in outputs]
    preview = report.preview
    ids = IdTypeTally()
    source_rows = 0
    for line, row in iter_jsonl(source):
        valid_request = request_is_valid(row.get(REQUEST_FIELD))  # asked once per row
        if not add_metrics(row, repeats, valid_request):
            summary.malformed_tasks += 1
        if prompt is not None:
            row = prompt.apply(row, source=source, line=line)
            valid_request = request_is_valid(row[REQUEST_FIELD])  # the rendered request
        if row.pop("agent_ref", _MISSING) is not _MISSING:
            summary.agent_ref_stripped += 1
        state.source_task_index += 1
        own_id = own_id_field(row)
        if own_id is not None and type(own_id[1]) is not str:  # the common case costs no call
            ids.note(own_id, line)
        if taskset is None:
            row["task_source"] = instance
            if validate is not None:
                validate(row, line, valid_request=valid_request)
        else:  # a task carries no task_source: materialization would drop the stamp
            row = _task_of(row, own_id, taskset, state, line, summary)
            if validate is not None:
                validate(row["task_input"], line, task_input=True, valid_request=valid_request)
        try:
            data = json_line(row)
        except UnicodeEncodeError:
            raise UserError(
                "a string holds a lone surrogate escape (\\ud800-\\udfff), which cannot be "
                "written as UTF-8; fix the escape in the data",
                path=source,
                line=line,
            ) from None
        if repeats != 1:
            data *= repeats
        for write, digest in writes:
            write(data)
            digest(data)
        source_rows += 1
        if len(preview) < PREVIEW_ROWS:
            preview.extend([row] * min(repeats, PREVIEW_ROWS - len(preview)))
        if source_rows % PROGRESS_EVERY == 0:
            say(f"  {summary.label}: {source_rows} rows")
    summary.non_string_ids = ids.converted
    note = ids.warning(source)
    if note is not None:
        report.warn(note)
    summary.source_rows = source_rows
    summary.rows_written = source_rows * repeats
    for staged in outputs:
        staged.rows += source_rows * repeats
    if summary.source_rows == 0:
        report.warn(f"{source}: has no rows; dataset {summary.label} contributes nothing")


def _task_of(
    row: dict[str, Any],
    own_id: tuple[str, Any] | None,
    taskset: str,
    state: _TypeState,
    line: int,
    summary: DatasetSummary,
) -> dict[str, Any]:
    """Materialize ``row`` and put its collector identity keys back at the top level."""
    own_text = own_id[1] if own_id is not None and type(own_id[1]) is str else None
    try:
        task = materialize_task(row, taskset, state.source_task_index, own_id=own_text)
    except MaterializeError as exc:
        raise UserError(str(exc), path=summary.source, line=line) from None
    if own_id is None and keys.TASK_INDEX not in row:
        summary.positional_ids += 1
    elif state.track_duplicates:
        state.record(taskset, task["task_id"]["task_id"])
    for key in keys.IDENTITY_KEYS:
        if key in row:
            task[key] = row[key]
    return task


def _finish_dataset(plan: _Plan, validation_mode: ValidationLevel, report: CollationReport) -> None:
    summary = plan.summary
    source = plan.input.source_path
    report.tasks += summary.source_rows
    validator = plan.validator
    if validator is not None:
        summary.validation = validator.report.to_dict()
        if not validator.report.clean:
            text = validator.report.summary()
            report.validation_summary += text + "\n"
            if validation_mode == "error":
                raise UserError(text)
            report.warn("[task_data validation]\n" + text)
    if summary.positional_ids:
        report.warn(
            f"{source}: {summary.positional_ids} rows of taskset '{summary.taskset}' have no "
            "task_id, problem_id, instance_id, so their task IDs are positions in this "
            "collation and change when datasets are added or reordered. Write a stable "
            "task_id in the dataset's preparation script."
        )
    if summary.agent_ref_stripped:
        report.warn(
            f"{source}: stripped legacy agent_ref from {summary.agent_ref_stripped} rows "
            "(deprecated: routing comes from the config declaration, not from the rows).",
            DeprecationWarning,
        )
    if summary.malformed_tasks:
        report.warn(
            f"{source}: {summary.malformed_tasks} rows look like tasks but have an invalid "
            "task_id or a non-object task_input; they are left out of the metrics."
        )


def _check_duplicates(
    state: _TypeState, validation_mode: ValidationLevel, report: CollationReport
) -> None:
    report.duplicate_task_id_count += state.duplicate_count
    report.duplicate_task_ids.extend(state.duplicates)
    if not state.duplicate_count or validation_mode == "off":
        return
    listed = "; ".join(state.duplicates[:LISTED_DUPLICATES])
    more = " ..." if state.duplicate_count > LISTED_DUPLICATES else ""
    text = (
        f"{state.duplicate_count} task IDs name more than one task in their taskset: {listed}{more}"
    )
    report.validation_summary += text + "\n"
    if validation_mode == "error":
        raise UserError(text)
    report.warn("[task_data validation]\n" + text)


def declaration_document(dataset_type: str, declared: DeclaredDataset) -> dict[str, Any]:
    """The declaration as stored beside its metrics, without the routing keys.

    Routing keys are left out so that a flat and a taskset declaration of the same file share
    one sidecar; benchmark-only keys are left out of other datasets.
    """
    exclude = {"agent", "taskset"}
    if dataset_type != "benchmark":
        exclude |= {"prepare_script", "prepare_dependencies", "prompt_config"}
    elif declared.dataset.prepare_dependencies is None:
        exclude.add("prepare_dependencies")  # sidecars written before the field stay valid
    return declared.dataset.model_dump(mode="json", exclude=exclude)


CONFLICT_FIX = (
    "If the change is intended, copy each new file over the stored one it names (the config "
    "change sensor then collates again by itself), or collate with "
    "overwrite_metrics_conflicts: true in the run config (CLI: --overwrite-metrics-conflicts); "
    "if it is not, undo the change to the data or its declaration"
)
"""What a metrics conflict asks of the user: said once at the end of the error message, and in
the operations guide's troubleshooting (a test holds them to the same words)."""


class _ConflictFiles:
    """Where each conflicting document of one run goes: ``<stem>_conflict.json`` in one
    directory, numbered when two stored documents of the run share a name."""

    def __init__(self, directory: Callable[[], Path]):
        self.directory = directory
        self.paths: dict[Path, Path] = {}

    def of(self, stored: Path) -> Path:
        if stored not in self.paths:
            directory, taken = self.directory(), set(self.paths.values())
            path, number = directory / f"{stored.stem}_conflict.json", 1
            while path in taken:
                number += 1
                path = directory / f"{stored.stem}_conflict.{number}.json"
            self.paths[stored] = path
        return self.paths[stored]


def _settle_metrics(
    plans: Sequence[_Plan],
    stages: dict[str, _Stage],
    output_dir: Path,
    conflict_files: _ConflictFiles,
    report: CollationReport,
    overwrite: bool,
) -> list[str]:
    """Write or check every sidecar; drop the stages a conflict blocks. Returns conflicts."""
    conflicts: list[str] = []
    settle = partial(
        _settle_document,
        conflict_files=conflict_files,
        overwrite=overwrite,
        conflicts=conflicts,
        report=report,
    )
    for plan in plans:
        declaration = declaration_document(plan.summary.type, plan.input.declared)
        document = metrics_document(declaration, plan.metrics.to_dict())
        settle(plan.input.sidecar_path, document)
    dataset_conflict = bool(conflicts)
    for dataset_type, stage in list(stages.items()):
        type_plans = [p for p in plans if p.summary.type == dataset_type]
        merged = DatasetMetrics(spill_dir=output_dir)
        for plan in type_plans:
            merged.merge(plan.metrics)
        declaration = declaration_document(dataset_type, type_plans[0].input.declared)
        summaries = report.metrics[dataset_type] = merged.to_dict()
        document = metrics_document(declaration, summaries)
        path = output_dir / f"{dataset_type}_metrics.json"
        before = len(conflicts)
        settle(path, document)
        if dataset_conflict or len(conflicts) > before:
            stage.discard()
            del stages[dataset_type]
    return conflicts


def _settle_document(
    path: Path,
    document: dict[str, Any],
    *,
    conflict_files: _ConflictFiles,
    overwrite: bool,
    conflicts: list[str],
    report: CollationReport,
) -> None:
    """Keep a matching stored document as is; write a new one; report a conflicting one (its
    new document written to a conflict file), or replace it when told to overwrite."""
    text = dump_metrics(document)
    if path.is_file():
        try:
            stored = parse_json_bytes(path.read_bytes())
        except ValueError:
            stored = {"(unreadable)": True}
        differences = sidecar_differences(stored, document)
        if not differences:
            report.outputs.append(_json_output(path, path.read_bytes()))
            return
        report.warn(f"{path}: metrics differ from the stored ones: " + "; ".join(differences[:10]))
        if not overwrite:
            conflict_path = conflict_files.of(path)
            _write(conflict_path, text)
            conflicts.append(f"{path} differs from the new metrics in {conflict_path}")
            return
    _write(path, text)
    report.outputs.append(_json_output(path, text.encode("utf-8")))


def _write(path: Path, text: str) -> None:
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise UserError(
            f"cannot write metrics ({exc.strerror}); give the dataset a writable sidecar_dir",
            path=path,
        ) from None


def _json_output(path: Path, data: bytes) -> OutputFile:
    return OutputFile(str(path), hashlib.sha256(data).hexdigest(), None)
