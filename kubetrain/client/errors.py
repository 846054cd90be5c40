"""The client's exceptions: one base class, a message a user can act on, and an exit code.

The CLI catches `KubetrainError` at the top and prints `str(err)`; nothing the user can cause
(a typo in a kind, a missing job, an unreachable server, a bad YAML) may end in a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetrain.api.fielderrors import ErrorList, FieldError

EXIT_FAILED = 1
EXIT_INVALID = 2


class KubetrainError(Exception):
    """Base of every error the client raises on purpose; `exit_code` is what the CLI returns."""

    exit_code = EXIT_FAILED


class ConfigError(KubetrainError):
    """No usable kubeconfig/context: tells the user which file and how to get one."""

    exit_code = EXIT_INVALID


class UnknownKind(KubetrainError):
    """A kind name that is not one of ours (`tfjob`, `PyTorchJobs`, `pytorchjob` are fine)."""

    exit_code = EXIT_INVALID

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        super().__init__(
            f'unknown job kind "{name}": use one of {", ".join(known)} (any case, plural or singular)'
        )


class InvalidInput(KubetrainError):
    """The job source could not be read or parsed (missing file, YAML syntax, not a job)."""

    exit_code = EXIT_INVALID


def group_of(kind: str) -> str:
    """The API group of a registered kind (`kubeflow.org` for an unknown one), as kubectl's
    `<Kind>.<group> "<name>" is invalid` names it."""
    from kubetrain.kinds.registry import registration_for  # lazily: `kubetrain --help` stays light

    reg = registration_for(kind)
    return reg.info.group if reg is not None else "kubeflow.org"


class ValidationError(KubetrainError):
    """The job was refused by local validation (the same rules as the upstream webhook).

    `errors` holds the field errors, so callers can show each field and what to fix.
    """

    exit_code = EXIT_INVALID

    def __init__(
        self, errors: ErrorList | list[FieldError], kind: str = "", name: str = "", source: str = ""
    ) -> None:
        self.errors = ErrorList(errors)
        self.kind = kind
        self.name = name
        self.source = source
        where = f"{source}: " if source else ""
        what = f'{kind}.{group_of(kind)} "{name}" is invalid' if kind else "the job is invalid"
        lines = "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(f"{where}{what}:\n{lines}")


class ApiFailure(KubetrainError):
    """The API server answered with an error we do not map to a more precise class."""

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        self.status = status
        self.reason = reason
        super().__init__(message)


class NotFound(ApiFailure):
    """`pytorchjob "x" not found in namespace "default"`."""


class AlreadyExists(ApiFailure):
    """A create hit an existing object of the same name."""


class Unreachable(ApiFailure):
    """The API server could not be reached at all (wrong kubeconfig, plane not running)."""


class WaitTimeout(KubetrainError):
    """`wait` gave up before the job reached one of the wanted conditions."""


class JobStuck(KubetrainError):
    """`wait` saw that the job cannot get there: a pod no node can ever hold, a start error that
    every retry meets again. The message is the node's or the scheduler's."""
