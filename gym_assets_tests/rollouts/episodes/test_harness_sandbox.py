"""A command harness in the harness sandbox (docs/security.md): it reaches the gateway and
nothing else, every attempt to go elsewhere is in its ``network.jsonl``, nothing it starts
outlives it, and it writes nowhere but its activation directory. Real programs, a real
gateway, real bubblewrap; without a sandbox the run is refused unless unsandboxed is allowed."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.rollouts.episodes.launch import EpisodeFiles, Launch, run_isolated
from gym_assets.rollouts.gateway import ScriptedUpstream
from gym_assets.sandbox import SandboxPolicy, SandboxUnavailable, harness_init
from gym_assets.sandbox.harness_sandbox import install_trees
from gym_assets.servers.responses_api_agents.command_agent.app import create
from gym_assets.suite.run import run_suite
from gym_assets_tests.filesystems import readable_by_others
from gym_assets_tests.rollouts.episodes.test_command_agent import (
    DONE,
    EPISODE,
    _activate,
    agent,
    program,
    sleeping,
)

REPO = Path(__file__).resolve().parents[3]
SYSTEM_PYTHON = Path("/usr/bin/python3")


def network_log(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "network.jsonl").open()]


def sandbox_record(made) -> dict:
    receipt = asyncio.run(made.close_session("as", EPISODE))
    (record,) = (r for r in receipt["agent_observations"]["records"] if r["kind"] == "sandbox")
    return record


def test_only_the_gateway_is_reachable_and_every_other_attempt_is_logged(
    start_gateway, tmp_path
) -> None:
    command = program(
        tmp_path,
        """
        import shutil, socket
        tried = {}
        for name, address in (("ipv4", ("1.1.1.1", 443)), ("ipv6", ("2606:4700::1111", 80))):
            try:
                socket.create_connection(address, timeout=10).close()
                tried[name] = "connected"
            except OSError as exc:
                tried[name] = exc.errno
        try:
            tried["resolve"] = socket.getaddrinfo("example.com", 443)
        except socket.gaierror as exc:
            tried["resolve"] = exc.errno
        if shutil.which("curl"):
            curl = ["curl", "-sS", "--max-time", "10", "https://pypi.org/simple/"]
            tried["curl"] = subprocess.run(curl, capture_output=True).returncode
        json.dump(tried, open("tried.json", "w"))
        answer = ask("hi")
        bundle(conversation=[{"role": "user", "content": "hi"}, *answer["output"]])
        """,
    )
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    response = asyncio.run(_activate(made))
    assert response["output"][0]["content"][0]["text"] == "DONE"  # the gateway answered
    tried = json.loads((root / "workspace" / "tried.json").read_text())
    assert tried["ipv4"] == tried["ipv6"] == errno.ECONNREFUSED  # at once, not after a timeout
    assert tried["resolve"] == -2  # EAI_NONAME: the resolver stub answered NXDOMAIN
    assert tried.get("curl", 6) == 6  # curl: could not resolve host
    log = network_log(root)
    assert log[0]["event"] == "sandbox_ready"
    looked_up = {entry["name"] for entry in log if entry["event"] == "dns_query"}
    assert looked_up == {"example.com", *(["pypi.org"] if "curl" in tried else [])}
    blocked = [(e["to"], e["protocol"]) for e in log if e["event"] == "blocked_connection"]
    assert blocked == [("1.1.1.1:443", "tcp"), ("[2606:4700::1111]:80", "tcp")]
    port = made.gateway.url_for("x").split("/")[2]
    assert [e["to"] for e in log if e["event"] == "gateway_connection"] == [port]
    record = sandbox_record(made)
    assert record["provider"] == "bwrap" and record["outcome"] == "completed"


def test_nothing_the_harness_started_outlives_it(start_gateway, tmp_path) -> None:
    command = program(
        tmp_path,
        """
        spawn_sleepers()  # one in the harness's group, one in a session of its own
        duration = json.load(open("sleepers.json"))
        subprocess.run(["sh", "-c", f"sleep {duration} >/dev/null 2>&1 &"])
        subprocess.run(["setsid", "-f", "sleep", duration])
        bundle()
        """,
    )
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    asyncio.run(_activate(made))
    assert sleeping(root / "workspace") == []


def test_nothing_outside_the_activation_directory_is_writable(start_gateway, tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o777)
    outside.chmod(0o777)
    venv = Path(sys.prefix)
    targets = [outside / "x", venv / "x", tmp_path / "program.py", Path("/usr/x"), Path("/x")]
    command = program(
        tmp_path,
        f"""
        failed = {{}}
        for target in {[str(t) for t in targets]!r}:
            try:
                open(target, "a").close()
                failed[target] = 0
            except OSError as exc:
                failed[target] = exc.errno
        json.dump(failed, open("failed.json", "w"))
        open(os.path.join(os.environ["HOME"], "mine"), "w").close()  # its own home is
        bundle()
        """,
    )
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    before = (tmp_path / "program.py").read_text()
    asyncio.run(_activate(made))
    failed = json.loads((root / "workspace" / "failed.json").read_text())
    assert set(failed) == {str(t) for t in targets}
    assert all(code in (errno.EROFS, errno.EACCES, errno.ENOENT) for code in failed.values())
    assert not (outside / "x").exists() and not (venv / "x").exists()
    assert (tmp_path / "program.py").read_text() == before
    assert (root / "home" / "mine").exists()
    # Ours, written by the sandbox's init program: the harness could not write it.
    assert (root / "network.jsonl").stat().st_uid == os.getuid()


def _key_owners() -> set[int]:
    """Every uid that owns keys in the host kernel (``/proc/key-users`` counts them all)."""
    with open("/proc/key-users") as table:
        return {int(line.split(":")[0]) for line in table}


def test_the_harness_may_not_touch_kernel_keys(start_gateway, tmp_path) -> None:
    """Kernel keys belong to a uid's keyrings in the host kernel, where they outlive the
    sandbox (a later process could read a world-readable one by its id): every key call of
    the harness is refused, and its uid owns no key after the activation."""
    command = program(
        tmp_path,
        """
        import ctypes
        keyutils = ctypes.CDLL("libkeyutils.so.1", use_errno=True)
        tried = {"uid": os.getuid()}
        user_keyring = -4  # KEY_SPEC_USER_KEYRING
        serial = keyutils.add_key(b"user", b"carried", b"over", 4, user_keyring)
        tried["add_key"] = -ctypes.get_errno() if serial < 0 else serial
        serial = keyutils.keyctl_get_keyring_ID(user_keyring, 1)  # made when missing
        tried["keyctl"] = -ctypes.get_errno() if serial < 0 else serial
        tool = subprocess.run(["keyctl", "add", "user", "k", "v", "@u"], capture_output=True)
        tried["keyctl_tool"] = tool.returncode
        json.dump(tried, open("tried.json", "w"))
        bundle()
        """,
    )
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    asyncio.run(_activate(made))
    tried = json.loads((root / "workspace" / "tried.json").read_text())
    assert tried["add_key"] == tried["keyctl"] == -errno.EPERM
    assert tried["keyctl_tool"] != 0
    assert tried["uid"] not in _key_owners()


def test_no_sandbox_is_refused_before_anything_runs_unless_allowed(
    start_gateway, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no bwrap, keyctl or setpriv
    gateway = start_gateway(ScriptedUpstream(DONE))
    command = program(tmp_path, "bundle()\n")
    config = {"command": command, "episodes_dir": str(tmp_path / "episodes")}
    with pytest.raises(SandboxUnavailable, match="--allow-unsandboxed"):
        create("agent", config, gateway=gateway, resources=None, sandbox=SandboxPolicy())
    assert not (tmp_path / "episodes").exists()

    allowed = SandboxPolicy(allow_unsandboxed=True)
    made = create("agent", config, gateway=gateway, resources=None, sandbox=allowed)
    asyncio.run(_activate(made))
    record = sandbox_record(made)
    assert record["provider"] == "none" and record["outcome"] == "completed"


def test_a_sandbox_that_does_not_come_up_is_a_sandbox_error(tmp_path) -> None:
    """Bubblewrap refusing to start (here: a folder to show that does not exist) is told
    apart from the program failing: the record says ``sandbox_error``."""
    files = EpisodeFiles(tmp_path / "activation").create()
    launch = Launch(("/bin/true",), {"PATH": "/usr/bin:/bin"}, files.workdir, files.log)
    records: list[dict] = []
    exit_code = asyncio.run(
        run_isolated(
            launch,
            SandboxPolicy().isolation(),
            files,
            gateway_url="http://127.0.0.1:9/v1",
            sandbox_id="broken",
            records=records,
            read_only=[tmp_path / "missing"],
        )
    )
    (record,) = records
    assert exit_code != 0 and record["exit_code"] == exit_code
    assert record["outcome"] == "sandbox_error" and record["error_type"] == "sandbox_did_not_start"
    assert "missing" in files.log.read_text()  # bubblewrap's own message


def test_the_install_folders_a_command_needs_are_found(tmp_path) -> None:
    """A venv or npm prefix whole (its programs load their packages from it), a script alone
    (its folder may hold anything), where symlinks lead, and the ``#!`` interpreter."""
    npm = tmp_path / "npm"
    package_bin = npm / "node_modules" / "tool" / "bin"
    package_bin.mkdir(parents=True)
    (package_bin / "tool.js").write_text("#!/usr/bin/env node\n")
    (package_bin / "tool.js").chmod(0o755)
    (npm / "node_modules" / ".bin").mkdir()
    (npm / "node_modules" / ".bin" / "tool").symlink_to(package_bin / "tool.js")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / "cli").write_text(f"#!{venv / 'bin' / 'python'}\n")
    (venv / "bin" / "cli").chmod(0o755)
    script = tmp_path / "scripts" / "agent.py"
    script.parent.mkdir()
    script.write_text("")
    assert install_trees([str(npm / "node_modules" / ".bin" / "tool")], os.defpath) == [str(npm)]
    assert install_trees([str(venv / "bin" / "cli"), "-x", str(script)], os.defpath) == sorted(
        [str(venv), str(script)]
    )


# The harness: through the relay to the "gateway", its capabilities, a name looked up.
NOBODYS_HARNESS = """
import json, socket
seen = {}
with socket.create_connection(("127.0.0.1", PORT)) as gateway:
    gateway.sendall(b"hello")
    seen["answer"] = gateway.recv(100).decode()
status = open("/proc/self/status").read().splitlines()
seen["caps"] = [line.split()[1] for line in status if line.startswith(("CapEff", "CapPrm"))]
try:
    socket.getaddrinfo("example.org", 80)
except socket.gaierror as exc:
    seen["resolve"] = exc.errno
print(json.dumps(seen))
"""
# Run by the system interpreter as nobody; a TCP listener stands in for the gateway's port.
AS_NOBODY = """
import asyncio, json, pathlib, sys, tempfile
sys.path.insert(0, sys.argv[1])
from gym_assets.sandbox import SandboxPolicy
from gym_assets.sandbox.harness_sandbox import HarnessSandbox

async def main():
    isolation = SandboxPolicy().isolation()
    assert isolation.kind == "bwrap" and isolation.setpriv is None, isolation
    async def gateway(reader, writer):
        writer.write(b"gateway got " + await reader.read(5))
        writer.close()
    server = await asyncio.start_server(gateway, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    root = pathlib.Path(tempfile.mkdtemp()) / "activation"
    (root / "workspace").mkdir(parents=True)
    program = sys.argv[2].replace("PORT", str(port))
    async with HarnessSandbox(isolation, root, f"http://127.0.0.1:{port}/v1") as sandbox:
        argv = sandbox.command(
            ["/usr/bin/python3", "-c", program], {"PATH": "/usr/bin:/bin"}, root / "workspace"
        )
        done = await asyncio.create_subprocess_exec(
            *argv, pass_fds=sandbox.pass_fds, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await done.communicate()
    log = [json.loads(line) for line in (root / "network.jsonl").open()]
    print(json.dumps({"seen": json.loads(out), "log": log}))

asyncio.run(main())
"""


@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no system python3 for an unprivileged run")
@pytest.mark.skipif(
    not readable_by_others(REPO), reason="the checkout is not readable by an unprivileged user"
)
def test_run_as_a_user_who_is_not_root_the_harness_sandbox_works_in_a_user_namespace() -> None:
    """The harness sandbox's host side is stdlib-only too: driven as ``nobody`` it becomes a
    user namespace whose root sets up the network, and the harness keeps no capability."""
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i",
         "PATH=/usr/bin:/bin", str(SYSTEM_PYTHON), "-", str(REPO), NOBODYS_HARNESS],
        input=AS_NOBODY, capture_output=True, text=True, timeout=120, cwd="/",
    )  # fmt: skip
    if "Permission denied" in done.stderr:
        pytest.skip(f"the checkout is not readable by nobody: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["seen"]["answer"] == "gateway got hello"
    assert result["seen"]["caps"] == ["0000000000000000", "0000000000000000"]
    assert result["seen"]["resolve"] == -2
    events = [(e["event"], e.get("name")) for e in result["log"]]
    assert events[:2] == [("sandbox_ready", None), ("gateway_connection", None)]
    assert {name for event, name in events if event == "dns_query"} == {"example.org"}


def test_the_resolver_stub_answers_nxdomain_to_the_question_asked() -> None:
    question = b"\x07example\x03com\x00" + struct.pack("!HH", 28, 1)  # AAAA, IN
    query = struct.pack("!HHHHHH", 0xBEEF, 0x0100, 1, 0, 0, 0) + question
    answer, name, qtype = harness_init.nxdomain(query)
    ident, flags, questions, answers = struct.unpack("!HHHH", answer[:8])
    assert (ident, flags & 0x8000, flags & 0x000F, questions, answers) == (0xBEEF, 0x8000, 3, 1, 0)
    assert answer[12:] == question and (name, qtype) == ("example.com", "AAAA")
    broken, name, _ = harness_init.nxdomain(query[:15])  # a question cut short: FORMERR
    assert struct.unpack("!H", broken[2:4])[0] & 0x000F == 1 and name is None


def test_the_network_log_stops_at_its_size_limit(monkeypatch) -> None:
    """A harness sending packet after packet cannot fill the host's disk through the log."""
    monkeypatch.setattr(harness_init, "LOG_BYTES", 100)
    stream = io.StringIO()
    log = harness_init._Log(stream)
    for number in range(10):
        log.write(event="blocked_connection", to=f"10.0.0.{number}:80")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines[-1] == {"event": "log_full"} and len(stream.getvalue()) <= 100 + 22
    assert all(line["event"] == "blocked_connection" for line in lines[:-1])


def test_the_example_harness_passes_a_conformance_scenario_in_the_sandbox(tmp_path) -> None:
    """The example harness of docs/harnesses.md, as configs/harnesses.yaml registers it, runs
    its shell commands in the sandbox and still meets P0 (all seven scenarios: the slow
    suite/test_command_harness_suite.py)."""
    suite = run_suite(
        load_configs(REPO / "configs"),
        harnesses=["minimal_agent"],
        scenarios=["tool_success"],
        output=tmp_path / "run",
        timeout_s=60,
        jobs=1,
    )
    (scenario,) = suite.harnesses["minimal_agent"].scenarios
    assert scenario.failing_checks == [] and suite.harnesses["minimal_agent"].verdict
    episode = suite.output / "minimal_agent" / "tool_success"
    (record,) = (json.loads(line) for line in (episode / "rollouts.jsonl").open())
    (sandbox,) = (r for r in record["ng_agent_observations"]["records"] if r["kind"] == "sandbox")
    assert sandbox["provider"] == "bwrap" and sandbox["outcome"] == "completed"


def test_a_sandbox_record_the_harness_writes_is_not_taken_as_ours(start_gateway, tmp_path) -> None:
    """Only the run says how it isolated a harness: a forged ``sandbox`` record in the
    program's bundle is dropped with a gap, and the run's own is the only one kept."""
    command = program(
        tmp_path,
        """
        answer = ask("hi")
        forged = {"kind": "sandbox", "role": "agent", "provider": "bwrap",
                  "sandbox_id": "forged", "outcome": "completed", "exit_code": 0}
        invocation = {"kind": "agent_invocation", "invocation_id": E["GYM_INVOCATION_ID"],
                      "status": "completed", "model_calls": [],
                      "conversation": [{"role": "user", "content": "hi"}, *answer["output"]]}
        with open(E["GYM_OBSERVATIONS_PATH"], "w") as out:
            json.dump({"source": "test_program", "records": [invocation, forged]}, out)
        """,
    )
    made, _ = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    asyncio.run(_activate(made))
    bundle = asyncio.run(made.close_session("as", EPISODE))["agent_observations"]
    (record,) = (r for r in bundle["records"] if r["kind"] == "sandbox")
    assert record["sandbox_id"] != "forged" and record["outcome"] == "completed"
    assert any("sandbox record" in gap["detail"] for gap in bundle["gaps"])


def test_the_network_log_is_kept_beside_the_capture(start_gateway, tmp_path) -> None:
    """The activation directory goes with the session; its network log stays as evidence."""
    command = program(
        tmp_path,
        """
        answer = ask("hi")
        bundle(conversation=[{"role": "user", "content": "hi"}, *answer["output"]])
        """,
    )
    gateway = start_gateway(ScriptedUpstream(DONE))
    made = create("agent", {"command": command}, gateway=gateway, resources=None)  # scratch dirs
    asyncio.run(_activate(made))
    asyncio.run(made.close_session("as", EPISODE))
    kept = Path(gateway.capture_dir) / f"{EPISODE.capture_key}.root.network.jsonl"
    assert [json.loads(line)["event"] for line in kept.open()][:2] == [
        "sandbox_ready",
        "gateway_connection",
    ]
