"""Step Functions execution status changes, delivered to the safety nets (the rollouts' and the
fleets') as AWS delivers them, and the safety net's sweep, fired by its schedule.

moto's engine puts the `Step Functions Execution Status Change` event on the account's default
bus when an execution ends (tests/moto/moto_server.py); moto's EventBridge matches it against
the stack's SafetyNet rule and invokes the rule's function asynchronously with the rule's
InputTransformer applied; that invocation waits in Lambda's event queue (event_queue.py). The
sandbox keeps each answer by execution: `answer_for` tells what the safety net did, `held()`
delays it (a delivery that arrives late), and disabling the rule (`rule`) loses the events.

The sweep (template.yaml `SafetyNetSweep`, a schedule rule every 5 minutes, which moto's
EventBridge does not fire): `SweepSchedule` reads the stack's schedule rule and its target's
Input from moto and invokes the target asynchronously with that Input, as EventBridge does, every
`every` seconds and with a grace period of `grace` seconds (the sandbox's time is scaled down, as
its bakes are). Both invoke the same function, so both wait in the same Lambda event queue:
`held()` delays the sweep too. A sweep is not queued while the previous one still waits (where
Lambda would deliver each, late, in turn; each would find the same).
"""
import json
import threading
import time

from .event_queue import RuleDeliveries


class SafetyNetEvents(RuleDeliveries):
    SOURCE = "aws.states"
    MACHINE = "-rollout"
    WHAT = "safety net"
    # The execution the rule's input names.
    EXECUTION = "executionArn"

    def __init__(self, *args):
        super().__init__(*args)
        self.answers = {}  # execution ARN -> (function error, answer)
        self.answered_at = {}  # execution ARN -> when its answer came (time.time())
        self.sweeps = []  # (when it answered, function error, answer) of each sweep delivered
        self.sweep_waiting = threading.Event()

    def reacted(self, payload, error, answer):
        if payload.get("operation") == "sweep":
            self.sweep_waiting.clear()
            self.sweeps.append((time.time(), error, answer))
            if error:
                self.log(f"safety net sweep failed: {answer}")
            for swept in [] if error else answer["swept"]:
                self.log(f"safety net sweep, for {swept['executionArn'].rsplit(':', 1)[-1]}: {swept['reason']}")
            return
        execution = payload[self.EXECUTION]
        self.answers[execution] = (error, answer)
        self.answered_at[execution] = time.time()
        self.log(f"{self.WHAT}, for {execution.rsplit(':', 1)[-1]} ended {payload['status']}: "
                 + (f"failed: {answer}" if error else answer.get("reason", str(answer))))

    def matches(self, status):
        """Whether the rule's pattern takes an execution that ended `status`."""
        return status in self.pattern["detail"]["status"]

    def answer_for(self, execution_arn, timeout=60):
        """What the safety net answered for `execution_arn`, once its event was delivered."""
        deadline = time.monotonic() + timeout
        while execution_arn not in self.answers:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the SafetyNet rule delivered nothing for {execution_arn} in {timeout} s")
            time.sleep(0.2)
        error, answer = self.answers[execution_arn]
        if error:
            raise RuntimeError(f"safety net failed: {answer}")
        return answer


class FleetSafetyNetEvents(SafetyNetEvents):
    """The stack's FleetSafetyNet rule: a fleet that ended ABORTED, FAILED or TIMED_OUT has its
    running cells stopped by fleet-waves (`stopCells`)."""
    MACHINE = "-fleet"
    EXECUTION = "fleetExecution"
    WHAT = "fleet safety net"


class SweepSchedule:
    """The stack's schedule rule whose target is the safety net's function, fired every `every`
    seconds with its target's Input (`graceSeconds` replaced by `grace`)."""

    def __init__(self, client, safety_net, every, grace):
        self.client = client
        self.safety_net = safety_net
        self.every = every
        self.grace = grace
        self.stopping = threading.Event()
        self.thread = None

    def start(self):
        events = self.client("events")
        found = []
        for page in events.get_paginator("list_rules").paginate():
            for rule in page["Rules"]:
                if not rule.get("ScheduleExpression"):
                    continue
                for target in events.list_targets_by_rule(Rule=rule["Name"])["Targets"]:
                    if target["Arn"] == self.safety_net.function:
                        found.append((rule, target))
        if len(found) != 1:
            raise LookupError(f"the stack should have one schedule for the safety net's function, found {found}")
        self.rule, target = found[0]
        self.input = {**json.loads(target["Input"]), "graceSeconds": self.grace}
        self.thread = threading.Thread(target=self.fire, name="safety-net-sweep", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        if self.thread:
            self.thread.join(timeout=10)

    def fire(self):
        lambda_ = self.client("lambda")
        while not self.stopping.wait(self.every):
            rule = self.client("events").describe_rule(Name=self.rule["Name"])
            if rule["State"] != "ENABLED" or self.safety_net.sweep_waiting.is_set():
                continue
            self.safety_net.sweep_waiting.set()
            lambda_.invoke(FunctionName=self.safety_net.function, InvocationType="Event",
                           Payload=json.dumps(self.input).encode())

    def swept(self, execution_arn):
        """The sweeps' answers that put `execution_arn`'s traffic back."""
        return [s for _, error, answer in list(self.safety_net.sweeps) if not error
                for s in answer["swept"] if s["executionArn"] == execution_arn]

    def settle(self, ended_at, timeout=60):
        """Waits until two sweeps answered after an end at `ended_at` (time.time()) was past
        the grace period: every sweep that would act on it has. The sweeps' answers for it."""
        deadline = time.monotonic() + timeout
        while sum(1 for at, _, _ in list(self.safety_net.sweeps) if at > ended_at + self.grace) < 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no two sweeps answered within {timeout} s of an end {self.grace} s old")
            time.sleep(0.2)
