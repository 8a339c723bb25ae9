"""Shared fixtures: the CLI binary the Python results are compared with (set by ctest, or build/bin)."""
import json
import os
import pathlib
import subprocess

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("TRAINPLAN_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BINARY = os.environ.get("TRAINPLAN_BINARY", str(SOURCE_DIR / "build" / "bin" / "trainplan"))


def run_cli(command, *args):
    """The CLI's --json output for `command args`, parsed; fails the test on a non-zero exit."""
    done = subprocess.run([BINARY, command, "--json", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cli_error(*args):
    """The CLI's message for bad input (exit status 2), without the 'trainplan: error: ' prefix."""
    done = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    return done.stderr.strip().removeprefix("trainplan: error: ")


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def source_dir():
    return SOURCE_DIR
