"""Instant rollback: CloudWatch's state change event for a watched alarm fails the bake (or the
approval wait) at once, through the state machine's normal failure path; the polling check stays
as the backstop. The sandbox emits the events and delivers them through the stack's
AlarmStateChange rule (sandbox/alarm_events.py).

Each test asserts the order of what happened, never a wall-clock bound: with a check a minute
apart, a rollback before any check of the step ran can only have come from the event."""
import threading
import time

from helpers import BASELINE, ROLLED_BACK_FOR_A_CHECK, captured, event_types, wait_for_alarm_watch
from sandbox import scenarios
from sandbox.harness import Sandbox

# The first check of a step runs a minute after its weights are set.
SLOW_BAKE = {"seconds": 600, "checkIntervalSeconds": 60}
REASON = "Threshold Crossed: 1 datapoint [42.0] was greater than the threshold (10.0)."


def plan_on(sandbox, cluster, target, alarm, bake):
    """A two-step plan (50 %, 100 %) for `cluster` on one of the world's targets (0: the
    listener, 1: the Route 53 record), watching one alarm."""
    scenarios.create_green(sandbox, cluster)
    plan = scenarios.manual_plan(sandbox, cluster)
    plan["trafficTargets"] = [plan["trafficTargets"][target]]
    plan["steps"] = [{"weight": 50}, {"weight": 100}]
    plan["bake"] = bake
    plan["analysis"] = {"alarms": {"names": [alarm]}, "failureLimit": 1}
    return plan


def states_since_last(report, name):
    last = max(i for i, state in enumerate(report.states) if state == name)
    return report.states[last + 1:]


def wait_until_ended(sandbox, execution_arn, timeout=300):
    sfn = sandbox.client("stepfunctions")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        execution = sfn.describe_execution(executionArn=execution_arn)
        if execution["status"] != "RUNNING":
            return execution
        time.sleep(0.5)
    raise TimeoutError(execution_arn)


def test_an_alarm_rolls_back_at_once_only_the_rollout_watching_it():
    with Sandbox(log=captured) as sandbox:
        cloudwatch = sandbox.client("cloudwatch")
        cloudwatch.put_metric_alarm(AlarmName="billing-errors", Namespace="Billing", MetricName="Errors",
                                    Statistic="Sum", Period=60, EvaluationPeriods=1, Threshold=1,
                                    ComparisonOperator="GreaterThanThreshold")
        # A watches the 5xx alarm and checks once a minute; B watches latency and bakes fast.
        a_plan = plan_on(sandbox, "green", 0, "web-green-5xx", SLOW_BAKE)
        b_plan = plan_on(sandbox, "green-b", 1, "web-green-latency", {"seconds": 6, "checkIntervalSeconds": 2})
        a = scenarios.start_manual(sandbox, a_plan, "green-a")
        b = scenarios.start_manual(sandbox, b_plan, "green-b")
        b_ended = {}
        b_watcher = threading.Thread(target=lambda: b_ended.update(wait_until_ended(sandbox, b)), daemon=True)
        b_watcher.start()
        events = sandbox.alarm_events

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                wait_for_alarm_watch(sandbox, a, 1)
                events.set_state("billing-errors", "ALARM", REASON)  # nobody watches it
                events.set_state("web-green-5xx", "ALARM", REASON)
                # EventBridge delivers at least once: the same change again.
                events.emit(events.describe("web-green-5xx"), "ALARM", REASON)

        report = scenarios.watch(sandbox, a, on_event=on_event, out=captured)
        b_watcher.join(timeout=300)

        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.cause.startswith("Canary check failed at step 1 of 2 (50% of traffic on the new cluster); "
                                       "traffic restored to the baseline. alarm web-green-5xx went to ALARM at ")
        assert "(its state change event, before the next check): " + REASON in report.cause
        # No check of the 50 % step ran: the event, not the minute-later check, rolled it back.
        after_set = states_since_last(report, "SetWeights")
        assert "Evaluate" not in after_set, after_set
        assert "AlarmFired" in after_set and after_set[-len(ROLLED_BACK_FOR_A_CHECK):] == ROLLED_BACK_FOR_A_CHECK
        assert report.weights["listener :80"] == BASELINE["listener :80"]
        assert event_types(report)[-2:] == ["Check Failed", "Rolled Back"]
        assert [p[1]["Cause"] for p in report.metrics if p[0] == "Rollbacks"] == ["CheckFailed"]
        assert [p[2] for p in report.metrics if p[0] == "ChecksFailed"] == [1], "the alarm counts as the failed check"

        by_alarm = {}
        for reaction in events.reactions:
            assert reaction["error"] is None, reaction
            by_alarm.setdefault(reaction["change"]["alarmName"], []).append(reaction["answer"])
        assert [r["failed"] for r in by_alarm["billing-errors"]] == [[]], "an unwatched alarm changes nothing"
        assert [r["failed"] for r in by_alarm["web-green-5xx"]] == [[a], []], "the duplicate finds nothing waiting"

        # B watched another alarm: it went on and promoted.
        assert b_ended["status"] == "SUCCEEDED", b_ended
        assert scenarios.read_weights(sandbox)["app.example.com."] == (0, 100)


def test_an_alarm_during_an_approval_wait_rolls_back_at_once_even_if_it_flapped_back():
    with Sandbox(log=captured) as sandbox:
        plan = plan_on(sandbox, "green", 0, "web-green-5xx", {"seconds": 4, "checkIntervalSeconds": 2})
        plan["steps"] = [{"weight": 50}, {"weight": 100, "approval": True, "bakeSeconds": 600, "checkIntervalSeconds": 60}]
        plan["approval"] = {"timeoutSeconds": 600}
        execution_arn = scenarios.start_manual(sandbox, plan, "approval-alarm")

        def on_notification(detail_type, detail):
            if detail_type == "Approval Requested":
                wait_for_alarm_watch(sandbox, execution_arn, 2)  # the 50 % bake's, then the wait's
                # The alarm flaps back to OK before its event arrives: it did fire.
                with sandbox.alarm_events.held():
                    sandbox.alarm_events.set_state("web-green-5xx", "ALARM", REASON)
                    sandbox.alarm_events.set_state("web-green-5xx", "OK", "Threshold Crossed: back under")

        report = scenarios.watch(sandbox, execution_arn, on_notification=on_notification, out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.cause.startswith("CheckFailed while waiting for approval to go to step 2 of 2 (100%); "
                                       "traffic restored to the baseline.")
        assert "alarm web-green-5xx went to ALARM at" in report.cause
        assert "WatchEvaluate" not in report.states, "the wait's first check (a minute in) never ran"
        assert "AlarmFiredWhileWaiting" in report.states
        assert sandbox.alarm_events.describe("web-green-5xx")["StateValue"] == "OK", "it is OK again"
        assert report.weights["listener :80"] == BASELINE["listener :80"]
        assert event_types(report)[-3:] == ["Approval Requested", "Check Failed", "Rolled Back"]


def test_a_lost_alarm_event_is_caught_by_the_next_check():
    with Sandbox(log=captured) as sandbox:
        sandbox.client("events").disable_rule(Name=sandbox.alarm_events.rule)
        plan = plan_on(sandbox, "green", 0, "web-green-5xx", {"seconds": 6, "checkIntervalSeconds": 2})
        execution_arn = scenarios.start_manual(sandbox, plan, "event-lost")

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                wait_for_alarm_watch(sandbox, execution_arn, 1)
                sandbox.alarm_events.set_state("web-green-5xx", "ALARM", REASON)

        report = scenarios.watch(sandbox, execution_arn, on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert "alarm web-green-5xx is ALARM since" in report.cause, "the polling check's words"
        after_set = states_since_last(report, "SetWeights")
        assert "Evaluate" in after_set and "BakeCheckFailed" in after_set
        assert "AlarmFired" not in after_set
        assert sandbox.alarm_events.reactions == [], "the disabled rule delivered nothing"
        assert report.weights["listener :80"] == BASELINE["listener :80"]


def test_an_alarm_already_in_alarm_when_the_bake_begins_fails_it_at_once():
    """An alarm that went to ALARM while no watch was registered (here before the rollout, its
    event gone): the bake's watch reads the alarms as it begins and fails the wait before the
    first check, a minute later, would."""
    with Sandbox(log=captured) as sandbox:
        sandbox.client("cloudwatch").set_alarm_state(AlarmName="web-green-5xx", StateValue="ALARM", StateReason=REASON)
        plan = plan_on(sandbox, "green", 0, "web-green-5xx", SLOW_BAKE)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "already-in-alarm"), out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.cause.startswith("Canary check failed at step 1 of 2 (50% of traffic on the new cluster)"), \
            report.cause
        assert "alarm web-green-5xx is ALARM since" in report.cause
        assert report.cause.endswith("(found as the alarm watch began)"), report.cause
        assert "Evaluate" not in states_since_last(report, "SetWeights"), "before the step's first check"
        assert report.weights["listener :80"] == BASELINE["listener :80"]
