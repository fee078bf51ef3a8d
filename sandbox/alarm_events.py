"""CloudWatch alarm state changes, delivered as AWS delivers them.

CloudWatch tells EventBridge the instant an alarm changes state (`CloudWatch Alarm State
Change`); the stack's rule for them passes the ones to ALARM to its function through its
InputTransformer. moto's CloudWatch emits no such events, so:

- `AlarmEvents.set_state` changes the alarm in moto and puts the event CloudWatch would emit
  on moto's default bus (the event's shape is AWS's documented one);
- moto's EventBridge matches it against the rule the stack created and invokes the rule's
  function asynchronously with the rule's InputTransformer applied (tests/moto/moto_server.py);
- that asynchronous invocation is Lambda's event queue: here, one the sandbox holds
  (event_queue.py), delivered one event after the other.

Disabling the rule (`disable_rule(Name=alarm_events.rule)`) loses the events, as on AWS;
`held()` delays them. Every invocation's answer is kept in `reactions`, in order.
"""
import json
from datetime import datetime, timezone

from .event_queue import EventQueue


def stack_rule(events, source):
    """The stack's rule for events from `source` (e.g. `aws.cloudwatch`), as moto's EventBridge
    holds it: (rule name, its pattern, its Lambda function target)."""
    found = []
    for page in events.get_paginator("list_rules").paginate():
        for rule in page["Rules"]:
            pattern = json.loads(rule.get("EventPattern") or "{}")
            if source in pattern.get("source", []):
                targets = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
                functions = [t for t in targets if t["Arn"].split(":")[2:3] == ["lambda"]]
                found.extend((rule["Name"], pattern, target) for target in functions)
    if len(found) != 1:
        raise LookupError(f"the stack should have one rule sending {source} events to a function, found {found}")
    return found[0]


class AlarmEvents:
    def __init__(self, client, front_door, invoke, log):
        """`client(service)` gives a boto3 client on the sandbox; `invoke(function, payload)`
        invokes a function (by name or ARN) and gives (function error, answer)."""
        self.client = client
        self.front_door = front_door
        self.invoke = invoke
        self.log = log
        self.reactions = []
        self.queue = None

    def start(self):
        self.rule, _, target = stack_rule(self.client("events"), "aws.cloudwatch")
        self.function = target["Arn"]
        self.queue = EventQueue(self.front_door, self.invoke, self.function, self.reacted)
        return self

    def stop(self):
        if self.queue:
            self.queue.stop()

    def held(self):
        """Events wait in the queue until the block ends: a delivery that arrives late."""
        return self.queue.held()

    def reacted(self, payload, error, answer):
        self.reactions.append({"change": payload["change"], "error": error, "answer": answer})
        failed = ", ".join(a.rsplit(":", 1)[-1] for a in (answer or {}).get("failed", [])) if not error else ""
        self.log(f"alarm event: {payload['change']['alarmName']} went to ALARM"
                 + (f"; evaluate-alarms failed: {answer}" if error else
                    f"; rollouts failed at once: {failed or 'none'}"))

    def set_state(self, name, value, reason):
        """What happens on AWS when an alarm changes state: CloudWatch changes it and emits
        the event."""
        cloudwatch = self.client("cloudwatch")
        before = self.describe(name)
        cloudwatch.set_alarm_state(AlarmName=name, StateValue=value, StateReason=reason)
        self.emit(before, value, reason)

    def emit(self, alarm, value, reason):
        """Puts the `CloudWatch Alarm State Change` event of `alarm` (a DescribeAlarms entry)
        going to `value`, as CloudWatch does: on the account's default bus."""
        now = datetime.now(timezone.utc)
        detail = {
            "alarmName": alarm["AlarmName"],
            "state": {"value": value, "reason": reason,
                      "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"},
            "previousState": {"value": alarm["StateValue"], "reason": alarm.get("StateReason", "")},
            "configuration": {"description": alarm.get("AlarmDescription", "")},
        }
        answer = self.client("events").put_events(Entries=[{
            "Source": "aws.cloudwatch",
            "DetailType": "CloudWatch Alarm State Change",
            "Resources": [alarm["AlarmArn"]],
            "Detail": json.dumps(detail),
            "Time": now,
        }])
        if answer.get("FailedEntryCount"):
            raise RuntimeError(f"EventBridge refused the alarm event: {answer['Entries']}")

    def describe(self, name):
        answer = self.client("cloudwatch").describe_alarms(AlarmNames=[name], AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        alarms = answer.get("MetricAlarms", []) + answer.get("CompositeAlarms", [])
        if not alarms:
            raise ValueError(f"no alarm named {name}")
        return alarms[0]
