"""Why a container cannot start yet, in the kubelet's words (they end up in pod status/events)."""

from __future__ import annotations


class ContainerConfigError(Exception):
    """An env source is missing: the container waits with reason ``CreateContainerConfigError``."""


class MountError(Exception):
    """A volume cannot be set up: the pod waits in ``ContainerCreating`` with a FailedMount event."""


class StartError(Exception):
    """The process could not be started (no executable, no entrypoint): exit code 128, ``StartError``."""
