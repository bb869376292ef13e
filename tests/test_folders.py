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
