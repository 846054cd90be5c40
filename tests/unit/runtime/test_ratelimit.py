from kubetrain.kube.backoff import Backoff
from kubetrain.runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_bucket_burst_then_paced_reservations() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    # Further callers are told to wait 0.1 s, 0.2 s, ... (they queue up in time).
    assert bucket.reserve() == 0.1
    assert abs(bucket.reserve() - 0.2) < 1e-9


def test_bucket_refills_over_time_up_to_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=2, burst=2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    clock.now = 100.0
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == 0.0
    assert bucket.reserve() > 0


def test_allow_never_borrows() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1, burst=1, clock=clock)
    assert bucket.allow()
    assert not bucket.allow()
    assert not bucket.allow()
    clock.now = 1.0
    assert bucket.allow()


def test_unlimited_bucket() -> None:
    bucket = TokenBucket(qps=0, burst=1)
    assert all(bucket.reserve() == 0 for _ in range(1000))
    assert bucket.allow()


def test_item_exponential_backoff_and_forget() -> None:
    rl = ItemExponentialRateLimiter(0.005, 1.0)
    assert [rl.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert rl.num_requeues("a") == 4
    assert rl.when("b") == 0.005  # per key
    for _ in range(100):
        last = rl.when("a")
    assert last == 1.0
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005


def test_max_of_limiters_takes_longest_delay() -> None:
    clock = FakeClock()
    rl = MaxOfRateLimiter(
        ItemExponentialRateLimiter(0.005, 1000), BucketRateLimiter(TokenBucket(1, 1, clock))
    )
    assert rl.when("a") == 0.005
    assert rl.when("b") == 1.0  # bucket exhausted: overall limit dominates
    rl.forget("a")
    assert rl.num_requeues("a") == 0


def test_default_controller_rate_limiter_shape() -> None:
    rl = default_controller_rate_limiter()
    assert rl.when("x") == 0.005
    assert rl.when("x") == 0.01


def test_backoff_grows_caps_and_resets() -> None:
    b = Backoff(base=1.0, cap=8.0, jitter=0.0)
    assert [b.next() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    b.reset()
    assert b.next() == 1.0
    j = Backoff(base=1.0, cap=8.0, jitter=0.5)
    assert all(0.5 <= j.next() <= 1.0 for _ in range(1)) and j.attempt == 1
