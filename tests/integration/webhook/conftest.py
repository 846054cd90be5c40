"""Shared fixtures: certificates in a temporary directory and an HTTPS client that trusts them."""

from __future__ import annotations

import sys
from pathlib import Path

# The job and AdmissionReview builders live beside the unit tests; share them instead of copying.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "webhook"))
