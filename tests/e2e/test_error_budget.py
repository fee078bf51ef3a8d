"""Error budgets end to end (docs/signals/error-budget.md): CloudWatch Application Signals SLOs
(emulated by the moto harness, tests/moto/application_signals.py, each budget report computed
from the SLO's metrics in moto's CloudWatch), read by the stack's functions as deployed.

While an SLO of the plan has spent its budget, no rollout starts and no step after the first is
set: the rollout holds as under a change freeze, and goes on once the budget is back."""
import datetime
import json

from helpers import BASELINE, captured
from sandbox import prometheus, scenarios
from sandbox.error_budget import DIMENSIONS, create_slo, served
from sandbox.alb_metrics import AlbMetrics
from sandbox.harness import Sandbox

from test_freezes import checked, two_steps

def plan_check(sandbox, plan, path):
    path.write_text(json.dumps(plan))
    answer = sandbox.cli("plan", "check", str(path))
    captured(answer.stdout + answer.stderr)
    return answer


def test_a_spent_error_budget_holds_the_start_and_the_next_step_until_it_is_back(tmp_path):
    with Sandbox(log=captured) as sandbox:
        plan = two_steps(sandbox, {"maxFrozenSeconds": 600})

        # An SLO the plan names that does not exist: refused by plan check and at Admit, nothing moved.
        plan["errorBudget"] = {"slos": ["no-such-slo"]}
        verdict = plan_check(sandbox, plan, tmp_path / "plan.json")
        assert verdict.returncode == 1
        assert "✗ error budget: InvalidPlan: errorBudget.slos[0]: SLO `no-such-slo` does not exist in us-east-1" \
            in verdict.stdout, verdict.stdout
        refused = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "no-slo"), out=captured)
        assert (refused.status, refused.error) == ("FAILED", "InvalidPlan"), refused.cause
        assert "errorBudget.slos[0]: SLO `no-such-slo` does not exist in us-east-1" in refused.cause, refused.cause
        assert refused.max_canary == 0 and refused.weights == BASELINE

        # A share the plan sets of a period-based SLO (a budget of seconds): refused at Admit.
        sandbox.client("application-signals").create_service_level_objective(
            Name="checkout-minutes", SliConfig={"SliMetricConfig": {"MetricDataQueries": [
                {"Id": "errors", "MetricStat": {"Metric": {"Namespace": "Shop", "MetricName": "Errors",
                                                           "Dimensions": DIMENSIONS}, "Period": 60, "Stat": "Sum"}}]},
                "MetricThreshold": 10, "ComparisonOperator": "LessThan"})
        plan["errorBudget"] = {"slos": ["checkout-minutes"], "rolloutShare": 5}
        refused = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "period-share"), out=captured)
        assert (refused.status, refused.error) == ("FAILED", "InvalidPlan"), refused.cause
        assert "errorBudget.slos[0]: SLO `checkout-minutes` is period-based: its budget is in seconds" in refused.cause

        create_slo(sandbox, "checkout-availability")
        served(sandbox, 1_000, 50)  # 95 % of 99 %: spent
        plan["errorBudget"] = {"slos": ["checkout-availability"]}
        verdict = plan_check(sandbox, plan, tmp_path / "plan.json")
        assert verdict.returncode == 0, verdict.stdout + verdict.stderr
        assert "? SLO checkout-availability: BREACHED, attainment 95.000 % (goal 99 %), its budget of 10 requests " \
               "overspent by 40: the rollout would wait (the error budget of SLO checkout-availability is spent" \
               in verdict.stdout, verdict.stdout
        assert "SLO checkout-availability: the new cluster's 5xx are judged against a share of 0 5xx (2 % of its " \
               "budget now) and a fast burn of 14.4× over 300 s and 60 s" in verdict.stdout, verdict.stdout
        looks, held, sets = [], [], []

        def on_event(name, state):
            if name == "SetWeights":
                sets.append(len(held))
            if name == "FreezeGate":
                looks.append(state["freeze"])
                if len(looks) == 2:
                    served(sandbox, 100_000, 0)  # 99.95 %: half of the budget left
            if name == "Evaluate" and state["cursor"]["number"] == 1:
                if state["bake"]["frozenSince"]:
                    held.append(state["bake"])
                    if len(held) == 2:
                        served(sandbox, 1_000_000, 0)
                elif not held and not state["bake"]["rollback"]:
                    served(sandbox, 1_000, 2_000)  # spent again during step 1's bake

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "budget"), on_event=on_event,
                                 out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert [look["frozen"] for look in looks[:2]] == [True, True] and looks[-1]["frozen"] is False
        assert "the error budget of SLO checkout-availability is spent: BREACHED, attainment 95.000 % (goal 99 %)" \
            in looks[0]["reason"], looks[0]["reason"]
        assert "its budget of 10 requests overspent by 40" in looks[0]["reason"], looks[0]["reason"]
        assert report.states.index("WaitWhileFrozen") < report.states.index("RememberBaseline")
        assert len(held) >= 2 and sets == [0, 2], "step 2 was set only once the budget was back"
        assert all("error budget of SLO checkout-availability is spent" in b["summary"] for b in held), held
        gate, step = checked(report.events, "Rollout Frozen")
        assert gate["step"] is None and "checkout-availability" in gate["reason"]
        assert step["step"] == {"number": 1, "count": 2, "weight": 50} and "checkout-availability" in step["reason"]


def test_a_new_cluster_that_burns_fast_or_spends_the_rollouts_share_rolls_back_while_every_alarm_is_ok():
    """The SLO has budget left; the new cluster alone burns it at 20 times its pace (fast burn),
    then, in a second rollout without the burn, spends the rollout's 2 % of it (share), and in a
    third spends its share of a latency SLO with slow requests: each rolls back by its own check,
    critical, while the alarms stay OK. (The burn goes first: the counts
    start at the minute a rollout started, which may hold the end of the one before.)"""
    with Sandbox(log=captured) as sandbox:
        create_slo(sandbox, "checkout-availability")
        served(sandbox, 1_000_000, 0)  # a budget of 10,000 requests: a rollout's share is 200
        plan = two_steps(sandbox)
        plan["analysis"]["failureLimit"] = 1

        def rolled_back(name, traffic, budget):
            """The rollout `name` of the new cluster serving `traffic`, judged by `budget`: rolled
            back to the baseline by its own check while the alarms stay OK; its cause."""
            plan["errorBudget"] = budget
            with AlbMetrics(sandbox, lambda second: traffic):
                report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, name), out=captured)
            assert (report.status, report.error) == ("FAILED", "CheckFailed"), report.cause
            assert "alarm web-green-5xx is OK" in report.cause, report.cause
            assert report.weights == BASELINE
            return report.cause

        # 20 % of the new cluster's requests fail: 20 times the pace a 99 % goal allows.
        cause = rolled_back("burn", {"canary": {"RequestCount": 100, "HTTPCode_Target_5XX_Count": 20},
                                     "stable": {"RequestCount": 100, "HTTPCode_Target_5XX_Count": 0}},
                            {"slos": ["checkout-availability"], "rolloutShare": 0})
        assert "the new cluster burns SLO checkout-availability's error budget 20.0× over the last 5 min and " \
               "20.0× over 1 min, at least 14.4× in both" in cause, cause

        # 2 % of the new cluster's requests fail: under the burn's rate (2×), and 100 5xx a
        # second spend the share of 200 within seconds.
        cause = rolled_back("share", {"canary": {"RequestCount": 5_000, "HTTPCode_Target_5XX_Count": 100},
                                      "stable": {"RequestCount": 5_000, "HTTPCode_Target_5XX_Count": 0}},
                            {"slos": ["checkout-availability"], "fastBurn": {"rate": 0}})
        assert "the rollout spent its share of SLO checkout-availability's error budget: the new cluster's " in \
            cause and "5xx are more than the 200 allowed" in cause, cause

        # A latency SLO (a request is good under 500 ms): the new cluster's bad requests are those
        # slower than 0.5 s, counted one by one from its response times. None fails, 2 % are slow:
        # 100 a second spend the share of 200 within seconds.
        create_slo(sandbox, "checkout-latency", latency_ms=500)
        cause = rolled_back("latency-share", {
            "canary": {"RequestCount": 5_000, "HTTPCode_Target_5XX_Count": 0,
                       "TargetResponseTime": {"values": [0.05, 0.9], "counts": [4_900, 100]}},
            "stable": {"RequestCount": 5_000, "HTTPCode_Target_5XX_Count": 0,
                       "TargetResponseTime": {"values": [0.05], "counts": [5_000]}}},
            {"slos": ["checkout-latency"], "fastBurn": {"rate": 0}})
        assert "the rollout spent its share of SLO checkout-latency's error budget: the new cluster's " in \
            cause and "requests slower than 0.5 s are more than the 200 allowed" in cause, cause


def test_the_error_budget_scenario_waits_for_the_budget_then_rolls_back_a_canary_spending_its_share():
    lines = []
    report = scenarios.run("error-budget", out=lambda line: (captured(line), lines.append(line)))
    assert (report.status, report.error) == ("FAILED", "CheckFailed"), report.cause
    assert any(line.startswith("held by the error budget before the first step") and "web-availability" in line
               for line in lines), lines
    assert "the rollout spent its share of SLO web-availability's error budget" in report.cause, report.cause
    assert "more than the 200 allowed" in report.cause and "alarm web-green-5xx is OK" in report.cause, report.cause
    assert report.weights == BASELINE


def test_a_budget_kept_in_prometheus_holds_the_start_until_it_is_back_and_a_query_it_rejects_is_refused():
    """A remaining budget as Sloth's or Pyrra's recording rules keep it, asked of the plan's real
    Prometheus, and one kept as a CloudWatch metric: spent, they hold the rollout at its gate;
    once back it goes on and promotes.
    A query Prometheus rejects is the plan's mistake, refused at Admit."""
    with Sandbox(log=captured) as sandbox, prometheus.Metrics({"blue": 0.01, "green": 0.001}, log=captured) as metrics:
        plan = two_steps(sandbox, {"maxFrozenSeconds": 600})
        plan["analysis"] = prometheus.analysis(metrics.url)
        plan["errorBudget"] = {"prometheus": [{"name": "checkout", "query": "max("}]}
        refused = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "bad-query"), out=captured)
        assert (refused.status, refused.error) == ("FAILED", "InvalidPlan"), refused.cause
        assert "errorBudget.prometheus[0].query: " in refused.cause and "rejected the query" in refused.cause

        # The share of the budget left: 1 − 100 × the service's error ratio (blue's: 1 %, all spent);
        # and another budget kept as a CloudWatch metric, spent past it.
        remaining = f'1 - 100 * max({prometheus.METRIC}{{cluster="blue"}})'
        payments = {"name": "payments", "namespace": "Shop", "metricName": "BudgetRemaining",
                    "dimensions": {"Service": "payments"}}

        def payments_left(share):
            # Published a few seconds back, as a budget exporter's last point is: a point stamped
            # this very second is outside a read that ends now (CloudWatch's EndTime is exclusive,
            # and moto takes whole seconds), which a gate that comes at once would then miss.
            sandbox.client("cloudwatch").put_metric_data(Namespace="Shop", MetricData=[{
                "MetricName": "BudgetRemaining", "Dimensions": [{"Name": "Service", "Value": "payments"}],
                "Value": share,
                "Timestamp": datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)}])

        payments_left(-0.1)
        plan["errorBudget"] = {"prometheus": [{"name": "checkout", "query": remaining}], "cloudwatch": [payments],
                               "minRemainingPercent": 10}
        looks = []

        def on_event(name, state):
            if name == "FreezeGate":
                looks.append(state["freeze"])
                if len(looks) == 2:
                    metrics.set("blue", 0.002)  # 80 % of the budget left
                    payments_left(0.5)

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "prometheus-budget"),
                                 on_event=on_event, out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert looks[0]["frozen"] is True and looks[-1]["frozen"] is False, looks
        assert "the error budget of SLO checkout is spent: BREACHED, 0 % of its budget left" in looks[0]["reason"], \
            looks[0]["reason"]
        assert "the error budget of SLO payments is spent: BREACHED, -10 % of its budget left" in looks[0]["reason"], \
            looks[0]["reason"]
