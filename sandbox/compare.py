"""The comparison check on the sandbox (scenarios `compare` and `compare-spike`): the canary's
and the stable target group's ALB response times put every second (sandbox/alb_metrics.py),
and a plan that compares them (`analysis.compare`, periods of 1 s: a sandbox-sized window).

Both sides follow the same 10-second cycle of spread (±10 %), the canary's half a cycle on, so
in any second the canary is as often above the baseline as below it, and never by more than
11 %: a healthy canary is not told from the baseline, whatever the load. `canary_factor` makes
the canary slower (a regression); `load` multiplies both (a spike that hits both clusters at
once). Each second's 100 requests are put as ALB publishes them, a distribution (97 at
0.6 × the second's p99, 3 at its p99), so CloudWatch gives the p99 and counts the requests slower
than `SLOW_SECONDS` (`TC(0.13:)`): none on a healthy side, 3 in 100 on a canary 1.5 times slower.
As in AWS, a target group without traffic (the canary before its first step, the baseline at
100 %) has no datapoint at all (sandbox/alb_metrics.py). The window holds 20 periods: the slow
requests show a 1.5 times slower canary in a few periods, the p99's signs after a dozen or more
(docs/signals/compare.md)."""

BASELINE_SECONDS = 0.1
SPREAD = (1.00, 0.93, 1.05, 0.97, 1.10, 0.95, 1.02, 0.91, 1.07, 0.99)
# An absolute limit on the canary's p99: what a threshold check would say. Every value of these
# scenarios is well under it.
LATENCY_LIMIT_SECONDS = 0.5
LOOKBACK_SECONDS, MIN_SAMPLES = 20, 8
# Slower than every healthy second's p99 (0.1 s × at most 1.10), faster than a 1.5 times slower
# canary's (0.1 s × 0.91 × 1.5).
SLOW_SECONDS = 0.13
REQUESTS = 100
# A step's bake (3 checks 2 s apart) may run on this much longer for want of data: the canary's
# target group publishes from its first step only, one datapoint a second at best (fewer when
# the machine is busy), and minSamples of them take a few seconds more than a bake.
EXTEND_BAKE_SECONDS = 30


class Latencies:
    def __init__(self):
        self.canary_factor = 1.0
        self.load = 1.0

    def __call__(self, second):
        def side(factor, phase):
            spread = SPREAD[(second + phase) % len(SPREAD)]
            p99 = round(BASELINE_SECONDS * self.load * factor * spread, 6)
            return {"RequestCount": REQUESTS, "HTTPCode_Target_5XX_Count": 0,
                    "TargetResponseTime": {"values": [round(0.6 * p99, 6), p99],
                                           "counts": [REQUESTS - 3, 3]}}
        return {"stable": side(1.0, 0), "canary": side(self.canary_factor, len(SPREAD) // 2)}


def slower(distribution, factor):
    """A side's requests `factor` times slower."""
    return {"values": [round(v * factor, 6) for v in distribution["values"]], "counts": distribution["counts"]}


# The comparison's metrics on the sandbox: the p99 per period, the 5xx rate, and the requests
# slower than SLOW_SECONDS (per request).
METRICS = [
    {"name": "p99 latency", "alb": "latency", "stat": "p99", "allowedIncrease": 1.2},
    {"name": "5xx rate", "alb": "errorRate"},
    {"name": "slow requests", "alb": "latency", "slowerThan": SLOW_SECONDS},
]


def analysis(alb):
    """The plan's checks: the stack's alarms, a threshold on the canary's p99 (it never fails
    here), and the comparison of p99 latency and 5xx rate. `alb` is the running AlbMetrics."""
    return {
        "alarms": {"prefixes": ["web-green-"]},
        "failureLimit": 1,
        "extendBakeSeconds": EXTEND_BAKE_SECONDS,
        "metrics": [{
            "name": "canary p99 latency", "namespace": "AWS/ApplicationELB", "metricName": "TargetResponseTime",
            "dimensions": {"LoadBalancer": alb.load_balancer, "TargetGroup": alb.groups["canary"]},
            "stat": "p99", "periodSeconds": 1, "lookbackSeconds": 5, "reduce": "max",
            "max": LATENCY_LIMIT_SECONDS,
        }],
        "compare": {
            "periodSeconds": 1, "lookbackSeconds": LOOKBACK_SECONDS, "minSamples": MIN_SAMPLES,
            "metrics": METRICS,
        },
    }
