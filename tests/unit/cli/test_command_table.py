"""The command table drives `kubetrain --help` without importing the commands' modules."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from kubetrain.cli.commands import COMMANDS, command_in
from kubetrain.cli.main import build_parser

HEAVY = ("aiohttp", "kubernetes_asyncio", "kubetrain.embedded", "kubetrain.runtime", "yaml")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: choice.help or "" for choice in action._choices_actions}


def test_the_table_lists_exactly_the_commands_the_modules_register_with_their_help() -> None:
    registered = _subcommands(build_parser())
    assert registered == {command.name: command.help for command in COMMANDS}


def test_every_command_has_help_and_the_same_listing_whichever_command_is_parsed() -> None:
    listing = _subcommands(build_parser([]))
    assert all(listing.values())
    for command in COMMANDS:
        assert _subcommands(build_parser([command.name])).keys() == listing.keys()


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["run", "job.yaml"], "run"),
        (["-v", "get"], "get"),
        (["-vv", "--debug", "logs", "-f"], "logs"),
        (["--help"], None),
        ([], None),
        (["--kubeconfig", "x", "get"], None),  # not a global flag: argparse reports it
    ],
)
def test_the_command_is_the_first_word_after_the_global_flags(argv: list[str], command: str | None) -> None:
    assert command_in(argv) == command


def _modules_loaded_by(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after `statement`: what a user's shell would pay."""
    program = f"import sys\n{statement}\nprint('MODULES', ' '.join(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    return set(done.stdout.split("MODULES", 1)[1].split())


def test_the_top_level_help_imports_no_command_module() -> None:
    loaded = _modules_loaded_by("from kubetrain.cli.main import main; main(['--help'])")
    assert not [name for name in loaded if name.startswith(HEAVY)]
    # The table, and the completion hook that must run before parsing; no command's module.
    light = {"kubetrain.cli.main", "kubetrain.cli.commands", "kubetrain.cli.completion"}
    assert {name for name in loaded if name.startswith("kubetrain.cli.")} == light


def test_a_command_imports_its_own_module_only() -> None:
    loaded = _modules_loaded_by(
        "from kubetrain.cli.main import build_parser; build_parser(['validate', 'x'])"
    )
    assert "kubetrain.cli.validate" in loaded
    assert not {"kubetrain.cli.run", "kubetrain.cli.operator", "kubetrain.cli.node"} & loaded


def test_every_command_has_a_description_and_every_argument_a_help_text() -> None:
    missing = []
    for name, parser in _subparsers(build_parser()).items():
        if not parser.description:
            missing.append(f"{name}: description")
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            what = "/".join(action.option_strings) or action.dest
            if not action.help:
                missing.append(f"{name} {what}: help")
            if action.option_strings and action.nargs == "?" and action.metavar is None:
                missing.append(f"{name} {what}: metavar (argparse shows the dest, e.g. [INSTALL_CRDS])")
    assert missing == []


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)
