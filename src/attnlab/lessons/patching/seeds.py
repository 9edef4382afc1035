"""The seed count behind the `patching` lesson's mechanism claims: one seed's model can carry the answer by luck.

At each of N_SEEDS seeds (the lesson's seed and the next ones) the model is trained twice, alike in everything but
the order of its text: once on the text, once on the same characters shuffled (attnlab.text.shuffled_chars), where
no order can teach which character carries the answer. Each pair is read on the lesson's prediction: the gap the
corruption opens, the top head's lead over the median head under mean ablation, and the most one head's clean
output restores. A seed counts for a claim when the model of the text beats its shuffled twin; if the text's order
taught nothing, the two would be exchangeable and each seed a coin toss (claims.py counts against 1/2).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.inspect import head_effects, log_prob, restoration, run_with
from attnlab.lessons.patching import measure
from attnlab.lessons.patching import model as runs
from attnlab.train import progress

N_SEEDS = 8  # a coin reaches 7 of 8 with probability 9/256 < 5%: one seed may fail and the count still stand


@dataclass
class SeedRow:
    """One seed: the model of the text beside its twin trained on the characters shuffled."""

    seed: int
    gap: float  # nats of log p(answer) the corruption costs the model of the text (< 0: it raises it)
    gap_shuffled: float  # ... its shuffled twin
    top_lead: float  # nats: the largest |mean-ablation loss| of a head minus the median head's
    top_lead_shuffled: float
    best_restored: float  # the most one head's clean output restores: its share of the gap times the gap's size
    best_restored_shuffled: float


def read(model, clean: torch.Tensor, corrupt: torch.Tensor, answer: int, reference: torch.Tensor):
    """(gap, top_lead, best_restored) of one model, as lesson.reading computes them from measure.main."""
    lp_clean = log_prob(run_with(model, clean)[0], answer, -1).item()
    lp_corrupt = log_prob(run_with(model, corrupt)[0], answer, -1).item()
    gap = lp_clean - lp_corrupt
    lost = head_effects(model, clean, answer, "mean", reference=reference).abs().flatten()  # (L·H,)
    top_lead = float(lost.max() - lost.quantile(0.5))
    restored = 0.0
    if abs(gap) > measure.GAP_FLOOR:
        restored = float(restoration(model, clean, corrupt, answer, "heads").max() * abs(gap))
    return gap, top_lead, restored


def count(key: tuple, main, clean, corrupt, answer: int, reference) -> list[SeedRow]:
    """key: (corpus, n_layers, n_heads, train_steps, seed); main: the lesson's own model (the first seed's)."""
    corpus, n_layers, n_heads, steps, first = key
    rows = []
    for i, seed in enumerate(range(first, first + N_SEEDS)):
        progress.report("seeds", i, N_SEEDS)
        text = main if i == 0 else runs.twin(corpus, n_layers, n_heads, steps, seed, False)
        shuffled = runs.twin(corpus, n_layers, n_heads, steps, seed, True)
        a = read(text, clean, corrupt, answer, reference)
        b = read(shuffled, clean, corrupt, answer, reference)
        rows.append(SeedRow(seed, a[0], b[0], a[1], b[1], a[2], b[2]))
    progress.report("seeds", N_SEEDS, N_SEEDS)
    return rows


TIE = 1e-9  # nats: two models this close are one (at 0 steps both are the untrained start): a seed left out


def wins(rows: list[SeedRow], name: str) -> tuple[int, int]:
    """(k, n): of the n seeds where the two models differ on `name` (gap, top_lead, best_restored), the k where the
    model of the text beats its shuffled twin. A tie is no toss: the sign test leaves it out."""
    diffs = [getattr(r, name) - getattr(r, name + "_shuffled") for r in rows]
    return sum(d > TIE for d in diffs), sum(abs(d) > TIE for d in diffs)
