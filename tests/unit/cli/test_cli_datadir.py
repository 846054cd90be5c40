"""Where `kubetrain up` keeps its state, and one plane per data directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubetrain.cli.datadir import (
    STATE_FILE,
    DataDirError,
    DataDirInUse,
    DataDirLock,
    default_data_dir,
    state_files,
)


def test_the_default_data_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / "kubetrain"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # the spec says: ignore a relative one
    assert default_data_dir() == Path("~/.local/share/kubetrain").expanduser()
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_data_dir() == Path("~/.local/share/kubetrain").expanduser()


def test_a_second_plane_on_a_data_dir_is_refused_naming_the_holder(tmp_path: Path) -> None:
    with DataDirLock(tmp_path / "d"):
        with pytest.raises(DataDirInUse) as exc, DataDirLock(tmp_path / "d"):
            pass
        assert f"pid {os.getpid()}" in str(exc.value) and str(tmp_path / "d") in str(exc.value)
    with DataDirLock(tmp_path / "d"):  # released: the next plane may have it
        pass


def test_reset_deletes_the_state_and_its_sqlite_companions(tmp_path: Path) -> None:
    with DataDirLock(tmp_path) as lock:
        for path in state_files(tmp_path):
            path.write_text("x")
        lock.reset()
        assert not any(p.exists() for p in state_files(tmp_path))
        assert (tmp_path / STATE_FILE).parent.is_dir()


def test_a_data_dir_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with (
        pytest.raises(DataDirError, match=r"cannot use the data directory .*--data-dir"),
        DataDirLock(tmp_path / "file" / "d"),
    ):
        pass
