"""``cluster-sched explain``: one scheduling decision, dry-run, as a document.

``decision`` runs the cycle for one pod and records every extension point's results;
``plugins`` turns per-plugin results into the JSON document; ``table`` renders it for
a terminal.
"""
