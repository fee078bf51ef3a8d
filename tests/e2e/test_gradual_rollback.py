"""A rollback the old cluster can take (`rollback.gradual`): after a bake's failed check the
canary's share steps back while the old cluster's target group stays healthy and its own alarm
OK, then the baseline; an unhealthy old cluster, its alarm firing, or an alarm the plan marks
critical, goes to the baseline at once.

moto reports every registered target healthy: the old cluster's target group is made healthy by
registering its pods, and unhealthy by taking them out (no healthy target), as a shrunk or failing
old cluster would look to the load balancer."""
from helpers import BASELINE, ROLLED_BACK_FOR_A_CHECK, captured, event_types, wait_for_alarm_watch
from sandbox import scenarios
from sandbox.harness import Sandbox

REASON = "Threshold Crossed: 1 datapoint [42.0] was greater than the threshold (10.0)."
BLUE_PODS = [{"Id": "10.0.1.9", "Port": 8080}, {"Id": "10.0.2.9", "Port": 8080}]
# The way back after the bake failed, up to the first step back.
LOOK_AND_STEP = ["LookBeforeStepBack", "StepBackAllowed?", "StepBack", "SteppedBack?"]
TO_STEP_BACK = ["DescribeCheckFailure", "GradualRollback?"] + LOOK_AND_STEP


def gradual_plan(sandbox, cluster="green", **alarms):
    """A 50 % / 100 % plan on the listener alone, rolled back by the 5xx alarm's event (a check a
    minute apart never runs first), stepping back to half, a fifth, then the baseline."""
    scenarios.create_green(sandbox, cluster)
    sandbox.client("elbv2").register_targets(TargetGroupArn=sandbox.world.blue_tg, Targets=BLUE_PODS)
    plan = scenarios.manual_plan(sandbox, cluster)
    plan["trafficTargets"] = plan["trafficTargets"][:1]
    plan["steps"] = [{"weight": 50}, {"weight": 100}]
    plan["bake"] = {"seconds": 600, "checkIntervalSeconds": 60}
    plan["analysis"] = {"alarms": {"names": ["web-green-5xx"], **alarms}, "failureLimit": 1}
    # The hold is long enough for a test to change the world after a step back, as the live view
    # sees it (the history is read every half second), before the next look.
    plan["rollback"] = {"settleSeconds": 0, "gradual": {"steps": [50, 20, 0], "holdSeconds": 15}}
    return plan


def run(sandbox, plan, name, at_step_back=None):
    """Runs `plan`, firing the alarm once the 50 % bake watches it; `at_step_back(output)` is
    called as each StepBack ends. The report, the step backs' outputs (their weights are what
    shift-weights read back), and the live view's lines."""
    execution_arn = scenarios.start_manual(sandbox, plan, name)
    steps_back, lines = [], []

    def on_event(state, output):
        if state == "SetWeights" and output["cursor"]["step"]["weight"] == 50:
            wait_for_alarm_watch(sandbox, execution_arn, 1)
            sandbox.alarm_events.set_state("web-green-5xx", "ALARM", REASON)
        if state == "StepBack":
            steps_back.append(output["lastSet"])
            if at_step_back:
                at_step_back(output["lastSet"])

    def out(line):
        lines.append(line)
        captured(line)

    report = scenarios.watch(sandbox, execution_arn, on_event=on_event, out=out)
    return report, steps_back, lines


def test_a_failed_check_steps_back_while_the_old_cluster_is_healthy_then_restores():
    with Sandbox(log=captured) as sandbox:
        report, steps_back, lines = run(sandbox, gradual_plan(sandbox), "gradual")

        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.cause.startswith("Canary check failed at step 1 of 2 (50% of traffic on the new cluster); "
                                       "traffic restored to the baseline. alarm web-green-5xx went to ALARM")
        taken = [(s["steppedBack"], s["canaryWeight"]) for s in steps_back]
        assert taken == [(True, 25), (True, 10), (False, 10)]
        # Each step back read back from the listener: 50 % of 50, then 20 %; the last wrote nothing.
        assert [(s["weights"][0]["stable"], s["weights"][0]["canary"]) for s in steps_back] == [(75, 25), (90, 10),
                                                                                              (90, 10)]
        assert "the next step back is the baseline" in steps_back[-1]["reason"]
        after_bake = report.states[report.states.index("DescribeCheckFailure"):]
        loop = ["NotifySteppedBack", "HoldStepBack"] + LOOK_AND_STEP
        assert after_bake == TO_STEP_BACK + loop + loop + ROLLED_BACK_FOR_A_CHECK, after_bake
        assert report.weights["listener :80"] == BASELINE["listener :80"]
        assert event_types(report)[-4:] == ["Rollback Stepped Back", "Rollback Stepped Back", "Check Failed",
                                            "Rolled Back"]
        stepped = [detail for kind, detail in report.events if kind == "Rollback Stepped Back"]
        assert [d["canaryWeight"] for d in stepped] == [25, 10]
        # The live view says each step back, then that the next is the baseline.
        said = [line for line in lines if "stepped back" in line or "no further step back" in line]
        assert len(said) == 3, lines
        assert "stepped back to 25% of traffic on the new cluster (from 50%" in said[0], said
        assert "stable 90 / canary 10" in said[1], said
        assert "no further step back: the canary has 10%: the next step back is the baseline" in said[2], said


def test_an_old_cluster_turning_unhealthy_mid_way_goes_straight_to_the_baseline():
    with Sandbox(log=captured) as sandbox:
        elbv2 = sandbox.client("elbv2")

        def old_cluster_shrinks(last_set):
            if last_set["steppedBack"] and last_set["canaryWeight"] == 25:
                elbv2.deregister_targets(TargetGroupArn=sandbox.world.blue_tg, Targets=BLUE_PODS)

        report, steps_back, lines = run(sandbox, gradual_plan(sandbox), "gradual-unhealthy", old_cluster_shrinks)

        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert [(s["steppedBack"], s["canaryWeight"]) for s in steps_back] == [(True, 25), (False, 25)]
        refused = steps_back[-1]["reason"]
        assert refused.startswith("the old cluster is not healthy (trafficTargets[0] "), refused
        assert "stable target group web-blue: 0 healthy targets, 1 needed" in refused, refused
        assert refused.endswith("): straight to the baseline"), refused
        assert steps_back[-1]["weights"] == steps_back[0]["weights"], "nothing written by the refused step back"
        after_hold = report.states[report.states.index("HoldStepBack") + 1:]
        assert after_hold == LOOK_AND_STEP + ROLLED_BACK_FOR_A_CHECK, after_hold
        assert report.weights["listener :80"] == BASELINE["listener :80"]
        assert any("no further step back: the old cluster is not healthy" in line for line in lines), lines


def test_weights_a_person_set_during_a_hold_are_left_as_found_not_restored_over():
    """A step back that finds a target away from what the rollout last set treats it as any
    other foreign change (RestoreUnchanged): the person's weights stay, nothing else of the
    rollout's is left at a canary weight."""
    with Sandbox(log=captured) as sandbox:
        def a_person_moves_it(last_set):
            if last_set["steppedBack"] and last_set["canaryWeight"] == 25:
                scenarios.move_listener_by_hand(sandbox, 60, 40)

        report, steps_back, lines = run(sandbox, gradual_plan(sandbox), "gradual-moved", a_person_moves_it)

        assert (report.status, report.error) == ("FAILED", "WeightsChangedExternally"), report.cause
        assert report.cause.startswith("Rolling back from step 1 of 2 (CheckFailed), a step back found the weights "
                                       "changed outside this rollout"), report.cause
        after_hold = report.states[report.states.index("HoldStepBack") + 1:]
        assert after_hold[:5] == ["LookBeforeStepBack", "StepBackAllowed?", "StepBack", "MovedUnderStepBackOutcome",
                                  "RestoreUnchanged"], after_hold
        assert "Restore" not in after_hold, "the person's weights were not overwritten"
        assert report.weights["listener :80"] == (60, 40)
        assert any(name == "ForeignChanges" for name, _, _ in report.metrics), "it pages"


def test_a_critical_alarm_or_the_old_clusters_own_goes_straight_to_the_baseline_and_without_gradual_no_step_back():
    with Sandbox(log=captured) as sandbox:
        critical, _, _ = run(sandbox, gradual_plan(sandbox, critical=["web-green-5xx"]), "critical")
        assert (critical.status, critical.error) == ("FAILED", "CheckFailed")
        assert "CriticalAlarmFired" in critical.states
        after_bake = critical.states[critical.states.index("DescribeCheckFailure"):]
        assert after_bake == ["DescribeCheckFailure", "GradualRollback?"] + ROLLED_BACK_FOR_A_CHECK, after_bake
        assert critical.weights["listener :80"] == BASELINE["listener :80"]
        assert "Rollback Stepped Back" not in event_types(critical)

        sandbox.alarm_events.set_state("web-green-5xx", "OK", "Threshold Crossed: back under")
        plan = gradual_plan(sandbox, "green-b")
        del plan["rollback"]["gradual"]
        plain, _, _ = run(sandbox, plan, "not-gradual")
        assert plain.error == "CheckFailed" and "StepBack" not in plain.states
        assert plain.weights["listener :80"] == BASELINE["listener :80"]

        # The old cluster's own alarm goes to ALARM after the first step back: the next look says no.
        cloudwatch = sandbox.client("cloudwatch")
        cloudwatch.put_metric_alarm(AlarmName="web-blue-5xx", Namespace="AWS/ApplicationELB",
                                    MetricName="HTTPCode_Target_5XX_Count", Statistic="Sum", Period=60,
                                    EvaluationPeriods=1, Threshold=5, ComparisonOperator="GreaterThanThreshold")
        sandbox.alarm_events.set_state("web-blue-5xx", "OK", "Threshold Crossed: under")
        sandbox.alarm_events.set_state("web-green-5xx", "OK", "Threshold Crossed: back under")
        plan = gradual_plan(sandbox, "green-c")
        plan["rollback"]["gradual"]["alarms"] = ["web-blue-5xx"]

        def old_cluster_fails(last_set):
            if last_set["steppedBack"]:
                sandbox.alarm_events.set_state("web-blue-5xx", "ALARM", "Threshold Crossed: the old cluster's 5xx")

        report, steps_back, lines = run(sandbox, plan, "old-cluster-alarm", old_cluster_fails)
        assert [(s["steppedBack"], s["canaryWeight"]) for s in steps_back] == [(True, 25)]
        after_hold = report.states[report.states.index("HoldStepBack") + 1:]
        assert after_hold == ["LookBeforeStepBack", "StepBackAllowed?"] + ROLLED_BACK_FOR_A_CHECK, after_hold
        assert report.weights["listener :80"] == BASELINE["listener :80"]
        refusal = [line for line in lines if line.startswith("no further step back: alarm web-blue-5xx is ALARM")]
        assert refusal and refusal[0].endswith(": straight to the baseline"), lines
