"""Is a config's figure different from the baseline's, over the seeds? Welch's t-test.

compare runs every (config, seed); each figure then has one value per seed and config.
Two configs differ on a figure when Welch's unequal-variance t-test over those per-seed
values rejects equal means at ``ALPHA`` (two-sided). Why Welch's t: the seeds of one
config are independent draws of the workload's randomness, the two configs need not
share a variance, and it is the test benchmark suites use for a handful of repetitions.
Mann-Whitney's exact test cannot reject anything at 5 % with fewer than 4 seeds a side.

Edge cases, decided here once:

- fewer than two values on either side: no test is possible; never marked;
- both sides without spread (every seed gave the same value, e.g. a count that does not
  depend on the seed): the means differ or they do not, exactly (p = 0 or 1);
- one side without spread: Welch's statistic still holds (the other side's variance).

The Student t distribution function is the regularized incomplete beta function,
evaluated by its continued fraction (Numerical Recipes' ``betacf``, Lentz's method):
no scipy needed for a few dozen tests per compare.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ALPHA", "TEST_NAME", "Welch", "student_t_sf", "welch_t_test"]

#: Significance level of a marked difference (two-sided).
ALPHA = 0.05
#: What compare.json and compare.html name as the test.
TEST_NAME = "Welch's t-test over per-seed values, two-sided, alpha 0.05"
#: Iterations and tolerance of the continued fraction.
_MAX_ITER = 300
_EPS = 3e-16
_TINY = 1e-300


@dataclass(frozen=True, slots=True)
class Welch:
    """One test's outcome: statistic, Welch-Satterthwaite degrees of freedom, p-value."""

    t: float
    df: float
    p: float

    @property
    def significant(self) -> bool:
        return self.p < ALPHA


def _betacf(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITER + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_sf(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (two-sided)."""
    if math.isinf(t):
        return 0.0
    return _betainc(df / 2.0, 0.5, df / (df + t * t))


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    return mean, sum((v - mean) ** 2 for v in values) / (n - 1)


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> Welch | None:
    """Welch's two-sided t-test of equal means; None when either side has < 2 values."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, va = _mean_var(a)
    mb, vb = _mean_var(b)
    se2 = va / len(a) + vb / len(b)
    if se2 == 0.0:
        return Welch(0.0, math.inf, 1.0) if ma == mb else Welch(math.inf, math.inf, 0.0)
    t = (mb - ma) / math.sqrt(se2)
    df = se2**2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    return Welch(t, df, student_t_sf(t, df))
