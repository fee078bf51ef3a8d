"""End to end with the comparison check (`analysis.compare`): the canary's and the stable target
group's ALB response times in CloudWatch (the sandbox's `compare` scenarios, sandbox/compare.py),
compared at every check by the real evaluate-alarms function inside the real state machine.
"""
from helpers import BASELINE, PROMOTED, ROLLED_BACK_FOR_A_CHECK, event_types
from sandbox import scenarios


def test_a_latency_regression_under_every_threshold_rolls_back_on_the_comparison_alone():
    lines = []

    def out(line):
        print(line)
        lines.append(line)

    report = scenarios.run("compare", out=out, verbose=True)
    assert report.status == "FAILED", report
    assert report.error == "CheckFailed"
    assert "compare p99 latency: High (check Fail at score 50)" in report.cause, report.cause
    # Every threshold passed: the alarms are OK, the canary's p99 is under its limit.
    assert "canary p99 latency is 0.1" in report.cause and "within limits" in report.cause, report.cause
    assert "is ALARM" not in report.cause
    assert "compare 5xx rate: Pass" in report.cause
    assert report.states[-len(ROLLED_BACK_FOR_A_CHECK):] == ROLLED_BACK_FOR_A_CHECK
    assert report.weights == BASELINE
    assert event_types(report) == ["Rollout Started", "Traffic Shifted", "Check Failed", "Rolled Back"]
    failed = next(detail for kind, detail in report.events if kind == "Check Failed")
    assert "compare p99 latency: High" in failed["cause"] and "shift +0.0" in failed["cause"], failed
    # The medians side by side, for the dashboard: the canary's half again the baseline's.
    medians = {d["Side"]: value for name, d, value in report.metrics
               if name == "ComparedMedian" and d["Check"] == "p99 latency"}
    assert set(medians) == {"canary", "baseline"}, report.metrics
    assert 1.3 < medians["canary"] / medians["baseline"] < 1.7, medians
    # `watch --verbose` shows the comparison's every metric.
    checks = [line for line in lines if line.lstrip().startswith("check 1/")]
    assert checks and "compare p99 latency: High" in checks[0] and "compare 5xx rate: Pass" in checks[0], lines


def test_a_load_spike_on_both_clusters_passes_the_comparison():
    report = scenarios.run("compare-spike", out=print)
    assert report.status == "SUCCEEDED", report
    assert report.weights == PROMOTED
    passed = [value for name, _, value in report.metrics if name == "ChecksPassed"]
    assert passed == [1] * 9, "every check passed, through the spike"
    baseline = [value for name, d, value in report.metrics
                if name == "ComparedMedian" and d["Check"] == "p99 latency" and d["Side"] == "baseline"]
    assert max(baseline) > 2.5 * min(baseline), f"the spike tripled the baseline's latency: {baseline}"
