"""The Mann–Whitney cases canary-core's statistics are checked against
(functions/canary-core/tests/statistics_vs_scipy.rs): generated samples and what scipy says of
them. `python scripts/scipy_cases.py > functions/canary-core/tests/fixtures/scipy_cases.json`
writes the fixture; tests/e2e/test_statistics_against_scipy.py runs this again with the pinned
scipy and fails when the fixture is not what scipy says.

Each case: the canary's and the baseline's samples, scipy's two-sided `mannwhitneyu` (its
default method="auto": exact U distribution when a side has at most 8 samples and no ties) as
`u` and `p`, and the Hodges–Lehmann shift (numpy's median of every canary − baseline
difference). A side with no samples has `u` and `p` null: there is nothing to compare.
"""

import json
import sys

import numpy as np
from scipy.stats import mannwhitneyu


def cases():
    rng = np.random.default_rng(20261127)
    yield "equal samples", [0.2] * 12, [0.2] * 12
    yield "all zeros", [0.0] * 30, [0.0] * 30
    yield "one side empty", [], [1.0, 2.0, 3.0]
    yield "the other side empty", [1.0, 2.0], []
    yield "1 vs 1", [2.0], [1.0]
    yield "1 vs 1,000", [0.5], rng.normal(0.1, 0.02, 1000).round(6).tolist()
    yield "1,000 vs 1", rng.normal(0.1, 0.02, 1000).round(6).tolist(), [0.5]
    yield "3 vs 3 apart", [4.0, 5.0, 6.0], [1.0, 2.0, 3.0]
    yield "ties in small samples", [1.0, 2.0, 2.0, 3.0], [2.0, 2.0, 3.0, 4.0, 4.0]
    yield "mostly zeros with a few errors", [0.0] * 25 + [1.0, 2.0, 1.0], [0.0] * 28
    for n in range(40):
        n1 = int(rng.integers(1, 9)) if n % 4 == 0 else int(rng.integers(2, 80))
        n2 = int(rng.integers(1, 9)) if n % 5 == 0 else int(rng.integers(2, 80))
        shift = float(rng.choice([0.0, 0.0, 0.01, 0.05, 0.2]))
        baseline = rng.lognormal(-2.0, 0.3, n2)
        canary = rng.lognormal(-2.0, 0.3, n1) + shift
        if n % 3 == 0:  # CloudWatch's rounded latencies: many ties
            baseline, canary = baseline.round(2), canary.round(2)
        yield f"generated {n}: {n1} vs {n2}, shift {shift}", canary.round(6).tolist(), baseline.round(6).tolist()


def case(name, canary, baseline):
    if not canary or not baseline:
        u = p = shift = None
    else:
        result = mannwhitneyu(canary, baseline, alternative="two-sided")
        u, p = float(result.statistic), float(result.pvalue)
        shift = float(np.median(np.subtract.outer(canary, baseline)))
    return {"name": name, "canary": canary, "baseline": baseline, "u": u, "p": p, "shift": shift}


def main():
    json.dump([case(*c) for c in cases()], sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
