"""End to end: the real state machine (statemachine/rollout.asl.json) executed by moto's Step
Functions engine, the real functions running as Lambda runs them (sandbox/lambda_service.py),
all from the stack template.yaml deploys, moto for AWS and the Kubernetes API test server for Argo CD (see sandbox/harness.py).

Each test gets a fresh sandbox. Each asserts on the execution's status, error and cause, on
which states ran, on the weights moto holds at the end, and on the Argo CD Secret.
"""
import json
import re
import time
from datetime import datetime
from pathlib import Path

from helpers import FAILED_BEFORE_TRAFFIC, ROLLED_BACK_FOR_A_CHECK, BASELINE, PROMOTED, captured, event_types, failed_on_alarm, move_listener_by_hand
from sandbox.scenarios import manual_plan, start_manual
from sandbox import scenarios
from sandbox.front_door import lambda_service_exception, lambda_throttled, query_throttled
from sandbox.harness import REPO, Sandbox
from sandbox.iam import access_denied, service_models

def series(report, metric, target_prefix=""):
    """The values of one metric the rollout's functions emitted, in order (for one target)."""
    return [value for name, dimensions, value in report.metrics
            if name == metric and dimensions.get("Target", "").startswith(target_prefix)]


def secret_is_registered(report, region="us-east-1"):
    assert report.secret is not None, "the Argo CD Secret exists"
    assert report.secret["name"].startswith("cluster-canary-green-"), report.secret["name"]
    assert report.secret["annotations"]["cluster-canary/cluster-arn"] == scenarios.cluster_arn("green", region)
    assert report.secret["labels"]["argocd.argoproj.io/secret-type"] == "cluster"
    assert report.secret["labels"]["fleet"] == "web"
    assert report.secret["data"]["name"] == "green"
    config = json.loads(report.secret["data"]["config"])
    assert config["awsAuthConfig"] == {"clusterName": "green"}
    assert config["tlsClientConfig"]["insecure"] is False


def test_happy_rollout_promotes_green():
    report = scenarios.run("happy", out=captured)
    assert report.status == "SUCCEEDED", report
    assert report.cli_exit == 0, "`cluster-canary watch` exits 0 when promoted"
    assert report.weights == PROMOTED
    for state in ("Admit", "PrepareTraffic", "DescribeCluster", "RegisterCluster", "AppsStatus",
                  "SetWeights", "Evaluate", "Promoted"):
        assert state in report.states
    assert report.states.count("SetWeights") == 3
    assert report.states.count("Evaluate") == 9, "3 checks in each of 3 steps"
    assert "Restore" not in report.states
    secret_is_registered(report)
    # The dashboard's series, as the functions emitted them (Embedded Metric Format).
    assert series(report, "CanaryWeight", "listener/") == [0, 10, 50, 100]
    assert series(report, "CanaryWeight", "route53:") == [0, 10, 50, 100]
    assert series(report, "ChecksPassed") == [1] * 9
    assert series(report, "Rollbacks") == []
    assert event_types(report) == ["Rollout Started"] + ["Traffic Shifted"] * 3 + ["Promoted"]
    shifted = [d for t, d in report.events if t == "Traffic Shifted"]
    assert [(d["step"]["weight"], d["weights"][0]["canary"]) for d in shifted] == [(10, 10), (50, 50), (100, 100)]


def test_an_alarm_at_50_percent_rolls_everything_back():
    report = scenarios.run("rollback", out=captured)
    assert report.status == "FAILED"
    assert report.error == "CheckFailed"
    assert report.cli_exit == 1, "`cluster-canary watch` exits 1 when not promoted"
    assert report.cause.startswith("Canary check failed at step 2 of 3 (50% of traffic on the new cluster); traffic restored to the baseline.")
    # The alarm's state change event fails the bake at once (sandbox.alarm_events delivers it),
    # unless a check already running reads it first.
    assert failed_on_alarm(report.cause, "web-green-5xx"), report.cause
    assert report.states[-len(ROLLED_BACK_FOR_A_CHECK):] == ROLLED_BACK_FOR_A_CHECK
    assert series(report, "CanaryWeight", "listener/") == [0, 10, 50, 0]
    assert series(report, "ChecksFailed")[-1] == 1
    assert [p[1]["Cause"] for p in report.metrics if p[0] == "Rollbacks"] == ["CheckFailed"]
    assert len(series(report, "RollbackSeconds")) == 1 and series(report, "RollbackSeconds")[0] >= 0
    assert report.safety_net == {
        "executionArn": report.execution_arn, "restored": False,
        "reason": "the execution ended in RolledBack: its own Restore put traffic back to the baseline"}
    assert report.states.count("SetWeights") == 2, "the 100% step never ran"
    assert report.weights == BASELINE
    secret_is_registered(report)
    assert event_types(report) == ["Rollout Started", "Traffic Shifted", "Traffic Shifted", "Check Failed", "Rolled Back"]
    rolled_back = report.events[-1][1]
    assert (rolled_back["error"], rolled_back["cause"]) == ("CheckFailed", report.cause)
    assert [(w["stable"], w["canary"]) for w in rolled_back["weights"]] == [(100, 0), (100, 0)]


def test_unhealthy_apps_never_move_traffic():
    report = scenarios.run("apps-unhealthy", out=captured)
    assert report.status == "FAILED"
    assert report.error == "AppsNotReady"
    assert re.search(r"guestbook-cluster-canary-green-[0-9a-f]{10} is Synced/Degraded", report.cause), report.cause
    assert report.cause.endswith("no traffic was moved")
    assert "SetWeights" not in report.states and "Restore" not in report.states
    assert report.safety_net["restored"] is False
    assert report.safety_net["reason"] == "the execution ended in AppsNotReady: the apps never became ready; no traffic moved"
    assert report.max_canary == 0
    assert report.weights == BASELINE


def test_a_stopped_rollout_is_restored_by_the_safety_net():
    report = scenarios.run("stopped", out=captured)
    assert report.status == "ABORTED"
    assert report.abort_exit == 0, "`cluster-canary abort` returned once the baseline was back"
    assert "Restore" not in report.states, "StopExecution skips the state machine's own rollback"
    assert report.safety_net["restored"] is True
    assert report.safety_net["reason"].startswith("the execution ended ABORTED at ")
    assert report.weights == BASELINE, "the safety net restored the baseline"


def test_a_bad_manual_plan_fails_at_prepare_and_changes_nothing():
    with Sandbox(log=captured) as sandbox:
        plan = manual_plan(sandbox)
        plan["steps"] = [{"weight": 50}, {"weight": 10}, {"weight": 100}]
        arn = start_manual(sandbox, plan, "bad-plan")
        report = scenarios.watch(sandbox, arn, out=captured)
        assert report.status == "FAILED"
        assert report.error == "InvalidPlan"
        assert "steps[1].weight: must be greater than the previous step's 50, got 10" in report.cause
        assert report.states == ["Admit", "AdmitRefused", *FAILED_BEFORE_TRAFFIC]
        assert event_types(report) == ["Rollout Failed"]
        assert report.events[0][1] == {"executionArn": arn, "error": "InvalidPlan", "cause": report.cause,
                                       "end": "FailedBeforeTraffic"}
        assert report.safety_net["reason"] == "the execution ended before Prepare finished: no traffic had moved"
        assert report.weights == BASELINE
        assert report.secret is None


def test_a_second_rollout_on_the_same_listener_is_refused_while_the_first_runs():
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        _, started = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox))
        first = started["executionArn"]
        second = {}

        def on_event(name, state):
            if name == "SetWeights" and not second:
                second["arn"] = start_manual(sandbox, manual_plan(sandbox, "green"), "second-rollout")
                second["report"] = scenarios.watch(sandbox, second["arn"], out=captured)

        report = scenarios.watch(sandbox, first, on_event=on_event, out=captured)
        refused = second["report"]
        assert refused.status == "FAILED"
        assert refused.error == "ConcurrentRollout"
        assert first in refused.cause
        assert "SetWeights" not in refused.states
        assert report.status == "SUCCEEDED", "the first rollout was not disturbed"
        assert report.weights == PROMOTED


def test_a_foreign_weight_change_stops_the_rollout_leaving_it_and_restoring_the_rest():
    """Found by the seeded histories (seeds 11 and 42 of the first generator): the rollout
    stopped "without touching anything", which left the record nobody else changed at the
    step's canary weight with no check judging the canary. Now the listener stays as its
    writer left it and the record goes back to the baseline."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        _, started = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox))

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 10:
                # Someone moves the listener by hand during the first bake.
                move_listener_by_hand(sandbox, 70, 30)

        report = scenarios.watch(sandbox, started["executionArn"], on_event=on_event, out=captured)
        assert report.status == "FAILED"
        assert report.error == "WeightsChangedExternally"
        assert ("the targets changed are left as they were found, and every other target is put back to "
                "the baseline") in report.cause
        assert "found stable 70 / canary 30, this rollout last set stable 90 / canary 10" in report.cause
        assert report.states[-1] == "StoppedByForeignChange" and "Restore" not in report.states
        assert "RestoreUnchanged" in report.states
        # The safety net does the same again (idempotent): the listener stays the writer's.
        assert report.safety_net["restored"] is True
        left = report.safety_net["reason"].split("It left as found weights changed outside this rollout: ")[1]
        assert ":listener/app/web/" in left and left.endswith("was stable 70 / canary 30"), left
        # One ERROR line per failed invocation, with the error's name (not a second one in
        # Rust debug syntax from lambda_runtime).
        log = (Path(sandbox.run_dir) / "functions.log").read_text()
        errors = [line for line in log.splitlines() if '"level":"ERROR"' in line]
        assert len(errors) == 1, errors
        assert '"error_name":"WeightsChangedExternally"' in errors[0] and "Diagnostic {" not in errors[0]
        # The record nobody else touched is not left at the canary's 10 % with no check judging it.
        assert report.weights == {"listener :80": (70, 30), "app.example.com.": (100, 0)}, "only the foreign change left"
        # Someone else moves this traffic: ForeignChanges, which the stack's ForeignChangeAlarm
        # watches (without dimensions), pages a person.
        assert ("ForeignChanges", {"Cluster": "us-east-1/green"}, 1) in report.metrics, report.metrics
        alarm = sandbox.client("cloudwatch").describe_alarms(
            AlarmNames=[sandbox.stack.resources["ForeignChangeAlarm"]])["MetricAlarms"][0]
        assert (alarm["Namespace"], alarm["MetricName"], alarm.get("Dimensions", [])) == (
            "ClusterCanary", "ForeignChanges", [])

        # The way back: abort says to restore by hand with the CLI, which shows, asks, writes.
        arn = started["executionArn"]
        aborted = sandbox.cli("abort", arn, "--timeout", "2")
        assert aborted.returncode == 1
        assert f"cluster-canary restore {arn}" in aborted.stderr, aborted.stderr
        unasked = sandbox.cli("restore", arn)  # no terminal to ask on, no --yes: nothing written
        assert unasked.returncode == 1 and "pass --yes" in unasked.stderr, unasked.stderr
        assert scenarios.read_weights(sandbox) == {"listener :80": (70, 30), "app.example.com.": (100, 0)}
        restored = sandbox.cli("restore", arn, "--yes")
        captured(restored.stdout + restored.stderr)
        assert restored.returncode == 0, restored.stderr
        lines = restored.stdout.splitlines()
        assert lines[0] == f"{arn} ended FAILED.", lines
        assert lines[1].startswith("  baseline: listener ") and "stable 100 / canary 0" in lines[1], lines
        assert "stable 70 / canary 30" in lines[2], lines
        assert any(line.startswith("overwrote listener ") and line.endswith("it was stable 70 / canary 30")
                   for line in lines), lines
        assert not any(line.startswith("overwrote app.example.com.") for line in lines), lines
        assert lines[-1].startswith("baseline restored, read back: listener "), lines
        assert scenarios.read_weights(sandbox) == BASELINE
        again = sandbox.cli("restore", arn, "--yes")
        assert again.returncode == 0 and again.stdout.splitlines()[-1] == "already at the baseline: nothing written"


def test_transient_failures_are_retried_and_the_rollout_succeeds():
    with Sandbox(log=captured) as sandbox:
        # One Lambda throttle on the first `set`, and one AWS throttle on a ModifyListener.
        lambda_throttle = [lambda method, path, body: "functions/" in path and b'"set"' in body, 1, lambda_throttled()]
        aws_throttle = [lambda method, path, body: b"Action=ModifyListener" in body, 1, query_throttled()]
        sandbox.front.faults.extend([lambda_throttle, aws_throttle])
        report = scenarios.run_on(sandbox, "happy", out=captured)
        assert (lambda_throttle[1], aws_throttle[1]) == (0, 0), "both faults were injected"
        assert report.status == "SUCCEEDED"
        assert report.weights == PROMOTED


def test_a_lambda_service_error_at_the_first_state_costs_a_retry_not_the_rollout():
    """`Admit` names evaluate-alarms' ARN as its Resource: a 500 from Lambda there is
    `Lambda.ServiceException`, as Step Functions names it for a direct task, which its Retry
    names (moto named it `Exception` and the rollout, or a fleet's cell, failed at once)."""
    with Sandbox(log=captured) as sandbox:
        evaluate_alarms = sandbox.function("evaluate-alarms")
        # Admit is the first invocation of evaluate-alarms in a rollout (by its ARN, in the path).
        fault = [lambda method, path, body: path.endswith("/invocations") and evaluate_alarms in path, 1,
                 lambda_service_exception()]
        sandbox.front.faults.append(fault)
        report = scenarios.run_on(sandbox, "happy", out=captured)
        assert fault[1] == 0, "the fault was injected"
        assert report.status == "SUCCEEDED", report
        assert report.weights == PROMOTED
        history = sandbox.client("stepfunctions").get_execution_history(
            executionArn=report.execution_arn, maxResults=20)["events"]
        failed = [e["lambdaFunctionFailedEventDetails"] for e in history if e["type"] == "LambdaFunctionFailed"]
        assert [f["error"] for f in failed] == ["Lambda.ServiceException"], failed
        assert "An internal error occurred" in failed[0]["cause"]


def test_a_restore_refused_once_is_said_at_once_then_retried_to_the_baseline():
    """At 50 % an alarm fails the check, and the rollback's first ModifyListener is refused
    (AccessDenied, as an IAM policy missing it answers). `watch` says ROLLBACK FAILING at once,
    naming the refused action, and never "restored" until the retried restore has put the
    baseline back; `Rollback Failing` is sent (schema-valid), shift-weights emits
    RestoreFailures (what RestoreFailingAlarm pages on); then Rolled Back."""
    with Sandbox(log=captured) as sandbox:
        elbv2 = service_models().models("elasticloadbalancing")[0]  # query protocol, as ELBv2
        role = "arn:aws:sts::123456789012:assumed-role/shift-weights/shift-weights"
        refusal = access_denied(elbv2, role, "elasticloadbalancing:ModifyListener", sandbox.world.listener)
        refused = [lambda method, path, body: b"Action=ModifyListener" in body, 1, refusal]
        lines = []

        def out(line):
            lines.append(line)
            captured(line)

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50 and not lines_at_alarm:
                lines_at_alarm.append(len(lines))
                sandbox.front.faults.append(refused)
                sandbox.alarm_events.set_state("web-green-5xx", "ALARM", "Threshold Crossed")

        lines_at_alarm = []
        scenarios.create_green(sandbox)
        arn = start_manual(sandbox, manual_plan(sandbox), "green-restore-refused")
        report = scenarios.watch(sandbox, arn, on_event=on_event, out=out)
        assert refused[1] == 0, "the restore's write was refused once"
        assert (report.status, report.error) == ("FAILED", "CheckFailed"), (report.error, report.cause)
        assert report.weights == BASELINE
        at = report.states.index("Restore")
        assert report.states[at:at + 3] == ["Restore", "NotifyRollbackFailing", "RestoreRetried"], report.states
        failing = [i for i, line in enumerate(lines) if "ROLLBACK FAILING" in line]
        restored = [i for i, line in enumerate(lines) if line.startswith("restored the baseline")]
        assert failing and restored and failing[0] < restored[0], lines
        assert "elasticloadbalancing:ModifyListener" in lines[failing[0]], lines[failing[0]]
        assert "traffic is NOT at the baseline yet" in lines[failing[0]]
        assert not any("restored" in line for line in lines[lines_at_alarm[0]:failing[0]]), lines
        types = event_types(report)
        assert types.index("Rollback Failing") < types.index("Rolled Back"), types
        detail = dict(report.events)["Rollback Failing"]
        assert detail["rollbackFor"] == "CheckFailed" and "ModifyListener" in detail["cause"], detail
        assert ("RestoreFailures", {"Cluster": "us-east-1/green"}, 1.0) in [
            (name, dims, value) for name, dims, value in scenarios.emitted_metrics(sandbox, "us-east-1/green")], \
            "the metric RestoreFailingAlarm pages on"


def test_the_eventbridge_rules_match_what_they_should():
    """The rules the stack created, in moto's EventBridge: each also delivering to an SQS queue
    here, so what matches can be counted; the alarm rule's function gets what its
    InputTransformer makes of AWS's documented event."""
    from sandbox.event_queue import stack_rule

    with Sandbox(log=captured) as sandbox:
        events, sqs = sandbox.client("events"), sandbox.client("sqs")
        state_machine = sandbox.state_machine
        received = {}
        for name, source, machine in (("intake", "aws.eks", None), ("safety", "aws.states", "-rollout"),
                                      ("alarms", "aws.cloudwatch", None)):
            rule, _, _ = stack_rule(events, source, machine)
            queue = sqs.create_queue(QueueName=name)["QueueUrl"]
            queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            events.put_targets(Rule=rule, Targets=[{"Id": "counted", "Arn": queue_arn}])
            received[name] = queue

        def sample(file):
            return json.loads((REPO / "tests/events" / file).read_text())

        def put(event):
            entry = {"Source": event["source"], "DetailType": event["detail-type"], "Detail": json.dumps(event["detail"])}
            if "time" in event:
                entry["Time"] = datetime.fromisoformat(event["time"].replace("Z", "+00:00"))
            events.put_events(Entries=[entry])

        for file in ("eks-create-cluster.json", "eks-create-cluster-failed.json", "eks-delete-cluster.json"):
            put(sample(file))
        other_call = sample("eks-create-cluster.json")
        other_call["detail"]["eventName"] = "UpdateClusterVersion"
        put(other_call)
        for status, name in (("ABORTED", "stopped"), ("SUCCEEDED", "fine"), ("TIMED_OUT", "slow"), ("FAILED", "broken")):
            put({"source": "aws.states", "detail-type": "Step Functions Execution Status Change",
                 "detail": {"executionArn": f"{state_machine.replace(':stateMachine:', ':execution:')}:{name}",
                            "stateMachineArn": state_machine, "status": status}})
        put({"source": "aws.states", "detail-type": "Step Functions Execution Status Change",
             "detail": {"executionArn": "x", "stateMachineArn": state_machine + "-other", "status": "ABORTED"}})

        alarm = sample("cloudwatch-alarm-state-change.json")
        put(alarm)
        for value in ("OK", "INSUFFICIENT_DATA"):
            other_state = json.loads(json.dumps(alarm))
            other_state["detail"]["state"]["value"] = value
            put(other_state)
        composite = json.loads(json.dumps(alarm))
        composite["detail"]["alarmName"] = "web-green-slo"
        composite["detail"]["configuration"] = {"alarmRule": "ALARM(web-green-5xx) OR ALARM(web-green-latency)"}
        put(composite)

        def drain(queue):
            bodies = []
            while True:
                messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
                if not messages:
                    return bodies
                for m in messages:
                    bodies.append(json.loads(m["Body"]))
                    sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])

        intake_names = sorted(e["detail"]["eventName"] for e in drain(received["intake"]))
        assert intake_names == ["CreateCluster", "CreateCluster", "DeleteCluster"], "failed calls reach the function, which skips them"
        safety_statuses = sorted(e["detail"]["status"] for e in drain(received["safety"]))
        assert safety_statuses == ["ABORTED", "FAILED", "TIMED_OUT"]
        delivered = drain(received["alarms"])
        assert sorted(e["detail"]["alarmName"] for e in delivered) == ["web-green-5xx", "web-green-slo"], \
            "only changes to ALARM, of metric and composite alarms"
        # What the rule's InputTransformer makes of AWS's documented event: evaluate-alarms' input,
        # delivered (asynchronously, as Lambda's event queue) and answered.
        deadline = time.monotonic() + 60
        while len(sandbox.alarm_events.reactions) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        first = next(r for r in sandbox.alarm_events.reactions if r["change"]["alarmName"] == "web-green-5xx")
        assert first["change"] == {"alarmName": "web-green-5xx", "state": "ALARM",
                                   "reason": alarm["detail"]["state"]["reason"],
                                   "time": alarm["time"], "account": "123456789012", "region": "us-east-1"}
        assert first["error"] is None and first["answer"] == {
            "alarm": "web-green-5xx", "failed": [], "noLongerWaiting": [], "unrelated": 0}, first


def test_the_dashboard_is_accepted_and_plots_only_metrics_the_functions_emit():
    """The template's dashboard body, its references filled as CloudFormation would, through
    PutDashboard (moto); every ClusterCanary metric it plots is one the functions emit
    (canary_core::metrics) or the stack's own metric filter makes, and every emitted metric
    is on it."""
    with Sandbox(log=captured) as sandbox:
        # The body as CloudFormation put it, its references filled.
        name = sandbox.stack.resources["RolloutDashboard"]
        cloudwatch = sandbox.client("cloudwatch")
        dashboard = json.loads(cloudwatch.get_dashboard(DashboardName=name)["DashboardBody"])
        answer = cloudwatch.put_dashboard(DashboardName=name, DashboardBody=json.dumps(dashboard))
        assert answer.get("DashboardValidationMessages", []) == []
        template = sandbox.stack.template

    plotted = set()
    for widget in dashboard["widgets"]:
        for row in widget.get("properties", {}).get("metrics", []):
            for item in row:
                if isinstance(item, dict) and "expression" in item:
                    namespace = re.search(r"\{(\w+),", item["expression"]).group(1)
                    plotted |= {(namespace, n) for n in re.findall(r'MetricName="(\w+)"', item["expression"])}
            if isinstance(row[0], str):
                plotted.add((row[0], row[1]))
    ours = {name for namespace, name in plotted if namespace == "ClusterCanary"}
    emitted = set(scenarios.CONTRACT["metrics"]["names"])
    filters = {t["MetricName"] for r in template["Resources"].values() if r["Type"] == "AWS::Logs::MetricFilter"
               for t in r["Properties"]["MetricTransformations"]}
    assert len(emitted) == 20, emitted
    assert ours - emitted - filters == set(), "plotted but never emitted"
    assert emitted - ours == set(), "emitted but not on the dashboard"
    assert {("AWS/States", "ExecutionsFailed"), ("AWS/Lambda", "Errors")} <= plotted
