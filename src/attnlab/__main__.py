"""`python -m attnlab` is the same as the `attnlab` command."""

from attnlab.cli import app

app(prog_name="attnlab")
