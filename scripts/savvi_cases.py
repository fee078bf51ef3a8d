"""The cases canary-core's comparison evidence is checked against
(functions/canary-core/tests/statistics_vs_savvi.rs): sequences of periods and what the
references say of them. `python scripts/savvi_cases.py > functions/canary-core/tests/fixtures/savvi_cases.json`
writes the fixture; tests/e2e/test_statistics_against_savvi.py runs this again with the pinned
packages and fails when the fixture is not what they say.

- `signs`: a value metric's evidence after `periods` periods of which `beyond` had the canary
  beyond the allowed band, taken in a check at a time (`checks`, each a [beyond, not beyond]
  count): the log of savvi's `Multinomial` odds (Lindon & Malek 2022) against θ₀ = [½, ½] with
  its Dirichlet prior k·θ₀, k = 2.
- `counts`: an error-rate metric's evidence after a sequence of periods, each (the canary's
  errors, both clusters' errors, the canary's share of them under "no regression", lower): the
  log of the mean, over the canary error rates 1.25 to 10 times the share allows, of each
  bet's wealth: the product over periods of 1 + STAKE × (min(ratio^(1/φ), PERIOD_RATIO_CAP) − 1),
  each ratio a binomial likelihood ratio from scipy's `binom.logpmf`, φ the dispersion the
  periods before showed (the Pearson residuals' variance and lag-1 autocorrelation from their
  differences, as canary_core::analysis::dependence::Deltas computes them, the variance's
  excess over Poisson's scaled to the period's count; written again here).
"""

import json
import os
import sys

os.environ.setdefault("MPLBACKEND", "Agg")  # savvi imports matplotlib's pyplot; no display here

import numpy as np
from savvi.multinomial import Multinomial
from scipy.stats import binom

RATE_MULTIPLES = [1.25, 1.5, 2.0, 3.0, 5.0, 10.0]
# canary_core::analysis::statistics::{PERIOD_RATIO_CAP, STAKE}
PERIOD_RATIO_CAP = 4.0
STAKE = 0.8
# canary_core::analysis::dependence::{MIN_PERIODS_TO_ESTIMATE, MAX_AUTOCORRELATION,
# COUNTS_MARGIN, DIFFERENCE_BOUND} and statistics' PRIOR_PERIODS.
MIN_PERIODS_TO_ESTIMATE = 5
MAX_AUTOCORRELATION = 0.95
COUNTS_MARGIN = 1.0
DIFFERENCE_BOUND = 3.0
PRIOR_PERIODS = 3.0


def bounded_squares(residuals, lag):
    """The sum of the squared differences at `lag`, each bounded to DIFFERENCE_BOUND times the
    typical difference so far (at least Poisson's, a mean square of 2)."""
    total, seen = 0.0, 0
    for t in range(lag, len(residuals)):
        scale = max(total / seen, 2.0) if seen else 2.0
        bound = DIFFERENCE_BOUND * np.sqrt(scale)
        difference = min(max(residuals[t] - residuals[t - lag], -bound), bound)
        total += difference * difference
        seen += 1
    return total


def dispersion(residuals, poissons, poisson):
    """How much more a period's count spreads than Poisson errors would (at least 1), from the
    residuals so far (their differences at lags 1 and 2, canary_core::analysis::dependence::
    Deltas), their variance's excess over 1 (the drift's) scaled to this period's Poisson
    variance `poisson` from the mean of theirs (`poissons`), as Counts::dispersion does."""
    n = len(residuals)
    if n < MIN_PERIODS_TO_ESTIMATE:
        return 1.0
    at_1 = bounded_squares(residuals, 1) / (n - 1)
    at_2 = bounded_squares(residuals, 2) / (n - 2)
    raw = at_2 / at_1 - 1 if at_1 > 0 else 0.0
    raw = min(max(raw, -1.0), 1.0)
    rho = raw + (1 + 3 * max(raw, 0.0)) / n + COUNTS_MARGIN * np.sqrt((1 - raw * raw) / n)
    rho = min(max(rho, 0.0), MAX_AUTOCORRELATION)
    variance = at_1 / (2 * (1 - min(max(raw, 0.0), MAX_AUTOCORRELATION)))
    shrunk = (PRIOR_PERIODS + (n - 1) * variance) / (PRIOR_PERIODS + n - 1)
    mean_poisson = sum(poissons) / n
    scale = max(poisson / mean_poisson, 1.0) if mean_poisson > 0 else 1.0
    scaled = 1 + (shrunk - 1) * scale if shrunk > 1 else shrunk
    return max(scaled * (1 + rho) / (1 - rho), 1.0)


def signs_cases():
    rng = np.random.default_rng(20261128)
    yield "nothing yet", []
    yield "one period beyond", [[1, 0]]
    yield "one period not beyond", [[0, 1]]
    yield "13 periods all beyond", [[1, 0]] * 13
    yield "20 periods none beyond", [[0, 1]] * 20
    yield "half and half", [[1, 1]] * 30
    yield "one check of 2,000 periods", [[1100, 900]]
    for n in range(30):
        checks = []
        share = float(rng.choice([0.3, 0.5, 0.5, 0.7, 0.9]))
        for _ in range(int(rng.integers(1, 40))):
            size = int(rng.integers(1, 6))
            beyond = int(rng.binomial(size, share))
            checks.append([beyond, size - beyond])
        yield f"generated {n}: share {share}", checks


def signs_case(name, checks):
    test = Multinomial(alpha=0.01, theta_0=np.array([0.5, 0.5]), k=2)
    for check in checks:
        test.update(np.array(check, dtype=np.int64))
    beyond = sum(c[0] for c in checks)
    periods = sum(c[0] + c[1] for c in checks)
    return {"name": name, "checks": checks, "periods": periods, "beyond": beyond,
            "logEvidence": float(np.log(test.odds))}


def counts_cases():
    rng = np.random.default_rng(20261129)
    yield "nothing yet", []
    yield "errors in the canary's share", [[1, 10, 0.1, False]] * 12
    yield "twice the canary's share", [[2, 11, 0.1, False]] * 12
    yield "every error the canary's", [[5, 5, 0.5, False]] * 4
    yield "no error the canary's, a decrease", [[0, 20, 0.5, True]] * 3
    yield "a burst on the canary counts as one period", [[150, 160, 0.05, False]]
    yield "a burst on the baseline leaves each bet a fifth", [[1, 400, 0.05, False]]
    yield "counts spread far more than Poisson's are tempered", [[30, 100, 0.1, False], [0, 100, 0.1, False]] * 8
    yield "a drift weighs more at a larger share", ([[30, 400, 0.05, False]] * 3 + [[14, 400, 0.05, False]] * 3) * 3 + [[2200, 4000, 0.5, False]] * 4
    for n in range(30):
        periods = []
        lower = bool(n % 4 == 3)
        for _ in range(int(rng.integers(1, 30))):
            share = float(rng.choice([0.01, 0.05, 0.1, 0.25, 0.5, 0.9]))
            truth = share * float(rng.choice([1.0, 1.0, 2.0, 5.0, 0.5]))
            errors = int(rng.poisson(float(rng.choice([0.5, 3, 20, 200]))))
            canary = int(rng.binomial(errors, min(truth, 1.0)))
            periods.append([canary, errors, share, lower])
        yield f"generated {n}", periods


def counts_case(name, periods):
    logs = []
    for multiple in RATE_MULTIPLES:
        total = 0.0
        residuals, poissons = [], []
        for canary, errors, share, lower in periods:
            if errors == 0:
                continue
            odds = 1 / multiple if lower else multiple
            alternative = odds * share / (1 - share + odds * share)
            log_ratio = binom.logpmf(canary, errors, alternative) - binom.logpmf(canary, errors, share)
            poisson = share * (1 - share) * errors
            counted = np.exp(min(log_ratio / dispersion(residuals, poissons, poisson), np.log(PERIOD_RATIO_CAP)))
            total = min(max(total + np.log(1 + STAKE * (counted - 1)), -30.0), 100.0)
            residuals.append((canary - share * errors) / np.sqrt(poisson))
            poissons.append(poisson)
        logs.append(total)
    logs = np.array(logs)
    top = logs.max()
    evidence = float(top + np.log(np.exp(logs - top).sum()) - np.log(len(logs)))
    return {"name": name, "periods": periods, "logEvidence": evidence}


def main():
    fixture = {
        "signs": [signs_case(*c) for c in signs_cases()],
        "counts": [counts_case(*c) for c in counts_cases()],
    }
    json.dump(fixture, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
