"""End to end on AWS Global Accelerator (`globalAccelerator` targets): the sandbox's
`global-accelerator` scenarios, a rollout of the accelerator edge's us-east-1 endpoint group
alone (blue's and green's load balancers weighted in it), through the deployed stack (its IAM
scoped by AcceleratorIds, the API in us-west-2), to a promotion and to a rollback at green's
alarm."""
import json
import threading
import time

from helpers import captured, event_types, failed_on_alarm
from sandbox import scenarios
from sandbox.harness import Sandbox
from sandbox.world import seed_accelerator

UNTOUCHED = {"listener :80": (100, 0), "app.example.com.": (100, 0)}


def test_an_accelerators_endpoint_weights_are_stepped_to_a_promotion():
    report = scenarios.run("global-accelerator", out=captured)
    assert report.status == "SUCCEEDED", report
    assert report.weights == {**UNTOUCHED, "accelerator": (0, 100)}, "only the accelerator moved"
    shifted = [d for t, d in report.events if t == "Traffic Shifted"]
    assert [d["weights"][0]["canary"] for d in shifted] == [10, 50, 100]
    assert "/endpoint-group/" in shifted[0]["weights"][0]["target"], shifted[0]
    assert event_types(report) == ["Rollout Started"] + ["Traffic Shifted"] * 3 + ["Promoted"]


def test_an_accelerator_is_rolled_back_when_the_alarm_fires():
    report = scenarios.run("global-accelerator-rollback", out=captured)
    assert report.status == "FAILED" and report.error == "CheckFailed", report
    assert failed_on_alarm(report.cause, "web-green-5xx"), report.cause
    assert report.max_canary == 50
    assert report.weights == {**UNTOUCHED, "accelerator": (100, 0)}, "the baseline restored"
    assert event_types(report)[-1] == "Rolled Back"


def start_accelerator_rollout(sandbox, name, max_unjudged_seconds):
    """The `global-accelerator` scenario's world and plan, its unjudged bound set: the execution."""
    seed_accelerator(sandbox.client, sandbox.world)
    scenarios.create_green(sandbox)
    plan = scenarios.accelerator_plan(sandbox)
    plan.setdefault("analysis", {})["maxUnjudgedSeconds"] = max_unjudged_seconds
    return scenarios.start_manual(sandbox, plan, name)


def test_an_accelerator_stuck_in_progress_rolls_back_within_the_unjudged_bound_and_is_restored_once_deployed():
    """Issue 68: a step written while the accelerator stays IN_PROGRESS is live and unjudged;
    it may stay so only `analysis.maxUnjudgedSeconds`, then the rollout rolls back
    (`StepNotInEffect`, not retried), and the restore is said done only once the accelerator
    reads DEPLOYED again."""
    with Sandbox(log=captured) as sandbox:
        execution_arn = start_accelerator_rollout(sandbox, "green-stuck", max_unjudged_seconds=10)
        ga = sandbox.client("globalaccelerator", "us-west-2")
        status_when_restored = []

        def on_event(state, output):
            if state == "SetWeights" and output["cursor"]["step"]["weight"] == 10:
                captured(">>> from now on the accelerator stays IN_PROGRESS 25 s after each write")
                sandbox.set_accelerator({"deploySeconds": 25})
            if state == "Restore":
                accelerator_arn = sandbox.world.endpoint_group.split("/listener/")[0]
                accelerator = ga.describe_accelerator(AcceleratorArn=accelerator_arn)
                status_when_restored.append(accelerator["Accelerator"]["Status"])

        report = scenarios.watch(sandbox, execution_arn, on_event=on_event, out=captured)
    assert (report.status, report.error) == ("FAILED", "StepNotInEffect"), report
    assert "not in effect within 10 s" in report.cause and "IN_PROGRESS" in report.cause, report.cause
    assert "step stable 50 / canary 50 not in effect" in report.cause, "written: live, unjudged, rolled back"
    assert report.weights == {**UNTOUCHED, "accelerator": (100, 0)}, "the baseline restored"
    assert status_when_restored == ["DEPLOYED"], "the restore was said done while the accelerator applied it"
    assert event_types(report)[-1] == "Rolled Back"


def test_a_rollout_stopped_while_its_step_waits_for_the_accelerator_is_restored_at_once_as_its_own_step():
    """Issue 68: stopped while its 50 % step waits for the accelerator to deploy (the write
    landed; the wait may last the plan's 120 s unjudged bound), the rollout's safety net acts on
    the stop's status change event, not when that wait ends, and restores the baseline without
    calling the step it was setting a change made outside the rollout."""
    with Sandbox(log=captured) as sandbox:
        execution_arn = start_accelerator_rollout(sandbox, "green-stopped-waiting", max_unjudged_seconds=120)
        ga = sandbox.client("globalaccelerator", "us-west-2")
        stopped_at = []

        def weights():
            group = ga.describe_endpoint_group(EndpointGroupArn=sandbox.world.endpoint_group)["EndpointGroup"]
            return {e["EndpointId"]: e["Weight"] for e in group["EndpointDescriptions"]}

        def stop_once_half_is_written():
            deadline = time.monotonic() + 180
            while weights().get(sandbox.world.green_endpoint) != 50:
                assert time.monotonic() < deadline, "the 50 % step was never written"
                time.sleep(0.2)
            captured(">>> the 50 % step is written, the accelerator IN_PROGRESS: the operator stops the rollout")
            sandbox.set_accelerator({"deploySeconds": 2})  # the restore's write deploys at once
            stopped_at.append(time.time())
            sandbox.client("stepfunctions").stop_execution(executionArn=execution_arn, cause="the operator stops it")

        def on_event(state, output):
            if state == "SetWeights" and output["cursor"]["step"]["weight"] == 10:
                sandbox.set_accelerator({"deploySeconds": 300})
                threading.Thread(target=stop_once_half_is_written, daemon=True).start()

        report = scenarios.watch(sandbox, execution_arn, on_event=on_event, out=captured)
        answered_at = sandbox.safety_net.answered_at[execution_arn]
    assert report.status == "ABORTED", report
    assert report.safety_net["restored"] is True, report.safety_net
    assert "changed outside this rollout" not in json.dumps(report.safety_net), report.safety_net
    assert report.weights == {**UNTOUCHED, "accelerator": (100, 0)}, "the baseline restored"
    assert answered_at - stopped_at[0] < 60, "the stop's event, not the end of the step's 120 s wait"
