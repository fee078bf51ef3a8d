"""What the end-to-end tests share: the world's weights at the start and after promotion, and
foreign weight changes. (Manual plans and executions are the sandbox's: sandbox.scenarios.)"""

import json
import time
from pathlib import Path

import jsonschema

from sandbox import scenarios
from sandbox.harness import ALARM_WATCH_TABLE, REPO

BASELINE = {"listener :80": (100, 0), "app.example.com.": (100, 0)}
# How an execution ends FailedBeforeTraffic: the outcome, the Rollout Failed event, the end.
# A function's error: the cause ends with the error's message, not its JSON document.
FAILED_BEFORE_TRAFFIC = ["FailedBeforeTrafficOutcome", "OutcomeDetail?", "ReadOutcomeDetail", "OutcomeEndsWithErrorMessage",
                         "NotifyRolloutFailed", "RolloutFailedEnd?", "FailedBeforeTraffic"]
# How a rollback for a failed check ends, from the restore on.
ROLLED_BACK_FOR_A_CHECK = ["Restore", "FailureDetail?", "EndWithDetail", "RolledBackBy?", "NotifyCheckFailed",
                           "NotifyRolledBack", "RolledBack"]
EVENT_SCHEMAS = Path(__file__).resolve().parents[2] / "schema/events"
PROMOTED = {"listener :80": (0, 100), "app.example.com.": (0, 100)}


def captured(line):
    """pytest captures the live view and shows it for a failing test."""
    print(line)


def move_listener_by_hand(sandbox, blue, green):
    """Someone else (a person, another tool) sets the listener's weights."""
    world = sandbox.world
    sandbox.client("elbv2").modify_listener(
        ListenerArn=world.listener,
        DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
            {"TargetGroupArn": world.blue_tg, "Weight": blue},
            {"TargetGroupArn": world.green_tg, "Weight": green}]}}],
    )


def event_types(report):
    """The detail-types of the execution's events, in order, each checked against its JSON
    schema in schema/events/."""
    for detail_type, detail in report.events:
        schema = json.loads((EVENT_SCHEMAS / f"{detail_type.lower().replace(' ', '-')}.schema.json").read_text())
        jsonschema.validate(detail, schema)
    return [detail_type for detail_type, _ in report.events]


def delete_cluster_event(name, region):
    """The EventBridge event for DeleteCluster of `name`, as EventBridge delivers it."""
    event = json.loads((REPO / "tests/events/eks-delete-cluster.json").read_text())
    detail = event["detail"]
    detail["awsRegion"] = event["region"] = region
    detail["requestParameters"]["name"] = name
    detail["responseElements"]["cluster"].update(name=name, arn=scenarios.cluster_arn(name, region))
    return event


def watch_tokens(sandbox, execution_arn):
    """The task tokens of the execution's watchAlarms tasks (bakes and approval waits), in the
    order they were scheduled, as its history records them."""
    sfn, events, token = sandbox.client("stepfunctions"), [], None
    while True:
        page = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000, **({"nextToken": token} if token else {}))
        events += page["events"]
        token = page.get("nextToken")
        if not token:
            break
    tokens = []
    for event in events:
        details = event.get("taskScheduledEventDetails")
        if not details or "watchAlarms" not in details["parameters"]:
            continue
        payload = json.loads(details["parameters"])["Payload"]
        tokens.append((json.loads(payload) if isinstance(payload, str) else payload)["taskToken"])
    return tokens


def wait_for_alarm_watch(sandbox, execution_arn, nth, timeout=60):
    """Waits until the execution's `nth` alarm watch (1 = its first watchAlarms task) is the one
    registered in the AlarmWatchTable: from then on an alarm's event fails that wait."""
    dynamodb = sandbox.client("dynamodb")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tokens = watch_tokens(sandbox, execution_arn)
        item = dynamodb.get_item(TableName=ALARM_WATCH_TABLE, Key={"executionArn": {"S": execution_arn}}).get("Item")
        if len(tokens) >= nth and item and item["taskToken"]["S"] == tokens[nth - 1]:
            return
        time.sleep(0.2)
    raise TimeoutError(f"alarm watch {nth} of {execution_arn} not registered in {timeout} s")
