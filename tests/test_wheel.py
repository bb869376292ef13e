"""The package works from a wheel outside the repo, with its ledger (and model) inside."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

OOM = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 42, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True, capture_output=True, timeout=600,
    )
    (whl,) = out.glob("sigclass-*.whl")
    return whl


def test_wheel_contains_the_ledger_and_its_examples(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    yamls = [n for n in names if n.startswith("sigclass/signatures/") and n.endswith(".yaml")]
    assert len(yamls) >= 23
    assert "sigclass/signatures/cuda-oom.log" in names
    assert not any(n.startswith("classifier/") for n in names)


def test_installed_wheel_runs_outside_the_repo(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    # --ignore-installed: the same version may already be installed in the system site-packages this venv sees
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--ignore-installed", "-q", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    log = tmp_path / "x.log"
    log.write_text(OOM)
    where = subprocess.run([str(py), "-c", "import sigclass, sys; print(sigclass.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr
    p = subprocess.run([str(env_dir / "bin" / "sigclass"), "scan", "-f", "jsonl", str(log)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert '"family": "cuda-oom"' in p.stdout
    p = subprocess.run([str(env_dir / "bin" / "sigclass"), "ledger", "list"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "vllm-h100-prefix-cache-ima" in p.stdout
