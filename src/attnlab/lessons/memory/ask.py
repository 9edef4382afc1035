"""Asked first: training with fp32 and AdamW, how many bytes does each parameter take (weights, gradients,
optimizer state)? Read from the bytes measured on the lab's model."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # about 4, 8, 12 or 16 bytes
BYTES = {"a": 4, "b": 8, "c": 12, "d": 16}


def answer(r) -> Answer:
    m, n = r.measured, r.lab.params
    state = m["weights"] + m["gradients"] + m["adamw"]
    per_param = state / n
    option = min(OPTIONS, key=lambda o: abs(BYTES[o] - per_param))
    return Answer(
        option,
        {
            "params": n,
            "weights": m["weights"] / n,
            "gradients": m["gradients"] / n,
            "adamw": m["adamw"] / n,
            "per_param": per_param,
        },
        key="per_param",
    )
