"""Choosing the next token, and generating one token at a time.

Step ⑥ of the pipeline: feed the prompt, take the distribution over the next token, pick one, append it,
feed it back. How the pick is made:

- greedy (temperature 0): always the most probable token;
- temperature T > 0: softmax(logits / T); T < 1 sharpens the distribution, T > 1 flattens it;
- top-k: only the k most probable tokens may be drawn;
- top-p (nucleus): only the smallest set of most probable tokens whose probabilities sum to at least p.

The filters apply in that order (temperature, then top-k, then top-p on what is left), and a filtered
token's logit becomes -inf, so its probability after the softmax is exactly 0.

With a KV cache each step feeds only the newest token: the keys and values of the earlier positions are
kept from the steps before, so a step costs O(T) instead of re-running all T positions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor

from attnlab.io.threads import threads_for


def check_sampling(
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    *,
    allow_zero_temperature: bool = False,
) -> None:
    """ValueError naming the option, the range it must be in, and what came."""
    t_ok = isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and math.isfinite(temperature)
    if not t_ok or temperature < 0 or (temperature == 0 and not allow_zero_temperature):
        need = ">= 0 (0 = greedy)" if allow_zero_temperature else "> 0"
        raise ValueError(f"temperature must be a finite number {need}, got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
        raise ValueError(f"top_k must be a whole number >= 1 (or None for no limit), got {top_k!r}")
    if top_p is not None and (not isinstance(top_p, (int, float)) or isinstance(top_p, bool) or not 0.0 < top_p <= 1.0):
        raise ValueError(f"top_p must be in (0, 1] (or None for no limit), got {top_p!r}")


def filter_logits(
    logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """logits (..., V) -> logits / temperature with the tokens top-k and top-p exclude set to -inf.

    top-k keeps the k largest (a tie with the k-th largest is kept too); top-p keeps the smallest set of
    most probable tokens whose probability sums to at least p (ties in sorted order go to the lower id);
    the most probable token always stays, so the result is never empty: softmax of it is a distribution.

    Every allowed option works, down to the smallest positive float: where logits / T overflows (T near 0),
    a row is scaled as (logits - max) / T instead, the same distribution (the limit: all mass on the
    argmax, shared by ties). A NaN logit counts as -inf; a row with nothing above -inf is uniform.
    """
    check_sampling(temperature, top_k, top_p)
    logits = logits.float()
    logits = logits.masked_fill(torch.isnan(logits), float("-inf"))  # (..., V)
    logits = _scaled(logits, temperature)  # (..., V)
    vocab = logits.shape[-1]
    if top_k is not None and top_k < vocab:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest logit
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        probs = torch.softmax(logits, dim=-1)  # (..., V)
        sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # what the more probable tokens already hold
        drop_sorted = mass_before >= top_p  # p was reached without this token
        drop_sorted[..., 0] = False  # the most probable stays, however small p is (1e-46 is 0 in float32)
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)  # back to vocabulary order
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def _scaled(logits: Tensor, temperature: float) -> Tensor:
    """logits / T; rows where that gives +inf or NaN (T tiny, +inf logits) or only -inf use the shifted form."""
    scaled = logits / temperature  # (..., V)
    broken = (torch.isnan(scaled) | torch.isposinf(scaled)).any(-1, keepdim=True) | torch.isneginf(scaled).all(
        -1, keepdim=True
    )
    if not broken.any():
        return scaled
    top = logits.amax(dim=-1, keepdim=True)  # (..., 1)
    gap = torch.where(logits == top, 0.0, logits.double() - top.double())  # (..., V) <= 0; the argmax (ties too) 0
    shifted = (gap / temperature).float()  # in float64 T > 0 stays > 0; what overflows float32 becomes -inf
    return torch.where(broken, shifted, scaled)


@dataclass
class Candidate:
    """One token of the vocabulary at one step."""

    id: int
    token: str
    prob: float  # softmax(logits): what the model itself says
    filtered_prob: float  # after temperature / top-k / top-p and renormalizing; 0 if filtered out
    kept: bool  # survived the filters, so it could be drawn
    cut_by: str | None = None  # what filtered it out: "top-k", "top-p" or "greedy"; None if kept


@dataclass
class GenStep:
    """One new token: the best candidates, how many survived the filters, and the one chosen."""

    index: int  # 0 for the first new token
    context_tokens: int  # how many tokens the model read for this step (at most the context length)
    candidates: list[Candidate]  # the most probable tokens, best first (and the chosen one if it is not among them)
    n_kept: int  # how many tokens of the vocabulary survived the filters
    chosen: Candidate


@dataclass
class Generation:
    prompt: str
    prompt_ids: list[int]
    cropped: int  # prompt tokens dropped from the front because the prompt was longer than the context
    new_ids: list[int]
    new_text: str
    text: str  # prompt + new_text
    stop_reason: str  # "eot" (the model chose the end-of-text mark) or "max_new_tokens"
    settings: dict
    steps: list[GenStep] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


class _Window:
    """Gives the logits for the next token from the last `context_length` tokens of the sequence.

    Without a cache the whole window is run every step. With one, only the tokens not yet fed are run;
    once the window is full it has to slide, every position's number changes, and the cache is rebuilt
    from the new window — so both ways compute the same thing.
    """

    def __init__(self, model, use_cache: bool):
        self.model, self.use_cache = model, use_cache
        self.context = model.config.context_length
        self.device = next(model.parameters()).device
        self.cache, self.fed = None, 0

    def next_logits(self, seq: list[int]) -> Tensor:
        window = min(len(seq), self.context)
        if not self.use_cache:
            idx = torch.tensor([seq[-window:]], device=self.device)  # (1, T)
            return self.model(idx)[0, -1]  # (1, T, V) -> (V,)
        if self.cache is None or self.cache.length + len(seq) - self.fed > self.context:
            self.cache, self.fed = self.model.new_kv_cache(), len(seq) - window
        idx = torch.tensor([seq[self.fed :]], device=self.device)  # (1, T_new): only what the cache lacks
        self.fed = len(seq)
        return self.model(idx, kv_cache=self.cache)[0, -1]  # (V,)


def _candidate(i: int, tokenizer, probs: Tensor, filtered: Tensor, cut_by: list) -> Candidate:
    kept = bool(filtered[i] > 0)
    return Candidate(
        id=i,
        token=tokenizer.token(i),
        prob=float(probs[i]),
        filtered_prob=float(filtered[i]),
        kept=kept,
        cut_by=None if kept else cut_by[i],
    )


def _cut_by(logits: Tensor, temperature: float, top_k: int | None, top_p: float | None) -> list:
    """For every token, which filter removes it: top-k first, then top-p on what top-k left (None = kept)."""
    after_k = filter_logits(logits, temperature, top_k, None)  # (V,)
    after_p = filter_logits(logits, temperature, top_k, top_p)  # (V,) the same as the draw uses
    return [
        "top-k" if k == float("-inf") else "top-p" if p == float("-inf") else None
        for k, p in zip(after_k.tolist(), after_p.tolist())
    ]


def prob_text(p: float) -> str:
    """A probability for a learner's eye: 4 decimals, tiny ones as 3.2e-5, never a rounded 0 or 1 that is not one."""
    from attnlab.display.fmt import fixed

    if p == 0:
        return "0"
    if p < 1e-3:
        return f"{p:.1e}"
    return fixed(p, 4)  # honest: 0.99998 is never shown as 1


def generate(
    model,
    tokenizer,
    prompt: str,
    *,
    max_new_tokens: int = 50,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    greedy: bool = False,
    seed: int | None = None,
    use_cache: bool = True,
    n_candidates: int = 5,
    stop_at_eot: bool = True,
    on_step: Callable[[GenStep], None] | None = None,
    start_of_text: bool = False,
    stop_when: Callable[[str], bool] | None = None,
) -> Generation:
    """Continue `prompt` one token at a time and record every step.

    greedy=True or temperature=0 takes the argmax. A seed makes sampling reproducible (its own generator,
    the global RNG is left alone). An empty prompt starts from the end-of-text mark, i.e. "a new text".
    Generation stops at max_new_tokens or when the model chooses the end-of-text mark.
    start_of_text=True reads the end-of-text mark before the prompt, so the prompt begins a new text (a poem's
    first characters); stop_when(text so far) returning True also stops it (stop_reason "stop_when": a form's
    last verse written).
    """
    check_sampling(temperature, top_k, top_p, allow_zero_temperature=True)
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a whole number >= 0, got {max_new_tokens!r}")
    greedy = greedy or temperature == 0
    prompt_ids = tokenizer.encode(prompt)  # names any unseen characters
    context = model.config.context_length
    cropped = max(0, len(prompt_ids) - context)
    seq = prompt_ids[cropped:] or [tokenizer.eot_id]
    started = start_of_text and cropped == 0 and bool(prompt_ids) and len(prompt_ids) < context
    if started:
        seq = [tokenizer.eot_id] + seq
    generator = torch.Generator().manual_seed(seed) if seed is not None and not greedy else None

    window = _Window(model, use_cache)
    steps: list[GenStep] = []
    new_ids: list[int] = []
    stop_reason = "max_new_tokens"
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode(), threads_for(model):
            for index in range(max_new_tokens):
                context_tokens = min(len(seq), context)
                logits = window.next_logits(seq).float().cpu()  # (V,)
                probs = torch.softmax(logits, dim=-1)
                if greedy:
                    chosen = int(torch.argmax(logits))
                    filtered = torch.zeros_like(probs)
                    filtered[chosen] = 1.0  # the temperature -> 0 limit: all mass on the argmax
                    cut_by = ["greedy"] * probs.numel()
                else:
                    filtered = torch.softmax(filter_logits(logits, temperature, top_k, top_p), dim=-1)
                    chosen = int(torch.multinomial(filtered, 1, generator=generator))
                    cut_by = _cut_by(logits, temperature, top_k, top_p)
                top = torch.topk(probs, min(n_candidates, probs.numel())).indices.tolist()
                candidates = [_candidate(i, tokenizer, probs, filtered, cut_by) for i in top]
                chosen_c = _candidate(chosen, tokenizer, probs, filtered, cut_by)
                if chosen not in top:
                    candidates.append(chosen_c)
                step = GenStep(index, context_tokens, candidates, int((filtered > 0).sum()), chosen_c)
                steps.append(step)
                if on_step is not None:
                    on_step(step)
                if stop_at_eot and chosen == tokenizer.eot_id:
                    stop_reason = "eot"
                    break
                seq.append(chosen)
                new_ids.append(chosen)
                if stop_when is not None and stop_when(tokenizer.decode(prompt_ids + new_ids)):
                    stop_reason = "stop_when"
                    break
    finally:
        model.train(was_training)

    # Decode prompt and continuation together: a byte-level token may finish a character the prompt began.
    text = tokenizer.decode(prompt_ids + new_ids)
    new_text = text[len(prompt) :] if text.startswith(prompt) else tokenizer.decode(new_ids)
    settings = dict(
        max_new_tokens=max_new_tokens,
        temperature=0.0 if greedy else float(temperature),
        top_k=top_k,
        top_p=top_p,
        greedy=greedy,
        seed=seed,
        use_cache=use_cache,
        start_of_text=started or not prompt_ids,
    )  # what the model read first: the end-of-text mark
    return Generation(
        prompt=prompt,
        prompt_ids=prompt_ids,
        cropped=cropped,
        new_ids=new_ids,
        new_text=new_text,
        text=prompt + new_text,
        stop_reason=stop_reason,
        settings=settings,
        steps=steps,
    )


def starts_poems(meta) -> bool:
    """Whether a checkpoint is a poem model whose generation starts a poem by default.

    The signal is config.json's `corpus_options`, which only a chinese-poetry folder or glob writes (with its
    script and forms; attnlab.train.run.load_corpus): one poem per text, each after the end-of-text mark, and
    (the default, `align`) every training window starts at that mark, so a poem's first character is always at
    position 1. A prompt read without the mark sits one position early and the learned positions no longer
    line up with the verses (a 6-character first verse from a 五言 model). Not the corpus's name (any folder
    name) nor its characters; and not the built-in poems, which are learned from position 0 without a mark.
    """
    return isinstance(meta, dict) and isinstance(meta.get("corpus_options"), dict)


def generate_from(
    checkpoint, prompt: str, *, poem_start: bool | None = None, form: str | None = None, **settings
) -> Generation:
    """generate() with a loaded checkpoint (anything with .model, .tokenizer and .meta, such as
    attnlab.train.load_checkpoint's), starting as it was trained.

    poem_start: True reads the end-of-text mark before the prompt (the prompt begins a poem), False the bare
    prompt; None (default) does what the checkpoint was trained for: True for a poem model (starts_poems) or
    when a form is asked for. form ('wujue', 'qijue', 'wulv', 'qilv') only chooses where to stop: after the
    form's last verse. `settings` are generate()'s (max_new_tokens, temperature, top_k, seed ...).
    """
    from attnlab.text.forms import FORMS, complete_verses

    if form is not None and form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    start = poem_start if poem_start is not None else (form is not None or starts_poems(checkpoint.meta))
    n_verses = FORMS[form][0] if form is not None else 0
    stop_when = (lambda text: complete_verses(text) >= n_verses) if form is not None else None
    return generate(
        checkpoint.model, checkpoint.tokenizer, prompt, start_of_text=bool(start), stop_when=stop_when, **settings
    )
