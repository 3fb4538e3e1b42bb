"""Whole runs whose model makes a command harness leave hostile files for the run to read.

The model's shell command (run by the example ``minimal_agent`` in its sandbox) replaces the
activation's ``response.json`` with a FIFO, a link to a host file the harness cannot read, or a
link to ``/dev/zero``. The run opens none of them: no hang, no host file in the records, no
unbounded read; the rollout scores 0 as the model's failure (``agent_output_refused``).

Each run is a child process in a session of its own, killed with its group past a generous
guard (a hang is the failure these tests exist for), under an address-space limit (an
unbounded read must fail, not take the machine's memory).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from gym_assets.rollouts.collection.files import RunFiles, read_jsonl

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_SECONDS = 240
ADDRESS_SPACE_BYTES = 6 * 1024**3
ANSWER = "81752"  # any arith answer: the rollout is judged before it is graded


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def _run(tmp_path: Path, command: str) -> list[dict]:
    """The records of a one-rollout arith run whose model runs ``command``, then answers."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool": command}, {"text": ANSWER}]))
    out = tmp_path / "run"
    args = [
        *("rollouts", "--benchmark", "arith", "--harness", "minimal_agent", "--limit", "1"),
        *("--upstream", "scripted", "--script", str(script), "--timeout", "60"),
        *("--out", str(out), "--configs", str(REPO / "configs")),
        *("--data-root", str(tmp_path / "data")),
    ]
    code = "import sys; from gym_assets.cli import main; sys.exit(main(sys.argv[1:]))"
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        start_new_session=True,
        preexec_fn=_limit_memory,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        output, _ = child.communicate(timeout=HANG_GUARD_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise AssertionError(f"the run hung past {HANG_GUARD_SECONDS} s") from None
    finally:
        if child.returncode is None:
            os.killpg(child.pid, signal.SIGKILL)
    log = output.decode(errors="replace")[-3000:]
    assert RunFiles(out).records.exists(), log
    return list(read_jsonl(RunFiles(out).records))


def _refused(records: list[dict], what: str) -> dict:
    (record,) = records
    assert record["reward"] == 0.0 and record["mask_sample"] is False
    assert record["failure_kind"] == "agent_output_refused"
    assert "response.json" in record["failure_reason"] and what in record["failure_reason"]
    return record


def test_a_fifo_for_a_response_is_refused_not_waited_on(tmp_path):
    """Before: the run opened the FIFO and waited for a writer for ever (``--timeout`` never
    fired: the read blocked the event loop)."""
    _refused(_run(tmp_path, 'mkfifo "$GYM_RESPONSE_PATH"'), "a FIFO")


def test_a_link_to_a_host_file_is_not_followed(tmp_path):
    """The harness cannot read the file (it is not in its sandbox); the run could, and put
    it into the records. Now the link is refused and the file's bytes are nowhere."""
    secret = tmp_path / "host-secret.json"
    canary = "host-only-canary-5d1e"
    reply = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": canary}]}
    secret.write_text(json.dumps({"output": [reply]}))
    secret.chmod(0o600)
    _refused(_run(tmp_path, f'ln -s {secret} "$GYM_RESPONSE_PATH"'), "a symbolic link")
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert canary.encode() not in path.read_bytes(), path


def test_a_link_to_dev_zero_is_not_read(tmp_path):
    """Before: the run read ``/dev/zero`` until its memory ran out."""
    _refused(_run(tmp_path, 'ln -s /dev/zero "$GYM_RESPONSE_PATH"'), "a symbolic link")
