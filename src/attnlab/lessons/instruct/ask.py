"""Asked first: a base model of poems, fine-tuned on 藏头 requests made from the poems; how often does it follow
heads it never saw? Read from SFT's exact-following share, the mean over the seeds."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: almost never; b: under half; c: half to 0.9; d: above 0.9
RARELY, HALF, ALMOST_ALWAYS = 0.1, 0.5, 0.9


def answer(r) -> Answer:
    sft = r.following["sft"]
    option = "d" if sft > ALMOST_ALWAYS else "c" if sft >= HALF else "b" if sft >= RARELY else "a"
    numbers = {
        "steps": r.params["steps"],
        "seeds": r.params["seeds"],
        "sft": sft,
        "base": r.following["base"],
        "shuffled": r.following["shuffled"],
    }
    return Answer(option, numbers, key="sft")
