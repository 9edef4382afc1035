"""A BERT-style checkpoint (Hugging Face `BertModel` names) into attnlab's own `Encoder`.

The name mapping, checkpoint -> attnlab (i = layer; ".weight"/".bias" kept unless shown):

    embeddings.word_embeddings.weight         -> embed.tok.weight            E, (vocab, d_model)
    embeddings.position_embeddings.weight     -> embed.pos.weight            P, (context, d_model)
    embeddings.token_type_embeddings.weight   -> embed.seg.weight            S, (2, d_model)
    embeddings.LayerNorm.weight / .bias       -> embed.ln.gamma / .beta
    encoder.layer.i.attention.self.query      -> blocks.i.attn.W_Q
    encoder.layer.i.attention.self.key        -> blocks.i.attn.W_K
    encoder.layer.i.attention.self.value      -> blocks.i.attn.W_V
    encoder.layer.i.attention.output.dense    -> blocks.i.attn.W_O
    encoder.layer.i.attention.output.LayerNorm-> blocks.i.ln_1 (gamma, beta)   x = LN(x + MHA(x))
    encoder.layer.i.intermediate.dense        -> blocks.i.ffn.W_1
    encoder.layer.i.output.dense              -> blocks.i.ffn.W_2
    encoder.layer.i.output.LayerNorm          -> blocks.i.ln_2 (gamma, beta)   x = LN(x + FFN(x))

Both store a Linear's weight as (out, in), so no transpose. A "bert." prefix (BertForMaskedLM and friends)
is dropped. Not used: the pooler, position_ids, and task heads ("cls.*"); `load` lists them.
"""

from __future__ import annotations

import re

from torch import Tensor

from attnlab.models.encoder import EncoderConfig

ACTIVATION = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}

EMBED = {
    "embeddings.word_embeddings.weight": "embed.tok.weight",
    "embeddings.position_embeddings.weight": "embed.pos.weight",
    "embeddings.token_type_embeddings.weight": "embed.seg.weight",
    "embeddings.LayerNorm.weight": "embed.ln.gamma",
    "embeddings.LayerNorm.bias": "embed.ln.beta",
}
LAYER = {
    "attention.self.query": "attn.W_Q",
    "attention.self.key": "attn.W_K",
    "attention.self.value": "attn.W_V",
    "attention.output.dense": "attn.W_O",
    "attention.output.LayerNorm": "ln_1",
    "intermediate.dense": "ffn.W_1",
    "output.dense": "ffn.W_2",
    "output.LayerNorm": "ln_2",
}
LN_PARAM = {"weight": "gamma", "bias": "beta"}
LAYER_KEY = re.compile(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)")


def bert_config(hf: dict) -> EncoderConfig:
    """EncoderConfig from a BERT config.json; refuses what our Encoder does not compute."""
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"only absolute (learned) positions are supported, got {hf['position_embedding_type']!r}")
    act = hf.get("hidden_act", "gelu")
    if act not in ACTIVATION:
        raise ValueError(f"hidden_act must be one of {sorted(ACTIVATION)}, got {act!r}")
    return EncoderConfig(
        vocab_size=hf["vocab_size"],
        context_length=hf.get("max_position_embeddings", 512),
        d_model=hf["hidden_size"],
        n_heads=hf["num_attention_heads"],
        n_layers=hf["num_hidden_layers"],
        d_ff=hf.get("intermediate_size"),
        dropout=0.0,
        norm_first=False,
        positions="learned",
        activation=ACTIVATION[act],
        bias=True,
        ln_eps=float(hf.get("layer_norm_eps", 1e-12)),
        type_vocab_size=hf.get("type_vocab_size", 2),
        embed_norm=True,
        task_heads=False,
    )


def bert_state_dict(weights: dict[str, Tensor]) -> tuple[dict[str, Tensor], list[str]]:
    """Checkpoint tensors renamed to attnlab's names; returns (state_dict, names not used)."""
    state, unused = {}, []
    for name, tensor in weights.items():
        key = name.removeprefix("bert.")
        if key in EMBED:
            state[EMBED[key]] = tensor
            continue
        m = LAYER_KEY.fullmatch(key)
        if m and m.group(2) in LAYER:
            layer, part, kind = m.groups()
            ours = LAYER[part]
            param = LN_PARAM[kind] if ours.startswith("ln_") else kind
            state[f"blocks.{layer}.{ours}.{param}"] = tensor
        else:
            unused.append(name)
    return state, unused
