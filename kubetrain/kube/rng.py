"""kubetrain's one random generator (jitter, generated names), apart from the global ``random``.

A program that seeds the global generator, or a test framework that watches it (Hypothesis warns
when it changes while a strategy draws), neither changes ours nor sees it used. One instance for
the process: seeding a new ``Random`` (os.urandom) per API request cost ~0.3 ms.
"""

from __future__ import annotations

import random

RNG = random.Random()
