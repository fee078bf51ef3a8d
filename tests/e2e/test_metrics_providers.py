"""End to end with the metrics providers judging the canary: a real Prometheus (Debian's
package) scraping an exporter whose error ratios the scenario sets (the sandbox's `prometheus`
scenarios), and Datadog's API double with the keys in a Secrets Manager secret (`datadog`).
The plan's checks are validated at Prepare (each query runs once) and evaluated at every check
by the real evaluate-alarms function, inside the real state machine.
"""
import json
import time

from helpers import BASELINE, PROMOTED, ROLLED_BACK_FOR_A_CHECK, captured, event_types
from sandbox import datadog, prometheus, scenarios
from sandbox.harness import Sandbox


def test_the_canary_error_ratio_in_prometheus_crossing_its_limit_at_50_percent_rolls_back():
    report = scenarios.run("prometheus", out=captured)
    assert report.status == "FAILED", report
    assert report.error == "CheckFailed"
    assert report.cause.startswith("Canary check failed at step 2 of 3 (50% of traffic on the new cluster); traffic restored to the baseline.")
    assert "prometheus canary error ratio is 0.2 > max 0.05" in report.cause, report.cause
    assert report.states[-len(ROLLED_BACK_FOR_A_CHECK):] == ROLLED_BACK_FOR_A_CHECK
    assert report.states.count("SetWeights") == 2, "the 100% step never ran"
    # The 10 % step's checks passed on Prometheus's answer (0.001, within the limit).
    assert report.states.count("Evaluate") >= 4
    assert report.weights == BASELINE
    assert event_types(report) == ["Rollout Started", "Traffic Shifted", "Traffic Shifted", "Check Failed", "Rolled Back"]


def test_a_canary_whose_error_ratio_stays_low_in_prometheus_is_promoted():
    report = scenarios.run("prometheus-healthy", out=captured)
    assert report.status == "SUCCEEDED", report
    assert report.weights == PROMOTED
    assert report.states.count("Evaluate") == 9, "3 checks in each of 3 steps"
    assert "Restore" not in report.states
    passed = [value for name, _, value in report.metrics if name == "ChecksPassed"]
    assert passed == [1] * 9
    values = [(d.get("Check"), value) for name, d, value in report.metrics if name == "MetricValue"]
    assert values and all(v == ("canary error ratio", 0.001) for v in values), values


def test_the_canary_error_count_in_datadog_crossing_its_limit_at_50_percent_rolls_back():
    # The sandbox's Datadog is the API test double; the function reads its keys from a
    # Secrets Manager secret (DATADOG_SECRET_ARN), as deployed.
    report = scenarios.run("datadog", out=captured)
    assert report.status == "FAILED", report
    assert report.error == "CheckFailed"
    assert "datadog canary errors is 40 > max 25" in report.cause, report.cause
    assert report.states[-len(ROLLED_BACK_FOR_A_CHECK):] == ROLLED_BACK_FOR_A_CHECK
    assert report.states.count("SetWeights") == 2, "the 100% step never ran"
    assert report.weights == BASELINE


def test_plan_check_shows_what_each_query_gives_now_and_refuses_one_that_does_not_parse(tmp_path):
    with Sandbox(log=captured) as sandbox, prometheus.Metrics({"green": 0.001}, log=captured) as metrics:
        scenarios.create_green(sandbox)
        datadog.set_errors(sandbox, "green", 2)
        plan = scenarios.manual_plan(sandbox)
        plan["analysis"] = {**prometheus.analysis(metrics.url), **datadog.analysis()}
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan))
        check = sandbox.cli("plan", "check", str(path))
        captured(check.stdout + check.stderr)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "✓ analysis: 0 alarms watched; 2 metric queries per check" in check.stdout
        assert "  now: prometheus canary error ratio is 0.001, within limits" in check.stdout
        assert "  now: datadog canary errors is 2, within limits" in check.stdout

        plan["analysis"]["prometheus"]["checks"][0]["query"] = "max(canary_error_ratio{"
        path.write_text(json.dumps(plan))
        refused = sandbox.cli("plan", "check", str(path))
        assert refused.returncode != 0
        assert "analysis.prometheus.checks[0].query" in refused.stdout + refused.stderr
        assert "parse error" in refused.stdout + refused.stderr


def test_a_prometheus_that_stops_answering_rolls_back_within_the_plans_bound():
    """From the 50 % step on, every Prometheus answer takes 30 s (past the 20 s request
    timeout). The checks go unjudged (no pass, not counted) and, once the step has gone
    `maxUnjudgedSeconds` (20 s) without a verdict, the rollout rolls back: within that bound,
    a check interval and one request timeout of the first unanswered check, not after minutes
    of retries. The rollback publishes Check Failed naming the check."""
    with Sandbox(log=captured) as sandbox, \
            prometheus.Metrics({"blue": 0.01, "green": 0.001}, log=captured) as metrics, \
            prometheus.Outage(metrics.url, seconds=30) as slow:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        plan["analysis"] = {**prometheus.analysis(slow.url), "maxUnjudgedSeconds": 20}
        slowed = []

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50 and not slowed:
                slow.answer = "slow"
                slowed.append(time.monotonic())

        arn = scenarios.start_manual(sandbox, plan, "green-prometheus-slow")
        report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
        rolled_back_after = time.monotonic() - slowed[0]
    assert (report.status, report.error) == ("FAILED", "MetricsProviderUnavailable"), (report.error, report.cause)
    # The check past the bound fails before asking again (it names the provider, whose last
    # unanswered query each unjudged check's verdict named).
    assert "analysis.prometheus: the metrics provider left the checks unanswered" in report.cause, report.cause
    assert "without a verdict, past analysis.maxUnjudgedSeconds (20 s)" in report.cause, report.cause
    assert report.weights == BASELINE
    assert report.states.count("SetWeights") == 2, "the 100% step never ran"
    assert event_types(report)[-2:] == ["Check Failed", "Rolled Back"]
    # The written bound (docs/functions.md): maxUnjudgedSeconds (20) + one check interval (2) +
    # one request timeout (20) from the first unanswered check, which starts within one check
    # interval after the step was set (the watch's on_event, just after). The check past the
    # bound no longer waits out a request of its own first (61.6 s seen before).
    assert rolled_back_after < 20 + 2 + 20 + 2 + 3, rolled_back_after
