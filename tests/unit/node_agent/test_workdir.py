"""A pod's own working directory: a view of its job directory (kubetrain/embedded/node/workdir.py)."""

from __future__ import annotations

from pathlib import Path

from kubetrain.embedded.node.workdir import PodWorkdir, kept_directories, pod_directory


def job_directory(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    (job / "data").mkdir(parents=True)
    (job / "train.py").write_text("print('hi')\n")
    (job / "data" / "input.txt").write_text("x\n")
    return job


def test_the_view_shows_the_job_files_and_keeps_new_ones_to_itself(tmp_path: Path) -> None:
    job = job_directory(tmp_path)
    a = PodWorkdir(pod_directory(tmp_path / "pods", "default", "j-worker-0", "aaaaaaaa-1111"))
    b = PodWorkdir(pod_directory(tmp_path / "pods", "default", "j-worker-1", "bbbbbbbb-2222"))
    view_a, view_b = Path(a.view(str(job))), Path(b.view(str(job)))
    assert view_a == tmp_path / "pods" / "default" / "j-worker-0-aaaaaaaa"
    assert (view_a / "train.py").read_text() == "print('hi')\n"
    assert (view_b / "data" / "input.txt").read_text() == "x\n"
    for view, me in ((view_a, "0"), (view_b, "1")):
        (view / "log").mkdir()
        (view / "log" / "workerlog.0").write_text(me)
    assert (view_a / "log" / "workerlog.0").read_text() == "0"
    assert (view_b / "log" / "workerlog.0").read_text() == "1"
    assert sorted(p.name for p in job.iterdir()) == ["data", "train.py"]


def test_a_restarted_pod_keeps_what_it_made(tmp_path: Path) -> None:
    job = job_directory(tmp_path)
    path = pod_directory(tmp_path / "pods", "default", "p", "cccccccc")
    view = Path(PodWorkdir(path).view(str(job)))
    (view / "train.py").unlink()
    (view / "train.py").write_text("the pod's own\n")
    again = PodWorkdir(path)  # a new node process recovering the pod
    assert Path(again.view(str(job))) == view
    assert (view / "train.py").read_text() == "the pod's own\n"


def test_prune_removes_only_views_the_pod_wrote_nothing_into(tmp_path: Path) -> None:
    job = job_directory(tmp_path)
    idle = PodWorkdir(pod_directory(tmp_path / "pods", "ns", "idle", "dddddddd"))
    busy = PodWorkdir(pod_directory(tmp_path / "pods", "ns", "busy", "eeeeeeee"))
    idle.view(str(job))
    (Path(busy.view(str(job))) / "model.pt").write_text("weights")
    idle.prune()
    busy.prune()
    assert not idle.path.exists()
    assert (busy.path / "model.pt").read_text() == "weights"
    assert (job / "train.py").exists() and (job / "data" / "input.txt").exists()
    kept = kept_directories(tmp_path / "pods", "ns", {"dddddddd": "idle", "eeeeeeee": "busy"})
    assert kept == {"busy": [busy.path]}


def test_a_container_running_in_another_directory_gets_a_view_of_that_one(tmp_path: Path) -> None:
    job = job_directory(tmp_path)
    other = tmp_path / "image-workdir"
    other.mkdir()
    (other / "entry.sh").write_text("")
    workdir = PodWorkdir(pod_directory(tmp_path / "pods", "ns", "p", "ffffffff"))
    first, second = Path(workdir.view(str(job))), Path(workdir.view(str(other)))
    assert first != second and second.name.startswith("p-ffffffff-")
    assert (first / "train.py").exists() and (second / "entry.sh").exists()
