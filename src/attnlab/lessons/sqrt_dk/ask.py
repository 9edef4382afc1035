"""Asked first: without the 1/√d_k, what happens to the variance of q·k as d_k grows? Read from the sweep."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: it stays about 1; b: it grows in proportion to d_k; c: it shrinks


def answer(r) -> Answer:
    lo, hi = r.sweep[0], max(r.sweep, key=lambda s: s.d_k)  # d_k = 1 and the widest d_k measured
    per_dk = hi.var / hi.d_k  # about 1 when Var(q·k) = d_k
    if 0.5 <= per_dk <= 2 and hi.var > 2 * lo.var:
        option = "b"
    elif hi.var < lo.var / 2:
        option = "c"
    else:
        option = "a"
    return Answer(option, {"d_lo": lo.d_k, "var_lo": lo.var, "d_hi": hi.d_k, "var_hi": hi.var}, key="var_hi")
