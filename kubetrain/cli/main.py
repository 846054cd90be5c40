"""The `kubetrain` command: argument parsing, dispatch, and turning errors into exit codes.

Exit codes: 0 success; 1 a failed job, a timeout or an API error; 2 invalid input (bad
arguments, an invalid job file, an unknown kind, no kubeconfig); 130/143 after SIGINT/SIGTERM.
A user error never prints a traceback; `-v` shows the operator's logs, `--debug` tracebacks.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from kubetrain import __version__
from kubetrain.cli import inspect, install, logs, manage, node, operator, run, serve, validate
from kubetrain.cli.common import err
from kubetrain.client.errors import EXIT_INVALID, KubetrainError

EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a one-line hint instead of dumping the whole usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        err.print(f"{self.prog}: error: {message}", style="red", markup=False)
        err.print(f"run `{self.prog} --help` for usage", style="dim", markup=False)
        raise SystemExit(EXIT_INVALID)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kubetrain", description="Kubeflow training jobs, on Kubernetes or on this machine."
    )
    parser.add_argument("--version", action="version", version=f"kubetrain {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="show logs (-vv: debug)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    run.register(sub)
    serve.register(sub)
    inspect.register(sub)
    logs.register(sub)
    manage.register(sub)
    validate.register(sub)
    operator.register(sub)
    install.register(sub)
    node.register(sub)
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
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_INVALID
    _configure_logging(args.verbose)
    try:
        return int(args.handler(args))
    except KubetrainError as exc:
        err.print(f"error: {exc}", style="red", markup=False)
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("interrupted", style="yellow", markup=False)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
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
