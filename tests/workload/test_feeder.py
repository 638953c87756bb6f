"""The pod feeder process (issue 23): the same placements as the inline feeder, a bad
pod's one-line error and exit code from the child, and a killed child failing the run
at once instead of leaving it waiting for pods. Real processes, real Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from cluster_sched.store.store import Store
from cluster_sched.testing import make_node, make_pod
from cluster_sched.workload.runner import RunOptions, run_evaluation


def _template(builder: Any) -> dict[str, Any]:
    doc: dict[str, Any] = builder.manifest()
    doc["metadata"].pop("namespace", None)
    return doc


def _workload(path: Path, groups: list[dict[str, Any]], nodes: int = 20) -> Path:
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "feeder"},
        "spec": {
            "nodeGroups": [
                {
                    "count": nodes,
                    "template": _template(make_node("n").capacity(cpu="8", pods=110)),
                    "labels": {"zone": ["a", "b", "c"]},
                }
            ],
            "podGroups": groups,
        },
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _run(path: Path, redis_url: str, feeder: str) -> dict[str, str]:
    result = run_evaluation(
        RunOptions(str(path), seed=7, quiet=True, redis=redis_url, feeder=feeder, batch_size=16)
    )
    return result.placements


def test_the_feeder_process_gives_the_inline_placements(tmp_path: Path, redis_url: str) -> None:
    """Every pod fits and each group waits for the last: the queue's order is the
    creation order either way (one writer, one stream), so the serial decisions, tie
    draws included, are the same pod by pod, whenever each pod arrived."""
    small = _template(make_pod("small").req(cpu="100m"))
    big = _template(make_pod("big").req(cpu="1500m"))
    groups = [
        {"name": "first", "count": 300, "template": small},
        {"name": "second", "count": 50, "template": big, "labels": {"app": ["x", "y"]}},
        {"name": "third", "count": 400, "template": _template(make_pod("late").req(cpu="50m"))},
    ]
    path = _workload(tmp_path / "w.yaml", groups)
    inline = _run(path, redis_url, "inline")
    process = _run(path, redis_url, "process")
    assert len(inline) == 750
    assert process == inline


def _cli(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cluster_sched.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_bad_pod_fails_the_run_with_the_inline_error(tmp_path: Path, redis_url: str) -> None:
    """Only the store's admission finds the pod bad (its PriorityClass does not exist):
    the child's error comes back as the same one line and exit code 2."""
    bad = _template(make_pod("bad").req(cpu="100m"))
    bad["spec"]["priorityClassName"] = "nope"
    groups = [
        {"name": "good", "count": 50, "template": _template(make_pod("ok").req(cpu="100m"))},
        {"name": "bad", "count": 5, "template": bad},
    ]
    path = str(_workload(tmp_path / "w.yaml", groups))
    runs = {
        f: _cli(["run", path, "--quiet", "--redis", redis_url, "--feeder", f])
        for f in ("inline", "process")
    }
    for feeder, done in runs.items():
        assert done.returncode == 2, (feeder, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert lines == [
            "error: Pod default/bad-0: field spec.priorityClassName: "
            "no PriorityClass with name nope was found"
        ], feeder


def _feeder_child(parent: int, deadline: float) -> int:
    """The pid of ``parent``'s feeder process, once it runs."""
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            if ppid == parent and b"cluster_sched.workload.feeder" in cmdline:
                return int(entry)
        time.sleep(0.05)
    raise AssertionError("no feeder process appeared")


def test_a_killed_feeder_fails_the_run_at_once(tmp_path: Path, redis_url: str) -> None:
    """Pods paced at 20 a second keep the child busy for a minute; killed, it leaves a
    clear error (exit 2) within seconds, not a run waiting for the group's timeout."""
    slow = {"name": "slow", "count": 1200, "rate": 20, "template": _template(make_pod("s"))}
    path = str(_workload(tmp_path / "w.yaml", [slow]))
    argv = ["run", path, "--quiet", "--redis", redis_url, "--feeder", "process"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cluster_sched.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        child = _feeder_child(proc.pid, time.monotonic() + 60)
        with Store.from_url(redis_url) as store:
            while store.count("Pod") < 10:  # the child is writing the group
                time.sleep(0.05)
        os.kill(child, signal.SIGKILL)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2
    assert err.strip().splitlines() == [
        f"error: the pod feeder process (pid {child}) exited with code -9 while writing "
        "pod group slow: the workload was not all written"
    ]


def test_a_child_whose_parent_is_gone_exits_without_a_traceback(redis_url: str) -> None:
    """The parent killed (SIGTERM, SIGKILL): the child's reply finds no reader. It used
    to print a BrokenPipeError traceback twice (reply, then its error report)."""
    from cluster_sched.store.codec import pack
    from cluster_sched.workload.feeder import group_message

    child = subprocess.Popen(
        [sys.executable, "-m", "cluster_sched.workload.feeder", redis_url, "gone"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the parent's end of the replies, as when it dies
    child.stdin.write(pack(group_message(docs=[make_pod("p").obj().raw])))
    child.stdin.close()
    try:
        err = child.stderr.read()
        code = child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert err == b""
    assert code == 1
    with Store.from_url(redis_url, "gone") as store:
        assert store.count("Pod") == 1  # the write itself was done


def _stored_nodes(store: Store) -> list[dict[str, Any]]:
    out = []
    for doc in store.list("Node"):
        meta = doc["metadata"]
        for stamped in ("uid", "creationTimestamp"):  # made fresh by each write
            meta.pop(stamped, None)
        out.append(doc)
    return out


def test_the_child_makes_a_workloads_nodes_as_the_parent_would(
    tmp_path: Path, redis_url: str
) -> None:
    """Nodes go to the feeder as ``GeneratedDocs.wire`` (groups as templates, explicit
    manifests as they are), through msgpack as the pipe carries them: the child writes
    the same manifests, in the same order (resourceVersions), as writing the list."""
    import msgpack

    from cluster_sched.workload.feeder import group_message, write_group
    from cluster_sched.workload.spec import load_workload

    path = _workload(tmp_path / "w.yaml", [], nodes=7)
    doc = yaml.safe_load(path.read_text())
    extra = _template(make_node("solo").capacity(cpu="2", pods=10).label("disk", "ssd"))
    doc["spec"]["nodes"] = [extra]
    doc["spec"]["nodeGroups"].append(
        {"count": 3, "template": _template(make_node("big").capacity(cpu="64", pods=110))}
    )
    path.write_text(yaml.safe_dump(doc))
    nodes = load_workload(str(path)).node_docs
    msg = group_message(docs=nodes, chunk=4)
    assert "nodes" in msg and "docs" not in msg  # not a million manifests on the pipe
    wired = msgpack.unpackb(msgpack.packb(msg), raw=False, strict_map_key=False)
    by_child, by_list = Store.from_url(redis_url, "{fa}"), Store.from_url(redis_url, "{fb}")
    assert write_group(by_child, wired, [iter(())])["done"] == len(nodes) == 11
    by_list.apply_many(list(nodes))
    got, want = _stored_nodes(by_child), _stored_nodes(by_list)
    assert [d["metadata"]["name"] for d in got] == [d["metadata"]["name"] for d in want]
    assert got == want
    assert by_child.resource_version() == by_list.resource_version()
