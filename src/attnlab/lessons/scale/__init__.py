"""The scale lesson (⑦): computation and claims in lesson.py, and beside it its figure, terminal view, page and strings.

Its science is here too: the sweep that trains a family of GPTs on compute budgets (`sweep`, its plan in
`planning`), the scaling law fitted to it (`scaling_law`) and the emergence scores of each run (`emergence`). Only
this topic uses them: this lesson reads a sweep's scale.json, `attnlab scale` (commands/scale.py) runs one and the
/scale page (web/sweeps.py) starts one, and commands and web may import lessons. The sweep trains with the one loop
(attnlab.train), which stays the training every lesson shares.
"""
