"""A line cut into partial records stays whole when read (kubetrain/embedded/node/logs.py).

The node writes a stream's line longer than MAX_LINE (or its unterminated last bytes) as `P`
records; the other stream's records may come in between. Read as written, the other stream's
line landed inside the cut one (`AAA` + `err` on one line, `BBB` on the next), and `kubetrain
run` printed both halves under the replica's prefix as if they were lines.
"""

from __future__ import annotations

from pathlib import Path

from kubetrain.embedded.apiserver import LogOptions
from kubetrain.embedded.node.logs import LogFile, read_log

RECORDS = [
    b"2026-12-02T07:00:00.000000001Z stdout P AAA",
    b"2026-12-02T07:00:00.000000002Z stderr F err",
    b"2026-12-02T07:00:00.000000003Z stdout P BBB",
    b"2026-12-02T07:00:00.000000004Z stdout F CCC",
    b"2026-12-02T07:00:00.000000005Z stderr P tail-without-newline",
]


async def read(path: Path, **options: object) -> bytes:
    log = LogFile(path, done=True)
    return b"".join([chunk async for chunk in read_log(log, LogOptions(**options))])  # type: ignore[arg-type]


async def test_partial_records_are_joined_per_stream(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"\n".join(RECORDS) + b"\n")
    assert await read(path) == b"err\nAAABBBCCC\ntail-without-newline"


async def test_with_timestamps_a_joined_line_carries_its_first_records_time(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"\n".join(RECORDS[:4]) + b"\n")
    assert await read(path, timestamps=True) == (
        b"2026-12-02T07:00:00.000000002Z err\n2026-12-02T07:00:00.000000001Z AAABBBCCC\n"
    )
