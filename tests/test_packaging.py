"""What `pip install convrisk` puts into site-packages: the `convrisk` namespace, nothing else."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # slow: pip builds a wheel in a subprocess

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_installs_the_convrisk_namespace_and_nothing_else(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--wheel-dir"]
    subprocess.run(
        [*command, str(tmp_path), str(ROOT)], check=True, capture_output=True, timeout=300
    )
    [wheel] = tmp_path.glob("convrisk-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"convrisk", next(t for t in tops if t.endswith(".dist-info"))}
    packages = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}
    assert {"convrisk/cli", "convrisk/api_client", "convrisk/local_backend"} <= packages
    # Files, not links: a regular install has the code itself.
    assert "convrisk/cli/__main__.py" in names
    assert "convrisk/cli/root_help.txt" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "convrisk = convrisk.cli.__main__:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )
