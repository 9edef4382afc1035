"""Asked first: can position j reach position i's output other than through attention? Read from the Jacobians."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b")  # a: yes, the FFN mixes positions too; b: no, FFN, LayerNorm and the residual are position-wise
ALONE = ("ffn", "layernorm", "residual")  # the layers besides attention


def answer(r) -> Answer:
    off = {layer.layer: layer.off_diagonal_max for layer in r.layers}  # largest ||d y_i / d x_j||, i != j
    option = "a" if any(off[name] != 0.0 for name in ALONE) else "b"  # exactly 0, not small
    return Answer(option, {name: off[name] for name in (*ALONE, "attention")}, key="attention")
