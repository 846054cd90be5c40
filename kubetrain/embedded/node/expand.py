"""Kubernetes ``$(VAR)`` expansion, exactly as the kubelet does it.

Rules (k8s third_party/forked/golang/expansion): ``$(NAME)`` becomes NAME's value when NAME is
defined and stays as written when it is not; ``$$`` is an escaped ``$``; a ``$`` before anything
else, and an unclosed ``$(``, are kept literally. The rules matter because operators and users put
``$(POD_NAME)``-style references in args and env, and ``$$`` to pass a literal ``$`` to a shell.
"""

from __future__ import annotations

from collections.abc import Mapping


def expand(text: str, env: Mapping[str, str]) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : close]
                out.append(env.get(name, f"$({name})"))
                i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)
