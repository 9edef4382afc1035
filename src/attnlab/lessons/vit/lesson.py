"""Lecture 06: the Transformer also reads images (ViT: patches as tokens), and having the weakest prior it needs more
data than a CNN. A CNN is told that neighbouring pixels belong together; an MLP is told nothing but sees every
pixel in its place; a ViT is told only that patches interact. Which learns more from 50 images, and does the ViT
catch up when given all of them?

The experiment (runs.py): the three models, of about ten thousand parameters each, trained alike on 50 to 1,300 of
scikit-learn's 8 × 8 digits, `seeds` times each, every accuracy measured on the same 497 held-out images; beside
them, the class token's attention over the patches of one image.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, weakest
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.vit import runs
from attnlab.train import progress

CHANCE = 0.1  # ten digits
LEARNS_MARGIN = 0.5  # the ViT's accuracy with every image must beat chance by half of all test images
PRIOR_MARGIN = 0.1  # the CNN's lead at the fewest images, in every seed
NARROWS_MARGIN = 0.1  # how much of that lead the ViT must win back with the most images, in every seed
# Each claim's strongest null: every model trained alike on labels shuffled across the images (the same labels as
# often, nothing to learn from the pixels), at the same seeds: one seed's noise is as large as a margin.
NULLS = {name: Null("shuffled", shuffle=True) for name in ("learns", "prior", "narrows")}

PARAMS = (
    Param("steps", "int", 300, 0, 2000, step=10, help="training steps of each model (0: untrained)"),
    Param("seeds", "int", 3, 1, 5, step=1, help="how many times each model is trained (seeds 0, 1, ...)"),
    Param("image", "int", 0, 0, runs.N_TEST - 1, step=1, help="which held-out image to draw the attention on"),
    Param("shuffle", "bool", False, help="train on labels shuffled across the images (the null: nothing to learn)"),
)
QUICK = {"steps": 20, "seeds": 1}
COURSE = ("lecture06", 145)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Picture:
    """One held-out image as the models of seed 0 trained on the most images saw it."""

    index: int  # in the test set
    pixels: list[list[float]]  # 8 × 8, 0..1
    label: int
    predicted: dict  # model -> the digit it chose
    attention: list[list[float]]  # the class token's attention on each patch, as the patches lie (4 × 4)
    on_ink: float  # its share on the patches that hold ink
    ink: float  # the share of the patches that hold ink: what attention spread evenly would give


@dataclass
class VitResult(Shown):
    topic: str
    params: dict
    n_train: list[int]  # training images per point of the curves
    accuracy: dict  # model -> [mean over seeds, per n_train]
    per_seed: dict  # model -> [[per seed] per n_train]
    n_params: dict  # model -> parameters
    n_test: int
    picture: Picture
    on_ink: list[float]  # per seed: the class token's attention share on ink, over every held-out image
    ink: float  # the share of patches holding ink, over every held-out image
    note: str
    claims: list[Claim] = field(default_factory=list)


def cost(p: dict) -> Cost:
    """Trains 3 small models × 4 sizes × `seeds` (stoppable at every step); then reads the 497 test images."""
    tokens = runs.N_TEST * runs.VIT.context_length
    per_token = 12 * runs.VIT.d_model + 4 * runs.VIT.n_heads * runs.VIT.context_length
    return Cost.of_bytes(4 * tokens * per_token, trains=True, extra_mb=40.0)


@lesson
@lru_cache(maxsize=4)
def trained(steps: int, seeds: int, shuffle: bool) -> dict:
    """{(model, n, seed): the trained model}, trained once for both languages and every `image`."""
    total = steps * len(runs.SIZES) * seeds
    for name in runs.MODELS:
        progress.report(name, 0, total)  # all three listed from the start
    out = {}
    for name in runs.MODELS:
        done = 0
        for n in runs.SIZES:
            for seed in range(seeds):
                out[name, n, seed] = runs.train(
                    name, n, seed, steps, shuffle, on_step=lambda s, d=done: progress.report(name, d + s, total)
                )
                done += steps
    return out


@lru_cache(maxsize=4)
def measured(steps: int, seeds: int, shuffle: bool) -> tuple[dict, list[float], float]:
    """(model -> [[accuracy per seed] per size], the class token's share on ink per seed, the ink share)."""
    models = trained(steps, seeds, shuffle)
    per_seed = {m: [[runs.accuracy(models[m, n, s]) for s in range(seeds)] for n in runs.SIZES] for m in runs.MODELS}
    d = runs.digits()
    images = d.images[d.test]  # (N_TEST, 1, 8, 8)
    ink = runs.ink(images)  # (N_TEST, N) bool
    on_ink = []
    for s in range(seeds):
        a = runs.class_attention(models["vit", runs.SIZES[-1], s], images)  # (N_TEST, N)
        on_ink.append(((a * ink).sum(-1) / a.sum(-1)).mean().item())
    return per_seed, on_ink, ink.float().mean().item()


@torch.no_grad()
def picture(models: dict, index: int) -> Picture:
    d = runs.digits()
    i = int(d.test[index])
    image = d.images[i : i + 1]  # (1, 1, 8, 8)
    n = runs.SIZES[-1]
    predicted = {m: int(models[m, n, 0](image).argmax()) for m in runs.MODELS}
    a = runs.class_attention(models["vit", n, 0], image)[0]  # (N,)
    ink = runs.ink(image)[0]  # (N,)
    side = runs.VIT.image_size // runs.VIT.patch_size
    return Picture(
        index,
        image[0, 0].tolist(),
        int(d.labels[i]),
        predicted,
        a.view(side, side).tolist(),
        ((a * ink).sum() / a.sum()).item(),
        ink.float().mean().item(),
    )


def claims_of(r: VitResult, lang: str) -> list[Claim]:
    vit, cnn = r.per_seed["vit"], r.per_seed["cnn"]
    lead_few = weakest([c - v for c, v in zip(cnn[0], vit[0])])  # the CNN's lead at the fewest images
    won_back = weakest([(c0 - v0) - (c1 - v1) for c0, v0, c1, v1 in zip(cnn[0], vit[0], cnn[-1], vit[-1])])
    few, most, acc = r.n_train[0], r.n_train[-1], r.accuracy["vit"][-1]
    control = t("explain.vit.control.seeds", lang, seeds=r.params["seeds"])
    return [
        lead(
            "learns",
            t("explain.vit.claim.learns", lang, n=most, acc=acc, chance=CHANCE, margin=LEARNS_MARGIN),
            lang,
            measured=acc,
            baseline=CHANCE,
            margin=LEARNS_MARGIN,
            control=t("explain.vit.control.chance", lang),
            values={"accuracy": acc, "chance": CHANCE, "n_train": most},
            hint=t("explain.vit.hint.steps", lang),
        ),
        lead(
            "prior",
            t(
                "explain.vit.claim.prior",
                lang,
                n=few,
                cnn=r.accuracy["cnn"][0],
                vit=r.accuracy["vit"][0],
                lead=lead_few,
                margin=PRIOR_MARGIN,
            ),
            lang,
            measured=lead_few,
            baseline=0.0,
            margin=PRIOR_MARGIN,
            control=control,
            values={
                "cnn": r.accuracy["cnn"][0],
                "vit": r.accuracy["vit"][0],
                "smallest_lead": lead_few,
                "n_train": few,
            },
        ),
        lead(
            "narrows",
            t(
                "explain.vit.claim.narrows",
                lang,
                few=few,
                most=most,
                gap_few=r.accuracy["cnn"][0] - r.accuracy["vit"][0],
                gap_most=r.accuracy["cnn"][-1] - r.accuracy["vit"][-1],
                won=won_back,
                margin=NARROWS_MARGIN,
            ),
            lang,
            measured=won_back,
            baseline=0.0,
            margin=NARROWS_MARGIN,
            control=control,
            values={
                "gap_few": r.accuracy["cnn"][0] - r.accuracy["vit"][0],
                "gap_most": r.accuracy["cnn"][-1] - r.accuracy["vit"][-1],
                "smallest_won_back": won_back,
            },
        ),
    ]


def vit(steps: int = 300, seeds: int = 3, image: int = 0, shuffle: bool = False, *, lang: str = "zh") -> VitResult:
    """Accuracy against training images for a ViT, a CNN and an MLP, and what the ViT's class token reads."""
    p = check(PARAMS, dict(steps=steps, seeds=seeds, image=image, shuffle=shuffle))
    per_seed, on_ink, ink = measured(p["steps"], p["seeds"], p["shuffle"])
    models = trained(p["steps"], p["seeds"], p["shuffle"])
    note = t(
        "explain.vit.note" + ("_shuffled" if p["shuffle"] else ""),
        lang,
        steps=p["steps"],
        batch=runs.BATCH,
        lr=runs.LR,
        seeds=p["seeds"],
        test=runs.N_TEST,
        patch=runs.VIT.patch_size,
        tokens=runs.VIT.n_patches,
    )
    r = VitResult(
        "vit",
        p,
        list(runs.SIZES),
        {m: [sum(v) / len(v) for v in per_seed[m]] for m in runs.MODELS},
        per_seed,
        {m: runs.n_params(m) for m in runs.MODELS},
        runs.N_TEST,
        picture(models, p["image"]),
        on_ink,
        ink,
        note,
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "VitResult", "vit", "cost"]
