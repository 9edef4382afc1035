"""Words the course leans on: token, embedding, logits (and the order they occur), the meanings of "context",
and the self-check questions as quizzes whose answer shows only after the learner commits one.

The order is not asserted by us: a small untrained GPT reads the text once under `trace`, and the stages
are listed in the order the model recorded them, with their shapes. The quiz rule lives here, not in the
views: a quiz's answer is None unless that quiz was answered with some text (or a choice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson, seeded
from attnlab.lessons.common.result import Shown

N_QUIZZES = 5
PARAMS = (
    Param("text", "str", "床前明月光", max_len=32, help="the text walked from tokens to logits"),
    Param("quiz", "int", 0, 0, N_QUIZZES, step=1, help="the quiz being answered (1..5; 0: none)"),
    Param("answer", "str", "", max_len=2000, help="the learner's answer to that quiz; its model answer then shows"),
)
QUICK = {"quiz": 5, "answer": "2"}
COURSE = ("chapter01", 10)  # the course map's section (web/course_map.py) and place in it

# Quiz 2's answer shows a residual connection at work: the gradient through RESIDUAL_DEPTH layers x <- tanh(W x)
# against x <- x + tanh(W x), with ||W||_2 = RESIDUAL_LAM < 1, by autograd.
RESIDUAL_DEPTH, RESIDUAL_WIDTH, RESIDUAL_LAM = 40, 16, 0.9
CARRIES = 3.0  # "carries the gradient": with residual connections it is at least 10^3 times larger than without
STAGES = ["token", "id", "embedding", "block", "logits", "probabilities"]  # the course's order
# The strongest null of "residual connections carry the gradient" (lessons/common/nulls.py): the same 40 layers, the
# same W and input, without the skip connections, computed in the same run as its control. The others are identities.
NULLS = {"residual": Null("no_residual")}


def residual_gradients() -> tuple[float, float]:
    """(||d x_L / d x_0||_2 without, with residual connections): without, each layer's Jacobian diag(tanh') W has
    norm <= lambda, so the product is <= lambda^L; with, each is I + diag(tanh') W, and the identity carries the
    gradient through."""

    # A generator of its own (the same draws as torch.manual_seed(0)): a server thread drawing from torch's global
    # generator at the same moment cannot change these numbers between a page and its API.
    g = torch.Generator().manual_seed(0)
    W = torch.randn(RESIDUAL_WIDTH, RESIDUAL_WIDTH, dtype=torch.float64, generator=g)
    W = W * (RESIDUAL_LAM / torch.linalg.matrix_norm(W, ord=2))  # largest singular value = lambda
    x0 = torch.randn(RESIDUAL_WIDTH, dtype=torch.float64, generator=g)

    def deep(x, residual: bool):
        for _ in range(RESIDUAL_DEPTH):
            x = x + torch.tanh(W @ x) if residual else torch.tanh(W @ x)
        return x

    norms = [
        torch.linalg.matrix_norm(torch.autograd.functional.jacobian(lambda x: deep(x, r), x0), ord=2).item()
        for r in (False, True)
    ]  # (width, width) Jacobians
    return norms[0], norms[1]


# Quiz 5 has numbers: weights [0.9, 0.05, 0.05] on values whose norms are 0.01, 100, 100.
QUIZ5_WEIGHTS, QUIZ5_NORMS = (0.9, 0.05, 0.05), (0.01, 100.0, 100.0)


@dataclass
class Stage:
    stage: str  # token | id | embedding | block | logits | probabilities
    name: str  # what the trace called it, when it comes from the trace
    shape: list[int]
    meaning: str
    example: str  # a few numbers or tokens of the actual run


@dataclass
class ContextMeaning:
    term: str
    meaning: str
    example: str


@dataclass
class Quiz:
    number: int
    question: str
    choices: list[str]  # empty: answer in your own words
    committed: str | None  # what the learner answered, when this quiz was answered
    answer: str | None  # the model answer: None until the learner commits one
    correct: bool | None  # for choice quizzes, once answered
    numbers: dict | None  # quiz 5's contributions, revealed with the answer


@dataclass
class GlossaryResult(Shown):
    topic: str
    params: dict
    stages: list[Stage]
    context: list[ContextMeaning]
    quizzes: list[Quiz]
    claims: list[Claim]


def walk(text: str, lang: str) -> list[Stage]:
    """token -> id -> embedding -> blocks -> logits -> probabilities, as a tiny untrained GPT records them."""
    from attnlab.models import GPT, GPTConfig
    from attnlab.text import CharTokenizer
    from attnlab.trace import trace

    tok = CharTokenizer.train(text)
    ids = torch.tensor([tok.encode(text)])  # (1, T)
    with seeded(0):
        model = GPT(
            GPTConfig(vocab_size=tok.vocab_size, context_length=max(8, len(text)), d_model=16, n_heads=2, n_layers=1)
        )
    tr = trace(model.eval(), ids)
    recorded = tr.names()
    logits = tr["logits"][0, -1]  # (V,) the scores for the token after the last one
    probs = torch.softmax(logits, -1)
    top = probs.topk(min(3, probs.numel()))
    stages = [
        Stage("token", "", [len(text)], t("explain.glossary.stage.token", lang), " ".join(tok.tokens(ids[0].tolist()))),
        Stage("id", "", list(ids.shape), t("explain.glossary.stage.id", lang), str(ids[0].tolist())),
    ]
    order = [("embedding", "embed.tokens"), ("block", "layers.0.output"), ("logits", "logits")]
    for stage, name in sorted(order, key=lambda s: recorded.index(s[1])):  # the order the model recorded them
        value = tr[name]
        sample = value[0, -1, :4] if value.dim() == 3 else value.flatten()[:4]
        stages.append(
            Stage(
                stage,
                name,
                list(value.shape),
                t(f"explain.glossary.stage.{stage}", lang),
                ", ".join(f"{v:+.3f}" for v in sample.tolist()) + " …",
            )
        )
    stages.append(
        Stage(
            "probabilities",
            "softmax(logits)",
            list(probs.shape),
            t("explain.glossary.stage.probabilities", lang),
            ", ".join(f"{tok.token(i)} {p:.3f}" for p, i in zip(top.values.tolist(), top.indices.tolist())),
        )
    )
    return stages


@lesson
def glossary(text: str = "床前明月光", quiz: int = 0, answer: str = "", *, lang: str = "zh") -> GlossaryResult:
    """Definitions, the token-to-logits walk, the meanings of "context" and the self-check quizzes."""
    p = check(PARAMS, dict(text=text, quiz=quiz, answer=answer))
    if not p["text"].strip():
        raise ParamError(
            "text must hold at least one character, got an empty string", "text", "explain.error.text_empty"
        )
    stages = walk(p["text"], lang)
    context = [
        ContextMeaning(
            t(f"explain.glossary.context.{k}.term", lang),
            t(f"explain.glossary.context.{k}.meaning", lang),
            t(f"explain.glossary.context.{k}.example", lang),
        )
        for k in ("window", "prefix", "representation", "vector", "prompt")
    ]
    committed = p["answer"].strip()
    plain, res = residual_gradients()
    residual = dict(plain=plain, res=res, L=RESIDUAL_DEPTH, lam=RESIDUAL_LAM, bound=RESIDUAL_LAM**RESIDUAL_DEPTH)
    quizzes = []
    for i in range(1, N_QUIZZES + 1):
        choices = [t(f"explain.glossary.quiz{i}.choice{j}", lang) for j in (1, 2)] if i == 5 else []
        answered = p["quiz"] == i and bool(committed)
        if answered and choices and committed not in choices and committed not in ("1", "2"):
            raise ParamError(
                f"quiz {i} takes one of its choices (1, 2 or the choice's text), got {committed!r}",
                "answer",
                "explain.error.quiz_choice",
                quiz=i,
                got=repr(committed),
            )
        correct = None
        numbers = None
        if answered and choices:
            picked = choices[int(committed) - 1] if committed in ("1", "2") else committed
            correct = picked == choices[1]
            contributions = [w * v for w, v in zip(QUIZ5_WEIGHTS, QUIZ5_NORMS)]  # ||a_j v_j|| = a_j ||v_j||
            numbers = {"weights": list(QUIZ5_WEIGHTS), "value_norms": list(QUIZ5_NORMS), "contributions": contributions}
        fields = residual if i == 2 else {}
        quizzes.append(
            Quiz(
                i,
                t(f"explain.glossary.quiz{i}.q", lang),
                choices,
                committed if answered else None,
                t(f"explain.glossary.quiz{i}.a", lang, **fields) if answered else None,
                correct,
                numbers,
            )
        )
    order = [s.stage for s in stages]
    misplaced = sum(a != b for a, b in zip(order, STAGES)) + abs(len(order) - len(STAGES))
    excess = max(0.0, plain / residual["bound"] - 1)  # how far the plain stack's gradient exceeds lambda^L, relatively
    gain = math.log10(res / plain) if res > 0 and plain > 0 else 0.0
    claims = [
        within(
            "order",
            t("explain.glossary.claim.order", lang, order=" → ".join(order)),
            lang,
            measured=misplaced,
            expected=0,
            tol=0,
            control=t("explain.glossary.control.order", lang),
            values={"misplaced": misplaced},
        ),
        # The bound lambda^L is a theorem for the plain stack: each layer's Jacobian diag(tanh') W has norm <= lambda.
        within(
            "residual_bound",
            t("explain.glossary.claim.residual_bound", lang, **residual),
            lang,
            measured=excess,
            expected=0.0,
            tol=1e-9,
            control=t("explain.glossary.control.bound", lang, **residual),
            values={"plain": plain, "bound": residual["bound"]},
        ),
        # The residual stack is measured: its gradient must be at least 10^CARRIES times the plain one.
        lead(
            "residual",
            t("explain.glossary.claim.residual", lang, margin=CARRIES, **residual),
            lang,
            measured=gain,
            baseline=0.0,
            margin=CARRIES,
            control=t("explain.glossary.control.plain", lang),
            values={"plain": plain, "residual": res, "log10_ratio": gain},
        ),
    ]
    return GlossaryResult("glossary", p, stages, context, quizzes, claims)
