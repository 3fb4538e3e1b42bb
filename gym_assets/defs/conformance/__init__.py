"""Conformance: each harness run through the scripted suite, its P0 gate, the matrix, the sweep."""
