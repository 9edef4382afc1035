"""The concepts group's claims fail on their nulls: one-hot, mlm, multihead, positional, norms, permutation and
position-wise, each claim run where its effect is absent by construction (0 training steps, identical models, a
layer that sees order by itself, positions that are all the same, a norm over the batch, the relevant part
removed...) and required not to be shown; at the defaults each is shown.

Kept small: the trained lessons run at test-sized steps. The defaults of the two costly ones are checked where they
already train at those settings: mlm in tests/test_mlm.py (600 steps, seeds 0-4), multihead's trained claims in
tests/test_lessons_claims.py (100 steps, seeds 0-9)."""

from __future__ import annotations

import math
import random

import pytest
import torch

import attnlab.nn as NN
from attnlab.lessons.mlm import lesson as M
from attnlab.lessons.mlm import models as MM
from attnlab.lessons.mlm import task as mlm_task
from attnlab.lessons.multihead import lesson as MH
from attnlab.lessons.norms import lesson as NO
from attnlab.lessons.one_hot import lesson as OH
from attnlab.lessons.permutation import lesson as PE
from attnlab.lessons.position_wise import lesson as PW
from attnlab.lessons.positional import lesson as PO

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads

SHOWN, NOT_SHOWN, CONTRADICTED = "shown", "not_shown", "contradicted"


def statuses(result) -> dict[str, str]:
    return {c.id: c.status for c in result.claims}


# ---------------------------------------------------------------------------------------------- positional
def test_positional_defaults_show_both_identities():
    assert set(statuses(PO.positional(lang="en")).values()) == {SHOWN}


def test_a_wrong_rotation_and_a_wrong_table_are_contradicted(monkeypatch):
    true_table, true_rotation = NN.sinusoidal_positions, PO.rotation
    monkeypatch.setattr(PO, "rotation", lambda omega, delta: true_rotation(omega, 0))  # R(0) = I whatever the shift
    monkeypatch.setattr(NN, "sinusoidal_positions", lambda n, d: true_table(n, d) * 1.01)  # 1% off the formula
    s = statuses(PO.positional(delta=5, lang="en"))
    assert s == {"rotation": CONTRADICTED, "layer": CONTRADICTED}


# --------------------------------------------------------------------------------------------------- norms
class BatchWideNorm(torch.nn.Module):
    """A "LayerNorm" over the whole batch: what LayerNorm would be if it read its neighbours."""

    def __init__(self, d: int, explicit: bool = False):
        super().__init__()

    def forward(self, x):
        return (x - x.mean()) / (x.var(unbiased=False) + 1e-5).sqrt()


class RowNorm(torch.nn.Module):
    """A "BatchNorm" that normalizes each sample by itself: the batch taken out."""

    eps = 1e-5

    def __init__(self, d: int):
        super().__init__()

    def forward(self, x):
        return (x - x.mean(-1, keepdim=True)) / (x.var(-1, unbiased=False, keepdim=True) + self.eps).sqrt()


BatchNorm1d = torch.nn.BatchNorm1d


class ScaledBatchNorm(BatchNorm1d):
    """BatchNorm with γ = 2: no longer (x - mean) / sqrt(var + eps)."""

    def __init__(self, d: int):
        super().__init__(d)
        torch.nn.init.constant_(self.weight, 2.0)


class NoRunningStats(BatchNorm1d):
    """BatchNorm that keeps no running statistics: in eval mode it still uses the batch's."""

    def __init__(self, d: int):
        super().__init__(d, track_running_stats=False)


def test_norms_defaults_show_every_claim():
    assert set(statuses(NO.norms(lang="en")).values()) == {SHOWN}


def test_a_norm_that_reads_the_batch_contradicts_layernorm_same(monkeypatch):
    monkeypatch.setattr(NN, "LayerNorm", BatchWideNorm)
    assert statuses(NO.norms(lang="en"))["layernorm_same"] == CONTRADICTED


def test_a_batchnorm_without_the_batch_differs_from_nothing(monkeypatch):
    monkeypatch.setattr(torch.nn, "BatchNorm1d", RowNorm)
    s = statuses(NO.norms(lang="en"))
    assert s["batchnorm_differs"] == NOT_SHOWN and s["batchnorm_formula"] == CONTRADICTED


def test_a_scaled_batchnorm_breaks_the_formula_and_no_running_stats_break_eval(monkeypatch):
    monkeypatch.setattr(torch.nn, "BatchNorm1d", ScaledBatchNorm)
    assert statuses(NO.norms(lang="en"))["batchnorm_formula"] == CONTRADICTED
    monkeypatch.setattr(torch.nn, "BatchNorm1d", NoRunningStats)
    assert statuses(NO.norms(lang="en"))["batchnorm_eval"] == CONTRADICTED


# --------------------------------------------------------------------------------------------- permutation
class CausalAttention(NN.MultiHeadAttention):
    """A layer that sees order by itself: query i reads keys <= i."""

    def forward(self, x, *args, **kw):
        return super().forward(x, *args, **{**kw, "causal": True})


def test_permutation_defaults_show_every_claim():
    assert set(statuses(PE.permutation(lang="en")).values()) == {SHOWN}


def test_a_causal_layer_is_not_equivariant(monkeypatch):
    monkeypatch.setattr(NN, "MultiHeadAttention", CausalAttention)
    assert statuses(PE.permutation(lang="en"))["equivariant"] == CONTRADICTED


def test_positions_that_are_all_the_same_break_nothing(monkeypatch):
    # the same vector at every position: order cannot get in, so neither the sentence nor 明月/月明 differ
    monkeypatch.setattr(NN, "sinusoidal_positions", lambda n, d: torch.ones(n, d))
    s = statuses(PE.permutation(lang="en"))
    assert s == {"equivariant": SHOWN, "positions_break": NOT_SHOWN, "mingyue": NOT_SHOWN}


# ------------------------------------------------------------------------------------------- position-wise
def test_position_wise_defaults_show_and_the_bug_contradicts_the_invariant():
    assert set(statuses(PW.position_wise(lang="en")).values()) == {SHOWN}
    s = statuses(PW.position_wise(bug=True, lang="en"))
    assert s == {
        "attention_mixes": SHOWN,
        "ffn_alone": CONTRADICTED,
        "layernorm_alone": SHOWN,
        "residual_alone": CONTRADICTED,
    }


def test_attention_to_itself_only_does_not_mix_and_a_sequence_norm_does(monkeypatch):
    true_build = PW.build

    def build(n, d, seed, bug):
        attn, ffn, ln, block, x = true_build(n, d, seed, bug)
        self_only = lambda h, **kw: attn(h, mask=torch.eye(n, dtype=torch.bool))  # noqa: E731  a diagonal attention map
        over_sequence = lambda h: (h - h.mean((1, 2), keepdim=True)) / h.std()  # noqa: E731  reads every position
        return self_only, ffn, over_sequence, block, x

    monkeypatch.setattr(PW, "build", build)
    s = statuses(PW.position_wise(lang="en"))
    assert s["attention_mixes"] == NOT_SHOWN and s["layernorm_alone"] == CONTRADICTED
    assert s["ffn_alone"] == s["residual_alone"] == SHOWN


# ----------------------------------------------------------------------------------------------- multihead
SMALL_MH = dict(d_model=32, n_heads=4, n=8)


class FullWidthHeads(NN.MultiHeadAttention):
    """h heads each of the full width d (h times the projections): what "cut into h slices" rules out."""

    def __init__(self, d_model, n_heads, **kw):
        torch.nn.Module.__init__(self)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model
        self.W_Q, self.W_K, self.W_V = (torch.nn.Linear(d_model, n_heads * d_model) for _ in range(3))
        self.W_O = torch.nn.Linear(n_heads * d_model, d_model)
        self.dropout, self.rotary, self.scale = 0.0, None, True

    def forward(self, x, need_weights=False, **kw):
        B, T, _ = x.shape
        q, k, v = (self.split_heads(W(x)) for W in (self.W_Q, self.W_K, self.W_V))  # (B, H, T, d)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), -1)
        return self.W_O((w @ v).transpose(1, 2).reshape(B, T, -1)), w


def test_multihead_costs_at_the_defaults_are_shown():
    s = statuses(MH.multihead(train_steps=0, lang="en"))  # the trained claims: see the module docstring
    assert s == {"params_equal": SHOWN, "flops_equal": SHOWN, "flops_analytic": SHOWN, "two_heads_can": SHOWN}


def test_full_width_heads_contradict_every_cost_identity(monkeypatch):
    true_count = MH.count

    def count(d_model, n_heads, n):
        if n_heads == 1:
            return true_count(d_model, 1, n)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(NN, "MultiHeadAttention", FullWidthHeads)
            return true_count(d_model, n_heads, n)

    monkeypatch.setattr(MH, "count", count)
    s = statuses(MH.multihead(train_steps=0, lang="en", **SMALL_MH))
    assert s["params_equal"] == s["flops_equal"] == s["flops_analytic"] == CONTRADICTED


def test_two_heads_without_their_second_head_do_not_beat_one(monkeypatch):
    true_built = MH.hand_built

    def one_head_left():
        m = true_built()
        with torch.no_grad():
            m.attn.W_O.weight[:, MH.WIDTH // 2 :] = 0  # the AND head's output dropped: OR - 1/2 is left
        return m

    monkeypatch.setattr(MH, "hand_built", one_head_left)
    r = MH.multihead(train_steps=0, lang="en", **SMALL_MH)
    assert r.hand_built_accuracy == MH.ONE_HEAD_BOUND and statuses(r)["two_heads_can"] == NOT_SHOWN


def test_a_one_head_model_that_solves_xor_contradicts_the_proof(monkeypatch):
    # the bound removed by construction: the "one-head" models report 8 of 8, as two-head ones can; the claim
    # checks the proof on every trained one-head model, so a model past 6 of 8 is the opposite measured
    true_train = MH.train_one
    monkeypatch.setattr(
        MH,
        "train_one",
        lambda h, steps, seed: (1.0, true_train(h, 0, seed)[1]) if h == 1 else true_train(h, steps, seed),
    )
    r = MH.multihead(train_steps=1, lang="en", **SMALL_MH)
    (claim,) = [c for c in r.claims if c.id == "one_head_cannot"]
    assert claim.status == CONTRADICTED and claim.values["over"] == MH.N_SEEDS


def test_one_step_of_training_solves_nothing_and_the_count_is_not_shown():
    r = MH.multihead(train_steps=1, lang="en", **SMALL_MH)
    assert [run.solved for run in r.runs] == [0, 0, 0] and statuses(r)["trained_counts"] == NOT_SHOWN


# ------------------------------------------------------------------------------------------------- one-hot
def test_one_hot_defaults_show_every_claim_and_d_is_not_called_fewer():
    r = OH.one_hot(lang="en")
    assert set(statuses(r).values()) == {SHOWN}
    dense = next(c for c in r.claims if c.id == "dense_not_orthogonal")
    assert r.d_model >= r.vocab_size and "only" not in dense.text  # 32 dimensions are not "only" against |V| = 20
    assert (
        "only d = 8"
        in next(
            c for c in OH.one_hot(lang="en", d_model=8, train_steps=0).claims if c.id == "dense_not_orthogonal"
        ).text
    )


def test_at_0_steps_training_changed_nothing():
    r = OH.one_hot(train_steps=0, lang="en")
    assert r.context_corr == r.context_corr_init and statuses(r)["training_context"] == NOT_SHOWN
    assert (
        statuses(r)["dense_not_orthogonal"] == SHOWN
    )  # random vectors are not orthogonal either: not a training claim


def test_training_on_a_shuffled_stream_pulls_nothing_together(monkeypatch):
    # the model trains, but on the characters in random order: the corpus's contexts are not what it learns
    true_train = OH.train

    def shuffled(stream, vocab, d, steps, seed, *name):
        return true_train(
            stream[torch.randperm(len(stream), generator=torch.Generator().manual_seed(seed))], vocab, d, steps, seed
        )

    monkeypatch.setattr(OH, "train", shuffled)
    assert statuses(OH.one_hot(train_steps=20, lang="en"))["training_context"] == NOT_SHOWN


def test_a_one_hot_table_that_is_not_orthogonal_is_contradicted(monkeypatch):
    true_table = OH.onehot_table
    monkeypatch.setattr(OH, "onehot_table", lambda V: true_table(V) + 0.1 * torch.eye(V).roll(1, 0))  # e_i + e_{i-1}/10
    assert statuses(OH.one_hot(train_steps=0, lang="en"))["onehot_orthogonal"] == CONTRADICTED


def test_orthonormal_embeddings_are_as_orthogonal_as_one_hot(monkeypatch):
    def orthonormal(stream, vocab, d, steps, seed, *name):  # an embedding table whose rows are orthonormal (d >= |V|)
        E = torch.eye(d, dtype=torch.float64)[:vocab]
        return E, E.clone(), [1.0] * steps

    monkeypatch.setattr(OH, "train", orthonormal)
    s = statuses(OH.one_hot(train_steps=20, lang="en"))
    assert s["dense_not_orthogonal"] == NOT_SHOWN and s["training_context"] == NOT_SHOWN


# ----------------------------------------------------------------------------------------------------- mlm
SMALL_MLM = dict(steps=20, d_model=8)


@pytest.fixture
def fresh_mlm():
    M.trained.cache_clear()
    yield
    M.trained.cache_clear()


def test_identical_models_lead_nothing(monkeypatch, fresh_mlm):
    true_predict = M.predict

    def identical(models, stream, where, mask_id, allowed, context):
        guess, nll = true_predict(models, stream, where, mask_id, allowed, context)
        return {k: guess["causal"].clone() for k in guess}, {k: nll["causal"].clone() for k in nll}

    monkeypatch.setattr(M, "predict", identical)
    r = M.mlm(lang="en", **SMALL_MLM)
    assert all(z == {"z_accuracy": 0.0, "z_loss": 0.0} for z in r.paired.values())
    s = statuses(r)
    assert s["accuracy"] == s["direction"] == s["shortcut"] == NOT_SHOWN


def test_couplets_with_nothing_to_find_show_no_model_ahead(monkeypatch, fresh_mlm):
    # both verses drawn at random: no character says anything about another, so no direction can help
    def random_couplets(n=mlm_task.N_COUPLETS, seed=mlm_task.DATA_SEED):
        rng = random.Random(seed)
        verse = lambda: "".join(rng.choice(mlm_task.CHARS) for _ in range(mlm_task.VERSE))  # noqa: E731
        return [f"{verse()}，{verse()}。" for _ in range(n)]

    monkeypatch.setattr(mlm_task, "couplets", random_couplets)
    s = statuses(M.mlm(lang="en", steps=40, d_model=8))
    assert s["accuracy"] == s["direction"] == s["shortcut"] == NOT_SHOWN


def test_a_gpt_without_its_causal_mask_sees_the_right(monkeypatch, fresh_mlm):
    true_build = MM.build

    def unmasked(kind, *args):
        model = true_build(kind, *args)
        if kind == "causal":
            model.causal = False  # the no-causal-mask ablation
        return model

    monkeypatch.setattr(MM, "build", unmasked)
    r = M.mlm(lang="en", **SMALL_MLM)
    assert r.causal_right_change > 0 and statuses(r)["causal_blind"] == CONTRADICTED


def test_left_only_models_that_see_the_answer_are_not_at_chance(monkeypatch, fresh_mlm):
    true_predict = M.predict

    def oracle(models, stream, where, mask_id, allowed, context):  # the blindness removed: they guess the truth
        guess, nll = true_predict(models, stream, where, mask_id, allowed, context)
        truth = stream[where]
        return {**guess, "causal": truth.clone(), "causal_fill": truth.clone()}, nll

    monkeypatch.setattr(M, "predict", oracle)
    assert statuses(M.mlm(lang="en", **SMALL_MLM))["first_verse_chance"] == CONTRADICTED
