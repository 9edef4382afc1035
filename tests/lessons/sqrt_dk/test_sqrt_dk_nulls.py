"""sqrt-dk's claims fail on their nulls: each is run where its effect is absent by construction, and must not be
shown. The statistics are cached per (d_k, seed), so each null uses a seed of its own and clears the caches."""

from __future__ import annotations

import pytest
import torch

from attnlab.lessons.sqrt_dk import lesson as L

SMALL = dict(n_samples=1000)


@pytest.fixture(autouse=True)
def fresh_caches():
    L.dot_stats.cache_clear()
    L._softmax_rows.cache_clear()
    yield
    L.dot_stats.cache_clear()
    L._softmax_rows.cache_clear()


def statuses(**kw) -> dict[str, str]:
    return {c.id: c.status for c in L.sqrt_dk(lang="en", **{**SMALL, **kw}).claims}


def test_at_the_defaults_every_claim_is_shown():
    assert set(statuses().values()) == {"shown"}


def test_correlated_q_and_k_contradict_the_moments(monkeypatch):
    # q = k: q.k = |q|^2 has mean d_k and variance 2 d_k, not 0 and d_k.
    monkeypatch.setattr(L, "dot_stats", lambda d_k, n, seed: L.DotStats(d_k, float(d_k), 2.0 * d_k, 2.0))
    s = statuses(seed=101)
    assert s["mean_zero"] == s["variance"] == s["scaled_variance"] == "contradicted"


def test_at_d_k_1_the_two_softmaxes_are_one_and_nothing_saturates_or_fades():
    s = statuses(d_k=1, seed=102)
    assert s["saturation"] == "not_shown" and s["gradient_fades"] == "not_shown"


def test_with_no_larger_d_k_in_the_sweep_saturation_does_not_grow(monkeypatch):
    monkeypatch.setattr(L, "SWEEP", (1,))
    assert statuses(d_k=1, seed=103)["saturation_grows"] == "not_shown"


def test_a_norm_over_its_bound_and_a_wrong_jacobian_are_contradicted(monkeypatch):
    true_norm, true_jacobian = L.softmax_jacobian_norm, L.softmax_jacobian
    monkeypatch.setattr(L, "softmax_jacobian_norm", lambda s: 2 * true_norm(s) + 1)
    monkeypatch.setattr(L, "softmax_jacobian", lambda p: torch.diag_embed(p))  # the p p^T term dropped
    s = statuses(seed=104)
    assert s["gradient_bound"] == "contradicted" and s["autograd"] == "contradicted"
    assert true_jacobian is not L.softmax_jacobian


def test_with_many_keys_the_course_is_contradicted_and_the_page_says_so():
    c = next(c for c in L.sqrt_dk(lang="en", n_keys=128, **SMALL).claims if c.id == "gradient_fades")
    assert c.status == "contradicted" and c.values["unscaled"] > c.values["scaled"]
    assert "contradicted" in c.versus
