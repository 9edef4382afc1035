"""Text in: tokenizers (characters, byte-level BPE), the built-in poems, and corpus readers."""

from attnlab.text.bpe import BPETokenizer
from attnlab.text.builtin import BUILTIN_TEXTS, JINGYESI, POEM, builtin_text
from attnlab.text.char import EOT, CharTokenizer
from attnlab.text.corpus import read_corpus, read_poems_json, shuffled_chars, strip_notes
from attnlab.text.tokenizer import Tokenizer, load_tokenizer, save_tokenizer, tokenizer_from_dict, train_tokenizer

__all__ = [
    "BPETokenizer",
    "BUILTIN_TEXTS",
    "CharTokenizer",
    "EOT",
    "JINGYESI",
    "POEM",
    "Tokenizer",
    "builtin_text",
    "load_tokenizer",
    "read_corpus",
    "shuffled_chars",
    "read_poems_json",
    "save_tokenizer",
    "strip_notes",
    "tokenizer_from_dict",
    "train_tokenizer",
]
