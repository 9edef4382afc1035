"""one_thread() holds in every thread that enters it, even while another thread is inside: torch keeps the
thread count per calling thread, so a lesson computed beside another must set its own (it once did not, and
the MLM lesson's numbers then depended on whether another lesson was running)."""

import threading

import pytest
import torch

from attnlab.io.threads import one_thread

pytestmark = pytest.mark.slow  # trains models


def test_each_thread_runs_on_one_thread_while_another_is_inside():
    inside, leave = threading.Event(), threading.Event()
    seen = {}

    def first():
        with one_thread():
            seen["first"] = torch.get_num_threads()
            inside.set()
            leave.wait(60)
        seen["first_after"] = torch.get_num_threads()

    def second():
        torch.set_num_threads(2)  # this thread's own count before
        with one_thread():
            seen["second"] = torch.get_num_threads()
            with one_thread():  # nested: still one, and the outer block restores
                seen["nested"] = torch.get_num_threads()
            seen["after_nested"] = torch.get_num_threads()
        seen["second_after"] = torch.get_num_threads()

    a = threading.Thread(target=first)
    a.start()
    assert inside.wait(60)
    b = threading.Thread(target=second)
    b.start()
    b.join(60)
    leave.set()
    a.join(60)
    assert seen["first"] == seen["second"] == seen["nested"] == seen["after_nested"] == 1
    assert seen["second_after"] == 2


def test_a_lesson_gives_the_same_numbers_while_another_thread_is_inside():
    from attnlab.lessons.explain import explain
    from attnlab.lessons.mlm import lesson as M

    small = dict(steps=20, d_model=8, lang="en")
    M.trained.cache_clear()
    alone = explain("mlm", **small).held_out_loss
    M.trained.cache_clear()
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with one_thread():
            inside.set()
            leave.wait(600)

    other = threading.Thread(target=hold)
    other.start()
    assert inside.wait(60)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        beside = explain("mlm", **small).held_out_loss
    finally:
        torch.set_num_threads(before)
        leave.set()
        other.join(60)
        M.trained.cache_clear()
    assert beside == alone
