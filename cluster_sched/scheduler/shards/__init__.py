"""Node shards: Filter and Score over slices of the node table, in-process or in Ray actors.

``source`` is the coordinator's side (``ShardedSource``: fan-out, merge, dispatch);
``router`` decides what each shard is sent (deltas, rebuilds); ``core`` is a shard's own
logic, the same in-process and inside a Ray actor (``workers/ray_shard.py``);
``prefetch`` asks a popped batch's questions ahead; ``speculation`` says when answers
computed against the batch's starting state are still exact. The reduced protocol:
``merge`` (coordinator: windows predicted, a batch encoded once, reductions merged
exactly), ``reduce`` (a shard's answer per pod), ``replies`` (a chunk's answers as
columns, stacked across shards), ``pipeline`` (every chunk in flight at
once), ``compiled`` (the fused kernel over a shard's rows), ``dispatch`` (the measured
rule that picks shards or the coordinator's replica).
"""
