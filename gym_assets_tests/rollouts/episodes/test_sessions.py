"""Session bookkeeping shared by resources servers and agents."""

from __future__ import annotations

import copy
import json
import tracemalloc

import pytest

from gym_assets.rollouts.episodes.sessions import SessionBook, SessionConflict

BINDING = {"episode_id": "e1", "task_data": {"x": [1, 2]}}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_identical_seed_reuses_the_session_and_sets_up_once() -> None:
    book: SessionBook[dict] = SessionBook()
    setups: list[int] = []
    first = book.seed("s", BINDING, lambda: setups.append(1) or {"n": 1})
    again = book.seed("s", {"episode_id": "e1", "task_data": {"x": [1, 2]}}, lambda: {"n": 2})
    assert again is first and setups == [1]


def test_conflicting_seed_is_refused() -> None:
    book: SessionBook[None] = SessionBook()
    book.seed("s", BINDING, lambda: None)
    with pytest.raises(SessionConflict, match="another seed"):
        book.seed("s", {**BINDING, "episode_id": "e2"}, lambda: None)
    with pytest.raises(SessionConflict, match="another seed"):
        book.seed("s", {**BINDING, "task_data": {"x": [1, 3]}}, lambda: None)


def test_binding_is_a_copy_the_caller_cannot_mutate() -> None:
    book: SessionBook[None] = SessionBook()
    binding = {"episode_id": "e1", "task_data": {"x": [1]}}
    book.seed("s", binding, lambda: None)
    binding["task_data"]["x"].append(2)
    with pytest.raises(SessionConflict):
        book.seed("s", binding, lambda: None)


def test_repeated_close_returns_the_same_receipt_and_releases_once() -> None:
    book: SessionBook[dict] = SessionBook()
    book.seed("s", BINDING, lambda: {"n": 1})
    releases: list[int] = []
    first = book.close("s", "e1", lambda st: releases.append(1) or {"id": "s", "state": st})
    first["mutated"] = True
    second = book.close("s", "e1", lambda st: {"other": True})
    assert second == {"id": "s", "state": {"n": 1}} and releases == [1]


def test_seed_after_close_is_refused_and_activation_after_close_too() -> None:
    book: SessionBook[None] = SessionBook()
    book.seed("s", BINDING, lambda: None)
    book.close("s", "e1", lambda st: {})
    with pytest.raises(SessionConflict, match="closed"):
        book.seed("s", BINDING, lambda: None)
    with pytest.raises(SessionConflict, match="closed"):
        book.state("s")


def test_close_with_another_episode_is_refused() -> None:
    book: SessionBook[None] = SessionBook()
    book.seed("s", BINDING, lambda: None)
    with pytest.raises(SessionConflict, match="another episode"):
        book.close("s", "e2", lambda st: {})
    book.close("s", "e1", lambda st: {})
    with pytest.raises(SessionConflict, match="another episode"):
        book.close("s", "e2", lambda st: {})


def test_closing_a_never_seeded_id_succeeds_and_blocks_a_late_seed() -> None:
    book: SessionBook[None] = SessionBook()
    assert book.close("lost", "e1", lambda st: {"never": "called"}) == {}
    with pytest.raises(SessionConflict):
        book.seed("lost", BINDING, lambda: None)


def test_a_close_that_cannot_release_keeps_the_session_for_a_retry() -> None:
    book: SessionBook[None] = SessionBook()
    book.seed("s", BINDING, lambda: None)

    def broken(state: None) -> dict:
        raise OSError("cannot release")

    with pytest.raises(OSError):
        book.close("s", "e1", broken)
    assert book.is_open("s")
    assert book.close("s", "e1", lambda st: {"ok": True}) == {"ok": True}


def test_a_receipt_that_is_not_json_keeps_the_session_for_a_retry() -> None:
    book: SessionBook[None] = SessionBook()
    book.seed("s", BINDING, lambda: None)
    with pytest.raises(TypeError):
        book.close("s", "e1", lambda st: {"ids": {1, 2}})
    assert book.is_open("s")
    assert book.close("s", "e1", lambda st: {"ids": [1, 2]}) == {"ids": [1, 2]}


def test_kept_receipts_cost_less_than_their_json() -> None:
    """A worker keeps every receipt of the retry window: a conversation's worth of items each."""
    book: SessionBook[None] = SessionBook()
    items = [{"type": "message", "role": "user", "content": f"turn {i}: 17 km"} for i in range(50)]
    size = len(json.dumps({"observations": items}))

    def release(state: None) -> dict:
        return {"observations": copy.deepcopy(items)}

    tracemalloc.start()
    try:
        for n in range(200):
            book.seed(f"s{n}", {"episode_id": f"e{n}"}, lambda: None)
            receipt = book.close(f"s{n}", f"e{n}", release)
            del receipt  # the caller is done with it; the book keeps its own
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept < 200 * size / 2
    assert book.close("s7", "e7", lambda st: {}) == {"observations": items}


def test_receipts_expire_after_the_retry_window() -> None:
    clock = Clock()
    book: SessionBook[None] = SessionBook(retry_window_seconds=10, clock=clock)
    book.seed("s", BINDING, lambda: None)
    book.close("s", "e1", lambda st: {"receipt": 1})
    clock.now += 9
    assert book.close("s", "e1", lambda st: {}) == {"receipt": 1}
    clock.now += 1
    assert book.close("s", "e1", lambda st: {"fresh": 1}) == {}  # pruned: an unknown id now


@pytest.mark.parametrize("window", [0, -1, float("inf"), float("nan")])
def test_retry_window_must_be_finite_and_positive(window: float) -> None:
    with pytest.raises(ValueError):
        SessionBook(retry_window_seconds=window)


# -- the session cookie (NeMo Gym PR #3554): bound by cookie as well as by id ---------------


@pytest.mark.parametrize("cookie", ["other", "", 7])
def test_a_cookie_of_another_session_or_a_malformed_one_is_refused_everywhere(cookie) -> None:
    book: SessionBook[None] = SessionBook()
    book.seed("s", BINDING, lambda: None)
    book.seed("s", BINDING, lambda: None, "s")  # an identical seed with its cookie: reused
    match = "names session 'other'" if cookie == "other" else "malformed session cookie"
    with pytest.raises(SessionConflict, match=match):
        book.seed("s", BINDING, lambda: None, cookie)
    with pytest.raises(SessionConflict, match=match):
        book.state("s", cookie)
    with pytest.raises(SessionConflict, match=match):
        book.owned_state("s", "e1", cookie)
    with pytest.raises(SessionConflict, match=match):
        book.close("s", "e1", lambda st: {}, cookie)
    assert book.state("s", "s") is None and book.is_open("s")


def test_a_cookie_for_a_session_the_book_forgot_is_refused() -> None:
    clock = Clock()
    book: SessionBook[None] = SessionBook(retry_window_seconds=10, clock=clock)
    with pytest.raises(SessionConflict, match="cookie expired"):
        book.seed("s", BINDING, lambda: None, "s")
    book.seed("s", BINDING, lambda: None)
    assert book.close("s", "e1", lambda st: {"receipt": 1}, "s") == {"receipt": 1}
    clock.now += 10
    with pytest.raises(SessionConflict, match="receipt expired"):
        book.close("s", "e1", lambda st: {}, "s")
    assert book.close("s", "e1", lambda st: {}) == {}  # without a cookie: an unknown id
