"""Where no output may go: links, devices, FIFOs, sockets, the wrong type, over the configs."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from gym_assets.errors import OutputError
from gym_assets.outputs.claims import claim_dir, write_file
from gym_assets.outputs.markers import PLAN_FILE, TASKSET
from gym_assets.outputs.targets import Target
from gym_assets.workspace import Workspace
from gym_assets_tests.filesystems import snapshot


def refused(target: Target, *, directory: bool = True) -> str:
    with pytest.raises(OutputError) as caught:
        if directory:
            claim_dir(target)
        else:
            write_file(target, [b"{}\n"])
    return str(caught.value)


def test_a_link_at_the_output_is_refused_even_to_an_empty_directory(roots, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "out"
    link.symlink_to(elsewhere)
    before = snapshot(tmp_path)
    message = refused(Target(link, TASKSET, roots.configs))
    assert message == (
        f"{link}: is a symbolic link; gym-assets writes only regular files and directories; "
        "choose another --out"
    )
    assert snapshot(tmp_path) == before


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


def make_char_device(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mknod of a device needs root")
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is


@pytest.mark.parametrize(
    ("make", "what"),
    [(make_fifo, "a FIFO"), (make_socket, "a socket"), (make_char_device, "a character device")],
)
@pytest.mark.parametrize("directory", [True, False])
def test_special_files_are_refused_and_never_opened(roots, tmp_path, make, what, directory):
    special = tmp_path / "out"
    make(special)
    before = snapshot(tmp_path)
    message = refused(Target(special, TASKSET, roots.configs), directory=directory)
    assert message.startswith(f"{special}: is {what}; gym-assets writes only regular files")
    assert snapshot(tmp_path) == before  # a FIFO opened for writing would have hung instead


def test_dev_null_is_not_an_output(roots):
    assert "is a character device" in refused(Target(Path("/dev/null"), PLAN_FILE, roots.configs))


def test_a_file_where_a_directory_is_expected_and_the_reverse(roots, tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    file_msg = refused(Target(tmp_path / "file", TASKSET, roots.configs))
    dir_msg = refused(Target(tmp_path / "dir", PLAN_FILE, roots.configs), directory=False)
    assert file_msg == f"{tmp_path / 'file'}: is a file, not a directory; choose another --out"
    assert dir_msg == f"{tmp_path / 'dir'}: is a directory, not a file; choose another --out"


def test_a_path_under_a_regular_file_is_one_clear_line(roots, tmp_path):
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "sub"
    assert refused(Target(out, TASKSET, roots.configs)) == f"{out}: cannot write: Not a directory"


@pytest.mark.parametrize(
    ("where", "says"),
    [
        (lambda r: r.configs, "is the configs root"),
        (lambda r: r.configs / "empty", "is inside the configs root"),
        (lambda r: r.configs.parent, "contains the configs root"),
    ],
)
def test_nothing_is_written_over_the_configs_even_when_empty(roots: Workspace, where, says):
    out = where(roots)
    if out.name == "empty":
        out.mkdir()
    before = snapshot(roots.configs.parent)
    message = refused(Target(out, TASKSET, roots.configs))
    assert message == (
        f"{out}: {says}{'' if says.startswith('is the') else f' {roots.configs}'}; products "
        "are never written over configs; choose another --out"
    )
    assert snapshot(roots.configs.parent) == before


def test_the_configs_are_found_through_links(roots, tmp_path):
    link = tmp_path / "configs-link"
    link.symlink_to(roots.configs)
    assert "is inside the configs root" in refused(Target(link / "out", TASKSET, roots.configs))


def test_no_link_below_the_data_root_is_followed(roots, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    roots.data.mkdir()
    (roots.data / "tasksets").symlink_to(outside)
    target = Target.of(roots.data / "tasksets" / "units", TASKSET, roots)
    assert refused(target) == (
        f"{target.path}: {roots.data / 'tasksets'} is a symbolic link; products under the data "
        "root are written only through real directories"
    )
    assert list(outside.iterdir()) == []


def test_an_explicit_output_may_sit_below_a_linked_directory(roots, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)
    assert claim_dir(Target(tmp_path / "via" / "out", TASKSET, roots.configs)) is True
    assert (real / "out").is_dir()
