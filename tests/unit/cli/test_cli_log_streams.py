"""Which container instances the job log follower streams, so restarts are shown exactly once."""

from __future__ import annotations

from cli_builders import pod

from kubetrain.client.joblogs import streams_to_start


def test_waiting_container_has_no_stream() -> None:
    p = pod("tiny-worker-0", "worker", 0, statuses=[{"name": "pytorch", "state": {"waiting": {}}}])
    assert streams_to_start(p, "tiny") == []


def test_running_then_terminated_is_the_same_instance() -> None:
    running = pod(
        "tiny-worker-0",
        "worker",
        0,
        statuses=[{"name": "pytorch", "containerID": "proc://1", "state": {"running": {"startedAt": "t1"}}}],
    )
    done = pod(
        "tiny-worker-0",
        "worker",
        0,
        statuses=[
            {
                "name": "pytorch",
                "containerID": "proc://1",
                "state": {"terminated": {"exitCode": 0, "startedAt": "t1"}},
            }
        ],
    )
    [(a, prev_a)] = streams_to_start(running, "tiny")
    [(b, prev_b)] = streams_to_start(done, "tiny")
    assert a == b and not prev_a and not prev_b
    assert (a.replica, a.container, a.init) == ("worker-0", "pytorch", False)


def test_restart_gives_a_new_instance_and_the_crashed_one_as_previous() -> None:
    restarted = pod(
        "tiny-worker-1",
        "worker",
        1,
        statuses=[
            {
                "name": "pytorch",
                "restartCount": 1,
                "containerID": "proc://2",
                "state": {"running": {"startedAt": "t2"}},
                "lastState": {"terminated": {"exitCode": 1, "containerID": "proc://1", "startedAt": "t1"}},
            }
        ],
    )
    streams = streams_to_start(restarted, "tiny")
    assert [(s.instance, previous) for s, previous in streams] == [("proc://1", True), ("proc://2", False)]


def test_without_container_ids_start_time_identifies_the_instance() -> None:
    p = pod(
        "tiny-master-0",
        "master",
        0,
        statuses=[{"name": "pytorch", "state": {"running": {"startedAt": "t9"}}}],
    )
    [(s, _)] = streams_to_start(p, "tiny")
    assert s.instance == "t9"


def test_init_containers_are_streamed_and_marked() -> None:
    p = pod(
        "tiny-worker-0",
        "worker",
        0,
        init_statuses=[{"name": "init-pytorch", "state": {"terminated": {"exitCode": 0, "startedAt": "t0"}}}],
    )
    [(s, previous)] = streams_to_start(p, "tiny")
    assert s.init and s.container == "init-pytorch" and not previous
