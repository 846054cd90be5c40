"""The per-job SSH key pair of MPIJob v2beta1: ECDSA P-521, like mpi-operator (and like Kubeflow
Trainer v2's mpi plugin, whose TrainJob Secret `kinds/trainjob/mpi.py` fills from the same pair).

Upstream's Secret: docs/upstream-behaviour.md#mpijob-v2beta1-objects.

Key generation is the one non-deterministic step of planning. It happens only when the job's
Secret is absent (or holds other keys), so a plan stays idempotent: once the Secret exists the
planner never generates again, and re-planning before it lands only regenerates a Secret that was
never created. Tests inject a fixed key pair instead.
"""

from __future__ import annotations

from collections.abc import Callable

KeyPair = tuple[bytes, bytes]
"""(PEM "EC PRIVATE KEY" block, OpenSSH authorized_keys line ending in a newline)."""
KeyGen = Callable[[], KeyPair]


def generate_key_pair() -> KeyPair:
    """A fresh ECDSA P-521 key pair in the formats mpi-operator writes.

    Needs the `cryptography` package (imported here, so that merely importing the planner does not).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"
