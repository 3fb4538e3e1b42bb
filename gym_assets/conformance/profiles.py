"""Conformance profile ids: ours, and the other names of the same check catalogue.

A profile id names a catalogue of checks and its gate. Ours is ``gym-p0/v3``; the reference's
newest checker and its docs name the same catalogue (typed checks that pass, fail or are not
applicable, with a per-check P0 gate) ``gym-p0/v1``, so a caller who passes that id gets this
catalogue, and its reports record ``gym-p0/v1``, as the reference's record the id they ran
under. Any other id is refused with the list of known ones. Stdlib only: the command line
prints these in ``--help`` without loading the checks.
"""

from __future__ import annotations

PROFILE_ID = "gym-p0/v3"
"""The default profile of this catalogue; a report records the id it was asked for."""

PROFILES: tuple[str, ...] = (PROFILE_ID, "gym-p0/v1")
"""Every accepted id; all name this one catalogue."""
