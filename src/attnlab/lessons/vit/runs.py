"""The images, models and training behind `attnlab explain vit`.

The images: scikit-learn's 8 × 8 handwritten digits (1,797 of them, bundled with scikit-learn, no download),
pixels 0..16 scaled to 0..1. One fixed shuffle sets N_TEST aside for testing, for every model and seed; each
training set is the first n of the rest, so a larger set holds every smaller one.

The three models, each about 10 to 13 thousand parameters, differ in what they assume about an image:
  MLP  64 pixels in a row: nothing about which pixel is next to which;
  CNN  3 × 3 kernels slid over the image: neighbours belong together, the same feature anywhere (locality);
  ViT  2 × 2 patches as 16 tokens and a class token, attention between all of them (attnlab.models.vit): where a
       patch sits is only a learned position vector.
All three train alike: the same steps, batches, optimizer and seed; only the shuffle=True null gives each training
image a label drawn from another image (the same labels as often, no link to the pixels).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from attnlab.models.vit import ViT, ViTConfig

SIZES = (50, 150, 450, 1300)  # training images per curve point, about ×3 apart (1,300: all but the test set)
N_TEST = 497  # the held-out images every accuracy is measured on
MODELS = ("vit", "cnn", "mlp")
BATCH, LR = 64, 3e-3
VIT = ViTConfig(image_size=8, patch_size=2, d_model=32, n_heads=4, d_ff=64, n_layers=1)


@dataclass(frozen=True)
class Digits:
    images: torch.Tensor  # (1797, 1, 8, 8) in [0, 1]
    labels: torch.Tensor  # (1797,) 0..9
    test: torch.Tensor  # (N_TEST,) indices held out
    pool: torch.Tensor  # (1797 - N_TEST,) indices training sets are drawn from, in order


@lru_cache(maxsize=1)
def digits() -> Digits:
    from sklearn.datasets import load_digits

    d = load_digits()
    images = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16  # (N, 8, 8) -> (N, 1, 8, 8)
    order = torch.randperm(len(d.target), generator=torch.Generator().manual_seed(0))
    return Digits(images, torch.tensor(d.target), order[:N_TEST], order[N_TEST:])


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),  # (B, 1, 8, 8) -> (B, 16, 8, 8): one 3 × 3 kernel per feature, slid
        nn.ReLU(),
        nn.MaxPool2d(2),  # -> (B, 16, 4, 4)
        nn.Conv2d(16, 32, 3, padding=1),  # -> (B, 32, 4, 4)
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 10),
    )


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))  # (B, 64) -> (B, 10)


def build(name: str, seed: int) -> nn.Module:
    torch.manual_seed(seed)  # the weights' draw: the same seed, the same start
    return {"vit": lambda: ViT(VIT), "cnn": cnn, "mlp": mlp}[name]()


def n_params(name: str) -> int:
    return sum(p.numel() for p in build(name, 0).parameters())


def labels_for(n: int, seed: int, shuffle: bool) -> torch.Tensor:
    """The labels the first n training images are trained with: theirs, or (the null) the same labels permuted."""
    d = digits()
    y = d.labels[d.pool[:n]]
    if shuffle:
        y = y[torch.randperm(n, generator=torch.Generator().manual_seed(10_000 + seed))]
    return y


def classify(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    return F.cross_entropy(model(images), labels)


def train(name: str, n: int, seed: int, steps: int, shuffle: bool, on_step=None) -> nn.Module:
    """One model trained on the first n pool images, with the one training helper."""
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    d = digits()
    x, y = d.images[d.pool[:n]], labels_for(n, seed, shuffle)  # (n, 1, 8, 8), (n,)
    model = build(name, seed)
    batch = min(BATCH, n)

    def draw(g: torch.Generator):
        i = torch.randint(0, n, (batch,), generator=g)  # (batch,)
        return x[i], y[i]

    cfg = TrainConfig(steps=max(steps, 1), batch_size=batch, lr=LR, weight_decay=0.0, grad_clip=1.0, seed=seed)
    with sdpa_kernel(SDPBackend.MATH):  # the same attention; for 17 tokens the plain kernels are the faster ones
        train_small(model, cfg, draw, classify, steps=steps, on_step=on_step)
    model.eval()
    return model


@torch.no_grad()
def accuracy(model: nn.Module) -> float:
    d = digits()
    predicted = model(d.images[d.test]).argmax(dim=-1)  # (N_TEST,)
    return (predicted == d.labels[d.test]).float().mean().item()


@torch.no_grad()
def class_attention(model: ViT, images: torch.Tensor) -> torch.Tensor:
    """(B, 1, 8, 8) -> (B, N): what the class token reads in the last layer, averaged over heads (each row sums
    to 1 less what it keeps on itself)."""
    seen: dict[str, torch.Tensor] = {}
    last = f"layers.{model.config.n_layers - 1}.attn.weights"

    def record(name: str, tensor: torch.Tensor) -> None:
        if name == last:
            seen["w"] = tensor

    model(images, record=record)
    return seen["w"][:, :, 0, 1:].mean(dim=1)  # (B, H, N+1, N+1) -> (B, N): row 0, the patches' columns


def ink(images: torch.Tensor, p: int = VIT.patch_size) -> torch.Tensor:
    """(B, 1, 8, 8) -> (B, N) bool: the patches that hold any ink."""
    from attnlab.models.vit import patches

    return patches(images, p).amax(dim=-1) > 0  # (B, N, P·P) -> (B, N)
