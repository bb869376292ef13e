"""The package works from a wheel outside the repo, with its ledger (and model) inside.

The wheel is built the way `pip install .` builds it (pip's isolated build environment with the
build-system requirements), so nothing is asked of the environment running the tests beyond pip. It is
installed into a fresh virtualenv that does not see the base interpreter's site-packages; its
dependencies come from the environment running the tests (already installed there from the same
pyproject), added behind the virtualenv's own site-packages, so nothing is downloaded again.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
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

# Run by the inner interpreter: every requirement of the installed sigclass (no extras) that is missing
# or at a version outside its range. `packaging` is there: pytest depends on it.
UNMET = """
import importlib.metadata as md
from packaging.requirements import Requirement
for line in md.requires("sigclass") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        have = md.version(req.name)
    except md.PackageNotFoundError:
        print(req, "(missing)")
        continue
    if not req.specifier.contains(have, prereleases=True):
        print(req, "(have", have + ")")
"""


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("wheel")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(REPO)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    (whl,) = out.glob("sigclass-*.whl")
    return whl, p.stdout + p.stderr


@pytest.fixture(scope="module")
def wheel(build) -> Path:
    return build[0]


def test_wheel_contains_the_ledger_and_its_examples(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    yamls = [n for n in names if n.startswith("sigclass/signatures/") and n.endswith(".yaml")]
    assert len(yamls) >= 23
    assert "sigclass/signatures/cuda-oom.log" in names
    assert not any(n.startswith("classifier/") for n in names)


def test_wheel_carries_the_report_templates_and_assets(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.relative_to(REPO / "classifier").as_posix()
               for p in (REPO / "classifier" / "sigclass" / "outputs" / "report" / "templates").iterdir()}
    assert {"sigclass/outputs/report/templates/page.html.j2", "sigclass/outputs/report/templates/report.css",
            "sigclass/outputs/report/templates/report.js"} <= shipped
    assert shipped <= names, sorted(shipped - names)


def test_wheel_carries_the_license_as_an_spdx_expression(wheel: Path):
    zf = zipfile.ZipFile(wheel)
    (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
    headers = zf.read(meta).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: Apache-2.0" in headers
    assert "License-File: LICENSE" in headers
    assert not any(h.startswith("Classifier: License ::") for h in headers)  # the expression replaces these
    (lic,) = [n for n in zf.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert b"Apache License" in zf.read(lic) and b"Version 2.0" in zf.read(lic)


def test_the_build_warns_of_nothing_deprecated(build):
    _, log = build
    assert "Deprecat" not in log, "\n".join(line for line in log.splitlines() if "eprecat" in line)


def test_installed_wheel_runs_outside_the_repo(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    # The dependencies: this environment's site-packages, after the virtualenv's own (so its sigclass wins).
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    outer = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    Path(site, "outer-environment.pth").write_text("".join(f"{d}\n" for d in outer))

    where = subprocess.run([str(py), "-c", "import sigclass; print(sigclass.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr
    unmet = subprocess.run([str(py), "-c", UNMET], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert unmet.returncode == 0 and unmet.stdout == "", unmet.stdout + unmet.stderr

    log = tmp_path / "x.log"
    log.write_text(OOM)
    p = subprocess.run([str(env_dir / "bin" / "sigclass"), "scan", "-f", "jsonl", str(log)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert '"family": "cuda-oom"' in p.stdout
    p = subprocess.run([str(env_dir / "bin" / "sigclass"), "ledger", "list"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "vllm-h100-prefix-cache-ima" in p.stdout
    run = tmp_path / "run" / "worker_0"
    run.mkdir(parents=True)
    (run / "shard_1.log").write_text("[shard 1] starting\n" + OOM)
    page = tmp_path / "report.html"
    p = subprocess.run([str(env_dir / "bin" / "sigclass"), "report", str(run.parent), "--out", str(page), "-j", "1"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr  # failures found, the page written from the wheel's templates
    html_text = page.read_text(encoding="utf-8")
    assert 'data-family="cuda-oom"' in html_text and "<svg" in html_text and "</html>" in html_text
