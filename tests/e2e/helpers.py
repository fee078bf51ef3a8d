"""What the end-to-end tests share: the world's weights at the start and after promotion, and
foreign weight changes. (Manual plans and executions are the sandbox's: sandbox.scenarios.)"""

import json
import time
from pathlib import Path

import jsonschema

from sandbox import scenarios
from sandbox.harness import REPO
from sandbox.scenarios import move_listener_by_hand, wait_for_alarm_watch  # noqa: F401 (the tests' imports)

BASELINE = {"listener :80": (100, 0), "app.example.com.": (100, 0)}
# The states up to Prepare when no change freeze holds the rollout (the gate looks once).
TO_PREPARE = ["Admit", "Init", "StartFreezeGate", "FreezeGate", "Frozen?", "PrepareTraffic"]
# How an execution ends FailedBeforeTraffic: the outcome, the Rollout Failed event, the end.
# A function's error: the cause ends with the error's message, not its JSON document.
FAILED_BEFORE_TRAFFIC = ["FailedBeforeTrafficOutcome", "OutcomeDetail?", "ReadOutcomeDetail", "OutcomeEndsWithErrorMessage",
                         "NotifyRolloutFailed", "RolloutFailedEnd?", "FailedBeforeTraffic"]
# How a rollback for a failed check ends, from the restore on: the restore, its events, and the look
# after the settle period (nothing had moved).
ROLLED_BACK_FOR_A_CHECK = ["Restore", "FailureDetail?", "EndWithDetail", "RolledBackBy?", "NotifyCheckFailed",
                           "NotifyRolledBack", "SettleAfterRestore", "LookAfterRestore", "Reverted?", "RolledBack"]
PROMOTED = {"listener :80": (0, 100), "app.example.com.": (0, 100)}


def failed_on_alarm(cause, alarm):
    """Whether `cause` names `alarm` in ALARM by one of the two paths docs/architecture.md
    documents: its state change event ("went to ALARM at", failing the bake at once) or the
    check that read it first ("is ALARM since"). Which one comes first is the machine's load:
    a check already running when the alarm changes reads it before the event is delivered."""
    return f"alarm {alarm} went to ALARM at " in cause or f"alarm {alarm} is ALARM since " in cause


def captured(line):
    """pytest captures the live view and shows it for a failing test."""
    print(line)


def stop_and_wait(sandbox, execution_arn, deadline):
    """Stops an execution as an operator does (StopExecution) and waits, until `deadline`
    (time.monotonic()), for it to show ABORTED."""
    sfn = sandbox.client("stepfunctions")
    sfn.stop_execution(executionArn=execution_arn, cause="operator")
    while sfn.describe_execution(executionArn=execution_arn)["status"] != "ABORTED":
        assert time.monotonic() < deadline, f"{execution_arn} never stopped"
        time.sleep(0.2)


def event_types(report):
    """The detail-types of the execution's events, in order, each checked against its JSON
    schema in schema/events/."""
    for detail_type, detail in report.events:
        jsonschema.validate(detail, scenarios.event_schema(detail_type))
    return [detail_type for detail_type, _ in report.events]


def delete_cluster_event(name, region):
    """The EventBridge event for DeleteCluster of `name`, as EventBridge delivers it."""
    event = json.loads((REPO / "tests/events/eks-delete-cluster.json").read_text())
    detail = event["detail"]
    detail["awsRegion"] = event["region"] = region
    detail["requestParameters"]["name"] = name
    detail["responseElements"]["cluster"].update(name=name, arn=scenarios.cluster_arn(name, region))
    return event


# What Lambda sets in every function's environment, beside the function's own variables.
LAMBDA_VARIABLES = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
    "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "AWS_LAMBDA_RUNTIME_API", "LAMBDA_TASK_ROOT",
    "PATH", "TZ",
}
# What the sandbox adds: its stand-ins' endpoints, and no instance metadata.
SANDBOX_VARIABLES = {"AWS_ENDPOINT_URL", "AWS_EC2_METADATA_DISABLED", "DATADOG_API_URL"}


def process_environment(pid):
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def assert_runs_as_the_stack_declares(sandbox, logical):
    """The stack's function `logical` ran with exactly the environment the template declares for
    it (and Lambda's own variables), as its own role."""
    lambda_client, iam = sandbox.client("lambda"), sandbox.client("iam")
    name, _ = sandbox.stack.functions()[logical]
    declared = sandbox.stack.template["Resources"][logical]["Properties"]["Environment"]["Variables"]
    configuration = lambda_client.get_function_configuration(FunctionName=name)
    variables = configuration["Environment"]["Variables"]
    assert set(variables) == set(declared), f"{logical}: the stack gave what the template declares"
    assert configuration["Role"] == iam.get_role(
        RoleName=sandbox.stack.resources[f"{logical}Role"])["Role"]["Arn"]
    instances = sandbox.functions.functions[name].instances
    assert instances, f"{logical} ran"
    environment = process_environment(instances[0].process.pid)
    assert {k: environment[k] for k in variables} == variables, logical
    assert set(environment) - set(variables) <= LAMBDA_VARIABLES | SANDBOX_VARIABLES, \
        f"{logical} got variables the stack does not give it"
    assert environment["AWS_ACCESS_KEY_ID"] != "test", f"{logical} runs as its role, not the sandbox's keys"
    assert environment["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == str(configuration["MemorySize"])
