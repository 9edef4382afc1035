"""The toy lesson in a notebook: `ToyLab` and `HandCalc` as the /toy page shows them, as labelled tables (rows
and columns named by the tokens 猫 追 老鼠 它, X's features, the keys j), not a dump of the dataclass fields;
a prediction's `Verdict` as the page says it: right or wrong, in words, with the lab's numbers that decide it.
The headings are in both languages, as the course notebook is written; every number is the lesson's, only
formatted here (attnlab.display.fmt's honest rounding, exact fractions where the lesson has them)."""

from __future__ import annotations

from attnlab.display.fmt import num
from attnlab.display.heatmap import esc
from attnlab.display.table import STYLE, table
from attnlab.i18n import t

NOTE = "color:#4a5266;font-size:.9em;max-width:60em"


def both(key: str, nested: dict[str, str] | None = None, **fields: object) -> str:
    """A catalog string in Chinese, then in English (greyed), escaped; `nested` fills a field with another
    key's text in the same language ("{mask}" -> "因果 mask 开启" / "causal mask on")."""
    texts = [t(key, lang, **fields, **{f: t(k, lang) for f, k in (nested or {}).items()}) for lang in ("zh", "en")]
    return f'{esc(texts[0])} <span lang="en" style="color:#6b7283;font-weight:400">{esc(texts[1])}</span>'


def vec(v) -> str:
    return "(" + ", ".join(num(x) for x in v) + ")"


def _h(text: str) -> str:
    return f'<h4 style="margin:.9em 0 .3em">{text}</h4>'


def toy_html(lab) -> str:
    """A ToyLab: X, the mask (when on), each head's W, Q/K/V, S and A (masked cells hatched), the chosen query's
    row term by term, its output as a sum, and the two heads concatenated."""
    toks, sel = lab.tokens, lab.query_index
    feats = [f"{t(f'toy.feature.{f}', 'zh')} {t(f'toy.feature.{f}', 'en')}" for f in lab.features]
    state = "toy.lab.status.causal" if lab.causal else "toy.lab.status.full"
    parts = [
        STYLE,
        f'<div class="attnlab-repr attnlab-toy"><p><strong>ToyLab</strong> · {both("toy.lab.h")}</p>',
        f"<p>{both('toy.lab.status.query', {'mask': state}, tok=lab.query, pos=lab.query_position)}</p>",
        _h(both("toy.lab.x.h")),
        table(lab.X, toks, feats, "X (4×4)", sel=sel, name="X"),
    ]
    if lab.causal:
        parts.append(table(lab.mask, toks, toks, both("toy.lab.mask"), name="mask"))
    for h in lab.heads:
        r = h.row
        parts += [
            _h(both(f"toy.head.{h.name}")),
            table(h.W_Q, feats, ["1", "2"], "W_Q (4×2)", name="W_Q"),
            table(h.W_K, feats, ["1", "2"], "W_K (4×2)", name="W_K"),
            table(h.W_V, feats, ["1", "2"], "W_V (4×2)", name="W_V"),
            "<br>",
            table(h.Q, toks, ["1", "2"], "Q = X W_Q", sel=sel, name="Q"),
            table(h.K, toks, ["1", "2"], "K = X W_K", name="K"),
            table(h.V, toks, ["1", "2"], "V = X W_V", name="V"),
            "<br>",
            table(h.masked_scores, toks, toks, "S = QKᵀ/√2", sel=sel, name="masked_scores"),
            table(h.weights, toks, toks, "A = softmax(S)", mask=lab.mask, heat_map=True, sel=sel, name="weights"),
            table(h.output, toks, ["1", "2"], "O = A V", sel=sel, name="output"),
            "<br>",
            table(
                [
                    [r.dots[j], r.scores[j], r.weights[j], vec(h.V[j]), r.contribution_norms[j]]
                    for j in range(len(toks))
                ],
                toks,
                ["q·k", "s = q·k/√2", "a", "v", "‖a·v‖"],
                both("toy.lab.row.h", tok=lab.query),
                name="row",
            ),
            f'<p style="{NOTE}">o<sub>{esc(lab.query)}</sub> = '
            + " + ".join(f"{num(a)}·{vec(v)}" for a, v in zip(r.weights, h.V) if a > 0)
            + f" = <strong>{vec(r.output)}</strong></p>",
        ]
    parts += [
        _h(both("toy.lab.concat.h")),
        table(lab.concat, toks, ["1", "2", "3", "4"], "[O₁ | O₂] (4×4)", sel=sel, name="concat"),
        f'<p style="{NOTE}">{both("toy.lab.caveat")}</p></div>',
    ]
    return "".join(parts)


def _exact_or(exact: str | None, x: float) -> str:
    """'1/4 = 0.25' where the lesson has the exact fraction (and it is not just the number again), else '0.25'."""
    return num(x) if exact is None or exact == num(x) else f"{exact} = {num(x)}"


def _exact_vec(exact: list[str] | None, v) -> str:
    """'(1/2, 3/2) = (0.5, 1.5)' where the lesson has exact fractions that read differently, else '(0.5, 1.5)'."""
    shown = vec(v)
    return shown if exact is None or f"({', '.join(exact)})" == shown else f"({', '.join(exact)}) = {shown}"


def hand_html(hand) -> str:
    """A HandCalc: softmax of the scores as written, the weighted sum of the values (exact where the lesson
    is), then the change against the textbook values, Δo = Σ aⱼ Δvⱼ, beside the measured Δo."""
    n, ex, keys = hand.now, hand.now.exact, [f"j = {j + 1}" for j in range(len(hand.score_inputs))]
    textbook = f"{t('toy.hand.textbook', 'zh')} {t('toy.hand.textbook', 'en')}"
    step1 = [
        [hand.score_inputs[j]]
        + ([ex.exp_scores[j]] if ex else [])
        + [
            _exact_or(ex.weights[j] if ex else None, n.weights[j]),
            vec(n.values[j]),
            _exact_vec(ex.contributions[j] if ex else None, n.contributions[j]),
        ]
        for j in range(len(keys))
    ]
    step1.append([""] * (len(step1[0]) - 1) + [_exact_vec(ex.output if ex else None, n.output)])
    cols = ["s", *(["eˢ"] if ex else []), "a = softmax(s)", "v", "a·v"]
    delta = [
        [
            vec(hand.before.values[j]),
            vec(n.values[j]),
            vec(hand.delta_values[j]),
            num(n.weights[j]),
            _delta_term(hand, j),
        ]
        for j in range(len(keys))
    ]
    delta.append(["", "", "", "", _exact_vec(hand.exact_delta_output, hand.predicted_delta)])
    parts = [
        STYLE,
        f'<div class="attnlab-repr attnlab-hand"><p><strong>HandCalc</strong> · {both("toy.hand.h")}</p>',
        _h(both("toy.hand.step.weights")),
        table(step1, [*keys, "o = Σ aⱼvⱼ"], cols, both("toy.hand.step.output"), name="mix"),
        "" if ex else f'<p style="{NOTE}">{both("toy.hand.inexact")}</p>',
        _h(both("toy.hand.delta.h")),
        table(delta, [*keys, "Δo = Σ aⱼΔvⱼ"], [f"v ({textbook})", "v", "Δv", "a", "a·Δv"], "", name="delta"),
        f'<p style="{NOTE}">o − o<sub>{esc(textbook)}</sub> = {vec(n.output)} − {vec(hand.before.output)} = '
        f"<strong>{vec(hand.delta_output)}</strong></p>",
        f'<p style="{NOTE}">{both("toy.hand.delta.note")}</p></div>',
    ]
    return "".join(parts)


def _delta_term(hand, j: int) -> str:
    return _exact_vec(hand.exact_delta_terms[j] if hand.exact_delta_terms else None, hand.delta_terms[j])


def verdict_html(v) -> str:
    """A Verdict: the question, ✓ right or ✗ wrong with the answer, and the lab's numbers that settle it."""
    mark, color = ("✓", "#2f7d4f") if v.correct else ("✗", "#b3261e")
    if v.correct:
        said = both("toy.predict.right")
    elif v.answer in ("yes", "no"):
        said = both("toy.predict.wrong", {"answer": f"toy.predict.opt.{v.id}.{v.answer}"})
    else:
        said = both("toy.predict.wrong", answer=v.answer)
    e = v.evidence
    if v.id == "keys":
        why = both("toy.predict.why.keys", n=e["nonzero"], w=num(e["min_weight"]))
    elif v.id == "future":
        why = both("toy.predict.why.future", w1=num(e["weight_head1"]), w2=num(e["weight_head2"]))
    else:
        why = both(
            "toy.predict.why.heads",
            t1=e["head1_top"],
            w1=num(e["head1_weight"]),
            t2=e["head2_top"],
            w2=num(e["head2_weight"]),
            d=num(e["max_difference"]),
        )
    return (
        f'<div class="attnlab-repr attnlab-verdict"><p>{both(f"toy.predict.q.{v.id}")}</p>'
        f'<p><strong>Verdict</strong> <span style="color:{color};font-weight:700">{mark}</span> {said}</p>'
        f'<p style="{NOTE}">{why}</p></div>'
    )
