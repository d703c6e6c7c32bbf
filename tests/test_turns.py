"""specviz.server.turns: the queue that browser sessions of one server take turns in."""

from __future__ import annotations

import threading
import time

import pytest

from specviz.server.turns import Turns


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


def test_a_waiter_hears_its_place_at_once_then_at_most_once_a_note_interval():
    """Under a class every turn taken moves 80 waiters; each redraw of a waiting note costs the server, so a waiter
    hears its first place at once and then, however often it changes, at most once per `note_every`, the latest."""
    turns = Turns(note_every=0.3)
    heard: list[tuple[float, int]] = []
    release, lecturers = threading.Event(), []
    holder = turns.take("step")
    holder.__enter__()

    def wait_in_line() -> None:
        with turns.take("step", lambda ahead, _: heard.append((time.monotonic(), ahead))):
            pass

    def lecture() -> None:
        with turns.take("lecturer"):
            release.wait(10)

    waiter = threading.Thread(target=wait_in_line)
    waiter.start()
    wait_until(lambda: len(heard) == 1)
    assert heard[0][1] == 1  # the holder ahead, said at once
    for _ in range(4):  # four lecturer turns line up ahead of it within a moment
        lecturer = threading.Thread(target=lecture)
        lecturer.start()
        lecturers.append(lecturer)
    wait_until(lambda: turns.waiting == 6)
    wait_until(lambda: len(heard) == 2)
    time.sleep(0.5)
    assert [ahead for _, ahead in heard] == [1, 5]  # not 2, 3, 4 on the way: the latest, once
    assert heard[1][0] - heard[0][0] >= 0.3 - 0.01
    release.set()
    holder.__exit__(None, None, None)
    for thread in [*lecturers, waiter]:
        thread.join()
    assert turns.waiting == 0


# --- work ends with the session that asked for it (issue 52.5, issue 57.4) --------------------------------------------


def test_a_session_that_has_ended_gets_no_turn_and_no_slot_and_gives_its_place_back_while_it_waits():
    from specviz.errors import SessionEndedError
    from specviz.server.turns import Slots

    turns, slots, open_ = Turns(note_every=0.05), Slots(1, per_owner=1), [True]
    with pytest.raises(SessionEndedError), turns.take("heavy", alive=lambda: False):
        pass  # on arrival: never queued
    with pytest.raises(SessionEndedError), slots.hold(owner="10.0.0.1", alive=lambda: False):
        pass
    assert turns.waiting == 0
    ended: list[str] = []

    def wait(queue: str) -> None:
        try:
            if queue == "turn":
                with turns.take("heavy", alive=lambda: open_[0]):
                    ended.append("ran")
            else:
                with slots.hold(owner="10.0.0.1", alive=lambda: open_[0]):
                    ended.append("ran")
        except SessionEndedError:
            ended.append(queue)

    with turns.take("step"), slots.hold(owner="10.0.0.2"):  # others hold both: the session's work waits
        waiters = [threading.Thread(target=wait, args=(queue,)) for queue in ("turn", "slot")]
        for waiter in waiters:
            waiter.start()
        wait_until(lambda: turns.waiting == 2)
        open_[0] = False  # the tab is closed while it waits
        for waiter in waiters:
            waiter.join(5)
        assert sorted(ended) == ["slot", "turn"] and turns.waiting == 1  # the holder alone: its place given back
    with slots.hold(owner="10.0.0.1"):  # its address's share is free again (per_owner = 1)
        pass


def test_a_links_steps_are_paced_like_clicks_each_in_a_turn_and_stop_when_its_session_ends():
    """decode_steps=6 at 2 Steps a second, on a fake clock: six steps, each in a heavy turn of its own, 0.5 s apart
    (five waits: 2.5 s, none of it wall time); the same link whose tab closes after the third step takes no fourth."""
    from specviz.errors import SessionEndedError
    from specviz.server.stepper import LiveRun, Stepper
    from specviz.server.turns import Pacer

    class Run:
        def __init__(self) -> None:
            self.steps, self.done = [], False

    def open_link(steps: int, closes_after: int | None) -> tuple[Run, list[str], list[float]]:
        now, slept, turns, kinds = [0.0], [], Turns(), []
        pacer = Pacer(2.0, clock=lambda: now[0], sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
        run = Run()

        def step(decoder: Run) -> bool:  # the page's: a failure (the session gone) ends the link's steps
            try:
                with turns.take("heavy", alive=lambda: closes_after is None or len(run.steps) < closes_after):
                    kinds.append("heavy")
                    decoder.steps.append(now[0])
                    now[0] += 0.1  # the step itself takes 0.1 s
                return True
            except SessionEndedError:
                return False

        Stepper().open_link(LiveRun(settings="settings", start=lambda: run, step=step, pace=pacer.wait), steps)
        return run, kinds, slept

    run, kinds, slept = open_link(6, None)
    assert run.steps == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0, 2.5]) and kinds == ["heavy"] * 6
    assert slept == pytest.approx([0.4] * 5)  # 0.5 s apart, the 0.1 s of each step included
    run, kinds, _ = open_link(6, 3)
    assert len(run.steps) == 3 and kinds == ["heavy"] * 3


# --- making way for the lecturer between two parts of a long piece of work ------------------------------------


def test_a_students_long_work_makes_way_for_the_lecturers_turn_between_its_parts():
    """Two turns at once (a class server's width): a student's page opening holds one, the lecturer takes the other.
    At the opening's next part, `make_way` waits until the lecturer's turn is given back, then goes on; with no
    lecturer there it returns at once. The student's work never runs beside the lecturer's."""
    turns, events = Turns(width=2), []
    lecturer_in, lecturer_out = threading.Event(), threading.Event()

    def lecturer() -> None:
        with turns.take("lecturer"):
            events.append("lecturer in")
            lecturer_in.set()
            lecturer_out.wait(5)
            events.append("lecturer out")

    with turns.take("step"):
        assert turns.make_way() == 0.0  # nobody earlier: no wait
        thread = threading.Thread(target=lecturer)
        thread.start()
        assert lecturer_in.wait(5)
        threading.Timer(0.2, lecturer_out.set).start()
        waited = turns.make_way()
        events.append("student's next part")
        thread.join()
    assert events == ["lecturer in", "lecturer out", "student's next part"] and waited >= 0.15
    assert turns.waiting == 0


def test_at_full_width_the_student_gives_its_turn_to_the_lecturer_and_takes_it_back_before_later_students():
    """One turn at a time: the student's opening holds it, the lecturer and then another student's Step wait. At
    the opening's next part it gives the turn to the lecturer, and takes it back after, before the Step that came
    later; a holder's own later part has nothing to make way for."""
    turns, order = Turns(width=1), []

    def take(kind: str, name: str) -> None:
        with turns.take(kind):
            order.append(name)

    with turns.take("step"):
        order.append("opening, first part")
        boss = threading.Thread(target=take, args=("lecturer", "lecturer"))
        boss.start()
        wait_until(lambda: turns.waiting == 2)
        later = threading.Thread(target=take, args=("step", "a later Step"))
        later.start()
        wait_until(lambda: turns.waiting == 3)
        turns.make_way()
        order.append("opening, second part")
        assert turns.make_way() == 0.0
    boss.join()
    later.join()
    assert order == ["opening, first part", "lecturer", "opening, second part", "a later Step"]
    assert turns.waiting == 0


def test_a_heavy_job_makes_way_for_the_lecturer_only_not_for_students_steps():
    """A heavy unit between two passes of a long prompt: students' Steps held and waiting beside it do not stop it
    (they go before it in the queue already; in a class that steps all the time it would never go on)."""
    turns = Turns(width=2)
    student_in, student_out = threading.Event(), threading.Event()

    def student() -> None:
        with turns.take("step"):
            student_in.set()
            student_out.wait(5)

    with turns.take("heavy"):
        thread = threading.Thread(target=student)
        thread.start()
        assert student_in.wait(5)
        assert turns.make_way() == 0.0
    student_out.set()
    thread.join()


def test_a_session_that_ends_while_it_makes_way_gives_its_turn_up():
    """The lecturer holds the other turn; the student's tab closes while its opening waits to go on: SessionEndedError,
    and its turn is neither held nor queued (the holder's exit gives back nothing twice)."""
    from specviz.errors import SessionEndedError

    turns, open_tab = Turns(width=2), [True]
    release = threading.Event()

    def lecturer() -> None:
        with turns.take("lecturer"):
            release.wait(5)

    boss = threading.Thread(target=lecturer)
    with pytest.raises(SessionEndedError), turns.take("step"):
        boss.start()
        wait_until(lambda: turns.waiting == 2)
        threading.Timer(0.1, lambda: open_tab.__setitem__(0, False)).start()
        turns.make_way(alive=lambda: open_tab[0])
    assert turns.waiting == 1  # the lecturer's alone
    release.set()
    boss.join()
    assert turns.waiting == 0
