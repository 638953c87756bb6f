"""The store's Lua scripts document their KEYS, ARGV and return value (the store's
``__all__`` lists are guarded by tests/test_exports.py)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("script", ["apply", "bind", "delete"])
def test_every_script_documents_keys_argv_and_return(script: str) -> None:
    from cluster_sched.store.scripts import script_source

    body = script_source(script).split("\n-- " + script + ".lua", 1)[1]
    for part in ("KEYS[1]", "ARGV[1]", "Returns"):
        assert part in body, f"{script}.lua header lacks {part}"
