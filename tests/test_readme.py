"""README.md is part of the contract: its set-up commands and its Python example must stay true."""

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_the_setup_commands():
    blocks = re.findall(r"<!-- setup: (\w+) -->\n```bash\n(.*?)\n```", README)
    assert [name for name, _ in blocks] == ["lab", "tests", "quick"]
    assert blocks[0][1].endswith("attnlab serve")
    assert blocks[1][1].endswith("python -m pytest -q -n 2")
    assert blocks[2][1] == 'python -m pytest -q -n 2 -m "not slow"'  # the quick tier, after a one-file change


def test_python_example_runs_and_prints_the_hand_calculation(capsys):
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "0.2500, 0.7500" in printed and "0.5000, 1.5000" in printed
    assert "torch.Size([1, 2, 4, 4])" in printed
