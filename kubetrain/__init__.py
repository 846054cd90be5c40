"""kubetrain: the Kubeflow training operators, re-implemented in Python and wire-compatible with upstream."""

__version__ = "0.1.0"
