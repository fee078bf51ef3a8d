"""Lambda's event queue for one function the stack's rules invoke asynchronously, and the
deliveries of one of the stack's rules through it.

moto's EventBridge invokes a rule's Lambda target asynchronously (`X-Amz-Invocation-Type:
Event`, tests/moto/moto_server.py); the front door hands those invocations of this function to
the queue (`FrontDoor.intercept_async`), and a pump delivers them one after the other as the
sandbox's Lambda handles an asynchronous invocation (tried again after a function error, then
sent to the function's on-failure destination: lambda_service.py), keeping every last answer.
`held()` delays them (a delivery that arrives late).
"""
import contextlib
import json
import queue
import threading


class EventQueue:
    def __init__(self, front_door, invoke, function, on_answer):
        """`invoke(function, payload)` delivers one asynchronous invocation, retries included,
        giving the last (function error, answer); `on_answer(payload, error, answer)` hears each
        delivery's outcome."""
        self.invoke = invoke
        self.function = function
        self.on_answer = on_answer
        self.waiting = queue.Queue()
        self.stopping = threading.Event()
        self.flowing = threading.Event()
        self.flowing.set()
        self.busy = threading.Lock()  # held by the pump while it delivers
        front_door.intercept_async(function.split(":")[6], self.waiting.put)
        self.thread = threading.Thread(target=self.pump, name=f"events-{function.split(':')[6]}", daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=10)

    @contextlib.contextmanager
    def held(self):
        """Events wait in the queue until the block ends."""
        self.flowing.clear()
        with self.busy:  # and a delivery under way has ended
            pass
        try:
            yield
        finally:
            self.flowing.set()

    def pump(self):
        while not self.stopping.is_set():
            if not self.flowing.wait(timeout=0.5):
                continue
            with self.busy:
                if self.flowing.is_set():
                    self.deliver_waiting()

    def deliver_waiting(self):
        """Delivers the next queued event (waiting up to half a second for one)."""
        try:
            body = self.waiting.get(timeout=0.5)
        except queue.Empty:
            return
        payload = json.loads(body)
        error, answer = self.invoke(self.function, payload)
        self.on_answer(payload, error, answer)


def stack_rule(events, source, machine=None):
    """The stack's rule for events from `source` (e.g. `aws.cloudwatch`), as moto's EventBridge
    holds it: (rule name, its pattern, its Lambda function target). `machine`: of the rules for
    `aws.states`, the one whose pattern names the state machine ending so (`-rollout`, `-fleet`)."""
    found = []
    for page in events.get_paginator("list_rules").paginate():
        for rule in page["Rules"]:
            pattern = json.loads(rule.get("EventPattern") or "{}")
            machines = pattern.get("detail", {}).get("stateMachineArn", [])
            if machine and not any(m.endswith(machine) for m in machines):
                continue
            if source in pattern.get("source", []):
                targets = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
                functions = [t for t in targets if t["Arn"].split(":")[2:3] == ["lambda"]]
                found.extend((rule["Name"], pattern, target) for target in functions)
    if len(found) != 1:
        raise LookupError(f"the stack should have one rule sending {source} events to a function, found {found}")
    return found[0]


class RuleDeliveries:
    """What the stack's one rule for events from `SOURCE` delivers to its function: the rule, its
    pattern and its function read from moto's EventBridge (`rule`, `pattern`, `function`), its
    asynchronous invocations queued (`held()` delays them); `reacted(payload, error, answer)`
    hears each answer."""
    SOURCE = None
    MACHINE = None

    def __init__(self, client, front_door, invoke, log):
        """`client(service)` gives a boto3 client on the sandbox; `invoke(function, payload)`
        invokes a function (by name or ARN) asynchronously as Lambda does, retries included, and
        gives the last (function error, answer)."""
        self.client = client
        self.front_door = front_door
        self.invoke = invoke
        self.log = log
        self.queue = None

    def start(self):
        self.rule, self.pattern, target = stack_rule(self.client("events"), self.SOURCE, self.MACHINE)
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
        raise NotImplementedError
