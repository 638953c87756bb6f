"""CEL device selectors: cost of one evaluation with the library cluster-sched uses
(common-expression-language, Rust cel-interpreter) and, if installed, cel-python.

    .venv/bin/python benchmarks/dra_cel_bench.py [N]

Prints microseconds per evaluation of upstream's idiom
``device.capacity[d].memory.compareTo(quantity("1Gi")) >= 0 && attributes[d].model == "a"``
on fresh devices (no result cache), and per cached lookup.
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction

from cluster_sched.dra import cel as dra_cel
from cluster_sched.dra.objects import Device

EXPR = (
    'device.capacity["d.example.com"].memory.compareTo(quantity("1Gi")) >= 0 && '
    'device.attributes["d.example.com"].model == "a"'
)


def main(n: int) -> None:
    devices = [
        Device(f"dev-{i}", {"d.example.com/model": "a"}, {"d.example.com/memory": Fraction(2**31)})
        for i in range(n)
    ]
    sel = dra_cel.compile_selector(EXPR)
    t0 = time.perf_counter()
    for dev in devices:
        assert dra_cel.device_matches(sel, "d.example.com", dev)
    fresh = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    for dev in devices:
        dra_cel.device_matches(sel, "d.example.com", dev)
    cached = (time.perf_counter() - t0) / n * 1e6
    print(f"common-expression-language: {fresh:.1f} us/eval fresh, {cached:.2f} us cached")
    try:
        import celpy  # type: ignore[import-not-found]
        from celpy import celtypes  # type: ignore[import-not-found]
    except ImportError:
        print("cel-python: not installed")
        return
    env = celpy.Environment()
    # cel-python has no Kubernetes quantity: the same test on plain integers
    prog = env.program(
        env.compile(
            'device.capacity["d.example.com"].memory >= 1073741824 && '
            'device.attributes["d.example.com"].model == "a"'
        )
    )
    s = celtypes.StringType
    t0 = time.perf_counter()
    for _ in devices:
        act = {
            "device": celtypes.MapType({
                s("attributes"): celtypes.MapType({s("d.example.com"): celtypes.MapType({s("model"): s("a")})}),
                s("capacity"): celtypes.MapType({s("d.example.com"): celtypes.MapType({s("memory"): celtypes.IntType(2**31)})}),
            })
        }  # fmt: skip
        prog.evaluate(act)
    print(
        f"cel-python: {(time.perf_counter() - t0) / n * 1e6:.1f} us/eval (integers for quantities)"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
