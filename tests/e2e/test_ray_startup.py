"""Ray shards started and loaded beside the coordinator's own start-up (issue 22): the
actors start while the store is loaded (``ray_shard_clients(wait=False)``) and take in
the listed nodes while the informer goes on listing (``ReducedCalls.preload_listed``).
The placements are the in-process executor's; the listing's preload calls did happen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cluster_sched.scheduler import informer as informer_module
from cluster_sched.scheduler.shards.pipeline import ReducedCalls
from tests.e2e.test_distributed import run


@pytest.fixture(scope="module")
def local_placements(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return run(tmp_path_factory.mktemp("local"), "--executor", "local")


def test_shards_loaded_while_the_informer_lists_give_the_same_placements(
    ray_session: None,
    local_placements: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(informer_module, "LISTING_STEP", 7)  # a step every 7 objects
    sent: list[int] = []
    real = ReducedCalls.preload_listed

    def counted(self: ReducedCalls, *args: Any) -> None:
        real(self, *args)
        sent.append(len(self._listing_calls))

    monkeypatch.setattr(ReducedCalls, "preload_listed", counted)
    placements = run(
        tmp_path, "--executor", "ray", "--shards", "2", "--shard-dispatch", "shards", "--no-report"
    )
    assert placements == local_placements
    assert len(sent) > 1 and sum(sent) > 0, "deltas went to the shards during the listing"
