"""The toy attention lab: four tokens 猫 追 老鼠 它, two hand-written heads, every matrix in the open.

Each head projects X (4x4) to Q, K, V (4x2), takes S = Q K^T / sqrt(2), A = softmax(S) row by row and
O = A V; the two head outputs concatenate to 4 dims. Real models then multiply by W_O; the toy leaves it
out so the mixing stays visible. The weights are chosen by hand so the heads disagree on where 它 looks:
head 1 matches 它 with the sentence-initial noun (猫), head 2 matches it with the verb (追). That is a
property of these numbers, not evidence that any trained model resolves 它 to 猫.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.lessons.common.bad_input import BadInput, shown
from attnlab.lessons.common.result import Matrix, Shown, Vector, tolist
from attnlab.nn import attention, causal_mask

TOKENS = ("猫", "追", "老鼠", "它")
# The four columns of X; a token's row is its toy embedding with the position already folded in
# (only 猫 sits at the start of the sentence, so only 猫 has the "first position" feature).
FEATURES = ("noun", "verb", "first", "pronoun")
X_TOY = (
    (1, 0, 1, 0),  # 猫: a noun at the start
    (0, 1, 0, 0),  # 追: the verb
    (1, 0, 0, 0),  # 老鼠: a noun
    (1, 0, 0, 1),  # 它: a noun-like pronoun
)
D_K = 2

# Rows follow FEATURES (noun, verb, first, pronoun); columns are the head's 2 dims.
HEADS = (
    {  # head 1, "who": a pronoun asks for the sentence-initial noun, whose value says "猫"
        "name": "who",
        "W_Q": ((0, 1), (1, 0), (0, 0), (2, 0)),
        "W_K": ((0, 1), (0, 0), (2, 0), (0, 0)),
        "W_V": ((1, 0), (0, 1), (1, 0), (0, 0)),
    },
    {  # head 2, "action": a pronoun (and the subject) asks for the verb, whose value says "追"
        "name": "action",
        "W_Q": ((0, 0), (0, 1), (1, 0), (2, 0)),
        "W_K": ((0, 1), (2, 0), (0, 0), (0, 0)),
        "W_V": ((1, 0), (0, 2), (0, 0), (0, 0)),
    },
)


@dataclass
class ToyRow:
    """One query's row in one head: what it asks, what it scores, what it takes."""

    q: Vector  # q_i = x_i W_Q, (2,)
    dots: Vector  # q_i . k_j before scaling, (4,)
    scores: list[float | None]  # s_ij = q_i . k_j / sqrt(2); None where the mask says -inf
    weights: Vector  # a_ij = softmax(s_i)_j, sums to 1
    output: Vector  # o_i = sum_j a_ij v_j, (2,)
    contributions: Matrix  # a_ij v_j, (4, 2): the terms of that sum
    contribution_norms: Vector  # ||a_ij v_j||: what each key really adds
    value_norms: Vector  # ||v_j||
    top: list[int]  # the key(s) with the largest weight; more than one when they tie


@dataclass
class ToyHead:
    name: str  # "who" | "action"
    W_Q: Matrix  # (4, 2)
    W_K: Matrix
    W_V: Matrix
    Q: Matrix  # X W_Q, (4, 2)
    K: Matrix
    V: Matrix
    dots: Matrix  # Q K^T, (4, 4), before scaling
    scores: Matrix  # S = Q K^T / sqrt(2), (4, 4), before the mask
    masked_scores: list[list[float | None]]  # S with None (= -inf) where the mask forbids
    weights: Matrix  # A = softmax(masked S) row-wise, (4, 4)
    output: Matrix  # O = A V, (4, 2)
    row: ToyRow  # the chosen query's row


@dataclass
class ToyLab(Shown):
    tokens: list[str]
    features: list[str]  # names of X's columns
    query: str  # the chosen query token
    query_index: int  # 0-based row
    query_position: int  # 1-based position, as the lesson text counts
    causal: bool
    d_k: int
    X: Matrix  # (4, 4)
    mask: list[list[bool]]  # (4, 4), True = may attend
    heads: list[ToyHead]
    concat: Matrix  # [O_1 | O_2], (4, 4); a real model multiplies by W_O next
    concat_row: Vector  # the chosen query's row of concat

    def notebook_html(self) -> str:
        from attnlab.lessons.toy.notebook import toy_html  # labelled tables, as the page shows them

        return toy_html(self)


def parse_query(query: str | int) -> int:
    """'它' or a 1-based position 1..4 (int or digit string) -> 0-based row index."""
    text = str(query).strip()
    if text in TOKENS:
        return TOKENS.index(text)
    if text.isdigit() and 1 <= int(text) <= len(TOKENS):
        return int(text) - 1
    raise BadInput("toy.err.query", "query", tokens=", ".join(TOKENS), n=len(TOKENS), got=shown(query))


def _matrix(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def toy_lab(query: str | int = "它", causal: bool = False) -> ToyLab:
    """Run both heads on X and return every matrix, with the chosen query's row spelled out."""
    i = parse_query(query)
    X = _matrix(X_TOY)  # (T, d_model) = (4, 4)
    W_Q = torch.stack([_matrix(h["W_Q"]) for h in HEADS])  # (H, d_model, d_k) = (2, 4, 2)
    W_K = torch.stack([_matrix(h["W_K"]) for h in HEADS])
    W_V = torch.stack([_matrix(h["W_V"]) for h in HEADS])
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (4, 4) @ (H, 4, 2) -> (H, T, d_k)
    mask = causal_mask(len(TOKENS)) if causal else torch.ones(len(TOKENS), len(TOKENS), dtype=torch.bool)

    seen: dict[str, torch.Tensor] = {}
    O, A = attention(Q, K, V, mask, record=lambda name, t: seen.__setitem__(name, t))  # (H, T, d_k), (H, T, T)
    S = seen["scores"]  # (H, T, T), before the mask
    S_masked = S.masked_fill(~mask, float("-inf"))
    dots = Q @ K.transpose(-2, -1)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    concat = torch.cat(list(O), dim=-1)  # [O_1 | O_2]: (T, 2 * d_k)

    heads = []
    for h, spec in enumerate(HEADS):
        terms = A[h, i, :, None] * V[h]  # a_ij v_j: (T, 1) * (T, d_k) -> (T, d_k)
        row = ToyRow(
            q=tolist(Q[h, i]),
            dots=tolist(dots[h, i]),
            scores=_none_for_inf(tolist(S_masked[h, i])),
            weights=tolist(A[h, i]),
            output=tolist(O[h, i]),
            contributions=tolist(terms),
            contribution_norms=tolist(terms.norm(dim=-1)),
            value_norms=tolist(V[h].norm(dim=-1)),
            top=_argmax_all(tolist(A[h, i])),
        )
        heads.append(
            ToyHead(
                name=spec["name"],
                W_Q=tolist(W_Q[h]),
                W_K=tolist(W_K[h]),
                W_V=tolist(W_V[h]),
                Q=tolist(Q[h]),
                K=tolist(K[h]),
                V=tolist(V[h]),
                dots=tolist(dots[h]),
                scores=tolist(S[h]),
                masked_scores=[_none_for_inf(r) for r in tolist(S_masked[h])],
                weights=tolist(A[h]),
                output=tolist(O[h]),
                row=row,
            )
        )
    return ToyLab(
        tokens=list(TOKENS),
        features=list(FEATURES),
        query=TOKENS[i],
        query_index=i,
        query_position=i + 1,
        causal=causal,
        d_k=D_K,
        X=tolist(X),
        mask=mask.tolist(),
        heads=heads,
        concat=tolist(concat),
        concat_row=tolist(concat[i]),
    )


def _argmax_all(row: list[float], tol: float = 1e-12) -> list[int]:
    best = max(row)
    return [j for j, x in enumerate(row) if best - x <= tol]


def _none_for_inf(row: list[float]) -> list[float | None]:
    # JSON has no -inf; None marks a score the mask removed (its weight is exactly 0).
    return [None if x == float("-inf") else x for x in row]


# ---- predict first, then check -------------------------------------------------------------------


@dataclass
class Question:
    id: str  # "keys" | "future" | "heads"
    options: list[str]  # the answers a learner may commit, as sent in the form
    answer: str


QUESTIONS = (
    Question("keys", ["1", "2", "3", "4"], "4"),  # ① without a mask, how many keys does position 1 read?
    Question("future", ["yes", "no"], "no"),  # ② with the causal mask, can position 3 read position 4?
    Question("heads", ["yes", "no"], "no"),  # ③ do identical inputs guarantee identical weights in both heads?
)


@dataclass
class Verdict(Shown):
    id: str
    given: str
    answer: str
    correct: bool
    evidence: dict[str, float | int | str]  # numbers from the lab that settle the question

    def notebook_html(self) -> str:
        from attnlab.lessons.toy.notebook import verdict_html  # right or wrong in words, as the page says it

        return verdict_html(self)


def check_prediction(question_id: str, given: str) -> Verdict:
    """Compare a committed answer with the lab, and return the numbers that settle it."""
    question = next((q for q in QUESTIONS if q.id == question_id), None)
    if question is None:
        raise BadInput("toy.err.question", "question", ids=", ".join(q.id for q in QUESTIONS), got=shown(question_id))
    if given not in question.options:
        raise BadInput(
            "toy.err.answer",
            "answer",
            question=repr(question_id),
            options=", ".join(question.options),
            got=shown(given),
        )
    if question.id == "keys":
        row = toy_lab(1, causal=False).heads[0].row.weights
        evidence = {"nonzero": sum(w > 0 for w in row), "min_weight": min(row)}
    elif question.id == "future":
        lab = toy_lab(3, causal=True)
        evidence = {"weight_head1": lab.heads[0].weights[2][3], "weight_head2": lab.heads[1].weights[2][3]}
    else:
        lab = toy_lab("它")
        a1, a2 = lab.heads[0].row.weights, lab.heads[1].row.weights
        top1, top2 = lab.heads[0].row.top, lab.heads[1].row.top
        evidence = {
            "head1_top": "/".join(TOKENS[j] for j in top1),
            "head1_weight": max(a1),
            "head2_top": "/".join(TOKENS[j] for j in top2),
            "head2_weight": max(a2),
            "max_difference": max(abs(x - y) for x, y in zip(a1, a2)),
        }
    return Verdict(question.id, given, question.answer, given == question.answer, evidence)
