"""What a training run leaves on disk, and reading it back without trusting it: a checkpoint folder
(`checkpoint`), a folder of them opened by name (`runs_dir`), and the checks a load makes: checksums and the
weights file's declared size (`integrity`), links that loop (`links`), and each
weight's shape, number type and finiteness (`weights`).

Why here, in train, and not in attnlab.io: a checkpoint is a GPT and its tokenizer, so checkpoint.py builds them
from their files (attnlab.models, attnlab.text) and checks their size with train.size, and io is the bottom layer,
which may import nothing above it (pyproject.toml's import-linter layers). integrity, links and weights
import nothing of attnlab and could sit lower, but they are the checks of this one reader, so they stay beside it.
io keeps what every layer shares: folders written whole (io.atomic, which checkpoints use too), files read
without trusting them (io.safe_read, which every reader of a request's or a user's file uses) and CPU threads.
"""
