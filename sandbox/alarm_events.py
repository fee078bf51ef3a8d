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

from .event_queue import RuleDeliveries


class AlarmEvents(RuleDeliveries):
    SOURCE = "aws.cloudwatch"

    def __init__(self, *args):
        super().__init__(*args)
        self.reactions = []
        # The function's other rules' deliveries, through the same queue (Lambda has one per
        # function): their operation -> `reacted(payload, error, answer)` of their own.
        self.others = {}

    def reacted(self, payload, error, answer):
        other = self.others.get(payload.get("operation"))
        if other:
            return other(payload, error, answer)
        self.reactions.append({"change": payload["change"], "error": error, "answer": answer})
        failed = ", ".join(a.rsplit(":", 1)[-1] for a in (answer or {}).get("failed", [])) if not error else ""
        self.log(f"alarm event: {payload['change']['alarmName']} went to ALARM"
                 + (f"; evaluate-alarms failed: {answer}" if error else
                    f"; rollouts failed at once: {failed or 'none'}"))

    def cloudwatch(self):
        """CloudWatch as the harness calls it: asking again when throttled (a history may have
        told it to throttle the next calls, meant for the functions)."""
        return self.client("cloudwatch", attempts=10)

    def set_state(self, name, value, reason):
        """What happens on AWS when an alarm changes state: CloudWatch changes it and emits
        the event."""
        cloudwatch = self.cloudwatch()
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
        answer = self.cloudwatch().describe_alarms(AlarmNames=[name], AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        alarms = answer.get("MetricAlarms", []) + answer.get("CompositeAlarms", [])
        if not alarms:
            raise ValueError(f"no alarm named {name}")
        return alarms[0]
