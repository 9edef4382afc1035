"""Asked first: is the character the last layer attends to most the one whose replacement moves the answer most?
Read from the prompt's attention row (mean over heads) and each character's measured importance."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b")  # a: yes, the same character; b: no, another character matters more


def answer(r) -> Answer:
    a = r.trained
    before = range(len(a.importance) - 1)  # the characters before the answer position (its own: no importance)
    attended = max(before, key=lambda i: a.attention[i])
    important = max(before, key=lambda i: a.importance[i])
    numbers = {
        "attended": r.prompt[attended],
        "attention": a.attention[attended],
        "attended_importance": a.importance[attended],
        "important": r.prompt[important],
        "importance": a.importance[important],
    }
    return Answer("a" if attended == important else "b", numbers, key="important")
