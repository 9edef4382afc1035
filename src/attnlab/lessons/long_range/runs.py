"""The task, models and training behind `attnlab explain long-range`.

The task: recall a marked symbol after d distractors. A sequence is  * v x_1 … x_d ?  : the marker *, the value v
(one of VALUES), d distractors drawn from NOISE, the query ?; the answer, the token after ?, is v. Nothing between
v and ? says anything about it, so a model must carry v across exactly d positions.

The three models, about eleven thousand parameters each, read the same tokens through the same 16-wide embedding
and answer through a linear head on their last position:
  LSTM  attnlab.nn.LSTM's equations, one cell update a token (torch.nn.LSTM's kernel: the same arithmetic, held
        equal to attnlab.nn.LSTM with copied weights in tests/test_lessons_recurrent.py, several times faster);
  GRU   attnlab.nn.GRU's equations, likewise through torch.nn.GRU;
  Transformer  the lab's GPT (one pre-LN block, 2 heads, RoPE positions): the query attends to v directly, one step.
All three train alike per distance: the same steps, batches, optimizer and seed. The null (shuffle=True) trains
them on answers drawn at random instead of v (the same answers as often, no link to the sequence).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

VALUES, NOISE = "ABCDEFGH", "abcdefghijklmnop"
CHARS = VALUES + NOISE + "*?"
MARK, QUERY = CHARS.index("*"), CHARS.index("?")
MODELS = ("transformer", "lstm", "gru")
D_EMBED = 16
D_MODEL, N_HEADS = 32, 2  # the Transformer's width and heads (one block)
HIDDEN = {"lstm": 40, "gru": 46}  # each recurrent net's state width: about the Transformer's parameter count
BATCH, LR = 32, 3e-3
FORGET_BIAS = 1.0
N_ASKED = 500  # held-out sequences per distance (a share near 0.5 has a standard error of 0.022)


def sequences(g: torch.Generator, n: int, d: int, shuffle: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(x (n, d + 3), answers (n,)): n sequences  * v x_1 … x_d ?  and their answers (v, or with shuffle a value
    drawn apart from the sequence: the null)."""
    v = torch.randint(0, len(VALUES), (n,), generator=g)  # (n,)
    noise = torch.randint(len(VALUES), len(VALUES) + len(NOISE), (n, d), generator=g)  # (n, d)
    x = torch.cat([torch.full((n, 1), MARK), v[:, None], noise, torch.full((n, 1), QUERY)], dim=1)  # (n, d + 3)
    answers = torch.randint(0, len(VALUES), (n,), generator=g) if shuffle else v
    return x, answers


class Recurrent(nn.Module):
    """Embedding -> an LSTM or a GRU over the tokens, one step each -> the answer from the last state."""

    def __init__(self, kind: str):
        super().__init__()
        self.embed = nn.Embedding(len(CHARS), D_EMBED)
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(D_EMBED, HIDDEN[kind], batch_first=True)
        self.head = nn.Linear(HIDDEN[kind], len(CHARS))
        if kind == "lstm":  # forget gates start near-open, as attnlab.nn.LSTM(forget_bias=1) (Jozefowicz et al. 2015)
            H = HIDDEN[kind]
            with torch.no_grad():
                self.rnn.bias_ih_l0[H : 2 * H].fill_(FORGET_BIAS)  # torch stacks the gates i, f, g, o
                self.rnn.bias_hh_l0[H : 2 * H].zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        states, _ = self.rnn(self.embed(x))  # (B, T) -> (B, T, d_embed) -> (B, T, hidden)
        return self.head(states[:, -1])  # (B, vocab): after the query


class Attending(nn.Module):
    """The lab's GPT, read at its last position (the query)."""

    def __init__(self, context: int):
        super().__init__()
        from attnlab.models import GPT, GPTConfig

        config = GPTConfig(
            vocab_size=len(CHARS),
            context_length=context,
            d_model=D_MODEL,
            n_heads=N_HEADS,
            n_layers=1,
            d_ff=64,
            norm_first=True,
            positions="rope",
        )
        self.gpt = GPT(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gpt(x)[:, -1]  # (B, T, vocab) -> (B, vocab)


def build(name: str, d: int, seed: int) -> nn.Module:
    torch.manual_seed(seed)  # the weights' draw
    return Attending(d + 3) if name == "transformer" else Recurrent(name)


def n_params(name: str) -> int:
    return sum(p.numel() for p in build(name, 8, 0).parameters())


def answer_loss(model: nn.Module, x: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x), answers)


def train(name: str, d: int, seed: int, steps: int, shuffle: bool, on_step=None) -> nn.Module:
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    model = build(name, d, seed)
    cfg = TrainConfig(steps=max(steps, 1), batch_size=BATCH, lr=LR, weight_decay=0.0, grad_clip=1.0, seed=seed)
    with sdpa_kernel(SDPBackend.MATH):  # the same attention; at these sizes the plain kernels are the faster ones
        train_small(model, cfg, lambda g: sequences(g, BATCH, d, shuffle), answer_loss, steps=steps, on_step=on_step)
    model.eval()
    return model


@torch.no_grad()
def accuracy(model: nn.Module, d: int) -> float:
    """The share of N_ASKED held-out sequences (their own generator: never a training batch) answered v, read
    BATCH at a time (the memory of a training step, not of 500 sequences' attention at once)."""
    x, v = sequences(torch.Generator().manual_seed(1_000_003 + d), N_ASKED, d)
    with sdpa_kernel(SDPBackend.MATH):
        said = torch.cat([model(chunk).argmax(dim=-1) for chunk in x.split(BATCH)])  # (N_ASKED,)
    return (said == v).float().mean().item()
