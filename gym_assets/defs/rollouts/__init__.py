"""Rollouts: every planned task of a benchmark run with one harness, and the checks on them."""
