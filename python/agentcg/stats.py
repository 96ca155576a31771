# SPDX-License-Identifier: GPL-2.0-only
"""Repetitions -> median, 95 % interval and a verdict against the baseline.

Every comparison of the project (the simulator's `compare --seeds`, `live
compare --repeat`, `fidelity --repeat`) reduces the repetitions of one metric
under one scheduler to:

- the median of the repetitions;
- a 95 % bootstrap percentile interval of that median (numpy, a fixed seed:
  the same samples give the same interval, byte for byte);
- a verdict against the baseline scheduler (EEVDF): the bootstrap
  distribution of median(candidate) - median(baseline), each side resampled
  independently; when its 95 % interval lies wholly on the good side the
  verdict is "better", wholly on the bad side "worse", else
  "indistinguishable". A difference of medians within REL_MARGIN (1 %) of
  the baseline's median is "indistinguishable" however sure it is: with
  deterministic simulations a 0.2 % shift can be certain and still not
  worth acting on.

Invariants: NaN marks a missing value (a metric that does not apply, a run
that failed) and is dropped before any statistic; fewer than
MIN_VERDICT_SAMPLES (3) on either side give the verdict "n/a" (the
percentile bootstrap of two samples calls any two non-overlapping pairs a
difference), and a metric without a direction (a CPU share) gets "-" (no
verdict). Identical samples (a deterministic simulation whose seeds do not
change the metric) give a zero-width interval, and then any difference of
medians is a verdict, which is the truth for that model.

With 3 repetitions per side the bootstrap can only call a difference when
the two sets of samples barely overlap; more repetitions (`--repeat 5`,
`--seeds 1-5`) tighten it. Who calls it: agentcg.table (the one table
renderer), live.py and fidelity.py.
"""
from __future__ import annotations

import math
TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import List, Optional, Sequence, Tuple

__all__ = ["BOOTSTRAP_RESAMPLES", "CONFIDENCE", "REL_MARGIN", "Summary", "interleaved_order", "summarize", "verdict"]

BOOTSTRAP_RESAMPLES = 4000
REL_MARGIN = 0.01
MIN_VERDICT_SAMPLES = 3
CONFIDENCE = 0.95
_SEED = 20240611  # fixed: the interval is a function of the samples only


class Summary:
    """median and 95 % interval of one metric's repetitions (NaN when none)."""

    __slots__ = ("median", "lo", "hi", "n", "samples")

    def __init__(self, median: float, lo: float, hi: float, n: int, samples: List[float]) -> None:
        self.median = median
        self.lo = lo
        self.hi = hi
        self.n = n
        self.samples = samples

    def __repr__(self) -> str:
        return f"Summary(median={self.median!r}, ci95=({self.lo!r}, {self.hi!r}), n={self.n})"


def _clean(samples: Sequence[Optional[float]]) -> List[float]:
    out = []
    for v in samples:
        if v is None:
            continue
        f = float(v)
        if not math.isnan(f):
            out.append(f)
    return out


def _boot_medians(x: List[float], rng: "object") -> "object":
    import numpy as np

    a = np.asarray(x, dtype=float)
    idx = rng.integers(0, len(a), size=(BOOTSTRAP_RESAMPLES, len(a)))  # type: ignore[attr-defined]
    return np.median(a[idx], axis=1)


def summarize(samples: Sequence[Optional[float]]) -> Summary:
    """Median and 95 % bootstrap interval of the median (NaN when no samples)."""
    x = _clean(samples)
    nan = float("nan")
    if not x:
        return Summary(nan, nan, nan, 0, [])
    if len(x) == 1:
        # one run (`run`, `compare` with one seed): no numpy import, which
        # would cost a one-table command ~45 ms of start-up
        return Summary(x[0], nan, nan, 1, x)
    import numpy as np

    med = float(np.median(x))
    rng = np.random.default_rng(_SEED)
    meds = _boot_medians(x, rng)
    tail = (1.0 - CONFIDENCE) / 2 * 100
    lo, hi = np.percentile(meds, [tail, 100 - tail])
    return Summary(med, float(lo), float(hi), len(x), x)


def verdict(candidate: Sequence[Optional[float]], baseline: Sequence[Optional[float]],
            lower_is_better: Optional[bool]) -> str:
    """'better', 'worse', 'indistinguishable', 'n/a' (too few samples) or '-'
    (the metric has no direction)."""
    if lower_is_better is None:
        return "-"
    a, b = _clean(candidate), _clean(baseline)
    if len(a) < MIN_VERDICT_SAMPLES or len(b) < MIN_VERDICT_SAMPLES:
        return "n/a"
    import numpy as np

    rng = np.random.default_rng(_SEED)
    diff = _boot_medians(a, rng) - _boot_medians(b, rng)  # type: ignore[operator]
    tail = (1.0 - CONFIDENCE) / 2 * 100
    lo, hi = (float(v) for v in np.percentile(diff, [tail, 100 - tail]))
    margin = REL_MARGIN * abs(float(np.median(b)))
    if abs(float(np.median(a)) - float(np.median(b))) <= margin:
        return "indistinguishable"
    if hi < 0:  # the whole interval below zero: the candidate's median is lower
        return "better" if lower_is_better else "worse"
    if lo > 0:
        return "worse" if lower_is_better else "better"
    return "indistinguishable"


def interleaved_order(names: Sequence[str], repeat: int) -> List[Tuple[str, int]]:
    """(name, repetition) in the order A B C, C B A, A B C, ... so that slow
    drift of the host (thermal, other load) falls on every name alike."""
    out: List[Tuple[str, int]] = []
    for r in range(repeat):
        seq = list(names) if r % 2 == 0 else list(reversed(names))
        out.extend((n, r + 1) for n in seq)
    return out
