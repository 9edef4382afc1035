"""The encoder-uses lesson's experiment: one small encoder with two heads trained on the spoilt couplets (task.py),
and the baselines that do not read context.

    h_1..h_T = Encoder(x_1..x_T)                 every character in the context of the whole couplet
    v        = mean_t h_t                        the sentence vector (mean pooling)
    p(spoilt)           = softmax(W_cls v)       classification: one label for the line
    p(wrong at t)       = softmax(W_tag h_t)     tagging: one label per character (NER's shape)

Baselines fit on the same training couplets: a logistic regression on character counts (scikit-learn; order thrown
away, and linear in the counts, so it cannot check that each pair is complete) for the line, and for each character the share of training couplets where it was the wrong one (its
frequency) for the tags.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.lessons.common.params import seeded
from attnlab.lessons.encoder_uses import task
from attnlab.models import Encoder, EncoderConfig

D_MODEL, N_LAYERS, N_HEADS = 32, 2, 2
BATCH, LR = 64, 1e-2


class Uses(nn.Module):
    """An encoder and two task heads: a sentence's label from its mean-pooled states, a label per token."""

    def __init__(self, seed: int):
        super().__init__()
        with seeded(seed):
            self.encoder = Encoder(
                EncoderConfig(
                    vocab_size=len(task.VOCAB),
                    context_length=task.LENGTH,
                    d_model=D_MODEL,
                    n_heads=N_HEADS,
                    n_layers=N_LAYERS,
                    d_ff=2 * D_MODEL,
                    positions="rope",  # "my pair sits 6 places away" is one pattern at every position
                    norm_first=True,
                    embed_norm=True,
                    task_heads=False,
                )
            )
            self.W_cls = nn.Linear(D_MODEL, 2)
            self.W_tag = nn.Linear(D_MODEL, 2)

    def forward(self, idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """idx (B, T) -> the sentence vectors (B, d), the line's logits (B, 2), each character's logits (B, T, 2)."""
        h = self.encoder(idx)  # (B, T, d)
        v = h.mean(dim=1)  # (B, d): mean pooling
        return v, self.W_cls(v), self.W_tag(h)


def loss(model: Uses, idx: Tensor, y: tuple[Tensor, Tensor]) -> Tensor:
    spoilt, tags = y  # (B,), (B, T)
    _, line, per_char = model(idx)
    return F.cross_entropy(line, spoilt) + F.cross_entropy(per_char.flatten(0, 1), tags.flatten())


def labels_shuffled(examples: list[task.Example], seed: int) -> list[task.Example]:
    """The null: each couplet's labels (spoilt or not, and where) given to another couplet; the texts unchanged."""
    import random

    order = list(range(len(examples)))
    random.Random(30_000 + seed).shuffle(order)
    return [task.Example(e.text, examples[j].wrong) for e, j in zip(examples, order)]


def train(seed: int, steps: int, shuffle: bool, on_step=None) -> Uses:
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    training, _ = task.examples()
    if shuffle:
        training = labels_shuffled(training, seed)
    ids, spoilt, tags = task.encode(training)  # (N, T), (N,), (N, T)
    model = Uses(seed)
    cfg = TrainConfig(steps=max(1, steps), batch_size=BATCH, lr=LR, warmup_steps=min(20, steps // 5), seed=seed)

    def batch(g: torch.Generator):
        i = torch.randint(len(training), (BATCH,), generator=g)  # (B,)
        return ids[i], (spoilt[i], tags[i])

    train_small(model, cfg, batch, loss, steps=steps, on_step=on_step)
    return model.eval()


@torch.no_grad()
def measure(model: Uses) -> dict:
    """On the test couplets: the line's accuracy, and on the spoilt ones the share where the 下联 character the
    tagger rates likeliest wrong is the wrong one."""
    _, test = task.examples()
    ids, spoilt, tags = task.encode(test)
    _, line, per_char = model(ids)
    p_wrong = per_char.softmax(-1)[..., 1]  # (N, T)
    return {
        "accuracy": (line.argmax(-1) == spoilt).float().mean().item(),
        "found": found(p_wrong, test),
    }


def found(scores: Tensor, examples: list[task.Example]) -> float:
    """Share of spoilt couplets whose highest-scoring 下联 position is the wrong character (chance 1 / 5)."""
    hits = [
        int(task.SECOND + int(row[task.SECOND : task.SECOND + task.VERSE].argmax())) == e.wrong
        for row, e in zip(scores, examples)
        if e.wrong is not None
    ]
    return sum(hits) / len(hits)


@lru_cache(maxsize=4)
def baselines(shuffle: bool, seed: int = 0) -> dict:
    """The order-blind line classifier and the frequency tagger, fit on the training couplets (labels shuffled as
    the models' are), measured like the encoder."""
    from sklearn.linear_model import LogisticRegression

    training, test = task.examples()
    if shuffle:
        training = labels_shuffled(training, seed)

    def counts(examples):
        return [[Counter(e.text)[ch] for ch in task.VOCAB] for e in examples]

    bag = LogisticRegression(max_iter=2000).fit(counts(training), [int(e.wrong is not None) for e in training])
    accuracy = float(bag.score(counts(test), [int(e.wrong is not None) for e in test]))
    wrong = Counter(e.text[e.wrong] for e in training if e.wrong is not None)
    seen = Counter(ch for e in training for ch in e.text[task.SECOND : -1])
    rate = {ch: wrong[ch] / seen[ch] if seen[ch] else 0.0 for ch in task.VOCAB}  # how often this character was wrong
    scores = torch.tensor([[rate[ch] for ch in e.text] for e in test])  # (N, T)
    return {"accuracy": accuracy, "found": found(scores, test), "rate": rate}
