"""Sentence vectors: a pretrained encoder's states mean-pooled into one vector a sentence (all-MiniLM-L6-v2, loaded
into the lab's Encoder by attnlab.pretrained, where it is installed), and what they are for: a sentence's nearest
neighbour by cosine. Twenty English sentences, typed for the lab, five on each of four topics, written so that
sentences of one topic share almost no words: a bag of words finds little, a vector of meaning should find the
topic.
"""

from __future__ import annotations

import re
import threading
from collections import Counter

import torch

TOPICS = {
    "food": (
        "I am starving, let's grab some lunch.",
        "This soup needs more salt.",
        "The bakery sells fresh bread every morning.",
        "We ordered noodles and dumplings for dinner.",
        "Could you pass me a fork?",
    ),
    "weather": (
        "It is pouring outside.",
        "Tomorrow will be sunny and warm.",
        "Snow covered the roads overnight.",
        "A cold wind blows from the north.",
        "Take an umbrella, the sky looks grey.",
    ),
    "sport": (
        "She scored the winning goal in the final minute.",
        "The team trains on the field every afternoon.",
        "He ran the marathon in under three hours.",
        "Our striker missed a penalty.",
        "The tennis match went to five sets.",
    ),
    "computers": (
        "My laptop keeps crashing when I open the browser.",
        "Restart the router to fix the wifi.",
        "The program threw an error on line ten.",
        "I need more memory to train this model.",
        "Save your file before the update installs.",
    ),
}
SENTENCES = [s for group in TOPICS.values() for s in group]
TOPIC_OF = [name for name, group in TOPICS.items() for _ in group]
MAX_QUERY = 200  # characters
CHANCE = (len(SENTENCES) // len(TOPICS) - 1) / (len(SENTENCES) - 1)  # another sentence of the same topic, at random

_lock = threading.Lock()
_loaded: list = []


def installed() -> bool:
    from attnlab.pretrained import installed

    return installed()


def minilm():
    """(model, tokenizer), loaded once per process (two first requests at once load it once)."""
    from attnlab.pretrained import load

    with _lock:
        if not _loaded:
            _loaded.append(load("minilm"))
    return _loaded[0]


@torch.no_grad()
def vectors(texts: list[str]) -> torch.Tensor:
    """Each text's states, [CLS] and [SEP] included, averaged and scaled to length 1: (N, d), as sentence-transformers
    pools all-MiniLM-L6-v2."""
    model, tokenizer = minilm()
    out = []
    for text in texts:
        ids = torch.tensor([tokenizer.encode(text)])  # (1, T)
        v = model(ids)[0].mean(dim=0)  # (T, d) -> (d,)
        out.append(v / v.norm())
    return torch.stack(out)  # (N, d)


def words(text: str) -> Counter:
    return Counter(re.findall(r"[a-z']+", text.lower()))


def bag_vectors(texts: list[str]) -> torch.Tensor:
    """Word counts over the words of all the texts, scaled to length 1 (a text of no known word stays 0): (N, |V|)."""
    counts = [words(t) for t in texts]
    vocab = sorted(set().union(*counts))
    m = torch.tensor([[c[w] for w in vocab] for c in counts], dtype=torch.float64)  # (N, |V|)
    return m / m.norm(dim=1, keepdim=True).clamp_min(1e-12)


def nearest(v: torch.Tensor) -> list[int]:
    """Each row's nearest other row by cosine (the rows have length 1); ties to the lowest index."""
    sim = v @ v.T  # (N, N)
    sim.fill_diagonal_(-2.0)
    return sim.argmax(dim=1).tolist()


def same_topic(order: list[int]) -> list[bool]:
    return [TOPIC_OF[i] == TOPIC_OF[j] for i, j in enumerate(order)]


def ranked(query: str, v: torch.Tensor, q: torch.Tensor, k: int = 3) -> list[tuple[str, float]]:
    """The k sentences closest to the query vector q (d,), with their cosine."""
    sim = v @ q  # (N,)
    top = sim.argsort(descending=True)[:k].tolist()
    return [(SENTENCES[i], float(sim[i])) for i in top]
