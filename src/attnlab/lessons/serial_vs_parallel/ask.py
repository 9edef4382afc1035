"""Asked first: n doubles, what happens to the RNN's and attention's serial steps? Read from the counted operations."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: the RNN's double, attention's stay; b: both double; c: neither changes


def answer(r) -> Answer:
    first, last = r.points[0], r.points[-1]  # the shortest and the longest n, at least two sizes
    added = last.n - first.n  # a chain of one step per position gains at least one operation per added position

    def grows(before: int, after: int) -> bool:
        return after - before >= added

    rnn, attention = grows(first.rnn_ops, last.rnn_ops), grows(first.attention_ops, last.attention_ops)
    option = ("b" if attention else "a") if rnn else "c"  # no option has attention's grow and the RNN's stay
    numbers = {
        "n0": first.n,
        "n1": last.n,
        "rnn0": first.rnn_ops,
        "rnn1": last.rnn_ops,
        "attn0": first.attention_ops,
        "attn1": last.attention_ops,
    }
    return Answer(option, numbers, key="rnn1")
