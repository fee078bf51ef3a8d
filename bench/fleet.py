"""A fleet of N cells on the sandbox, measured: wall time, state transitions and cost per cell,
the fleet's largest state. Writes its section of docs/benchmarks.md (between the markers below),
or prints it with --print. Not a test: it measures, it does not judge.

    python -m bench.fleet [--cells 50] [--print]

Cells alternate between us-east-1 and eu-west-1; waves of 1 cell, then up to 20 %, then the
rest, 10 cells at once; each cell's rollout is the sandbox fleet's (2 steps, 2 checks each).
"""
import argparse
import datetime
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.report import write_block
from sandbox import fleets
from sandbox.harness import REPO, Sandbox

# Its block of docs/benchmarks.md (bench/report.py).
BLOCK = "fleet benchmark"
# List prices (us-east-1): Standard Workflows per state transition; Lambda per request and GB-s.
PRICE_TRANSITION = 0.025 / 1000
PRICE_REQUEST = 0.20 / 1_000_000
PRICE_GB_SECOND = 0.0000166667
# The states each cell's iteration enters in the wave's Distributed Map when it is promoted
# (Admit, Admitted?, RunCell, CellPromoted): its own child workflow, not in the fleet's history.
ITERATION_TRANSITIONS, ITERATION_INVOCATIONS = 4, 1


def history(sfn, arn):
    events = []
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=arn):
        events.extend(page["events"])
    return events


def transitions(events):
    return sum(1 for e in events if e["type"].endswith("StateEntered"))


def lambda_tasks(events):
    return sum(1 for e in events if e.get("taskScheduledEventDetails", {}).get("resourceType") == "lambda")


def largest(events):
    return max((len(d.get(key) or "") for e in events for k, d in e.items() if k.endswith("EventDetails")
                for key in ("input", "output")), default=0)


def measure(count):
    cells_spec = [(f"c{i:02d}", "us-east-1" if i % 2 == 0 else "eu-west-1") for i in range(count)]
    with Sandbox(log=lambda line: None) as sandbox:
        cells = fleets.seed_cells(sandbox, cells_spec)
        plan = fleets.fleet_plan(cells, name="bench", waves=[{"size": 1}, {"size": "20%"}, {"size": "100%"}])
        plan["maxConcurrentCells"] = 10
        size = len(json.dumps(plan, separators=(",", ":")).encode())
        path = Path(tempfile.mkdtemp()) / "bench.json"
        path.write_text(json.dumps(plan))
        started = time.monotonic()
        # As a person starts one: the CLI stores a plan too large for the fleet's state in S3.
        out = sandbox.cli("fleet", "start", str(path), "--name", "bench")
        if out.returncode != 0:
            raise RuntimeError(out.stdout + out.stderr)
        arn = sandbox.fleet_state_machine.replace(":stateMachine:", ":execution:") + ":bench"
        ended = fleets.wait_for_end(sandbox, arn, timeout=3600)
        wall = time.monotonic() - started
        sfn = sandbox.client("stepfunctions", attempts=10)
        fleet_events = history(sfn, arn)
        children = fleets.children(sandbox, arn)
        child_events = [history(sfn, c["executionArn"]) for c in children.values()]
    cell_transitions = sum(transitions(e) for e in child_events) / max(len(child_events), 1)
    cell_invocations = sum(lambda_tasks(e) for e in child_events) / max(len(child_events), 1)
    per_cell_transitions = cell_transitions + ITERATION_TRANSITIONS + transitions(fleet_events) / count
    per_cell_invocations = cell_invocations + ITERATION_INVOCATIONS + lambda_tasks(fleet_events) / count
    # Billed at 100 ms an invocation at 128 MB: the functions' typical warm duration is well under.
    cost = per_cell_transitions * PRICE_TRANSITION + per_cell_invocations * (PRICE_REQUEST + 0.125 * 0.1 * PRICE_GB_SECOND)
    return {
        "cells": count, "status": ended["status"], "wall": wall, "planBytes": size,
        "stored": "stored the fleet plan at" in out.stdout,
        "promoted": sum(1 for c in children.values() if c["status"] == "SUCCEEDED"),
        "fleetEvents": len(fleet_events), "fleetTransitions": transitions(fleet_events),
        "cellTransitions": cell_transitions, "perCellTransitions": per_cell_transitions,
        "perCellInvocations": per_cell_invocations, "costPerCell": cost, "largestState": largest(fleet_events),
    }


def section(result):
    r = result
    return [
        BEGIN,
        f"## A fleet of {r['cells']} cells (sandbox)",
        "",
        f"Measured {datetime.date.today().isoformat()} by `python -m bench.fleet --cells {r['cells']}` (started "
        "with `cluster-canary fleet start`): cells "
        "alternating between us-east-1 and eu-west-1, waves of 1 cell, then up to 20 %, then the rest, "
        "10 at once; each cell's rollout is the sandbox fleet's (2 steps, 2 checks each, one ALB listener).",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| outcome | {r['status']}, {r['promoted']} of {r['cells']} cells promoted |",
        f"| the plan | {r['planBytes']:,} bytes as compact JSON: "
        + ("stored in the stack's FleetPlanBucket by `fleet start`, the state carries its reference |"
           if r["stored"] else "in the execution's input and state |"),
        f"| wall time | {r['wall']:.0f} s ({r['wall'] / r['cells']:.1f} s per cell) |",
        f"| fleet execution's history | {r['fleetEvents']} events, {r['fleetTransitions']} state transitions "
        "(its waves are Distributed Maps: the cells' iterations are child workflows with their own histories) |",
        f"| a cell's rollout | {r['cellTransitions']:.0f} state transitions |",
        f"| per cell in all | {r['perCellTransitions']:.1f} transitions, {r['perCellInvocations']:.1f} Lambda "
        f"invocations: ${r['costPerCell']:.5f} at list prices (Lambda billed at 100 ms, 128 MB) |",
        f"| the fleet's largest state | {r['largestState']:,} bytes (budget 256 KiB: docs/architecture.md, Fleets at scale) |",
        "",
        END,
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=50)
    parser.add_argument("--print", action="store_true", help="print the section instead of writing it")
    args = parser.parse_args()
    result = measure(args.cells)
    print(json.dumps(result), file=sys.stderr)
    lines = section(result)
    if args.print:
        print("\n".join(lines))
    else:
        write_block(BLOCK, lines)


if __name__ == "__main__":
    main()
