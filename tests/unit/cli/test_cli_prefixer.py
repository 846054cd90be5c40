"""The log prefixer: aligned labels, one stable colour per replica, container suffixes."""

from __future__ import annotations

from kubetrain.cli.prefixer import PALETTE, Prefixer, container_label


def test_labels_are_padded_to_the_widest() -> None:
    p = Prefixer(["master-0", "worker-10"])
    assert p.plain("master-0", "hello") == "master-0  | hello"
    assert p.plain("worker-10", "hi") == "worker-10 | hi"


def test_width_grows_with_new_labels() -> None:
    p = Prefixer()
    assert p.plain("a", "x") == "a | x"
    assert p.plain("worker-1", "y") == "worker-1 | y"
    assert p.plain("a", "z") == "a        | z"


def test_colour_is_stable_per_label_and_assigned_in_order() -> None:
    p = Prefixer(["master-0", "worker-0"])
    assert p.colour("master-0") == PALETTE[0]
    assert p.colour("worker-0") == PALETTE[1]
    assert p.colour("worker-1") == PALETTE[2]
    assert p.colour("master-0") == PALETTE[0]


def test_palette_wraps_around() -> None:
    p = Prefixer([f"w-{i}" for i in range(len(PALETTE) + 1)])
    assert p.colour(f"w-{len(PALETTE)}") == PALETTE[0]


def test_text_keeps_the_line_literal() -> None:
    text = Prefixer(["worker-1"]).text("worker-1", "[bold]not markup[/bold]")
    assert text.plain == "worker-1 | [bold]not markup[/bold]"
    assert [(s.start, s.end, s.style) for s in text.spans] == [(0, len("worker-1 | "), PALETTE[0])]


def test_container_labels() -> None:
    assert container_label("worker-1", "pytorch", "pytorch") == "worker-1"
    assert container_label("worker-1", "sidecar", "pytorch") == "worker-1/sidecar"
    assert container_label("master-0", "init-pytorch", "pytorch", init=True) == "master-0/init-pytorch"
    assert container_label("worker-0", "anything", None) == "worker-0"
