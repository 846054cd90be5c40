from kubetrain.runtime.expectations import Expectations, child_id


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_unknown_key_is_satisfied() -> None:
    assert Expectations().satisfied("PyTorchJob/ns/a")


def test_creates_and_deletes_must_all_be_observed() -> None:
    e = Expectations()
    e.expect(
        "k",
        adds=[child_id("Pod", "a-worker-0"), child_id("Service", "a-worker-0")],
        deletes=[child_id("Pod", "a-worker-1")],
    )
    assert not e.satisfied("k")
    e.creation_observed("k", "Pod/a-worker-0")
    e.creation_observed("k", "Pod/unrelated")  # other names do not lower
    assert e.pending("k") == (frozenset({"Service/a-worker-0"}), frozenset({"Pod/a-worker-1"}))
    e.creation_observed("k", "Service/a-worker-0")
    assert not e.satisfied("k")
    e.deletion_observed("k", "Pod/a-worker-1")
    assert e.satisfied("k")
    assert len(e) == 0


def test_empty_expect_is_a_noop() -> None:
    e = Expectations()
    e.expect("k")
    assert e.satisfied("k") and len(e) == 0


def test_ttl_expiry_counts_as_satisfied() -> None:
    clock = FakeClock()
    e = Expectations(ttl=300, clock=clock)
    e.expect("k", adds=["Pod/x"])
    clock.now += 100
    assert not e.satisfied("k")
    assert e.remaining_ttl("k") == 200
    clock.now += 200
    assert e.satisfied("k")
    assert e.remaining_ttl("k") == 0


def test_raising_again_restarts_ttl_and_merges() -> None:
    clock = FakeClock()
    e = Expectations(ttl=300, clock=clock)
    e.expect("k", adds=["Pod/x"])
    clock.now += 250
    e.expect("k", adds=["Pod/y"])
    clock.now += 100
    assert not e.satisfied("k")
    assert e.pending("k")[0] == {"Pod/x", "Pod/y"}


def test_delete_forgets_job() -> None:
    e = Expectations()
    e.expect("k", adds=["Pod/x"])
    e.delete("k")
    assert e.satisfied("k")
