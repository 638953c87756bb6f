"""``cluster-sched perf``: upstream scheduler_perf configs, read and run as they are.

:mod:`.config` reads a performance-config.yaml (test cases, workloads, params),
:mod:`.ops` and :mod:`.decode` its ops, :mod:`.objects` the objects they create,
:mod:`.executor` runs a workload through the real scheduler, :mod:`.metrics` turns what
it measured into upstream's data items, :mod:`.command` is the CLI.
"""
