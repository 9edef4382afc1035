"""The three readings of "which part matters" that the `patching` lesson sets side by side, all from attnlab.inspect:

* measured, for one prediction: Δ log p(answer) when a head is removed (zero, mean, resample: head_effects), and
  the share of the clean-vs-corrupt gap restored by patching one site (restoration);
* read off the weights: the attention a head pays from the answer position to a key position, and attention
  rollout (the layers' attention multiplied through the residual);
* compared over many examples: every window of the text, every earlier position c in it, replaced by other
  characters. There a head's measured effect is Δ log p when its output is taken from the replaced inputs
  (head_effects, how="resample"), and a character's measured importance is Δ log p when it is replaced. Spearman's
  rank correlation pairs each with the weights. Chance is what a pairing of whole windows with other windows gives
  (the pairs of one window share its forward pass: they are not independent, the windows are); and what a reading
  that is importance would reach is the heads' effects measured on half the replacements against the other half.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnlab.inspect import HOWS, head_effects, log_prob, restoration, rollout, run_with
from attnlab.lessons.common.rank_correlation import ranks, spearman
from attnlab.train import progress

MAX_REFERENCE = 64  # windows of the text for mean and resample ablation
MAX_EXAMPLES = 12  # windows of the text the correlations run over
MAX_REPLACEMENTS = 24  # characters put in place of one (all others when the vocabulary is smaller)
SHUFFLES = 2000  # pairings of whole windows for the chance level of a correlation
MIN_UNITS = 5  # windows a chance level needs: 5! = 120 orders, enough for a 95th percentile
GAP_FLOOR = 1e-6  # nats: clean and corrupt closer than this leave nothing to restore


def windows(ids: torch.Tensor, n: int, most: int) -> torch.Tensor:
    """At most `most` evenly spaced windows of n tokens of the text: (W, n)."""
    all_ = ids.unfold(0, n, 1)  # (N - n + 1, n)
    keep = torch.linspace(0, len(all_) - 1, min(most, len(all_))).round().long().unique()
    return all_[keep]


def attention_to(model, ids: torch.Tensor) -> torch.Tensor:
    """Each head's attention from the last position to every position: (L, H, T) on one sequence."""
    _, tr = run_with(model, ids)
    return torch.stack([tr[f"layers.{i}.attn.weights"][0, :, -1] for i in range(len(model.blocks))])  # (L, H, T)


@dataclass
class Main:
    """One prediction, clean against corrupt, read every way."""

    lp_clean: float  # log p(answer | prompt)
    lp_corrupt: float  # log p(answer | corrupted prompt)
    drop: dict[str, torch.Tensor]  # how -> (L, H): nats of log p(answer) lost when the head is removed (= -Δ)
    resid: torch.Tensor | None  # (L + 1, T): share of the gap restored by the clean stream at (layer, position)
    heads: torch.Tensor | None  # (L, H): share restored by one head's clean output (all positions)
    weight_key: torch.Tensor  # (L, H): attention from the answer position to the key position (clean run)
    weight_prev: torch.Tensor  # (L, H): ... to the previous token
    rollout: torch.Tensor  # (T,): rollout row of the answer position
    attention: torch.Tensor  # (T,): the last layer's attention from the answer position, mean over heads
    importance: list  # (T,): |Δ log p(answer)| when the character there is replaced (the answer position's: None)

    @property
    def gap(self) -> float:
        return self.lp_clean - self.lp_corrupt


def main(
    model, clean: torch.Tensor, corrupt: torch.Tensor, answer: int, key: int, reference: torch.Tensor, vocab: int
) -> Main:
    """clean, corrupt: (T,) ids; reference: (W, T) windows of the text for mean and resample (other than clean)."""
    lp_clean = log_prob(run_with(model, clean)[0], answer, -1).item()
    lp_corrupt = log_prob(run_with(model, corrupt)[0], answer, -1).item()
    drop = {
        how: -head_effects(model, clean, answer, how, reference=None if how == "zero" else reference) for how in HOWS
    }  # (L, H) each
    resid = heads = None
    if abs(lp_clean - lp_corrupt) > GAP_FLOOR:
        resid = restoration(model, clean, corrupt, answer, "resid")  # (L + 1, T)
        heads = restoration(model, clean, corrupt, answer, "heads")  # (L, H)
    A = attention_to(model, clean)  # (L, H, T)
    T = len(clean)
    return Main(
        lp_clean,
        lp_corrupt,
        drop,
        resid,
        heads,
        A[:, :, key],
        A[:, :, max(0, T - 2)],
        rollout(model, clean)[-1],
        A[-1].mean(0),
        token_importance(model, clean, answer, vocab),
    )


def replaced(window: torch.Tensor, c: int, vocab: int, most: int) -> torch.Tensor:
    """The window with position c replaced by other tokens of the vocabulary, one per row: (R, T)."""
    others = torch.tensor([v for v in range(vocab) if v != window[c].item()])
    if len(others) > most:
        others = others[torch.linspace(0, len(others) - 1, most).round().long()]
    rows = window.repeat(len(others), 1)  # (R, T)
    rows[:, c] = others
    return rows


def importance(model, rows: torch.Tensor, answer: int, lp: torch.Tensor) -> float:
    """|mean Δ log p(answer)| over the rows (one position replaced) against the clean log p."""
    return (log_prob(run_with(model, rows)[0], answer, -1) - lp).mean().abs().item()


def token_importance(model, window: torch.Tensor, answer: int, vocab: int) -> list[float]:
    """Each earlier position's measured importance for the answer (the last position's own: None)."""
    lp = log_prob(run_with(model, window)[0], answer, -1)
    return [
        importance(model, replaced(window, c, vocab, MAX_REPLACEMENTS), answer, lp) for c in range(len(window) - 1)
    ] + [None]


@dataclass
class Pairs:
    """Readings and measurements over examples: one row per (example, earlier position c)."""

    head_weight: np.ndarray  # (P, L, H): a head's attention from the answer position to c
    head_effect: (
        np.ndarray
    )  # (P, L, H): |Δ log p(answer)| when that head's output comes from the inputs with c replaced
    head_halves: np.ndarray  # (P, 2, L, H): the same, on the even and on the odd replacements alone
    token_attention: np.ndarray  # (P,): the last layer's attention to c, mean over heads
    token_rollout: np.ndarray  # (P,): rollout from the answer position to c
    token_effect: np.ndarray  # (P,): |Δ log p(answer)| when the character at c is replaced
    examples: list[tuple[list[int], int]]  # (window ids, answer id) of each example

    @property
    def units(self) -> int:
        """The independent units: the windows (each gives len(window) - 1 pairs)."""
        return len(self.examples)

    def remeasured(self) -> float | None:
        """Spearman's ρ between the heads' effects measured on the even and on the odd replacements: how well one
        measurement of importance predicts another, the most a reading of it can be expected to reach."""
        if self.head_halves.shape[0] == 0 or not np.isfinite(self.head_halves).all():
            return None
        return spearman(self.head_halves[:, 0], self.head_halves[:, 1])


def pairs(model, examples: torch.Tensor, vocab: int) -> Pairs:
    """examples: (E, n + 1) windows, the answer last. Every position c < n - 1 of each is a pair's key."""
    hw, he, halves, ta, tr_, te, ex = [], [], [], [], [], [], []
    for i, row in enumerate(examples):
        progress.report("measure", i, len(examples))  # the page shows it; stops here when the page has gone
        window, answer = row[:-1], int(row[-1])
        ex.append((window.tolist(), answer))
        A = attention_to(model, window)  # (L, H, T)
        R = rollout(model, window)[-1]  # (T,)
        lp = log_prob(run_with(model, window)[0], answer, -1)  # (1,)
        for c in range(len(window) - 1):
            rows = replaced(window, c, vocab, MAX_REPLACEMENTS)  # (R, T)
            hw.append(A[:, :, c].numpy())
            even, odd = rows[0::2], rows[1::2]  # two halves of the replacements: the effect measured twice
            a = head_effects(model, window, answer, "resample", reference=even)  # (L, H)
            b = head_effects(model, window, answer, "resample", reference=odd) if len(odd) else a * np.nan
            he.append(((a * len(even) + b.nan_to_num() * len(odd)) / len(rows)).abs().numpy())  # all of them
            halves.append(torch.stack([a, b]).abs().numpy())  # (2, L, H)
            ta.append(A[-1, :, c].mean().item())
            tr_.append(R[c].item())
            te.append(importance(model, rows, answer, lp))
    progress.report("measure", len(examples), len(examples))
    return Pairs(np.array(hw), np.array(he), np.array(halves), np.array(ta), np.array(tr_), np.array(te), ex)


def shuffled(a: np.ndarray, b: np.ndarray, seed: int, units: int, n: int = SHUFFLES) -> tuple[float, float] | None:
    """Spearman's ρ when each unit's readings a are paired with another unit's measurements b, n random times:
    (mean, 95th percentile), the chance level a measured ρ must clear (one-sided, 5%). a and b hold `units`
    equal blocks (a window's positions, layers and heads), which move whole: within a window the pairs share one
    forward pass, so shuffling single pairs would make chance look narrower than it is. None when ρ is undefined
    or too few units leave too few orders."""
    a, b = np.ravel(a), np.ravel(b)
    if spearman(a, b) is None or units < MIN_UNITS:
        return None
    ra, rb = ranks(a), ranks(b)
    ra, rb = (ra - ra.mean()) / ra.std(), (rb - rb.mean()) / rb.std()
    blocks = rb.reshape(units, -1)  # (U, k): one row per unit
    g = np.random.default_rng(seed)
    perm = np.argsort(g.random((n, units)), axis=1)  # (n, U): n random orders of the units
    rhos = (blocks[perm].reshape(n, -1) * ra).mean(1)  # (n,): Pearson of standardized ranks
    return float(rhos.mean()), float(np.quantile(rhos, 0.95))
