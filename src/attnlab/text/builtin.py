"""The two texts the lab ships, typed by us (not copied from any corpus file).

`poem` is the one line the course teaches with (床前明月光); `jingyesi` is the whole of 李白's 静夜思 in
the wording taught in schools (床前明月光 … 举头望明月), not the older 全唐诗 reading (看月光 … 望山月).
"""

from __future__ import annotations

POEM = "床前明月光"
JINGYESI = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"

BUILTIN_TEXTS: dict[str, str] = {"poem": POEM, "jingyesi": JINGYESI}


def builtin_text(name: str) -> str:
    """The built-in text called `name` ('poem' or 'jingyesi')."""
    try:
        return BUILTIN_TEXTS[name]
    except KeyError:
        raise ValueError(f"no built-in text {name!r}; expected one of {sorted(BUILTIN_TEXTS)}") from None
