"""Eval plans: every task of a benchmark once, with the digest of its exact input."""
