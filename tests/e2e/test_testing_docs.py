"""The Python examples of docs/guide/testing.md and of the README's "Testing your application
against convrisk" run as a reader would run them: a block with tests as a test file of a suite
of its own (`pytest -p convrisk.testing`), any other as a program."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme import section

from .both_backends import isolated_env

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = (ROOT / "docs" / "guide" / "testing.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAFETY_TIMEOUT = 180  # seconds; only so that a hung example cannot hang the suite


def python_blocks(text: str) -> list[str]:
    """The contents of the ```python code blocks."""
    return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)


EXAMPLES = [
    *(("docs/guide/testing.md", n, block) for n, block in enumerate(python_blocks(PAGE), 1)),
    *(
        ("README.md", n, block)
        for n, block in enumerate(
            python_blocks(section("Testing your application against convrisk", README)), 1
        )
    ),
]


def test_the_page_and_the_readme_have_their_examples() -> None:
    assert len([page for page, _, _ in EXAMPLES if page == "README.md"]) == 1
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize(
    ("page", "number", "code"), EXAMPLES, ids=[f"{page}#{n}" for page, n, _ in EXAMPLES]
)
def test_each_python_example_runs(page: str, number: int, code: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {name: value for name, value in isolated_env(home).items() if "PYTEST" not in name}
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    tests = re.findall(r"^def (test_\w+)", code, re.M)
    if tests:
        (folder / "test_example.py").write_text(code, encoding="utf-8")
        command = [sys.executable, "-m", "pytest", "-p", "convrisk.testing", "-q"]
        command += ["-p", "no:cacheprovider", "test_example.py"]
    else:
        command = [sys.executable, "-c", code]
    result = subprocess.run(
        command,
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0, f"{page} example {number}:\n{result.stdout}{result.stderr}"
    if tests:
        assert f"{len(tests)} passed" in result.stdout
