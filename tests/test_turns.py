"""specviz.classroom.turns: the queue that browser sessions of one server take turns in."""

from __future__ import annotations

import threading
import time

from specviz.classroom.turns import Turns


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_turns_are_served_in_order_of_arrival():
    turns, order = Turns(), []

    def work(name: int) -> None:
        with turns:
            order.append(name)

    threads = []
    with turns:  # hold the CPU while eight callers line up, one after another
        for name in range(8):
            thread = threading.Thread(target=work, args=(name,))
            thread.start()
            threads.append(thread)
            wait_until(lambda n=name: turns.waiting == n + 2)  # the holder and everyone so far
    for thread in threads:
        thread.join()
    assert order == list(range(8))
    assert turns.waiting == 0


def test_a_turn_that_raises_is_given_back():
    turns = Turns()
    try:
        with turns:
            raise RuntimeError("a failed step")
    except RuntimeError:
        pass
    done = threading.Event()
    threading.Thread(target=lambda: (turns.__enter__(), done.set(), turns.__exit__(None, None, None))).start()
    assert done.wait(5)


def test_one_holder_at_a_time():
    turns, inside, most = Turns(), [0], [0]

    def work() -> None:
        for _ in range(50):
            with turns:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                time.sleep(0.0001)
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1


def test_each_item_is_computed_in_a_turn_of_its_own():
    from specviz.classroom.turns import each_in_turn

    turns, seen = Turns(), []

    def units():
        for k in range(3):
            seen.append((k, turns.waiting))  # held by this caller while it computes
            yield k

    got = []
    for item in each_in_turn(units(), lambda: turns):
        got.append((item, turns.waiting))  # between items the turn is free for others
    assert got == [(0, 0), (1, 0), (2, 0)]
    assert seen == [(0, 1), (1, 1), (2, 1)]
