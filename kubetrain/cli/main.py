"""The `kubetrain` command: argument parsing, dispatch, and turning errors into exit codes.

Exit codes: 0 success; 1 a failed job, a timeout or an API error; 2 invalid input (bad
arguments, an invalid job file, an unknown kind, no kubeconfig); 130/143 after SIGINT/SIGTERM;
141 when the reader of stdout went away (`kubetrain run job.yaml | head`).
A user error never prints a traceback; `-v` shows the operator's logs, `--debug` tracebacks.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib import import_module

from kubetrain import __version__
from kubetrain.cli.commands import COMMANDS, command_in
from kubetrain.cli.completion import complete_if_asked
from kubetrain.client.errors import EXIT_INVALID, KubetrainError

EXIT_INTERRUPTED = 130
EXIT_STDOUT_CLOSED = 141
"""128 + SIGPIPE, what a shell reports for a program whose reader closed the pipe."""


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a one-line hint instead of dumping the whole usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        from kubetrain.cli.common import err

        err.print(f"{self.prog}: error: {message}", style="red", markup=False)
        err.print(f"run `{self.prog} --help` for usage", style="dim", markup=False)
        raise SystemExit(EXIT_INVALID)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given `argv`, only its command's module is imported, the rest listed.

    Each command module's `register(sub)` adds its commands; the others become placeholders
    with their help line, which is all `kubetrain --help` and argparse's errors show of them.
    """
    parser = _Parser(
        prog="kubetrain", description="Kubeflow training jobs, on Kubernetes or on this machine."
    )
    parser.add_argument("--version", action="version", version=f"kubetrain {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="show logs (-vv: debug)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    wanted = None if argv is None else command_in(list(argv))
    for command in COMMANDS:
        # A module defining two commands (get, describe) registers both at once.
        if (argv is None or command.name == wanted) and command.name not in sub.choices:
            import_module(f"kubetrain.cli.{command.module}").register(sub)
    for command in COMMANDS:
        if command.name not in sub.choices:
            sub.add_parser(command.name, help=command.help)
    return parser


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if verbosity == 0:
        # The operator logs recoverable API hiccups at WARNING; in a CLI session they are noise.
        logging.getLogger("kubetrain").setLevel(logging.ERROR)
        # A client hanging up on a log stream makes aiohttp's server log a traceback; for the
        # in-process plane that is routine (we cancel streams ourselves), not a user's concern.
        logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    complete_if_asked(build_parser)  # a shell's Tab: answers and exits
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_INVALID
    _configure_logging(args.verbose)
    from kubetrain.cli.common import err

    try:
        return int(args.handler(args))
    except KubetrainError as exc:
        err.print(f"error: {exc}", style="red", markup=False)
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("interrupted", style="yellow", markup=False)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `kubetrain logs ... | head`: the reader has all it wanted
        from kubetrain.cli.signals import silence_stdout

        silence_stdout()
        return EXIT_STDOUT_CLOSED
    except Exception as exc:
        if args.debug:
            raise
        err.print(
            f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback, "
            "and please report it)",
            style="red",
            markup=False,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
