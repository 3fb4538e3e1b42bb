"""The reserved keys of a rollout row, named once.

The collector stamps every row it writes with ``_ng_*`` keys (who the rollout is, where it ran,
how it failed); the evidence collection owns travels under ``ng_*`` attachment keys. Rows are
JSON on disk, so these names are the format: spell them through these constants, never inline.
"""

from __future__ import annotations

COLLECTOR_PREFIX = "_ng_"

# identity: which planned rollout (and which attempt of it) a row belongs to
TASK_INDEX = "_ng_task_index"
ROLLOUT_INDEX = "_ng_rollout_index"
ATTEMPT_INDEX = "_ng_attempt_index"
ROLLOUT_ID = "_ng_rollout_id"
IDENTITY_KEYS = (TASK_INDEX, ROLLOUT_INDEX, ROLLOUT_ID, ATTEMPT_INDEX)

# routing and provenance stamps
ENVIRONMENT_SERVER = "_ng_environment_server"
RESULT_TYPE = "_ng_result_type"
TASK_ID = "_ng_task_id"

# a failure-sidecar row: the presence of FAILURE_CLASS marks a failure
FAILURE_PREFIX = "_ng_failure_"
FAILURE_CLASS = "_ng_failure_class"
FAILURE_KIND = "_ng_failure_kind"
FAILURE_TERMINAL = "_ng_failure_terminal"
FAILURE_MESSAGE = "_ng_failure_message"
FAILURE_STAGE = "_ng_failure_stage"
FAILURE_TYPE = "_ng_failure_type"
FAILURE_HTTP_STATUS = "_ng_failure_http_status"
FAILURE_RESPONSE_BODY = "_ng_failure_response_body"
FAILURE_PARTIAL_RESPONSE = "_ng_failure_partial_response"
NO_PERSIST = "_ng_no_persist"

# evidence attachments of a success record
TRAJECTORY = "ng_trajectory"
AGENT_OBSERVATIONS = "ng_agent_observations"
MODEL_CALL_CAPTURE = "ng_model_call_capture"
PERF = "ng_perf"
TERMINATION_REASON = "ng_termination_reason"
HARNESS_EXIT_CODE = "ng_harness_exit_code"

# what an environment server's result may not carry: the collector writes these itself
RESERVED_RESULT_KEYS = frozenset({TRAJECTORY, MODEL_CALL_CAPTURE, PERF})


def is_collector_key(key: str) -> bool:
    """A ``_ng_*`` key: collector bookkeeping, never task data or a verifier field."""
    return key.startswith(COLLECTOR_PREFIX)
