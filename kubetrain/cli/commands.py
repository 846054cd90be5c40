"""The `kubetrain` subcommands: name, the module that defines them, and their one-line help.

`kubetrain --help` lists every command from this table alone, and `kubetrain run ...` imports
only `kubetrain.cli.run`: the modules behind `up`, `node` and `operator` pull in aiohttp, the
embedded plane and kubernetes_asyncio, about a second of imports a help screen should not pay.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    module: str
    """The `kubetrain.cli` module whose `register(sub)` defines the command's arguments."""
    help: str


COMMANDS: tuple[Command, ...] = (
    Command(
        "run", "run", "run a job on this machine (in-process plane), stream its logs, exit with its result"
    ),
    Command("up", "serve", "run a local plane (API server + operator + node) until Ctrl-C"),
    Command("get", "inspect", "list jobs, or show one"),
    Command("describe", "inspect", "show a job's status, pods and events"),
    Command("create", "submit", "create the jobs of files (-f FILE, a directory, or - for stdin)"),
    Command("apply", "submit", "create or update the jobs of files by server-side apply (-f FILE)"),
    Command("history", "history", "list past jobs the local plane recorded; `history show NAME` shows one"),
    Command(
        "dashboard",
        "dashboard",
        "serve the web dashboard (jobs, replicas' logs and loss curves, history) for any cluster",
    ),
    Command("logs", "logs", "print the logs of a job's replicas, or of one pod"),
    Command("delete", "manage", "delete a job and its pods"),
    Command("wait", "manage", "block until a job reaches a condition"),
    Command(
        "validate",
        "validate",
        "check job files offline with the upstream webhook's rules (exit 0 valid, 2 invalid)",
    ),
    Command("crds", "validate", "list the CRDs kubetrain serves; --print their YAML for kubectl apply"),
    Command("operator", "operator", "run the operator against a Kubernetes cluster (upstream's flags)"),
    Command("install", "install", "install (or upgrade, or remove) the operator on a cluster"),
    Command("node", "node", "join a cluster as a node that runs its pods as local processes"),
    Command("completion", "completion", "print the shell completion script (bash, zsh, fish)"),
)
HELP: dict[str, str] = {command.name: command.help for command in COMMANDS}
"""What each module passes as `help=` to `add_parser`, so the listing and the command agree."""

GLOBAL_FLAGS = frozenset({"-v", "-vv", "-vvv", "--verbose", "--debug", "--version", "-h", "--help"})


def command_in(argv: list[str]) -> str | None:
    """The subcommand `argv` names: its first word that is not one of the global flags."""
    for word in argv:
        if not word.startswith("-"):
            return word
        if word not in GLOBAL_FLAGS and not (word.startswith("-v") and set(word[1:]) == {"v"}):
            return None  # an unknown flag: argparse reports it, with every command listed
    return None
