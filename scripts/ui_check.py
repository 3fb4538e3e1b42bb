"""``make ui-check``: the Dagster UI as a user meets it, driven through its own API and a browser.

    .venv/bin/python scripts/ui_check.py [--benchmark units] [--out DIR] [--keep]

In a temporary directory: a ``DAGSTER_HOME`` with the repo's ``deploy/instance/dagster.yaml``,
a copy of ``configs/`` and an empty data root (``gym_assets/local_dagster.py``). Starts
``dagster-webserver`` on a free loopback port, waits until the code location is loaded, stops
the sensors and schedules that launch runs (so that only the run launched here runs), starts
``dagster-daemon run``, adds the benchmark's partition and launches one ``benchmark_job`` run
of it through GraphQL, as the UI's "Materialize" does. Once the run ends it asserts, through
GraphQL, that the run succeeded, that every check of the job's assets ran in that run on that
partition and passed, and that each asset's materialization of the partition carries its
metadata (a task count, absolute paths that exist).

With Debian's ``chromium`` on PATH it then saves screenshots of the asset graph, the
partition's materialization and a check's latest execution into ``--out`` (default
``.ui-check/``); each page must show what it is for in its rendered text and must not be
blank. Without chromium it says it skipped them.

Then, each followed by its page's screenshot: ``eval_plan``'s checks launched as the Checks
tab's "Execute all" sends them (no partition: the run must decline them cleanly) and as the
Launchpad sends a checks-only run of one partition (each check must pass on that partition,
nothing be materialized); one harness's conformance run with another harness never run, after
which ``conformance_automation_sensor`` must re-render ``conformance_matrix``; and a
``benchmark_job`` run that fails, which must leave one ``run_failed`` line in the alert log.

Everything it started is stopped at the end, on failure and on SIGINT/SIGTERM too. Exit codes:
0 all good; 1 an assertion failed (one line says which); 2 the UI could not be started
(a missing program, a port taken, a code location that does not load).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gym_assets.local_dagster import LocalHome, free_port, start_program, stop_program  # noqa: E402
from gym_assets.process_tree import Tracked, signal_all  # noqa: E402

BIN = Path(sys.executable).parent
LOCATION = "gym_assets"
REPOSITORY = "__repository__"
JOB = "benchmark_job"
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")
START_TIMEOUT_S = 120.0
RUN_TIMEOUT_S = 180.0
PAGE_BUDGET_MS = 20_000  # the browser's virtual time for a page to load and render
BROWSER_TIMEOUT_S = 90.0
WINDOW = (1400, 1000)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
MIN_COLOURS = 16  # a blank or error-only page has a handful of flat colours
MIN_INK_SHARE = 0.02  # share of pixels that differ from the page's background colour


class CannotStart(Exception):
    """The UI could not be brought up: exit 2."""


class CheckFailed(Exception):
    """An assertion about what the UI shows failed: exit 1."""


# --- GraphQL -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphQL:
    url: str

    def __call__(self, query: str, **variables: Any) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        request = urllib.request.Request(
            self.url, body, {"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        if answer.get("errors"):
            raise CheckFailed(f"GraphQL error: {answer['errors'][0].get('message')}")
        return answer["data"]


LOCATIONS = """{ workspaceOrError { __typename ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""

INSTIGATORS = """query($selector: RepositorySelector!) {
  sensorsOrError(repositorySelector: $selector) { __typename
    ... on Sensors { results { name sensorType sensorState { id status } } } }
  schedulesOrError(repositorySelector: $selector) { __typename
    ... on Schedules { results { name scheduleState { id status } } } } }"""

STOP_SENSOR = """mutation($id: String!) { stopSensor(id: $id) { __typename
  ... on StopSensorMutationResult { instigationState { status } }
  ... on PythonError { message } } }"""

STOP_SCHEDULE = """mutation($id: String!) { stopRunningSchedule(id: $id) { __typename
  ... on ScheduleStateResult { scheduleState { status } } ... on PythonError { message } } }"""

ADD_PARTITION = """mutation($selector: RepositorySelector!, $name: String!, $key: String!) {
  addDynamicPartition(repositorySelector: $selector, partitionsDefName: $name, partitionKey: $key)
  { __typename ... on PythonError { message } ... on UnauthorizedError { message } } }"""

LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } }
  ... on PythonError { message } ... on InvalidStepError { invalidStepKey }
  ... on RunConfigValidationInvalid { errors { message } } ... on Error { message } } }"""

RUN = """query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } } }"""

JOB_ASSETS = """{ assetNodes { assetKey { path } jobNames groupName
  assetChecksOrError { __typename ... on AssetChecks { checks { name } } } } }"""

CHECK_EXECUTIONS = """query($key: AssetKeyInput!, $check: String!, $partition: String) {
  assetCheckExecutions(assetKey: $key, checkName: $check, partition: $partition, limit: 5) {
    runId status partition evaluation { success partition } } }"""

MATERIALIZATION = """query($key: AssetKeyInput!, $partition: String!) {
  assetOrError(assetKey: $key) { __typename ... on Asset {
    assetMaterializations(partitions: [$partition], limit: 1) { runId partition
      metadataEntries { __typename label
        ... on PathMetadataEntry { path } ... on IntMetadataEntry { intValue } } } } } }"""


NUX_SEEN = "mutation { setNuxSeen }"

SCOREBOARD_MATERIALIZATION = """{ assetOrError(assetKey: {path: ["scoreboard"]}) { __typename
  ... on Asset { assetMaterializations(limit: 1) { runId metadataEntries { __typename label
    ... on TableMetadataEntry { table { records schema { columns { name } } } }
    ... on UrlMetadataEntry { url } } } } } }"""


def selector() -> dict[str, str]:
    return {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}


def location_loaded(gql: GraphQL) -> bool:
    """True once the code location is loaded; CannotStart when it failed to load."""
    workspace = gql(LOCATIONS)["workspaceOrError"]
    entries = {e["name"]: e for e in workspace.get("locationEntries", [])}
    entry = entries.get(LOCATION)
    if entry is None or entry["loadStatus"] != "LOADED":
        return False
    loaded = entry["locationOrLoadError"] or {}
    if loaded.get("__typename") == "PythonError":
        raise CannotStart(f"code location {LOCATION} failed to load: {loaded['message']}")
    return True


def launching_instigators(gql: GraphQL) -> dict[str, tuple[str, str, str]]:
    """Running sensors and schedules that launch runs of their own (every kind but run-status
    sensors): name -> (stop mutation, its field, instigation state id)."""
    found = gql(INSTIGATORS, selector=selector())
    running: dict[str, tuple[str, str, str]] = {}
    for sensor in found["sensorsOrError"].get("results", []):
        state = sensor["sensorState"]
        if sensor["sensorType"] != "RUN_STATUS" and state["status"] == "RUNNING":
            running[sensor["name"]] = (STOP_SENSOR, "stopSensor", state["id"])
    for schedule in found["schedulesOrError"].get("results", []):
        state = schedule["scheduleState"]
        if state["status"] == "RUNNING":
            running[schedule["name"]] = (STOP_SCHEDULE, "stopRunningSchedule", state["id"])
    return running


def stop_automation(gql: GraphQL) -> list[str]:
    """Stop what would launch runs of its own (the project's sensors and schedule start running
    by default), so that the check's run is the only one; the check alerts keep running.
    The names of those stopped."""
    running = launching_instigators(gql)
    for name, (mutation, field_name, state_id) in running.items():
        stopped = gql(mutation, id=state_id)[field_name]
        if stopped["__typename"] == "PythonError":
            raise CannotStart(f"cannot stop {name}: {stopped['message']}")
    still = launching_instigators(gql)
    if still:
        raise CannotStart(f"{', '.join(still)} still running after being stopped")
    return list(running)


def add_partition(gql: GraphQL, dimension: str, key: str) -> None:
    """Add ``key`` to the dynamic partitions ``dimension`` as the UI's "Add partition" does; one
    already there (an earlier step of this check added it) is what was wanted."""
    added = gql(ADD_PARTITION, selector=selector(), name=dimension, key=key)["addDynamicPartition"]
    if added["__typename"] not in {"AddDynamicPartitionSuccess", "DuplicateDynamicPartitionError"}:
        raise CheckFailed(f"cannot add {dimension} partition {key}: {added}")


def launch(gql: GraphQL, benchmark: str) -> str:
    """Add the partition and launch ``benchmark_job`` on it, as the UI's Materialize does."""
    add_partition(gql, "benchmark", benchmark)
    params = {
        "selector": {**selector(), "jobName": JOB},
        "runConfigData": {},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": benchmark}]},
    }
    launched = gql(LAUNCH, params=params)["launchRun"]
    if launched["__typename"] != "LaunchRunSuccess":
        raise CheckFailed(f"launchRun answered {launched['__typename']}: {launched}")
    return launched["run"]["runId"]


def run_status(gql: GraphQL, run_id: str) -> str:
    return gql(RUN, id=run_id)["runOrError"]["status"]


@dataclass(frozen=True)
class JobAsset:
    key: tuple[str, ...]
    group: str
    checks: tuple[str, ...]

    @property
    def name(self) -> str:
        return "/".join(self.key)


def job_assets(gql: GraphQL) -> list[JobAsset]:
    """The assets of ``benchmark_job``, each with its group and the names of its checks."""
    nodes = [n for n in gql(JOB_ASSETS)["assetNodes"] if JOB in n["jobNames"]]
    if not nodes:
        raise CheckFailed(f"no asset belongs to {JOB}")
    return [
        JobAsset(
            tuple(n["assetKey"]["path"]),
            n["groupName"],
            tuple(c["name"] for c in n["assetChecksOrError"].get("checks", [])),
        )
        for n in nodes
    ]


def verify_checks(gql: GraphQL, run_id: str, benchmark: str, asset: JobAsset) -> None:
    """Each check ran in ``run_id``, on ``benchmark``, and passed; its history filtered by that
    partition finds it."""
    for check in asset.checks:
        executions = gql(
            CHECK_EXECUTIONS, key={"path": list(asset.key)}, check=check, partition=benchmark
        )
        ours = [e for e in executions["assetCheckExecutions"] if e["runId"] == run_id]
        where = f"check {asset.name}:{check}"
        if not ours:
            raise CheckFailed(f"{where} has no execution in run {run_id} for partition {benchmark}")
        execution = ours[0]
        evaluation = execution["evaluation"] or {}
        if execution["partition"] != benchmark or evaluation.get("partition") != benchmark:
            raise CheckFailed(
                f"{where} carries partition {execution['partition']!r} "
                f"(evaluation {evaluation.get('partition')!r}), not {benchmark!r}"
            )
        if execution["status"] != "SUCCEEDED" or not evaluation.get("success"):
            raise CheckFailed(f"{where} on {benchmark}: {execution['status']}")


def verify_metadata(gql: GraphQL, run_id: str, benchmark: str, asset: JobAsset) -> None:
    """The run materialized the partition with metadata: paths absolute and present, and task
    counts above zero where the asset reports tasks."""
    where = f"asset {asset.name}[{benchmark}]"
    found = gql(MATERIALIZATION, key={"path": list(asset.key)}, partition=benchmark)
    materializations = found["assetOrError"].get("assetMaterializations") or []
    if not materializations or materializations[0]["runId"] != run_id:
        raise CheckFailed(f"{where} was not materialized by run {run_id}")
    entries = {e["label"]: e for e in materializations[0]["metadataEntries"]}
    if not entries:
        raise CheckFailed(f"{where}: its materialization has no metadata")
    for label, entry in entries.items():
        if entry["__typename"] == "PathMetadataEntry":
            path = Path(entry["path"])
            if not path.is_absolute() or not path.exists():
                raise CheckFailed(
                    f"{where}: metadata {label} = {path} is not an absolute path that exists"
                )
    tasks = entries.get("tasks")
    if tasks is not None and not (tasks.get("intValue") or 0) > 0:
        raise CheckFailed(f"{where}: metadata tasks = {tasks.get('intValue')}, expected > 0")


# --- checks of one partition, the matrix, a failed run's alert (issue 26) -------------------------

CHECKED_ASSET = ("eval_plan",)
CHECKS_OP = "eval_plan_checks"  # the op that runs eval_plan's checks, as the Launchpad lists it
HARNESS = "simple_agent"
NEVER_RUN_HARNESS = "codex"  # a cli harness: not installed here, and never run by the check
MATRIX = ("conformance_matrix",)
SCENARIOS = ["tool_success"]  # one scenario keeps the harness run short
MATRIX_SENSOR = "conformance_automation_sensor"
FAILING_BENCHMARK = "no_such_benchmark"
ALERT_TIMEOUT_S = 120.0
MATRIX_TIMEOUT_S = 240.0
SENSOR_TICK_TIMEOUT_S = 120.0

START_SENSOR = """mutation($selector: SensorSelector!) { startSensor(sensorSelector: $selector) {
  __typename ... on Sensor { sensorState { status } } ... on PythonError { message } } }"""

LATEST_TICK = """query($selector: SensorSelector!, $after: Float) {
  sensorOrError(sensorSelector: $selector) { __typename ... on Sensor { sensorState {
    ticks(limit: 1, afterTimestamp: $after) { status error { message } } } } } }"""

RUN_LOG = """query($id: ID!) { logsForRun(runId: $id) { __typename
  ... on EventConnection { events { __typename ... on MessageEvent { message level } } } } }"""

LATEST_MATERIALIZATION = """query($key: AssetKeyInput!) { assetOrError(assetKey: $key) {
  __typename ... on Asset { assetMaterializations(limit: 1) { runId timestamp
    metadataEntries { __typename label ... on MarkdownMetadataEntry { mdStr } } } } } }"""

ASSET_CHECK_NAMES = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) {
  __typename ... on AssetNode { assetChecksOrError { __typename
    ... on AssetChecks { checks { name jobNames canExecuteIndividually } } } } } }"""


def launch_params(params: dict[str, Any], gql: GraphQL, what: str) -> str:
    launched = gql(LAUNCH, params=params)["launchRun"]
    if launched["__typename"] != "LaunchRunSuccess":
        raise CheckFailed(f"{what}: launchRun answered {launched['__typename']}: {launched}")
    return launched["run"]["runId"]


def finish(server: UiServer, gql: GraphQL, run_id: str, what: str, timeout: float) -> str:
    """Wait for the run to end; its final status."""
    if not server.wait(lambda: run_status(gql, run_id) in FINISHED, timeout):
        raise CheckFailed(
            f"{what}: run {run_id} still {run_status(gql, run_id)} after {timeout:.0f}s"
        )
    return run_status(gql, run_id)


def asset_checks(gql: GraphQL, key: tuple[str, ...]) -> list[dict[str, Any]]:
    node = gql(ASSET_CHECK_NAMES, key={"path": list(key)})["assetNodeOrError"]
    return node["assetChecksOrError"]["checks"]


def execute_all_params(checks: list[dict[str, Any]], key: tuple[str, ...]) -> dict[str, Any]:
    """What the Checks tab's "Execute all" sends in Dagster 1.13 (``ExecuteChecksButton``):
    the first job common to the checks, no asset, every check, no tag, so no partition."""
    common = [j for j in checks[0]["jobNames"] if all(j in c["jobNames"] for c in checks)]
    return {
        "mode": "default",
        "executionMetadata": {},
        "runConfigData": "{}",
        "selector": {
            **selector(),
            "jobName": common[0],
            "assetSelection": [],
            "assetCheckSelection": [
                {"assetKey": {"path": list(key)}, "name": c["name"]}
                for c in checks
                if c["canExecuteIndividually"] == "CAN_EXECUTE"
            ],
        },
    }


def launchpad_checks_params(benchmark: str) -> dict[str, Any]:
    """What the Launchpad of ``benchmark_job`` sends with a partition picked and only the
    checks' op selected (``LaunchpadSession``): the op selection, no asset, the partition tag."""
    return {
        "mode": "default",
        "runConfigData": "{}",
        "selector": {**selector(), "jobName": JOB, "solidSelection": [CHECKS_OP],
                     "assetSelection": [], "assetCheckSelection": []},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": benchmark}]},
    }  # fmt: skip


def verify_partition_checks(
    server: UiServer, gql: GraphQL, benchmark: str, materialized_by: str, report: Report
) -> str:
    """ "Execute all" on the Checks tab is declined cleanly (the run succeeds, says why in its
    log, and records no verdict); the Launchpad's checks-only run of one partition evaluates
    every check of that partition and materializes nothing. The second run's id."""
    name = "/".join(CHECKED_ASSET)
    checks = asset_checks(gql, CHECKED_ASSET)
    declined = launch_params(execute_all_params(checks, CHECKED_ASSET), gql, "Execute all")
    status = finish(server, gql, declined, "Execute all", RUN_TIMEOUT_S)
    if status != "SUCCESS":
        raise CheckFailed(f"Execute all on {name}'s checks: run {declined} ended {status}")
    events = gql(RUN_LOG, id=declined)["logsForRun"]["events"]
    if not any(e.get("level") == "WARNING" and "No partition" in (e.get("message") or "")
               for e in events):  # fmt: skip
        raise CheckFailed(f"Execute all: run {declined} does not say why no check ran")
    for check in checks:
        found = gql(CHECK_EXECUTIONS, key={"path": list(CHECKED_ASSET)}, check=check["name"],
                    partition=None)["assetCheckExecutions"]  # fmt: skip
        ours = [e for e in found if e["runId"] == declined]
        if not ours or ours[0]["status"] != "SKIPPED" or ours[0]["evaluation"] is not None:
            raise CheckFailed(f"Execute all: {name}:{check['name']} in run {declined}: {ours}")
    launched = time.monotonic()
    run_id = launch_params(launchpad_checks_params(benchmark), gql, "checks of one partition")
    status = finish(server, gql, run_id, "checks of one partition", RUN_TIMEOUT_S)
    report.seconds["checks_run"] = time.monotonic() - launched
    if status != "SUCCESS":
        raise CheckFailed(f"the checks of {name}[{benchmark}]: run {run_id} ended {status}")
    names = tuple(c["name"] for c in checks)
    verify_checks(gql, run_id, benchmark, JobAsset(CHECKED_ASSET, "", names))
    found = gql(MATERIALIZATION, key={"path": list(CHECKED_ASSET)}, partition=benchmark)
    latest = found["assetOrError"]["assetMaterializations"][0]["runId"]
    if latest != materialized_by:
        raise CheckFailed(f"the checks-only run {run_id} materialized {name}[{benchmark}]")
    report.checked.append(f"{name}[{benchmark}] checks alone")
    return run_id


def start_sensor(gql: GraphQL, name: str) -> None:
    started = gql(START_SENSOR, selector={**selector(), "sensorName": name})["startSensor"]
    if started["__typename"] != "Sensor" or started["sensorState"]["status"] != "RUNNING":
        raise CannotStart(f"cannot start {name}: {started}")


def evaluated_since(gql: GraphQL, name: str, since: float) -> bool:
    """Whether sensor ``name`` finished a tick that started after ``since`` (epoch seconds);
    a failed one is the check's failure."""
    found = gql(LATEST_TICK, selector={**selector(), "sensorName": name}, after=since)
    ticks = found["sensorOrError"].get("sensorState", {}).get("ticks", [])
    if ticks and ticks[0]["status"] == "FAILURE":
        raise CheckFailed(f"{name} failed a tick: {ticks[0]['error']['message']}")
    return bool(ticks) and ticks[0]["status"] in ("SKIPPED", "SUCCESS")


def latest_materialization(gql: GraphQL, key: tuple[str, ...]) -> dict[str, Any] | None:
    found = gql(LATEST_MATERIALIZATION, key={"path": list(key)})["assetOrError"]
    materializations = found.get("assetMaterializations") or []
    return materializations[0] if materializations else None


def verify_matrix_follows_one_harness(server: UiServer, gql: GraphQL, report: Report) -> str:
    """One harness run (one scenario) with another harness partition never run: the automation
    sensor re-renders ``conformance_matrix``, which lists the harness run and the other as not
    run. The matrix's run id."""
    for harness in (HARNESS, NEVER_RUN_HARNESS):
        add_partition(gql, "harness", harness)
    since = time.time()
    start_sensor(gql, MATRIX_SENSOR)
    # An automation condition's first evaluation is its baseline: a harness run that finished
    # before the sensor's first tick would never count as new (on a busy machine it can).
    if not server.wait(lambda: evaluated_since(gql, MATRIX_SENSOR, since), SENSOR_TICK_TIMEOUT_S):
        raise CheckFailed(f"{MATRIX_SENSOR} did not tick within {SENSOR_TICK_TIMEOUT_S:.0f}s")
    params = {
        "selector": {**selector(), "jobName": "conformance_job"},
        "runConfigData": {"ops": {"harness_conformance": {"config": {"scenarios": SCENARIOS}}}},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": HARNESS}]},
    }  # fmt: skip
    harness_run = launch_params(params, gql, f"conformance_job[{HARNESS}]")
    launched = time.monotonic()
    status = finish(server, gql, harness_run, f"conformance_job[{HARNESS}]", RUN_TIMEOUT_S)
    report.seconds["harness_run"] = time.monotonic() - launched
    if status != "SUCCESS":
        raise CheckFailed(f"conformance_job[{HARNESS}]: run {harness_run} ended {status}")
    if not server.wait(lambda: latest_materialization(gql, MATRIX) is not None, MATRIX_TIMEOUT_S):
        raise CheckFailed(
            f"{MATRIX_SENSOR} did not render conformance_matrix within {MATRIX_TIMEOUT_S:.0f}s "
            f"of the run of one harness ({HARNESS}; {NEVER_RUN_HARNESS} never ran)"
        )
    report.seconds["matrix_follows"] = time.monotonic() - launched
    matrix = latest_materialization(gql, MATRIX) or {}
    entries = {e["label"]: e for e in matrix.get("metadataEntries", [])}
    table = entries.get("harnesses", {}).get("mdStr") or ""
    if f"| {HARNESS} | fulfilled |" not in table or f"| {NEVER_RUN_HARNESS} | " not in table:
        raise CheckFailed(f"conformance_matrix does not list {HARNESS} as run: {table!r}")
    report.checked.append("conformance_matrix after one harness run")
    return matrix["runId"]


def verify_failed_run_alert(server: UiServer, gql: GraphQL, report: Report) -> str:
    """A run that fails (a benchmark partition with no config) gets one ``run_failed`` line in
    the alert log, with its error, from ``run_failure_alerts``. The failed run's id."""
    add_partition(gql, "benchmark", FAILING_BENCHMARK)
    params = {
        "selector": {**selector(), "jobName": JOB},
        "runConfigData": {},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": FAILING_BENCHMARK}]},
    }
    run_id = launch_params(params, gql, f"{JOB}[{FAILING_BENCHMARK}]")
    status = finish(server, gql, run_id, f"{JOB}[{FAILING_BENCHMARK}]", RUN_TIMEOUT_S)
    if status != "FAILURE":
        raise CheckFailed(f"{JOB}[{FAILING_BENCHMARK}]: run {run_id} ended {status}, not FAILURE")
    log = server.local.workspace.data / "alerts" / "check_alerts.jsonl"
    ended = time.monotonic()

    def alerted() -> list[dict[str, Any]]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [a for a in map(json.loads, lines) if a["run_id"] == run_id]

    if not server.wait(lambda: bool(alerted()), ALERT_TIMEOUT_S):
        raise CheckFailed(f"run {run_id} failed but {log} has no line for it")
    report.seconds["alert"] = time.monotonic() - ended
    lines = alerted()
    if [a["kind"] for a in lines] != ["run_failed"] or not lines[0]["error"]:
        raise CheckFailed(f"the alert of run {run_id}: {lines}")
    report.checked.append("a failed run's alert line")
    return run_id


# --- screenshots ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    name: str  # the PNG's stem
    path: str  # the UI route, query included
    shows: tuple[str, ...]  # what the rendered page's text must contain


def pages(benchmark: str, run_id: str, assets: list[JobAsset]) -> list[Page]:
    """The checked asset's group graph, its materialization of the partition, its first check."""
    checked = next(asset for asset in assets if asset.checks)
    group = [asset.name for asset in assets if asset.group == checked.group]
    passed = f"{len(checked.checks)} / {len(checked.checks)} Passed"
    check = checked.checks[0]
    return [
        Page("asset_graph", f"/locations/{REPOSITORY}@{LOCATION}/asset-groups/{checked.group}",
             (*group, passed)),
        Page("materialization", f"/assets/{checked.name}?view=events&partition={benchmark}",
             (f"Partition {benchmark} materialized in run {run_id[:8]}", "tasks")),
        Page("check_history", f"/assets/{checked.name}?view=checks&checkDetail={check}",
             (check, "Latest execution", "Passed", f"Partition {benchmark}")),
    ]  # fmt: skip


HIDDEN_TAGS = ("script", "style")


class _Text(HTMLParser):
    """The text a page shows: its DOM's text nodes outside scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in HIDDEN_TAGS:
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in HIDDEN_TAGS and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def page_text(dom: str) -> str:
    parser = _Text()
    parser.feed(dom)
    return " ".join(" ".join(parser.parts).split())


def page_statistics(png: Path) -> tuple[int, float]:
    """(distinct colours, share of pixels unlike the most common one) of a screenshot."""
    from PIL import Image

    with Image.open(png) as image:
        pixels = image.convert("RGB")
        colours = pixels.getcolors(maxcolors=1 << 24) or []
    total = sum(count for count, _ in colours)
    background = max(count for count, _ in colours)
    return len(colours), (total - background) / total


def screenshot(browser: str, url: str, png: Path, scratch: Path) -> str:
    """Save ``url`` as rendered into ``png``; the rendered page's text."""
    argv = [
        browser, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
        f"--user-data-dir={scratch}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--virtual-time-budget={PAGE_BUDGET_MS}", f"--screenshot={png}", "--dump-dom", url,
    ]  # fmt: skip
    if os.geteuid() == 0:  # chromium refuses to run as root inside its own sandbox
        argv.insert(1, "--no-sandbox")
    dom = scratch.parent / f"{png.stem}.html"
    log = scratch.parent / f"{png.stem}.browser.log"
    process = start_program(argv, dom, cwd=scratch.parent, stderr=log)
    try:
        process.wait(timeout=BROWSER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CheckFailed(
            f"chromium did not render {url} within {BROWSER_TIMEOUT_S:.0f}s"
        ) from None
    finally:
        stop_program(process, timeout=5)
    if not png.is_file():
        raise CheckFailed(f"chromium saved no screenshot of {url} (exit {process.returncode})")
    return page_text(dom.read_text(errors="replace"))


def take_screenshots(
    gql: GraphQL, base_url: str, out: Path, chosen: list[Page], scratch: Path
) -> list[Path]:
    browser = shutil.which("chromium")
    if browser is None:
        return []
    gql(NUX_SEEN)  # the UI greets a new instance with a newsletter dialog over every page
    out.mkdir(parents=True, exist_ok=True)
    saved = []
    for page in chosen:
        png = out / f"{page.name}.png"
        png.unlink(missing_ok=True)
        text = screenshot(browser, base_url + page.path, png, scratch / page.name)
        colours, ink = page_statistics(png)
        if colours < MIN_COLOURS or ink < MIN_INK_SHARE:
            raise CheckFailed(f"screenshot {png} looks blank ({colours} colours, {ink:.1%} ink)")
        missing = [shown for shown in page.shows if shown not in text]
        if missing:
            raise CheckFailed(f"{page.path} does not show {missing[0]!r} (see {png})")
        saved.append(png)
    return saved


# --- the scoreboard ------------------------------------------------------------------------------

SCOREBOARD_HARNESS = "simple_agent"
OUTCOMES = ("measured", "masked", "failed", "unscored", "pending")


def launch_and_wait(gql: GraphQL, server: UiServer, job: str, **params: Any) -> str:
    """Launch ``job`` as the UI does (``params``: tags, an asset selection) and wait for it to
    succeed; its run id."""
    tags = [{"key": k, "value": v} for k, v in params.pop("tags", {}).items()]
    launched = gql(LAUNCH, params={
        "selector": {**selector(), "jobName": job, **params},
        "runConfigData": {},
        "executionMetadata": {"tags": tags},
    })["launchRun"]  # fmt: skip
    if launched["__typename"] != "LaunchRunSuccess":
        raise CheckFailed(f"launchRun of {job} answered {launched['__typename']}: {launched}")
    run_id = launched["run"]["runId"]
    if not server.wait(lambda: run_status(gql, run_id) in FINISHED, RUN_TIMEOUT_S):
        raise CheckFailed(f"run {run_id} of {job} still {run_status(gql, run_id)}")
    status = run_status(gql, run_id)
    if status != "SUCCESS":
        raise CheckFailed(f"run {run_id} of {job} ended {status}")
    return run_id


def verify_scoreboard(gql: GraphQL, run_id: str, benchmark: str) -> Path:
    """The scoreboard's latest materialization is ``run_id``'s and its table has the cell of
    ``benchmark`` × the harness, every planned rollout counted once; the HTML page's path."""
    found = gql(SCOREBOARD_MATERIALIZATION)["assetOrError"]
    latest = (found.get("assetMaterializations") or [None])[0]
    if latest is None or latest["runId"] != run_id:
        raise CheckFailed(f"scoreboard was not materialized by run {run_id}")
    entries = {e["label"]: e for e in latest["metadataEntries"]}
    if "scoreboard" not in entries or "scoreboard_html" not in entries:
        raise CheckFailed("the scoreboard's materialization has no scoreboard table or page")
    rows = [json.loads(record) for record in entries["scoreboard"]["table"]["records"]]
    cells = [r for r in rows if (r["benchmark"], r["harness"]) == (benchmark, SCOREBOARD_HARNESS)]
    if len(cells) != 1:
        raise CheckFailed(f"the scoreboard has {len(cells)} cells of {benchmark} × harness")
    cell = cells[0]
    if not cell["planned"] or sum(cell[o] for o in OUTCOMES) != cell["planned"]:
        raise CheckFailed(f"the scoreboard's outcomes do not add up to the planned: {cell}")
    page = Path(url2pathname(urlparse(entries["scoreboard_html"]["url"]).path))
    if not page.is_file():
        raise CheckFailed(f"the scoreboard's page {page} does not exist")
    return page


def check_scoreboard(
    gql: GraphQL, server: UiServer, benchmark: str, out: Path, scratch: Path, report: Report
) -> None:
    """A rollouts partition of ``benchmark`` launched as the UI does, then the scoreboard; its
    table checked through GraphQL, its asset page and its HTML page screenshotted."""
    started = time.monotonic()
    add_partition(gql, "harness", SCOREBOARD_HARNESS)
    partition = f"{benchmark}|{SCOREBOARD_HARNESS}"
    launch_and_wait(gql, server, "rollouts_job", tags={
        "dagster/partition": partition,
        "dagster/partition/benchmark": benchmark,
        "dagster/partition/harness": SCOREBOARD_HARNESS,
    })  # fmt: skip
    report.seconds["rollouts"] = time.monotonic() - started
    launched = time.monotonic()
    run_id = launch_and_wait(gql, server, "__ASSET_JOB", assetSelection=[{"path": ["scoreboard"]}])
    report.seconds["scoreboard"] = time.monotonic() - launched
    page = verify_scoreboard(gql, run_id, benchmark)
    report.checked.append("scoreboard")
    cell = f"{benchmark} × {SCOREBOARD_HARNESS}"
    report.screenshots += take_screenshots(gql, "", out, [
        Page("scoreboard", f"{server.url}/assets/scoreboard?view=events",
             (f"Materialized in run {run_id[:8]}", "scoreboard", "reward_mean")),
        Page("scoreboard_page", page.as_uri(),
             ("Rollouts scoreboard", f"{cell} × policy (reference)", "History per cell")),
    ], scratch)  # fmt: skip


# --- the processes -------------------------------------------------------------------------------


@dataclass
class UiServer:
    """The webserver and the daemon on one throwaway instance; ``stop`` ends all they started."""

    local: LocalHome
    logs: Path
    port: int = field(default_factory=free_port)
    programs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    tracked: list[Tracked] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, name: str, argv: list[str]) -> None:
        program = BIN / argv[0]
        if not program.exists():
            raise CannotStart(f"{program} is missing; run `make setup`")
        env = {**os.environ, **self.local.environ()}
        process = start_program(
            [str(program), *argv[1:]], self.logs / f"{name}.log", cwd=ROOT, env=env
        )
        self.programs[name] = process
        self.tracked.append(Tracked(process.pid))

    def record(self) -> None:
        """Note every descendant now alive, so ``stop`` finds those that leave the group."""
        for tracked in self.tracked:
            tracked.record()

    def check_alive(self) -> None:
        for name, process in self.programs.items():
            if process.poll() is not None:
                log = self.logs / f"{name}.log"
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                raise CannotStart(f"the {name} exited with {process.returncode}:\n{tail}")

    def wait(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Poll ``ready`` until it holds (True) or ``timeout`` passes (False), while the
        programs are alive; an answer that does not come yet counts as not ready."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.record()
            self.check_alive()
            with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
                if ready():
                    return True
            time.sleep(0.5)
        return False

    def stop(self) -> None:
        for process in reversed(self.programs.values()):
            stop_program(process)
        for tracked in self.tracked:
            signal_all(tracked.alive(), signal.SIGKILL)
        self.programs.clear()


@dataclass
class Report:
    run_id: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    screenshots: list[Path] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)  # the sensors and schedules it stopped


@contextlib.contextmanager
def ui_server(local: LocalHome, logs: Path, report: Report) -> Iterator[tuple[UiServer, GraphQL]]:
    server = UiServer(local, logs)
    workspace = str(ROOT / "workspace.yaml")
    try:
        server.start("webserver", [
            "dagster-webserver", "-h", "127.0.0.1", "-p", str(server.port), "-w", workspace,
        ])  # fmt: skip
        gql = GraphQL(f"{server.url}/graphql")
        if not server.wait(lambda: location_loaded(gql), START_TIMEOUT_S):
            raise CannotStart(
                f"code location {LOCATION} not loaded within {START_TIMEOUT_S:.0f}s (logs: {logs})"
            )
        report.stopped = stop_automation(gql)
        server.start("daemon", ["dagster-daemon", "run", "-w", workspace])
        yield server, gql
    finally:
        server.stop()


# --- the check -----------------------------------------------------------------------------------


def ui_check(benchmark: str, out: Path, work: Path, report: Report) -> Report:
    """The whole flow; raises CannotStart or CheckFailed. ``report`` fills as it goes."""
    started = time.monotonic()
    local = LocalHome.create(work, ROOT)
    logs = work / "logs"
    logs.mkdir()
    with ui_server(local, logs, report) as (server, gql):
        report.seconds["start"] = time.monotonic() - started
        run_id = report.run_id = launch(gql, benchmark)
        launched = time.monotonic()
        if not server.wait(lambda: run_status(gql, run_id) in FINISHED, RUN_TIMEOUT_S):
            status = run_status(gql, run_id)
            raise CheckFailed(f"run {run_id} still {status} after {RUN_TIMEOUT_S:.0f}s")
        status = run_status(gql, run_id)
        report.seconds["run"] = time.monotonic() - launched
        if status != "SUCCESS":
            raise CheckFailed(f"run {run_id} of {JOB}[{benchmark}] ended {status}")
        assets = job_assets(gql)
        for asset in assets:
            verify_metadata(gql, run_id, benchmark, asset)
            verify_checks(gql, run_id, benchmark, asset)
            report.checked += [asset.name, *(f"{asset.name}:{c}" for c in asset.checks)]
        shots_started = time.monotonic()
        scratch = work / "browser"
        scratch.mkdir()
        report.screenshots = take_screenshots(
            gql, server.url, out, pages(benchmark, run_id, assets), scratch
        )
        report.seconds["screenshots"] = time.monotonic() - shots_started
        check_scoreboard(gql, server, benchmark, out, scratch, report)
        follow_up(server, gql, benchmark, run_id, out, scratch, report)
    report.seconds["total"] = time.monotonic() - started
    return report


def follow_up(
    server: UiServer,
    gql: GraphQL,
    benchmark: str,
    run_id: str,
    out: Path,
    scratch: Path,
    report: Report,
) -> None:
    """After the first run: one partition's checks alone, the matrix following one harness
    run, a failed run's alert; then their pages."""

    def shoot(page: Page) -> None:  # right away: a later run changes what the page shows
        report.screenshots += take_screenshots(gql, server.url, out, [page], scratch)

    verify_partition_checks(server, gql, benchmark, run_id, report)
    shoot(
        Page(
            "partition_checks",
            f"/assets/{'/'.join(CHECKED_ASSET)}?view=checks&checkDetail=plan_covers_taskset",
            ("plan_covers_taskset", "Passed", f"Partition {benchmark}"),
        )
    )
    verify_matrix_follows_one_harness(server, gql, report)
    shoot(
        Page(
            "matrix_after_one_harness",
            "/assets/conformance_matrix",  # its overview: the latest metadata, the condition
            (
                "Latest materialization",
                f"{HARNESS} fulfilled 1/1",
                f"{NEVER_RUN_HARNESS} ",
                "after any harness run",
            ),
        )
    )
    failed_run = verify_failed_run_alert(server, gql, report)
    shoot(Page("failed_run", f"/runs/{failed_run}", (failed_run[:8], "Failure", FAILING_BENCHMARK)))


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default="units", help="the partition to launch")
    default_out = ROOT / ".ui-check"
    parser.add_argument("--out", type=Path, default=default_out, help="where screenshots go")
    parser.add_argument("--keep", action="store_true", help="keep the temporary instance")
    args = parser.parse_args(argv)
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the servers are stopped on the way out.
    previous = {signum: signal.signal(signum, _interrupt) for signum in STOP_SIGNALS}
    report = Report()
    work = Path(tempfile.mkdtemp(prefix="gym-ui-check-"))
    try:
        ui_check(args.benchmark, args.out.resolve(), work, report)
    except CannotStart as exc:
        print(f"ui-check: cannot start: {exc}", file=sys.stderr)
        return 2
    except CheckFailed as exc:
        print(f"ui-check: FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print(
            f"ui-check: interrupted ({exc or 'SIGINT'}); all it started is stopped", file=sys.stderr
        )
        return 130
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if args.keep:
            print(f"ui-check: kept the instance in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    timings = ", ".join(f"{name} {s:.1f}s" for name, s in report.seconds.items())
    print(
        f"ui-check: run {report.run_id} of {JOB}[{args.benchmark}] succeeded; "
        f"{len(report.checked)} assets, checks and UI paths verified ({timings})"
    )
    if report.screenshots:
        print(f"ui-check: screenshots: {', '.join(map(str, report.screenshots))}")
    else:
        print("ui-check: chromium is not installed: skipped the screenshots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
