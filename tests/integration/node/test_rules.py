"""The pure rules the agent relies on: $(VAR) expansion, mount-path rewriting, the image map."""

from __future__ import annotations

import sys

import pytest

from kubetrain.embedded.node.errors import StartError
from kubetrain.embedded.node.expand import expand
from kubetrain.embedded.node.images import ImageMap
from kubetrain.embedded.node.paths import PathMap


@pytest.mark.parametrize(
    ("text", "out"),
    [
        ("$(A)-$(B)", "1-$(B)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$1"),
        ("$A $", "$A $"),
        ("x$(A", "x$(A"),
        ("$()", "$()"),
    ],
)
def test_expansion_follows_kubelet_rules(text: str, out: str) -> None:
    assert expand(text, {"A": "1"}) == out


def test_mount_paths_are_rewritten_as_whole_prefixes_longest_first() -> None:
    paths = PathMap([("/etc/mpi", "/sb/v/mpi"), ("/data", "/sb/v/data"), ("/data/cache", "/sb/v/cache")])
    assert paths.translate("--hostfile=/etc/mpi/hostfile") == "--hostfile=/sb/v/mpi/hostfile"
    assert paths.translate("/etc/mpix /mnt/data /etc/mpi") == "/etc/mpix /mnt/data /sb/v/mpi"
    assert paths.translate("cp /data/cache/x /data/y") == "cp /sb/v/cache/x /sb/v/data/y"
    assert paths.lookup("/data/cache/z") == "/sb/v/cache/z"
    assert paths.lookup("/elsewhere") is None


def test_image_map_picks_first_matching_entry_and_keeps_python_local() -> None:
    images = ImageMap.parse(
        {
            "images": [
                {"image": "pytorch/*", "python": "/venvs/torch/bin/python", "env": {"OMP_NUM_THREADS": "1"}},
                {"image": "*", "command": ["python", "-m", "app"]},
            ]
        }
    )
    torch_env = images.lookup("pytorch/pytorch:2.3")
    assert torch_env.argv({"command": ["python3", "train.py"]}, "pytorch/pytorch:2.3") == [
        "/venvs/torch/bin/python",
        "train.py",
    ]
    assert torch_env.path == ("/venvs/torch/bin",) and torch_env.env == {"OMP_NUM_THREADS": "1"}
    assert images.lookup("busybox").argv({"args": ["--x"]}, "busybox") == [sys.executable, "-m", "app", "--x"]
    with pytest.raises(StartError):
        ImageMap().lookup("busybox").argv({}, "busybox")
    assert ImageMap.parse({"tf*": "/opt/tf/bin/python"}).lookup("tf:2").python == "/opt/tf/bin/python"
