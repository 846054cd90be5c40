"""`kubetrain completion bash|zsh|fish`: shell completion for every command and flag (argcomplete).

The printed script makes the shell call `kubetrain` itself with argcomplete's environment
(`_ARGCOMPLETE`, `COMP_LINE`); `complete_if_asked` answers those calls before normal parsing, with
a parser holding only the module of the command being completed, so a Tab stays quick.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubetrain.cli.commands import HELP

if TYPE_CHECKING:
    from kubetrain.cli.common import SubParsers

SHELLS = ("bash", "zsh", "fish")


def register(sub: SubParsers) -> None:
    completion = sub.add_parser(
        "completion",
        help=HELP["completion"],
        description="Print the completion script for SHELL. bash: `source <(kubetrain completion bash)` "
        "(or add that line to ~/.bashrc); zsh: the same in ~/.zshrc; fish: "
        "`kubetrain completion fish > ~/.config/fish/completions/kubetrain.fish`.",
    )
    completion.add_argument("shell", metavar="SHELL", choices=SHELLS, help="one of: " + ", ".join(SHELLS))
    completion.set_defaults(handler=_print_script)


def _print_script(args: argparse.Namespace) -> int:
    import argcomplete

    from kubetrain.cli.common import out

    out.print(argcomplete.shellcode(["kubetrain"], shell=args.shell), end="", markup=False, highlight=False)
    return 0


def complete_if_asked(build_parser: Callable[[list[str]], argparse.ArgumentParser]) -> None:
    """When the shell asks for completions, print them and exit; otherwise return at once."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    line = os.environ.get("COMP_LINE", "")[: int(os.environ.get("COMP_POINT", "0") or 0) or None]
    try:
        words = shlex.split(line)[1:]
    except ValueError:  # an open quote: complete the command names only
        words = []
    if words and not line.endswith(" "):
        words = words[:-1]  # the word being typed is not yet the command
    argcomplete.autocomplete(build_parser(words))
