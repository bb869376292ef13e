"""The per-user cache and data folders: the platform's convention, and the environment overrides."""

from __future__ import annotations

from pathlib import Path
import sys

import pytest

from sigclass.folders import cache_dir, CACHE_ENV, data_dir, DATA_ENV


@pytest.fixture()
def env(monkeypatch, tmp_path: Path):
    for name in (CACHE_ENV, DATA_ENV, "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG folders are the Linux convention")
def test_the_xdg_folders_by_default(env, tmp_path: Path):
    assert cache_dir() == tmp_path / "home" / ".cache" / "sigclass"
    assert data_dir() == tmp_path / "home" / ".local" / "share" / "sigclass"
    env.setenv("XDG_CACHE_HOME", str(tmp_path / "xc"))
    env.setenv("XDG_DATA_HOME", str(tmp_path / "xd"))
    assert cache_dir() == tmp_path / "xc" / "sigclass"
    assert data_dir() == tmp_path / "xd" / "sigclass"


def test_the_environment_overrides_win(env, tmp_path: Path):
    env.setenv("XDG_CACHE_HOME", str(tmp_path / "xc"))
    env.setenv(CACHE_ENV, str(tmp_path / "mine-cache"))
    env.setenv(DATA_ENV, str(tmp_path / "mine-data"))
    assert cache_dir() == tmp_path / "mine-cache"
    assert data_dir() == tmp_path / "mine-data"


@pytest.mark.parametrize("off", ["0", "off"])
def test_the_cache_can_be_turned_off(env, off: str):
    env.setenv(CACHE_ENV, off)
    assert cache_dir() is None


def test_an_empty_override_means_the_default(env, tmp_path: Path):
    env.setenv(CACHE_ENV, "")
    env.setenv(DATA_ENV, "")
    assert cache_dir() is not None and cache_dir().name == "sigclass"
    assert data_dir().name == "sigclass"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG folders are the Linux convention")
@pytest.mark.parametrize("xdg", [None, "", "relative/dir", "/abs/xdg", "/abs/xdg/", "~/tilde"])
@pytest.mark.parametrize("home", [None, "", "relative-home", "/", "/home/u", "/home/u/"])
def test_the_folders_are_what_platformdirs_gives(env, xdg, home):
    """The folders are found without importing platformdirs where its answer is plain; the same answer."""
    import platformdirs

    for name, value in (("HOME", home), ("XDG_CACHE_HOME", xdg), ("XDG_DATA_HOME", xdg)):
        if value is None:
            env.delenv(name, raising=False)
        else:
            env.setenv(name, value)
    try:
        want = (platformdirs.user_cache_dir("sigclass", appauthor=False),
                platformdirs.user_data_dir("sigclass", appauthor=False))
    except RuntimeError:
        want = None  # platformdirs finds no home: neither may a guess
    if want is None:
        with pytest.raises(RuntimeError):
            cache_dir()
        return
    assert (cache_dir(), data_dir()) == (Path(want[0]), Path(want[1]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG folders are the Linux convention")
def test_a_scan_of_a_small_log_does_not_import_platformdirs(tmp_path: Path):
    import subprocess

    log = tmp_path / "small.log"
    log.write_text("INFO 03-23 11:14:05 [api_server.py:1] started\nstep 1 loss 2.0\n", encoding="utf-8")
    code = ("import sys; from sigclass.cli.app import main; sys.argv = ['sigclass', 'scan', sys.argv[1]]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('platformdirs' in sys.modules and 'IMPORTED' or 'not imported')")
    env = {k: v for k, v in __import__("os").environ.items() if k not in (CACHE_ENV, DATA_ENV)}
    env["HOME"] = str(tmp_path / "home")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120, env=env)
    assert out.stderr.strip().endswith("not imported"), out.stderr
