"""CloudWatch alarm state changes, delivered as AWS delivers them.

CloudWatch tells EventBridge the instant an alarm changes state (`CloudWatch Alarm State
Change`); the SAM template's `AlarmStateChange` rule passes the ones to ALARM to
evaluate-alarms through its InputTransformer. moto emits no such events and cannot invoke
Lambda from a rule, so the sandbox does both halves:

- `AlarmEvents.set_state` changes the alarm in moto and puts the event CloudWatch would emit
  on moto's default bus (the event's shape is AWS's documented one);
- moto's EventBridge matches it against the template's own pattern (a rule created from it)
  and sends what matches to an SQS queue;
- a pump reads the queue and invokes evaluate-alarms with the template's InputTransformer
  applied, one event after the other, as Lambda's asynchronous invocation would.

Disabling the rule (`disable_rule`) loses the events, as on AWS; `held()` delays them. Every
invocation's answer is kept in `reactions`, in order.
"""
import contextlib
import json
import threading
import time
from datetime import datetime, timezone

RULE = "cluster-canary-alarm-state-change"
QUEUE = "cluster-canary-alarm-state-change"


def alarm_rule(template):
    """The template's AlarmStateChange rule: its pattern and InputTransformer."""
    events = template["Resources"]["EvaluateAlarmsFunction"]["Properties"]["Events"]
    return events["AlarmStateChange"]["Properties"]


def transform(event, transformer):
    """EventBridge's InputTransformer for a JSON template: each `<name>` becomes the JSON value
    at its `$.a.b` path (strings quoted and escaped)."""
    text = transformer["InputTemplate"]
    for name, path in transformer["InputPathsMap"].items():
        value = event
        for key in path.removeprefix("$.").split("."):
            value = value.get(key) if isinstance(value, dict) else None
        text = text.replace(f"<{name}>", json.dumps(value))
    return json.loads(text)


class AlarmEvents:
    def __init__(self, client, invoke, template, log):
        """`client(service)` gives a boto3 client on the sandbox; `invoke(function, payload)`
        invokes a function; `template` is template.yaml as data."""
        self.client = client
        self.invoke = invoke
        self.rule = alarm_rule(template)
        self.log = log
        self.reactions = []
        self.stopping = threading.Event()
        self.flowing = threading.Event()
        self.flowing.set()
        self.busy = threading.Lock()  # held by the pump while it reads and delivers
        self.thread = None

    def start(self):
        sqs, events = self.client("sqs"), self.client("events")
        self.queue = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name=RULE, EventPattern=json.dumps(self.rule["Pattern"]))
        events.put_targets(Rule=RULE, Targets=[{"Id": "evaluate-alarms", "Arn": queue_arn}])
        self.thread = threading.Thread(target=self.pump, name="alarm-events", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        if self.thread:
            self.thread.join(timeout=10)

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

    @contextlib.contextmanager
    def held(self):
        """Events wait in the queue until the block ends: a delivery that arrives late."""
        self.flowing.clear()
        with self.busy:  # and a delivery under way has ended
            pass
        try:
            yield
        finally:
            self.flowing.set()

    def describe(self, name):
        answer = self.client("cloudwatch").describe_alarms(AlarmNames=[name], AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        alarms = answer.get("MetricAlarms", []) + answer.get("CompositeAlarms", [])
        if not alarms:
            raise ValueError(f"no alarm named {name}")
        return alarms[0]

    def pump(self):
        sqs = self.client("sqs")
        while not self.stopping.is_set():
            if not self.flowing.wait(timeout=0.5):
                continue
            with self.busy:
                if self.flowing.is_set():
                    self.deliver_waiting(sqs)

    def deliver_waiting(self, sqs):
        """Reads the queue once (waiting up to a second) and delivers what it finds."""
        try:
            messages = sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        except Exception as error:
            if not self.stopping.is_set():  # else: the sandbox is stopping
                self.log(f"alarm events: cannot read the queue: {error}")
                time.sleep(0.5)
            return
        for message in messages.get("Messages", []):
            sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
            payload = transform(json.loads(message["Body"]), self.rule["InputTransformer"])
            error, answer = self.invoke("evaluate-alarms", payload)
            self.reactions.append({"change": payload["change"], "error": error, "answer": answer})
            failed = ", ".join(a.rsplit(":", 1)[-1] for a in (answer or {}).get("failed", [])) if not error else ""
            self.log(f"alarm event: {payload['change']['alarmName']} went to ALARM"
                     + (f"; evaluate-alarms failed: {answer}" if error else
                        f"; rollouts failed at once: {failed or 'none'}"))
