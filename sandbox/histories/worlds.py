"""The world a history runs in: its plan shaped from the story, the ALB traffic and latency its
checks read, the stack's template cut for short timeouts, the profile of an event-started
rollout."""

import json
import random
import shutil
from datetime import datetime, timezone
from pathlib import Path

from .. import compare, datadog, error_budget, prometheus, test_traffic
from ..alb_metrics import AlbMetrics
from ..harness import REPO
from .stories import (ADDON, ALARM, ALB, ALB_LOOKBACK, ALB_MAX_ERROR_PERCENT, ALB_REQUESTS, ALB_ROUTE53,
                      APPROVAL_TIMEOUT, CHECKS_PER_STEP, CHECK_INTERVAL, COMPARE_ERRORS, DATADOG_LIMIT, DIRECT,
                      FROZEN_BOUND, GRADUAL_HOLD, HOOK, HOOK_TIMEOUT, LATE_WRITE_SETTLE, MAX_UNJUDGED, METRIC_LIMIT,
                      NLB, RATIO_LIMIT, READINESS_TIMEOUT, ROUTE53, TARGET_HEALTH_TIMEOUT, TEST_STAGE_SECONDS)


def shaped(history, plan, prometheus_url=None):
    """`plan` (a manual plan or the stack's profile) with the history's targets, steps, checks,
    approval and hooks (a Prometheus check asks `prometheus_url`)."""
    if history.traffic == NLB:
        plan["trafficTargets"][0]["nlb"]["minStepSeconds"] = CHECK_INTERVAL * CHECKS_PER_STEP
    elif history.kind in DIRECT and not history.traffic:
        plan["trafficTargets"] = {ALB: plan["trafficTargets"][:1], ALB_ROUTE53: plan["trafficTargets"][:2],
                                  ROUTE53: plan["trafficTargets"][1:2]}[history.kind]
    plan["steps"] = [{"weight": w} for w in history.steps]
    plan["bake"] = {"seconds": CHECK_INTERVAL * CHECKS_PER_STEP, "checkIntervalSeconds": CHECK_INTERVAL}
    plan["analysis"] = {"alarms": {"names": [ALARM]}, "failureLimit": history.failure_limit}
    if history.provider:
        checks = (prometheus.analysis(prometheus_url, RATIO_LIMIT) if history.provider == "prometheus"
                  else datadog.analysis(DATADOG_LIMIT))
        plan["analysis"].update(checks, failureLimit=history.failure_limit, maxUnjudgedSeconds=MAX_UNJUDGED)
    if history.approval:
        answer, before = history.approval
        plan["approval"] = {"beforeSteps": [before],
                            "timeoutSeconds": APPROVAL_TIMEOUT if answer == "never" else 600}
    if history.hooks:
        plan["hooks"] = {point: [HOOK] for point in history.hooks}
        plan["hooks"]["timeoutSeconds"] = HOOK_TIMEOUT
    if history.targets:
        plan["targetHealth"] = {"minHealthyTargets": 1, "timeoutSeconds": TARGET_HEALTH_TIMEOUT, "intervalSeconds": 1}
    if history.metric:
        plan["analysis"]["metrics"] = [{
            "name": "canary latency", "namespace": "History", "metricName": "Latency",
            "dimensions": {"Cluster": "green"}, "stat": "Maximum", "periodSeconds": 1, "lookbackSeconds": 60,
            "reduce": "latest", "max": METRIC_LIMIT}]
    if history.retire:
        plan["retire"] = {"detachStableTargetGroups": True}
    if history.alb_judge:
        plan["analysis"]["alb"] = {"maxErrorRatePercent": ALB_MAX_ERROR_PERCENT, "minRequests": 10, "periodSeconds": 1,
                                   "lookbackSeconds": ALB_LOOKBACK, "latencyStatistic": "Maximum"}
    if history.freeze:
        plan["freeze"] = {"maxFrozenSeconds": FROZEN_BOUND}
    if history.test_traffic:
        test_traffic.stage_plan(plan, bakeSeconds=TEST_STAGE_SECONDS)
    if history.gradual:
        plan.setdefault("rollback", {})["gradual"] = {"steps": [50, 0], "holdSeconds": GRADUAL_HOLD}
    if history.short_timeout:
        plan.setdefault("rollback", {})["settleSeconds"] = LATE_WRITE_SETTLE
    if history.readiness:
        plan["clusterReadiness"] = {"addons": [ADDON], "timeoutSeconds": READINESS_TIMEOUT, "intervalSeconds": 1}
    if history.health:
        plan["awsHealth"] = {"onOpenIssue": history.health}
        plan["freeze"] = {"maxFrozenSeconds": FROZEN_BOUND}
    if history.budget_judged:
        # The defaults: a share of 2 % and the fast burn, on the new cluster's 5xx the history puts.
        plan["errorBudget"] = {"slos": [error_budget.SLO]}
        plan["freeze"] = {"maxFrozenSeconds": FROZEN_BOUND}
    elif history.budget:
        # The gate alone: the new cluster's 5xx (the ALB judge's, the comparison's) are the
        # other checks' to judge here, not a share's or a burn's that outlasts them.
        plan["errorBudget"] = {"slos": [error_budget.SLO], "rolloutShare": 0, "fastBurn": {"rate": 0}}
        plan["freeze"] = {"maxFrozenSeconds": FROZEN_BOUND}
    if history.compare:
        plan["analysis"]["extendBakeSeconds"] = compare.EXTEND_BAKE_SECONDS
        plan["analysis"]["compare"] = {
            "periodSeconds": 1, "lookbackSeconds": compare.LOOKBACK_SECONDS, "minSamples": compare.MIN_SAMPLES,
            "metrics": compare.METRICS}
    return plan


class AlbTraffic(AlbMetrics):
    """The ALB metrics the built-in ALB checks read: requests, the canary's 5xx count
    (`errors`), and a response time. Setting `errors` changes the canary's from the next second
    on."""

    def __init__(self, sandbox):
        self.errors = 0
        super().__init__(sandbox, self.traffic)

    def traffic(self, _second):
        return {side: {"RequestCount": ALB_REQUESTS,
                       "HTTPCode_Target_5XX_Count": self.errors if side == "canary" else 0,
                       "TargetResponseTime": 0.1}
                for side in ("canary", "stable")}


class CompareTraffic(AlbMetrics):
    """The ALB metrics the comparison reads: sandbox/compare.py's healthy pattern (the canary as
    often above the stable as below, within 11 %), `latencies.canary_factor` and `.load` as there,
    the canary's 5xx per 100 requests (`errors`; the stable's COMPARE_ERRORS), drawn request by
    request (`served_errors`), and `canary_on` (False: the canary's target group publishes
    nothing)."""

    def __init__(self, sandbox):
        self.latencies = compare.Latencies()
        self.errors = COMPARE_ERRORS
        self.canary_on = True
        super().__init__(sandbox, self.traffic)

    def traffic(self, second):
        sides = self.latencies(second)
        sides["canary"]["HTTPCode_Target_5XX_Count"] = served_errors(second, "canary", self.errors)
        sides["stable"]["HTTPCode_Target_5XX_Count"] = served_errors(second, "stable", COMPARE_ERRORS)
        if not self.canary_on:
            sides["canary"] = {}
        return sides


def served_errors(second, side, per_hundred):
    """The 5xx of one side's requests in a second (compare.REQUESTS of them), each failing with
    probability `per_hundred` / 100, as a cluster's errors come: never the same count every
    second. (The same count every second — a world steadier than any — made a regression's
    level shift look like a drift to the comparison's dependence estimate, and seed 19674
    promoted ten times the stable's 5xx rate.) Seeded by the second and the side: a replay
    draws the same."""
    draw = random.Random(f"compare-errors/{side}/{second}").random
    return sum(draw() < per_hundred / 100 for _ in range(compare.REQUESTS))


def put_latency(sandbox, value):
    """The canary's latency datapoint, now (a high-resolution metric: the threshold reads the
    latest one)."""
    sandbox.client("cloudwatch").put_metric_data(Namespace="History", MetricData=[{
        "MetricName": "Latency", "Dimensions": [{"Name": "Cluster", "Value": "green"}], "Value": value,
        "Timestamp": datetime.now(timezone.utc), "StorageResolution": 1}])


def register_target(sandbox):
    """The new cluster's pod in its target group (moto reports a registered target healthy)."""
    sandbox.client("elbv2").register_targets(TargetGroupArn=sandbox.world.green_tg,
                                             Targets=[{"Id": "10.0.1.5", "Port": 8080}])


def cut_template(directory, function_timeout=None, execution_timeout=None):
    """template.yaml with shift-weights' Timeout cut to `function_timeout` (its own `Timeout:
    300`, the first after its CodeUri), beside a copy of the state machines it names, the rollout
    machine's TimeoutSeconds cut to `execution_timeout`."""
    text = (REPO / "template.yaml").read_text()
    if function_timeout:
        shift_weights = "      CodeUri: functions/shift-weights\n"
        head, tail = text.split(shift_weights, 1)
        text = head + shift_weights + tail.replace("      Timeout: 300\n", f"      Timeout: {function_timeout}\n", 1)
    cut = Path(directory) / "template.yaml"
    cut.write_text(text)
    shutil.copytree(REPO / "statemachine", Path(directory) / "statemachine")
    if execution_timeout:
        machine = Path(directory) / "statemachine" / "rollout.asl.json"
        definition = json.loads(machine.read_text())
        definition["TimeoutSeconds"] = execution_timeout
        machine.write_text(json.dumps(definition, indent=2))
    return cut


def the_profile(history, prometheus_url):
    """The stack's profiles, when the CreateCluster event starts the history's rollout."""
    def profiles(world):
        return {"web": shaped(history, json.loads(json.dumps(world.profiles["web"])), prometheus_url)}
    return profiles if history.by_event else None
