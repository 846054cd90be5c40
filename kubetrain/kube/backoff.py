"""Exponential backoff with jitter, for retries of API calls and for broken watches.

Jitter spreads the retries of many clients (or many jobs) that failed together, so a recovering
API server is not hit by a synchronized wave.
"""

from __future__ import annotations

import random

from .rng import RNG


class Backoff:
    """`base * factor**n`, capped, each delay drawn from [delay*(1-jitter), delay]."""

    def __init__(
        self,
        base: float = 0.05,
        cap: float = 5.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        self.base = base
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or RNG
        self.attempt = 0

    def next(self) -> float:
        """The delay before the next attempt; each call grows it."""
        delay = min(self.cap, self.base * (self.factor ** min(self.attempt, 64)))
        self.attempt += 1
        return delay * (1.0 - self.jitter * self._rng.random())

    def reset(self) -> None:
        self.attempt = 0
