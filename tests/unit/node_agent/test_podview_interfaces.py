"""The pod-view shim shows a pod `lo` and `eth0`, eth0 with the pod IP (getifaddrs and the
SIOCGIF* ioctls OpenMPI reads), so `btl_tcp_if_exclude=lo,docker0` keeps the pod's address."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubetrain.embedded.node.podview import build_podview

PROBE = r"""
import array, ctypes, fcntl, socket, struct
class sockaddr(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("data", ctypes.c_ubyte * 14)]
class ifaddrs(ctypes.Structure):
    pass
ifaddrs._fields_ = [("next", ctypes.POINTER(ifaddrs)), ("name", ctypes.c_char_p), ("flags", ctypes.c_uint),
    ("addr", ctypes.POINTER(sockaddr)), ("netmask", ctypes.POINTER(sockaddr)),
    ("broadaddr", ctypes.POINTER(sockaddr)), ("data", ctypes.c_void_p)]
libc = ctypes.CDLL(None)
head = ctypes.POINTER(ifaddrs)()
assert libc.getifaddrs(ctypes.byref(head)) == 0
v4, names, a = [], set(), head
while a:
    e = a.contents
    names.add(e.name.decode())
    if e.addr and e.addr.contents.family == socket.AF_INET:
        v4.append((e.name.decode(), socket.inet_ntoa(bytes(e.addr.contents.data[2:6])),
                   socket.inet_ntoa(bytes(e.netmask.contents.data[2:6]))))
    a = e.next
libc.freeifaddrs(head)
s = socket.socket()
buf = array.array("B", bytes(40 * 16))
n = struct.unpack("iL", fcntl.ioctl(s.fileno(), 0x8912, struct.pack("iL", len(buf), buf.buffer_info()[0])))[0]
raw = buf.tobytes()[:n]
conf = [(raw[i:i + 16].split(b"\0")[0].decode(), socket.inet_ntoa(raw[i + 20:i + 24]))
        for i in range(0, n, 40)]
addr = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("16s24x", b"eth0"))[20:24])
flags = struct.unpack("H", fcntl.ioctl(s.fileno(), 0x8913, struct.pack("16s24x", b"eth0"))[16:18])[0]
index = struct.unpack("i", fcntl.ioctl(s.fileno(), 0x8933, struct.pack("16s24x", b"eth0"))[16:20])[0]
print(repr((sorted(names), sorted(v4), conf, addr, flags & 1, index > 0)))
"""
POD = {"KUBETRAIN_POD_IP": "127.245.0.7", "KUBETRAIN_POD_CIDR": "127.245.0.0/16"}
EXPECTED = (
    ["eth0", "lo"],
    [("eth0", "127.245.0.7", "255.255.0.0"), ("lo", "127.0.0.1", "255.0.0.0")],
    [("lo", "127.0.0.1"), ("eth0", "127.245.0.7")],
    "127.245.0.7",
    1,
    True,
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (shutil.which("cc") or shutil.which("gcc")):
        if os.environ.get("CI") == "true":  # scripts/install-system-deps installs gcc
            pytest.fail("CI=true: no C compiler to build the pod view", pytrace=False)
        pytest.skip("no C compiler")
    return build_podview(tmp_path_factory.mktemp("cache"))


def _probe(library: Path, tmp_path: Path, netns: bool = False) -> object:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    argv = [sys.executable, str(script)]
    if netns:  # a network namespace with only lo, as on a machine without a network
        argv = [
            "unshare",
            "-n",
            "sh",
            "-c",
            f'ip link set lo up 2>/dev/null; exec "{sys.executable}" "{script}"',
        ]
    env = {**os.environ, **POD, "LD_PRELOAD": str(library)}
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return ast.literal_eval(result.stdout.strip())


def test_a_pod_sees_lo_and_eth0_with_its_address(library: Path, tmp_path: Path) -> None:
    assert _probe(library, tmp_path) == EXPECTED


def test_a_machine_with_loopback_only_still_gives_pods_an_eth0(library: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a network namespace with only lo")
    # Not a missing dependency but a missing privilege (a container without CAP_SYS_ADMIN), so it
    # skips under CI=true too; the lo + eth0 view itself is tested above on every machine.
    if subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10).returncode != 0:
        pytest.skip("unshare -n is not permitted here")
    assert _probe(library, tmp_path, netns=True) == EXPECTED
