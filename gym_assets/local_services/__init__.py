"""Servers of the project's own on this machine: for scaling out on loopback, Postgres for the
Dagster instance's storage, Redis as the Celery broker, and Celery workers that run steps; and a
real (tiny) model server for people without a key and for the slow tests (``model_install``).

Each keeps its state under one directory the project creates (by default under the data root;
the model under .model/ beside the configs),
listens on 127.0.0.1 only, and is stopped by the same module that started it. No Dagster import:
these start programs (``scripts/postgres.sh``, ``scripts/redis.sh`` and the tests use them).
"""
