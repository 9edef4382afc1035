"""Tokenizers, built-in texts and corpus readers (checked on the chinese-poetry copies in ../shared/data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer

from attnlab.text import (
    JINGYESI,
    POEM,
    BPETokenizer,
    CharTokenizer,
    builtin_text,
    load_tokenizer,
    read_corpus,
    save_tokenizer,
    strip_notes,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
POETRY = DATA / "chinese-poetry"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"corpus copies not found at {DATA}")


# --- character tokenizer -------------------------------------------------------------------------------


def test_char_ids_follow_first_appearance():
    tok = CharTokenizer.train(POEM)
    assert tok.encode("床前明月光") == [0, 1, 2, 3, 4]
    assert tok.chars == list("床前明月光")
    assert tok.vocab_size == 6 and tok.token(5) == "<eot>" and tok.eot_id == 5


def test_char_jingyesi_table():
    tok = CharTokenizer.train(JINGYESI)
    # 明 and 月 come back in 举头望明月 with the ids they got in the first line.
    assert tok.encode("举头望明月") == [12, 13, 14, 2, 3]
    assert tok.vocab_size == len(set(JINGYESI)) + 1 == 20


def test_char_unseen_characters_are_named_not_dropped():
    tok = CharTokenizer.train(POEM)
    assert tok.unknown("床前明月光照人人") == ["照", "人"]
    with pytest.raises(ValueError, match="照人"):
        tok.encode("床前照人")


def test_char_decode_drops_the_end_mark():
    tok = CharTokenizer.train(POEM)
    assert tok.decode([0, 1, 5]) == "床前"
    assert tok.tokens([0, 5]) == ["床", "<eot>"]
    with pytest.raises(ValueError, match="outside"):
        tok.token(6)


@given(st.text(alphabet=st.sampled_from(list(JINGYESI)), max_size=40))
def test_char_round_trip(text):
    tok = CharTokenizer.train(JINGYESI)
    ids = tok.encode(text)
    assert tok.decode(ids) == text and len(ids) == len(text)


def test_char_save_and_load(tmp_path):
    tok = CharTokenizer.train(JINGYESI)
    save_tokenizer(tok, tmp_path / "tokenizer.json")
    back = load_tokenizer(tmp_path / "tokenizer.json")
    assert isinstance(back, CharTokenizer) and back.chars == tok.chars and back.encode(JINGYESI) == tok.encode(JINGYESI)


# --- byte-level BPE ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bpe():
    texts = [
        JINGYESI * 3,
        "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。" * 3,
        "To be, or not to be: that is the question.",
    ]
    return BPETokenizer.train(texts, vocab_size=300)


def test_bpe_merges_frequent_pairs(bpe):
    assert bpe.vocab_size == 300
    # Each Chinese character is 3 UTF-8 bytes; a frequent one becomes fewer than 3 tokens after merging.
    assert len(bpe.encode(JINGYESI)) < 3 * len(JINGYESI)


@given(st.text(max_size=30))
def test_bpe_round_trips_any_text(text):
    tok = BPETokenizer.train(["床前明月光"], vocab_size=260)
    assert tok.unknown(text) == []
    assert tok.decode(tok.encode(text)) == text


def test_bpe_file_is_the_libraries_own_format(bpe, tmp_path):
    save_tokenizer(bpe, tmp_path / "tokenizer.json")
    saved = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert saved["type"] == "bpe"
    # The embedded tokenizer is loadable by the `tokenizers` library itself and encodes the same way.
    hf = HFTokenizer.from_str(json.dumps(saved["tokenizer"]))
    assert hf.encode(JINGYESI).ids == bpe.encode(JINGYESI)
    back = load_tokenizer(tmp_path / "tokenizer.json")
    assert isinstance(back, BPETokenizer) and back.encode(JINGYESI) == bpe.encode(JINGYESI)


def test_bpe_token_shows_whole_characters_or_bytes(bpe):
    text = "床前明月光" + "鷺"  # 鷺 never appears in training: it stays as raw bytes
    pieces = bpe.tokens(bpe.encode(text))
    assert any(p.startswith("<") for p in pieces) and any(not p.startswith("<") for p in pieces)
    # A piece is either whole UTF-8 text or its bytes shown as hex, e.g. <e5 ba>; together they spell the text.
    raw = b"".join(bytes.fromhex(p[1:-1]) if p.startswith("<") else p.encode("utf-8") for p in pieces)
    assert raw == text.encode("utf-8")


def test_load_tokenizer_refuses_bad_files(tmp_path):
    with pytest.raises(ValueError, match="no tokenizer file"):
        load_tokenizer(tmp_path / "missing.json")
    (tmp_path / "a.json").write_text('{"type": "wordpiece"}', encoding="utf-8")
    with pytest.raises(ValueError, match="wordpiece"):
        load_tokenizer(tmp_path / "a.json")
    (tmp_path / "b.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a valid tokenizer.json"):
        load_tokenizer(tmp_path / "b.json")


# --- built-in texts and corpora ------------------------------------------------------------------------


def test_builtin_texts():
    assert builtin_text("poem") == "床前明月光"
    assert read_corpus("jingyesi") == [JINGYESI]
    with pytest.raises(ValueError, match="poem"):
        builtin_text("静夜思")


def test_strip_notes_hand_cases():
    assert strip_notes("春草明年绿，王孙归不归？(明年 一作：年年)") == "春草明年绿，王孙归不归？"
    assert strip_notes("功盖三分国，名成八阵图。（名成 一作：名高）") == "功盖三分国，名成八阵图。"
    assert strip_notes("阑风长雨（一作「东风细雨」）秋纷纷") == "阑风长雨秋纷纷"
    # A note split across two paragraphs, as in the 蒙学 file's 夜上受降城闻笛.
    assert strip_notes("受降城外月如霜。(回乐\n一作：回乐\n）\n不知何处吹芦管") == "受降城外月如霜。\n不知何处吹芦管"
    assert strip_notes("[爽]节在重九") == "爽节在重九"


@needs_data
def test_mengxue_layout_holds_jingyesi_as_taught():
    poems = read_corpus(POETRY / "蒙学" / "tangshisanbaishou.simplified.json")
    assert len(poems) == 320  # README: 29 + 51 + 80 + 53 + 35 + 28 + 44
    jys = [p for p in poems if p.startswith("床前明月光")]
    assert jys == ["床前明月光，疑是地上霜，\n举头望明月，低头思故乡。"]
    # Our typed text differs from that copy only by the school's full stop after 霜 (README says so).
    assert jys[0].replace("\n", "").replace("霜，", "霜。") == JINGYESI
    assert not any("一作" in p or "(" in p or "（" in p for p in poems)


@needs_data
def test_mengxue_note_lines_are_stripped_and_the_rest_kept():
    raw = json.loads((POETRY / "蒙学" / "tangshisanbaishou.simplified.json").read_text(encoding="utf-8"))
    chapters = [poem for section in raw["content"] for poem in section["content"]]
    poems = read_corpus(POETRY / "蒙学" / "tangshisanbaishou.simplified.json")
    shan = poems[[c["chapter"] for c in chapters].index("山中送别")]
    assert shan == "山中相送罢，日暮掩柴扉。\n春草明年绿，王孙归不归？"


@needs_data
def test_quantangshi_array_layout():
    path = POETRY / "全唐诗" / "poet.tang.8000.simplified.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    poems = read_corpus(path)
    assert len(poems) == len(raw) == 1001
    assert poems[0] == "\n".join(raw[0]["paragraphs"])
    # The older 全唐诗 reading of 静夜思, with its notes (if any) gone.
    assert any(p.startswith("床前看月光，疑是地上霜。") for p in poems)
    assert not any("一作「" in p for p in poems)


@needs_data
def test_plain_text_corpus():
    (text,) = read_corpus(DATA / "tinyshakespeare" / "input.txt")
    assert len(text) == 1_115_394 and len(set(text)) == 65
    assert text.startswith("First Citizen:\nBefore we proceed any further, hear me speak.")


def test_corpus_errors(tmp_path):
    with pytest.raises(ValueError, match="neither a built-in text"):
        read_corpus(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="directory"):
        read_corpus(tmp_path)
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        read_corpus(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8"):
        read_corpus(tmp_path / "latin1.txt")
    (tmp_path / "x.json").write_text('[{"title": "t"}]', encoding="utf-8")
    with pytest.raises(ValueError, match="no poems"):
        read_corpus(tmp_path / "x.json")


def test_a_lessons_corpus_file_is_read_checked_and_cut(tmp_path):
    import os

    from attnlab.train.data import corpus_text

    lines = tmp_path / "lines.txt"
    lines.write_text("白日依山尽\n黄河入海流\n", encoding="utf-8")
    assert corpus_text(str(lines), 7) == "白日依山尽\n黄"
    with pytest.raises(ValueError, match="is not a file"):
        corpus_text(str(tmp_path / "missing.txt"), 10)
    with pytest.raises(ValueError, match=r"neither a built-in text \['poem'\] nor a file"):
        corpus_text(str(tmp_path / "missing.txt"), 10, builtins=["poem"])
    with pytest.raises(ValueError, match="cannot read the corpus"):
        corpus_text("x" * 5000, 10)  # too long to be a path
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.txt"
        os.mkfifo(fifo)
        with pytest.raises(ValueError):  # refused by stat alone, never opened (it would block)
            corpus_text(str(fifo), 10)
