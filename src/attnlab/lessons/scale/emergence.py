"""Emergence depends on the metric (issue 24, item 2): one capability scored exactly and smoothly, per model size.

Two capabilities of a poem model, each scored two ways on the same items:
- form: exactly, the share of poems sampled at temperature 1 that come out in a regular form (五绝, 七绝 or 五律:
  a 七律 does not fit the sweep's 64-character context); smoothly, the mean probability the model gives to the
  right mark (，or 。) at the end of each verse of held-out regular poems, read with the poem's own text.
- recall: exactly, the share of famous opening couplets whose second verse greedy decoding writes character for
  character from the first; smoothly, the per-character probability (geometric mean) of that right second verse.
An exact score is a threshold on many small steps: it can stay at 0 and then jump while the smooth score rises
steadily (Schaeffer et al. 2023, "Are emergent abilities a mirage?"). `shape` says which happened across sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlab.text.forms import classify

# Opening couplets we typed; a sweep uses those that open a poem of its training split (so it could have read them).
OPENINGS: tuple[tuple[str, str], ...] = (
    ("白日依山尽", "黄河入海流"),
    ("春眠不觉晓", "处处闻啼鸟"),
    ("国破山河在", "城春草木深"),
    ("空山不见人", "但闻人语响"),
    ("海上生明月", "天涯共此时"),
    ("离离原上草", "一岁一枯荣"),
    ("松下问童子", "言师采药去"),
    ("独坐幽篁里", "弹琴复长啸"),
    ("移舟泊烟渚", "日暮客愁新"),
    ("向晚意不适", "驱车登古原"),
    ("好雨知时节", "当春乃发生"),
    ("两个黄鹂鸣翠柳", "一行白鹭上青天"),
    ("朝辞白帝彩云间", "千里江陵一日还"),
    ("故人西辞黄鹤楼", "烟花三月下扬州"),
    ("葡萄美酒夜光杯", "欲饮琵琶马上催"),
    ("秦时明月汉时关", "万里长征人未还"),
    ("独在异乡为异客", "每逢佳节倍思亲"),
    ("床前明月光", "疑是地上霜"),
    ("红豆生南国", "春来发几枝"),
    ("千山鸟飞绝", "万径人踪灭"),
    ("锄禾日当午", "汗滴禾下土"),
)
SAMPLES = 32  # poems sampled per model for the form score
HELD_OUT_POEMS = 32  # held-out regular poems read for the smooth form score
MARKS = "，。"
LONGEST = 80  # characters: a 七律 with its marks and line breaks is 67


@dataclass
class Items:
    """What every model of one sweep is scored on (the same items for every size)."""

    couplets: list[tuple[str, str]]  # (first verse, second verse), each opening a poem of the training split
    held_out: list[list[int]]  # held-out regular poems as token ids, the end-of-text mark first
    corpus_form_share: float | None  # share of the training poems in a scored regular form: the level to reach


def _poems(ids: torch.Tensor, eot: int) -> list[list[int]]:
    """A stream of texts joined by the end-of-text mark, split back into texts."""
    out, cur = [], []
    for i in ids.tolist():
        if i == eot:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(i)
    return out + ([cur] if cur else [])


SCORED_FORMS = ("wujue", "qijue", "wulv")


def items_for(tokenizer, data, context: int) -> Items:
    """The couplets and held-out poems a sweep scores (none where the corpus holds no regular poems)."""
    eot = tokenizer.eot_id
    train = [tokenizer.decode(p) for p in _poems(data.train, eot)]
    forms = [classify(p) if len(p) <= LONGEST else None for p in train]  # (a long text: never a regular poem)
    if not any(f in SCORED_FORMS for f in forms):
        return Items([], [], None)
    couplets = [(a, b) for a, b in OPENINGS if any(p.startswith(f"{a}，{b}") for p in train)]
    held = []
    for p in _poems(data.val, eot) if data.val is not None else []:
        if len(p) < min(context, LONGEST) and classify(tokenizer.decode(p)) in SCORED_FORMS:
            held.append([eot] + p)
        if len(held) == HELD_OUT_POEMS:
            break
    return Items(couplets, held, sum(f in SCORED_FORMS for f in forms) / len(forms))


@torch.no_grad()
def sample_poems(model, eot: int, n: int, seed: int, device) -> list[list[int]]:
    """n poems sampled at temperature 1 from the end-of-text mark, each until its own end-of-text mark (or the
    context's end), batched."""
    context = model.config.context_length
    g = torch.Generator(device="cpu").manual_seed(seed)
    seq = torch.full((n, 1), eot, dtype=torch.long, device=device)  # (n, 1)
    done = torch.zeros(n, dtype=torch.bool)
    while seq.shape[1] < context and not bool(done.all()):
        probs = torch.softmax(model(seq)[:, -1].float().cpu(), dim=-1)  # (n, V)
        nxt = torch.multinomial(probs, 1, generator=g)  # (n, 1)
        done |= nxt[:, 0] == eot
        seq = torch.cat([seq, nxt.to(device)], dim=1)
    poems = []
    for row in seq[:, 1:].tolist():
        poems.append(row[: row.index(eot)] if eot in row else None)  # None: never finished within the context
    return poems


@torch.no_grad()
def measure(model, tokenizer, items: Items, *, seed: int = 0) -> dict:
    """The four scores of one trained model (None where the sweep has no items for one)."""
    device = next(model.parameters()).device
    was = model.training
    model.eval()
    try:
        out = {
            "form_score": None,
            "form_prob": None,
            "exact_recall": None,
            "recall_prob": None,
            "samples": SAMPLES,
            "couplets": len(items.couplets),
            "held_out_poems": len(items.held_out),
        }
        if items.corpus_form_share is not None:
            poems = sample_poems(model, tokenizer.eot_id, SAMPLES, seed, device)
            ok = [p is not None and classify(tokenizer.decode(p)) in SCORED_FORMS for p in poems]
            out["form_score"] = sum(ok) / len(ok)
        if items.held_out:
            mark_ids = {i for m in MARKS for i in tokenizer.encode(m)}
            probs = []
            for ids in items.held_out:
                x = torch.tensor([ids], device=device)  # (1, T)
                p = torch.softmax(model(x[:, :-1])[0].float(), dim=-1)  # (T-1, V)
                for t, nxt in enumerate(ids[1:]):
                    if nxt in mark_ids:
                        probs.append(float(p[t, nxt]))
            out["form_prob"] = sum(probs) / len(probs) if probs else None
        if items.couplets:
            hits, logps = 0, []
            for first, second in items.couplets:
                ids = [tokenizer.eot_id] + tokenizer.encode(first + "，")
                target = tokenizer.encode(second)
                x = torch.tensor([ids + target], device=device)  # (1, T): teacher-forced, for the smooth score
                logp = torch.log_softmax(model(x)[0].float(), dim=-1)  # (T, V)
                logps += [float(logp[len(ids) - 1 + k, tok]) for k, tok in enumerate(target)]
                seq = list(ids)
                for _ in target:  # greedy, for the exact score
                    seq.append(int(model(torch.tensor([seq], device=device))[0, -1].argmax()))
                hits += seq[len(ids) :] == target
            out["exact_recall"] = hits / len(items.couplets)
            out["recall_prob"] = math.exp(sum(logps) / len(logps))
        return out
    finally:
        model.train(was)


# ---- the shape of a score across sizes -----------------------------------------------------------------------------

JUMP = 0.6  # a score "jumps" when one step between adjacent sizes makes at least this share of its whole rise


SMOOTH = ("form_prob", "recall_prob")  # probabilities: their shape is read on a log scale (a factor, not a difference)
SMOOTH_FLOOR = math.log(1.1)  # a smooth score is flat when it moves by less than 10%


def noise(metric: str, values: list[float], n: int | None) -> float:
    """The change a score must exceed to be a change: two binomial standard errors of a share of n items (at
    least one item's worth); for a probability, a factor of 1.1 (its values are then compared as logarithms)."""
    if metric in ("form_score", "exact_recall") and n:
        p = min(max(max(values), 1 / n), 1 - 1 / n) if n > 1 else 0.5
        return max(2 * math.sqrt(p * (1 - p) / n), 1 / n)
    return SMOOTH_FLOOR


def shape(values: list[float | None], floor: float) -> dict:
    """How a score moves across sizes (sorted by size): 'flat' (its whole range within `floor`, the noise),
    'jump' (one adjacent step makes ≥ JUMP of its movement), 'gradual', or 'too-few-sizes'; `rise` is the last
    size's value minus the first's (its sign says whether the score grew or fell with size)."""
    vals = [v for v in values if v is not None]
    if len(vals) < 3:
        return {"shape": "too-few-sizes", "rise": None, "largest_step_share": None}
    rise = vals[-1] - vals[0]
    span = max(vals) - min(vals)
    if span <= floor:
        return {"shape": "flat", "rise": rise, "largest_step_share": None}
    steps = [b - a for a, b in zip(vals, vals[1:])]
    share = max(abs(s) for s in steps) / sum(abs(s) for s in steps)
    return {"shape": "jump" if share >= JUMP else "gradual", "rise": rise, "largest_step_share": share}


def table(runs: list[dict]) -> list[dict]:
    """Per model size, the scores of its run at the largest compute budget it ran in, by size."""
    best: dict[tuple, dict] = {}
    for r in runs:
        key = (r["layers"], r["d_model"])
        if r.get("form_score") is None and r.get("recall_prob") is None:
            continue
        if key not in best or r["budget"] > best[key]["budget"]:
            best[key] = r
    keys = (
        "name",
        "n_params",
        "budget",
        "tokens",
        "val_loss",
        "form_score",
        "form_prob",
        "exact_recall",
        "recall_prob",
        "samples",
        "couplets",
    )
    return [{k: r.get(k) for k in keys} for r in sorted(best.values(), key=lambda r: r["n_params"])]


def summarize(runs: list[dict]) -> dict:
    """The emergence table and the shape of each score across sizes."""
    rows = table(runs)
    out = {"rows": rows, "jump_share": JUMP, "shapes": {}}
    for metric, n_key in (
        ("form_score", "samples"),
        ("form_prob", None),
        ("exact_recall", "couplets"),
        ("recall_prob", None),
    ):
        values = [r[metric] for r in rows]
        n = rows[0][n_key] if rows and n_key else None
        present = [v for v in values if v is not None]
        floor = noise(metric, present, n) if present else 0.0
        if metric in SMOOTH:  # a probability from 0.001 to 0.003 has tripled: compare logarithms
            values = [math.log(v) if v else None for v in values]
        out["shapes"][metric] = {
            **shape(values, floor),
            "noise": floor,
            "scale": "log" if metric in SMOOTH else "linear",
        }
    return out
