"""Asked first: guessing a hidden character, does the bidirectional encoder or the left-only GPT get more right?
Decided as the claim is: the paired lead in standard errors, accuracy and -ln p agreeing, against LEADS."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: the bidirectional encoder; b: the causal model; c: about the same


def answer(r) -> Answer:
    from attnlab.lessons.mlm.claims import LEADS, agreeing

    z = r.paired["bidirectional-causal"]
    lead = agreeing(z["z_accuracy"], z["z_loss"])
    option = "a" if lead >= LEADS else "b" if lead <= -LEADS else "c"
    return Answer(
        option,
        {
            "n": r.n_masked,
            "bi": r.accuracy["bidirectional"],
            "causal": r.accuracy["causal"],
            "za": z["z_accuracy"],
            "zl": z["z_loss"],
            "need": LEADS,
        },
        key="bi",
    )
