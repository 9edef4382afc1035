"""A lesson's figure kept on disk beside its result (lessons/common/disk_cache.py): a restarted lab sends the
PNG it drew before instead of drawing it again (a figure takes seconds to draw on a busy machine)."""

from __future__ import annotations

import threading

from attnlab.lessons.common import disk_cache
from attnlab.lessons.explain import TOPICS


def _key(key: tuple) -> dict:
    """The figure of the lesson result `key` (lesson_cache.lesson_key); its version counts the views' code too
    (fonts)."""
    return disk_cache.make_key("figure", key[0], key[1], key[2], source=TOPICS[key[0]].slug, views=True)


def stored(key: tuple) -> bytes | None:
    """The PNG drawn for this lesson result by an earlier run of the lab, or None."""
    return disk_cache.load_png(_key(key))


def store(key: tuple, png: bytes) -> None:
    """Keep the PNG on disk, on another thread (the figure's request does not wait for the write)."""
    threading.Thread(target=disk_cache.store_png, args=(_key(key), png), daemon=True, name="attnlab-store").start()
