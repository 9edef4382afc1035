"""⑦ Data parallel, shown to be exact: two processes × batch b take the step one process takes with batch 2b.

The experiment. torchrun starts two processes on this machine (gloo, the CPU; launch.py). Each builds the lab's
jingyesi-tiny GPT from the same seed and trains it for a few steps on its own b windows of every global batch of
2b (train/data.get_batch), inside DistributedDataParallel, which averages the gradients by an all-reduce during
backward (ranks.py). Meanwhile this process trains the same model on all 2b windows. Checked, at fp32 rounding:
  * the averaged gradient of the first step equals the one process's gradient (the mean of two means of b is the
    mean of 2b); the weights after the steps are equal; the two ranks' weights are equal bit for bit;
  * the weights' tolerance fits the optimizer's arithmetic: TOL, or ROUNDING times what rounding alone makes
    (this process summing the same two halves itself, experiment.train_halves), whichever is larger. SGD's step
    is linear in the gradient, so rounding stays ~1e-7; AdamW divides by √v, so a gradient that is mostly
    rounding moves its weight by a sizeable part of lr, in one process as in two;
  * control: the same two processes with no all-reduce (each steps on its own half) end far from the one
    process, by more than ten times that tolerance, so the agreement above is the all-reduce's doing;
  * the bytes DDP all-reduces each step, counted bucket by bucket by a communication hook that does DDP's own
    averaging, are N · 4 (N by the lab's counter, models/count.py): one fp32 gradient per parameter.
Then, by formula (splits.py, no implementation): the ring all-reduce's traffic for k ranks, and what ZeRO/FSDP,
tensor and pipeline parallelism split instead, for a published model that no single card can train.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.data_parallel.experiment import OPTIMIZERS
from attnlab.lessons.data_parallel.launch import WORLD, Run, measure
from attnlab.lessons.data_parallel.splits import CARD_BYTES, Split, per_param_bytes, ring_allreduce_bytes, split
from attnlab.models.published import PUBLISHED
from attnlab.models.published import published as find_published

PARAMS = (
    Param("b", "int", 4, 1, 16, step=1, help="windows per rank each step (the one process takes 2b)"),
    Param("train_steps", "int", 3, 1, 20, step=1, help="optimizer steps of each run"),
    Param(
        "optimizer",
        "choice",
        "sgd",
        choices=OPTIMIZERS,
        help="sgd: the step is lr·gradient; adamw: the lab's optimizer, which rescales every gradient",
    ),
    Param("ranks", "int", 64, 1, 4096, step=1, log=True, help="k ranks for the formulas (the run itself uses 2)"),
    Param(
        "published",
        "choice",
        "Llama-2-70B",
        choices=tuple(m.name for m in PUBLISHED),
        help="the published model split k ways",
    ),
    Param("micro", "int", 8, 1, 1024, step=1, log=True, help="micro-batches per batch in the pipeline"),
)
QUICK = {"b": 2, "train_steps": 2, "ranks": 8}
COURSE = ("chapter16", 60)  # the course map's section (web/course_map.py) and place in it
HEAVY = True
SEED = 0  # the weights and windows: exactness is a property of the sum, not of a draw (no seed parameter)
TOL = 1e-6  # fp32: rounding of sums in another order stays well below this
CONTROL_FACTOR = 10  # the control must miss by at least ten times the tolerance
ROUNDING = 10  # the weights' tolerance: ten times what the same sums in another order make in one process
CARD_MARGIN = 0.1  # a fit (or a miss) must clear the card by 10% of it: activations and buffers need room too
# Each claim's strongest null (lessons/common/nulls.py); the identities (gradient, update, ranks_equal, bytes) need
# none. The control's null is the all-reduced run beside it, which stays within the tolerance it is compared with;
# the card claim's is a published model whose whole DDP state one card holds: there the claim is not made.
NULLS = {
    "needs_allreduce": Null("with_allreduce"),
    "one_card": Null("small_model", published="GPT-2 small"),
}


@dataclass
class DataParallelResult(Shown):
    topic: str
    params: dict
    run: Run
    tolerance: float  # the weights' (weights_tolerance): TOL, or ROUNDING times what rounding alone makes
    n_params: int  # N of the lab's model, by the lab's counter
    grad_bytes: int  # N · 4: one fp32 gradient per parameter
    ring_bytes: float  # what each of the 2 ranks sent per step: 2(k−1)/k · N · 4
    ring_bytes_k: float  # the same model's gradients over k ranks
    ring_curve: list[list[float]]  # [k, 2(k−1)/k · N · 4] for k = 1, 2, 4, … past the chosen k
    split: Split
    card_bytes: float
    claims: list[Claim] = field(default_factory=list)


def run_claims(run: Run, lang: str) -> list[Claim]:
    """The run against the one process (within TOL), the ranks against each other (exactly), and the control."""
    k = "explain.data_parallel."
    one = t(k + "control.one", lang, two_b=WORLD * run.b)
    tol = weights_tolerance(run.rounding_diff)
    return [
        same_gradient(run.grad_diff, run.grad_max, lang, control=one),
        same_update(
            run.weight_diff,
            run.weight_where,
            run.steps,
            run.optimizer,
            lang,
            control=one,
            tol=tol,
            rounding=run.rounding_diff,
        ),
        within(
            "ranks_equal",
            t(k + "claim.ranks_equal", lang, diff=run.ranks_diff),
            lang,
            measured=run.ranks_diff,
            expected=0.0,
            tol=0.0,
            control=t(k + "control.rank0", lang),
            values={"diff": run.ranks_diff},
        ),
        needs_allreduce(run.alone_diff, run.alone_where, lang, tol=tol),
        bytes_claim(run.bytes_per_step, run.n_params, lang),
    ]


def same_gradient(diff: float, grad_max: float, lang: str, *, control: str) -> Claim:
    """max |g_ddp − g_one| within TOL (the null: a rank's own gradient, without the all-reduce, is not)."""
    return within(
        "gradient",
        t("explain.data_parallel.claim.gradient", lang, diff=diff, tol=TOL, top=grad_max),
        lang,
        measured=diff,
        expected=0.0,
        tol=TOL,
        control=control,
        values={"diff": diff, "grad_max": grad_max},
    )


def weights_tolerance(rounding: float) -> float:
    """TOL, or ROUNDING times the weights' difference that rounding alone makes (one process summing the two
    halves itself), whichever is larger: the tolerance that fits the optimizer's arithmetic."""
    return max(TOL, ROUNDING * rounding)


def same_update(
    diff: float,
    where: str,
    steps: int,
    optimizer: str,
    lang: str,
    *,
    control: str,
    tol: float = TOL,
    rounding: float = 0.0,
) -> Claim:
    """max |θ_ddp − θ_one| after the steps within `tol` (weights_tolerance; the null: θ_alone is not)."""
    return within(
        "update",
        t(
            "explain.data_parallel.claim.update",
            lang,
            diff=diff,
            tol=tol,
            steps=steps,
            optimizer=optimizer,
            where=where,
            rounding=rounding,
            factor=ROUNDING,
            fp32=TOL,
        ),
        lang,
        measured=diff,
        expected=0.0,
        tol=tol,
        control=control,
        values={"diff": diff, "where": where, "steps": steps, "optimizer": optimizer, "rounding": rounding},
    )


def needs_allreduce(alone_diff: float, where: str, lang: str, *, tol: float = TOL) -> Claim:
    """Without the all-reduce a rank ends at least CONTROL_FACTOR times the weights' tolerance from the one process
    (its null is the all-reduced run beside it, which stays within that tolerance; and two equal halves)."""
    return lead(
        "needs_allreduce",
        t(
            "explain.data_parallel.claim.needs_allreduce",
            lang,
            diff=alone_diff,
            where=where,
            factor=CONTROL_FACTOR,
            tol=tol,
        ),
        lang,
        measured=alone_diff,
        baseline=tol,
        margin=(CONTROL_FACTOR - 1) * tol,
        control=t("explain.data_parallel.control.tolerance", lang),
        values={"diff": alone_diff, "where": where},
    )


def bytes_claim(bytes_per_step: list[int], n_params: int, lang: str) -> Claim:
    """Every step's all-reduced bytes equal N · 4 exactly (null: a frozen parameter sends nothing)."""
    expected = 4 * n_params
    worst = max(bytes_per_step, key=lambda x: abs(x - expected))
    return within(
        "bytes",
        t(
            "explain.data_parallel.claim.bytes",
            lang,
            measured=worst,
            n=n_params,
            expected=expected,
            steps=len(bytes_per_step),
        ),
        lang,
        measured=worst,
        expected=expected,
        tol=0.0,
        control=t("explain.data_parallel.control.count", lang),
        values={"bytes_per_step": list(bytes_per_step), "n_params": n_params},
    )


def card_claims(s: Split, lang: str) -> list[Claim]:
    """The course's reason to split a model: under DDP every card holds the whole training state (mixed precision),
    and for this published model that is more than one card. A model whose state fits makes no such claim (the
    stage table shows it fits); how far ZeRO/FSDP brings it down is read from the same table, by formula."""
    k = "explain.data_parallel."
    ddp = per_param_bytes("ddp", s.k, "mixed") * s.n_params
    if ddp <= CARD_BYTES:
        return []
    card = t(k + "control.card", lang, gb=CARD_BYTES / 1e9)
    return [
        lead(
            "one_card",
            t(k + "claim.one_card", lang, model=s.model, n=s.n_params, tb=ddp / 1e12, gb=CARD_BYTES / 1e9),
            lang,
            measured=ddp,
            baseline=CARD_BYTES,
            margin=CARD_MARGIN * CARD_BYTES,
            control=card,
            values={"model": s.model, "bytes": ddp},
        ),
    ]


@lesson
def data_parallel(
    b: int = 4,
    train_steps: int = 3,
    optimizer: str = "sgd",
    ranks: int = 64,
    published: str = "Llama-2-70B",
    micro: int = 8,
    *,
    lang: str = "zh",
) -> DataParallelResult:
    """Two ranks against one process (measured), then the published model split k ways (by formula)."""
    p = check(
        PARAMS, dict(b=b, train_steps=train_steps, optimizer=optimizer, ranks=ranks, published=published, micro=micro)
    )
    run = measure(p["b"], p["train_steps"], SEED, p["optimizer"])
    model = find_published(p["published"])
    s = split(model.name, model.architecture, p["ranks"], p["b"], p["micro"])
    grad_bytes = 4 * run.n_params
    ks = sorted({2**i for i in range(max(2, p["ranks"]).bit_length() + 1)} | {p["ranks"]})
    return DataParallelResult(
        "data-parallel",
        p,
        run,
        weights_tolerance(run.rounding_diff),
        run.n_params,
        grad_bytes,
        ring_allreduce_bytes(grad_bytes, WORLD),
        ring_allreduce_bytes(grad_bytes, p["ranks"]),
        [[k, ring_allreduce_bytes(grad_bytes, k)] for k in ks],
        s,
        CARD_BYTES,
        run_claims(run, lang) + card_claims(s, lang),
    )


def cost(p: dict) -> Cost:
    """Two processes and one model of ~100k parameters: a few seconds, reported step by step."""
    return Cost(64.0, trains=True)


__all__ = ["PARAMS", "DataParallelResult", "data_parallel", "cost"]
