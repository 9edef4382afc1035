"""`seeded(seed)` draws the same numbers whatever another thread does meanwhile (lessons/common/params.py). The web
computes lessons on threads, and torch has one global generator: a second thread's `seeded(other)` entering while
the first draws would reseed it under the first, and a page computed beside another request would show other
numbers than the same page alone (the API and a Python call disagreed for multihead in a full suite run)."""

from __future__ import annotations

import threading

import torch

from attnlab.lessons.common.params import seeded


def draws(seed: int) -> list[float]:
    with seeded(seed):
        return torch.rand(8).tolist()


def test_a_second_seeded_block_cannot_reseed_the_first_while_it_draws():
    alone = draws(1)
    inside, tried = threading.Event(), threading.Event()
    other: list[list[float]] = []

    def second():
        inside.wait()
        with seeded(2):  # waits for the first block to end: it never reseeds it
            tried.set()
            other.append(torch.rand(8).tolist())

    thread = threading.Thread(target=second)
    thread.start()
    with seeded(1):
        first = torch.rand(4).tolist()
        inside.set()
        tried.wait(0.5)  # time for the other thread to barge in, were it able to; it is not
        first += torch.rand(4).tolist()
    thread.join()
    assert first == alone
    assert other == [draws(2)]  # and the second block drew what it draws alone
