"""Lessons: one package per topic (`lessons/<topic>/`), the shared pieces in `lessons/common/`, and the
registry of the concept topics in `lessons/explain.py`.

A lesson package holds its computation and claims (`lesson.py`), its figure (`figure.py`), its terminal view
(`view.py`), its page (`page.html`, any script under `static/`) and its zh/en strings (`strings.json`).
A lesson function takes ordinary Python values, computes with `attnlab.nn` / torch / numpy, and returns a
dataclass whose fields are lists of floats, ints, strings and bools, so `dataclasses.asdict(result)` is
JSON. Views (the web pages, the CLI, notebooks) only show what a lesson returned; they never compute.
Bad input raises ValueError naming what was expected and what came. No lesson imports another lesson.
"""
