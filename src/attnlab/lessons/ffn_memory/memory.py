"""FFN neurons as key-value memories (Geva et al. 2021), read and knocked out on one model.

FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2 = Σ_j a_j(x) · v_j + b_2 with a_j(x) = relu(x · k_j + b_j): neuron j's KEY k_j is
column j of W_1 (what it reads), its VALUE v_j row j of W_2 (what it writes into the residual stream); torch's
nn.Linear stores W_2 transposed, so in code v_j = W_2.weight[:, j]. Here both are read the way a learner can check
them:
  * key: the read positions where a_j is largest (its top-K contexts), and the next token most common after them;
  * value: v_j through the final LayerNorm and the LM head, W_U (γ ⊙ (v_j − mean(v_j))): the logits v_j adds when it
    reaches the output directly. The approximation, stated: LayerNorm also divides by the position's σ (a positive
    scale, the same for every token: the ranking is kept) and, to first order, removes the component along the
    position's own normalized residual (position dependent: left out); a neuron of an early layer also reaches the
    output through later layers (only the direct path is read). Without a final LayerNorm the value is exact
    (tests/test_ffn_memory.py adds a_j · v_j to a real forward pass and compares).
  * knockout: a_j set to 0 (what attnlab.inspect.knock_out does, batched here: a test holds them equal) and the
    change of log p of the model's own next token, against the text's average token: log p(next) minus Σ_v f_v
    log p(v), f the next tokens' frequencies on the read positions. A knockout that only flattens the prediction
    raises log p of every unlikely token, the next one included where the model does not know it (a model trained
    on shuffled text, knocked out, "helps" the real text); against the frequency-weighted average token such a
    flattening scores 0 in expectation, and only a neuron that carries the next token itself scores above it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.inspect import run_with

# neurons that share one batched forward pass when knocked out one by one: each brings its 2K contexts, and a
# pass records every site of every layer for each row (lesson.cost counts these rows)
CHUNK = 16
CHANCE_DRAWS = 4000  # random K-sets drawn to estimate how often K positions share a next token by chance


def hidden_name(layer: int) -> str:
    return f"layers.{layer}.ffn.hidden"


def value_logits(model, layer: int) -> Tensor:
    """(d_ff, V): row j is the logits neuron j's value adds per unit of activation, through the final LayerNorm's
    centering and scale (not its 1/σ) and the LM head."""
    v = model.blocks[layer].ffn.W_2.weight.detach().T  # (d_model, d_ff) -> (d_ff, d_model): row j = v_j
    if model.ln_f is not None:
        v = (v - v.mean(dim=-1, keepdim=True)) * model.ln_f.gamma.detach()  # (d_ff, d_model)
    return v @ model.lm_head.weight.detach().T  # (d_ff, d_model) @ (d_model, V) -> (d_ff, V)


def read(model, x: Tensor, at: Tensor, y: Tensor, edits=None) -> tuple[Tensor, Tensor, Tensor]:
    """One forward pass over the contexts x (P, T) with `edits`; at each context's read position: every layer's
    neuron activations (L, P, d_ff), log p of the next token y (P,), and the model's top prediction (P,)."""
    logits, tr = run_with(model, x, edits)  # (P, T, V)
    rows = torch.arange(len(x))
    acts = torch.stack([tr[hidden_name(i)][rows, at] for i in range(len(model.blocks))])  # (L, P, d_ff)
    logp = torch.log_softmax(logits[rows, at].double(), dim=-1)  # (P, V)
    return acts, logp[rows, y], logp.argmax(dim=-1)


def frequencies(y: Tensor, vocab: int) -> Tensor:
    """(V,): how often each token is the next token on the read positions (sums to 1)."""
    f = torch.bincount(y, minlength=vocab).double()
    return f / f.sum()


def scores(model, x: Tensor, at: Tensor, y: Tensor, freq: Tensor, edits=None) -> tuple[Tensor, Tensor, Tensor]:
    """read()'s log p of the next token (P,) against the frequency-weighted average token's, the log p itself (P,),
    and the top prediction (P,)."""
    logits, _ = run_with(model, x, edits)  # (P, T, V)
    rows = torch.arange(len(x))
    logp = torch.log_softmax(logits[rows, at].double(), dim=-1)  # (P, V)
    return logp[rows, y] - logp @ freq, logp[rows, y], logp.argmax(dim=-1)


@dataclass
class Neuron:
    layer: int  # counted from 0 here; the page counts from 1
    index: int
    fire: list[int]  # its top-K read positions, largest activation first (all > 0)
    acts: list[float]  # the activations there
    key_next: int  # the next token most common after those positions
    key_count: int  # how many of the K it follows
    value_top: list[int]  # the tokens its value promotes most, best first
    value_logit: list[float]
    hurt_fire: float | None = None  # −Δ of the next token's score (scores()), knocked out, mean over its top-K
    hurt_quiet: float | None = None  # the same on K positions where it does not fire
    flips: int | None = None  # of its top-K positions, how many change their top prediction when it is knocked out
    example: tuple | None = None  # (position, p before, p after, top prediction before, after) at its strongest

    @property
    def shared(self) -> bool:
        """The key's contexts share their next token: at least half of the K are followed by one token."""
        return 2 * self.key_count >= len(self.fire)

    @property
    def readable(self) -> bool:
        """The value promotes, first of all tokens, the token that most often follows the key's contexts."""
        return self.value_top[0] == self.key_next


def neurons(model, acts: Tensor, y: Tensor, K: int, n_value: int = 5) -> list[Neuron]:
    """Every neuron that fires (activation > 0) on at least K read positions, its key and its value. A neuron that
    fires on fewer has no top-K without ties at 0: it is counted as not alive."""
    out = []
    for layer in range(acts.shape[0]):
        values = value_logits(model, layer)  # (d_ff, V)
        top_v, top_i = values.topk(min(n_value, values.shape[1]), dim=-1)  # (d_ff, n_value)
        a = acts[layer]  # (P, d_ff)
        alive = ((a > 0).sum(dim=0) >= K).nonzero().flatten().tolist()
        best, where = a.topk(K, dim=0)  # (K, d_ff) each
        for j in alive:
            fire = where[:, j].tolist()
            key_next, count = Counter(y[fire].tolist()).most_common(1)[0]
            out.append(
                Neuron(layer, j, fire, best[:, j].tolist(), key_next, count, top_i[j].tolist(), top_v[j].tolist())
            )
    return out


def quiet(acts: Tensor, layer: int, j: int, K: int) -> list[int]:
    """K read positions where neuron j does not fire (activation 0), evenly spread; the K lowest where fewer exist."""
    a = acts[layer, :, j]  # (P,)
    zero = (a <= 0).nonzero().flatten()
    if len(zero) >= K:
        return zero[torch.linspace(0, len(zero) - 1, K).round().long()].tolist()
    return a.topk(K, largest=False).indices.tolist()


def knock_each(
    model, x: Tensor, at: Tensor, y: Tensor, acts: Tensor, found: list[Neuron], K: int, freq: Tensor, chunk: int = CHUNK
) -> None:
    """Knock out each neuron alone (everywhere in the context) and fill in its hurt where it fires and where not.
    `chunk` neurons share one forward pass: each gets its own copy of its 2K contexts, with only itself set to 0
    (the same as knock_out([j]) on those rows, batched)."""
    base_score, base_logp, base_top = scores(model, x, at, y, freq)
    for layer in sorted({n.layer for n in found}):
        mine = [n for n in found if n.layer == layer]
        for start in range(0, len(mine), chunk):
            group = mine[start : start + chunk]
            rows = torch.tensor([p for n in group for p in n.fire + quiet(acts, layer, n.index, K)])  # (G·2K,)
            keep = torch.ones(len(rows), 1, acts.shape[-1])  # (G·2K, 1, d_ff)
            keep[torch.arange(len(rows)), 0, torch.tensor([n.index for n in group]).repeat_interleave(2 * K)] = 0.0
            edit = {hidden_name(layer): lambda t, k=keep: t * k}
            score, logp, top = scores(model, x[rows], at[rows], y[rows], freq, edit)
            hurt = (base_score[rows] - score).view(len(group), 2 * K)  # positive: the target lost, beyond flattening
            flipped = (top != base_top[rows]).view(len(group), 2 * K)
            for g, n in enumerate(group):
                n.hurt_fire, n.hurt_quiet = float(hurt[g, :K].mean()), float(hurt[g, K:].mean())
                n.flips = int(flipped[g, :K].sum())
                p0 = n.fire[0]
                n.example = (
                    p0,
                    float(base_logp[p0].exp()),
                    float(logp[g * 2 * K].exp()),
                    int(base_top[p0]),
                    int(top[g * 2 * K]),
                )


def knock_handful(
    model, x: Tensor, at: Tensor, y: Tensor, acts: Tensor, n: int, seed: int, freq: Tensor
) -> tuple[Tensor, Tensor]:
    """At every read position and in every layer: knock out the n neurons that fire most there, and, as the control,
    n neurons drawn at random among those that fire there at all (activation > 0; topped up with silent ones where
    fewer fire), so the control removes something too. Returns the hurts (L, P) of each (scores())."""
    g = torch.Generator().manual_seed(seed)
    base = scores(model, x, at, y, freq)[0]  # (P,)
    hurt_top, hurt_random = [], []
    for layer in range(acts.shape[0]):
        a = acts[layer]  # (P, d_ff)
        top = a.topk(n, dim=-1).indices  # (P, n)
        score = torch.rand(a.shape, generator=g) + (a > 0).float()  # firing neurons first, in random order
        rand = score.argsort(dim=-1, descending=True)[:, :n]  # (P, n): n distinct neurons per position
        for chosen, into in ((top, hurt_top), (rand, hurt_random)):
            keep = torch.ones_like(a).scatter_(1, chosen, 0.0)[:, None, :]  # (P, 1, d_ff): 0 for the knocked out
            into.append(base - scores(model, x, at, y, freq, {hidden_name(layer): lambda t, k=keep: t * k})[0])
    return torch.stack(hurt_top), torch.stack(hurt_random)  # (L, P) each


def shared_by_chance(y: Tensor, K: int, seed: int, draws: int = CHANCE_DRAWS) -> float:
    """How often K read positions drawn at random (a neuron with its activations shuffled) have one next token
    following at least half of them: the chance level of `Neuron.shared`."""
    g = torch.Generator().manual_seed(seed)
    picks = torch.rand(draws, len(y), generator=g).argsort(dim=-1)[:, :K]  # (draws, K) distinct positions
    counts = torch.zeros(draws, int(y.max()) + 1).scatter_add_(1, y[picks], torch.ones(draws, K))  # (draws, V)
    return float((2 * counts.max(dim=-1).values >= K).double().mean())


def shared_given_current(cur: Tensor, y: Tensor, found: list[Neuron], seed: int, draws: int = 400) -> float:
    """The chance level of `Neuron.shared` for a neuron that reads only the current token: for each neuron, its K
    key positions replaced by as many others with the same current tokens (drawn without replacement), and how
    often those share a next token; the mean over the neurons. In real text the current token decides much of the
    next (after "q" comes "u"), so a neuron of a model that learnt no order at all, firing on one character, has
    contexts that share a next token: K positions drawn from anywhere would not see that (shared_by_chance)."""
    if not found:
        return 0.0
    g = torch.Generator().manual_seed(seed)
    pools = {int(c): (cur == c).nonzero().flatten() for c in cur.unique()}  # current token -> its positions
    rates = []
    for n in found:
        K = len(n.fire)
        picked = []
        for c, m in Counter(cur[n.fire].tolist()).items():
            pool = pools[c]  # holds the m key positions themselves: never too small
            order = torch.rand(draws, len(pool), generator=g).argsort(dim=-1)[:, :m]  # (draws, m) distinct
            picked.append(pool[order])
        nexts = y[torch.cat(picked, dim=1)]  # (draws, K)
        counts = torch.zeros(draws, int(y.max()) + 1).scatter_add_(1, nexts, torch.ones(draws, K))
        rates.append(float((2 * counts.max(dim=-1).values >= K).double().mean()))
    return sum(rates) / len(rates)


def readable_by_chance(found: list[Neuron]) -> float:
    """How often one neuron's value top token equals ANOTHER neuron's key token (every ordered pair i ≠ j): the
    chance level of `Neuron.readable`, with both sides' token frequencies as they are."""
    n = len(found)
    if n < 2:
        return 0.0
    values, keys = Counter(x.value_top[0] for x in found), Counter(x.key_next for x in found)
    pairs = sum(values[t] * keys[t] for t in values)  # all ordered pairs with equal tokens, i = j included
    return (pairs - sum(x.readable for x in found)) / (n * (n - 1))
