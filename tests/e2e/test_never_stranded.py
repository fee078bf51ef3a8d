"""End to end: traffic is never left stranded. Platform failures that skip every Catch, foreign
weight changes during the last bake and during a rollback, plans and alarm sets at every
size cap, and clusters identified by account, region and name (see test_rollouts.py for the
sandbox). No execution here ends with traffic away from the baseline unless it promoted.
"""
import json
import os
import re
import time

from helpers import (FAILED_BEFORE_TRAFFIC, ROLLED_BACK_FOR_A_CHECK, BASELINE, PROMOTED, captured, delete_cluster_event,
                     event_types, move_listener_by_hand, stop_and_wait, wait_for_alarm_watch)
from sandbox.scenarios import manual_plan, start_manual
from sandbox import scenarios
from sandbox.harness import Sandbox

LIMITS = scenarios.CONTRACT["limits"]
MAX_PLAN_BYTES = LIMITS["maxPlanBytes"]
MAX_ALARMS = LIMITS["maxAlarms"]
# Step Functions' limit on an execution's input and every state's data: 256 KiB as UTF-8.
INPUT_LIMIT_BYTES = 262_144
# CloudWatch keeps at most 1023 characters of a state reason: the longest a reason can be.
LONG_REASON = ("Threshold Crossed: 5 out of the last 5 datapoints [12.0 (22/11/26 10:03:00), 11.0 (22/11/26 10:02:00)] "
               "were greater than the threshold (10.0) (minimum 5 datapoints for OK -> ALARM transition). ") * 5
LONG_REASON = LONG_REASON[:1023]


def start_green(sandbox):
    scenarios.create_green(sandbox)
    error, started = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox))
    assert not error, started
    return started["executionArn"]


def test_a_platform_failure_after_traffic_moved_is_restored_by_the_safety_net():
    """A task result over 256 KiB ends the execution FAILED with States.DataLimitExceeded, which
    no Catch runs for (tests/moto/moto_server.py makes moto's engine behave like AWS here)."""
    with Sandbox(log=captured) as sandbox:
        oversized = json.dumps({"verdict": "pass", "rollback": False, "consecutiveFailures": 0, "passes": 1,
                                "summary": "ok", "padding": "x" * 300_000}).encode()
        fault = [lambda method, path, body: sandbox.function("evaluate-alarms") in path and b'"evaluate"' in body, 1,
                 (200, [("Content-Type", "application/json")], oversized)]
        sandbox.front.faults.append(fault)
        report = scenarios.watch(sandbox, start_green(sandbox), out=captured)
        assert fault[1] == 0, "the oversized answer was given"
        assert report.status == "FAILED"
        assert report.error == "States.DataLimitExceeded"
        assert "SetWeights" in report.states and "Restore" not in report.states, "no Catch ran"
        assert report.max_canary == 10, "traffic had moved"
        assert report.safety_net["restored"] is True
        assert report.safety_net["reason"].startswith(
            "the execution failed with States.DataLimitExceeded at Evaluate, which no Catch handles"), report.safety_net
        assert report.weights == BASELINE


def test_a_foreign_change_during_the_last_bake_is_not_promoted_over():
    """The last bake's first check finds the change (every check reads where traffic is), so
    the rollout stops there; VerifyPromotion stays for a change after the last check."""
    with Sandbox(log=captured) as sandbox:
        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 100:
                move_listener_by_hand(sandbox, 50, 50)

        report = scenarios.watch(sandbox, start_green(sandbox), on_event=on_event, out=captured)
        assert report.status == "FAILED"
        assert report.error == "WeightsChangedExternally"
        assert report.states[-8:] == ["MovedUnderCheckOutcome", "RestoreUnchanged", "OutcomeDetail?", "ReadOutcomeDetail",
                                      "OutcomeEndsWithErrorMessage", "NotifyRolloutFailed", "RolloutFailedEnd?",
                                      "StoppedByForeignChange"]
        assert "VerifyPromotion" not in report.states
        assert "errorType" not in report.cause and report.cause.count("WeightsChangedExternally") <= 1
        assert "A check at step 3 of 3 found the weights changed outside this rollout" in report.cause
        assert "found stable 50 / canary 50, this rollout last set stable 0 / canary 100" in report.cause
        # The listener is the writer's; the record, still at the rollout's 100 %, goes back.
        assert report.weights == {"listener :80": (50, 50), "app.example.com.": (100, 0)}, "only the foreign change left"


def test_a_rollback_that_overwrites_a_foreign_change_says_so():
    """The alarm fires and the listener moves before the 50 % step's first check runs: made
    inside the front door as that check's invocation arrives, so no check can fall between the
    two (one that read the alarm still OK and then the moved weights stops the rollout as
    WeightsChangedExternally, another path, which CI's busy machine once took when the test made
    both changes from the watcher)."""
    with Sandbox(log=captured) as sandbox:
        made = []

        def first_check_of_the_second_step(method, path, body):
            """Never answers for the function (False): it only makes the changes, once."""
            if (not made and sandbox.function("evaluate-alarms") in path and b'"evaluate"' in body
                    and json.loads(body).get("progress", {}).get("step") == 2):
                sandbox.client("cloudwatch").set_alarm_state(
                    AlarmName="web-green-5xx", StateValue="ALARM", StateReason="Threshold Crossed")
                move_listener_by_hand(sandbox, 70, 30)
                made.append(True)
            return False

        sandbox.front.faults.append([first_check_of_the_second_step, 1, None])
        report = scenarios.watch(sandbox, start_green(sandbox), out=captured)
        assert made, "both changes were made before the second step's first check"
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.states[-len(ROLLED_BACK_FOR_A_CHECK):] == ROLLED_BACK_FOR_A_CHECK
        assert (f"It overwrote weights changed outside this rollout: {sandbox.world.listener} "
                "was stable 70 / canary 30") in report.cause
        assert report.weights == BASELINE


def test_rollouts_whose_state_could_overflow_are_refused_at_prepare_with_nothing_moved():
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        too_large = manual_plan(sandbox)
        too_large["argocd"]["labels"]["padding"] = "x" * MAX_PLAN_BYTES
        report = scenarios.watch(sandbox, start_manual(sandbox, too_large, "plan-too-large"), out=captured)
        assert (report.status, report.error) == ("FAILED", "InvalidPlan")
        assert re.search(rf"plan: is \d+ bytes as compact JSON, more than the limit of {MAX_PLAN_BYTES} bytes",
                         report.cause), report.cause
        assert report.states == ["Admit", "AdmitRefused", *FAILED_BEFORE_TRAFFIC]

        # An input at Step Functions' limit sent straight to StartExecution (as `aws
        # stepfunctions start-execution` would): refused as InvalidPlan, never grown past the
        # limit by a first state into States.DataLimitExceeded, which nothing catches.
        at_the_limit = manual_plan(sandbox)
        labels = at_the_limit["argocd"]["labels"]
        labels["padding"] = ""
        labels["padding"] = "x" * (INPUT_LIMIT_BYTES - len(json.dumps(at_the_limit, separators=(",", ":")).encode()))
        text = json.dumps(at_the_limit, separators=(",", ":"))
        assert len(text.encode()) == INPUT_LIMIT_BYTES
        started = sandbox.client("stepfunctions").start_execution(
            stateMachineArn=sandbox.state_machine, name="input-at-the-limit", input=text)["executionArn"]
        report = scenarios.watch(sandbox, started, out=captured)
        assert (report.status, report.error) == ("FAILED", "InvalidPlan"), (report.error, report.cause)
        assert "more than the limit of" in report.cause, report.cause
        assert report.states == ["Admit", "AdmitRefused", *FAILED_BEFORE_TRAFFIC]
        assert "Rollout Failed" in event_types(report)

        cloudwatch = sandbox.client("cloudwatch")
        for i in range(MAX_ALARMS + 1 - len(sandbox.world.alarms)):
            cloudwatch.put_metric_alarm(AlarmName=f"web-green-slo-{i:03}", Namespace="Web", MetricName="Errors",
                                        Statistic="Sum", Period=60, EvaluationPeriods=1, Threshold=1,
                                        ComparisonOperator="GreaterThanThreshold")
        report = scenarios.watch(sandbox, start_manual(sandbox, manual_plan(sandbox), "too-many-alarms"), out=captured)
        assert (report.status, report.error) == ("FAILED", "InvalidPlan")
        assert (f"analysis.alarms: the names and prefixes match {MAX_ALARMS + 1} alarms, "
                f"more than the limit of {MAX_ALARMS}") in report.cause
        assert report.states == ["Admit", "AdmitRefused", *FAILED_BEFORE_TRAFFIC]
        assert report.weights == BASELINE
        assert report.secret is None, "nothing registered either"


def largest_plan(sandbox):
    """The profile's plan padded with Argo CD labels to just under the plan size cap."""
    plan = manual_plan(sandbox)
    labels = plan["argocd"]["labels"]
    i = 0
    while len(json.dumps(plan, separators=(",", ":"))) < MAX_PLAN_BYTES - 120:
        labels[f"example.com/pad-{i:04}"] = "v" * 60
        i += 1
    size = len(json.dumps(plan, separators=(",", ":")))
    assert MAX_PLAN_BYTES - 120 <= size <= MAX_PLAN_BYTES, size
    return plan


def test_the_largest_plan_with_the_most_alarms_rolls_back_then_promotes_within_the_state_budget():
    """The plan at the size cap, MAX_ALARMS alarms each with CloudWatch's longest reason: the
    conftest fixture fails any execution whose largest state is over the written budget."""
    with Sandbox(log=captured) as sandbox:
        cloudwatch = sandbox.client("cloudwatch")
        names = list(sandbox.world.alarms) + [f"web-green-slo-{i:03}" for i in range(MAX_ALARMS - len(sandbox.world.alarms))]
        for name in names[len(sandbox.world.alarms):]:
            cloudwatch.put_metric_alarm(AlarmName=name, Namespace="Web", MetricName="Errors", Statistic="Sum",
                                        Period=60, EvaluationPeriods=1, Threshold=1,
                                        ComparisonOperator="GreaterThanThreshold")
        for name in names:
            cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason=LONG_REASON)
        scenarios.create_green(sandbox)
        plan = largest_plan(sandbox)

        def alarm_at_half(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                # Once this step's alarm watch began (one per bake so far): the polling check,
                # whose summary lists every alarm, is what finds it (no event is sent).
                wait_for_alarm_watch(sandbox, execution_arn, state["cursor"]["number"])
                cloudwatch.set_alarm_state(AlarmName="web-green-slo-137", StateValue="ALARM", StateReason=LONG_REASON)

        execution_arn = start_manual(sandbox, plan, "largest-rollback")
        rolled_back = scenarios.watch(sandbox, execution_arn, on_event=alarm_at_half, out=captured)
        assert (rolled_back.status, rolled_back.error) == ("FAILED", "CheckFailed")
        assert "alarm web-green-slo-137 is ALARM" in rolled_back.cause
        assert f"… and {MAX_ALARMS - 5} more signal(s)" in rolled_back.cause
        assert rolled_back.weights == BASELINE

        cloudwatch.set_alarm_state(AlarmName="web-green-slo-137", StateValue="OK", StateReason=LONG_REASON)
        promoted = scenarios.watch(sandbox, start_manual(sandbox, plan, "largest-promotion"), out=captured)
        assert promoted.status == "SUCCEEDED", promoted
        assert promoted.weights == PROMOTED
        captured(f"largest states: rollback {rolled_back.largest_state} B at {rolled_back.largest_state_at}, "
                 f"promotion {promoted.largest_state} B at {promoted.largest_state_at}")
        assert promoted.largest_state > MAX_PLAN_BYTES, "the plan is in the state"


def test_a_cluster_in_another_region_rolls_out_and_same_named_clusters_keep_their_own_secrets():
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox, region="eu-west-1")
        plan = manual_plan(sandbox, region="eu-west-1")
        report = scenarios.watch(sandbox, start_manual(sandbox, plan, "green-in-eu"), out=captured)
        assert report.status == "SUCCEEDED", report
        assert report.weights == PROMOTED
        eu = report.secret
        assert eu["annotations"]["cluster-canary/cluster-arn"] == scenarios.cluster_arn("green", "eu-west-1")

        # A `green` in us-east-1 too: registered beside it, not over it.
        scenarios.create_green(sandbox)
        error, us = sandbox.invoke("register-cluster", {"operation": "register", "plan": manual_plan(sandbox)})
        assert not error, us
        assert us["outcome"] == "created" and us["secretName"] != eu["name"]
        assert scenarios.read_secret(sandbox, scenarios.cluster_arn("green", "eu-west-1"))["data"] == eu["data"]

        # Deleting the us-east-1 green removes only its own Secret.
        error, deleted = sandbox.invoke("cluster-created", delete_cluster_event("green", "us-east-1"))
        assert not error, deleted
        assert deleted["action"] == "deregistered", deleted
        assert scenarios.read_secret(sandbox, scenarios.cluster_arn("green", "us-east-1")) is None
        assert scenarios.read_secret(sandbox, scenarios.cluster_arn("green", "eu-west-1")) is not None


def stopped_halfway(sandbox, plan):
    """A rollout stopped by its operator once it set its first step: its ARN, and a deadline
    for what follows."""
    stopped = start_manual(sandbox, plan, "stopped-halfway")
    deadline = time.monotonic() + 120
    while scenarios.read_weights(sandbox) == BASELINE:
        assert time.monotonic() < deadline, "the first step never came"
        time.sleep(0.5)
    stop_and_wait(sandbox, stopped, deadline)
    return stopped, deadline


def test_a_late_safety_net_leaves_a_newer_rollouts_promotion_alone():
    """EventBridge and Lambda retry a delivery for up to an hour: the safety net of a rollout
    stopped halfway, arriving after a newer rollout of the same targets promoted, must not put
    the old baseline back over the promotion."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = manual_plan(sandbox)
        with sandbox.safety_net.held():
            stopped, deadline = stopped_halfway(sandbox, plan)
            # Started over the stopped rollout's step on purpose (Prepare refuses it otherwise).
            newer = start_manual(sandbox, {**plan, "rollback": {**plan.get("rollback", {}), "allowCanaryInBaseline": True}},
                                 "promotes")
            report = scenarios.watch(sandbox, newer, out=captured)
            assert report.status == "SUCCEEDED", report.cause
            assert report.weights == PROMOTED
        answer = sandbox.safety_net.answer_for(stopped)
        assert answer["restored"] is False, answer
        assert f"a newer rollout of the same targets ran or runs since: {newer} (SUCCEEDED, shifts " in answer["reason"]
        assert scenarios.read_weights(sandbox) == PROMOTED, "the promotion stands"


def test_a_refused_second_rollout_does_not_keep_the_safety_net_from_restoring():
    """Found by the seeded histories (sandbox/histories/, seed 21 before its fault was made
    Lambda-like): a second rollout of the same targets, refused at Prepare, counted as a newer
    rollout, and the safety net of the first, failed with traffic promoted, left it there."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = manual_plan(sandbox)
        sfn = sandbox.client("stepfunctions")
        first = start_manual(sandbox, plan, "first")
        refused = {}

        def on_event(name, state):
            if name == "SetWeights" and not refused:
                second = start_manual(sandbox, plan, "refused")
                refused["report"] = scenarios.watch(sandbox, second, out=captured)
                sfn.stop_execution(executionArn=first, cause="operator")

        report = scenarios.watch(sandbox, first, on_event=on_event, out=captured)
        assert refused["report"].error == "ConcurrentRollout"
        assert report.status == "ABORTED"
        assert report.safety_net["restored"] is True, report.safety_net
        assert scenarios.read_weights(sandbox) == BASELINE


def test_a_rollout_started_right_after_a_stop_does_not_keep_the_safety_net_from_restoring():
    """Found by seeded history 126: a rollout stopped (there at 100 %), another of the same targets
    started at once; the safety net left the traffic to that running newcomer, which Prepare
    then refused, and nothing restored. Only a newer rollout that set a step counts now. Here
    the newcomer waits for an approval before its first step when the held delivery arrives:
    the safety net restores; the newcomer's next look at the weights (a check while it waits,
    or its first step once approved) finds them changed under it, and it stops, leaving them,
    and pages."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = manual_plan(sandbox)
        sfn = sandbox.client("stepfunctions")
        with sandbox.safety_net.held():
            stopped, deadline = stopped_halfway(sandbox, plan)
            halfway = scenarios.read_weights(sandbox)
            # Over the stopped rollout's step, a start is refused at Prepare, naming the target
            # where the canary already has traffic (issue 42), unless the plan means it.
            path = os.path.join(sandbox.run_dir, "plan.json")
            with open(path, "w") as f:
                json.dump(plan, f)
            refused = sandbox.cli("plan", "check", path)
            captured(refused.stdout + refused.stderr)
            assert refused.returncode != 0 and "TargetMisconfigured" in refused.stdout, refused.stdout
            assert "the canary already receives traffic (trafficTargets[0]" in refused.stdout, refused.stdout
            assert "rollback.allowCanaryInBaseline" in refused.stdout
            # Started, Prepare refuses it too, naming the rollout that left the step and the
            # command that puts its baseline back.
            over = scenarios.watch(sandbox, start_manual(sandbox, plan, "over-the-step"), out=captured,
                                   await_safety_net=False)
            assert (over.status, over.error) == ("FAILED", "TargetMisconfigured"), over.cause
            assert (f"the last rollout of these targets that set a step, {stopped} (ABORTED), ended without "
                    f"putting its baseline back: `cluster-canary restore {stopped}` does") in over.cause, over.cause
            assert scenarios.read_weights(sandbox) == halfway, "nothing was written"
            waiting = {**plan, "approval": {"beforeSteps": [plan["steps"][0]["weight"]], "timeoutSeconds": 600},
                       "rollback": {**plan.get("rollback", {}), "allowCanaryInBaseline": True}}
            newcomer = start_manual(sandbox, waiting, "newcomer")
            while not any(e.get("stateEnteredEventDetails", {}).get("name") == "AwaitApproval"
                          for e in sfn.get_execution_history(executionArn=newcomer, maxResults=1000)["events"]):
                assert time.monotonic() < deadline, "the newcomer never waited for its approval"
                time.sleep(0.5)
            assert scenarios.read_weights(sandbox) == halfway != BASELINE
        answer = sandbox.safety_net.answer_for(stopped)
        assert answer["restored"] is True, answer
        assert scenarios.read_weights(sandbox) == BASELINE
        sandbox.cli("approve", newcomer)  # refused if a check already stopped it
        report = scenarios.watch(sandbox, newcomer, out=captured)
        assert (report.status, report.error) == ("FAILED", "WeightsChangedExternally"), report.cause
        assert report.states[-1] == "StoppedByForeignChange" and "RestoreUnchanged" in report.states
        assert ("ForeignChanges", {"Cluster": "us-east-1/green"}, 1) in report.metrics
        assert report.weights == BASELINE, "the newcomer left what it found changed"
