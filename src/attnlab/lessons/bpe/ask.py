"""Asked first: after 1024 merges' worth of vocabulary, how many tokens a character does unseen Chinese take?
Read from the run's tokens per character at `vocab`."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: ~3 (bytes); b: 1.2-2.5; c: ~1 (0.8-1.2); d: under 0.8
BYTES, ONE, WORDS = 2.5, 1.2, 0.8  # the options' bounds


def answer(r) -> Answer:
    tpc, bytes_only = r.tokens_per_char["zh"][-1], r.tokens_per_char["zh"][0]
    if tpc >= BYTES:
        option = "a"
    elif tpc >= ONE:
        option = "b"
    elif tpc >= WORDS:
        option = "c"
    else:
        option = "d"
    return Answer(option, {"v": r.sizes[-1], "tpc": tpc, "bytes": bytes_only}, key="tpc")
