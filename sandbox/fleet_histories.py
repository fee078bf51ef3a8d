"""Seeded fleet histories (sandbox/histories/stories.py draws them: `FEATURES["fleet"]` of the seeds): a
random fleet over two to four cells of the sandbox (each an ALB listener, a new cluster and an
alarm of its own: fleets.seed_cells), in one region or every other cell in a second, random waves, budget, `onHalt`, `rollbackPromotedOnHalt`, a soak
and an approval before a wave, and random things happening, each tied to a point of the fleet's
or a cell's execution (the n-th exit of one of its states), so a seed replays the same story:

  cell-alarm          a cell's alarm goes to ALARM (its event through the stack's rule)
  cell-alarm-clears   it goes back to OK
  soak-alarm          the fleet's soak alarm goes to ALARM, and back to OK a second later
  fleet-abort         the operator runs `cluster-canary fleet abort`
  cell-event          the CreateCluster event of a cell's new cluster reaches the intake
  cell-foreign-write  someone sets a cell's listener by hand
  lambda-5xx          Lambda answers the next invocation 500 without running it
  reply-lost          the next invocation runs, and its answer is lost (500)

Then `violations` checks what moto and the event queue hold:

  - every cell ends promoted or at its baseline, or as a foreign writer left it (never half-moved);
  - a cell's listener is promoted only if its rollout promoted; a promoted cell is back at its
    baseline only when the plan says so (`rollbackPromotedOnHalt`, the fleet halted) and
    nothing moved it since (a cell moved by hand after its promotion is left as found);
  - the budget is kept: a fleet with more failed cells than its budget does not complete, no
    cell of a wave after the one that spent it starts, and no cell is counted twice (one `Cell
    Failed` at most, and the halt's tally matches the cells' executions); no cell of a wave a
    person rejected starts; a fleet stopped by a person
    leaves every cell promoted or at its baseline;
  - the CreateCluster event of a cell's cluster starts no rollout of its own while the fleet
    runs (or after);
  - every event is valid against its schema, no state is over the written budget, no secret is
    in a log;
  - a halt's restores keep their written bounds (docs/operations.md, how fast a rollback is): a
    cell stopped (by the halt's `abortRunning`, `fleet abort` or the fleet's safety net) is
    restored by its safety net within the delivery + 90 s + its settle period of its stop, and
    `rollbackPromotedOnHalt` puts the promoted cells back within 90 s of the fleet's turning to
    them (`PromotedCells` entered to `RollBackPromoted` left: ten at a time, each a restore).

Not generated: cells in other accounts, `cells` waves, the `spreadRegions` order, stored (S3) plans, a fleet's
own faults of fleet-waves beyond a lost or failed invocation, lost FleetSafetyNet deliveries.
"""
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from . import fleets, scenarios
from .front_door import is_invocation, lambda_service_exception

FLEET_ALARM = "web-fleet-soak-5xx"
REGIONS = ("us-east-1", "eu-west-1")
# Each cell's rollout: steps 50 and 100, two checks per step (fleets.fleet_plan's template).
CELL_POINTS = [("SetWeights", k) for k in (1, 2)] + [("Evaluate", k) for k in range(1, 5)]
FLEET_ACTIONS = ("cell-alarm", "cell-alarm-clears", "soak-alarm", "fleet-abort", "cell-event",
                 "cell-foreign-write", "lambda-5xx", "reply-lost")
PROMOTED, BASELINE = (0, 100), (100, 0)
# The halt's tally, at the end of its message (fleet-waves' tally.rs).
TALLY = re.compile(r"Promoted: (\d+), failed: (\d+), stopped by the halt: (\d+), not started: (\d+)")


@dataclass
class FleetStory:
    cells: int
    waves: list
    budget: int
    on_halt: str
    rollback_promoted: bool
    soak: bool
    approval: tuple = None  # (the wave, from 1, answered approve or reject)
    happenings: list = field(default_factory=list)  # (action, cell or None, (who, state), nth)
    two_regions: bool = False  # every other cell in eu-west-1 (drawn apart: sandbox/histories/stories.py)

    def __str__(self):
        said = [f"{self.cells} cells", f"waves {[w['size'] for w in self.waves]}", f"budget {self.budget}",
                self.on_halt] + (["rollbackPromotedOnHalt"] if self.rollback_promoted else []) + \
            (["a soak"] if self.soak else []) + \
            ([f"approval before wave {self.approval[0]}: {self.approval[1]}"] if self.approval else []) + \
            (["cells in us-east-1 and eu-west-1"] if self.two_regions else [])
        happened = [f"{action}{f'[{cell}]' if cell else ''} after {who}:{state} #{nth}"
                    for action, cell, (who, state), nth in self.happenings]
        return f"a fleet, {', '.join(said)}; " + ("; ".join(happened) or "nothing happens")


def names(count):
    return [f"c{i}" for i in range(1, count + 1)]


def draw(r):
    """A fleet story from the stream `r`."""
    count = r.randint(2, 4)
    waves = [{"size": 1}] + ([{"size": 2}] if count > 2 and r.random() < 0.5 else []) + [
        {"size": "100%", "maxConcurrentCells": r.choice((1, 2))}]
    story = FleetStory(cells=count, waves=waves, budget=r.choice((0, 0, 1)), on_halt=r.choice(("finishRunning", "abortRunning")),
                       rollback_promoted=r.random() < 0.4, soak=r.random() < 0.4)
    if r.random() < 0.25:
        story.approval = (r.randint(2, len(waves)), r.choice(("approve", "reject")))
    points = [("fleet", "NotifyWaveStarted", k) for k in range(1, len(waves) + 1)] + \
             [(cell, state, nth) for cell in names(count) for state, nth in CELL_POINTS]
    for _ in range(r.randint(1, 4)):
        action = r.choice(FLEET_ACTIONS)
        who, state, nth = r.choice(points)
        cell = r.choice(names(count)) if action.startswith("cell-") else None
        story.happenings.append((action, cell, (who, state), nth))
    return story


def plan_of(story, world):
    plan = fleets.fleet_plan(world, name="history-fleet", waves=story.waves, failure_budget=story.budget,
                             on_halt=story.on_halt,
                             soak={"seconds": 2, "alarms": [FLEET_ALARM]} if story.soak else None)
    plan["order"] = "listed"
    if story.rollback_promoted:
        plan["rollbackPromotedOnHalt"] = True
    if story.approval:
        plan["approval"] = {"beforeWaves": [story.approval[0]], "timeoutSeconds": 600}
    return plan


def wave_of(story):
    """{cell: its wave, from 1}: the listed order (the plan says `listed`), each size wave taking
    up to its size."""
    waves, placed, cells = {}, 0, names(story.cells)
    for number, wave in enumerate(story.waves, 1):
        upto = story.cells if wave["size"] == "100%" else min(story.cells, wave["size"])
        for cell in cells[placed:upto]:
            waves[cell] = number
        placed = max(placed, upto)
    return waves


@dataclass
class FleetRun:
    end: dict = None  # the fleet's DescribeExecution
    children: dict = None  # cell -> its rollout's DescribeExecution
    weights: dict = None  # cell -> (old, new) at the end
    events: list = field(default_factory=list)  # (detail type, detail): the fleet's and its cells'
    done: list = field(default_factory=list)  # the happenings that happened, as said
    foreign: dict = field(default_factory=dict)  # cell -> (old, new) someone set by hand
    aborted: bool = False
    intake_answers: list = field(default_factory=list)  # (cell, action, reason) the intake gave its event
    rollouts: list = field(default_factory=list)  # every rollout execution's name at the end
    largest_state: int = 0
    logs: str = ""
    follower_errors: list = field(default_factory=list)
    # cell -> (seconds from its stop to its safety net's answer that it restored)
    restored_after_stop: dict = field(default_factory=dict)
    settle_seconds: int = 0  # the cells' rollback.settleSeconds (their safety nets wait it)
    # seconds from PromotedCells entered to RollBackPromoted left, and how many cells it put back
    promoted_rolled_back: tuple = None


class Follower:
    """Follows the fleet's execution and its cells' (found by name) in a thread, calling
    `on_exit(who, state)` at each state's exit, in order per execution."""

    def __init__(self, sandbox, fleet_execution, on_exit):
        self.sandbox, self.fleet_execution, self.on_exit = sandbox, fleet_execution, on_exit
        self.seen = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.follow, daemon=True)
        self.errors = []

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=30)

    def follow(self):
        sfn = self.sandbox.client("stepfunctions", attempts=10)
        while not self.stopping.is_set():
            try:
                executions = {"fleet": self.fleet_execution}
                executions.update({cell: d["executionArn"]
                                   for cell, d in fleets.children(self.sandbox, self.fleet_execution).items()})
                for who, arn in executions.items():
                    events = []
                    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=arn):
                        events += page["events"]
                    for event in events[self.seen.get(who, 0):]:
                        details = event.get("stateExitedEventDetails")
                        if details:
                            self.on_exit(who, details["name"])
                    self.seen[who] = len(events)
            except Exception as e:  # said in the run's violations, never silently
                self.errors.append(repr(e))
            self.stopping.wait(0.5)


def run(seed, story, sandbox, out=print):
    """Runs the fleet story on `sandbox`; the FleetRun."""
    record = FleetRun()
    world = fleets.seed_cells(sandbox, [(cell, REGIONS[i % 2] if story.two_regions else REGIONS[0])
                                        for i, cell in enumerate(names(story.cells))])
    cloudwatch = sandbox.client("cloudwatch")
    cloudwatch.put_metric_alarm(AlarmName=FLEET_ALARM, Namespace="AWS/ApplicationELB",
                                MetricName="HTTPCode_Target_5XX_Count", Statistic="Sum", Period=60,
                                EvaluationPeriods=1, Threshold=10, ComparisonOperator="GreaterThanThreshold")
    plan = plan_of(story, world)
    record.settle_seconds = plan["template"]["rollback"]["settleSeconds"]
    name = f"fleet-history-{seed}"
    fleet_execution = fleets.start_fleet(sandbox, plan, name)
    out(f"fleet {name}: {fleet_execution}")
    exits = {}
    lock = threading.Lock()

    def happen(action, cell):
        said = f"{action}{f'[{cell}]' if cell else ''}"
        out(f">>> {said}")
        if action == "cell-alarm":
            sandbox.alarm_events.set_state(world[cell]["alarm"], "ALARM", "Threshold Crossed: history")
        elif action == "cell-alarm-clears":
            sandbox.alarm_events.set_state(world[cell]["alarm"], "OK", "Threshold no longer crossed")
        elif action == "soak-alarm":
            cloudwatch.set_alarm_state(AlarmName=FLEET_ALARM, StateValue="ALARM", StateReason="history")
            time.sleep(1)
            cloudwatch.set_alarm_state(AlarmName=FLEET_ALARM, StateValue="OK", StateReason="history")
        elif action == "fleet-abort" and not record.aborted:
            # It waits for the stopped cells' safety nets: the following goes on meanwhile.
            def abort():
                done = sandbox.cli("fleet", "abort", name, "--reason", "history: the operator stops it", timeout=400)
                out(done.stdout + done.stderr)
            threading.Thread(target=abort, daemon=True).start()
            record.aborted = True
        elif action == "cell-event":
            error, answer = sandbox.invoke("cluster-created", scenarios.create_cluster_event(
                sandbox, world[cell]["cluster"], world[cell]["region"]))
            record.intake_answers.append((cell, error, answer))
        elif action == "cell-foreign-write":
            move_cell_by_hand(sandbox, world[cell], 70, 30)
            record.foreign[cell] = (70, 30)
        elif action == "lambda-5xx":
            sandbox.front.faults.append([is_invocation, 1, lambda_service_exception()])
        elif action == "reply-lost":
            sandbox.front.lost.append([is_invocation, 1, lambda_service_exception()])
        record.done.append(said)

    def on_exit(who, state):
        with lock:
            exits[(who, state)] = exits.get((who, state), 0) + 1
            due = [(a, c) for a, c, (w, s), nth in story.happenings if (w, s) == (who, state) and nth == exits[(who, state)]]
        for action, cell in due:
            happen(action, cell)

    approval = threading.Thread(target=answer_the_approval, args=(sandbox, story, name, out), daemon=True)
    if story.approval:
        approval.start()
    with Follower(sandbox, fleet_execution, on_exit) as follower:
        record.end = fleets.wait_for_end(sandbox, fleet_execution, timeout=900)
        record.children = fleets.wait_for_cells_to_settle(sandbox, fleet_execution, timeout=300)
    if sandbox.fleet_safety_net.matches(record.end["status"]):
        sandbox.fleet_safety_net.answer_for(fleet_execution, timeout=120)
        record.children = fleets.wait_for_cells_to_settle(sandbox, fleet_execution, timeout=300)
    record.restored_after_stop = restored_after_stop(sandbox, record.children)
    record.promoted_rolled_back = promoted_rolled_back(sandbox, fleet_execution)
    record.weights = fleets.cell_weights(sandbox, world)
    record.events = scenarios.read_events(sandbox, fleet_execution)
    for child in record.children.values():
        record.events += scenarios.read_events(sandbox, child["executionArn"])
    sfn = sandbox.client("stepfunctions")
    record.rollouts = [e["name"] for page in sfn.get_paginator("list_executions").paginate(
        stateMachineArn=sandbox.state_machine) for e in page["executions"]]
    record.largest_state = max([fleets.largest_state(sandbox, fleet_execution)] +
                               [fleets.largest_state(sandbox, c["executionArn"]) for c in record.children.values()])
    record.follower_errors = follower.errors
    record.logs = "".join(p.read_text(errors="replace") for p in Path(sandbox.run_dir).glob("*.log"))
    restores = [f"{cell} {took:.1f} s after its stop" for cell, took in sorted(record.restored_after_stop.items())]
    if record.promoted_rolled_back:
        restores.append(f"the promoted cells {record.promoted_rolled_back[0]:.1f} s after the halt turned to them")
    if restores:
        out("restored: " + ", ".join(restores))
    out(f"fleet ended {record.end['status']} {record.end.get('error') or ''}; cells "
        + ", ".join(f"{cell} {record.children.get(cell, {}).get('status', 'not started')} {w}"
                    for cell, w in record.weights.items()))
    return record


def restored_after_stop(sandbox, children):
    """{cell: seconds from its execution's stop to its safety net's answer}, for each stopped
    cell its safety net restored."""
    took = {}
    for cell, child in children.items():
        arn = child["executionArn"]
        error, answer = sandbox.safety_net.answers.get(arn, (True, None))
        if child["status"] == "ABORTED" and not error and answer.get("restored") and "stopDate" in child:
            took[cell] = sandbox.safety_net.answered_at[arn] - child["stopDate"].timestamp()
    return took


def promoted_rolled_back(sandbox, fleet_execution):
    """(seconds from `PromotedCells` entered to `RollBackPromoted` left, the cells it was given),
    or None when the fleet did not roll back its promoted cells."""
    sfn = sandbox.client("stepfunctions", attempts=10)
    events = [e for page in sfn.get_paginator("get_execution_history").paginate(executionArn=fleet_execution)
              for e in page["events"]]
    def at(kind, state):
        return next((e for e in events if e.get(kind, {}).get("name") == state), None)

    began, named, left = (at("stateEnteredEventDetails", "PromotedCells"),
                          at("stateExitedEventDetails", "PromotedCells"),
                          at("stateExitedEventDetails", "RollBackPromoted"))
    if began is None or named is None or left is None:
        return None
    cells = len(json.loads(named["stateExitedEventDetails"]["output"])["promoted"]["names"])
    return left["timestamp"].timestamp() - began["timestamp"].timestamp(), cells


def answer_the_approval(sandbox, story, name, out):
    """A person answers the wave's approval once it is asked."""
    wave, answer = story.approval
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        args = ("approve", name, "--by", "history") if answer == "approve" else (
            "reject", name, "--reason", "history: not now", "--by", "history")
        done = sandbox.cli("fleet", *args)
        if done.returncode == 0:
            out(done.stdout.strip())
            return
        time.sleep(1)


def move_cell_by_hand(sandbox, cell, old, new):
    """Someone sets a cell's listener by hand; throttled, their tool asks again."""
    sandbox.client("elbv2", cell["region"], attempts=10).modify_listener(
        ListenerArn=cell["listener"],
        DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
            {"TargetGroupArn": cell["old"], "Weight": old}, {"TargetGroupArn": cell["new"], "Weight": new}]}}])


def schema_breaks(events):
    """Each (detail-type, detail) event that breaks its schema (schema/events/), said in a line."""
    found = []
    for detail_type, detail in events:
        try:
            jsonschema.validate(detail, scenarios.event_schema(detail_type))
        except jsonschema.ValidationError as e:
            found.append(f"event {detail_type} breaks its schema: {e.message}")
    return found


def violations(story, record, state_budget, secrets, delivery_seconds, restore_seconds):
    """The promises the fleet run broke, each said in a line. `delivery_seconds` and
    `restore_seconds` are the written bounds of a safety net's delivery and of a restore's writes
    (sandbox/histories/)."""
    found, end, children = [], record.end, record.children
    settle = record.settle_seconds
    for cell, took in sorted(record.restored_after_stop.items()):
        if took > delivery_seconds + restore_seconds + settle:
            found.append(f"cell {cell}'s safety net restored {took:.0f} s after it was stopped, past the "
                         f"{delivery_seconds + restore_seconds + settle} s bound")
    if record.promoted_rolled_back is not None:
        took, cells = record.promoted_rolled_back
        bound = restore_seconds * max(1, -(-cells // 10))
        if took > bound:
            found.append(f"the halt put its promoted cells back {took:.0f} s after it turned to them, past the "
                         f"{bound} s bound")
    waves = wave_of(story)
    halted = end["status"] != "SUCCEEDED"
    for cell, weights in record.weights.items():
        child = children.get(cell)
        promoted = child is not None and child["status"] == "SUCCEEDED"
        foreign = record.foreign.get(cell)
        allowed = {BASELINE, foreign} if not promoted else (
            {PROMOTED, foreign} | ({BASELINE} if story.rollback_promoted and halted else set()))
        if weights not in allowed:
            found.append(f"cell {cell} ({child['status'] if child else 'not started'}) ended at {weights}, "
                         f"not in {sorted(a for a in allowed if a)}")
        if promoted and weights == BASELINE and not (story.rollback_promoted and halted):
            found.append(f"cell {cell} was promoted and is back at its baseline, though the plan keeps it")
    failed = [cell for cell, child in children.items() if child["status"] == "FAILED"
              and child.get("error") not in ("FleetHalted", "FleetStopped")]
    if len(failed) > story.budget and end["status"] == "SUCCEEDED":
        found.append(f"the fleet completed with {len(failed)} failed cell(s) {failed}, over its budget of {story.budget}")
    # The wave in which the budget was spent: no cell of a later wave starts.
    spent = sorted(waves[c] for c in failed)
    if len(spent) > story.budget:
        spending_wave = spent[story.budget]
        late = [c for c in children if waves[c] > spending_wave]
        if late:
            found.append(f"cells {late} started after wave {spending_wave} spent the budget")
    tally = TALLY.search(end.get("cause") or "") if end.get("error") == "FleetHalted" else None
    if tally:
        said = dict(zip(("promoted", "failed", "stopped", "not started"), map(int, tally.groups())))
        stopped = [c for c, child in children.items() if child.get("error") == "FleetHalted"]
        counted_here = {"promoted": sum(child["status"] == "SUCCEEDED" for child in children.values()),
                        "stopped": len(stopped), "failed": len(children) - len(stopped) - sum(
                            child["status"] == "SUCCEEDED" for child in children.values()),
                        "not started": story.cells - len(children)}
        if said != counted_here:
            found.append(f"the halt counted {said}, its cells' executions say {counted_here}")
    counted = [d.get("cell") for t, d in record.events if t == "Cell Failed"]
    twice = sorted({c for c in counted if counted.count(c) > 1})
    if twice:
        found.append(f"cells counted twice as failed: {twice}")
    if story.approval and story.approval[1] == "reject":
        late = [c for c in children if waves[c] >= story.approval[0]]
        if late:
            found.append(f"cells {late} of a rejected wave started")
    for cell, error, answer in record.intake_answers:
        if error is not None or (answer or {}).get("action") != "skipped":
            found.append(f"the CreateCluster event of cell {cell}'s cluster was not left to the fleet: {error} {answer}")
    suffix_less = [n for n in record.rollouts if not any(n.startswith(f"{c}-") for c in names(story.cells))]
    if suffix_less:
        found.append(f"rollouts other than the fleet's cells ran: {suffix_less}")
    if record.largest_state >= state_budget:
        found.append(f"a fleet or cell state of {record.largest_state} bytes, over {state_budget}")
    found += schema_breaks(record.events)
    for secret in secrets:
        if secret in record.logs:
            found.append(f"a secret ({secret[:4]}…) is in a log")
    found += [f"following the executions failed: {e}" for e in record.follower_errors[:1]]
    return found
