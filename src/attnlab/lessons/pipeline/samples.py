"""Step ⑥ drawn several times: does sampling change the text? (/pipeline shows the samples side by side.)

One generation shows what temperature, top-k and top-p do to p′ at each step, but not whether that changes
what gets written: a model that has memorised its poem gives the drawn token p near 1 at every step, so
every draw writes the same poem. Drawing n times with seeds seed .. seed+n-1 and counting the different texts
answers it; the smallest probability the model gave a token it drew says why (near 1: it is certain).

At their default steps the built-in poems' models are near certain, so draws at T = 1 mostly agree. Trained only
20 steps (the page's hint), a model still recites the poem greedily (T = 0) but is not yet certain of it: it knows
the poem, and a learner sees temperature matter.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from attnlab.lessons.common.result import Shown
from attnlab.sampling import Generation, generate

N_SAMPLES = 5
HINT_CORPUS, HINT_STEPS, HINT_TEMPERATURE = "jingyesi", 20, 1.5  # the page's hint (see above)


@dataclass
class Sample:
    seed: int | None  # None: greedy, where no seed is used
    text: str
    same_as: int | None  # index of the first earlier sample with the same text; None if it is new


@dataclass
class Samples(Shown):
    """n draws of one prompt at one setting, and how many different texts they wrote."""

    prompt: str
    settings: dict  # temperature, top_k, top_p, greedy, max_new_tokens (as generate records them)
    samples: list[Sample]
    distinct: int  # how many different texts
    least_sure: float  # the smallest p (the model's own softmax) of any token drawn in any sample


def draw_seed() -> int:
    """A base seed when the learner left it blank: shown on the page, so the same samples can be drawn again."""
    return random.randrange(0, 2**31 - 1 - N_SAMPLES)


def sample_texts(
    model, tokenizer, prompt: str, *, n: int = N_SAMPLES, seed: int = 0, first: Generation | None = None, **settings
) -> tuple[Samples, list[Generation]]:
    """n generations with seeds seed .. seed+n-1 (settings as for `generate`), summarised; and the generations
    themselves (the page shows the first one step by step). `first`: the seed's generation, already made."""
    gens = [
        first if i == 0 and first is not None else generate(model, tokenizer, prompt, seed=seed + i, **settings)
        for i in range(n)
    ]
    greedy = gens[0].settings["greedy"]
    first: dict[str, int] = {}
    samples = []
    for i, g in enumerate(gens):
        samples.append(Sample(seed=None if greedy else seed + i, text=g.text, same_as=first.get(g.text)))
        first.setdefault(g.text, i)
    drawn = [s.chosen.prob for g in gens for s in g.steps]
    settings_shown = {k: gens[0].settings[k] for k in ("temperature", "top_k", "top_p", "greedy", "max_new_tokens")}
    return Samples(
        prompt=prompt, settings=settings_shown, samples=samples, distinct=len(first), least_sure=min(drawn, default=1.0)
    ), gens
