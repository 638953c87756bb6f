"""Dispatch by measured cost: the compiled path on the replica, or the shards' reductions.

The rule compares the rate each side can sustain, not the coordinator's CPU alone. A
pod's attempt costs, in CPU per pod (µs), with W the window (numFeasibleNodesToFind
rows) and S the shards:

- on the replica: the coordinator ``replica_us + replica_row_us * W`` (the compiled
  path evaluates the whole window there);
- through the shards' reductions: the coordinator ``coordinator_us + coordinator_row_us
  * W + per_shard_us * S`` (prediction, the shared payload, merging the reductions,
  the changed rows rescored: what grows with W is the tie bits and the rows corrected),
  and each shard ``shard_us + shard_row_us * W / S`` (its share of the window);
- beside them Redis, Ray's daemons and the binding tasks' workers: ``replica_rest_us``
  on the replica path, ``shard_rest_us`` through the shards (their calls and the
  pipeline's queue peeks cost Ray's daemons and Redis more);
- the coordinator's time per pod off its CPU: ``wait_us`` on either side (its loop's
  Redis round trips, being descheduled on shared cores) and, through the shards,
  ``shard_wait_us`` waiting for their replies.

The coordinator is serial and so is each shard; everything shares ``cores`` (the host's,
when the shards are Ray actors on it). So a side's time per pod is the largest of its
serial parts and its total CPU over the cores:

    replica:  max(R + wait, (R + replica_rest) / cores)
    shards:   max(C + wait + shard_wait, H, (C + S*H + shard_rest) / cores)

(R, C, H: the parts above) and a batch goes to the shards when theirs is the shorter
(the higher rate). This is also the reduced protocol's scaling model
(``benchmarks/scaling_model.py`` prints its table from these constants): one model,
fitted once. The waits are new (issue 22, stop 33): since a shard answers a window from
cached row scores (``window.py``) it costs 80-220 µs per pod where it cost ~1 ms at
1,000,000 nodes, so the coordinator, not a shard, bounds the rate through the shards,
and its time off the CPU decides it. In-process shards (``shards_apart`` False) run in
the coordinator's thread, so nothing overlaps: auto keeps their attempts on the replica
(they exist to check the protocol; the parts were measured with Ray actors).

Constants: this 2-core machine's full runs at two sizes, 100,000 nodes / 10,000 pods
(W = 5,000) and 1,000,000 nodes / 30,000 pods (W = 50,000), SchedulingBasic's 3-zone
shape, each process's CPU per pod over the scheduling window, in-process, with 1 and 2
forced Ray shards and with 2 Ray shards on the replica:
``PYTHONPATH=. .venv/bin/python benchmarks/scaling_model.py --nodes N --pods P --save PN``
at both sizes, then ``--parts P100K P1M --per-shard-us B`` (``dispatch_bench.fit_rule``,
shared with ``dispatch_bench.py fit``; issue 22, stop 33, on the code with cached row
scores):

- ``replica_us``, ``replica_row_us``: the coordinator with 2 Ray shards and every
  attempt on the replica (``--shard-dispatch replica``), a line in W through the sizes
  (100,000 nodes: 337 and 375 µs per pod, 2 runs; 1,000,000: 1,854, 1 run);
- ``coordinator_us``, ``coordinator_row_us``: the coordinator with 1 and 2 forced Ray
  shards less ``per_shard_us * S``, a least-squares line in W (100,000 nodes: 365-417
  µs; 1,000,000: 531-685, 1 shard 3 runs); ``per_shard_us``: ``benchmarks/shard_protocol_bench.py
  --nodes 20000 --attempt-pods 1280`` (the coordinator's CPU per pod at 1, 2 and 3
  shards, least squares: 14.3, 17.8 and 4.5 µs in three runs at load 2-5, the mean);
- ``shard_us``, ``shard_row_us``: each shard's CPU per pod, a least-squares line in
  W / S (79-92 µs at 100,000 nodes, 1 or 2 shards; 145-218 with 1 shard and 102 with 2
  at 1,000,000): 2 ns per row of its share of the window, the scan of its cached row
  scores, where it was 18 ns per row before they were cached;
- ``replica_rest_us``, ``shard_rest_us``: Redis + Ray's daemons + binding workers per
  pod over each side's runs;
- ``wait_us``: 1 / pods/s less the coordinator's CPU per pod in the replica runs (the
  median: 85-90 µs alone, 253 in a run other jobs shared); ``shard_wait_us``: the
  coordinator's wait for the shards' replies (``shard_wait_us_per_pod``), the mean over
  the forced runs (23-96 µs).

So with 2 shards on 2 cores the shards take windows from about 9,000 rows (180,000
nodes; 18,000 before row scores were cached): 100,000 nodes stay on the replica
(predicted 2,243 pods/s there against 1,786 through the shards), 1,000,000 go to the
shards (1,350 against 515). ``mode`` forces one side ("shards", "replica").
``summary.json``'s ``shard_speculation`` counts where the attempts went:
``reduced_attempts`` (answered by the shards), ``dispatched_to_replica`` (attempts of
batches the rule kept on the replica).

The relay (``--shard-relay auto|on|off``, ``workers/ray_relay.py``): with S Ray shards
the coordinator makes one Ray call per shard per chunk of 64 pods, ~360 µs of its
process's CPU each (Ray's submission, the reply, its client threads): that is most of
``per_shard_us``. Through the relay it makes one call per chunk whatever S, carrying
every shard's deltas; the relay calls the shards and returns their replies as one. The
coordinator then pays ``relay_call_us + relay_per_shard_us * S`` instead of
``per_shard_us * S`` (the decode and column merge of each shard's reply, its deltas),
and the relay is one more serial part, ``relay_us + relay_shard_us * S`` of its own
process's CPU per pod, whose CPU shares the cores (``shard_time_us``). The relay moves
Ray's per-call cost off the coordinator; it does not remove it, and it adds a hop. So
``auto`` starts a relay from RELAY_FROM_SHARDS shards (below that the saving is at most
one call per chunk, within the noise of the measurement) and sends a batch through it
when the model predicts the shorter time per pod (``relay_pays``): where the coordinator
is the bound and the cores have room. The constants: ``benchmarks/shard_protocol_bench.py
--nodes 20000 --attempt-pods 1280``, relay coordinators at 1-3 shards interleaved with
the direct ones, least squares per round, the median over the rounds (figures in the
README; 9 rounds, 6 of 1,280 pods and 3 of 3,840): ``relay_per_shard_us`` (1.3 µs, range
-11 to 19; the direct protocol's 5.0 in the same rounds, range -2 to 15; the calls alone,
``--calls 200``, 1.2-2.0 against 9.3-11.0) and ``relay_call_us`` (the relay's intercept
less the direct protocol's, median -10 µs: 0) from the coordinator's process CPU per pod,
``relay_us`` and ``relay_shard_us`` from the relay process's CPU per pod less its idle
rate (Ray's threads, ~8 ms/s) while the other coordinators ran (26.0 + 10.6 µs/shard,
6 rounds).
``summary.json``'s ``shard_speculation.reduced_relayed_payloads`` counts the chunks
that went through the relay (0: it was not used).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["DISPATCH_MODES", "RELAY_FROM_SHARDS", "RELAY_MODES", "DispatchRule"]

DISPATCH_MODES = ("auto", "shards", "replica")
#: ``--shard-relay``: the reduced protocol's chunks through one relay actor (``workers.ray_relay``)
RELAY_MODES = ("auto", "on", "off")
#: auto's rule: the relay from this many Ray shards (module docstring, The relay)
RELAY_FROM_SHARDS = 3


def _host_cores() -> float:
    return float(os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class DispatchRule:
    mode: str = "auto"
    #: the coordinator's CPU per pod on the replica path, and per window row (µs)
    replica_us: float = 189.6
    replica_row_us: float = 0.03328
    #: the coordinator's CPU per pod through the shards' reductions, per window row, and
    #: per shard (µs)
    coordinator_us: float = 360.3
    coordinator_row_us: float = 0.00402
    per_shard_us: float = 12.2
    #: each shard's CPU per pod, and per row of its share of the window (µs)
    shard_us: float = 72.6
    shard_row_us: float = 0.001989
    #: Redis, Ray's daemons and binding workers per pod, on each side (µs)
    replica_rest_us: float = 352.6
    shard_rest_us: float = 320.3
    #: the coordinator's time per pod off its CPU on either side (its loop's Redis round
    #: trips, descheduled by the others), and waiting for the shards' replies (µs)
    wait_us: float = 89.8
    shard_wait_us: float = 65.2
    #: cores the coordinator, the shards and the rest share (this host's)
    cores: float = field(default_factory=_host_cores)
    #: the shards run in processes of their own (Ray actors), not in the coordinator's
    shards_apart: bool = True
    #: the share of a batch given to the shards whose first pods take the compiled path
    #: on the replica instead, while the shards evaluate the others (one call per shard
    #: per batch: the coordinator would otherwise wait for the whole batch's answers)
    lead: float = 0.125
    #: the next batch sent to the shards while this one is committed (``pipeline``)
    pipeline: bool = True
    #: the shard relay: "auto" (``use_relay``), "on", "off"
    relay: str = "auto"
    #: through the relay, the coordinator's CPU per pod for the relay's one call, and per
    #: shard (µs); the relay's own CPU per pod, and per shard (µs: its serial bound)
    relay_call_us: float = 0.0
    relay_per_shard_us: float = 1.3
    relay_us: float = 26.0
    relay_shard_us: float = 10.6

    def __post_init__(self) -> None:
        if self.mode not in DISPATCH_MODES:
            raise ValueError(f"shard dispatch mode {self.mode!r}: one of {DISPATCH_MODES}")
        if self.relay not in RELAY_MODES:
            raise ValueError(f"shard relay {self.relay!r}: one of {RELAY_MODES}")

    def use_relay(self, shards: int) -> bool:
        """Whether ``shards`` Ray shards get a relay (module docstring, The relay)."""
        if self.relay != "auto":
            return self.relay == "on"
        return shards >= RELAY_FROM_SHARDS

    def relay_pays(self, width: int, shards: int) -> bool:
        """Whether a batch with windows of ``width`` rows goes through the relay: forced,
        or (auto) from RELAY_FROM_SHARDS shards when the model predicts the shorter time
        per pod through it on the rule's cores (module docstring, The relay)."""
        if self.relay != "auto":
            return self.relay == "on"
        return shards >= RELAY_FROM_SHARDS and self.shard_time_us(
            width, shards, relay=True
        ) < self.shard_time_us(width, shards, relay=False)

    def replica_time_us(self, width: int) -> float:
        """Time per pod on the replica path (module docstring)."""
        coordinator = self.replica_us + self.replica_row_us * width
        return max(coordinator + self.wait_us, (coordinator + self.replica_rest_us) / self.cores)

    def shard_parts_us(self, width: int, shards: int, relay: bool = False) -> tuple[float, float]:
        """The coordinator's and each shard's CPU per pod through the shards' reductions
        (module docstring); ``relay``: through the relay."""
        base = self.coordinator_us + self.coordinator_row_us * width
        if relay:
            coordinator = base + self.relay_call_us + self.relay_per_shard_us * shards
        else:
            coordinator = base + self.per_shard_us * shards
        return coordinator, self.shard_us + self.shard_row_us * width / max(1, shards)

    def relay_time_us(self, shards: int, relay: bool = True) -> float:
        """The relay's CPU per pod, its serial bound (0 without the relay)."""
        if not relay:
            return 0.0
        return self.relay_us + self.relay_shard_us * shards

    def serial_bound_us(self, width: int, shards: int, relay: bool = False) -> float:
        """The coordinator's time per pod through the shards: its CPU and its waits
        (``1e6 /`` this is its serial bound in pods/s)."""
        coordinator = self.shard_parts_us(width, shards, relay)[0]
        return coordinator + self.wait_us + self.shard_wait_us

    def shard_time_us(
        self, width: int, shards: int, cores: float | None = None, relay: bool = False
    ) -> float:
        """Time per pod through the shards' reductions (module docstring), on ``cores``
        (default: the rule's); ``relay`` as ``shard_parts_us``: the relay is one more
        serial part, and its CPU shares the cores."""
        coordinator, shard = self.shard_parts_us(width, shards, relay)
        hop = self.relay_time_us(shards, relay)
        total = coordinator + shards * shard + hop + self.shard_rest_us
        serial = max(self.serial_bound_us(width, shards, relay), shard, hop)
        return max(serial, total / (cores or self.cores))

    def leading(self, pods: int) -> int:
        """How many of a batch's ``pods`` given to the shards the replica takes first."""
        return int(pods * self.lead)

    def use_shards(self, width: int, shards: int, batch: int) -> bool:
        """Whether a batch of ``batch`` pods with windows of ``width`` rows goes to the
        ``shards`` (module docstring; a lone pod has nothing to overlap with)."""
        if self.mode != "auto":
            return self.mode == "shards"
        return (
            self.shards_apart
            and batch > 1
            and self.shard_time_us(width, shards, relay=self.relay_pays(width, shards))
            < self.replica_time_us(width)
        )
