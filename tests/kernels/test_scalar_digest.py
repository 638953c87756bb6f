"""numba caches each kernel by its own file's stamp; ``kernels.scalar``'s helpers are
compiled into ``kernels.fused``'s kernels, so an edit of scalar.py must change fused.py
too (its SCALAR_DIGEST line), or a stale cached kernel would keep the old arithmetic."""

from __future__ import annotations

import hashlib
from pathlib import Path

from cluster_sched.kernels import fused, scalar


def test_fused_names_the_scalar_helpers_it_was_compiled_with() -> None:
    source = Path(scalar.__file__).read_bytes()
    assert hashlib.sha256(source).hexdigest() == fused.SCALAR_DIGEST, (
        "kernels/scalar.py changed: set fused.SCALAR_DIGEST to its new sha256"
    )
