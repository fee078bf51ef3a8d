"""End to end: the test-traffic stage (docs/traffic/test-traffic.md) on the sandbox. Before the
first production weight, a listener rule of the rollout's own sends the requests carrying the
plan's header to the new cluster's target group alone, judged by a CloudWatch Synthetics canary
(the harness's model, tests/moto/synthetics.py, runs it as the test says); no user request reaches
green before the stage passes, and the rule is gone after every ending."""
import json
import time

from helpers import BASELINE, PROMOTED, captured, event_types
from sandbox import scenarios, test_traffic
from sandbox.harness import Sandbox
from sandbox.test_traffic import CANARY, create_canary, harness_runs, listener_rules


def stage_plan(sandbox, **stage):
    """The manual plan for `green` (created here), its ALB target only, with a header stage."""
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["trafficTargets"] = plan["trafficTargets"][:1]
    return test_traffic.stage_plan(plan, **stage)


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


def test_the_test_traffic_scenario_checks_the_clusters_own_record_and_promotes():
    """The sandbox's `test-traffic`: both targets, the ALB's rule and the Route 53 target's own
    record `green.app.example.com` (an alias of the load balancer the canary record points at)."""
    said = []
    report = scenarios.run("test-traffic", lambda line: (said.append(line), captured(line)))
    assert report.status == "SUCCEEDED", report.cause
    assert report.weights == PROMOTED
    started = dict(report.events)["Test Traffic Started"]
    urls = {a["url"] for a in started["addresses"]}
    assert urls == {"https://green.app.example.com/", "http://web-1.us-east-1.elb.amazonaws.com/"}, urls
    assert len(started["rules"]) == 1, "a rule for the ALB target; the record is the Route 53 target's"
    [opened] = [line for line in said if line.startswith(">>> test rule at priority 1")]
    assert "listener :80 blue 100 / green 0" in opened, opened
    # The live view (`cluster-canary watch`) says the stage, its addresses and its looks.
    assert any("test traffic only: the new cluster gets only requests that carry" in line for line in said), said
    assert any("test address: https://green.app.example.com/" in line for line in said)
    assert any("test address: http://web-1.us-east-1.elb.amazonaws.com/ (x-canary: green)" in line for line in said)
    assert any("test traffic passed: " in line for line in said)


def test_a_failed_synthetics_run_ends_the_rollout_with_no_user_request_sent_and_no_rule_left():
    """The sandbox's `test-traffic-fails`."""
    report = scenarios.run("test-traffic-fails", captured)
    assert (report.status, report.error) == ("FAILED", "TestTrafficFailed")
    assert f"Synthetics canary {CANARY}: a run FAILED (GET /checkout answered 503)" in report.cause
    assert "test address http://" in report.cause and "(x-canary: green)" in report.cause
    assert "https://green.app.example.com/" in report.cause
    assert "SetWeights" not in report.states and report.max_canary == 0, "no user ever reached green"
    assert event_types(report) == ["Rollout Started", "Test Traffic Started", "Test Traffic Failed", "Rollout Failed"]
    assert report.weights == BASELINE


def test_an_own_record_that_points_elsewhere_is_refused_before_anything_is_made():
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        scenarios.create_green(sandbox)
        plan = test_traffic.stage_plan(scenarios.manual_plan(sandbox), recordName="nowhere.app.example.com")
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "no-record"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TargetMisconfigured"), report.cause
        assert "testTraffic.recordName `nowhere.app.example.com` does not resolve to the new cluster's load " \
               "balancer" in report.cause and "there is no such record" in report.cause, report.cause
        assert listener_rules(sandbox) == [], "the ALB target's rule is not made either"
        assert report.max_canary == 0


def test_a_run_that_never_comes_fails_the_stage_at_its_end(tmp_path):
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        plan = stage_plan(sandbox, bakeSeconds=2)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "no-run"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TestTrafficFailed")
        assert f"no passed run of the Synthetics canaries {CANARY} within the stage's 2 s" in report.cause
        assert report.states.count("LookAtTestTraffic") >= 2, "held, looked at again, then failed"
        assert any(name == "GateHolds" and dims.get("Gate") == "testTraffic" for name, dims, _ in report.metrics), \
            report.metrics
        page = tmp_path / "report.html"
        written = sandbox.cli("report", report.execution_arn, "--out", str(page))
        assert written.returncode == 0, written.stderr
        assert "<td>the test-traffic stage</td><td>" in page.read_text() and "waiting for a run of green-smoke" \
            in page.read_text(), "the report's Held table has the stage's looks"
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


def test_the_sweep_deletes_the_rule_a_promotion_could_not_and_says_so():
    """A promotion whose CloseTestTraffic is refused (shift-weights denied DeleteRule once the stage
    passed): the rollout still ends SUCCEEDED and promoted, the rule is left, and the next sweeps,
    the grant back, delete it and say so; the promoted weights are not touched."""
    from sandbox.histories.faults import DENY_POLICY
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        harness_runs(sandbox, {CANARY: ["PASSED"]})
        plan = stage_plan(sandbox)
        role = sandbox.client("lambda").get_function_configuration(
            FunctionName=sandbox.function("shift-weights"))["Role"].rsplit("/", 1)[-1]
        iam = sandbox.client("iam")

        def on_event(name, state):
            if name == "NotifyTestTrafficPassed":
                iam.put_role_policy(RoleName=role, PolicyName=DENY_POLICY, PolicyDocument=json.dumps({
                    "Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Action": "elasticloadbalancing:DeleteRule",
                                                            "Resource": "*"}]}))

        arn = scenarios.start_manual(sandbox, plan, "rule-kept")
        report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert "Promoted" in event_types(report)
        assert len(listener_rules(sandbox)) == 1, "the promotion could not delete it"
        iam.delete_role_policy(RoleName=role, PolicyName=DENY_POLICY)
        deadline = time.monotonic() + 60
        while not sandbox.sweep.swept(arn):
            assert time.monotonic() < deadline, "the sweep never deleted the rule"
            time.sleep(0.5)
        [swept] = sandbox.sweep.swept(arn)
        assert swept["reason"].startswith("the execution ended SUCCEEDED; its test-traffic rules were left "
                                          "behind, and the sweep deleted them"), swept
        assert swept["weights"] == [] and listener_rules(sandbox) == []
        assert only_alb(scenarios.read_weights(sandbox)) == only_alb(PROMOTED), "the promotion stands"


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


def test_plan_check_says_the_rule_and_the_addresses_and_refuses_a_clash_making_nothing(tmp_path):
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        test_traffic.create_own_record(sandbox)
        scenarios.create_green(sandbox)
        plan = test_traffic.stage_plan(scenarios.manual_plan(sandbox))
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan))
        checked = sandbox.cli("plan", "check", str(path))
        captured(checked.stdout + checked.stderr)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert ": a rule at priority 1 sends requests with http-header x-canary: green to the canary target " \
               "group alone" in checked.stdout
        assert "test address: http://web-1.us-east-1.elb.amazonaws.com/ (x-canary: green)" in checked.stdout
        assert "test address: https://green.app.example.com/" in checked.stdout
        assert f"✓ Synthetics canary {CANARY} (us-east-1): READY" in checked.stdout

        sandbox.client("elbv2").create_rule(
            ListenerArn=sandbox.world.listener, Priority=7,
            Conditions=[{"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": "x-canary", "Values": ["green"]}}],
            Actions=[{"Type": "forward", "TargetGroupArn": sandbox.world.blue_tg}])
        plan["testTraffic"]["syntheticsCanaries"] = ["nobody-made-me"]
        path.write_text(json.dumps(plan))
        refused = sandbox.cli("plan", "check", str(path))
        captured(refused.stdout + refused.stderr)
        assert refused.returncode != 0
        assert "✗ test traffic: TargetMisconfigured: trafficTargets[0]" in refused.stdout, refused.stdout
        assert "at priority 7 already matches the test requests" in refused.stdout
        assert "✗ Synthetics canary: TargetNotFound: testTraffic.syntheticsCanaries: nobody-made-me" \
               in refused.stdout, refused.stdout
        assert "nobody-made-me" in refused.stdout
        assert [p for p, *_ in listener_rules(sandbox)] == ["7"], "plan check makes nothing"


def test_a_test_traffic_hook_gets_the_test_address_and_its_failure_fails_the_stage():
    from test_gates import HOOK, fake_hook
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        harness_runs(sandbox, {CANARY: ["PASSED"]})
        seen = []
        fake_hook(sandbox, [{"status": "fail", "reason": "GET / with x-canary: green answered 502"}], seen)
        plan = stage_plan(sandbox, bakeSeconds=30)
        plan["hooks"] = {"testTraffic": [HOOK], "timeoutSeconds": 30}
        arn = scenarios.start_manual(sandbox, plan, "hook-in-stage")
        report = scenarios.watch(sandbox, arn, out=captured)
        assert (report.status, report.error) == ("FAILED", "HookFailed"), report.cause
        assert f"testTraffic hook {HOOK} failed: answered fail: GET / with x-canary: green answered 502" in report.cause
        [payload] = seen
        assert payload["hook"] == "testTraffic" and payload["executionArn"] == arn
        [address] = payload["testTraffic"]["addresses"]
        assert address["url"] == "http://web-1.us-east-1.elb.amazonaws.com/" and address["headers"] == {"x-canary": "green"}
        assert [w["canary"] for w in payload["weights"]] == [0], "no user request reaches green"
        assert event_types(report) == ["Rollout Started", "Test Traffic Started", "Test Traffic Failed", "Rollout Failed"]
        assert listener_rules(sandbox) == [] and report.max_canary == 0


def put_canary_requests(sandbox, requests, errors):
    """What the load balancer says green's target group answered (all of it test requests)."""
    world = sandbox.world
    dimensions = [{"Name": "LoadBalancer", "Value": world.listener.split(":listener/", 1)[1].rsplit("/", 1)[0]},
                  {"Name": "TargetGroup", "Value": world.green_tg.rsplit(":", 1)[1]}]
    sandbox.client("cloudwatch").put_metric_data(Namespace="AWS/ApplicationELB", MetricData=[
        {"MetricName": "RequestCount", "Dimensions": dimensions, "Value": requests, "Unit": "Count"},
        {"MetricName": "HTTPCode_Target_5XX_Count", "Dimensions": dimensions, "Value": errors, "Unit": "Count"}])


def test_a_stage_that_tested_nothing_fails_and_so_do_the_canary_groups_own_5xx():
    with Sandbox(log=captured) as sandbox:
        plan = stage_plan(sandbox, bakeSeconds=2, maxErrorRatePercent=5)
        del plan["testTraffic"]["syntheticsCanaries"]
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "quiet"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TestTrafficFailed"), report.cause
        assert "only 0 test requests reached the canary target groups within the stage's 2 s (minRequests 10): " \
               "the stage tested nothing" in report.cause, report.cause

        plan["testTraffic"].update(bakeSeconds=30, minRequests=10)
        arn = scenarios.start_manual(sandbox, plan, "5xx")

        def on_event(name, state):
            if name == "OpenTestTraffic":
                put_canary_requests(sandbox, 20, 4)

        report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "TestTrafficFailed"), report.cause
        assert "the canary target groups answered 20.0 % of their 20 test requests with 5xx " \
               "(maxErrorRatePercent 5)" in report.cause, report.cause
        assert report.max_canary == 0 and listener_rules(sandbox) == []


def test_a_safety_net_that_cannot_delete_the_rule_still_puts_the_weights_back_first():
    """A stop at the first step, with shift-weights denied DeleteRule (someone narrowed its role):
    the safety net restores the baseline, then fails on the rule, and says so; the weights never
    wait for the rule."""
    from sandbox.histories.faults import DENY_POLICY
    with Sandbox(log=captured) as sandbox:
        create_canary(sandbox)
        harness_runs(sandbox, {CANARY: ["PASSED"]})
        plan = stage_plan(sandbox)
        plan["bake"] = {"seconds": 600, "checkIntervalSeconds": 5}
        arn = scenarios.start_manual(sandbox, plan, "no-delete")
        role = sandbox.client("lambda").get_function_configuration(
            FunctionName=sandbox.function("shift-weights"))["Role"].rsplit("/", 1)[-1]
        sfn = sandbox.client("stepfunctions")

        def on_event(name, state):
            if name == "SetWeights":
                sandbox.client("iam").put_role_policy(RoleName=role, PolicyName=DENY_POLICY, PolicyDocument=json.dumps({
                    "Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Action": "elasticloadbalancing:DeleteRule",
                                                            "Resource": "*"}]}))
                time.sleep(1.5)  # IAM here, as on AWS, takes a policy change within a second or so
                sfn.stop_execution(executionArn=arn, cause="a person stopped it at the first step")

        report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured, await_safety_net=False)
        assert report.status == "ABORTED"
        deadline = time.monotonic() + 60
        while arn not in sandbox.safety_net.answers:
            assert time.monotonic() < deadline, "the safety net never answered"
            time.sleep(0.5)
        error, answer = sandbox.safety_net.answers[arn]
        assert error and "elasticloadbalancing:DeleteRule" in json.dumps(answer), answer
        assert only_alb(scenarios.read_weights(sandbox)) == only_alb(BASELINE), "the weights went back first"
        assert len(listener_rules(sandbox)) == 1, "the rule is left for a retry, the sweep or a person"
