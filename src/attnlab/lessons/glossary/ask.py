"""Asked first: in what order do the embedding, a block's output and the logits occur in one forward pass? Read
from the order the model recorded them in (the lesson's stages), not from the quizzes."""

from attnlab.lessons.common.ask import Answer

OPTIONS = (
    "a",
    "b",
    "c",
)  # a: embedding → block → logits; b: the block first, on the ids; c: the logits before the block
TRACED = ("embedding", "block", "logits")  # the stages whose order the trace decides


def answer(r) -> Answer:
    stages = [s for s in r.stages if s.stage in TRACED]
    order = [s.stage for s in stages]
    if order == list(TRACED):
        option = "a"
    elif order.index("block") < order.index("embedding"):
        option = "b"
    else:  # the logits before the block
        option = "c"
    shape = {s.stage: s.shape for s in stages}
    return Answer(
        option, {"order": " → ".join(order), "d": shape["embedding"][-1], "v": shape["logits"][-1]}, key="order"
    )
