"""That each ablation changes what it names, measured on fresh models (seed 0) of the experiment's own sizes.

Each check returns `error` (how far the ablated model is from its hand-written formula: ~0 when it does what
the name says) and `intact` (the same quantity on the intact model, which must differ: the formula is not
simply true of any model), plus a number or two to show; `holds` says both came out as they should. `shifted`
regroups a whole FFN-first stack as the usual alternation shifted by half a block.
"""

from __future__ import annotations

import math

import torch

from attnlab.lessons.common.params import seeded


def _models(ablation: str, data):
    from attnlab.lessons.break_it.runs import setup_of
    from attnlab.models.gpt import GPT, GPTConfig

    out = []
    for ablations in ((), (ablation,)):
        with seeded(0):
            out.append(GPT(GPTConfig(**setup_of(ablation, data), ablations=ablations)).double().eval())
    return out


def _recorded(model, idx, **kw) -> dict:
    rec: dict = {}
    with torch.no_grad():
        model(idx, record=lambda name, x: rec.__setitem__(name, x), **kw)
    return rec


def _attn(block, h):
    out, _ = block.attn(h, causal=True)
    return out


def hand_block(block, x, ablation: str | None):
    """The first block written out by hand, post-LN (the experiment's form), for each ablation it can take."""
    ln_1 = (lambda h: h) if ablation == "no-layernorm" else block.ln_1
    ln_2 = (lambda h: h) if ablation == "no-layernorm" else block.ln_2
    if ablation == "no-residual":
        return ln_2(block.ffn(ln_1(_attn(block, x))))  # no "x +" anywhere
    if ablation == "ffn-first":
        h = ln_2(x + block.ffn(x))
        return ln_1(h + _attn(block, h))
    if ablation == "attention-only":
        return ln_1(x + _attn(block, x))
    if ablation == "ffn-only":
        return ln_2(x + block.ffn(x))
    h = ln_1(x + _attn(block, x))
    return ln_2(h + block.ffn(h))


TINY = 1e-9  # a formula met in float64


def check(ablation: str, data) -> dict:
    out = _check(ablation, data)
    out.setdefault("holds", out["error"] < TINY and out["intact"] > 1e-6)
    return out


def _check(ablation: str, data) -> dict:
    intact, ablated = _models(ablation, data)
    T = intact.config.context_length
    idx = data.train[None, :T]  # (1, T) the text's first window
    with torch.no_grad():
        if ablation == "no-causal-mask":
            # the weight each query (but the last, which has no later key) puts on later keys: 0 under the mask
            above = torch.ones(idx.shape[1], idx.shape[1], dtype=torch.double).triu(1)  # (T, T)
            later = [(_recorded(m, idx)["layers.0.attn.weights"] * above).sum(-1)[..., :-1] for m in (ablated, intact)]
            ok = float(later[0].min()) > 0 and float(later[1].abs().max()) == 0.0
            return {
                "error": 0.0 if float(later[0].min()) > 0 else 1.0,
                "above_diagonal": float(later[0].mean()),
                "intact": float(later[1].abs().max()),
                "kind": "above_diagonal",
                "holds": ok,
            }
        if ablation == "no-positions":
            # no position vectors and no mask: the first layer sees a bag of tokens, so permuting the tokens
            # permutes its output (the causal mask is what is left to tell positions apart)
            perm = torch.arange(idx.shape[1] - 1, -1, -1)
            errs = []
            for m in (ablated, intact):
                out = _recorded(m, idx, causal=False)["layers.0.output"]
                out_p = _recorded(m, idx[:, perm], causal=False)["layers.0.output"]
                errs.append(float((out_p - out[:, perm]).abs().max()))
            return {"error": errs[0], "intact": errs[1], "kind": "permutation"}
        if ablation == "no-scale":
            errs, stds = [], []
            for m in (ablated, intact):
                rec = _recorded(m, idx)
                q, k = rec["layers.0.attn.q"], rec["layers.0.attn.k"]
                errs.append(float((rec["layers.0.attn.scores"] - q @ k.transpose(-2, -1)).abs().max()))  # QK^T
                stds.append(float(rec["layers.0.attn.scores"].std()))
            d_k = ablated.blocks[0].attn.d_k
            return {
                "error": errs[0],
                "intact": errs[1],
                "d_k": d_k,
                "std_ratio": stds[0] / stds[1],
                "sqrt_d_k": math.sqrt(d_k),
                "kind": "scores",
            }
        if ablation == "one-head":
            a, i = ablated.blocks[0].attn, intact.blocks[0].attn
            w = _recorded(ablated, idx)["layers.0.attn.weights"]  # (1, H, T, T)
            return {
                "error": float(abs(a.n_heads - 1) + abs(w.shape[1] - 1) + abs(a.d_k - a.d_model)),
                "intact": float(i.n_heads - 1),
                "n_heads": a.n_heads,
                "d_k": a.d_k,
                "intact_n_heads": i.n_heads,
                "intact_d_k": i.d_k,
                "kind": "heads",
            }
        # the block-level ablations: the first block against its hand-written formula
        errs = []
        for m in (ablated, intact):
            rec = _recorded(m, idx)
            x = rec["embed.tokens"] + (rec["embed.positions"] if "embed.positions" in rec else 0)  # (1, T, d)
            # the intact model against the same formula: it must not fit (else the check would prove nothing)
            errs.append(float((rec["layers.0.output"] - hand_block(m.blocks[0], x, ablation)).abs().max()))
        n_ln = sum(type(mod).__name__ == "LayerNorm" for mod in ablated.modules())
        n_ln_intact = sum(type(mod).__name__ == "LayerNorm" for mod in intact.modules())
        out = {
            "error": errs[0],
            "intact": errs[1],
            "kind": "formula",
            "layernorms": n_ln,
            "intact_layernorms": n_ln_intact,
        }
        if ablation == "ffn-only":
            # no attention: changing the first token changes no other position's output
            other = idx.clone()
            other[0, 0] = (other[0, 0] + 1) % ablated.config.vocab_size
            rec_a, rec_b = _recorded(ablated, idx), _recorded(ablated, other)
            out["cross_talk"] = float((rec_a["layers.0.output"][:, 1:] - rec_b["layers.0.output"][:, 1:]).abs().max())
            out["error"] = max(out["error"], out["cross_talk"])
        return out


def shifted(data, ablation: str = "ffn-first") -> dict:
    """FFN-first is the usual alternation shifted by half a block. Its stack of N blocks (F A)(F A)...(F A) is
    regrouped by hand as F, then N-1 ordinary blocks (A F) each made of block i's attention and block i+1's FFN
    (with their own LayerNorms), then A: the first FFN sees one position alone, the last attention feeds the head
    with no FFN after it. `error`: the ffn-first model's last block output against that regrouping (~0); `intact`:
    the intact model against the same regrouping of its own blocks (it must differ)."""
    errs, n = [], 0
    for m in _models(ablation, data)[::-1]:  # the ffn-first model first, then the intact one
        T = m.config.context_length
        idx = data.train[None, :T]  # (1, T)
        rec = _recorded(m, idx)
        x = rec["embed.tokens"] + (rec["embed.positions"] if "embed.positions" in rec else 0)  # (1, T, d)
        blocks = m.blocks
        n = len(blocks)
        with torch.no_grad():
            h = hand_block(blocks[0], x, "ffn-only")  # F alone: ln_2(x + ffn(x))
            for a, f in zip(blocks[:-1], blocks[1:]):  # A from block i, F from block i + 1
                h = a.ln_1(h + _attn(a, h))
                h = f.ln_2(h + f.ffn(h))
            h = hand_block(blocks[-1], h, "attention-only")  # A alone: ln_1(h + attn(h))
        errs.append(float((rec[f"layers.{len(blocks) - 1}.output"] - h).abs().max()))
    return {"error": errs[0], "intact": errs[1], "n_layers": n, "middle": n - 1}
