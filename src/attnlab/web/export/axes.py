"""A page's independent parts as the static copy's axes, so that its states add up instead of multiplying.

/toy has three parts whose content does not depend on each other: ① the predictions (ans_*), ② the hand
calculation (its presets and the v₂ guess), ③ the lab (the query word and the causal mask). The live lab keeps
all of them in one URL, so the pages a learner can click to are the product of every part's states (45 × 8 ×
16 a language, more than the export's guard). The copy renders each part's states with the other parts at
their defaults: a click on a control of part P leads to the page with P's new state and nothing else, so
every page has at most one part away from its defaults, and a page has 1 + Σ_P (states of P − 1) states
(67 a language for /toy) — every state of every part is there, the combinations across parts are the live lab's.

A query key's part is the <section> of the page holding the control a learner sets it with (read from the
rendered page, not listed here): a hidden field carries another part's state and does not count; a key no
control of a section sets is a part of its own.
"""

from __future__ import annotations

from attnlab.web.export.tags import tags_of

SECTIONED = frozenset({"/toy"})  # pages whose parts the copy renders one at a time
FIELDS = frozenset({"input", "button", "select", "textarea"})

Query = tuple[tuple[str, str], ...]


class TwoParts(ValueError):
    """One click of a sectioned page changes two of its parts: the copy would multiply its states."""


def parts(text: str) -> dict[str, str]:
    """{query key: id of the <section> whose visible control sets it}, for a page's own controls."""
    parsed = tags_of(text)
    events = sorted(
        [(tag.start, 1, tag) for tag in parsed.tags] + [(s, 0, name) for name, s, _ in parsed.ends],
        key=lambda e: (e[0], e[1]),
    )
    open_sections: list[str] = []
    out: dict[str, str] = {}
    for _, is_start, item in events:
        if not is_start:
            if item == "section" and open_sections:
                open_sections.pop()
            continue
        a = dict(item.attrs)
        if item.name == "section":
            open_sections.append(a.get("id") or "")
        elif (
            item.name in FIELDS and a.get("name") and a.get("type") != "hidden" and open_sections and open_sections[-1]
        ):
            out.setdefault(a["name"], open_sections[-1])
    return out


def part_of(key: str, sections: dict[str, str]) -> str:
    return sections.get(key, f"key:{key}")


def changed_parts(query: Query, source: Query, sections: dict[str, str]) -> set[str]:
    before, after = dict(source), dict(query)
    return {part_of(k, sections) for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def narrow(query: Query, source: Query, sections: dict[str, str]) -> Query:
    """The state the copy links when a control on the page at `source` asks for `query` (same page): only the
    part it changes, the others at their defaults. Nothing changed (the language switch, an anchor): as asked.
    A link that puts parts back to their defaults (the navigation's plain /toy) is fine; one that sets two
    parts at once would make pages with two parts away from their defaults, and is refused."""
    changed = changed_parts(query, source, sections)
    if not changed:
        return query
    kept = tuple((k, v) for k, v in query if part_of(k, sections) in changed)
    if len({part_of(k, sections) for k, _ in kept}) > 1:
        raise TwoParts(f"one link sets {', '.join(sorted(changed))} at once")
    return kept
