"""One word, two contexts (苹果发布会 against 苹果真甜): its vectors in a causal model and in a bidirectional one.

A decoder-only model (GPT) masks every position i so that it reads only positions <= i. The shared prefix
苹果 therefore sees the same tokens in both sentences, and its hidden vectors are identical at every layer:
the difference is exactly 0. An encoder reads the whole sentence in both directions, so the same prefix
reads 发布会 in one sentence and 真甜 in the other, and its vectors differ from the first block on.

Both models are untrained: the same seed builds the GPT, and the encoder gets a copy of the GPT's embedding
and block weights, so the attention mask is the only difference between them. Training changes the
numbers, not the mask: a trained GPT's prefix is just as blind to what follows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, heads_divide, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.common.weights import redraw

N_HEADS = 2
MAX_LEN = 16
APART = 0.01  # "different vectors": apart by at least 1% of the vector's length, everywhere in the shared word
# The strongest null of "the encoder's vectors differ" (lessons/common/nulls.py): the GPT with the very same weights,
# whose causal mask keeps what follows out, on the same two sentences, computed in the same run as its control.
NULLS = {"encoder_differs": Null("causal")}

PARAMS = (
    Param("sentence_a", "str", "苹果发布会", max_len=MAX_LEN, help="first sentence, one token per character"),
    Param("sentence_b", "str", "苹果真甜", max_len=MAX_LEN, help="second sentence, starting with the same word"),
    Param("d_model", "int", 32, 4, 128, step=2, help="model width (even: 2 heads)"),
    Param("n_layers", "int", 2, 1, 6, step=1, help="blocks in each model"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed of the (shared) weights"),
)
QUICK = {"d_model": 16}
COURSE = ("chapter01", 30)  # the course map's section (web/course_map.py) and place in it


@dataclass
class LayerDiff:
    layer: int  # 0: the embedding (token + position), i: after block i
    causal_l2: float  # GPT: ||h_a - h_b||_2 at the word's last character
    causal_cos: float  # GPT: cosine of the two vectors there
    encoder_l2: float  # encoder: the same
    encoder_cos: float
    causal_max_l2: float  # GPT: the largest ||h_a - h_b|| over every position of the shared prefix
    encoder_min_l2: float  # encoder: the smallest over the prefix


@dataclass
class ContextVectorsResult(Shown):
    topic: str
    params: dict
    word: str  # the shared prefix, e.g. 苹果
    position: int  # its last character's position: the vectors compared
    tokens_a: list[str]
    tokens_b: list[str]
    same_weights: bool  # the encoder's embedding and blocks are the GPT's, parameter for parameter
    layers: list[LayerDiff]
    note: str  # untrained: what this shows and what it does not
    claims: list[Claim]


def shared_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def hidden_states(model, idx: torch.Tensor, **kw) -> list[torch.Tensor]:
    """[embedding output, block 1 output, ...] for one sentence, each (T, d), via the model's own forward."""
    seen: dict[str, torch.Tensor] = {}
    model(idx, record=seen.__setitem__, **kw)
    blocks = [seen[f"layers.{i}.output"][0] for i in range(len(model.blocks))]
    return [model.embed(idx)[0], *blocks]


def l2(u: torch.Tensor, v: torch.Tensor) -> float:
    return (u - v).norm().item()


def cos(u: torch.Tensor, v: torch.Tensor) -> float:
    return torch.nn.functional.cosine_similarity(u, v, dim=0).item()


def cost(p: dict) -> Cost:
    """A GPT and an encoder sharing its weights, a few blocks of width d_model, on two short sentences: their
    weights (12·d² a block) and the copies torch makes of them, measured at 48 float32 numbers per d² a block at the
    largest values (tests/cost_peaks.py), beside a fixed 8 MiB for the passes."""
    heads_divide(p["d_model"], N_HEADS, "d_model")  # refused before the lesson waits for a slot
    return Cost.of_bytes(48 * p["n_layers"] * p["d_model"] ** 2 * 4, extra_mb=8.0)


@lesson
def context_vectors(
    sentence_a: str = "苹果发布会",
    sentence_b: str = "苹果真甜",
    d_model: int = 32,
    n_layers: int = 2,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> ContextVectorsResult:
    """The shared word's hidden vectors in both sentences, layer by layer, in a GPT and in an encoder."""
    from attnlab.models import GPT, Encoder, EncoderConfig, GPTConfig

    p = check(PARAMS, dict(sentence_a=sentence_a, sentence_b=sentence_b, d_model=d_model, n_layers=n_layers, seed=seed))
    a, b = p["sentence_a"].strip(), p["sentence_b"].strip()
    cost(p)
    P = shared_prefix(a, b)
    if P == 0 or a == b:
        raise ParamError(
            f"the sentences must start with the same word and then differ, got {a!r} and {b!r}",
            "sentence_b",
            "explain.error.context_pair",
            a=a,
            b=b,
        )

    chars = sorted(set(a + b))
    pad = len(chars)  # one extra id after both sentences: the GPT never reads ahead, the encoder masks it out
    T = max(len(a), len(b))
    ids = lambda s: torch.tensor([[chars.index(c) for c in s] + [pad] * (T - len(s))])  # noqa: E731  (1, T)
    real = lambda s: torch.arange(T)[None, :] < len(s)  # noqa: E731  (1, T), True = a real token
    shape = dict(
        vocab_size=len(chars) + 1, n_layers=p["n_layers"], d_model=p["d_model"], n_heads=N_HEADS, context_length=MAX_LEN
    )
    # float64: the same last digits however many threads torch uses; redraw: weights from the seed alone
    gpt = redraw(GPT(GPTConfig(**shape)), p["seed"]).double().eval()
    encoder = Encoder(EncoderConfig(**shape)).double().eval()

    shared = {k: v for k, v in gpt.state_dict().items() if k.startswith(("embed.", "blocks."))}
    encoder.load_state_dict(shared, strict=False)  # the same embedding and blocks: only the mask differs
    enc_state = encoder.state_dict()
    same = all(torch.equal(v, enc_state[k]) for k, v in shared.items())

    with torch.no_grad():
        g_a, g_b = hidden_states(gpt, ids(a)), hidden_states(gpt, ids(b))
        e_a = hidden_states(encoder, ids(a), key_padding_mask=real(a))
        e_b = hidden_states(encoder, ids(b), key_padding_mask=real(b))
    i = P - 1
    layers = [
        LayerDiff(
            k,
            l2(ga[i], gb[i]),
            cos(ga[i], gb[i]),
            l2(ea[i], eb[i]),
            cos(ea[i], eb[i]),
            max(l2(ga[j], gb[j]) for j in range(P)),
            min(l2(ea[j], eb[j]) for j in range(P)),
        )
        for k, (ga, gb, ea, eb) in enumerate(zip(g_a, g_b, e_a, e_b))
    ]
    causal_max = max(x.causal_max_l2 for x in layers)
    encoder_min = min(x.encoder_min_l2 for x in layers[1:])  # after the first block: context has been read
    # the same, relative to the vector's length: the smallest ||h_A - h_B|| / ||h_A|| over the word and the blocks
    encoder_rel = min(l2(ea[j], eb[j]) / ea[j].norm().item() for ea, eb in zip(e_a[1:], e_b[1:]) for j in range(P))
    causal_rel = max(l2(ga[j], gb[j]) / ga[j].norm().item() for ga, gb in zip(g_a[1:], g_b[1:]) for j in range(P))
    embed_diff = max(layers[0].causal_max_l2, max(l2(e_a[0][j], e_b[0][j]) for j in range(P)))
    word = a[:P]

    def c(name: str) -> str:
        return t(f"explain.context_vectors.control.{name}", lang)

    claims = [
        # exact: float64 and the same operations on the same prefix give the same bits; any leak from what follows
        # would show as a nonzero difference
        within(
            "causal_same",
            t(
                "explain.context_vectors.claim.causal",
                lang,
                word=word,
                L=p["n_layers"],
                diff=causal_max,
                cos=min(x.causal_cos for x in layers),
            ),
            lang,
            measured=causal_max,
            expected=0.0,
            tol=0.0,
            control=c("causal"),
            values={"largest_l2": causal_max, "smallest_cos": min(x.causal_cos for x in layers)},
        ),
        # the control is the GPT with the very same weights (the mask is the only difference): its difference is 0
        lead(
            "encoder_differs",
            t(
                "explain.context_vectors.claim.encoder",
                lang,
                word=word,
                diff=encoder_min,
                rel=encoder_rel,
                last=layers[-1].encoder_l2,
                cos=layers[-1].encoder_cos,
                margin=APART,
            ),
            lang,
            measured=encoder_rel,
            baseline=causal_rel,
            margin=APART,
            control=c("encoder"),
            values={
                "smallest_l2": encoder_min,
                "smallest_relative": encoder_rel,
                "gpt_largest_relative": causal_rel,
                "last_l2": layers[-1].encoder_l2,
                "last_cos": layers[-1].encoder_cos,
                "same_weights": same,
            },
            hint=t("explain.context_vectors.hint.encoder", lang),
        ),
        within(
            "embedding_same",
            t("explain.context_vectors.claim.embedding", lang, word=word, diff=embed_diff),
            lang,
            measured=embed_diff,
            expected=0.0,
            tol=0.0,
            control=c("embedding"),
            values={"largest_l2": embed_diff},
        ),
    ]
    return ContextVectorsResult(
        "context-vectors",
        p,
        word,
        i,
        list(a),
        list(b),
        same,
        layers,
        t("explain.context_vectors.note", lang),
        claims,
    )
