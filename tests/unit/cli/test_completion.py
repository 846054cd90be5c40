"""`kubetrain completion`: the script a shell sources, and the answers `kubetrain` gives a Tab."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _complete(line: str, tmp_path: Path) -> list[str]:
    """What argcomplete answers for the command line `line` with the cursor at its end."""
    answer = tmp_path / "answer"
    env = {
        **ENV,
        "_ARGCOMPLETE": "1",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(answer),
    }
    subprocess.run([sys.executable, "-m", "kubetrain.cli.main"], env=env, check=True, timeout=60)
    return answer.read_text().replace("\x0b", " ").split()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("kubetrain ru", {"run"}),
        ("kubetrain -v lo", {"logs"}),
        ("kubetrain run --ti", {"--timeout"}),
        ("kubetrain get --kube", {"--kubeconfig"}),
        ("kubetrain delete --cascade ", {"background", "foreground"}),
        ("kubetrain completion ", {"bash", "zsh", "fish"}),
    ],
)
def test_a_tab_completes_commands_flags_and_choices(line: str, expected: set[str], tmp_path: Path) -> None:
    assert expected <= set(_complete(line, tmp_path))


def test_a_tab_on_the_command_word_lists_every_command(tmp_path: Path) -> None:
    from kubetrain.cli.commands import COMMANDS

    assert {c.name for c in COMMANDS} <= set(_complete("kubetrain ", tmp_path))


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_registers_the_completion_for_kubetrain() -> None:
    script = subprocess.run(
        [sys.executable, "-m", "kubetrain.cli.main", "completion", "bash"],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    registered = subprocess.run(
        ["bash", "-c", f"{script}\ncomplete -p kubetrain"], capture_output=True, text=True, check=True
    )
    assert registered.stdout.startswith("complete ") and registered.stdout.rstrip().endswith(" kubetrain")


def test_an_unknown_shell_is_refused_naming_the_choices() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kubetrain.cli.main", "completion", "tcshx"],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "choose from 'bash', 'zsh', 'fish'" in done.stderr
