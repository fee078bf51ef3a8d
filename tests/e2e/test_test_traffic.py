"""End to end: the test-traffic stage (docs/traffic/test-traffic.md) on the sandbox. Before the
first production weight, a listener rule of the rollout's own sends the requests carrying the
plan's header to the new cluster's target group alone, judged by a CloudWatch Synthetics canary
(the harness's model, tests/moto/synthetics.py, runs it as the test says); no user request reaches
green before the stage passes, and the rule is gone after every ending."""
import json
import time
import urllib.request

from helpers import BASELINE, PROMOTED, captured, event_types
from sandbox import scenarios
from sandbox.harness import Sandbox
from sandbox.world import ACCOUNT, REGION

CANARY = "green-smoke"


def harness_runs(sandbox, runs):
    """The canaries' next runs, as the harness's control sets them."""
    request = urllib.request.Request(f"{sandbox.moto_endpoint}/_harness/synthetics/{ACCOUNT}/{REGION}",
                                     method="POST", data=json.dumps({"runs": runs}).encode())
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def create_canary(sandbox):
    """A canary that calls the test address, READY (not running): the stage starts it."""
    sandbox.client("synthetics").create_canary(
        Name=CANARY, Code={"Handler": "index.handler", "S3Bucket": "code", "S3Key": "smoke.zip"},
        ArtifactS3Location="s3://artifacts/green", ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/canary",
        Schedule={"Expression": "rate(1 minute)"}, RuntimeVersion="syn-nodejs-puppeteer-9.1")


def stage_plan(sandbox, **stage):
    """The manual plan for `green` (created here), its ALB target only, with a header stage."""
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["trafficTargets"] = plan["trafficTargets"][:1]
    plan["testTraffic"] = {
        "conditions": {"httpHeader": {"name": "x-canary", "values": ["green"]}},
        "bakeSeconds": 3, "checkIntervalSeconds": 1, "syntheticsCanaries": [CANARY], **stage,
    }
    return plan


def listener_rules(sandbox):
    """The listener's rules but its default: (priority, conditions, forward groups, tags)."""
    elbv2 = sandbox.client("elbv2")
    rules = [r for r in elbv2.describe_rules(ListenerArn=sandbox.world.listener)["Rules"] if not r["IsDefault"]]
    tags = {}
    if rules:
        for description in elbv2.describe_tags(ResourceArns=[r["RuleArn"] for r in rules])["TagDescriptions"]:
            tags[description["ResourceArn"]] = {t["Key"]: t["Value"] for t in description["Tags"]}
    return [(r["Priority"], r["Conditions"], [a.get("TargetGroupArn") for a in r["Actions"]], tags.get(r["RuleArn"], {}))
            for r in rules]


def only_alb(weights):
    return {k: v for k, v in weights.items() if k.startswith("listener")}


def test_a_passing_stage_sends_only_test_requests_to_green_then_the_steps_follow_and_the_rule_goes():
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        harness_runs(sandbox, {CANARY: ["PASSED"]})
        plan = stage_plan(sandbox)
        during = []

        def on_event(name, state):
            if name == "OpenTestTraffic":
                during.append((listener_rules(sandbox), scenarios.read_weights(sandbox)))

        arn = scenarios.start_manual(sandbox, plan, "test-traffic")
        report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
        assert report.status == "SUCCEEDED", report.cause
        states = report.states
        assert states.index("OpenTestTraffic") < states.index("NotifyTestTrafficPassed") < states.index("SetWeights")
        [(rules, weights)] = during
        [(priority, conditions, groups, tags)] = rules
        assert priority == "1", "ahead of every rule: the listener had none"
        assert conditions[0]["Field"] == "http-header"
        assert conditions[0]["HttpHeaderConfig"] == {"HttpHeaderName": "x-canary", "Values": ["green"]}
        assert groups == [sandbox.world.green_tg], "test requests go to green alone"
        assert tags == {"cluster-canary:execution": arn}
        assert only_alb(weights) == only_alb(BASELINE), "no user request reaches green during the stage"
        assert event_types(report)[:3] == ["Rollout Started", "Test Traffic Started", "Test Traffic Passed"]
        started = dict(report.events)["Test Traffic Started"]
        [address] = started["addresses"]
        assert address["url"].startswith("http://") and address["headers"] == {"x-canary": "green"}
        assert listener_rules(sandbox) == [], "promoted: the rule is gone"
        assert only_alb(report.weights) == only_alb(PROMOTED)
        state = sandbox.client("synthetics").get_canary(Name=CANARY)["Canary"]["Status"]["State"]
        assert state == "RUNNING", "the stage started the canary it was given stopped"


def test_a_failed_synthetics_run_ends_the_rollout_with_no_user_request_sent_and_no_rule_left():
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        harness_runs(sandbox, {CANARY: [{"state": "FAILED", "reason": "GET /checkout answered 503"}]})
        plan = stage_plan(sandbox, bakeSeconds=30)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "test-traffic-fails"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TestTrafficFailed")
        assert f"Synthetics canary {CANARY}: a run FAILED (GET /checkout answered 503)" in report.cause
        assert "test address http://" in report.cause and "(x-canary: green)" in report.cause
        assert "SetWeights" not in report.states and report.max_canary == 0, "no user ever reached green"
        assert event_types(report) == ["Rollout Started", "Test Traffic Started", "Test Traffic Failed", "Rollout Failed"]
        assert listener_rules(sandbox) == [], "the failed stage's rule is deleted"
        assert only_alb(report.weights) == only_alb(BASELINE)


def test_a_run_that_never_comes_fails_the_stage_at_its_end():
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        plan = stage_plan(sandbox, bakeSeconds=2)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "no-run"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TestTrafficFailed")
        assert f"no passed run of the Synthetics canaries {CANARY} within the stage's 2 s" in report.cause
        assert report.states.count("LookAtTestTraffic") >= 2, "held, looked at again, then failed"
        assert report.max_canary == 0 and listener_rules(sandbox) == []


def test_a_condition_another_rule_already_matches_is_refused_and_creates_nothing():
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        plan = stage_plan(sandbox)
        elbv2 = sandbox.client("elbv2")
        elbv2.create_rule(ListenerArn=sandbox.world.listener, Priority=10,
                          Conditions=[{"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": "X-Canary", "Values": ["green", "blue"]}}],
                          Actions=[{"Type": "forward", "TargetGroupArn": sandbox.world.blue_tg}])
        before = listener_rules(sandbox)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "clash"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TargetMisconfigured")
        assert "at priority 10 already matches the test requests" in report.cause
        assert listener_rules(sandbox) == before and report.max_canary == 0


def test_a_rollout_stopped_during_the_stage_leaves_no_rule():
    """ABORTED runs no Catch: the safety net, which hears of the end, deletes the rule."""
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        plan = stage_plan(sandbox, bakeSeconds=600, checkIntervalSeconds=5)
        sfn = sandbox.client("stepfunctions")
        arn = scenarios.start_manual(sandbox, plan, "stopped")

        def on_event(name, state):
            if name == "NotifyTestTrafficStarted":
                assert len(listener_rules(sandbox)) == 1
                sfn.stop_execution(executionArn=arn, cause="a person stopped it")

        report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
        assert report.status == "ABORTED"
        deadline = time.monotonic() + 30
        while listener_rules(sandbox):
            assert time.monotonic() < deadline, "the safety net never deleted the test rule"
            time.sleep(0.5)
        assert report.max_canary == 0


def test_the_sweep_deletes_the_rule_of_a_rollout_whose_safety_net_never_came():
    """The crash case: the execution ends with no Catch run and no safety net delivery (its rule
    off, the function's queue held); the scheduled sweep finds the ended rollout's rule, deletes it
    and says so."""
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        plan = stage_plan(sandbox, bakeSeconds=600, checkIntervalSeconds=5)
        sfn, events = sandbox.client("stepfunctions"), sandbox.client("events")
        arn = scenarios.start_manual(sandbox, plan, "crashed")
        deadline = time.monotonic() + 120
        while not listener_rules(sandbox):
            assert time.monotonic() < deadline, "the stage never opened"
            time.sleep(0.5)
        events.disable_rule(Name=sandbox.safety_net.rule)
        with sandbox.safety_net.held():
            sfn.stop_execution(executionArn=arn, cause="the stage's Lambda never answered")
            assert len(listener_rules(sandbox)) == 1, "left behind: nothing ran at the end"
        deadline = time.monotonic() + 60
        while not sandbox.sweep.swept(arn):
            assert time.monotonic() < deadline, "the sweep never deleted the rule"
            time.sleep(0.5)
        [swept] = sandbox.sweep.swept(arn)
        assert "its test-traffic rules were left behind, and the sweep deleted them" in swept["reason"], swept
        assert listener_rules(sandbox) == []
        said = [d for t, d in scenarios.read_events(sandbox, arn) if t == "Safety Net Swept"]
        assert len(said) == 1 and said[0]["weights"] == [], said


def test_a_rule_creation_iam_refuses_ends_the_rollout_with_nothing_made_or_moved(tmp_path):
    """The stack may create only rules tagged with an execution of its own state machine: a
    template whose grant names another state machine's executions is refused by IAM, as AWS
    refuses it, before anything is made."""
    from test_iam import template_copy
    template = template_copy(
        tmp_path,
        "                  aws:RequestTag/cluster-canary:execution: !Sub arn:${AWS::Partition}:states:${AWS::Region}:"
        "${AWS::AccountId}:execution:${AWS::StackName}-rollout:*\n            - Effect: Allow\n"
        "              Action: elasticloadbalancing:AddTags",
        "                  aws:RequestTag/cluster-canary:execution: !Sub arn:${AWS::Partition}:states:${AWS::Region}:"
        "${AWS::AccountId}:execution:${AWS::StackName}-other:*\n            - Effect: Allow\n"
        "              Action: elasticloadbalancing:AddTags")
    with Sandbox(log=captured, template=template) as sandbox:
        create_canary(sandbox)
        plan = stage_plan(sandbox)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "refused"), out=captured)
        assert (report.status, report.error) == ("FAILED", "AwsAccessDenied"), report.cause
        assert "elasticloadbalancing:CreateRule" in report.cause, report.cause
        assert event_types(report) == ["Rollout Started", "Test Traffic Failed", "Rollout Failed"]
        assert listener_rules(sandbox) == [] and report.max_canary == 0
        decisions = [d for d in sandbox.front.authorizer.decisions if d[1] == "elasticloadbalancing:CreateRule"]
        assert decisions and not any(allowed for *_, allowed in decisions)
