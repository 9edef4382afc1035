"""Asked first: a Transformer, an LSTM and a GRU of one size each train to recall a symbol after d distractors; at
the longest distance, which of them recall it? Read from the run's mean accuracies there."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: all three; b: the Transformer only; c: the recurrent nets only; d: none
RECALLS = 0.5  # right on at least half of the questions (chance is 1/8)


def answer(r) -> Answer:
    acc = r.accuracy
    tf, rnn = acc["transformer"][-1], max(acc["lstm"][-1], acc["gru"][-1])
    option = {(True, True): "a", (True, False): "b", (False, True): "c", (False, False): "d"}[
        (tf >= RECALLS, rnn >= RECALLS)
    ]
    numbers = {
        "steps": r.params["steps"],
        "d": r.distances[-1],
        "tf": tf,
        "lstm": acc["lstm"][-1],
        "gru": acc["gru"][-1],
    }
    return Answer(option, numbers, key="tf")
