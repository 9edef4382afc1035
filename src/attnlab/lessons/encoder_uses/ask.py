"""Asked first: a classifier that only counts characters (order thrown away) against the encoder, on telling intact
couplets from spoilt ones. Read from the run's test accuracies (mean over the seeds)."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: about the same; b: the encoder clearly better; c: the counts better
LEVEL = 0.05  # closer than this (20 of 400 test couplets) counts as about the same


def answer(r) -> Answer:
    encoder = sum(r.accuracy["encoder"]) / len(r.accuracy["encoder"])
    bag = r.accuracy["bag"]
    option = "a" if abs(encoder - bag) < LEVEL else "b" if encoder > bag else "c"
    numbers = {"encoder": encoder, "bag": bag, "majority": r.majority, "n_test": r.n_test}
    return Answer(option, numbers, key="encoder")
