"""The three forms built from attnlab.nn: decoder-only (GPT), encoder-only, encoder-decoder."""

from attnlab.models.count import Architecture, count_flops, count_params
from attnlab.models.encoder import Encoder, EncoderConfig
from attnlab.models.encoder_decoder import EncoderDecoder, EncoderDecoderConfig
from attnlab.models.gpt import GPT, GPTConfig
from attnlab.models.presets import PRESETS, preset
from attnlab.models.vit import ViT, ViTConfig
from attnlab.models.window_mlp import WindowMLP, WindowMLPConfig

__all__ = [
    "GPT",
    "GPTConfig",
    "Encoder",
    "EncoderConfig",
    "EncoderDecoder",
    "EncoderDecoderConfig",
    "PRESETS",
    "preset",
    "Architecture",
    "count_params",
    "count_flops",
    "WindowMLP",
    "WindowMLPConfig",
    "ViT",
    "ViTConfig",
]
