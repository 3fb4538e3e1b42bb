"""Conformance profile ids: ours, and the other names of the same check catalogue.

A profile id names a catalogue of checks and its gate. Ours is ``gym-p0/v3``; the reference's
newest checker and its docs name the same catalogue (typed checks that pass, fail or are not
applicable, with a per-check P0 gate) ``gym-p0/v1``, so a caller who passes that id gets this
catalogue, recorded under our id so that the same inputs give the same report whichever name
was used. Any other id is refused with the list of known ones. Stdlib only: the command line
prints these in ``--help`` without loading the checks.
"""

from __future__ import annotations

from collections.abc import Mapping

PROFILE_ID = "gym-p0/v3"
"""The profile of this catalogue; recorded in every result and report."""

PROFILES: Mapping[str, str] = {PROFILE_ID: PROFILE_ID, "gym-p0/v1": PROFILE_ID}
"""Every accepted id and the profile it denotes."""
