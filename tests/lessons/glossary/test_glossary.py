"""The glossary: the stages in the order the model records them, and quizzes that answer only when answered."""

from __future__ import annotations

import pytest

from attnlab.lessons.common.params import ParamError
from attnlab.lessons.glossary.lesson import N_QUIZZES, glossary


def test_stages_follow_the_forward_pass():
    r = glossary(text="床前明月光")
    assert [s.stage for s in r.stages] == ["token", "id", "embedding", "block", "logits", "probabilities"]
    shapes = {s.stage: s.shape for s in r.stages}
    assert shapes["id"] == [1, 5] and shapes["embedding"][:2] == [1, 5] and shapes["logits"] == [1, 5, 6]
    assert r.claims[0].holds
    assert len(r.context) == 5 and all(c.term and c.meaning for c in r.context)


def test_no_answer_is_revealed_until_one_is_committed():
    r = glossary()
    assert len(r.quizzes) == N_QUIZZES
    assert all(q.answer is None and q.committed is None for q in r.quizzes)
    assert glossary(quiz=2, answer="   ").quizzes[1].answer is None  # blank is not an answer
    r = glossary(quiz=2, answer="串行、梯度、路径")
    assert r.quizzes[1].answer and r.quizzes[1].committed == "串行、梯度、路径"
    assert all(q.answer is None for i, q in enumerate(r.quizzes) if i != 1)


def test_the_choice_quiz_grades_and_shows_the_numbers():
    wrong = glossary(quiz=5, answer="1", lang="en").quizzes[4]
    right = glossary(quiz=5, answer="2", lang="en").quizzes[4]
    assert wrong.correct is False and right.correct is True
    assert right.numbers["contributions"] == pytest.approx([0.9 * 0.01, 0.05 * 100, 0.05 * 100])
    with pytest.raises(ParamError, match="choices"):
        glossary(quiz=5, answer="3")
    with pytest.raises(ParamError, match="quiz must be an integer from 0 to 5"):
        glossary(quiz=9, answer="x")
