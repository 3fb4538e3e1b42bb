"""The cleanup stack: LIFO, one deadline, idempotent entries."""

from __future__ import annotations

import asyncio

import pytest

from gym_assets.rollouts.episodes.cleanup import CleanupStack, run_shielded


def _recorder(log: list[str], name: str, fail_times: int = 0, delay: float = 0.0):
    failures = {"left": fail_times}

    async def callback() -> None:
        log.append(name)
        if delay:
            await asyncio.sleep(delay)
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError(f"{name} broke")

    return callback


def test_unwind_runs_newest_first_and_survives_failures() -> None:
    log: list[str] = []
    stack = CleanupStack(1.0)
    stack.register("first", _recorder(log, "first"))
    stack.register("second", _recorder(log, "second", fail_times=1))
    stack.register("third", _recorder(log, "third"))
    errors = asyncio.run(stack.aclose())
    assert log == ["third", "second", "first"]
    assert errors == ["second failed: RuntimeError: second broke"]


def test_one_shared_deadline_for_the_whole_unwind() -> None:
    log: list[str] = []
    stack = CleanupStack(0.1)
    stack.register("never reached", _recorder(log, "never reached"))
    stack.register("slow", _recorder(log, "slow", delay=60))

    async def unwind() -> tuple[list[str], float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        errors = await stack.aclose()
        return errors, loop.time() - start

    errors, elapsed = asyncio.run(unwind())
    assert log == ["slow"]
    assert errors == ["cleanup timed out during slow"]
    assert elapsed < 30  # the 0.1 s deadline, not the minute: no margin a loaded machine eats


def test_early_close_runs_once_and_the_unwind_skips_it() -> None:
    log: list[str] = []
    stack = CleanupStack(1.0)
    entry = stack.register("agent", _recorder(log, "agent"))

    async def scenario() -> None:
        await entry.close()
        await entry.close()  # idempotent: already closed
        await stack.aclose()

    asyncio.run(scenario())
    assert log == ["agent"]


def test_failed_early_close_raises_and_is_retried_in_the_unwind() -> None:
    log: list[str] = []
    stack = CleanupStack(1.0)
    entry = stack.register("agent", _recorder(log, "agent", fail_times=1))

    async def scenario() -> list[str]:
        with pytest.raises(RuntimeError):
            await entry.close()
        return await stack.aclose()

    assert asyncio.run(scenario()) == []
    assert log == ["agent", "agent"]
    assert not entry.active


def test_registering_again_gives_exactly_one_more_attempt() -> None:
    log: list[str] = []
    stack = CleanupStack(1.0)
    entry = stack.register("resources", _recorder(log, "resources", fail_times=5))
    entry.retry_later()
    errors = asyncio.run(stack.aclose())
    assert log == ["resources", "resources"]
    assert len(errors) == 2 and entry.active


def test_early_close_is_bounded_by_the_cleanup_timeout() -> None:
    stack = CleanupStack(0.05)
    entry = stack.register("slow", _recorder([], "slow", delay=5))
    with pytest.raises(TimeoutError):
        asyncio.run(entry.close())


def test_run_shielded_finishes_the_work_then_reraises_the_cancellation() -> None:
    done: list[str] = []

    async def scenario() -> None:
        started, release = asyncio.Event(), asyncio.Event()

        async def work() -> None:
            started.set()
            await release.wait()
            done.append("cleaned")

        task = asyncio.create_task(run_shielded(work()))
        await started.wait()
        task.cancel()  # while the work is still waiting
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert done == ["cleaned"]
