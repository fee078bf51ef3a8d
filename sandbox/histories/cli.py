"""`python -m sandbox.histories`: runs seeds, judges each, and sums up what happened."""

import argparse
import signal
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed

from .stories import generate
from .play import run
from .promises import ROLLBACK_BOUND_SECONDS, alarm_to_baseline, happened, rollback_bound, violations


def features_of(history):
    """What a history's plan and world have beyond the first generator's, for the summary."""
    if history.fleet:
        fleet = history.fleet
        return ([f"fleet onHalt {fleet.on_halt}", f"fleet budget {fleet.budget}"]
                + (["fleet rollbackPromotedOnHalt"] if fleet.rollback_promoted else [])
                + (["fleet soak"] if fleet.soak else []) + (["fleet approval"] if fleet.approval else [])
                + (["fleet in two regions"] if fleet.two_regions else []))
    return ([f"failureLimit {history.failure_limit}"] if history.failure_limit != 1 else []) + \
        ([f"{history.provider} check"] if history.provider else []) + \
        [f"hook {point}" for point in history.hooks or {}] + \
        (["started by the CreateCluster event"] if history.by_event else []) + \
        ([f"target health gate ({history.targets})"] if history.targets else []) + \
        (["metric threshold"] if history.metric else []) + (["ALB judge"] if history.alb_judge else []) + \
        (["retire"] if history.retire else []) + (["shift-weights Timeout 10 s"] if history.short_timeout else []) + \
        (["execution timeout"] if history.execution_timeout else []) + (["freezes"] if history.freeze else []) + \
        ([f"gradual rollback ({history.gradual})"] if history.gradual else []) + \
        (["comparison"] if history.compare else []) + \
        ([f"readiness gate ({history.readiness})"] if history.readiness else []) + \
        ([f"AWS Health ({history.health})"] if history.health else []) + \
        ([f"error budget ({history.budget} at the start)"] if history.budget else []) + \
        (["error budget share and burn"] if history.budget_judged else [])


def judged(seed, verbose=False):
    """One history run and judged: (its line, its violations, the Run's summary)."""
    history = generate(seed)
    started = time.monotonic()
    lines = []
    record = run(history, out=(print if verbose else lines.append))
    broken = violations(history, record)
    if history.fleet:
        end = f"{record.end['status']} {record.end.get('error') or ''}".strip()
        line = (f"{history} -> fleet {end}, cells {record.weights}; happened: {', '.join(happened(record)) or 'nothing'} "
                f"({time.monotonic() - started:.0f} s)")
        return line, broken, {"happened": [d.split("[")[0] for d in record.done], "end": f"fleet {end}",
                              "kind": "fleet", "features": features_of(history), "approval": None,
                              "restore_after": False,
                              "alarm_to_baseline": None}
    report = record.report
    line = (f"{history} -> {report.status} {report.error or ''} {report.weights}; happened: "
            f"{', '.join(happened(record)) or 'nothing'} ({time.monotonic() - started:.0f} s)")
    features = features_of(history)
    summary = {"happened": [h.action for h, _ in record.done], "end": f"{report.status} {report.error or ''}".strip(),
               "kind": history.kind, "features": features, "approval": history.approval[0] if history.approval else None,
               "restore_after": history.restore_after,
               "alarm_to_baseline": (alarm_to_baseline(record), rollback_bound(history, record), history.seed)}
    return line, broken, summary


def judged_or_raised(seed, verbose=False):
    """`judged`, with a run that raised reported as its violation (a parallel run goes on)."""
    try:
        return judged(seed, verbose)
    except Exception as e:  # the harness's or the product's: said, and counted
        return f"seed {seed}: {generate(seed)} -> the run raised", [repr(e)], None


def main():
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--seeds", type=int, default=10)
    options.add_argument("--first", type=int, default=1)
    options.add_argument("--jobs", type=int, default=1, help="histories run at once, one sandbox each")
    options.add_argument("--verbose", action="store_true")
    args = options.parse_args()
    seeds = range(args.first, args.first + args.seeds)
    totals = {key: Counter() for key in ("happened", "end", "kind", "features", "approval", "restore_after")}
    failed, rollbacks, ended = [], [], []

    def stopped(signum, frame):
        # Once: `timeout` signals the whole process group and this process the workers again,
        # and a second interruption would cut a sandbox's stop short, leaving its servers behind.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    # A run stopped at a deadline (`timeout` sends SIGTERM) still says what ended before it.
    signal.signal(signal.SIGTERM, stopped)
    pool = ProcessPoolExecutor(max_workers=args.jobs)
    try:
        # Each history's result as it ends, not in seed order behind a slower one.
        running = {pool.submit(judged_or_raised, seed, args.verbose): seed for seed in seeds}
        for future in as_completed(running):
            seed = running[future]
            line, broken, summary = future.result()
            ended.append(seed)
            print(line, flush=True)
            for violation in broken:
                print(f"  VIOLATED: {violation}", flush=True)
            if broken:
                failed.append(seed)
            summary = dict(summary or {})
            took = summary.pop("alarm_to_baseline", None)
            if took and took[0] is not None:
                rollbacks.append(took)
            for key, value in summary.items():
                totals[key].update(value if isinstance(value, list) else [value])
    except KeyboardInterrupt:
        print(f"stopped: {len(ended)} of {len(seeds)} histories ended; the totals are theirs", flush=True)
        # The workers were forked with the handler above: each running history stops its sandbox.
        for worker in list(pool._processes.values()):
            worker.terminate()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    for key, counts in totals.items():
        print(f"{key}: {dict(counts.most_common())}")
    if rollbacks:
        rollbacks.sort()
        longest, its_bound, seed = rollbacks[-1]
        print(f"failing signals -> baseline: {len(rollbacks)} rollbacks, median {rollbacks[len(rollbacks) // 2][0]:.1f} s, "
              f"longest {longest:.1f} s (seed {seed}: its bound {its_bound} s; {ROLLBACK_BOUND_SECONDS} s at "
              f"failureLimit 1 without an outage)")
    print(f"{len(ended)} histories; violated: {len(failed)} {sorted(failed)}")
    if len(ended) < len(seeds):
        sys.exit(2)
    sys.exit(1 if failed else 0)
