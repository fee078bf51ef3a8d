"""The promises a history checks after its run.

After the run (and the safety net's answer, when the rule matched the end), `violations(...)`
checks what moto, the Kubernetes test server and the event queue hold:

  - every target ends at the baseline, or promoted, or (only when the rollout stopped for a
    foreign change, or the write came after its last look) exactly as the foreign writer left
    it; a stop for a foreign change sends Rollout Failed and emits `ForeignChanges` (a page);
    traffic left elsewhere (a safety net that failed every try, writes refused by IAM) has
    paged a person (the dead-letter queue, `RestoreFailures`, `Rollback Failing`);
  - a rollout that promoted has every target promoted; one that did not has none (a failed
    retirement after the promotion excepted); the stable target group is detached only by a
    promoted rollout that retires, and always by one;
  - a promoted rollout had, at every step, a check that passed (as it says) and one the world let
    pass (the alarm OK, the provider under its limit with data and reachable, the metric under its
    threshold, the canary's 5xx rate under the ALB judge's limit all through its window, the
    reads allowed; from when each check began to when it ended), and never `failureLimit`
    checks in a row that the world made fail; it went past no approval rejected or never given,
    and past no hook that did not pass (each hook ran where it should, and an `afterEachStep`
    hook saw its step's weights); a failing `beforeTraffic` hook or target health gate moves
    nothing, and no weight is set before the canary's target is there;
  - a rollback for failing signals reaches the baseline within ROLLBACK_BOUND_SECONDS of their
    failing (one check interval more per further failure `failureLimit` asks), one for an
    unreachable provider within UNJUDGED_BOUND_SECONDS of the outage;
  - a safety net whose every try failed is in the dead-letter queue, and SafetyNetFailedAlarm
    watches that queue (moto does not evaluate alarms: the alarm's definition is checked);
  - a second rollout of the same targets started while the first runs is refused (at Prepare,
    or its plan before it) and moves nothing; a rollout of another target is not refused, and its own traffic ends
    promoted when it succeeded and at its own baseline otherwise, whatever the first did (no
    write of one lands on the other's target, one's rollback never moves the other's); an
    operator's restore while it runs is refused; after the end it puts the
    baseline back, or (a promoted rollout) is refused and changes nothing;
  - no step is set, nor the first, by a decision (the bake's last check, the gate before the
    first step) made while the stack's freeze switch was on or an AWS Health issue of the
    Region was open (a step a person approved excepted); a rollout held past the plan's bound
    ends, at the baseline; with `rollBack`, an open issue fails every check (and its event the
    bake at once: the rollback bound holds from it);
  - no weight is set after a readiness look that found EKS's insight in ERROR or CoreDNS not
    ACTIVE; CoreDNS DEGRADED fails every check while it lasts (the rollback bound holds from it);
  - a comparison of a healthy canary never finds a regression (the world is symmetric: any
    High or Low is a false rollback, flagged); a regression beyond the
    band in effect COMPARE_SHOWN_SECONDS before the last check never promotes; a canary
    without data never passes (a promoted rollout had a check the world let pass at every
    step);
  - a new cluster burning its error budget with traffic BUDGET_BURN_SHOWN_SECONDS before the
    last check never promotes (its share spent, or its fast burn); a healthy one never fails on
    its share or its burn;
  - every state stays under the written budget, every event is valid against its schema, and
    no token or key of the sandbox appears in a log, an event or an execution's history.
"""

import json
from collections import Counter
from datetime import datetime, timezone

from .. import fleet_histories
from ..harness import CONTRACT, DATADOG_KEYS, FUNCTIONS_TOKEN
from .stories import (BUDGET_BURN_SHOWN_SECONDS, CHECK_INTERVAL, COMPARE_SHOWN_SECONDS, DIRECT, MAX_UNJUDGED,
                      PROVIDER_TIMEOUT, STEP_BACK_SECONDS, WITH_LISTENER)


FOREIGN_ENDS = set(CONTRACT["states"]["foreignEnds"])


# The states that read the weights (and so must notice a foreign write before them).
LOOKS = {"SetWeights", "Evaluate", "VerifyPromotion", "Restore", "RestoreRetried", "RestoreUnchanged",
         "LookAfterRestore"}


STATE_BUDGET = CONTRACT["limits"]["stateBudgetBytes"]


SECRETS = ("sandbox-admin", FUNCTIONS_TOKEN, *DATADOG_KEYS.values())


# Alarm -> every target back at the baseline. The watch fails a bake the moment the alarm's
# event arrives, and a polling check within CHECK_INTERVAL; a step in flight (its own retries
# of injected throttles: up to ~60 s) finishes first, then the restore. The written bound
# (docs/operations.md, the safety net and what pages a person).
ROLLBACK_BOUND_SECONDS = CHECK_INTERVAL + 90


# An unreachable provider: the step goes `maxUnjudgedSeconds` without a verdict, one more check
# and its request timeout, then the same restore (docs/functions.md).
UNJUDGED_BOUND_SECONDS = MAX_UNJUDGED + CHECK_INTERVAL + PROVIDER_TIMEOUT + 90


# Every other way the state machine rolls back itself (a hook, a task's error, an approval
# rejected or timed out, a freeze held past its bound): from the decision (its Describe*Failure,
# or DescribeFrozenTooLong, entered) to the restore's read-back, the restore's writes and their
# retries (docs/operations.md, how fast a rollback is).
DECIDED_TO_BASELINE_SECONDS = 90


DECISIONS = ("DescribeCheckFailure", "DescribeFrozenTooLong", "DescribeTaskFailure", "DescribeApprovalFailure")


# A stop or a timeout: the safety net's delivery (seconds), its restore as the state machine's,
# then its settle period and look before it answers (the plan's rollback.settleSeconds).
SAFETY_NET_DELIVERY_SECONDS = 10


def safety_net_lost(record):
    """Whether the safety net's delivery for the execution failed every try."""
    return bool(record.lost_deliveries) and record.lost_deliveries[1] == 0


def prepare_answered(events):
    """When the `PrepareTraffic` task of a history had its answer (it listed the running
    executions before that); the end of time if it never did."""
    entered_at = next((i for i, e in enumerate(events) if entered(e, "PrepareTraffic")), None)
    if entered_at is not None:
        for event in events[entered_at:]:
            if event["type"] in ("TaskSucceeded", "TaskFailed", "TaskTimedOut"):
                return event["timestamp"]
    return datetime.max.replace(tzinfo=timezone.utc)


def fits(weights, expected):
    """Whether `weights` are `expected`, where a None side of an expected pair is anything."""
    return weights.keys() == expected.keys() and all(
        want is None or got == want for k in weights for got, want in zip(weights[k], expected[k]))


def entered(event, *names):
    return event.get("stateEnteredEventDetails", {}).get("name") in names


def exited_output(event, name):
    details = event.get("stateExitedEventDetails")
    if details and details["name"] == name:
        return json.loads(details.get("output") or "{}")
    return None


def violations(history, record):
    """The promises the run broke, each said in a line."""
    if history.fleet:
        return fleet_histories.violations(history.fleet, record, STATE_BUDGET, SECRETS,
                                          SAFETY_NET_DELIVERY_SECONDS, DECIDED_TO_BASELINE_SECONDS)
    report, found = record.report, []
    final = report.weights
    events = record.history_events
    ended_foreign = any(s in FOREIGN_ENDS for s in report.states)
    allowed = [record.baseline, record.promoted]
    # A write after the rollout's last look at the weights is the writer's to answer for.
    looked_after = record.foreign is not None and any(entered(e, *LOOKS) for e in events[record.foreign_at:])
    if record.foreign and (ended_foreign or not looked_after):
        allowed.append({**record.baseline, **record.foreign})
    if record.foreign and not looked_after:
        allowed.append({**record.promoted, **record.foreign})
    # A second rollout refused at Prepare moved nothing; one that went on (the first had ended
    # when it looked) owns the traffic.
    ran_after = record.second is not None and "SetWeights" in record.second.states
    if ran_after:
        # The traffic is its to leave, and nothing of the first (a late safety net, say) may
        # write over it. Its own end is judged by its weights.
        allowed = [{k: v for k, v in record.second.weights.items() if k in record.baseline}]
    # A safety net whose every try failed, or functions refused their writes, may leave traffic
    # where it was: then a person is paged (the dead-letter queue, or the RestoreFailures metric).
    # A disabled SafetyNet rule delivers nothing: the sweep puts back what the rollout left, and
    # pages (SafetyNetSweeps).
    stuck = safety_net_lost(record) or record.denied_at is not None
    paged = (report.execution_arn in record.dead_letters
             or (record.net_disabled and "sweep" in record.dead_letters)  # the sweep failed too
             or any(name == "RestoreFailures" for name, _, _ in report.metrics)
             or any(t == "Rollback Failing" for t, _ in report.events))
    if record.net_disabled and report.safety_net and not any(name == "SafetyNetSweeps" for name, _, _ in report.metrics):
        found.append("the sweep put back a rollout its disabled SafetyNet rule left, and nothing paged (SafetyNetSweeps)")
    if not any(fits(final, a) for a in allowed) and not (stuck and paged):
        found.append(f"traffic ended at {final}: neither the baseline {record.baseline}, promoted, "
                     f"nor as a foreign writer left it ({record.foreign}, ended foreign: {ended_foreign})"
                     + (", and nobody was paged" if stuck else ""))
    if safety_net_lost(record):
        if report.execution_arn not in record.dead_letters:
            found.append("the safety net's delivery failed every try, and its dead-letter queue does not name the execution")
        alarm = record.page_alarm or {}
        watched = {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}.get("QueueName")
        if (watched != record.dead_letter_queue or alarm.get("MetricName") != "ApproximateNumberOfMessagesVisible"
                or alarm.get("Threshold", 2) > 1):
            found.append(f"no alarm pages on a message in the safety net's dead-letter queue: {alarm}")
    if report.status == "SUCCEEDED" and not ran_after and not any(fits(final, a) for a in allowed[1:]):
        found.append(f"promoted, but traffic is at {final}")
    # A retirement that failed after the promotion leaves it promoted (RetireFailed).
    retire_failed = "RetireFailed" in report.states
    if (report.status != "SUCCEEDED" and final == record.promoted and not ran_after and not retire_failed
            and not (stuck and paged)):
        found.append(f"ended {report.status} ({report.error}) with every target promoted")
    if record.stable_attached is False and report.status != "SUCCEEDED" and not retire_failed:
        found.append(f"the stable target group was detached, though the rollout ended {report.status}")
    if history.retire and report.status == "SUCCEEDED" and record.stable_attached and not ran_after:
        found.append("promoted with `retire`, and the stable target group is still attached")
    if history.targets:
        sets = [i for i, e in enumerate(events) if entered(e, "SetWeights")]
        if sets and (record.targets_at is None or record.targets_at > sets[0]):
            found.append("weights were set before the canary target group had a healthy target")
        if report.error == "TargetsNotHealthy" and (sets or final != record.baseline):
            found.append(f"the target health gate failed, and traffic moved ({final})")
    if ended_foreign:
        ends = [d.get("end") for t, d in report.events if t == "Rollout Failed"]
        if not any(end in FOREIGN_ENDS for end in ends):
            found.append(f"stopped for a foreign change without a Rollout Failed event naming it ({ends})")
        if not any(name == "ForeignChanges" for name, _, _ in report.metrics):
            found.append("stopped for a foreign change without the ForeignChanges metric (the page)")
    if report.status == "SUCCEEDED":
        found += promotion_without_evidence(history, record)
        found += promotion_against_the_world(history, record)
    took, bound = alarm_to_baseline(record), rollback_bound(history, record)
    if took is not None and took > bound:
        found.append(f"the rollback reached the baseline {took:.0f} s after the checks' signals failed, past the "
                     f"{bound} s bound")
    took = decided_to_baseline(record)
    bound = DECIDED_TO_BASELINE_SECONDS + (STEP_BACK_SECONDS if history.gradual else 0)
    if took is not None and took > bound and record.denied_at is None:
        found.append(f"the rollback reached the baseline {took:.0f} s after it was decided ({record.report.error}), "
                     f"past the {bound} s bound")
    took = safety_net_to_baseline(record)
    bound = SAFETY_NET_DELIVERY_SECONDS + DECIDED_TO_BASELINE_SECONDS + record.settle_seconds
    if took is not None and took > bound:
        found.append(f"the safety net restored {took:.0f} s after the execution ended {record.report.status}, past "
                     f"the {bound} s bound")
    took = unjudged_to_baseline(record)
    if took is not None and took > UNJUDGED_BOUND_SECONDS:
        found.append(f"the rollback for an unreachable provider reached the baseline {took:.0f} s after the outage "
                     f"began, past the {UNJUDGED_BOUND_SECONDS} s bound")
    if history.hooks:
        found += hook_promises(history, record)
    if history.compare:
        found += comparison_promises(history, record)
    if history.budget_judged:
        found += budget_promises(record)
    found += moved_while_frozen(record)
    if history.readiness:
        found += moved_before_ready(record)
    found += stepped_back_wrongly(history, record)
    if record.second is not None and record.second_overlapped:
        # Refused at Prepare: as ConcurrentRollout, or for a target the first left with no
        # stable weight (TargetMisconfigured, checked first); or before it, its plan refused
        # (a provider's query with no data then: InvalidPlan, seed 5618). Either way before any
        # write.
        if record.second.status != "FAILED":
            found.append(f"a second rollout of the same targets, started while the first ran, was not "
                         f"refused: {record.second.status} {record.second.error}")
        if "SetWeights" in record.second.states:
            found.append("the refused second rollout set weights")
    if record.other is not None:
        end = record.other_end
        if end.get("error") in ("ConcurrentRollout", "TargetMisconfigured"):
            found.append(f"the rollout of another target was refused: {end.get('error')}: {end.get('cause')}")
        own = (0, 100) if end["status"] == "SUCCEEDED" else (100, 0)
        if record.other_weights != own:
            found.append(f"the rollout of another target ended {end['status']} with its listener at "
                         f"{record.other_weights}, not {own}")
    for code, still_running in record.restores_while_running:
        if code == 0 and still_running:
            found.append("`cluster-canary restore` wrote while the execution ran")
    if record.restore_after is not None:
        code, said, after = record.restore_after
        if report.status == "SUCCEEDED" or ran_after:
            if code == 0 or after != final:
                found.append(f"`cluster-canary restore` after a promotion (or a newer rollout) was not refused, "
                             f"or changed the weights ({final} -> {after}): {said}")
        elif "SetWeights" not in report.states:
            # It moved nothing, so it has nothing to put back: what another writer did stays.
            if code != 0 or after != final:
                found.append(f"`cluster-canary restore` of a rollout that never set a step changed {final} to "
                             f"{after}, exit {code}: {said}")
        elif code != 0 or after != record.baseline:
            found.append(f"`cluster-canary restore` after the end left {after}, exit {code}: {said}")
    found += test_traffic_broken(history, record)
    if report.largest_state >= STATE_BUDGET:
        found.append(f"a state of {report.largest_state} bytes at {report.largest_state_at}, over {STATE_BUDGET}")
    found += fleet_histories.schema_breaks(report.events)
    history_text, events_text = json.dumps(events, default=str), json.dumps(report.events, default=str)
    for secret in SECRETS:
        if secret in record.logs:
            found.append(f"a secret ({secret[:4]}…) is in a log")
        if secret in history_text:
            found.append(f"a secret ({secret[:4]}…) is in the execution's history")
        if secret in events_text:
            found.append(f"a secret ({secret[:4]}…) is in an event")
    return found


def rollback_bound(history, record):
    """The written bound from a failing signal to the baseline: `ROLLBACK_BOUND_SECONDS` for the
    first failing check, one check interval more for each further one `failureLimit` asks, and
    an unreachable provider's bound on top when the provider was out meanwhile."""
    outage = any(what == "outage" and value for _, what, value, _ in record.conditions)
    return (ROLLBACK_BOUND_SECONDS + (history.failure_limit - 1) * CHECK_INTERVAL
            + (UNJUDGED_BOUND_SECONDS if outage else 0) + (STEP_BACK_SECONDS if history.gradual else 0))


def failing(state):
    return (state["alarm"] == "ALARM" or state["provider"] == "breach" or state.get("metric") == "breach"
            or state.get("alb") == "breach" or state.get("addon") == "DEGRADED" or state.get("issue") == "open")


def failing_began(record, moment):
    """When the spell of the checks' signals (the alarm, the provider's value, the metric, the
    ALB judge's) failing that caused a rollback decided at `moment` began: the last spell begun
    by then, if it still went on within a check interval of it (a check reads the signals up to
    an interval before its verdict); epoch seconds, or None (the rollback had another cause: a
    comparison's regression, say)."""
    state, spells = {"alarm": "OK", "provider": "fine", "metric": "fine", "alb": "fine", "addon": None, "issue": None}, []
    for _, what, value, when in record.conditions:
        if what in state:
            before = failing(state)
            state[what] = value
            if failing(state) and not before:
                spells.append([when, None])
            elif before and not failing(state):
                spells[-1][1] = when
    began = [(start, end) for start, end in spells if start <= moment]
    if not began:
        return None
    start, end = began[-1]
    return start if end is None or end >= moment - CHECK_INTERVAL else None


def restored_at(record):
    restored = [e["timestamp"].timestamp() for e in record.history_events if restored_by(e)]
    return restored[0] if restored else None


HOLDS = {"freeze": "the freeze switch was on", "health": "an AWS Health issue of the Region was open",
         "budget": "the SLO's error budget was spent"}


def moved_while_frozen(record):
    """Steps set by a decision made while a freeze held: the bake's last check (the last
    `Evaluate` before the step's `SetWeights`) or the gate before the first step, entered after
    the switch was turned on (or an AWS Health issue recorded, or the plan's SLO's budget spent)
    and before it was turned off (or the issue's close put, or the budget back). A step a person approved is theirs (docs/operations.md, Change
    freezes)."""
    turns = {what: sorted((at, state is not None) for _, kind, state, at in record.conditions if kind == what)
             for what in HOLDS}
    if not any(turns.values()):
        return []

    def frozen_at(moment):
        """What held at `moment`, said."""
        held = []
        for what, its_turns in turns.items():
            on = False
            for at, turned_on in its_turns:
                if at <= moment:
                    on = turned_on
            if on:
                held.append(HOLDS[what])
        return " and ".join(held)

    found, decision = [], None
    for event in record.history_events:
        entered = event.get("stateEnteredEventDetails", {}).get("name")
        if entered in ("FreezeGate", "Evaluate"):
            decision = (entered, event["timestamp"].timestamp())
        elif entered == "AwaitApproval":
            decision = None
        elif event.get("stateExitedEventDetails", {}).get("name") == "SetWeights" and decision:
            if held := frozen_at(decision[1]):
                found.append(f"a step was set by {decision[0]} at {decision[1]:.1f}, while {held}")
            decision = None
    return found


def not_ready(state):
    return state["insight"] == "ERROR" or state["addon"] == "DEGRADED"


def moved_before_ready(record):
    """Weights set after the readiness look that let them (the last `ClusterReadiness` before
    the first `SetWeights`) when the world was not ready all through it (EKS's insight in ERROR,
    or CoreDNS DEGRADED); weights moved by a rollout whose gate failed (found away from the
    baseline, or from what a drawn foreign write left there: that move is not the product's)."""
    events, report = record.history_events, record.report
    sets = [i for i, e in enumerate(events) if entered(e, "SetWeights")]
    left = {**record.baseline, **{k: w for k, w in (record.foreign or {}).items() if k in record.baseline}}
    if report.error == "ClusterNotHealthy" and (sets or not fits(report.weights, left)):
        return [f"the cluster readiness gate failed, and traffic moved ({report.weights})"]
    if not sets:
        return []
    looks = [i for i, e in enumerate(events[:sets[0]]) if entered(e, "ClusterReadiness")]
    if not looks:
        return ["weights were set, and the cluster readiness gate never looked"]
    start = looks[-1]
    end = next((j for j in range(start + 1, sets[0]) if exited_output(events[j], "ClusterReadiness") is not None),
               sets[0])
    if all(not_ready(condition_at(record, k)) for k in range(start, end + 1)):
        return [f"weights were set after a readiness look that found the cluster not ready "
                f"({condition_at(record, start)})"]
    return []


def stepped_back_wrongly(history, record):
    """A gradual rollback's promises (docs/operations.md): it steps back only with the plan's
    `rollback.gradual`, after a bake's failed check no critical alarm caused, only down, and
    only while the old cluster is healthy; what follows a step back it did not take is the
    restore (or, when it found someone else's weights, the restore that leaves them)."""
    found, caught, share, looked = [], None, None, None
    for event in record.history_events:
        exited = event.get("stateExitedEventDetails", {})
        entered = event.get("stateEnteredEventDetails", {}).get("name")
        if looked is not None and entered and entered != "SteppedBack?":
            # A foreign change found by the step back is theirs: left as found (RestoreUnchanged).
            foreign = looked.endswith("WeightsChangedExternally")
            wanted = "MovedUnderStepBackOutcome" if foreign else "Restore"
            if entered != wanted:
                found.append(f"after a step back not taken ({looked}), {entered} instead of "
                             + ("leaving the foreign change as found" if foreign else "the restore"))
            looked = None
        if exited.get("name") == "DescribeCheckFailure":
            state = json.loads(exited.get("output") or "{}")
            caught, share = state["failure"].get("Caught"), state["cursor"]["step"]["weight"]
        if entered == "StepBack":
            if not history.gradual:
                found.append("stepped back without rollback.gradual")
            if caught != "CheckFailed":
                found.append(f"stepped back after {caught}, which goes to the baseline at once")
        if exited.get("name") == "StepBack":
            state = json.loads(exited.get("output") or "{}")
            last = state["lastSet"]
            if "stepBackFailure" in state:
                # Its error caught: the restore follows (AWS refusing), or, after a foreign change
                # under it, the compare-and-set restore that leaves it as found.
                looked = f"StepBack failed: {state['stepBackFailure'].get('Error')}"
            elif last["steppedBack"]:
                if share is None or last["canaryWeight"] >= share:
                    found.append(f"a step back to {last['canaryWeight']} % from {share} %")
                if history.gradual == "unhealthy" and history.kind in WITH_LISTENER:
                    found.append("stepped back while the old cluster's target group had no healthy target")
                share = last["canaryWeight"]
            else:
                looked = last["reason"]
    return found


def alarm_to_baseline(record):
    """Seconds from the failing signals that caused the rollback to the end of that rollback (its
    Restore read the baseline back): timed from its own cause, the failing spell of the world's
    signals that had begun when the rollback was decided (`DescribeCheckFailure` entered), not
    from a later one (seed 9024 measured -1.9 s from a spell that began after the restore).
    None when the run did not roll back for a failing check, or no failing spell came first."""
    restored = restored_at(record)
    decided = next((e["timestamp"].timestamp() for e in record.history_events
                    if entered(e, "DescribeCheckFailure")), None)
    if record.report.error != "CheckFailed" or restored is None or decided is None:
        return None
    since = failing_began(record, decided)
    return None if since is None else restored - since


def decided_to_baseline(record):
    """Seconds from the state machine deciding to roll back (whatever the cause) to its
    restore's read-back; None when it did not roll back itself."""
    decided = next((e["timestamp"].timestamp() for e in record.history_events if entered(e, *DECISIONS)), None)
    restored = restored_at(record)
    return None if decided is None or restored is None else restored - decided


def safety_net_to_baseline(record):
    """Seconds from a stopped or timed-out execution's end to its safety net's answer that it
    restored (its restore, settle period and look again); None for another end, or a delivery
    the run held, lost or disabled, or writes it refused."""
    if (record.report.status not in ("ABORTED", "TIMED_OUT") or record.ended_at is None or record.held
            or record.net_disabled or safety_net_lost(record) or record.denied_at is not None
            or not (record.report.safety_net or {}).get("restored") or record.safety_net_at is None):
        return None
    return record.safety_net_at - record.ended_at


def unjudged_to_baseline(record):
    """Seconds from an outage of the provider (the one under way when the rollback's restore
    ended: one drawn after it did not cause it, seed 9171) to the end of the rollback it caused
    (`MetricsProviderUnavailable`); None otherwise."""
    restored = restored_at(record)
    if record.report.error != "MetricsProviderUnavailable" or restored is None:
        return None
    began = None
    for _, what, value, when in record.conditions:
        if what != "outage" or when > restored:
            continue
        if value and began is None:
            began = when
        elif not value:
            began = None
    return None if began is None else restored - began


def condition_at(record, index):
    """What the checks' world was at the execution's history event `index`."""
    state = {"alarm": "OK", "provider": "fine", "metric": "fine", "alb": "fine", "outage": None, "reads": None,
             "compare": "fine", "insight": None, "addon": None, "health": None, "issue": None, "burn": None}
    for at, what, value, _ in record.conditions:
        if at <= index:
            state[what] = value
    return state


def check_outcome(history, state):
    """What a check must conclude in `state`: fail, pass, inconclusive, or None when the world
    does not decide it (the provider out: unjudged, whatever the alarm says)."""
    if history.provider and state["outage"] or state["alb"] == "moving":
        return None
    if state["reads"]:
        return "inconclusive"  # whatever the signals say, a check that cannot read them cannot pass
    if failing(state):
        return "fail"
    if history.provider and state["provider"] == "nodata":
        return "inconclusive"
    if history.compare and state["compare"] == "nodata":
        return "inconclusive"  # a metric without data never passes
    if history.compare and state["compare"] in ("regressed", "draining"):
        return None  # the evidence shows it within some periods, the window drains in some
    if state["burn"]:
        return None  # the share is spent within seconds of the new cluster's traffic, the burn in minutes
    return "pass"


def checks_by_step(history, record):
    """The checks of each step, each as what the world said from its start to its end (None
    where it changed meanwhile or did not decide)."""
    events, steps, step = record.history_events, {}, 0
    for i, event in enumerate(events):
        if exited_output(event, "SetWeights") is not None:
            step += 1
        if entered(event, "Evaluate", "WatchEvaluate"):
            name = event["stateEnteredEventDetails"]["name"]
            end = next((j for j in range(i + 1, len(events)) if exited_output(events[j], name) is not None), len(events))
            at_start, at_end = (check_outcome(history, condition_at(record, k)) for k in (i, end))
            steps.setdefault(step, []).append(at_start if at_start == at_end else None)
    return steps


def promotion_against_the_world(history, record):
    """A promoted rollout had, at every step, a check the world let pass, and never reached
    `failureLimit` checks in a row that the world made fail."""
    found, steps = [], checks_by_step(history, record)
    for step in range(1, len(history.steps) + 1):
        outcomes = steps.get(step, [])
        if not any(o in ("pass", None) for o in outcomes):
            found.append(f"promoted, but no check of step {step} could pass ({outcomes})")
        in_a_row = 0
        for outcome in outcomes:
            in_a_row = in_a_row + 1 if outcome == "fail" else 0 if outcome in ("pass", None) else in_a_row
            if in_a_row >= history.failure_limit:
                found.append(f"promoted past {in_a_row} failing check(s) in a row at step {step} "
                             f"(failureLimit {history.failure_limit})")
                break
    return found


def hook_promises(history, record):
    """A rollout promotes only past hooks that passed, each where it should run; a failing
    `beforeTraffic` hook moves nothing; an `afterEachStep` hook sees its step's weights."""
    found, report = [], record.report
    last = {}
    for point, weight, weights, answer in record.hook_calls:
        last[(point, weight)] = answer
        if point == "afterEachStep" and record.foreign is None and history.kind in DIRECT:
            off = [w for w in weights or [] if (w.get("stable"), w.get("canary")) != (100 - weight, weight)]
            if off:
                found.append(f"the afterEachStep hook of the {weight} % step saw weights {off}")
    if report.status == "SUCCEEDED":
        refused = {k: a for k, a in last.items() if a != "pass"}
        if refused:
            found.append(f"promoted although hooks answered {refused}")
        expected = {("beforeTraffic", None)} if "beforeTraffic" in history.hooks else set()
        expected |= {("afterEachStep", w) for w in history.steps} if "afterEachStep" in history.hooks else set()
        expected |= {("afterPromotion", history.steps[-1])} if "afterPromotion" in history.hooks else set()
        if missing := expected - set(last):
            found.append(f"promoted without running the hooks {sorted(missing, key=str)}")
    if last.get(("beforeTraffic", None), "pass") != "pass" and "SetWeights" in report.states:
        found.append("a beforeTraffic hook failed, and weights were set")
    return found


def comparison_promises(history, record):
    """A regression beyond the allowed band, in effect COMPARE_SHOWN_SECONDS without a break
    before the rollout's last check, never promotes; a healthy canary (the sandbox's world is
    symmetric: as often above the stable as below, errors alike) is never found High or Low."""
    found, events = [], record.history_events
    checks = [e["timestamp"].timestamp() for e in events if entered(e, "Evaluate", "WatchEvaluate")]
    shown = sorted({line.split(" (")[0] for e in events for name in ("Evaluate", "WatchEvaluate")
                    for line in ((exited_output(e, name) or {}).get("bake") or {}).get("summary", "").split("; ")
                    if line.startswith("compare ") and (": High" in line or ": Low" in line)})
    changes = [(at, said) for _, what, said, at in record.conditions if what == "compare"]
    if shown and not any(said == "regressed" for _, said in changes):
        found.append(f"a healthy comparison found a regression: {shown}")
    if record.report.status == "SUCCEEDED" and checks:
        # The longest stretch regressed, up to the last check's start.
        longest, since = 0.0, None
        for at, said in changes + [(checks[-1], "end")]:
            at = min(at, checks[-1])
            if since is not None:
                longest = max(longest, at - since)
            since = at if said == "regressed" and since is None else since if said == "regressed" else None
        if longest >= COMPARE_SHOWN_SECONDS:
            found.append(f"promoted with a regression beyond the band in effect {longest:.0f} s before the last check")
    return found


def budget_promises(record):
    """A new cluster burning its budget (`budget-burn`) with traffic BUDGET_BURN_SHOWN_SECONDS
    before the rollout's last check never promotes; a healthy one (none of its requests fail) never
    fails the share nor the burn."""
    found, events = [], record.history_events
    checks = [e["timestamp"].timestamp() for e in events if entered(e, "Evaluate", "WatchEvaluate")]
    # The canary serves from the first weights set (ALB publishes nothing for a target group
    # without traffic): a burn counts from then.
    traffic = next((e["timestamp"].timestamp() for e in events if exited_output(e, "SetWeights") is not None), None)
    burning = next((at for _, what, said, at in record.conditions if what == "burn" and said), None)
    failed = sorted({line for e in events for name in ("Evaluate", "WatchEvaluate")
                     for line in ((exited_output(e, name) or {}).get("bake") or {}).get("summary", "").split("; ")
                     if "spent its share of SLO" in line or "at least 14.4× in both" in line}
                    | {part for part in (record.report.cause or "").split("; ")
                       if "spent its share of SLO" in part or "at least 14.4× in both" in part})
    if failed and burning is None:
        found.append(f"a healthy new cluster failed on the error budget: {failed}")
    if record.report.status == "SUCCEEDED" and checks and burning is not None and traffic is not None:
        shown = checks[-1] - max(burning, traffic)
        if shown >= BUDGET_BURN_SHOWN_SECONDS:
            found.append(f"promoted with the new cluster burning its error budget {shown:.0f} s before the last check")
    return found


def restored_by(event):
    """Whether `event` is a restore's exit with the baseline read back: `Restore`'s, or, when its
    first attempt failed (its output then has no `restored`), `RestoreRetried`'s."""
    return any("restored" in (exited_output(event, name) or {}) for name in ("Restore", "RestoreRetried"))


def promotion_without_evidence(history, record):
    """A promoted execution must have had, at every step, a check that passed (as it says), and
    past an approval only when it was given."""
    found, events = [], record.history_events
    passes, step = Counter(), 0
    for event in events:
        if exited_output(event, "SetWeights") is not None:
            step += 1
        for name in ("Evaluate", "WatchEvaluate"):
            bake = (exited_output(event, name) or {}).get("bake") or {}
            if bake.get("verdict") == "pass":
                passes[step] += 1
    unjudged = [s for s in range(1, len(history.steps) + 1) if not passes[s]]
    if unjudged:
        found.append(f"promoted without a passing check at step(s) {unjudged}")
    if history.approval and record.approval_requested and history.approval[0] != "approve":
        found.append(f"promoted past an approval answered `{history.approval[0]}`")
    return found


def happened(record):
    """What happened in a run, as said in its story, in order (a rollout's or a fleet's)."""
    return list(record.done) if isinstance(record, fleet_histories.FleetRun) else [str(h) for h, _ in record.done]


def test_traffic_broken(history, record):
    """A test-traffic stage's promises: no step is set before the stage passed; a stage whose run
    failed or never came is never promoted; no rule of the rollout is left once it ended and its
    safety net (or the sweep, or the person paged) did its part."""
    if not history.test_traffic:
        return []
    report, found = record.report, []
    states = report.states
    passed = states.index("NotifyTestTrafficPassed") if "NotifyTestTrafficPassed" in states else None
    sets = [i for i, name in enumerate(states) if name == "SetWeights"]
    if sets and (passed is None or sets[0] < passed):
        found.append("a step was set before the test-traffic stage passed")
    if history.test_traffic != "passed" and passed is not None:
        found.append(f"the test-traffic stage passed, its canary's run {history.test_traffic}")
    if record.test_rules_left:
        stuck = safety_net_lost(record) and report.execution_arn in record.dead_letters
        if not stuck:
            found.append(f"the rollout ended {report.status} and left its test rule: {record.test_rules_left}")
    return found
