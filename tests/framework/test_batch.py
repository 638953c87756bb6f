"""OpportunisticBatch's compatibility conditions (upstream batch_test.go TestBatchBasic,
ported) and pod signatures (upstream SignPod of each plugin)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from cluster_sched.config.load import load_config, parse_config
from cluster_sched.framework.batch import MAX_BATCH_AGE, OpportunisticBatch
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.signature import sign_pod, signature_follows_shape
from cluster_sched.scheduler.profile import new_frameworks
from cluster_sched.testing.builders import make_pod

SIG = (("k", "sig"),)
SIG2 = (("k", "sig2"),)


@dataclass(frozen=True)
class Case:
    first_chosen: str = "n3"
    first_others: tuple[str, ...] | None = ("n1",)
    first_scheduled: bool = True
    second_sig: tuple[tuple[str, str], ...] = SIG
    #: Filter of the second pod on the first pod's node: rejected (1 pod per node)?
    last_node_rejects: bool | None = True
    second_cycle: int = 2
    second_nominated: str = ""
    second_chosen: str = "n1"
    second_others: tuple[str, ...] | None = None
    age: float = 0.0
    want_hint: str = "n1"
    want_left: tuple[str, ...] | None = None
    want_flush: str | None = None


CASES = {
    "a second pod with the same signature gets a hint": Case(),
    "a second pod with a different signature doesn't get a hint": Case(
        second_sig=SIG2, want_hint="", want_flush="pod_incompatible"
    ),
    "a second pod doesn't get a hint if it's not 1-pod-per-node": Case(
        last_node_rejects=False, want_hint="", want_flush="node_not_full"
    ),
    "pod doesn't get hint if previous pod didn't schedule": Case(
        first_scheduled=False, want_hint=""
    ),
    "empty list": Case(first_others=(), second_chosen="n4", want_hint=""),
    "nil list": Case(first_others=None, second_chosen="n4", want_hint=""),
    "pod doesn't get hint because the previous pod is to a different profile": Case(
        second_cycle=3, want_hint="", want_flush="pod_skipped"
    ),
    "pod uses batch from preceding pod and leaves remaining batch to next pod": Case(
        first_others=("n1", "n2"), want_left=("n2",)
    ),
    "a second pod with a nominated node does not get a hint": Case(
        second_nominated="n1", want_hint=""
    ),
    "the list is older than the maximum batch age": Case(
        age=MAX_BATCH_AGE + 0.001, want_hint="", want_flush="expired"
    ),
    "the previous pod's node is gone": Case(
        last_node_rejects=None, want_hint="", want_flush="node_missing"
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_batch_basic(case: Case) -> None:
    seen: list[tuple[str, str, str]] = []
    batch = OpportunisticBatch("p", lambda *a: seen.append(a))
    t0 = 100.0
    hint = batch.get_node_hint(SIG, 1, t0, "", lambda _n: True)
    assert hint == ""
    if case.first_scheduled:
        batch.store_schedule_results(SIG, hint, case.first_chosen, case.first_others, 1, t0)
    asked: list[str] = []

    def rejects(node: str) -> bool | None:
        asked.append(node)
        return case.last_node_rejects

    now = t0 + case.age
    hint = batch.get_node_hint(
        case.second_sig, case.second_cycle, now, case.second_nominated, rejects
    )
    assert hint == case.want_hint
    if asked:
        assert asked == [case.first_chosen]
    batch.store_schedule_results(
        case.second_sig, hint, case.second_chosen, case.second_others, case.second_cycle, now
    )
    left = tuple(batch.state.sorted_nodes) if batch.state is not None else None
    assert (left or None) == case.want_left
    if case.want_hint:
        assert batch.batched_pods == 1 and batch.attempts["hint_used"] == 1
    else:
        assert batch.batched_pods == 0
    flushes = [label for kind, _, label in seen if kind == "flush"]
    if case.want_flush is not None:
        assert case.want_flush in flushes
        assert batch.flushes[case.want_flush] == 1


def test_hint_not_used_replaces_the_list() -> None:
    batch = OpportunisticBatch("p")
    batch.store_schedule_results(SIG, "", "n3", ["n1", "n2"], 1, 0.0)
    assert batch.get_node_hint(SIG, 2, 0.0, "", lambda _n: True) == "n1"
    batch.store_schedule_results(SIG, "n1", "n5", ["n6"], 2, 0.0)
    assert batch.attempts["hint_not_used"] == 1
    assert batch.state is not None and list(batch.state.sorted_nodes) == ["n6"]


# --------------------------------------------------------------------- signatures

_LIST_DEFAULTING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }
    ],
}


def _framework(cfg_doc: dict | None = None):  # type: ignore[no-untyped-def]
    cfg = parse_config(cfg_doc, "<test>") if cfg_doc is not None else load_config(None)
    frameworks = new_frameworks(
        cfg, lambda p: Handle(profile_name=p.scheduler_name, rng=random.Random(0))
    )
    return next(iter(frameworks.values()))


def _pod(name: str):  # type: ignore[no-untyped-def]
    return make_pod(name).req(cpu="1", memory="1Gi").label("app", "web")


def test_identical_pods_share_a_signature_and_differences_split_it() -> None:
    fwk = _framework(_LIST_DEFAULTING)
    a, b = sign_pod(fwk, _pod("a").obj()), sign_pod(fwk, _pod("b").obj())
    assert a is not None and a == b
    assert sign_pod(fwk, _pod("c").req(cpu="2", memory="1Gi").obj()) != a
    assert sign_pod(fwk, _pod("d").tolerate("dedicated", value="infra").obj()) != a
    assert sign_pod(fwk, _pod("e").label("app", "db").obj()) != a


def test_system_default_spreading_makes_every_pod_unsignable() -> None:
    """upstream: PodTopologySpread with default constraints signs no pod."""
    assert sign_pod(_framework(), _pod("a").obj()) is None


@pytest.mark.parametrize(
    "shape",
    ["pod anti-affinity", "topology spread", "persistent volume claim"],
)
def test_unsignable_pods(shape: str) -> None:
    fwk = _framework(_LIST_DEFAULTING)
    b = _pod("x")
    if shape == "pod anti-affinity":
        b = b.pod_anti_affinity("kubernetes.io/hostname", {"app": "web"})
    elif shape == "topology spread":
        b = b.spread(1, "topology.kubernetes.io/zone", match_labels={"app": "web"})
    else:
        b = b.pvc("data")
    assert sign_pod(fwk, b.obj()) is None


def test_record_run_counts_each_event_and_keeps_the_runs_list() -> None:
    """A whole-batch run's bookkeeping at once (``whole_batch_hints``): the counters and
    the metrics hook as if counted one by one, the last pod, and the kept list."""
    seen: list[tuple[str, str, str]] = []
    b = OpportunisticBatch("p", lambda *event: seen.append(event))
    b.store_schedule_results(SIG, "", "n0", ["n1", "n2", "n3"], 1, 0.0)
    b.record_run(
        Counter({"hint_used": 2, "no_hint": 1}), Counter({"node_not_full": 1}), 2, (4, "n2"), 1
    )
    assert b.attempts == Counter({"hint_used": 2, "no_hint": 1})
    assert b.flushes == Counter({"node_not_full": 1}) and b.batched_pods == 2
    assert sorted(seen) == sorted(
        [("attempt", "p", "hint_used")] * 2
        + [("attempt", "p", "no_hint"), ("flush", "p", "node_not_full")]
    )
    assert b.head() == "n2" and b.last is not None and b.last.chosen_node == "n2"
    b.record_run(Counter(), Counter(), 0, (5, "n7"), (SIG2, ["n8", "n9"], 3.0))
    assert b.get_node_hint(SIG2, 6, 3.0, "", lambda node: node == "n7") == "n8"
    b.record_run(Counter(), Counter({"empty_list": 1}), 0, (7, "n8"), None)
    assert b.state is None and b.head() == ""


class _SignsItself:
    """An out-of-tree plugin with its own signer (it may read anything of the pod)."""

    name = "OutOfTree"

    def sign_pod(self, pod: object) -> list[tuple[str, object]]:
        return [("Name", getattr(pod, "name", ""))]


def test_only_in_tree_signers_follow_the_pod_shape() -> None:
    assert signature_follows_shape(_framework(_LIST_DEFAULTING))
    fwk = _framework(_LIST_DEFAULTING)
    custom = SimpleNamespace(
        pre_filter=list(fwk.pre_filter), filter=[*fwk.filter, _SignsItself()],
        pre_score=list(fwk.pre_score), score=list(fwk.score),
    )  # fmt: skip
    assert not signature_follows_shape(custom)
