"""Subwords: byte-level BPE on the lab's own words (attnlab explain bpe)."""
