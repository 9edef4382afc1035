"""A GPT-2-format checkpoint (Hugging Face `GPT2LMHeadModel` names) into attnlab's own `GPT`.

The name mapping, checkpoint -> attnlab (i = layer):

    wte.weight                  -> embed.tok.weight (and lm_head.weight: tied, GPT-2 shares them)
    wpe.weight                  -> embed.pos.weight
    h.i.ln_1.weight / .bias     -> blocks.i.ln_1.gamma / .beta         x = x + MHA(LN(x))   (pre-LN)
    h.i.attn.c_attn             -> blocks.i.attn.W_Q, W_K, W_V          one (d, 3d) matrix, cut in three
    h.i.attn.c_proj             -> blocks.i.attn.W_O
    h.i.ln_2                    -> blocks.i.ln_2                         x = x + FFN(LN(x))
    h.i.mlp.c_fc                -> blocks.i.ffn.W_1
    h.i.mlp.c_proj              -> blocks.i.ffn.W_2
    ln_f                        -> ln_f

GPT-2's `Conv1D` stores a weight as (in, out) and computes x W; torch's Linear stores (out, in), so every
Conv1D weight is transposed. A "transformer." prefix is dropped; the causal-mask buffers (h.i.attn.bias,
masked_bias) are not weights and are skipped.
"""

from __future__ import annotations

import re

import torch
from torch import Tensor

from attnlab.models.gpt import GPTConfig

ACTIVATION = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
LAYER_KEY = re.compile(r"h\.(\d+)\.(ln_1|ln_2|attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.(weight|bias)")
CONV = {"attn.c_proj": "attn.W_O", "mlp.c_fc": "ffn.W_1", "mlp.c_proj": "ffn.W_2"}
LN_PARAM = {"weight": "gamma", "bias": "beta"}


def gpt2_config(hf: dict) -> GPTConfig:
    """GPTConfig from a GPT-2 config.json; refuses the options our GPT does not compute."""
    for flag in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"):
        if hf.get(flag):
            raise ValueError(f"GPT-2 option {flag}=true is not supported")
    if not hf.get("scale_attn_weights", True):
        raise ValueError("GPT-2 option scale_attn_weights=false is not supported")
    act = hf.get("activation_function", "gelu_new")
    if act not in ACTIVATION:
        raise ValueError(f"activation_function must be one of {sorted(ACTIVATION)}, got {act!r}")
    return GPTConfig(
        vocab_size=hf["vocab_size"],
        context_length=hf.get("n_positions", 1024),
        d_model=hf["n_embd"],
        n_heads=hf["n_head"],
        n_layers=hf["n_layer"],
        d_ff=hf.get("n_inner"),
        dropout=0.0,
        norm_first=True,
        positions="learned",
        activation=ACTIVATION[act],
        bias=True,
        ln_eps=float(hf.get("layer_norm_epsilon", 1e-5)),
        tie_weights=bool(hf.get("tie_word_embeddings", True)),
    )


def gpt2_state_dict(weights: dict[str, Tensor], tied: bool = True) -> tuple[dict[str, Tensor], list[str]]:
    """Checkpoint tensors renamed (and Conv1D weights transposed) to attnlab's names; (state_dict, unused)."""
    state, unused = {}, []
    for name, tensor in weights.items():
        key = name.removeprefix("transformer.")
        if key == "wte.weight":
            state["embed.tok.weight"] = tensor
            if tied:
                state["lm_head.weight"] = tensor
        elif key == "wpe.weight":
            state["embed.pos.weight"] = tensor
        elif key in ("ln_f.weight", "ln_f.bias"):
            state[f"ln_f.{LN_PARAM[key[5:]]}"] = tensor
        elif (m := LAYER_KEY.fullmatch(key)) is not None:
            layer, part, kind = m.groups()
            prefix = f"blocks.{layer}"
            if part in ("ln_1", "ln_2"):
                state[f"{prefix}.{part}.{LN_PARAM[kind]}"] = tensor
            elif part == "attn.c_attn":
                # (d, 3d) = [W_Q | W_K | W_V] side by side; a bias (3d,) likewise.
                for ours, piece in zip(("W_Q", "W_K", "W_V"), torch.chunk(tensor, 3, dim=-1)):
                    state[f"{prefix}.attn.{ours}.{kind}"] = (
                        piece.t().contiguous() if kind == "weight" else piece.contiguous()
                    )
            else:
                state[f"{prefix}.{CONV[part]}.{kind}"] = tensor.t().contiguous() if kind == "weight" else tensor
        elif key == "lm_head.weight":
            if not tied:
                state["lm_head.weight"] = tensor
            # tied: the same matrix as wte (save_pretrained usually leaves it out)
        else:
            unused.append(name)
    return state, unused
