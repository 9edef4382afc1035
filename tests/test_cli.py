"""The attnlab command itself."""

import subprocess
import sys

from typer.testing import CliRunner

import attnlab
from attnlab.cli import app


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"attnlab {attnlab.__version__}"


def test_help_lists_the_lab():
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "attnlab" in result.output


def test_installed_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "attnlab", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"attnlab {attnlab.__version__}"
