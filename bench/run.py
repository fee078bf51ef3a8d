"""The benchmark report: writes docs/benchmarks.md. Run it with scripts/bench.sh, which builds
the release functions first. Not part of the tests' pass/fail: it measures, it does not judge.

    python -m bench.run --binaries DIR [--runs N] [--out docs/benchmarks.md]

DIR holds <function>/bootstrap as `cargo lambda build --release` leaves them.

1. Cold start of each release `bootstrap` against a fake Lambda Runtime API (bench/runtime_api.py):
   spawn -> first `GET /runtime/invocation/next` (init), event sent -> answer received (first
   invocation), and peak RSS (VmHWM), side by side with its Python + boto3 twin
   (bench/python_twin.py), interleaved runs, min / median / max and the ratio.
2. The zipped size of each function (deflate, default level, as `sam deploy` packages it).
3. Rollback latency on the sandbox: from an alarm going to ALARM to every target read back at
   the baseline, for a few check intervals.
4. Per rollout on the sandbox: state transitions, Lambda invocations, the functions' AWS API
   calls per target per step (from the front door's request log), and the Step Functions +
   Lambda cost at list prices of a 4-step, 20-minute rollout checked every 30 s.
5. A fleet of 50 cells on the sandbox (bench/fleet.py, also runnable alone).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench import fleet
from bench.report import write_block
from bench.package_size import zipped_size
from bench.runtime_api import FakeRuntimeApi
from sandbox import scenarios
from sandbox.harness import REPO, Sandbox
from sandbox.world import REGION

FUNCTIONS = ("shift-weights", "evaluate-alarms", "register-cluster", "cluster-created")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": REGION,
               "AWS_DEFAULT_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true",
               # Nothing answers here: the benchmark events make no AWS call.
               "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
FUNCTION_ENV = {"MANAGEMENT_ACCESS": "secret", "MANAGEMENT_SECRET_ID": "argocd-hub", "ARGOCD_NAMESPACE": "argocd",
                "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:cluster-canary-rollout",
                "PROFILES": "{}", "RUST_LOG": "warn"}

# List prices, us-east-1, x86: Step Functions Standard per state transition; Lambda per request
# and per GB-second.
PRICE_TRANSITION = 0.025 / 1000
PRICE_REQUEST = 0.20 / 1_000_000
PRICE_GB_SECOND = 0.0000166667


def events():
    """One event per function that it answers without any AWS call."""
    not_opted_in = json.loads((REPO / "tests/events/eks-create-cluster-not-opted-in.json").read_text())
    plan = {"cluster": {"name": "green", "region": REGION},
            "trafficTargets": [{"route53": {"hostedZoneId": "Z1", "recordName": "app.example.com", "recordType": "A",
                                            "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}],
            "steps": [{"weight": 100}], "bake": {"seconds": 60, "checkIntervalSeconds": 30}}
    return {
        "shift-weights": {"operation": "benchmark"},
        "evaluate-alarms": {"operation": "evaluate", "plan": plan},
        "register-cluster": {"operation": "benchmark"},
        "cluster-created": not_opted_in,
    }


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def cold_start(command, event):
    """(init ms, first invocation ms, peak RSS MiB, answer kind) of one fresh process."""
    runtime = FakeRuntimeApi(event)
    env = {**os.environ, **CREDENTIALS, **FUNCTION_ENV, "AWS_LAMBDA_RUNTIME_API": runtime.address,
           "AWS_LAMBDA_FUNCTION_NAME": "bench", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
           "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
           "AWS_LAMBDA_LOG_GROUP_NAME": "bench"}
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not runtime.done.wait(60):
            raise RuntimeError(f"{command} gave no answer in 60 s")
        rss = peak_rss_kib(process.pid) / 1024
    finally:
        process.kill()
        process.wait()
        runtime.close()
    return ((runtime.first_next - started) * 1000, (runtime.answered - runtime.event_sent) * 1000, rss,
            runtime.answer[0])


def spread(values):
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}"


def cold_starts(binaries, runs):
    rows = []
    samples = {(f, lang): [] for f in FUNCTIONS for lang in ("rust", "python")}
    event = events()
    for _ in range(runs):
        for function in FUNCTIONS:  # interleaved: Rust, Python, next function, ...
            samples[(function, "rust")].append(cold_start([str(binaries / function / "bootstrap")], event[function]))
            samples[(function, "python")].append(
                cold_start([sys.executable, str(REPO / "bench/python_twin.py"), function], event[function]))
    for function in FUNCTIONS:
        rust, python = samples[(function, "rust")], samples[(function, "python")]
        for lang, runs_ in (("Rust", rust), ("Python + boto3", python)):
            rows.append(f"| {function} | {lang} | {spread([r[0] for r in runs_])} | {spread([r[1] for r in runs_])} "
                        f"| {spread([r[2] for r in runs_])} | {runs_[0][3]} |")
        ratio = statistics.median(r[0] for r in python) / max(statistics.median(r[0] for r in rust), 1e-6)
        rss_ratio = statistics.median(r[2] for r in python) / max(statistics.median(r[2] for r in rust), 1e-6)
        rows.append(f"| {function} | Python / Rust | init x{ratio:.0f} | | peak RSS x{rss_ratio:.1f} | |")
    return rows


def zipped_sizes(binaries):
    """Every function's package (the Makefile builds them all), fleet-waves' too."""
    rows = []
    for bootstrap in sorted(binaries.glob("*/bootstrap")):
        function = bootstrap.parent.name
        rows.append(f"| {function} | {bootstrap.stat().st_size / 1e6:.2f} MB | {zipped_size(bootstrap) / 1e6:.2f} MB |")
    return rows


def baking(sandbox, interval):
    """The sandbox's manual plan, three checks `interval` seconds apart per step."""
    plan = scenarios.manual_plan(sandbox)
    plan["bake"] = {"seconds": 3 * interval, "checkIntervalSeconds": interval}
    return plan


def rollback_latencies(intervals):
    """Alarm -> every target read back at the baseline, at each check interval: through the
    alarm's state change event (the AlarmStateChange rule delivers it), and by the polling check
    alone (the rule disabled: how every rollback went before the alarm watch). The alarm fires
    at the first step, once its alarm watch is registered."""
    rows = []
    quiet = lambda line: None  # noqa: E731
    with Sandbox(log=quiet) as sandbox:
        scenarios.create_green(sandbox)
        events = sandbox.client("events")
        for interval in intervals:
            row = [f"{interval} s"]
            for delivered in (True, False):
                (events.enable_rule if delivered else events.disable_rule)(Name=sandbox.alarm_events.rule)
                arn = scenarios.start_manual(sandbox, baking(sandbox, interval),
                                             f"rollback-{interval}s-{'event' if delivered else 'polling'}")
                alarmed = {}

                def on_event(name, state):
                    if name == "SetWeights" and not alarmed:
                        scenarios.wait_for_alarm_watch(sandbox, arn, 1)
                        sandbox.alarm_events.set_state("web-green-5xx", "ALARM", "bench")
                        alarmed["at"] = time.time()

                report = scenarios.watch(sandbox, arn, on_event=on_event, out=quiet, timeout=600)
                history = sandbox.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
                restored = [e["timestamp"].timestamp() for e in history
                            if e.get("stateExitedEventDetails", {}).get("name") == "Restore"]
                sandbox.alarm_events.set_state("web-green-5xx", "OK", "bench")
                if report.status != "FAILED" or not restored:
                    row.append(f"did not roll back ({report.status})")
                else:
                    row.append(f"{restored[-1] - alarmed['at']:.2f} s")
            rows.append("| " + " | ".join(row) + " |")
    return rows


def per_rollout():
    """Counts of one promoted rollout of the sandbox's profile (3 steps, 3 checks each)."""
    quiet = lambda line: None  # noqa: E731
    with Sandbox(log=quiet) as sandbox:
        scenarios.create_green(sandbox)
        first = len(sandbox.front.requests)
        arn = scenarios.start_manual(sandbox, baking(sandbox, 2), "counted")
        report = scenarios.watch(sandbox, arn, out=quiet, timeout=600)
        # The functions' calls, not the operator CLI's live view (its SDK says `app/cluster-canary-cli`).
        calls = [(service, action) for agent, service, action in sandbox.front.requests[first:]
                 if "aws-sdk-rust" in agent and "app/cluster-canary-cli" not in agent]
        history = sandbox.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
    transitions = sum(1 for e in history if e["type"].endswith("StateEntered"))
    # Lambda tasks only: the lifecycle events are `events:putEvents` tasks.
    def is_lambda_task(event):
        return event["type"] == "LambdaFunctionScheduled" or (
            event.get("taskScheduledEventDetails", {}).get("resourceType") == "lambda")

    invocations = sum(1 for e in history if is_lambda_task(e))
    # Each Lambda task's duration, scheduled to done, as the engine saw it (debug builds behind
    # an emulator: more than in Lambda).
    durations, scheduled = [], None
    for e in history:
        if is_lambda_task(e):
            scheduled = e["timestamp"]
        elif e["type"] in ("TaskSucceeded", "TaskFailed", "LambdaFunctionSucceeded") and scheduled:
            durations.append((e["timestamp"] - scheduled).total_seconds())
            scheduled = None
    return report, transitions, invocations, Counter(calls), durations


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binaries", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--intervals", type=int, nargs="+", default=[10, 30, 60])
    parser.add_argument("--out", type=Path, default=REPO / "docs/benchmarks.md")
    parser.add_argument("--fleet-cells", type=int, default=50,
                        help="the fleet benchmark's size (bench/fleet.py); 0 leaves it out")
    args = parser.parse_args()

    print("cold starts...", file=sys.stderr)
    cold_rows = cold_starts(args.binaries, args.runs)
    sizes = zipped_sizes(args.binaries)
    print("rollback latency...", file=sys.stderr)
    latencies = rollback_latencies(args.intervals)
    print("one rollout, counted...", file=sys.stderr)
    report, transitions, invocations, calls, durations = per_rollout()

    # The sandbox profile: 3 steps x 3 checks, 2 targets. The state machine's shape gives
    # transitions per check and per step (tests/tests/state_machine_definition.rs).
    steps, checks_per_step, targets = 3, 3, 2
    # BakeWait, Evaluate, CheckVerdict?; StepSetup, ApprovalNeeded?, SetWeights, NotifyShifted,
    # AfterStepHooks?, Bake, StartBake, BakePassed, WatchAlarms, NextStep, MoreSteps? (no
    # approvals, no hooks). Lambda: Evaluate per check; SetWeights and WatchAlarms per step.
    per_check, per_step, invocations_per_step = 3, 11, 2
    fixed = transitions - steps * per_step - steps * checks_per_step * per_check
    weight_calls = sum(n for (service, action), n in calls.items()
                       if action in ("DescribeListeners", "DescribeRules", "ModifyListener", "ModifyRule",
                                     "ListResourceRecordSets", "ChangeResourceRecordSets", "GetChange"))
    # A 4-step, 20-minute rollout checked every 30 s: 10 checks per step.
    big_steps, big_checks = 4, 4 * (20 * 60 // 4 // 30)
    big_transitions = fixed + big_steps * per_step + big_checks * per_check
    big_invocations = (invocations - invocations_per_step * steps - steps * checks_per_step
                       + invocations_per_step * big_steps + big_checks)
    # Billed duration: the sandbox's median task duration (an overestimate), at least 1 ms.
    duration_s = max(statistics.median(durations) if durations else 0.0, 0.001)
    cost_sfn = big_transitions * PRICE_TRANSITION
    cost_lambda = big_invocations * (PRICE_REQUEST + 0.125 * duration_s * PRICE_GB_SECOND)

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    out = [
        f"Measured {datetime.date.today().isoformat()} by `scripts/bench.sh` on {platform.system()} "
        f"{platform.release()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}. "
        "Figures are for orientation (this machine, loopback, an emulator), not targets.",
        "",
        f"## Cold start ({args.runs} interleaved runs; min / median / max)",
        "",
        "Spawn to the first `GET /runtime/invocation/next` (init: SDK clients built, config read), "
        "then the first invocation (event sent to answer received), against a fake Runtime API "
        "(`bench/runtime_api.py`). The Python twin (`bench/python_twin.py`) creates the same boto3 "
        "clients and answers the same event. The events need no AWS call.",
        "",
        "| function | runtime | init (ms) | first invocation (ms) | peak RSS (MiB) | answer |",
        "| --- | --- | --- | --- | --- | --- |",
        *cold_rows,
        "",
        "## Package size",
        "",
        "| function | `bootstrap` | zipped |",
        "| --- | --- | --- |",
        *sizes,
        "",
        "## Rollback latency (sandbox)",
        "",
        "From an alarm set to ALARM during a bake to the `Restore` state done (every target read "
        "back at the baseline). With its state change event (the template's AlarmStateChange rule) "
        "the bake's alarm watch fails the wait at once: one delivery, one Step Functions "
        "transition path, the restore. Without it (the rule disabled, as every rollback went "
        "before the watch) it is the rest of the check interval plus the restore.",
        "",
        "| check interval | alarm -> baseline, event | alarm -> baseline, polling only |",
        "| --- | --- | --- |",
        *latencies,
        "",
        "## One rollout, counted (sandbox)",
        "",
        f"The sandbox profile (3 steps, 3 checks each, {targets} targets), promoted "
        f"({report.status}): {transitions} state transitions, {invocations} Lambda invocations, "
        f"{sum(calls.values())} AWS API calls by the functions, of which {weight_calls} read or write "
        f"weights: {weight_calls / (targets * steps):.1f} per target per step (Prepare's reads included). "
        f"Per check: {per_check} state transitions and 1 Lambda invocation (as before the alarm watch); "
        f"per step: {per_step} transitions and {invocations_per_step} invocations (the watch added 3 and 1).",
        "",
        "| service | action | calls |",
        "| --- | --- | --- |",
        *[f"| {service} | {action} | {n} |" for (service, action), n in sorted(calls.items())],
        "",
        "## Cost of a rollout at list prices",
        "",
        f"A 4-step, 20-minute rollout checked every 30 s ({big_checks} checks): {big_transitions} state "
        f"transitions x $0.025 / 1,000 = ${cost_sfn:.4f}; {big_invocations} Lambda invocations at 128 MB "
        f"(${PRICE_REQUEST * 1e6:.2f} per million requests, ${PRICE_GB_SECOND} per GB-s, "
        f"{duration_s * 1000:.0f} ms each, the sandbox's median) = ${cost_lambda:.6f}. In all about ${cost_sfn + cost_lambda:.4f} per rollout; "
        "CloudWatch `GetMetricData`/`DescribeAlarms` calls are extra when the plan uses them, and so are the alarm watch's DynamoDB requests (a batch write per step, two queries per alarm event: fractions of a cent a month).",
        "",
        *ALARM_WATCH_PER_EVENT.splitlines(),
        "",
    ]
    write_block(BLOCK, out, args.out, first=True)
    if args.fleet_cells:
        print(f"a fleet of {args.fleet_cells} cells...", file=sys.stderr)
        write_block(fleet.BLOCK, fleet.section(fleet.measure(args.fleet_cells)), args.out)
    print(f"wrote {args.out}", file=sys.stderr)


# Its block of docs/benchmarks.md (bench/report.py): the sections measured elsewhere stay.
BLOCK = "scripts/bench.sh"


# Arithmetic, not a measurement: what one alarm event reads (docs/architecture.md, Instant rollback).
ALARM_WATCH_PER_EVENT = """## The alarm watch, per event

Every CloudWatch alarm that goes to ALARM in the account invokes evaluate-alarms once. It reads
two keys of AlarmWatchTable with a consistent `Query` each: the alarm's name (the watches that
name it) and `prefixes` (the watches of rollouts that watch by prefix). A watch item is about
1.5 KB (a task token of up to 1 KB, the plan's alarm names and prefixes); a consistent read
costs one read unit per 4 KB a query returns, at least one per query. At 100 running rollouts:

| running rollouts' plans | read units per alarm event | before (one Scan of the table) |
| --- | --- | --- |
| alarm names only | 2 (1 per query; an alarm they do not name reads no watch) | 38 |
| alarm prefixes, all 100 | 1 + 38 (the prefix watches, read whole) | 38 |
| 10 with prefixes, 90 with names | 1 + 4 | 38 |

So 1,000 state changes of alarms no rollout names cost 2,000 read units with name-only plans
(38,000 before): $0.0005 at $0.25 per million. Prefix watches remain one bounded read (one item
per running rollout that watches by prefix); a plan that names its alarms costs nothing to the
others. Registration: one `BatchWriteItem` per 25 lookup keys (the plan's names, plus one for
its prefixes) per step, replacing the `PutItem`."""


if __name__ == "__main__":
    main()
