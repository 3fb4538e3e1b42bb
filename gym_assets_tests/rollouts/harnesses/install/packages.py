"""Real packages built in the test, installed by the real tools without the network: a wheel
(or a hostile source distribution) pip finds in a local folder, and an npm tarball served by a
registry on loopback."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gym_assets_tests.loopback_http import serving

PIP_DIST = "fake-harness-cli"
NPM_PACKAGE = "fake-harness-cli"
PROGRAM = "fakeharness"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def build_wheel(folder: Path, version: str, *, program: str = PROGRAM) -> Path:
    """A pure-Python wheel whose console script ``program`` prints its version."""
    module = "fake_harness_cli"
    info = f"{PIP_DIST.replace('-', '_')}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"def main():\n    print('{PROGRAM} {version}')\n".encode(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {PIP_DIST}\nVersion: {version}\n".encode()
        ),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[console_scripts]\n{program} = {module}:main\n".encode(),
    }
    record = "".join(f"{name},{_record_hash(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{PIP_DIST.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def build_sdist(folder: Path, version: str, marker: Path) -> Path:
    """A source distribution whose in-tree build backend (no build requirements, so pip needs
    no index to build it) writes ``marker`` as soon as pip imports it: on the host, with the
    installing user's rights, if pip ever builds it there."""
    top = f"{PIP_DIST.replace('-', '_')}-{version}"
    files = {
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {PIP_DIST}\nVersion: {version}\n",
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n',
        "backend.py": f"import pathlib\npathlib.Path({str(marker)!r}).write_text('built here')\n",
    }
    folder.mkdir(parents=True, exist_ok=True)
    sdist = folder / f"{top}.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            entry = tarfile.TarInfo(f"{top}/{name}")
            entry.size = len(data)
            archive.addfile(entry, io.BytesIO(data))
    return sdist


def _manifest(version: str, postinstall: str | None) -> dict:
    manifest = {"name": NPM_PACKAGE, "version": version, "bin": {PROGRAM: "cli.js"}}
    if postinstall is not None:
        manifest["scripts"] = {"postinstall": "node postinstall.js"}
    return manifest


def npm_tarball(version: str, postinstall: str | None = None) -> bytes:
    """An npm package whose ``bin`` is a node script printing its version; ``postinstall``: the
    source of a node script it runs when installed."""
    members = {
        "package/package.json": json.dumps(_manifest(version, postinstall)).encode(),
        "package/cli.js": f"#!/usr/bin/env node\nconsole.log('{PROGRAM} {version}');\n".encode(),
    }
    if postinstall is not None:
        members["package/postinstall.js"] = postinstall.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            entry = tarfile.TarInfo(name)
            entry.size, entry.mode = len(data), 0o755
            archive.addfile(entry, io.BytesIO(data))
    return buffer.getvalue()


@contextmanager
def npm_registry(versions: list[str], postinstall: str | None = None) -> Iterator[str]:
    """A registry on 127.0.0.1 serving ``NPM_PACKAGE`` at ``versions``; yields its URL."""
    tarballs = {version: npm_tarball(version, postinstall) for version in versions}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{port}/{NPM_PACKAGE}/-/"
            if self.path.rstrip("/") == f"/{NPM_PACKAGE}":
                entries = {
                    version: {
                        **_manifest(version, postinstall),
                        "hasInstallScript": postinstall is not None,
                        "dist": {
                            "tarball": f"{base}{NPM_PACKAGE}-{version}.tgz",
                            "shasum": hashlib.sha1(data).hexdigest(),
                            "integrity": "sha512-"
                            + base64.b64encode(hashlib.sha512(data).digest()).decode(),
                        },
                    }
                    for version, data in tarballs.items()
                }
                latest = {"latest": versions[-1]}
                body = json.dumps({"name": NPM_PACKAGE, "dist-tags": latest, "versions": entries})
                self._send(body.encode(), "application/json")
                return
            for version, data in tarballs.items():
                if self.path == f"/{NPM_PACKAGE}/-/{NPM_PACKAGE}-{version}.tgz":
                    self._send(data, "application/octet-stream")
                    return
            self.send_error(404)

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as port:  # the handler reads ``port`` once the server is bound
        yield f"http://127.0.0.1:{port}/"
