"""Where an episode keeps what it writes, under ``<output>/<harness>/<scenario>/``
(docs/conformance.md#output-layout)."""

WITNESS_FILE = "witness.json"
RUNTIME_FILE = "runtime.json"
LAUNCH_FILE = "launch.json"
REQUESTS_FILE = "requests.jsonl"
LOG_FILE = "episode.log"
CAPTURE_DIR = "capture"
HARNESS_DIR = "harness"  # a command harness's activation directories: its cwd, home and log
WORKSPACE_DIR = "workspace"  # the harness's working directory; tool marker files land here
RECORDS_FILE = "rollouts.jsonl"
FAILURES_FILE = "rollouts_failures.jsonl"
HEALTH_DIR = "health"
HEALTH_SUMMARY = "quality_summary.json"
HEALTH_VERDICTS = "rollout_verdicts.jsonl"
EVIDENCE_DIR = "evidence"
RESULT_FILE = "scenario_result.json"
