"""bench/soak.py's verdict (the soak itself is a command, not a test): what it judges."""

from __future__ import annotations

from bench.soak import verdict


def _samples(gc_full: list[int]) -> list[dict]:
    """A run whose gc-tracked objects climb steadily while matches finish."""
    return [{"phase": "run", "finished": 100 * i, "rss_kb": 100_000, "fds": 29, "threads": 11,
             "tasks": 200, "watchers": 80, "matches_in_memory": 30, "gc_objects": 40_000 + 10_000 * i,
             "db_kb": 1000 * i, "wal_kb": 4000, "gc_full": n} for i, n in enumerate(gc_full)]


def test_gc_objects_are_judged_only_across_timed_full_collections():
    """Between two timed full collections cyclic garbage only accumulates: a window with fewer
    than two says so instead of flagging growth; with collections in it a climb is flagged."""
    few = verdict(_samples([1] * 10 + [1, 1, 1, 1, 1, 2, 2, 2, 2, 2]))
    assert few["figures"]["gc_objects"]["note"].startswith("not judged: 1 full collection(s)")
    assert "gc_objects" not in few["growing"]
    many = verdict(_samples([1] * 10 + [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]))
    assert many["growing"] == ["gc_objects"] and "note" not in many["figures"]["gc_objects"]
