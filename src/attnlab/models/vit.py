"""The Vision Transformer (Dosovitskiy et al. 2020): an image cut into patches, each patch one token.

    tokens = [x_class; x_p^1 W_E; ...; x_p^N W_E] + E_pos      N = (H / P)(W / P) patches of P x P pixels
    z_L    = Encoder(tokens)                                   the encoder blocks of attnlab.nn, pre-LN
    y      = LN(z_L^0) W_head                                  the class is read off the class token alone

Nothing in it says that neighbouring pixels belong together (a CNN's kernel does): which patch sits where is only
the learned E_pos, so a ViT has to learn from data what a convolution is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlab.models.config import ModelConfig
from attnlab.nn import Block, LayerNorm
from attnlab.nn.multihead import Record, hooked, scoped
from attnlab.nn.positions import LearnedPositions


@dataclass
class ViTConfig(ModelConfig):
    image_size: int = 8  # pixels a side (square images)
    patch_size: int = 2  # pixels a side of one patch: one token
    channels: int = 1
    n_layers: int = 2
    n_classes: int = 10
    norm_first: bool = True  # ViT is pre-LN
    activation: str = "gelu"

    def __post_init__(self) -> None:
        for name in ("image_size", "patch_size", "channels"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.image_size % self.patch_size:
            raise ValueError(f"patch_size must divide image_size: got {self.patch_size} and {self.image_size}")
        if self.positions != "learned":
            raise ValueError(f"a ViT here learns its positions (positions='learned'), got {self.positions!r}")
        self.context_length = self.n_patches + 1  # the class token, then the patches
        super().__post_init__()

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


def patches(images: Tensor, p: int) -> Tensor:
    """(B, C, H, W) -> (B, N, C·P·P): row by row of patches, each patch's pixels channel by channel, then row by
    row (the order of a Conv2d kernel with stride P, which is how ViT's own code embeds them)."""
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // p, p, W // p, p)  # (B, C, rows, P, cols, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, rows, cols, C, P, P)
    return x.reshape(B, (H // p) * (W // p), C * p * p)  # (B, N, C·P·P)


class ViT(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.config = c = config
        self.W_E = nn.Linear(c.channels * c.patch_size**2, c.d_model)  # one patch's pixels -> its token
        self.x_class = nn.Parameter(torch.randn(1, 1, c.d_model) * 0.02)  # the learned class token
        self.E_pos = LearnedPositions(c.context_length, c.d_model)
        self.blocks = nn.ModuleList(
            Block(
                c.d_model,
                c.n_heads,
                c.d_ff,
                norm_first=c.norm_first,
                activation=c.activation,
                dropout=c.dropout,
                bias=c.bias,
                eps=c.ln_eps,
            )
            for _ in range(c.n_layers)
        )
        self.ln_f = LayerNorm(c.d_model, c.ln_eps)
        self.head = nn.Linear(c.d_model, c.n_classes)

    def forward(self, images: Tensor, *, record: Record | None = None) -> Tensor:
        """images: (B, C, H, W) -> class logits (B, n_classes). record sees each layer's attention (its "weights",
        (B, H, N + 1, N + 1), row 0 the class token's) and the tokens."""
        c = self.config
        if images.dim() != 4 or tuple(images.shape[1:]) != (c.channels, c.image_size, c.image_size):
            raise ValueError(
                f"ViT expects images of shape (B, {c.channels}, {c.image_size}, {c.image_size}), "
                f"got {tuple(images.shape)}"
            )
        tokens = self.W_E(patches(images, c.patch_size))  # (B, N, C·P·P) -> (B, N, d_model)
        x_class = self.x_class.expand(images.shape[0], -1, -1)  # (1, 1, d) -> (B, 1, d)
        x = torch.cat([x_class, tokens], dim=1)  # (B, N + 1, d_model)
        x = hooked(record, "tokens", x + self.E_pos(torch.arange(x.shape[1], device=x.device)))
        for i, block in enumerate(self.blocks):
            x = block(x, record=scoped(record, f"layers.{i}"))  # (B, N + 1, d_model)
        return self.head(self.ln_f(x[:, 0]))  # (B, d_model) -> (B, n_classes): the class token alone


__all__ = ["ViT", "ViTConfig", "patches"]
