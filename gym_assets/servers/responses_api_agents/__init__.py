"""Agents: each implementation directory ships an ``app.py`` with a ``create`` factory."""
