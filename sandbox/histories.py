"""Seeded histories: a random plan, random things happening while it runs, and the promises
checked after each run, on a sandbox (the stack `sam deploy` creates, IAM enforced).

A history is generated from its seed alone (`generate(seed)`): the plan's steps and targets,
and one to four happenings, each tied to a point of the execution (the n-th exit of a state:
`PrepareTraffic`, `SetWeights`, `Evaluate`, `Restore`), not to a wall clock, so a seed replays the same
story. The happenings:

  alarm            an alarm the plan watches goes to ALARM (its event through the stack's rule)
  alarm-clears     it goes back to OK
  foreign-write    someone sets the listener's weights by hand
  abort            the operator stops the execution (StopExecution)
  late-safety-net  the safety net's delivery is held until the history ends (a late delivery)
  throttle         ELBv2 throttles the next two ModifyListener calls
  lambda-throttle  Lambda answers the next invocation 429 (TooManyRequestsException)
  second-rollout   a second rollout of the same targets is started

After the run (and the safety net's answer, when the rule matched the end), `violations(...)`
checks what moto and the event queue hold:

  - every target ends at the baseline, or promoted, or (only when the rollout stopped for a
    foreign change) exactly as the foreign writer left it;
  - a rollout that promoted has every target promoted; one that did not has none;
  - no execution promotes after an alarm it watches went to ALARM (and stayed there) before one
    of its checks began;
  - a second rollout of the same targets started while the first runs is refused at Prepare
    and moves nothing;
  - every state stays under the written budget, every event is valid against its schema, and
    no token or key of the sandbox appears in a log or an execution's history.

`python -m sandbox.histories --seeds N [--first S]` runs N histories, one sandbox each, and
sums up what happened; tests/e2e/test_histories.py runs a fixed few in CI; a defect a seed found
becomes a named test of its own (test_never_stranded.py).
Not yet generated: GitOps targets, approvals, hooks, Prometheus/Datadog faults, Kubernetes API
faults, lost Lambda invocations, execution timeouts, a second rollout on another target.
"""
import argparse
import contextlib
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from . import scenarios
from .front_door import lambda_throttled, query_throttled
from .harness import CONTRACT, DATADOG_KEYS, FUNCTIONS_TOKEN, Sandbox

HAPPENINGS = ("alarm", "alarm-clears", "foreign-write", "abort", "late-safety-net", "throttle",
              "lambda-throttle", "second-rollout")
ALARM = "web-green-5xx"
FOREIGN_ENDS = {"StoppedByForeignChange", "ChangedBeforePromotion"}
# The states that read the weights (and so must notice a foreign write before them).
LOOKS = {"SetWeights", "Evaluate", "VerifyPromotion", "Restore", "LookAfterRestore"}
STATE_BUDGET = CONTRACT["limits"]["stateBudgetBytes"]
SECRETS = ("sandbox-admin", FUNCTIONS_TOKEN, *DATADOG_KEYS.values())
CHECKS_PER_STEP = 2


@dataclass
class Happening:
    action: str
    after: str  # the state whose exit triggers it
    nth: int  # ... its nth exit
    value: tuple = ()

    def __str__(self):
        return f"{self.action}{list(self.value) if self.value else ''} after {self.after} #{self.nth}"


@dataclass
class History:
    seed: int
    steps: list
    route53: bool
    happenings: list = field(default_factory=list)

    def __str__(self):
        return (f"seed {self.seed}: steps {self.steps}, {'ALB + Route 53' if self.route53 else 'ALB'}; "
                + ("; ".join(map(str, self.happenings)) or "nothing happens"))


def generate(seed):
    rng = random.Random(seed)
    count = rng.randint(1, 3)
    steps = sorted(rng.sample(range(5, 96), count - 1)) + [100]
    # `Restore` exits only in a rollback: what is tied to it happens during one, or not at all.
    points = ([("PrepareTraffic", 1)] + [("SetWeights", k) for k in range(1, count + 1)]
              + [("Evaluate", k) for k in range(1, count * CHECKS_PER_STEP + 1)] + [("Restore", 1)])
    happenings = []
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(HAPPENINGS)
        after, nth = rng.choice(points)
        value = ()
        if action == "foreign-write":
            green = rng.randint(1, 99)
            value = (100 - green, green)
        happenings.append(Happening(action, after, nth, value))
    return History(seed, steps, rng.random() < 0.5, happenings)


@dataclass
class Run:
    """What happened, for the invariants."""
    report: object = None
    baseline: dict = None
    promoted: dict = None
    done: list = field(default_factory=list)  # (happening, index of the history event it followed)
    foreign: dict = None  # the weights a foreign write left
    foreign_at: int = None  # ... the history index it followed
    alarm_after: int = None  # history index after which the alarm is in ALARM (None: not, or cleared)
    second: object = None  # the second rollout's report
    second_overlapped: bool = False  # it started while the first ran
    held: bool = False  # the safety net's delivery was held until the end
    history_events: list = field(default_factory=list)
    logs: str = ""


def run(history, out=print):
    """Runs one history on a fresh sandbox; the Run."""
    with Sandbox(log=out) as sandbox:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        plan["steps"] = [{"weight": w} for w in history.steps]
        plan["bake"] = {"seconds": 2 * CHECKS_PER_STEP, "checkIntervalSeconds": 2}
        plan["analysis"] = {"alarms": {"names": [ALARM]}, "failureLimit": 1}
        if not history.route53:
            plan["trafficTargets"] = plan["trafficTargets"][:1]
        record = Run()
        record.baseline = scenarios.read_weights(sandbox)
        if not history.route53:
            record.baseline = {k: v for k, v in record.baseline.items() if k == "listener :80"}
        record.promoted = {k: (0, 100) for k in record.baseline}
        sfn = sandbox.client("stepfunctions")
        exits = Counter()
        holding = contextlib.ExitStack()  # the safety net's delivery, once held
        arn = None

        def history_length():
            return len(sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"])

        def happen(happening):
            action = happening.action
            out(f">>> {happening}")
            index = history_length()
            if action == "alarm":
                sandbox.alarm_events.set_state(ALARM, "ALARM", "Threshold Crossed: history")
                record.alarm_after = index if record.alarm_after is None else record.alarm_after
            elif action == "alarm-clears":
                sandbox.alarm_events.set_state(ALARM, "OK", "Threshold no longer crossed")
                record.alarm_after = None
            elif action == "foreign-write":
                blue, green = happening.value
                scenarios.move_listener_by_hand(sandbox, blue, green)
                record.foreign = {"listener :80": (blue, green)}
                record.foreign_at = index
            elif action == "abort":
                sfn.stop_execution(executionArn=arn, cause="history: the operator stops it")
            elif action == "late-safety-net" and not record.held:
                holding.enter_context(sandbox.safety_net.held())
                record.held = True
            elif action == "throttle":
                sandbox.front.faults.append(
                    [lambda method, path, body: b"Action=ModifyListener" in body, 2, query_throttled()])
            elif action == "lambda-throttle":
                sandbox.front.faults.append(
                    [lambda method, path, body: method == "POST" and path.endswith("/invocations"), 1,
                     lambda_throttled()])
            elif action == "second-rollout" and record.second is None:
                second = scenarios.start_manual(sandbox, plan, f"second-{history.seed}")
                record.second = scenarios.watch(sandbox, second, out=out, await_safety_net=False)
            record.done.append((happening, index))

        def on_event(name, state):
            exits[name] += 1
            for happening in history.happenings:
                if happening.after == name and happening.nth == exits[name]:
                    happen(happening)

        arn = scenarios.start_manual(sandbox, plan, f"history-{history.seed}")
        with holding:
            report = scenarios.watch(sandbox, arn, on_event=on_event, out=out, await_safety_net=False)
        if sandbox.safety_net.matches(report.status):
            report.safety_net = sandbox.safety_net.answer_for(arn)
            out(f"safety net{' (late)' if record.held else ''}: {report.safety_net['reason']}")
        if record.second is not None:
            first = sfn.describe_execution(executionArn=arn)
            second = sfn.describe_execution(executionArn=record.second.execution_arn)
            record.second_overlapped = second["startDate"] < first.get("stopDate", second["startDate"])
        # What a settled world holds: the safety net has answered, the look after it is done.
        report.weights = scenarios.read_weights(sandbox)
        if not history.route53:
            report.weights = {k: v for k, v in report.weights.items() if k == "listener :80"}
        record.report = report
        paged = sfn.get_execution_history(executionArn=arn, maxResults=1000)
        record.history_events = paged["events"]
        record.logs = "".join(p.read_text(errors="replace") for p in Path(sandbox.run_dir).glob("*.log"))
        return record


def violations(history, record):
    """The promises the run broke, each said in a line."""
    report, found = record.report, []
    final = report.weights
    ended_foreign = any(s in FOREIGN_ENDS for s in report.states)
    allowed = [record.baseline, record.promoted]
    # A write after the rollout's last look at the weights is the writer's to answer for.
    looked_after = record.foreign is not None and any(
        e.get("stateEnteredEventDetails", {}).get("name") in LOOKS
        for e in record.history_events[record.foreign_at:])
    if record.foreign and (ended_foreign or not looked_after):
        allowed.append({**record.baseline, **record.foreign})
        allowed.append({**record.promoted, **record.foreign})
    if record.second is not None and not record.second_overlapped:
        # It ran after the first ended: the traffic is its to leave; its own end is judged.
        allowed.append({k: v for k, v in record.second.weights.items() if k in record.baseline})
    if final not in allowed:
        found.append(f"traffic ended at {final}: neither the baseline {record.baseline}, promoted, "
                     f"nor as a foreign writer left it ({record.foreign}, ended foreign: {ended_foreign})")
    if report.status == "SUCCEEDED" and final not in allowed[1:]:
        found.append(f"promoted, but traffic is at {final}")
    ran_after = record.second is not None and not record.second_overlapped
    if report.status != "SUCCEEDED" and final == record.promoted and not ran_after:
        found.append(f"ended {report.status} ({report.error}) with every target promoted")
    if report.status == "SUCCEEDED" and record.alarm_after is not None:
        checks_after = [e for e in record.history_events[record.alarm_after:]
                        if e.get("stateEnteredEventDetails", {}).get("name") in ("Evaluate", "WatchEvaluate")]
        if checks_after:
            found.append(f"promoted although {ALARM} was in ALARM before {len(checks_after)} check(s) began")
    if record.second is not None and record.second_overlapped:
        # Refused at Prepare: as ConcurrentRollout, or for a target the first left with no
        # stable weight (TargetMisconfigured, checked first); either way before any write.
        if record.second.status != "FAILED" or "PrepareTraffic" not in record.second.states:
            found.append(f"a second rollout of the same targets, started while the first ran, was not "
                         f"refused at Prepare: {record.second.status} {record.second.error}")
        if "SetWeights" in record.second.states:
            found.append("the refused second rollout set weights")
    if report.largest_state >= STATE_BUDGET:
        found.append(f"a state of {report.largest_state} bytes at {report.largest_state_at}, over {STATE_BUDGET}")
    for detail_type, detail in report.events:
        try:
            jsonschema.validate(detail, scenarios.event_schema(detail_type))
        except jsonschema.ValidationError as e:
            found.append(f"event {detail_type} breaks its schema: {e.message}")
    history_text = json.dumps(record.history_events, default=str)
    for secret in SECRETS:
        if secret in record.logs:
            found.append(f"a secret ({secret[:4]}…) is in a log")
        if secret in history_text:
            found.append(f"a secret ({secret[:4]}…) is in the execution's history")
    return found


def main():
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--seeds", type=int, default=10)
    options.add_argument("--first", type=int, default=1)
    options.add_argument("--verbose", action="store_true")
    args = options.parse_args()
    happened, ends, failed = Counter(), Counter(), 0
    for seed in range(args.first, args.first + args.seeds):
        history = generate(seed)
        started = time.monotonic()
        lines = []
        record = run(history, out=(print if args.verbose else lines.append))
        broken = violations(history, record)
        report = record.report
        happened.update(h.action for h, _ in record.done)
        ends[f"{report.status} {report.error or ''}".strip()] += 1
        print(f"{history} -> {report.status} {report.error or ''} {report.weights}; happened: "
              f"{', '.join(str(h) for h, _ in record.done) or 'nothing'} ({time.monotonic() - started:.0f} s)",
              flush=True)
        for line in broken:
            failed += 1
            print(f"  VIOLATED: {line}", flush=True)
    print(f"{args.seeds} histories; happened: {dict(happened)}; ends: {dict(ends)}; violations: {failed}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
