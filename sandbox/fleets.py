"""A fleet on the sandbox: six cells in two regions, each an ALB listener of its own (the old
cluster's target group at 100, the new one's at 0), a new EKS cluster and an alarm, moved in
waves by the stack's fleet state machine (statemachine/fleet.asl.json), each cell a child
execution of the rollout state machine.

`seed_cells` makes the cells' world; `fleet_plan` the fleet plan over it; `cell_weights` reads
each cell's listener back; `run_fleet` is the `fleet`, `fleet-halt` and `fleet-outlier`
scenarios.
"""
import hashlib
import json
import time
from pathlib import Path

from . import compare
from .alb_metrics import AlbMetrics
from .world import ACCOUNT, LOAD_BALANCER

# Three cells per region; the fleet's order spreads each wave across both.
CELLS = [("use1-a", "us-east-1"), ("use1-b", "us-east-1"), ("use1-c", "us-east-1"),
         ("euw1-a", "eu-west-1"), ("euw1-b", "eu-west-1"), ("euw1-c", "eu-west-1")]


def seed_cells(sandbox, cells=CELLS, without_clusters=()):
    """Each cell's load balancer `web-<cell>` (within the stack's write grant), its listener on
    the old target group, the new cluster `<cell>-new` (ACTIVE at once in moto; not yet for the
    cells in `without_clusters`: `create_cell_cluster`) and the alarm `web-<cell>-5xx` (in the
    stack's region, where the rollouts read alarms). Returns {cell: {"region", "listener",
    "old", "new", "cluster", "alarm"}}."""
    world = {}
    for cell, region in cells:
        ec2, elbv2, eks = (sandbox.client(s, region) for s in ("ec2", "elbv2", "eks"))
        subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]][:2]
        vpc_id = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        lb = elbv2.create_load_balancer(Name=f"{LOAD_BALANCER}-{cell}", Subnets=subnets, Type="application")
        groups = {
            side: elbv2.create_target_group(Name=f"{LOAD_BALANCER}-{cell}-{side}", Protocol="HTTP", Port=8080,
                                            VpcId=vpc_id, TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]
            for side in ("old", "new")
        }
        listener = elbv2.create_listener(
            LoadBalancerArn=lb["LoadBalancers"][0]["LoadBalancerArn"], Protocol="HTTP", Port=80,
            DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
                {"TargetGroupArn": groups["old"], "Weight": 100}, {"TargetGroupArn": groups["new"], "Weight": 0}]}}],
        )["Listeners"][0]["ListenerArn"]
        if cell not in without_clusters:
            create_cell_cluster(sandbox, cell, region)
        alarm = f"web-{cell}-5xx"
        sandbox.client("cloudwatch").put_metric_alarm(
            AlarmName=alarm, Namespace="AWS/ApplicationELB", MetricName="HTTPCode_Target_5XX_Count",
            Statistic="Sum", Period=60, EvaluationPeriods=1, Threshold=10, ComparisonOperator="GreaterThanThreshold")
        world[cell] = {"region": region, "listener": listener, "old": groups["old"], "new": groups["new"],
                       "cluster": f"{cell}-new", "alarm": alarm}
    return world


def create_cell_cluster(sandbox, cell, region):
    """What the platform team does for a cell: create its new cluster `<cell>-new`."""
    subnets = [s["SubnetId"] for s in sandbox.client("ec2", region).describe_subnets()["Subnets"]][:2]
    sandbox.client("eks", region).create_cluster(
        name=f"{cell}-new", version="1.34", roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": subnets})


def fleet_plan(cells, name="web-fleet", waves=None, failure_budget=0, on_halt="finishRunning", soak=None):
    """The fleet plan over `seed_cells`' world: a template the cells share (baking scaled down
    as in the world's profile) and each cell's own cluster, listener and alarm."""
    plan = {
        "name": name,
        "template": {
            "steps": [{"weight": 50}, {"weight": 100}],
            "bake": {"seconds": 4, "checkIntervalSeconds": 2},
            "argocd": {"labels": {"fleet": "web"}, "minApps": 2, "appsTimeoutSeconds": 60},
            "rollback": {"settleSeconds": 2},
        },
        "cells": [
            {"name": cell, "values": {
                "cluster": {"name": c["cluster"], "region": c["region"]},
                "trafficTargets": [{"alb": {"listenerArn": c["listener"], "stableTargetGroupArn": c["old"],
                                            "canaryTargetGroupArn": c["new"]}}],
                "analysis": {"alarms": {"names": [c["alarm"]]}, "failureLimit": 1},
            }}
            for cell, c in cells.items()
        ],
        "waves": waves or [{"size": 1}, {"size": 3, "maxConcurrentCells": 2}, {"size": "100%"}],
        "failureBudget": failure_budget,
        "onHalt": on_halt,
    }
    if soak:
        plan["soak"] = soak
    return plan


def cell_weights(sandbox, cells):
    """{cell: (old's weight, new's weight)} read back from each cell's listener."""
    weights = {}
    for cell, c in cells.items():
        listener = sandbox.client("elbv2", c["region"], attempts=10).describe_listeners(
            ListenerArns=[c["listener"]])["Listeners"][0]
        groups = {g["TargetGroupArn"]: g["Weight"] for g in listener["DefaultActions"][0]["ForwardConfig"]["TargetGroups"]}
        weights[cell] = (groups[c["old"]], groups[c["new"]])
    return weights


def start_fleet(sandbox, plan, name):
    return sandbox.client("stepfunctions").start_execution(
        stateMachineArn=sandbox.fleet_state_machine, name=name, input=json.dumps(plan))["executionArn"]


def wait_for_end(sandbox, execution_arn, timeout=600):
    """The fleet execution's DescribeExecution once it ended."""
    sfn = sandbox.client("stepfunctions", attempts=10)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(1)
    raise TimeoutError(f"{execution_arn} still running after {timeout} s")


def largest_state(sandbox, execution_arn):
    """The largest input or output any state of the execution took or gave, in characters."""
    sfn = sandbox.client("stepfunctions", attempts=10)
    largest = 0
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn):
        for event in page["events"]:
            for details in (v for k, v in event.items() if k.endswith("EventDetails")):
                for key in ("input", "output"):
                    largest = max(largest, len(details.get(key) or ""))
    return largest


def children(sandbox, fleet_execution):
    """{cell: DescribeExecution} of the fleet's child executions, found by the name suffix the
    fleet gives them (fleet-waves `child_suffix`)."""
    suffix = "-" + hashlib.sha256(fleet_execution.encode()).hexdigest()[:10]
    sfn = sandbox.client("stepfunctions", attempts=10)
    found = {}
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=sandbox.state_machine):
        for e in page["executions"]:
            if e["name"].endswith(suffix):
                found[e["name"][: -len(suffix)]] = sfn.describe_execution(executionArn=e["executionArn"])
    return found


def wait_for_cells_to_settle(sandbox, fleet_execution, timeout=600):
    """Children still running when the fleet ended (stopped by its safety net) end too; their
    own safety nets answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = children(sandbox, fleet_execution)
        if all(k["status"] != "RUNNING" for k in kids.values()):
            for k in kids.values():
                if sandbox.safety_net.matches(k["status"]):
                    sandbox.safety_net.answer_for(k["executionArn"], timeout=max(1, deadline - time.monotonic()))
            return kids
        time.sleep(1)
    raise TimeoutError(f"cells of {fleet_execution} still running after {timeout} s")


def run_fleet(sandbox, scenario, out=print):
    """`fleet`: six cells in two regions, waves 1 → 2 → 3, all promoted. `fleet-halt`: the alarm
    of a wave-2 cell is in ALARM, so its rollout rolls back; the fleet halts after wave 2, wave 3
    never starts, every cell ends promoted or at its baseline. Started and shown live by the
    operator CLI (`cluster-canary fleet start --watch`). Returns (DescribeExecution of the
    fleet, the cells, the CLI's exit code)."""
    if scenario == "fleet-outlier":
        return run_fleet_outlier(sandbox, out)
    cells = seed_cells(sandbox)
    plan = fleet_plan(cells)
    out(f"scenario {scenario}: 6 cells in us-east-1 and eu-west-1, waves of 1, 2 and 3 cells")
    failing = "euw1-a" if scenario == "fleet-halt" else None
    if failing:
        out(f">>> alarm {cells[failing]['alarm']} is in ALARM: cell {failing} (wave 2) will roll back")
        sandbox.client("cloudwatch").set_alarm_state(AlarmName=cells[failing]["alarm"], StateValue="ALARM",
                                                     StateReason="Threshold Crossed: sandbox")
    return start_and_watch(sandbox, plan, cells, scenario, out)


# Five cells of one region for `fleet-outlier`: four promoted in wave 1, the fifth after them.
OUTLIER_CELLS = [(f"use1-{c}", "us-east-1") for c in "abcde"]
OUTLIER = "use1-e"


def run_fleet_outlier(sandbox, out=print):
    """`fleet-outlier`: five cells of one region compare each canary with its baseline and with
    the promoted cells of the fleet (`analysis.compare.peers`). Wave 1's four cells promote (no
    peer yet: not judged against peers). use1-e's old and new clusters both answer 1.5 times
    slower than the other cells': against its own baseline the canary passes, against its four
    promoted peers it is an outlier, and it rolls back; the failure budget of 0 halts the fleet."""
    cells = seed_cells(sandbox, OUTLIER_CELLS)
    plan = fleet_plan(cells, waves=[{"size": 4, "maxConcurrentCells": 4}, {"size": "100%"}])
    plan["template"]["analysis"] = {"extendBakeSeconds": compare.EXTEND_BAKE_SECONDS, "compare": {
        "periodSeconds": 1, "lookbackSeconds": compare.LOOKBACK_SECONDS, "minSamples": compare.MIN_SAMPLES,
        "metrics": [{"name": "p99 latency", "alb": "latency", "stat": "p99", "allowedIncrease": 1.2}],
        "peers": {"minPeers": 2, "scope": "fleet"},
    }}
    out("scenario fleet-outlier: 5 cells in us-east-1, wave 1 of 4 cells then wave 2 of 1; each canary "
        "compared with its baseline and with the promoted cells")
    out(f">>> cell {OUTLIER}: its old and new clusters both answer 1.5x slower than the other cells'")
    groups = {f"{cell}/{side}": (c["listener"], c[side]) for cell, c in cells.items() for side in ("old", "new")}
    latencies = compare.Latencies()

    def values(second):
        sides, put = latencies(second), {}
        for key in groups:
            put[key] = dict(sides["canary" if key.endswith("/new") else "stable"])
            if key.startswith(OUTLIER):
                put[key]["TargetResponseTime"] = compare.slower(put[key]["TargetResponseTime"], 1.5)
        return put

    with AlbMetrics(sandbox, values, groups):
        # The first cells' first checks must find enough samples on both sides.
        time.sleep(compare.MIN_SAMPLES)
        return start_and_watch(sandbox, plan, cells, "fleet-outlier", out)


def start_and_watch(sandbox, plan, cells, scenario, out):
    """Starts the fleet with the operator CLI (`fleet start --watch`) and waits for its end."""
    path = Path(sandbox.run_dir) / "fleet.json"
    path.write_text(json.dumps(plan, indent=2))
    name = f"fleet-{scenario}"
    out(f"$ cluster-canary fleet start {path} --name {name} --watch")
    process, reader = sandbox.cli_in_background(out, "fleet", "start", str(path), "--name", name, "--watch")
    cli_exit = process.wait(timeout=900)
    reader.join(timeout=10)
    execution = sandbox.fleet_state_machine.replace(":stateMachine:", ":execution:") + f":{name}"
    ended = wait_for_end(sandbox, execution)
    out("each cell's listener, read back: " + ", ".join(
        f"{cell} {old}/{new}" for cell, (old, new) in cell_weights(sandbox, cells).items()))
    return ended, cells, cli_exit
