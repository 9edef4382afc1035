"""Any trained model, opened: steps ① to ④ on a text the learner types, and where 月 looks in 床前明月光.

The same lessons as the pipeline page (lesson.py and focus.py beside it), for a checkpoint the CLI
wrote rather than a run trained in the page: ① the text's ids ② its embedding rows ③ every layer's and
head's attention ④ the distribution of the token after the whole text, then the logit lens (lens.py: what each
layer would predict) and each head's effect on ④'s top token when it is removed (heads.py). Step ⑥ is
`attnlab.sampling.generate` on the same model. The 月 question needs 床, 前, 明, 月 in the model's vocabulary,
each one token; when a model lacks them the view says which, instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.lessons.pipeline.focus import DEFAULT_EXPECTED, DEFAULT_QUERY, Focus, focus
from attnlab.lessons.pipeline.heads import HeadEffectsView, head_effects_view, heads_absent
from attnlab.lessons.pipeline.lens import LensView, lens_absent, lens_view
from attnlab.lessons.pipeline.lesson import DEFAULT_TEXT, PipelineView, pipeline

MAX_TEXT = 32  # characters of typed text (a 七绝 quatrain with its punctuation): every head's T × T map is drawn
TOP = 20  # most probable next tokens listed first


@dataclass
class ModelSummary:
    """What the checkpoint's config.json says about the model and its training."""

    name: str
    corpus: str | None
    tokenizer: str
    layers: int
    heads: int
    d_model: int
    context: int
    positions: str
    vocab_size: int
    n_params: int
    step: int | None
    loss: float | None
    val_loss: float | None


@dataclass
class FocusView:
    """Where 月 looks in 床前明月光 in every layer and head, or why this model cannot be asked."""

    text: str
    focus: Focus | None
    unseen: list[str]  # characters of the text the model's vocabulary lacks (then focus is None)
    problem: str | None  # another reason focus is None (a tokenizer that does not spell 月 as one token)


@dataclass
class ModelView:
    summary: ModelSummary
    steps: PipelineView  # ① to ④ on the typed text; ④ is the token after all of it
    focus: FocusView
    lens: LensView | None  # what each layer would predict; None: lens_absent says why
    lens_absent: str | None  # no_head
    heads: HeadEffectsView | None  # Δ log p of ④'s top token with each head removed; None: heads_absent says why
    heads_absent: str | None  # no_head | no_attention (ffn-only) | too_big


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def summary(name: str, model, tokenizer, meta: dict) -> ModelSummary:
    c = model.config
    step = meta.get("step")
    return ModelSummary(
        name=name,
        corpus=meta.get("corpus"),
        tokenizer=tokenizer.kind,
        layers=c.n_layers,
        heads=c.n_heads,
        d_model=c.d_model,
        context=c.context_length,
        positions=c.positions,
        vocab_size=tokenizer.vocab_size,
        n_params=sum(p.numel() for p in model.parameters()),
        step=step if isinstance(step, int) and not isinstance(step, bool) else None,
        loss=_num(meta.get("loss")),
        val_loss=_num(meta.get("val_loss")),
    )


def check_text(tokenizer, text: str) -> str:
    """`text` if a model with this tokenizer can read it, else ValueError saying why (in English)."""
    if not text:
        raise ValueError("the text is empty; type at least one character")
    if len(text) > MAX_TEXT:
        raise ValueError(f"the text has {len(text)} characters; at most {MAX_TEXT} (every head's map is drawn)")
    unseen = tokenizer.unknown(text)
    if unseen:
        raise ValueError(f"not in this model's vocabulary: {''.join(unseen[:20])!r}")
    return text


def focus_view(
    model,
    tokenizer,
    text: str = DEFAULT_TEXT,
    query: str = DEFAULT_QUERY,
    expected: str = DEFAULT_EXPECTED,
    lang: str = "zh",
) -> FocusView:
    unseen = tokenizer.unknown(text)
    if unseen:
        return FocusView(text=text, focus=None, unseen=unseen, problem=None)
    try:
        return FocusView(
            text=text, focus=focus(model, tokenizer, text, query, expected, lang=lang), unseen=[], problem=None
        )
    except ValueError as err:  # e.g. a BPE model that spells 月 as two byte tokens
        return FocusView(text=text, focus=None, unseen=[], problem=str(err))


def model_view(name: str, model, tokenizer, meta: dict, text: str, lang: str = "zh", how: str = "zero") -> ModelView:
    """① to ④ of `model` on `text` (ValueError if it cannot read it), the 月 question, the logit lens and the
    heads' effects (`how` a head is removed: zero or mean)."""
    check_text(tokenizer, text)
    steps = pipeline(model, tokenizer, text=text, context=text, target=None)
    steps.next.top = sorted(steps.next.distribution, key=lambda n: -n.prob)[:TOP]
    no_lens, no_heads = lens_absent(model), heads_absent(model)
    return ModelView(
        summary=summary(name, model, tokenizer, meta),
        steps=steps,
        focus=focus_view(model, tokenizer, lang=lang),
        lens=None if no_lens else lens_view(model, tokenizer, text, lang),
        lens_absent=no_lens,
        heads=None if no_heads else head_effects_view(model, tokenizer, text, how),
        heads_absent=no_heads,
    )
