"""End to end: the gates a rollout passes before traffic moves (docs/plan.md, "Gates and notifications"), on the
sandbox (see test_rollouts.py). moto reports every registered target `healthy` and every
Route 53 health check `Success`; unhealthy targets are tried against fakes in
functions/shift-weights/tests/decisions.rs.
"""
import json
import os
import shlex
import subprocess

from helpers import BASELINE, PROMOTED, captured, event_types, wait_for_alarm_watch
from sandbox import scenarios
from sandbox.gitops import kube
from sandbox.harness import CLI, REPO, Sandbox


def gated_plan(sandbox, **gate):
    """The manual plan for a new cluster `green` (created here) with a target health gate."""
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["targetHealth"] = gate
    return plan


def test_a_canary_target_group_without_healthy_targets_fails_before_traffic():
    with Sandbox(log=captured) as sandbox:
        plan = gated_plan(sandbox, timeoutSeconds=4, intervalSeconds=2)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "no-targets"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TargetsNotHealthy")
        assert report.states.count("TargetHealth") == 3, "the first look and two more"
        assert "SetWeights" not in report.states and report.max_canary == 0
        assert report.cause.startswith("the targets of the new cluster were not healthy in time (")
        assert "canary target group web-green: 0 healthy targets, 1 needed" in report.cause
        assert report.cause.endswith("); no traffic was moved")
        assert report.safety_net["restored"] is False, "a settled end"
        assert event_types(report) == ["Rollout Started", "Rollout Held", "Rollout Failed"], "held once, not per look"
        assert report.events[-1][1]["end"] == "TargetsNotHealthy"
        assert report.weights == BASELINE


def test_targets_that_become_healthy_while_waiting_let_the_rollout_go_on():
    """The Route 53 canary record gets a health check (moto answers `Success`), so both kinds
    of look go over the wire."""
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world
        route53 = sandbox.client("route53")
        health_check = route53.create_health_check(
            CallerReference="green", HealthCheckConfig={"Type": "HTTP", "FullyQualifiedDomainName": "green.example.com"}
        )["HealthCheck"]["Id"]
        green = next(r for r in route53.list_resource_record_sets(HostedZoneId=world.zone_id)["ResourceRecordSets"]
                     if r.get("SetIdentifier") == "green")
        green["HealthCheckId"] = health_check
        route53.change_resource_record_sets(
            HostedZoneId=world.zone_id, ChangeBatch={"Changes": [{"Action": "UPSERT", "ResourceRecordSet": green}]})
        looks = []

        def on_event(name, state):
            if name == "TargetHealth":
                looks.append(state["targetHealth"])
                if len(looks) == 2:
                    sandbox.client("elbv2").register_targets(
                        TargetGroupArn=world.green_tg, Targets=[{"Id": "10.0.1.17", "Port": 8080},
                                                                {"Id": "10.0.2.17", "Port": 8080}])

        plan = gated_plan(sandbox, minHealthyTargets=2, timeoutSeconds=30, intervalSeconds=2)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "late-targets"),
                                 on_event=on_event, out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert [look["ready"] for look in looks] == [False, False, True]
        assert "canary target group web-green: 0 healthy targets, 2 needed" in looks[0]["reason"]
        # People hear of the hold once (the event), and see each look that held (the metric).
        held = [detail for kind, detail in report.events if kind == "Rollout Held"]
        assert [(d["gate"], d["reason"], d["intervalSeconds"]) for d in held] == [
            ("targetHealth", looks[0]["reason"], 2)], report.events
        assert [m for m in report.metrics if m[0] == "GateHolds"] == [
            ("GateHolds", {"Cluster": "us-east-1/green", "Gate": "targetHealth"}, 1)] * 2, report.metrics
        assert looks[2]["reason"] == "every canary target is healthy"
        assert report.states.index("TargetsHealthy?") < report.states.index("SetWeights")
        assert report.weights == PROMOTED


DEPRECATED_APIS = {
    "id": "4f2ab9c1-0000-0000-0000-000000000132", "name": "Deprecated APIs removed in Kubernetes v1.35",
    "category": "UPGRADE_READINESS", "description": "Checks for usage of deprecated APIs",
    "recommendation": "Update manifests and API clients to use newer Kubernetes APIs",
}


def readiness_plan(sandbox, **gate):
    """The manual plan for a new cluster `green` (created here) with a cluster readiness gate."""
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["clusterReadiness"] = gate
    return plan


def test_an_insight_in_error_holds_the_rollout_and_once_fixed_it_goes_on(tmp_path):
    """EKS's cluster insight of deprecated APIs in ERROR: `plan check` says it would hold,
    nothing moves, each look says why; the team fixes its manifests, EKS's insight turns
    PASSING, and the rollout goes on."""
    with Sandbox(log=captured) as sandbox:
        plan = readiness_plan(sandbox, timeoutSeconds=40, intervalSeconds=2)
        sandbox.set_eks("green", "insights", {**DEPRECATED_APIS, "insightStatus": {
            "status": "ERROR", "reason": "Deprecated API usage detected within last 30 days"}})
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan))
        checked = sandbox.cli("plan", "check", str(path))
        line = next((l for l in checked.stdout.splitlines() if "cluster readiness now" in l), None)
        assert line == ('? cluster readiness now (1 insights, add-ons: none): insight "Deprecated APIs removed in '
                        'Kubernetes v1.35" (UPGRADE_READINESS) is ERROR: Deprecated API usage detected within last '
                        '30 days: Update manifests and API clients to use newer Kubernetes APIs'), checked.stdout
        looks = []

        def on_event(name, state):
            if name == "ClusterReadiness":
                looks.append(state["readiness"])
                if len(looks) == 2:
                    sandbox.set_eks("green", "insights", {**DEPRECATED_APIS, "insightStatus": {
                        "status": "PASSING", "reason": "No deprecated API usage detected"}})

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "insight"), on_event=on_event,
                                 out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert [look["ready"] for look in looks] == [False, False, True]
        held = [detail for kind, detail in report.events if kind == "Rollout Held"]
        assert [(d["gate"], d["reason"], d["maxPolls"]) for d in held] == [
            ("clusterReadiness", looks[0]["reason"], 20)], report.events
        assert [m for m in report.metrics if m[0] == "GateHolds"] == [
            ("GateHolds", {"Cluster": "us-east-1/green", "Gate": "clusterReadiness"}, 1)] * 2, report.metrics
        assert looks[0]["reason"] == (
            'insight "Deprecated APIs removed in Kubernetes v1.35" (UPGRADE_READINESS) is ERROR: Deprecated API '
            "usage detected within last 30 days: Update manifests and API clients to use newer Kubernetes APIs")
        assert report.states.index("ClusterReady?") < report.states.index("SetWeights")
        assert report.weights == PROMOTED


def test_an_add_on_that_stays_degraded_fails_the_gate_with_nothing_moved():
    with Sandbox(log=captured) as sandbox:
        plan = readiness_plan(sandbox, addons=["coredns", "vpc-cni"], timeoutSeconds=4, intervalSeconds=2)
        eks = sandbox.client("eks")
        for addon in ("coredns", "vpc-cni"):
            eks.create_addon(clusterName="green", addonName=addon)
        sandbox.set_eks("green", "addons/coredns/health", {"status": "DEGRADED", "issues": [
            {"code": "InsufficientNumberOfReplicas", "message": "0 of 2 replicas are available",
             "resourceIds": ["kube-system/coredns"]}]})
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "degraded"), out=captured)
        assert (report.status, report.error) == ("FAILED", "ClusterNotHealthy")
        assert report.states.count("ClusterReadiness") == 3, "the first look and two more"
        assert report.cause == (
            "EKS says the new cluster green is not ready (add-on coredns is DEGRADED: InsufficientNumberOfReplicas "
            "(0 of 2 replicas are available; kube-system/coredns)); no traffic was moved")
        assert "SetWeights" not in report.states and report.max_canary == 0
        assert report.safety_net["restored"] is False, "a settled end"
        assert report.events[-1][1]["end"] == "ClusterNotHealthy"
        assert report.weights == BASELINE


def test_an_add_on_that_turns_degraded_during_the_bake_fails_the_check_and_rolls_back():
    with Sandbox(log=captured) as sandbox:
        plan = readiness_plan(sandbox, addons=["coredns"], timeoutSeconds=20, intervalSeconds=2)
        sandbox.client("eks").create_addon(clusterName="green", addonName="coredns")
        degraded = []

        def on_event(name, state):
            if name == "SetWeights" and not degraded:
                degraded.append(True)
                sandbox.set_eks("green", "addons/coredns/health", {"status": "DEGRADED", "issues": [
                    {"code": "InsufficientNumberOfReplicas", "message": "0 of 2 replicas are available"}]})

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "coredns"), on_event=on_event,
                                 out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed"), report.cause
        assert "add-on coredns is DEGRADED: InsufficientNumberOfReplicas (0 of 2 replicas are available)" in report.cause
        assert report.max_canary > 0 and report.weights == BASELINE


def approval_plan(sandbox, **approval):
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["approval"] = {"beforeSteps": [100], **approval}
    return plan


def sandbox_env(export_line):
    """The environment a person sets from the sandbox's `export ...` line."""
    env = dict(os.environ)
    for item in shlex.split(export_line.split(": export ", 1)[1]):
        key, value = item.split("=", 1)
        env[key] = value.replace("$PWD", str(REPO)).replace("$PATH", os.environ["PATH"])
    return env


def run_command(env, command):
    """Runs a command the live view printed, as a person would in another terminal."""
    return subprocess.run(shlex.split(command), cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


def run_printed(env, command):
    done = run_command(env, command)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cli_env(sandbox):
    return {**os.environ, **sandbox.cli_env(), "PATH": f"{CLI.parent}:{os.environ['PATH']}"}


def answer_with(sandbox, reject=None, answers=None):
    """An on_notification hook: answers the approval request with `cluster-canary`."""
    def on_notification(detail_type, detail):
        if detail_type == "Approval Requested":
            arn = detail["executionArn"]
            command = f"cluster-canary reject {arn} --reason {shlex.quote(reject)}" if reject else f"cluster-canary approve {arn}"
            answer = run_printed(cli_env(sandbox), command)
            if answers is not None:
                answers.append(answer)
    return on_notification


def test_approving_an_execution_that_does_not_exist_says_so():
    with Sandbox(log=captured) as sandbox:
        done = sandbox.cli("approve", "green-approval")
        assert done.returncode == 1
        assert "ExecutionDoesNotExist" in done.stderr, done.stderr
        done = sandbox.cli("approve")
        assert (done.returncode, done.stderr.strip()) == (
            1, f"error: no rollout is running on {sandbox.state_machine}; name one (see `cluster-canary list`)")


def test_the_approval_scenario_waits_before_100_and_goes_on_when_approved():
    """`scripts/sandbox.sh --scenario approval`, answered with the command it prints."""
    lines, env = [], {}

    def out(line):
        captured(line)
        lines.append(line)
        if line.startswith("cluster-canary from another terminal: export "):
            env.update(sandbox_env(line))
        if line.startswith("  approve: "):
            run_printed(env, line.removeprefix("  approve: "))

    report = scenarios.run("approval", out=out)
    assert report.status == "SUCCEEDED", report.cause
    requested = [d for t, d in report.events if t == "Approval Requested"]
    assert "taskToken" not in requested[0], "the event does not carry the token"
    assert len(requested) == 1
    assert requested[0]["step"] == {"number": 3, "count": 3, "weight": 100}
    assert [(w["stable"], w["canary"]) for w in requested[0]["weights"]] == [(50, 50), (50, 50)]
    assert "taskToken" not in json.dumps(report.events)
    assert not any("taskToken" in line or "task-token" in line for line in lines), "the token is never printed"
    assert any(line.startswith("approved") for line in lines), "the live view says it was approved"
    assert report.cli_exit == 0
    assert report.states.index("AwaitApproval") < report.states.index("SetWeights", report.states.index("AwaitApproval"))
    assert report.weights == PROMOTED
    assert event_types(report) == ["Rollout Started", "Traffic Shifted", "Traffic Shifted", "Approval Requested",
                                   "Traffic Shifted", "Promoted"]


def test_a_rejected_step_restores_the_baseline_with_the_reason():
    with Sandbox(log=captured) as sandbox:
        plan = approval_plan(sandbox, timeoutSeconds=120)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "rejected"), out=captured,
                                 on_notification=answer_with(sandbox, reject="the new p99 looks off"))
        assert (report.status, report.error) == ("FAILED", "ApprovalRejected")
        assert report.cause.startswith(
            "ApprovalRejected while waiting for approval to go to step 3 of 3 (100%); traffic restored to the baseline.")
        assert "the new p99 looks off" in report.cause
        assert report.max_canary == 50, "step 100 was never set"
        assert report.weights == BASELINE
        # Answering an execution that no longer waits says so and changes nothing.
        again = sandbox.cli("approve", report.execution_arn)
        assert again.returncode == 1
        assert again.stderr.strip() == f"error: {report.execution_arn} is FAILED: nothing waits for an approval"
        assert report.cli_exit == 1


def pending_task_token(sandbox, execution_arn):
    """The waiting approval's task token, read from the history as any approver (or the AWS
    CLI recipe in docs/plan.md) reads it."""
    sfn = sandbox.client("stepfunctions")
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    for event in reversed(events):
        details = event.get("taskScheduledEventDetails") or {}
        payload = json.loads(details.get("parameters") or "{}").get("Payload") or {}
        payload = json.loads(payload) if isinstance(payload, str) else payload
        # The alarm watch beside the approval waits on a token too: not the one to answer.
        if payload.get("operation") == "awaitApproval":
            return payload["taskToken"]
    raise AssertionError("no approval waits for a token")


def test_a_rejection_sent_with_the_raw_api_is_bounded_before_it_reaches_the_state():
    """Not through our CLI (which caps its reason): SendTaskFailure with the longest cause AWS
    accepts, 32,768 characters; one more is refused, by AWS and by the harness alike."""
    with Sandbox(log=captured) as sandbox:
        plan = approval_plan(sandbox, timeoutSeconds=120)
        reason = "the new p99 looks off " + "x" * (32_768 - 22)
        refused = []

        def reject_raw(detail_type, detail):
            if detail_type == "Approval Requested":
                sfn = sandbox.client("stepfunctions")
                token = pending_task_token(sandbox, detail["executionArn"])
                try:
                    sfn.send_task_failure(taskToken=token, error="ApprovalRejected", cause=reason + "x")
                except sfn.exceptions.ClientError as e:
                    refused.append(e.response["Error"]["Code"])
                sfn.send_task_failure(taskToken=token, error="ApprovalRejected", cause=reason)

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "rejected-raw"), out=captured,
                                 on_notification=reject_raw)
        assert refused == ["ValidationException"]
        assert (report.status, report.error) == ("FAILED", "ApprovalRejected")
        assert report.cause.startswith(
            "ApprovalRejected while waiting for approval to go to step 3 of 3 (100%); traffic restored to the baseline. "
            "the new p99 looks off xxx"), report.cause[:200]
        assert report.cause.endswith("…")
        assert len(report.cause.encode()) <= scenarios.CONTRACT["limits"]["maxCauseBytes"], len(report.cause.encode())
        assert report.weights == BASELINE
        # Every event, the Rolled Back one with the cause included, passes its schema.
        assert "Rolled Back" in event_types(report)


def test_an_unanswered_approval_times_out_into_a_rollback_or_goes_on_if_the_plan_says_so():
    with Sandbox(log=captured) as sandbox:
        plan = approval_plan(sandbox, timeoutSeconds=3)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "timed-out"), out=captured)
        assert (report.status, report.error) == ("FAILED", "ApprovalTimedOut")
        assert "no approval within 3 seconds" in report.cause
        assert report.weights == BASELINE

        plan["approval"]["onTimeout"] = "promote"
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "timed-out-promote"), out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert report.weights == PROMOTED


def test_an_alarm_while_waiting_for_approval_rolls_back():
    """The polling check during the wait (the alarm changes state without an event: CloudWatch's
    event is not what catches it here; see test_instant_rollback for that)."""
    with Sandbox(log=captured) as sandbox:
        def on_notification(detail_type, detail):
            if detail_type == "Approval Requested":
                # After the wait's own alarm watch began (the third: two bakes before it), which
                # would otherwise find the alarm already in ALARM.
                wait_for_alarm_watch(sandbox, execution_arn, 3)
                sandbox.client("cloudwatch").set_alarm_state(
                    AlarmName="web-green-5xx", StateValue="ALARM", StateReason="Threshold Crossed")

        plan = approval_plan(sandbox, timeoutSeconds=120)
        execution_arn = scenarios.start_manual(sandbox, plan, "alarm-while-waiting")
        report = scenarios.watch(sandbox, execution_arn, out=captured, on_notification=on_notification)
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.cause.startswith("CheckFailed while waiting for approval to go to step 3 of 3 (100%)")
        assert "web-green-5xx" in report.cause
        assert "WatchEvaluate" in report.states
        assert report.weights == BASELINE
        assert event_types(report)[-3:] == ["Approval Requested", "Check Failed", "Rolled Back"]


def test_a_failure_during_the_promotion_bake_restores_the_baseline():
    """At 100 % the old cluster is still attached: a check failing then still rolls back."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        plan["promotion"] = {"bakeSeconds": 8}

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 100:
                assert state["cursor"]["step"]["checks"] == 4, "the promotion bake: 8 s every 2 s"
                sandbox.client("cloudwatch").set_alarm_state(
                    AlarmName="web-green-latency", StateValue="ALARM", StateReason="Threshold Crossed")

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "promotion-bake"),
                                 on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.cause.startswith("Canary check failed at step 3 of 3 (100% of traffic on the new cluster)")
        assert report.max_canary == 100
        assert report.weights == BASELINE
        assert event_types(report)[-2:] == ["Check Failed", "Rolled Back"]


HOOK = "arn:aws:lambda:us-east-1:123456789012:function:cluster-canary-hook-smoke"


def fake_hook(sandbox, answers, seen):
    """The hook function, played by the front door: it records each invocation's payload and
    answers from `answers` in turn (a JSON answer, or ("raise", message))."""
    def predicate(method, path, body):
        if f"/functions/{HOOK}/invocations" not in path:
            return False
        seen.append(json.loads(body))
        answer = answers[min(len(seen), len(answers)) - 1]
        fault[2] = ((200, [("Content-Type", "application/json"), ("X-Amz-Function-Error", "Unhandled")],
                     json.dumps({"errorType": "RuntimeError", "errorMessage": answer[1]}).encode())
                    if isinstance(answer, tuple) else
                    (200, [("Content-Type", "application/json")], json.dumps(answer).encode()))
        return True

    fault = [predicate, 1_000, None]
    sandbox.front.faults.append(fault)


def test_a_failing_before_traffic_hook_moves_nothing():
    with Sandbox(log=captured) as sandbox:
        seen = []
        fake_hook(sandbox, [{"status": "fail", "reason": "smoke test: /healthz answered 503"}], seen)
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        plan["hooks"] = {"beforeTraffic": [HOOK], "timeoutSeconds": 30}
        arn = scenarios.start_manual(sandbox, plan, "hook-before")
        report = scenarios.watch(sandbox, arn, out=captured)
        assert (report.status, report.error) == ("FAILED", "HookFailed")
        assert f"beforeTraffic hook {HOOK} failed: answered fail: smoke test: /healthz answered 503" in report.cause
        assert "SetWeights" not in report.states and report.max_canary == 0
        assert [s["hook"] for s in seen] == ["beforeTraffic"]
        assert seen[0]["executionArn"] == arn and seen[0]["cluster"] == {"name": "green", "region": "us-east-1"}
        assert seen[0]["step"] is None and [w["canary"] for w in seen[0]["weights"]] == [0, 0]
        assert event_types(report) == ["Rollout Started", "Rollout Failed"]
        assert report.weights == BASELINE


def test_a_hook_that_fails_after_a_step_restores_the_baseline():
    with Sandbox(log=captured) as sandbox:
        seen = []
        fake_hook(sandbox, [{"status": "pass"}, ("raise", "KeyError: 'url'")], seen)
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        plan["hooks"] = {"afterEachStep": [HOOK]}
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "hook-after"), out=captured)
        assert (report.status, report.error) == ("FAILED", "HookFailed")
        assert report.cause.startswith("HookFailed at step 2 of 3 (50% of traffic on the new cluster); "
                                       "traffic restored to the baseline.")
        assert f"afterEachStep hook {HOOK} failed: raised RuntimeError: KeyError: 'url'" in report.cause
        assert "errorType" not in report.cause and report.cause.count("HookFailed") == 1, report.cause
        assert [(s["hook"], s["step"]["weight"], s["weights"][0]["canary"]) for s in seen] == [
            ("afterEachStep", 10, 10), ("afterEachStep", 50, 50)]
        assert report.weights == BASELINE
        assert "Rolled Back" in event_types(report)


def cluster_secret(sandbox, name, ours):
    """An Argo CD cluster Secret for the old cluster, created by cluster-canary or by hand."""
    labels = {"argocd.argoproj.io/secret-type": "cluster"}
    if ours:
        labels["app.kubernetes.io/managed-by"] = "cluster-canary"
    kube(sandbox, "POST", "/api/v1/namespaces/argocd/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": labels},
        "stringData": {"name": "blue", "server": f"https://{name}.example.com"}})


def retire_plan(sandbox, secret, **retire):
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["retire"] = {"detachStableTargetGroups": True, "oldCluster": {"name": "blue", "region": "us-east-1"},
                      "argocdSecret": secret, **retire}
    return plan


def forward_groups(sandbox):
    listener = sandbox.client("elbv2").describe_listeners(ListenerArns=[sandbox.world.listener])["Listeners"][0]
    return [(g["TargetGroupArn"], g["Weight"]) for g in listener["DefaultActions"][0]["ForwardConfig"]["TargetGroups"]]


def test_retire_detaches_the_stable_group_and_deletes_our_secret_of_the_old_cluster():
    with Sandbox(log=captured) as sandbox:
        cluster_secret(sandbox, "cluster-canary-blue-0123456789", ours=True)
        plan = retire_plan(sandbox, "cluster-canary-blue-0123456789")
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "retire"), out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert forward_groups(sandbox) == [(sandbox.world.green_tg, 100)], "blue's target group detached"
        assert kube(sandbox, "GET", "/api/v1/namespaces/argocd/secrets/cluster-canary-blue-0123456789") is None
        assert event_types(report)[-2:] == ["Promoted", "Old Cluster Retired"]
        retired = report.events[-1][1]
        assert retired["oldCluster"]["name"] == "blue" and retired["oldCluster"]["arn"].endswith(":cluster/blue")
        assert retired["secret"]["outcome"] == "deleted"
        assert retired["detachedFrom"] == [sandbox.world.listener]
        assert report.safety_net is None, "a success is not the safety net's business"


def test_retire_leaves_a_secret_it_did_not_create_and_stays_promoted():
    with Sandbox(log=captured) as sandbox:
        cluster_secret(sandbox, "blue-by-hand", ours=False)
        plan = retire_plan(sandbox, "blue-by-hand")
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "retire-not-ours"), out=captured)
        assert (report.status, report.error) == ("FAILED", "SecretNotOwned")
        assert report.cause.startswith("The rollout was promoted (the new cluster takes all traffic and keeps it), "
                                       "but retiring the old cluster failed:")
        assert "was not created by cluster-canary (retire.evenIfNotOurs deletes it anyway)" in report.cause
        assert "errorType" not in report.cause and "{" not in report.cause, report.cause
        assert kube(sandbox, "GET", "/api/v1/namespaces/argocd/secrets/blue-by-hand") is not None
        assert report.safety_net["restored"] is False, "promoted: the safety net leaves traffic alone"
        assert report.weights == PROMOTED
        assert event_types(report)[-1] == "Rollout Failed" and report.events[-1][1]["end"] == "RetireFailed"
