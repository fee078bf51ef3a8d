"""Fleets end to end: the stack's fleet state machine (statemachine/fleet.asl.json) run by moto's
Step Functions engine, each cell a real child execution of the rollout state machine
(`startExecution.sync:2`), on six cells in two regions (sandbox/fleets.py). After every fleet,
each cell is promoted or at its baseline, never in between."""
import hashlib
import json
import time

import jsonschema

from helpers import assert_runs_as_the_stack_declares, captured
from sandbox import fleets, scenarios
from sandbox.alb_metrics import AlbMetrics
from sandbox.error_budget import create_slo, served
from sandbox.harness import Sandbox

PROMOTED, BASELINE = (0, 100), (100, 0)
# The fleet's largest state must stay under Step Functions' 256 KiB (canary_core::fleet's budget).
STATE_LIMIT = 256 * 1024


def fleet_events(sandbox, fleet_execution):
    """The fleet's events, each checked against its schema (schema/events/)."""
    events = scenarios.read_events(sandbox, fleet_execution)
    for detail_type, detail in events:
        jsonschema.validate(detail, scenarios.event_schema(detail_type))
    return events


def fail_alarm(sandbox, cells, cell):
    sandbox.client("cloudwatch").set_alarm_state(AlarmName=cells[cell]["alarm"], StateValue="ALARM",
                                                 StateReason="Threshold Crossed: 1 datapoint [42.0] > 10.0")


def assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted):
    weights = fleets.cell_weights(sandbox, cells)
    assert weights == {cell: PROMOTED if cell in promoted else BASELINE for cell in cells}, weights


def wait_until(predicate, what, timeout=600):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout} s"
        time.sleep(0.3)


def test_a_fleet_moves_every_cell_in_waves_across_two_regions():
    with Sandbox(log=captured) as sandbox:
        ended, cells, cli_exit = fleets.run_fleet(sandbox, "fleet", captured)
        assert ended["status"] == "SUCCEEDED", ended.get("cause")
        assert cli_exit == 0, "`fleet start --watch` exits 0 when the fleet completed"
        tally = json.loads(ended["output"])["tally"]
        assert (tally["promoted"], tally["failed"], tally["wave"]) == (6, 0, 3)
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted=set(cells))
        children = fleets.children(sandbox, ended["executionArn"])
        assert {c: d["status"] for c, d in children.items()} == {c: "SUCCEEDED" for c in cells}
        # Waves in order, each spread across both regions: 1, then 2, then 3 cells.
        waves = [["use1-a"], ["euw1-a", "use1-b"], ["euw1-b", "use1-c", "euw1-c"]]
        for earlier, later in zip(waves, waves[1:]):
            last_end = max(children[c]["stopDate"] for c in earlier)
            assert all(children[c]["startDate"] >= last_end for c in later), (earlier, later)
        assert {c: cells[c]["region"] for c in waves[1]} == {"euw1-a": "eu-west-1", "use1-b": "us-east-1"}
        types = [t for t, _ in fleet_events(sandbox, ended["executionArn"])]
        assert types == ["Fleet Started"] + ["Wave Started", "Wave Completed"] * 3 + ["Fleet Completed"], types
        assert fleets.largest_state(sandbox, ended["executionArn"]) < STATE_LIMIT
        # One point per wave of each series: 1 + 2 + 3 promoted, none failed.
        points = scenarios.emitted_metrics(sandbox, "web-fleet", dimension="Fleet")
        assert [v for n, _, v in points if n == "CellsPromoted"] == [1, 2, 3], points
        assert [v for n, _, v in points if n == "CellsFailed"] == [0, 0, 0], points
        assert_runs_as_the_stack_declares(sandbox, "FleetWavesFunction")


def test_a_cell_whose_cluster_is_created_after_the_fleet_started_waits_for_it():
    """docs/fleets.md: start the fleet, then create its clusters. A cell reached before its new
    cluster exists waits for it as for one still CREATING (the fleet sets each cell's
    `cluster.waitForCreation`), instead of ending ClusterNotFound and halting the fleet."""
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox, without_clusters={"use1-b"})
        execution = fleets.start_fleet(sandbox, fleets.fleet_plan(cells), "created-later")
        sfn = sandbox.client("stepfunctions", attempts=10)

        def waiting_for_its_cluster():
            child = fleets.children(sandbox, execution).get("use1-b")
            return child is not None and any(
                e.get("stateEnteredEventDetails", {}).get("name") == "WaitForCluster"
                for e in sfn.get_execution_history(executionArn=child["executionArn"], maxResults=1000)["events"])

        wait_until(waiting_for_its_cluster, "use1-b waiting for its cluster")
        # The live view says what the cell waits for (not `RUNNING - -`).
        seen = []
        watcher, reader = sandbox.cli_in_background(seen.append, "fleet", "watch", "created-later")
        wait_until(lambda: any(line.startswith("use1-b") and "waiting for the cluster" in line for line in seen),
                   "fleet watch showing use1-b waiting for its cluster")
        fleets.create_cell_cluster(sandbox, "use1-b", cells["use1-b"]["region"])
        assert watcher.wait(timeout=600) == 0, "\n".join(seen)
        reader.join(timeout=10)
        ended = fleets.wait_for_end(sandbox, execution)
        assert ended["status"] == "SUCCEEDED", ended
        assert json.loads(ended["output"])["tally"]["promoted"] == 6
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted=set(cells))


def test_an_alarm_that_fires_during_a_soak_halts_the_fleet_though_it_is_ok_again_at_its_end():
    """The soak reads its alarms at its end, and their history since it began: a 2 s ALARM in
    the middle of a 20 s soak halts the fleet after wave 1; wave 2 never starts."""
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        cloudwatch = sandbox.client("cloudwatch")
        cloudwatch.put_metric_alarm(AlarmName="web-fleet-slo", Namespace="Web", MetricName="Errors", Statistic="Sum",
                                    Period=60, EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold")
        cloudwatch.set_alarm_state(AlarmName="web-fleet-slo", StateValue="OK", StateReason="quiet")
        plan = fleets.fleet_plan(cells, soak={"seconds": 20, "alarms": ["web-fleet-slo"]})
        execution = fleets.start_fleet(sandbox, plan, "soaked")
        sfn = sandbox.client("stepfunctions", attempts=10)
        wait_until(lambda: any(e.get("stateEnteredEventDetails", {}).get("name") == "Soak"
                               for e in sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]),
                   "the soak after wave 1", timeout=300)
        cloudwatch.set_alarm_state(AlarmName="web-fleet-slo", StateValue="ALARM", StateReason="Threshold Crossed: 5 errors")
        time.sleep(2)
        cloudwatch.set_alarm_state(AlarmName="web-fleet-slo", StateValue="OK", StateReason="quiet again")
        ended = fleets.wait_for_end(sandbox, execution)
        assert (ended["status"], ended["error"]) == ("FAILED", "FleetHalted"), ended
        assert "the soak after wave 1 failed: alarm web-fleet-slo went to ALARM during the soak, at " in ended["cause"]
        assert "(Threshold Crossed: 5 errors)" in ended["cause"], ended["cause"]
        assert set(fleets.children(sandbox, execution)) == {"use1-a"}, "wave 2 never started"
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a"})


def test_the_soak_halts_the_fleet_when_a_promoted_cells_new_cluster_burns_its_slo_slowly():
    """A tenth of each new cluster's requests fail: 10 times the pace a 99 % SLO allows, under the
    rollout's fast burn (14.4×), so wave 1's cell promotes; the soak after it judges the promoted
    cell on the slow pair (6×, its windows within the 10 s soak: 300 s and 60 s) and halts the
    fleet with every alarm OK; wave 2 never starts."""
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox, [("use1-a", "us-east-1"), ("use1-b", "us-east-1")])
        create_slo(sandbox, "web-availability")
        served(sandbox, 1_000_000, 0)
        plan = fleets.fleet_plan(cells, waves=[{"size": 1}, {"size": "100%"}], soak={"seconds": 10})
        plan["template"]["errorBudget"] = {"slos": ["web-availability"], "rolloutShare": 0}
        groups = {f"{cell}/{side}": (c["listener"], c[side]) for cell, c in cells.items() for side in ("old", "new")}

        def values(second):
            return {key: {"RequestCount": 100, "HTTPCode_Target_5XX_Count": 10 if key.endswith("/new") else 0}
                    for key in groups}

        with AlbMetrics(sandbox, values, groups):
            execution = fleets.start_fleet(sandbox, plan, "slow-burn")
            ended = fleets.wait_for_end(sandbox, execution)
        assert (ended["status"], ended["error"]) == ("FAILED", "FleetHalted"), ended
        assert "the soak after wave 1 failed: cell use1-a: the new cluster burns SLO web-availability's error " \
               "budget 10.0× over the last 5 min and 10.0× over 1 min, at least 6× in both" in ended["cause"], \
            ended["cause"]
        assert set(fleets.children(sandbox, execution)) == {"use1-a"}, "wave 2 never started"
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a"})


def test_a_failed_cell_halts_the_fleet_and_the_next_wave_never_starts():
    with Sandbox(log=captured) as sandbox:
        ended, cells, cli_exit = fleets.run_fleet(sandbox, "fleet-halt", captured)
        assert (ended["status"], ended["error"]) == ("FAILED", "FleetHalted")
        assert cli_exit == 1
        assert ended["cause"].startswith("fleet web-fleet halted after wave 2 of 3: 1 cell failed, more than the "
                                         "failure budget of 0; failed cells: euw1-a (wave 2, FAILED CheckFailed"), \
            ended["cause"]
        children = fleets.children(sandbox, ended["executionArn"])
        assert {c: d["status"] for c, d in children.items()} == {
            "use1-a": "SUCCEEDED", "euw1-a": "FAILED", "use1-b": "SUCCEEDED"}, "wave 3 never started"
        # onHalt finishRunning: the wave's other cell finished (promoted).
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a", "use1-b"})
        events = fleet_events(sandbox, ended["executionArn"])
        [failed] = [d for t, d in events if t == "Cell Failed"]
        assert (failed["cell"], failed["wave"], failed["status"], failed["error"]) == ("euw1-a", 2, "FAILED", "CheckFailed")
        assert failed["execution"] == children["euw1-a"]["executionArn"] and failed["cause"], failed
        halted = [d for t, d in events if t == "Fleet Halted"]
        assert halted and halted[0]["tally"]["failures"][0]["cell"] == "euw1-a"


def test_a_budget_of_one_lets_one_failure_pass():
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        fail_alarm(sandbox, cells, "euw1-a")
        execution = fleets.start_fleet(sandbox, fleets.fleet_plan(cells, failure_budget=1), "budget-of-one")
        ended = fleets.wait_for_end(sandbox, execution)
        assert ended["status"] == "SUCCEEDED", ended.get("cause")
        tally = json.loads(ended["output"])["tally"]
        assert (tally["promoted"], tally["failed"], tally["failures"][0]["cell"]) == (5, 1, "euw1-a")
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted=set(cells) - {"euw1-a"})


def slow(plan, *slow_cells):
    """These cells bake a minute per step: still running when the test acts."""
    for cell in plan["cells"]:
        if cell["name"] in slow_cells:
            cell["values"]["bake"] = {"seconds": 60, "checkIntervalSeconds": 2}
    return plan


def test_aborting_a_fleet_stops_its_running_cells_and_each_one_restores_its_baseline():
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        plan = slow(fleets.fleet_plan(cells), "euw1-a", "use1-b")
        execution = fleets.start_fleet(sandbox, plan, "aborted")
        wait_until(lambda: all(fleets.cell_weights(sandbox, cells)[c] == (50, 50) for c in ("euw1-a", "use1-b")),
                   "wave 2's cells at 50 %")
        # A wave-3 cell's new cluster, created (and opted in) while the fleet runs: the intake
        # leaves it to the fleet.
        error, answer = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox, "euw1-c-new", "eu-west-1"))
        assert error is None and answer["action"] == "skipped", answer
        assert "is cell `euw1-c` of fleet `web-fleet`" in answer["reason"], answer
        # What `cluster-canary fleet abort` does first.
        sandbox.client("stepfunctions").stop_execution(executionArn=execution, error="Aborted", cause="by hand")
        answer = sandbox.fleet_safety_net.answer_for(execution, timeout=120)
        assert answer["stopped"] == 2, answer
        # Its last word: stopped, not halted; the cells it stopped are no failed cells.
        events = fleet_events(sandbox, execution)
        stopped = [d for t, d in events if t == "Fleet Stopped"]
        assert [(d["status"], d["error"], d["cause"], d["cellsStopped"], d["fleet"]) for d in stopped] == [
            ("ABORTED", "Aborted", "by hand", 2, "web-fleet")], events
        assert not [d for t, d in events if t == "Cell Failed"], events
        children = fleets.wait_for_cells_to_settle(sandbox, execution)
        assert {c: (d["status"], d.get("error")) for c, d in children.items()} == {
            "use1-a": ("SUCCEEDED", None), "euw1-a": ("ABORTED", "FleetStopped"), "use1-b": ("ABORTED", "FleetStopped")}
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a"})
        # The fleet ended: the cell's cluster still starts no rollout of the profile's traffic.
        error, answer = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox, "euw1-c-new", "eu-west-1"))
        assert error is None and answer["action"] == "skipped", answer
        assert "is cell `euw1-c` of fleet `web-fleet`, which ran as" in answer["reason"], answer


def start_from_a_stored_plan(sandbox, plan, name):
    """The fleet started as `fleet start` starts it: its plan stored in the stack's bucket under
    its digest, the execution given the reference. The execution ARN and the plan's key."""
    body = json.dumps(plan, separators=(",", ":")).encode()
    digest = hashlib.sha256(body).hexdigest()
    key = f"fleet-plans/{plan['name']}/{digest}.json"
    sandbox.client("s3").put_object(Bucket=sandbox.fleet_plan_bucket, Key=key, Body=body)
    reference = {"storedPlan": {"bucket": sandbox.fleet_plan_bucket, "key": key, "sha256": digest},
                 "name": plan["name"]}
    execution = sandbox.client("stepfunctions").start_execution(
        stateMachineArn=sandbox.fleet_state_machine, name=name, input=json.dumps(reference))["executionArn"]
    return execution, key


def test_a_fleet_whose_stored_plan_is_deleted_can_still_be_watched_listed_and_aborted():
    """The cells are child executions: stopping them, showing them and counting them needs no
    plan. With the stored plan's object deleted while two cells are at 50/50, `fleet abort` stops
    both and waits for each baseline, and `watch` and `list` say the plan is gone and show the
    cells from their executions."""
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        plan = slow(fleets.fleet_plan(cells), "euw1-a", "use1-b")
        _, key = start_from_a_stored_plan(sandbox, plan, "plan-gone")
        wait_until(lambda: all(fleets.cell_weights(sandbox, cells)[c] == (50, 50) for c in ("euw1-a", "use1-b")),
                   "wave 2's cells at 50 %")
        sandbox.client("s3").delete_object(Bucket=sandbox.fleet_plan_bucket, Key=key)

        listed = sandbox.cli("fleet", "list")
        row = next(line.split() for line in listed.stdout.splitlines() if line.startswith("plan-gone "))
        assert row[:4] == ["plan-gone", plan["name"], "RUNNING", "3?"], listed.stdout

        aborted = sandbox.cli("fleet", "abort", "plan-gone", "--timeout", "120", timeout=150)
        captured(aborted.stdout + aborted.stderr)
        assert aborted.returncode == 0, aborted.stdout + aborted.stderr
        # Each running cell is stopped by the CLI, or by the fleet's safety net, which acts on the
        # fleet's stop at once: both documented (docs/fleets.md), both said.
        for cell in ("euw1-a", "use1-b"):
            assert f"cell {cell} stopped (" in aborted.stdout or f"cell {cell} already stopped (" in aborted.stdout
        assert "no cell of fleet plan-gone is running; 2 stopped, each back at its baseline" in aborted.stdout
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a"})
        watched = sandbox.cli("fleet", "watch", "plan-gone", timeout=60)
        captured(watched.stdout + watched.stderr)
        gone = f"its stored plan (s3://{sandbox.fleet_plan_bucket}/{key}) is missing or is not the one it started with"
        assert f"fleet {plan['name']}: {gone}" in watched.stdout, watched.stdout + watched.stderr
        rows = {line.split()[0]: line.split() for line in watched.stdout.splitlines() if line[:4] in ("use1", "euw1")}
        assert rows["use1-a"][1:] == ["?", "?", "SUCCEEDED", "-", "promoted"], watched.stdout
        assert rows["euw1-a"][1:] == ["?", "?", "ABORTED", "-", "FleetStopped"], watched.stdout


def test_a_fleet_left_alone_after_its_stored_plan_is_deleted_ends_with_the_functions_message():
    """Issue 68: the plan deleted during the first wave, nobody aborts: the next wave cannot be
    read, and the fleet ends FAILED with fleet-waves' message as its cause (a sentence, as `fleet
    validate` says it), not Lambda's JSON error document."""
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        execution, key = start_from_a_stored_plan(sandbox, fleets.fleet_plan(cells), "plan-left")
        wait_until(lambda: fleets.cell_weights(sandbox, cells)["use1-a"] != (100, 0), "wave 1's cell moving")
        sandbox.client("s3").delete_object(Bucket=sandbox.fleet_plan_bucket, Key=key)
        ended = fleets.wait_for_end(sandbox, execution)
    assert ended["status"] == "FAILED", ended
    assert not ended["cause"].lstrip().startswith("{"), ended["cause"]
    assert "errorMessage" not in ended["cause"] and key in ended["cause"], ended["cause"]


def test_on_halt_abort_running_stops_the_other_cells_of_the_wave():
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        fail_alarm(sandbox, cells, "euw1-b")
        waves = [{"cells": ["use1-a"]}, {"cells": ["euw1-b", "use1-c", "euw1-c"]}, {"size": "100%"}]
        plan = slow(fleets.fleet_plan(cells, waves=waves, on_halt="abortRunning"), "use1-c", "euw1-c")
        execution = fleets.start_fleet(sandbox, plan, "abort-running")
        ended = fleets.wait_for_end(sandbox, execution)
        assert (ended["status"], ended["error"]) == ("FAILED", "FleetHalted")
        assert "Promoted: 1, failed: 1, stopped by the halt: 2, not started: 2" in ended["cause"], ended["cause"]
        children = fleets.wait_for_cells_to_settle(sandbox, execution)
        assert {c: (d["status"], d.get("error")) for c, d in children.items()} == {
            "use1-a": ("SUCCEEDED", None), "euw1-b": ("FAILED", "CheckFailed"),
            "use1-c": ("ABORTED", "FleetHalted"), "euw1-c": ("ABORTED", "FleetHalted")}
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a"})


BAD_PLANS = [
    ("a cell named twice", lambda plan: plan["cells"][1].update(name=plan["cells"][0]["name"]), "cells[1].name"),
    ("a wave naming an unknown cell", lambda plan: plan["waves"].insert(0, {"cells": ["nowhere"]}),
     "waves[0].cells[0]"),
    ("two cells on one traffic target",
     lambda plan: plan["cells"][1]["values"].update(trafficTargets=plan["cells"][0]["values"]["trafficTargets"]),
     "cells[1]"),
    ("a budget larger than the fleet", lambda plan: plan.update(failureBudget=7), "failureBudget"),
    ("a plan over its size cap", lambda plan: plan["template"].update(padding="x" * 100_000), "fleet"),
]


def test_a_bad_fleet_plan_is_refused_with_its_path_and_starts_nothing():
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        for n, (what, mutate, path) in enumerate(BAD_PLANS):
            plan = fleets.fleet_plan(cells)
            mutate(plan)
            ended = fleets.wait_for_end(sandbox, fleets.start_fleet(sandbox, plan, f"refused-{n}"), timeout=60)
            assert (ended["status"], ended["error"]) == ("FAILED", "InvalidPlan"), what
            # The sentence `fleet validate` gives, not the function's error document.
            assert ended["cause"].startswith(f"invalid fleet plan: {path}: "), (what, ended["cause"])
            assert fleets.children(sandbox, ended["executionArn"]) == {}, what
        # An input at Step Functions' limit, straight to StartExecution: refused as InvalidPlan,
        # never grown past the limit by a first state into States.DataLimitExceeded.
        plan = fleets.fleet_plan(cells)
        plan["template"]["padding"] = ""
        plan["template"]["padding"] = "x" * (262_144 - len(json.dumps(plan, separators=(",", ":")).encode()))
        text = json.dumps(plan, separators=(",", ":"))
        assert len(text.encode()) == 262_144
        started = sandbox.client("stepfunctions").start_execution(
            stateMachineArn=sandbox.fleet_state_machine, name="refused-at-the-limit", input=text)["executionArn"]
        ended = fleets.wait_for_end(sandbox, started, timeout=60)
        assert (ended["status"], ended["error"]) == ("FAILED", "InvalidPlan"), ended
        assert ended["cause"].startswith("invalid fleet plan: fleet: is 262144 bytes"), ended["cause"]
        assert fleets.cell_weights(sandbox, cells) == {cell: BASELINE for cell in cells}


def test_the_cli_validates_checks_starts_aborts_watches_and_lists_a_fleet(tmp_path):
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        bad = fleets.fleet_plan(cells)
        bad["cells"][1]["name"] = bad["cells"][0]["name"]
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        refused = sandbox.cli("fleet", "validate", str(tmp_path / "bad.json"))
        assert refused.returncode == 1 and "cells[1].name: `use1-a` is already the name of cells[0]" in refused.stdout, \
            refused.stdout + refused.stderr

        plan = slow(fleets.fleet_plan(cells), "euw1-a", "use1-b")
        path = tmp_path / "fleet.json"
        path.write_text(json.dumps(plan))
        valid = sandbox.cli("fleet", "validate", str(path))
        assert valid.returncode == 0 and "wave 2 (2 at once): euw1-a (eu-west-1), use1-b (us-east-1)" in valid.stdout
        checked = sandbox.cli("fleet", "check", str(path))
        assert checked.returncode == 0, checked.stdout + checked.stderr
        # A misspelt soak alarm would cost a wave, then halt the fleet: the check reads them.
        soaking = {**plan, "soak": {"seconds": 5, "alarms": [cells["use1-a"]["alarm"], "web-fleet-slo-typo"]}}
        (tmp_path / "soaking.json").write_text(json.dumps(soaking))
        refused = sandbox.cli("fleet", "check", str(tmp_path / "soaking.json"))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"✓ soak: alarm {cells['use1-a']['alarm']} exists (" in refused.stdout, refused.stdout
        assert "✗ soak: no alarm named web-fleet-slo-typo in us-east-1: the first soak would halt the fleet" \
            in refused.stdout, refused.stdout
        assert checked.stdout.count("is ACTIVE") == 6 and "every cell of fleet web-fleet passed its checks" in checked.stdout
        assert "fleet web-fleet: every one of its 6 cells passed its checks; its soak did not (above)" in refused.stdout
        # Cells are checked concurrently and said in the plan's order; the end counts and names
        # the failing ones.
        assert [line.split()[1] for line in checked.stdout.splitlines() if line.startswith("cell ")] == \
            [cell["name"] for cell in plan["cells"]], checked.stdout
        missing = json.loads(json.dumps(plan))
        for cell in missing["cells"][1:3]:
            cell["values"]["analysis"] = {"alarms": {"names": [f"{cell['name']}-no-such-alarm"]}}
        (tmp_path / "missing.json").write_text(json.dumps(missing))
        failing = sandbox.cli("fleet", "check", str(tmp_path / "missing.json"))
        assert failing.returncode == 1, failing.stdout + failing.stderr
        named = [cell["name"] for cell in missing["cells"][1:3]]
        assert failing.stdout.rstrip().endswith(
            f"fleet web-fleet: 2 of 6 cells failed a check (each above, with why): {named[0]}, {named[1]}"), \
            failing.stdout

        started = sandbox.cli("fleet", "start", str(path), "--name", "by-hand")
        assert started.returncode == 0, started.stderr
        wait_until(lambda: all(fleets.cell_weights(sandbox, cells)[c] == (50, 50) for c in ("euw1-a", "use1-b")),
                   "wave 2's cells at 50 %")
        aborted = sandbox.cli("fleet", "abort", "by-hand", "--reason", "stopped by the test", timeout=300)
        assert aborted.returncode == 0, aborted.stdout + aborted.stderr
        assert "fleet by-hand stopped: no new cell starts" in aborted.stdout
        # It returns once the stopped cells are back at their baselines, as `abort` does.
        assert "no cell of fleet by-hand is running; 2 stopped, each back at its baseline" in aborted.stdout, \
            aborted.stdout
        assert {c: w for c, w in fleets.cell_weights(sandbox, cells).items() if c in ("euw1-a", "use1-b")} == {
            "euw1-a": BASELINE, "use1-b": BASELINE}
        children = fleets.wait_for_cells_to_settle(sandbox, started.stdout.split(": ", 1)[1].splitlines()[0])
        assert {c: (d["status"], d.get("error")) for c, d in children.items()} == {
            "use1-a": ("SUCCEEDED", None), "euw1-a": ("ABORTED", "FleetStopped"), "use1-b": ("ABORTED", "FleetStopped")}
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a"})

        watched = sandbox.cli("fleet", "watch", "by-hand")
        assert watched.returncode == 1, "an aborted fleet did not complete"
        rows = {line.split()[0]: line.split() for line in watched.stdout.splitlines() if line[:4] in ("use1", "euw1")}
        assert rows["use1-a"][3:] == ["SUCCEEDED", "-", "promoted"]
        assert rows["euw1-a"][3:] == ["ABORTED", "-", "FleetStopped"]
        assert rows["euw1-c"][3:5] == ["not", "started"]
        listed = sandbox.cli("fleet", "list")
        row = next(line.split() for line in listed.stdout.splitlines() if line.startswith("by-hand"))
        # NAME FLEET STATUS (error) CELLS PROMOTED FAILED STOPPED AGE: counted from its cells.
        assert row[:8] == ["by-hand", "web-fleet", "ABORTED", "(Aborted)", "6", "1", "0", "2"], listed.stdout


def test_a_wave_waits_for_a_person_approved_it_goes_on_rejected_the_fleet_halts(tmp_path):
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        plan = fleets.fleet_plan(cells)
        plan["approval"] = {"beforeWaves": [2], "timeoutSeconds": 600}
        path = tmp_path / "fleet.json"
        path.write_text(json.dumps(plan))
        assert sandbox.cli("fleet", "start", str(path), "--name", "approved").returncode == 0
        execution = sandbox.fleet_state_machine.replace(":stateMachine:", ":execution:") + ":approved"

        def approve():
            answer = sandbox.cli("fleet", "approve", "approved", "--by", "sam")
            return answer.returncode == 0 and "approved wave 2 of approved: its cells start" in answer.stdout

        wait_until(approve, "wave 2 waiting for an approval")
        children = fleets.children(sandbox, execution)
        assert set(children) == {"use1-a"}, "wave 2 started only once approved"
        ended = fleets.wait_for_end(sandbox, execution)
        assert ended["status"] == "SUCCEEDED", ended.get("cause")
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted=set(cells))
        requested = [d for t, d in fleet_events(sandbox, execution) if t == "Wave Approval Requested"]
        assert [(d["wave"], d["timeoutSeconds"]) for d in requested] == [(2, 600)]

        plan["name"] = "second"
        plan["approval"] = {"beforeWaves": [1], "timeoutSeconds": 600}
        path.write_text(json.dumps(plan))
        assert sandbox.cli("fleet", "start", str(path), "--name", "rejected").returncode == 0
        rejected = sandbox.fleet_state_machine.replace(":stateMachine:", ":execution:") + ":rejected"

        def reject():
            answer = sandbox.cli("fleet", "reject", "rejected", "--reason", "not on a Friday", "--by", "sam")
            return answer.returncode == 0

        wait_until(reject, "wave 1 waiting for an approval")
        ended = fleets.wait_for_end(sandbox, rejected)
        assert (ended["status"], ended["error"]) == ("FAILED", "FleetHalted")
        assert "wave 1 was rejected (WaveRejected: rejected by sam: not on a Friday)" in ended["cause"], ended["cause"]
        assert fleets.children(sandbox, rejected) == {}, "no cell started"


def test_a_halt_with_rollback_promoted_on_halt_puts_the_promoted_cells_back_too():
    """use1-a and use1-b are promoted, euw1-a fails and the fleet halts, rolling the promoted
    cells back. After use1-a's promotion a person moved its listener to 30/70: that cell is
    left as found, and the halt's message says so (1 of 2 went back; use1-a left, and why), with
    no Rollbacks metric for it (ForeignChanges instead); use1-b goes back."""
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        fail_alarm(sandbox, cells, "euw1-a")
        plan = fleets.fleet_plan(cells)
        plan["rollbackPromotedOnHalt"] = True
        execution = fleets.start_fleet(sandbox, plan, "undo")
        wait_until(lambda: fleets.children(sandbox, execution).get("use1-a", {}).get("status") == "SUCCEEDED",
                   "use1-a promoted")
        moved = cells["use1-a"]
        sandbox.client("elbv2", moved["region"]).modify_listener(
            ListenerArn=moved["listener"], DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
                {"TargetGroupArn": moved["old"], "Weight": 30}, {"TargetGroupArn": moved["new"], "Weight": 70}]}}])
        ended = fleets.wait_for_end(sandbox, execution)
        assert (ended["status"], ended["error"]) == ("FAILED", "FleetHalted")
        assert "Promoted cells rolled back to their baselines (rollbackPromotedOnHalt): 1 of 2" in ended["cause"], \
            ended["cause"]
        assert "NOT rolled back: use1-a-" in ended["cause"], ended["cause"]
        assert " (left as found: changed outside its rollout since the promotion)" in ended["cause"], ended["cause"]
        children = fleets.children(sandbox, execution)
        assert {c: d["status"] for c, d in children.items()} == {
            "use1-a": "SUCCEEDED", "euw1-a": "FAILED", "use1-b": "SUCCEEDED"}
        # use1-b put back, the failed euw1-a rolled back, use1-a as the person left it.
        weights = fleets.cell_weights(sandbox, cells)
        assert weights == {cell: (30, 70) if cell == "use1-a" else BASELINE for cell in cells}, weights
        back = scenarios.emitted_metrics(sandbox, "us-east-1/use1-b-new")
        assert ("Rollbacks", {"Cluster": "us-east-1/use1-b-new", "Cause": "FleetHalted"}, 1) in back, back
        left = scenarios.emitted_metrics(sandbox, "us-east-1/use1-a-new")
        assert not any(name == "Rollbacks" for name, _, _ in left), left
        assert ("ForeignChanges", {"Cluster": "us-east-1/use1-a-new"}, 1) in left, left


def thousand_cells(cells):
    """`fleet_plan` over the seeded cells, then cells up to 1,000, each with its own cluster and ALB
    listener and target groups (three ARNs: about 400 bytes a cell), none of which exists: the
    plan is read and validated whole; only the seeded cells run."""
    plan = fleets.fleet_plan(cells, name="big", waves=[{"cells": list(cells)}, {"size": "100%"}])
    prefix = "arn:aws:elasticloadbalancing:us-east-1:123456789012"
    for i in range(1000 - len(cells)):
        plan["cells"].append({"name": f"c{i:04d}", "values": {
            "cluster": {"name": f"c{i:04d}-new", "region": "us-east-1"},
            "trafficTargets": [{"alb": {
                "listenerArn": f"{prefix}:listener/app/web-c{i:04d}/{i:016x}/{i + 1:016x}",
                "stableTargetGroupArn": f"{prefix}:targetgroup/web-c{i:04d}-old/{i:016x}",
                "canaryTargetGroupArn": f"{prefix}:targetgroup/web-c{i:04d}-new/{i + 7:016x}"}}],
            "analysis": {"alarms": {"names": [f"web-c{i:04d}-5xx"]}, "failureLimit": 1}}})
    plan["approval"] = {"beforeWaves": [2], "timeoutSeconds": 600}
    # Read by the state machine itself: it travels beside the reference.
    plan["soak"] = {"seconds": 1, "alarms": [c["alarm"] for c in cells.values()]}
    return plan


def test_a_thousand_cell_fleet_is_stored_in_s3_and_runs_by_reference(tmp_path):
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox, fleets.CELLS[:1])
        plan = thousand_cells(cells)
        size = len(json.dumps(plan, separators=(",", ":")).encode())
        assert 300_000 < size < 4 * 1024 * 1024, size
        path = tmp_path / "big.json"
        path.write_text(json.dumps(plan))
        valid = sandbox.cli("fleet", "validate", str(path))
        assert valid.returncode == 0, valid.stdout + valid.stderr
        assert "valid: fleet big, 1000 cells in 2 waves" in valid.stdout, valid.stdout
        assert f"{size} bytes as compact JSON, over the 98304 a fleet's state carries" in valid.stdout

        started = sandbox.cli("fleet", "start", str(path), "--name", "big")
        assert started.returncode == 0, started.stdout + started.stderr
        assert "wave 2 (10 at once): c0000 (us-east-1), " in started.stdout and "… and 979 more" in started.stdout
        stored = f"stored the fleet plan at s3://{sandbox.fleet_plan_bucket}/fleet-plans/big/"
        assert stored in started.stdout, started.stdout
        key = "fleet-plans/big/" + started.stdout.split(stored, 1)[1].split()[0]
        # Content-addressed: the key is the SHA-256 of the object, which is the plan.
        body = sandbox.client("s3").get_object(Bucket=sandbox.fleet_plan_bucket, Key=key)["Body"].read()
        assert key == f"fleet-plans/big/{hashlib.sha256(body).hexdigest()}.json" and json.loads(body) == plan
        execution = sandbox.fleet_state_machine.replace(":stateMachine:", ":execution:") + ":big"
        sfn = sandbox.client("stepfunctions", attempts=10)
        given = json.loads(sfn.describe_execution(executionArn=execution)["input"])
        assert given == {"storedPlan": {"bucket": sandbox.fleet_plan_bucket, "key": key,
                                        "sha256": key.rsplit("/", 1)[1][:-5]},
                         "name": "big", "soak": plan["soak"]}, given

        # Wave 1 (the seeded cell) runs and is promoted; wave 2, 999 cells, waits for a person.
        seen = []
        wait_until(lambda: seen.extend(fleet_events(sandbox, execution)) or
                   any(t == "Wave Approval Requested" for t, _ in seen), "wave 2 waiting for an approval", timeout=300)
        requested = next(d for t, d in seen if t == "Wave Approval Requested")
        assert len(requested["cells"]) == 999
        started_event = next(d for t, d in seen if t == "Fleet Started")
        assert (started_event["fleet"], started_event["cells"]) == ("big", 1000)
        assert any(e["type"] == "WaitStateEntered" and e["stateEnteredEventDetails"]["name"] == "Soak"
                   for e in sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"])
        assert_each_cell_promoted_or_at_its_baseline(sandbox, cells, promoted={"use1-a"})
        rejected = sandbox.cli("fleet", "reject", "big", "--reason", "a thousand is enough for a test", "--by", "sam")
        assert rejected.returncode == 0, rejected.stdout + rejected.stderr
        ended = fleets.wait_for_end(sandbox, execution, timeout=300)
        assert (ended["status"], ended["error"]) == ("FAILED", "FleetHalted"), ended
        assert set(fleets.children(sandbox, execution)) == {"use1-a"}, "no cell of wave 2 started"
        # The state carried the reference and one wave's cell list, never the 400 KB plan.
        assert fleets.largest_state(sandbox, execution) < 64 * 1024

        # The CLI's views read the stored plan: every cell in the table.
        watched = sandbox.cli("fleet", "watch", "big", timeout=300)
        assert watched.returncode == 1, watched.stdout + watched.stderr
        rows = {line.split()[0]: line.split() for line in watched.stdout.splitlines() if line[:1] in ("u", "c")}
        assert rows["use1-a"][3:] == ["SUCCEEDED", "-", "promoted"], watched.stdout[-2000:]
        assert rows["c0998"][3:5] == ["not", "started"], watched.stdout[-2000:]
        listed = sandbox.cli("fleet", "list")
        row = next(line.split() for line in listed.stdout.splitlines() if line.startswith("big "))
        assert row[:5] == ["big", "big", "FAILED", "(FleetHalted)", "1000"], listed.stdout

        # The object changed in the bucket under a fleet: refused at the first step, nothing started.
        s3 = sandbox.client("s3")
        edited = dict(plan, failureBudget=1)
        s3.put_object(Bucket=sandbox.fleet_plan_bucket, Key=key, Body=json.dumps(edited).encode())
        tampered = sfn.start_execution(stateMachineArn=sandbox.fleet_state_machine, name="tampered",
                                       input=json.dumps(given))["executionArn"]
        ended = fleets.wait_for_end(sandbox, tampered, timeout=120)
        assert (ended["status"], ended["error"]) == ("FAILED", "InvalidPlan"), ended
        assert ended["cause"].startswith(f"invalid fleet plan: storedPlan: the object at s3://{sandbox.fleet_plan_bucket}/{key} "
                                         "is not the plan this fleet was started with"), ended["cause"]
        assert fleets.children(sandbox, tampered) == {}
