"""The first program in a harness's sandbox: the only network it has, then the harness.

Bubblewrap starts it (stdlib only, ``python -I -S``) with the privileges needed to set up
the sandbox's own network namespace, where nothing but loopback exists. It sets up

* a resolver stub on port 53, UDP and TCP, answering NXDOMAIN to every query (the sandbox's
  ``/etc/resolv.conf`` names 127.0.0.1), so a lookup fails at once and its name is logged;
* a relay on the gateway's own address (``127.0.0.1:<port>``, so the harness keeps its base
  URL) carrying each connection over the Unix socket bound into the sandbox to the host,
  whose half (``gateway_route``) forwards it to the gateway (none when the config names no
  gateway: a ``--version`` probe has no route out at all);
* a watch on loopback, where every outside address leads in this namespace, logging each
  connection attempt to one (refused at once: nothing listens there);

then refuses itself and all it starts every kernel-key call (``syscall_filter.KEY_CALLS``,
once it has joined its new session keyring: keys outlive the sandbox in the host kernel),
starts the harness (the argv after ``--``, already wrapped in its privilege drop) under
the configured rlimits, gives up its own root for an unprivileged uid of its own, serves until
the harness exits and exits with the harness's status. Every looked-up name, gateway
connection and outside attempt is one JSON line on the log descriptor the host passed in;
the harness never holds it and, as another uid or with us non-dumpable, cannot take it.
"""

from __future__ import annotations

import asyncio
import ctypes
import ipaddress
import json
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
from typing import Any, TextIO

if __package__:  # imported on the host, for READY and by the tests
    from gym_assets.sandbox import syscall_filter
else:  # the sandbox's first program: -I leaves its own folder, where the filter is, off the path
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import syscall_filter

DNS_PORT = 53
CHUNK = 1 << 16
READY = "sandbox_ready"
LOG_BYTES = 16 << 20
_PR_SET_DUMPABLE = 4
_ETH_P_ALL = 0x0003
_QTYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA"}
_QTYPES |= {33: "SRV", 64: "SVCB", 65: "HTTPS", 255: "ANY"}
_RLIMITS = {
    "memory_bytes": resource.RLIMIT_DATA,
    "processes": resource.RLIMIT_NPROC,
    "open_files": resource.RLIMIT_NOFILE,
    "file_bytes": resource.RLIMIT_FSIZE,
}


async def splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction of a connection until EOF, then half-close the other side (an HTTP
    client may close its sending side and still wait for the answer)."""
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def join(
    left: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    right: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """Carry bytes both ways between two connections until both directions ended."""
    try:
        await asyncio.gather(splice(left[0], right[1]), splice(right[0], left[1]))
    finally:
        for _, writer in (left, right):
            writer.close()


def nxdomain(query: bytes) -> tuple[bytes, str | None, str | None]:
    """The NXDOMAIN answer to a DNS query, with the name and type it asked for (``None`` when
    the question cannot be read: then the answer is FORMERR)."""
    if len(query) < 12:
        return b"", None, None
    ident, flags, questions = struct.unpack("!HHH", query[:6])
    name, end = _question(query) if questions >= 1 else (None, 12)
    answer_flags = 0x8000 | (flags & 0x7800) | (flags & 0x0100) | 0x0080
    if name is None:
        return struct.pack("!HHHHHH", ident, answer_flags | 1, 0, 0, 0, 0), None, None
    (qtype,) = struct.unpack("!H", query[end : end + 2])
    header = struct.pack("!HHHHHH", ident, answer_flags | 3, 1, 0, 0, 0)
    return header + query[12 : end + 4], name, _QTYPES.get(qtype, str(qtype))


def _question(query: bytes) -> tuple[str | None, int]:
    labels: list[str] = []
    at = 12
    while at < len(query):
        size = query[at]
        if size == 0:
            if at + 5 > len(query):
                break
            return ".".join(labels) or ".", at + 1
        if size > 63 or at + 1 + size > len(query):  # compression has no place in a question
            break
        labels.append(query[at + 1 : at + 1 + size].decode("ascii", "backslashreplace"))
        at += 1 + size
    return None, 12


class _Log:
    """One JSON line per event, up to ``LOG_BYTES`` (a harness sending packet after packet
    must not fill the host's disk), then one ``log_full`` line and nothing more."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.written = 0

    def write(self, **fields: Any) -> None:
        line = json.dumps(fields, sort_keys=True) + "\n"
        if self.written + len(line) > LOG_BYTES:
            line = "" if self.written > LOG_BYTES else '{"event": "log_full"}\n'
            self.written = LOG_BYTES + 1
        else:
            self.written += len(line)
        self.stream.write(line)
        self.stream.flush()


class _Resolver(asyncio.DatagramProtocol):
    def __init__(self, log: _Log) -> None:
        self.log = log
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        answer = _answer(self.log, data, "udp")
        if answer:
            self.transport.sendto(answer, addr)


def _answer(log: _Log, query: bytes, transport: str) -> bytes:
    answer, name, qtype = nxdomain(query)
    log.write(event="dns_query", name=name, type=qtype, transport=transport)
    return answer


def _serve_dns_tcp(log: _Log):
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while prefix := await reader.readexactly(2):
                query = await reader.readexactly(struct.unpack("!H", prefix)[0])
                answer = _answer(log, query, "tcp")
                writer.write(struct.pack("!H", len(answer)) + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return serve


def _relay(log: _Log, socket_path: str, address: str):
    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            host_side = await asyncio.open_unix_connection(socket_path)
        except OSError as exc:
            log.write(event="gateway_connection", to=address, error=exc.strerror or str(exc))
            writer.close()
            return
        log.write(event="gateway_connection", to=address)
        await join((reader, writer), host_side)

    return carry


class _Watch:
    """Outside addresses made local (``_route_everything_here``), so a connection to one is
    refused at once instead of failing without a trace; this packet socket on loopback sees
    the first packet of each (a TCP SYN, a UDP datagram) and logs where it was going. The
    sandbox's own loopback traffic, the relay's and the resolver's are not attempts."""

    def __init__(self, log: _Log, sock: socket.socket) -> None:
        self.log, self.sock = log, sock

    def read(self) -> None:
        try:
            packet, (_, _, kind, _, _) = self.sock.recvfrom(128)
        except BlockingIOError:
            return
        if kind == socket.PACKET_OUTGOING:  # loopback shows each packet twice
            attempt = _attempt(packet)
            if attempt is not None:
                self.log.write(event="blocked_connection", to=attempt[0], protocol=attempt[1])


def _attempt(packet: bytes) -> tuple[str, str] | None:
    """``(address:port, protocol)`` of an IP packet opening a TCP connection or carrying UDP
    to a non-loopback address and not to the resolver, else ``None``."""
    version = packet[0] >> 4 if packet else 0
    if version == 4 and len(packet) >= 20:
        header, protocol = (packet[0] & 15) * 4, packet[9]
        family, target = socket.AF_INET, packet[16:20]
    elif version == 6 and len(packet) >= 40:
        header, protocol, family, target = 40, packet[6], socket.AF_INET6, packet[24:40]
    else:
        return None
    address = ipaddress.ip_address(socket.inet_ntop(family, target))
    segment = packet[header:]
    if (
        address.is_loopback
        or protocol not in (6, 17)
        or len(segment) < (20 if protocol == 6 else 8)
    ):
        return None
    source, port = struct.unpack("!HH", segment[:4])
    syn = protocol == 6 and segment[13] & 0x12 == 0x02
    if DNS_PORT in (source, port) or not (syn or protocol == 17):  # the resolver logs its own
        return None
    shown = f"[{address}]" if family == socket.AF_INET6 else str(address)
    return f"{shown}:{port}", "tcp" if protocol == 6 else "udp"


def _route_everything_here() -> None:
    """Every address is local in this namespace: nothing leaves it (there is no interface to
    leave by), and an attempt reaches loopback, where ``_Watch`` sees it."""
    ip = shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if ip is None:
        raise OSError("the sandbox has no ip(8) to route outside addresses to loopback")
    for family in ("-4", "-6"):
        subprocess.run([ip, family, "route", "add", "local", "default", "dev", "lo"], check=True)


def _bound(config: dict[str, Any]) -> dict[str, socket.socket]:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", DNS_PORT))  # a resolver hard-coded in a program ends here too
    watch = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(_ETH_P_ALL))
    watch.bind(("lo", 0))
    watch.setblocking(False)
    bound = {
        "dns_udp": udp,
        "dns_tcp": socket.create_server(("0.0.0.0", DNS_PORT)),
        "watch": watch,
    }
    if config["gateway"] is not None:
        host, port = config["gateway"]
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        bound["relay"] = socket.create_server((host, port), family=family)
    return bound


def _limit(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        resource.setrlimit(_RLIMITS[name], (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _new_session_keyring() -> None:
    """Join a new, empty session keyring (the harness inherits it), so no key of the session
    that started the run is reachable; ``keyctl session -`` would say so on the harness's
    stdout."""
    keyutils = ctypes.CDLL("libkeyutils.so.1", use_errno=True)
    if keyutils.keyctl_join_session_keyring(None) < 0:
        raise OSError(ctypes.get_errno(), "cannot join a new session keyring")


def _drop_privileges(uid: int | None) -> None:
    """Root gives way to an uid of its own (which also makes us non-dumpable); without root
    (a user namespace) non-dumpable alone keeps the harness's same uid out of our fds."""
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


async def _serve(config: dict[str, Any], command: list[str], log: _Log) -> int:
    _new_session_keyring()
    syscall_filter.install(syscall_filter.KEY_CALLS)
    _route_everything_here()
    sockets = _bound(config)
    address = None if config["gateway"] is None else "{}:{}".format(*config["gateway"])
    log.write(event=READY, resolver=f"*:{DNS_PORT}", relay=address)  # bound: nothing is lost
    env = {k: v for k, v in os.environ.items() if k not in config["unset"]}
    harness = subprocess.Popen(command, env=env, preexec_fn=lambda: _limit(config["limits"]))
    _drop_privileges(config.get("uid"))
    loop = asyncio.get_running_loop()
    await loop.create_datagram_endpoint(lambda: _Resolver(log), sock=sockets["dns_udp"])
    await asyncio.start_server(_serve_dns_tcp(log), sock=sockets["dns_tcp"])
    if address is not None:
        relay = _relay(log, config["socket"], address)
        await asyncio.start_server(relay, sock=sockets["relay"])
    loop.add_reader(sockets["watch"].fileno(), _Watch(log, sockets["watch"]).read)
    status = await loop.run_in_executor(None, harness.wait)
    return 128 - status if status < 0 else status


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    if argv[2] != "--" or len(argv) < 4:
        print("usage: harness_init.py CONFIG -- COMMAND...", file=sys.stderr)
        return 2
    log = _Log(os.fdopen(config["log_fd"], "a", encoding="utf-8"))
    # Not asyncio.run: relay connections still open when the harness exited are not unwound.
    return asyncio.new_event_loop().run_until_complete(_serve(config, argv[3:], log))


if __name__ == "__main__":
    status = main(sys.argv)
    sys.stdout.flush()
    os._exit(status)  # open connections and the executor thread do not hold us up
