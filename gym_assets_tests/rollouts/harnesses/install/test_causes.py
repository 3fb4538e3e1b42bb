"""The one line of a failed install's stderr that says why (npm's as npm 11 prints them; pip's
"no matching distribution" says that only wheels are taken, and why)."""

from __future__ import annotations

import pytest

from gym_assets.rollouts.harnesses.install import failure_cause

LOG = "npm error A complete log of this run can be found in: /x/_logs/debug-0.log"


@pytest.mark.parametrize(
    ("stderr", "cause"),
    [
        (
            "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope"
            " - Not found\nnpm error 404\nnpm error 404  'nope@1.0.0' is not in this registry."
            f"\n{LOG}\n",
            "npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found",
        ),
        (
            "npm error code ECONNREFUSED\nnpm error syscall connect\nnpm error errno ECONNREFUSED"
            "\nnpm error FetchError: request to http://127.0.0.1:9/x failed\nnpm error\n"
            f"npm error If you are behind a proxy, please make sure that the\n{LOG}\n",
            "npm error FetchError: request to http://127.0.0.1:9/x failed",
        ),
        (
            "Collecting x\nERROR: Could not find a version that satisfies the requirement x==9\n"
            "ERROR: No matching distribution found for x==9\n",
            "ERROR: No matching distribution found for x==9 as a wheel: harness installs take "
            "wheels only (--only-binary=:all:), since building a source distribution runs the "
            "package's own code on the host, outside the harness sandbox; a version published "
            "only as an sdist cannot be installed",
        ),
        ("", None),
    ],
)
def test_the_cause_of_a_failed_install(stderr: str, cause: str | None) -> None:
    assert failure_cause(stderr) == cause
