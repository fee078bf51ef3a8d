"""IAM enforced on the stack's roles: every call a function or the state machine makes is
authorized against its role's policies as the template grants them (sandbox/iam.py), so an
action or a resource the template forgets fails the rollout with AccessDenied, as on AWS."""
import json
import shutil
import time

import jsonschema
import pytest

from helpers import captured
from sandbox import scenarios
from sandbox.harness import REPO, Sandbox
from sandbox.intake import NoRolloutStarted
from sandbox.world import ACCOUNT, REGION

BASELINE = {"listener :80": (100, 0), "app.example.com.": (100, 0)}


def template_copy(tmp_path, old, new):
    text = (REPO / "template.yaml").read_text()
    assert text.count(old) == 1, f"the template has exactly one {old!r}"
    copy = tmp_path / "template.yaml"
    copy.write_text(text.replace(old, new))
    # Its paths are relative to it, as `sam deploy` reads them.
    shutil.copytree(REPO / "statemachine", tmp_path / "statemachine")
    return copy


def role_of(sandbox, binary):
    name = sandbox.function(binary)
    role = sandbox.client("lambda").get_function_configuration(FunctionName=name)["Role"]
    return role.rsplit("/", 1)[1]


def test_every_call_of_a_rollout_is_authorized_as_its_callers_role():
    with Sandbox(log=captured) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "SUCCEEDED", report.cause
        decisions = sandbox.front.authorizer.decisions
        assert decisions and all(allowed for *_, allowed in decisions), \
            [d for d in decisions if not d[-1]]
        by_role = {}
        for caller, action, resources, _ in decisions:
            by_role.setdefault(caller.split(":assumed-role/")[1].split("/")[0], {}).setdefault(action, set()).update(resources)
        shift = by_role[role_of(sandbox, "shift-weights")]
        assert shift["elasticloadbalancing:ModifyListener"] == {sandbox.world.listener}, "checked on the listener's ARN"
        assert shift["route53:ChangeResourceRecordSets"] == {f"arn:aws:route53:::hostedzone/{sandbox.world.zone_id}"}
        assert "states:StartExecution" in by_role[role_of(sandbox, "cluster-created")]
        assert "eks:DescribeCluster" in by_role[role_of(sandbox, "register-cluster")]
        assert "cloudwatch:DescribeAlarms" in by_role[role_of(sandbox, "evaluate-alarms")]
        # The state machine's own calls, as its role.
        machine_role = sandbox.client("stepfunctions").describe_state_machine(
            stateMachineArn=sandbox.state_machine)["roleArn"].rsplit("/", 1)[1]
        machine = by_role[machine_role]
        assert machine["lambda:InvokeFunction"] >= {
            sandbox.client("lambda").get_function_configuration(FunctionName=sandbox.function(b))["FunctionArn"]
            for b in ("shift-weights", "evaluate-alarms", "register-cluster")}
        assert machine["events:PutEvents"] == {f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"}


def test_a_role_missing_an_action_fails_the_rollout_with_access_denied_before_traffic_moves(tmp_path):
    template = template_copy(
        tmp_path,
        "              Action: elasticloadbalancing:ModifyListener\n",
        "              Action: elasticloadbalancing:ModifyListenerAttributes\n")
    with Sandbox(log=captured, template=template) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "FAILED"
        assert "AccessDenied" in report.cause and "elasticloadbalancing:ModifyListener" in report.cause, report.cause
        assert report.max_canary == 0, "nothing moved"
        assert scenarios.read_weights(sandbox) == BASELINE


def test_a_grant_narrowed_to_another_load_balancer_fails_the_rollout_with_access_denied():
    with Sandbox(log=captured, parameters={"LoadBalancerNamePrefix": "checkout-"}) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "FAILED"
        assert "AccessDenied" in report.cause and "elasticloadbalancing:ModifyListener" in report.cause, report.cause
        assert ":listener/app/web/" in report.cause, "the listener the grant does not cover is named"
        assert report.max_canary == 0, "nothing moved"
        assert scenarios.read_weights(sandbox) == BASELINE


def received(sqs, queue_url, expected, timeout=30):
    """The bodies of `expected` messages of the queue (JSON), waiting for them."""
    bodies, waited = [], 0
    while len(bodies) < expected and waited < timeout:
        answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        bodies += [json.loads(m["Body"]) for m in answer.get("Messages", [])]
        waited += 1
    return bodies


def test_a_create_cluster_that_starts_no_rollout_is_named_in_an_event_reaches_the_dead_letter_queue_and_pages(tmp_path):
    """cluster-created may not start executions: the new cluster gets no canary. A person hears of
    it once (`Rollout Not Started`, naming the cluster and the refused action), and, a refusal
    not being tried again, the CloudTrail event is in the intake's dead-letter queue at once,
    whose alarm pages."""
    template = template_copy(
        tmp_path,
        "            - Effect: Allow\n              Action: states:StartExecution\n"
        "              Resource: !Ref RolloutStateMachine\n            - Effect: Allow\n"
        "              Action: states:DescribeExecution\n",
        "            - Effect: Allow\n              Action: states:DescribeExecution\n")
    with Sandbox(log=captured, template=template) as sandbox:
        # What a team subscribes to: cluster-canary's events, here into a queue.
        sqs, events = sandbox.client("sqs"), sandbox.client("events")
        subscribed = sqs.create_queue(QueueName="cluster-canary-events")["QueueUrl"]
        subscribed_arn = sqs.get_queue_attributes(QueueUrl=subscribed, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="cluster-canary-events", EventPattern=json.dumps({"source": ["cluster-canary"]}))
        events.put_targets(Rule="cluster-canary-events", Targets=[{"Id": "queue", "Arn": subscribed_arn}])

        created = scenarios.create_cluster_event(sandbox)
        with pytest.raises(NoRolloutStarted) as refused:
            scenarios.put_create_cluster_event(sandbox, event=created)
        said = str(refused.value)
        assert said.startswith("cluster-created started no rollout for cluster green: AwsAccessDenied"), said
        assert "states:StartExecution" in said and "ClusterIntakeDeadLetterQueue" in said, said
        assert sandbox.client("stepfunctions").list_executions(stateMachineArn=sandbox.state_machine)["executions"] == []

        # Said once: a refusal is not tried again (neither by Lambda nor by the intake).
        published = received(sqs, subscribed, 1)
        assert [e["detail-type"] for e in published] == ["Rollout Not Started"], published
        time.sleep(2)
        assert sqs.receive_message(QueueUrl=subscribed, WaitTimeSeconds=1).get("Messages", []) == [], "said again"
        schema = scenarios.event_schema("Rollout Not Started")
        for event in published:
            jsonschema.validate(event["detail"], schema)
        detail = published[0]["detail"]
        assert detail["cluster"] == {"name": "green", "region": REGION}
        assert detail["clusterArn"] == scenarios.cluster_arn("green")
        assert detail["profile"] == "web" and detail["error"] == "AwsAccessDenied"
        assert "states:StartExecution" in detail["cause"], detail
        assert len({e["detail"]["eventId"] for e in published}) == 1

        # Lambda's record after the last try, sent as the function's role, in the intake's queue.
        dead_letters = sandbox.stack.outputs["ClusterIntakeDeadLetterQueueUrl"]
        [record] = received(sqs, dead_letters, 1)
        assert record["requestContext"]["condition"] == "RetriesExhausted"
        assert record["requestContext"]["approximateInvokeCount"] == 1, "to the dead-letter queue at once"
        assert record["requestPayload"]["detail"]["requestParameters"]["name"] == "green"
        assert record["responsePayload"]["errorType"] == "AwsAccessDenied"
        sent = [d for d in sandbox.front.authorizer.decisions if d[1] == "sqs:SendMessage"]
        assert sent and all(allowed for *_, allowed in sent), sent
        assert all(":assumed-role/" + role_of(sandbox, "cluster-created") + "/" in caller for caller, *_ in sent)

        # EventBridge delivers at least once: the same CloudTrail event again is answered as a
        # duplicate (the intake recorded it in the stack's bucket), said and failed no more.
        event_id = created["detail"]["eventID"]
        sandbox.intake.answers.pop(event_id)
        with pytest.raises(NoRolloutStarted) as again:
            scenarios.put_create_cluster_event(sandbox, event=created)
        assert "was delivered before (s3://" in str(again.value) and "not acted on or said again" in str(again.value), again.value
        assert sandbox.intake.answer_for(event_id)[0] is None, "no function error"
        time.sleep(2)
        assert sqs.receive_message(QueueUrl=subscribed, WaitTimeSeconds=1).get("Messages", []) == [], "said again"
        counts = sqs.get_queue_attributes(QueueUrl=dead_letters, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        assert sum(int(n) for n in counts.values()) == 1, f"failed again: {counts}"
        recorded = [d for d in sandbox.front.authorizer.decisions if d[1] == "s3:PutObject"]
        assert len(recorded) == 2 and all(allowed for *_, allowed in recorded), recorded

        # Its alarm watches that queue and pages.
        [alarm] = sandbox.client("cloudwatch").describe_alarms(
            AlarmNames=[sandbox.stack.resources["ClusterIntakeFailedAlarm"]])["MetricAlarms"]
        assert alarm["Namespace"] == "AWS/SQS" and alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": dead_letters.rsplit("/", 1)[1]}]
        assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_an_alarm_watch_that_cannot_be_registered_is_said_once_and_the_polling_checks_still_judge(tmp_path, capsys):
    """evaluate-alarms may not write the alarm watch table: every bake's watch fails, so an alarm
    would roll back only at the next polling check. The first failure says so: `Instant Rollback
    Off` and the AlarmWatchUnavailable metric, once for the rollout; the live view says it; the
    rollout still promotes on its polling checks."""
    template = template_copy(
        tmp_path,
        "                - dynamodb:BatchWriteItem\n                - dynamodb:Query\n",
        "                - dynamodb:Query\n")
    with Sandbox(log=captured, template=template) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "SUCCEEDED", report.cause
        assert report.states.count("AlarmWatchUnavailable") == 3, "each step's watch failed"
        said = [detail for detail_type, detail in report.events if detail_type == "Instant Rollback Off"]
        assert len(said) == 1, report.events
        jsonschema.validate(said[0], scenarios.event_schema("Instant Rollback Off"))
        assert said[0]["error"] == "AwsAccessDenied" and "dynamodb:BatchWriteItem" in said[0]["cause"], said[0]
        assert said[0]["cluster"] == {"name": "green", "region": REGION}
        unavailable = [m for m in report.metrics if m[0] == "AlarmWatchUnavailable"]
        assert unavailable == [("AlarmWatchUnavailable", {"Cluster": f"{REGION}/green"}, 1)], report.metrics
        assert "INSTANT ROLLBACK OFF" in capsys.readouterr().out
        [alarm] = sandbox.client("cloudwatch").describe_alarms(
            AlarmNames=[sandbox.stack.resources["AlarmWatchUnavailableAlarm"]])["MetricAlarms"]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Dimensions"]) == (
            "ClusterCanary", "AlarmWatchUnavailable", [])
