"""Asked first: with 50 images, which of a ViT and a CNN of the same size reads digits better, and does the ViT catch
up given all 1,300? Read from the run's mean accuracies at the fewest and the most images."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: ViT no worse with few; b: CNN first, ViT level by the most; c: gap narrows; d: not
LEVEL = 0.01  # a gap this small at the most images counts as caught up (five test images of 497)


def answer(r) -> Answer:
    acc, few, most = r.accuracy, 0, len(r.n_train) - 1
    gap_few, gap_most = acc["cnn"][few] - acc["vit"][few], acc["cnn"][most] - acc["vit"][most]
    if gap_few <= 0:
        option = "a"
    elif gap_most <= LEVEL:
        option = "b"
    elif gap_most < gap_few / 2:
        option = "c"
    else:
        option = "d"
    numbers = {
        "steps": r.params["steps"],
        "seeds": r.params["seeds"],
        "few": r.n_train[few],
        "most": r.n_train[most],
        "cnn_few": acc["cnn"][few],
        "vit_few": acc["vit"][few],
        "cnn_most": acc["cnn"][most],
        "vit_most": acc["vit"][most],
    }
    return Answer(option, numbers, key="vit_most")
