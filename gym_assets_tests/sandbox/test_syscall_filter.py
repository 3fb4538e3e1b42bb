"""The seccomp programs of guests and harness activations, run here by a minimal classic-BPF
reader for every machine there is a table for (the hostile suite and the harness sandbox's
tests prove them in the kernel on this machine only)."""

from __future__ import annotations

import pytest

from gym_assets.sandbox import syscall_filter

ALLOW, EPERM = 0x7FFF0000, 0x00050001
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
KEYS = {"x86_64": {248, 249, 250}, "aarch64": {217, 218, 219}}
MEMORY = {"x86_64": {319, 29, 68, 64, 321}, "aarch64": {279, 194, 186, 190, 280}}
REFUSED = {"guest": {m: KEYS[m] | MEMORY[m] for m in ARCHES}, "keys": KEYS}
CALLS = {"guest": syscall_filter.GUEST_CALLS, "keys": syscall_filter.KEY_CALLS}


def _verdict(program: list[tuple[int, int, int, int]], arch: int, nr: int) -> int:
    """What the kernel would answer for system call ``nr`` of ABI ``arch``: only the loads,
    jumps and returns the program uses."""
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:
            accumulator = {0: nr, 4: arch}[k]
        elif code in (0x15, 0x35):
            taken = accumulator == k if code == 0x15 else accumulator >= k
            pc += jt if taken else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
        pc += 1


@pytest.mark.parametrize("machine", sorted(ARCHES))
@pytest.mark.parametrize("calls", sorted(CALLS))
def test_the_program_refuses_exactly_its_calls_and_every_foreign_abi(machine, calls) -> None:
    program = syscall_filter.program(machine, CALLS[calls])
    arch = ARCHES[machine]
    for nr in range(512):
        expected = EPERM if nr in REFUSED[calls][machine] else ALLOW
        assert _verdict(program, arch, nr) == expected, nr
    assert _verdict(program, 0x40000003, 0) == EPERM  # i386 through int 0x80, say
    x32 = EPERM if machine == "x86_64" else ALLOW
    assert _verdict(program, arch, 0x40000000 | 39) == x32


def test_a_call_without_a_number_is_refused_to_build() -> None:
    with pytest.raises(KeyError):
        syscall_filter.program("x86_64", frozenset({"ptrace"}))
