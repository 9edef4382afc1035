"""The four translators of the seq2seq lesson, built from the library's parts (attnlab.nn.recurrent, attnlab.models).

- `NoAttention`: an LSTM encoder reads the source; the decoder LSTM starts from the encoder's *last* state
  (h_S, c_S) and never sees another encoder state: the whole sentence squeezed through one fixed vector.
- `Bahdanau`: the same encoder and decoder, plus additive attention: at each target step the decoder state
  s_{t-1} scores every encoder state, e_tj = v^T tanh(W_s s_{t-1} + W_h h_j), alpha_t = softmax(e_t),
  and reads the context c_t = sum_j alpha_tj h_j.
- `transformer()`: the library's `EncoderDecoder`, whose decoder reads the source through cross-attention.
- `DecoderOnly`: the library's `GPT` reading one sequence, source then target ([x_1..x_S, BOS, y_1..y_T]), causal
  throughout: no encoder and no cross-attention; the target reads the source with the same self-attention it
  reads its own past with. Its loss is only on the target positions, over the target vocabulary.

Batches hold sequences of one length, so there is no padding anywhere (the lesson groups by length).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.models.encoder_decoder import EncoderDecoder, EncoderDecoderConfig
from attnlab.models.gpt import GPT, GPTConfig
from attnlab.nn.recurrent import LSTM, AdditiveAttention


class LSTMEncoder(nn.Module):
    """Source ids (B, S) -> encoder states h_1..h_S (B, S, H) and the final state (h_S, c_S)."""

    def __init__(self, src_vocab: int, d_embed: int, d_hidden: int):
        super().__init__()
        self.embed = nn.Embedding(src_vocab, d_embed)
        self.lstm = LSTM(d_embed, d_hidden, forget_bias=1.0)

    def forward(self, src: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        h_S, trace = self.lstm(self.embed(src))  # (B, S, d_embed) -> (B, H)
        states = torch.stack(trace["h"][1:], dim=1)  # (B, S, H): h_1..h_S (h_0 is the zero start)
        return states, (h_S, trace["c"][-1])


class NoAttentionDecoder(nn.Module):
    """s_t = LSTM(s_{t-1}, y_{t-1}); p(y_t) = softmax(W_out s_t); s_0 = the encoder's last state, nothing else."""

    def __init__(self, tgt_vocab: int, d_embed: int, d_hidden: int):
        super().__init__()
        self.embed = nn.Embedding(tgt_vocab, d_embed)
        self.lstm = LSTM(d_embed, d_hidden, forget_bias=1.0)
        self.out = nn.Linear(d_hidden, tgt_vocab)

    def forward(self, states: Tensor, final: tuple[Tensor, Tensor], tgt_in: Tensor) -> tuple[Tensor, None]:
        """states (B, S, H) is accepted and ignored: only `final` = (h_S, c_S) enters. tgt_in (B, T) -> logits (B, T, V)."""
        h, c = final
        x = self.embed(tgt_in)  # (B, T, d_embed)
        outs = []
        for t in range(tgt_in.shape[1]):
            h, c, _ = self.lstm.step(h, c, x[:, t])  # (B, H)
            outs.append(h)
        return self.out(torch.stack(outs, dim=1)), None  # (B, T, H) -> (B, T, V)


class BahdanauDecoder(nn.Module):
    """Before step t: c_t = sum_j alpha_tj h_j with alpha_t = softmax_j(v^T tanh(W_s s_{t-1} + W_h h_j));
    s_t = LSTM(s_{t-1}, [y_{t-1}, c_t]); p(y_t) = softmax(W_out [s_t, c_t])."""

    def __init__(self, tgt_vocab: int, d_embed: int, d_hidden: int, d_attn: int):
        super().__init__()
        self.embed = nn.Embedding(tgt_vocab, d_embed)
        self.attn = AdditiveAttention(d_hidden, d_hidden, d_attn)
        self.lstm = LSTM(d_embed + d_hidden, d_hidden, forget_bias=1.0)
        self.out = nn.Linear(2 * d_hidden, tgt_vocab)

    def forward(self, states: Tensor, final: tuple[Tensor, Tensor], tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """-> logits (B, T, V) and alpha (B, T, S): row t is where target step t looked."""
        h, c = final
        x = self.embed(tgt_in)  # (B, T, d_embed)
        outs, alphas = [], []
        for t in range(tgt_in.shape[1]):
            context, alpha = self.attn(h[:, None, :], states)  # (B, 1, H), (B, 1, S)
            context = context[:, 0]
            h, c, _ = self.lstm.step(h, c, torch.cat([x[:, t], context], dim=-1))  # (B, H)
            outs.append(torch.cat([h, context], dim=-1))  # (B, 2H)
            alphas.append(alpha[:, 0])
        return self.out(torch.stack(outs, dim=1)), torch.stack(alphas, dim=1)  # (B, T, V), (B, T, S)


class RecurrentSeq2Seq(nn.Module):
    """An LSTM encoder and one of the two recurrent decoders above."""

    def __init__(self, src_vocab: int, tgt_vocab: int, d_embed: int, d_hidden: int, attention: bool):
        super().__init__()
        self.encoder = LSTMEncoder(src_vocab, d_embed, d_hidden)
        self.decoder = (
            BahdanauDecoder(tgt_vocab, d_embed, d_hidden, d_hidden)
            if attention
            else NoAttentionDecoder(tgt_vocab, d_embed, d_hidden)
        )

    def forward(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, list[Tensor]]:
        """-> logits (B, T, V) and the attention maps: [alpha (B, T, S)] for Bahdanau, [] without attention."""
        states, final = self.encoder(src)
        logits, alpha = self.decoder(states, final, tgt_in)
        return logits, [] if alpha is None else [alpha[:, None]]  # (B, 1 head, T, S)


class TransformerSeq2Seq(nn.Module):
    """The library's EncoderDecoder; the maps are every cross-attention head's weights (B, H, T, S) per layer
    (in eval mode; while training, none are recorded)."""

    def __init__(self, config: EncoderDecoderConfig):
        super().__init__()
        self.model = EncoderDecoder(config)

    def forward(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, list[Tensor]]:
        maps: dict[str, Tensor] = {}

        def record(name: str, tensor: Tensor) -> None:
            if name.endswith("cross_attn.weights"):
                maps[name] = tensor  # (B, H, T, S)

        # Recording makes attention compute its weights explicitly (not the fused kernel): only when asked for.
        logits = self.model(src, tgt_in, record=None if self.training else record)
        layers = sorted(maps, key=lambda n: int(n.split(".")[1]))  # decoder.0..., decoder.1...
        return logits, [maps[n] for n in layers]


class DecoderOnly(nn.Module):
    """One causal GPT over [source ; target]: source ids keep their numbers, target ids come after them in one
    vocabulary. forward returns what the encoder-decoder's does: logits over the target vocabulary at the target
    positions (B, T, V_tgt), and no maps (its attention mixes source and target columns)."""

    def __init__(self, config: GPTConfig, src_vocab: int):
        super().__init__()
        self.src_vocab = src_vocab
        self.model = GPT(config)

    def forward(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, list[Tensor]]:
        S = src.shape[1]
        sequence = torch.cat([src, tgt_in + self.src_vocab], dim=1)  # (B, S + T): source, then BOS y_1 .. y_{T-1}
        logits = self.model(sequence)  # (B, S + T, V_src + V_tgt)
        return logits[:, S:, self.src_vocab :], []  # (B, T, V_tgt): what comes next, read at each target position


def build(kind: str, src_vocab: int, tgt_vocab: int, context_length: int, size: int) -> nn.Module:
    """One of the four models at width `size` (LSTM hidden size = Transformer d_model). The decoder-only GPT has two
    blocks to the encoder-decoder's one encoder and one decoder block, and a wider FFN (3 x size, not 2 x) standing in
    for the cross-attention it lacks: its parameters match the encoder-decoder's to within 1%."""
    if kind == "no_attention":
        return RecurrentSeq2Seq(src_vocab, tgt_vocab, size // 2, size, attention=False)
    if kind == "bahdanau":
        return RecurrentSeq2Seq(src_vocab, tgt_vocab, size // 2, size, attention=True)
    if kind == "transformer":
        config = EncoderDecoderConfig(
            src_vocab_size=src_vocab,
            tgt_vocab_size=tgt_vocab,
            context_length=context_length,
            d_model=size,
            n_heads=2,
            d_ff=2 * size,
            n_encoder_layers=1,
            n_decoder_layers=1,
            positions="sinusoidal",
            norm_first=True,
        )
        model = TransformerSeq2Seq(config)
        with torch.no_grad():  # the paper scales embeddings by sqrt(d_model): tokens as loud as their positions
            for table in (model.model.src_embed.tok, model.model.tgt_embed.tok):
                nn.init.normal_(table.weight, std=1.0)
        return model
    if kind == "decoder_only":
        gpt = GPTConfig(
            vocab_size=src_vocab + tgt_vocab,
            context_length=2 * context_length,  # source and target in one sequence
            d_model=size,
            n_heads=2,
            d_ff=3 * size,
            n_layers=2,
            positions="sinusoidal",
            norm_first=True,
        )
        model = DecoderOnly(gpt, src_vocab)
        with torch.no_grad():  # as loud as the encoder-decoder's tokens
            nn.init.normal_(model.model.embed.tok.weight, std=1.0)
        return model
    raise ValueError(f"unknown model {kind!r}")


KINDS = ("no_attention", "bahdanau", "transformer", "decoder_only")
