"""Property test: SystemTimer against a naive model, under random adds, cancels, advances."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.timer.timer_helpers import RecordingTask, manual_timer

_delay = st.one_of(
    st.integers(-3, 25),  # level 0, and already due
    st.integers(0, 500),
    st.integers(0, 50_000),
    st.integers(0, 10**8),  # days
)
_op = st.one_of(
    st.tuples(st.just("add"), _delay),
    st.tuples(st.just("cancel"), st.integers(0, 10**6)),
    st.tuples(st.just("advance"), st.one_of(st.integers(0, 30), st.integers(0, 10**6), st.integers(0, 10**8))),
)


@settings(max_examples=250, deadline=None)
@given(
    wheel_size=st.integers(2, 20),
    start=st.integers(0, 10**9),
    ops=st.lists(_op, max_size=80),
)
def test_timer_matches_naive_model(wheel_size: int, start: int, ops: list[tuple[str, int]]) -> None:
    timer, clock = manual_timer(start_ms=start, wheel_size=wheel_size)
    log: list[tuple[int, int]] = []  # (task index, when it ran)
    tasks: list[RecordingTask] = []
    due: dict[int, int] = {}  # model: index -> due time, for tasks neither run nor cancelled
    due_at: dict[int, int] = {}
    ran: set[int] = set()
    for kind, x in ops:
        now = clock.monotonic_ms()
        if kind == "add":
            index = len(tasks)
            task = RecordingTask(x, index, log, clock)
            tasks.append(task)
            timer.add(task)
            if x <= 0:
                ran.add(index)  # due at once: runs on add
            else:
                due[index] = due_at[index] = now + x
        elif kind == "cancel" and tasks:
            index = x % len(tasks)
            tasks[index].cancel()
            due.pop(index, None)
        elif kind == "advance":
            before = len(log)
            clock.advance(x)
            timer.advance_clock(0)
            now = clock.monotonic_ms()
            now_due = {i for i, d in due.items() if d <= now}
            for i in now_due:
                del due[i]
            ran |= now_due
            # Everything that ran in this step was due, and it ran in due order.
            step = [label for label, _ in log[before:]]
            assert set(step) == now_due
            assert [due_at[i] for i in step] == sorted(due_at[i] for i in step)
        assert {label for label, _ in log} == ran
        assert all(t.runs == (i in ran) for i, t in enumerate(tasks))
        assert timer.size == len(due)
    assert len(log) == len(ran)  # nothing ran twice
