"""Freeze the lab's own words (every UI string, zh and en, as of this commit) into lessons/bpe/words.json: the text
the bpe topic trains its tokenizers on by default. Frozen, so that the topic's numbers do not move whenever a
string of the lab changes; run again (and record the answers) to refresh it.

    python tools/bpe_words.py
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.i18n import catalog

OUT = Path(__file__).resolve().parents[1] / "src" / "attnlab" / "lessons" / "bpe" / "words.json"


def main() -> None:
    entries = catalog()
    keys = sorted(k for k in entries if not k.startswith("explain.bpe."))  # not the topic's own words about itself
    words = {lang: [entries[k][lang] for k in keys] for lang in ("zh", "en")}
    OUT.write_text(json.dumps(words, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(
        f"{len(keys)} strings, {sum(map(len, words['zh'])):,} zh and {sum(map(len, words['en'])):,} en characters -> {OUT}"
    )


if __name__ == "__main__":
    main()
