"""Asked first: with λ < 1, what does ‖∂h_t/∂h_k‖ do as t − k grows? Read from the measured curve, 1 to T apart."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.rnn_gradients.lesson import VANISH_CASE

OPTIONS = ("a", "b", "c")  # a: it shrinks exponentially; b: it stays about the same; c: it grows
CHANGED = 2.0  # T steps apart against 1 step apart: a factor of 2 either way is a change, less is "about the same"


def answer(r) -> Answer:
    # The question is about λ < 1: your λ when it is below 1, else the course's own case, always computed (as the
    # lesson's vanishing claim reads it).
    curve = r.chosen if r.chosen.lam < 1 else next(c for c in r.curves if c.lam == VANISH_CASE)
    near, far = curve.measured[0], curve.measured[-1]  # 1 and T steps apart
    option = "a" if far * CHANGED <= near else "c" if far >= CHANGED * near else "b"
    numbers = {"lam": curve.lam, "near": near, "T": curve.distance[-1], "far": far, "bound": curve.bound[-1]}
    return Answer(option, numbers, key="far")
