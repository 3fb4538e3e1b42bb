"""``read_beneath`` reads only a regular file, reached without a link, within its bound;
``glob_beneath`` finds files without following a link to a directory, within its bound."""

from __future__ import annotations

import os
import stat

import pytest

from gym_assets.untrusted_files import RefusedFile, glob_beneath, read_beneath


@pytest.fixture
def root(tmp_path):
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "kept.json").write_bytes(b"{}")
    (tmp_path / "outside.json").write_bytes(b'{"secret": 1}')
    return tmp_path / "inner"


def test_a_regular_file_is_read(root):
    assert read_beneath(root, "kept.json", 2) == b"{}"


def test_a_missing_file_is_not_found(root):
    with pytest.raises(FileNotFoundError):
        read_beneath(root, "gone.json", 10)


@pytest.mark.parametrize(
    "make, refusal",
    [
        (lambda root: (root / "x").symlink_to(root.parent / "outside.json"), "symbolic link"),
        (lambda root: (root / "x").symlink_to("/dev/zero"), "symbolic link"),
        (lambda root: os.mkfifo(root / "x"), "FIFO"),
        (lambda root: (root / "x").mkdir(), "directory"),
    ],
    ids=["link-to-a-host-file", "link-to-dev-zero", "fifo", "directory"],
)
def test_what_is_not_a_regular_file_is_refused(root, make, refusal):
    make(root)
    with pytest.raises(RefusedFile, match=refusal):
        read_beneath(root, "x", 1 << 20)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_is_refused_unopened(root):
    os.mknod(root / "x", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
    with pytest.raises(RefusedFile, match="a device"):
        read_beneath(root, "x", 1 << 20)


def test_a_linked_directory_on_the_way_is_refused(root):
    (root / "via").symlink_to(root.parent)
    with pytest.raises(RefusedFile, match="link or not a directory"):
        read_beneath(root, "via/outside.json", 1 << 20)


def test_a_file_over_the_bound_is_refused(root):
    (root / "big").write_bytes(b"x" * 11)
    assert read_beneath(root, "big", 11) == b"x" * 11
    with pytest.raises(RefusedFile, match="more than 10 bytes"):
        read_beneath(root, "big", 10)


def test_a_path_that_climbs_out_is_an_error(root):
    with pytest.raises(ValueError):
        read_beneath(root, "../outside.json", 1 << 20)


def test_glob_finds_what_matches_without_following_a_linked_directory(root):
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "s-1.jsonl").write_bytes(b"")
    (root / "a" / "b" / "other.txt").write_bytes(b"")
    (root / "up").symlink_to(root.parent)  # would reach inner/kept.json again, and more
    assert glob_beneath(root, ".", "*/*/s-*.jsonl", 100) == ["a/b/s-1.jsonl"]
    assert glob_beneath(root, "a", "*/*", 100) == ["b/other.txt", "b/s-1.jsonl"]


def test_glob_stops_at_its_bound(root):
    """A guest's directory of links to itself would multiply without end; real directories
    count against the bound."""
    for n in range(12):
        (root / f"loop{n}").symlink_to(".")
        for m in range(12):
            (root / f"dir{n}" / f"dir{m}").mkdir(parents=True)
    with pytest.raises(RefusedFile, match="too many entries"):
        glob_beneath(root, ".", "*/*/*", 100)
    with pytest.raises(RefusedFile, match="link or not a directory"):
        glob_beneath(root, "loop0", "*", 100)
