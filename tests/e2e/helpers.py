"""What the end-to-end tests share: the world's weights at the start and after promotion, and
foreign weight changes. (Manual plans and executions are the sandbox's: sandbox.scenarios.)"""

import json
from pathlib import Path

import jsonschema

from sandbox import scenarios
from sandbox.harness import REPO
from sandbox.scenarios import wait_for_alarm_watch  # noqa: F401 (the tests' import)

BASELINE = {"listener :80": (100, 0), "app.example.com.": (100, 0)}
# How an execution ends FailedBeforeTraffic: the outcome, the Rollout Failed event, the end.
# A function's error: the cause ends with the error's message, not its JSON document.
FAILED_BEFORE_TRAFFIC = ["FailedBeforeTrafficOutcome", "OutcomeDetail?", "ReadOutcomeDetail", "OutcomeEndsWithErrorMessage",
                         "NotifyRolloutFailed", "RolloutFailedEnd?", "FailedBeforeTraffic"]
# How a rollback for a failed check ends, from the restore on: the restore, its events, and the look
# after the settle period (nothing had moved).
ROLLED_BACK_FOR_A_CHECK = ["Restore", "FailureDetail?", "EndWithDetail", "RolledBackBy?", "NotifyCheckFailed",
                           "NotifyRolledBack", "SettleAfterRestore", "LookAfterRestore", "Reverted?", "RolledBack"]
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

