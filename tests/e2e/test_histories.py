"""Seeded histories in CI (sandbox/histories/): a fixed few, each run checked against the
promises; between them every kind of happening occurs. Longer runs: `python -m
sandbox.histories --seeds N --jobs J` (docs/testing.md has the figures of the last 300).
The checker itself is tested first, on runs made up here: each promise a defect broke (or
could) is flagged, and the fixed outcome is not."""
import json
from datetime import datetime, timezone

import pytest

from helpers import captured
from sandbox import fleet_histories, histories
from sandbox.scenarios import Report

# Each seed's story, pinned: a change to the generator changes what a seed replays, and the
# seeds (here and in docs/testing.md) must then be chosen again.
CI_HISTORIES = {
    32: "seed 32: ALB, steps [100], approval before 100 %: never, hooks {'afterEachStep': ['slow'], "
        "'afterPromotion': ['fail'], 'beforeTraffic': ['pass']}, started by the CreateCluster event, a "
        'gradual rollback (the old cluster unhealthy), AWS Health issues: rollBack (bounded to 60 s); '
        'alarm after RestoreUnchanged #1; alarm after PrepareTraffic #1; throttle after Restore #1; '
        'throttle after PrepareTraffic #1; health-open after Evaluate #1; health-close after SetWeights '
        '#1',
    136: 'seed 136: Route 53 via Argo CD, steps [72, 100], approval before 72 %: reject, a gradual rollba'
         'ck (the old cluster unhealthy), an error budget fine at the start (bounded to 60 s); operator-r'
         'estore after SetWeights #2; foreign-apply[6] after Restore #1; foreign-apply[91] after PrepareT'
         'raffic #1; reply-lost after PrepareTraffic #1; safety-net-lost after Restore #1; budget-spent a'
         'fter SetWeights #2; the operator restores after the end',
    138: 'seed 138: ALB, steps [62, 100], a Datadog check, freezes bounded to 60 s, a gradual rollback '
         '(the old cluster healthy), the comparison; abort after RestoreUnchanged #1; late-safety-net '
         'after Evaluate #1; foreign-write[43, 57] after SetWeights #2; provider-slow after Restore #1; '
         'provider-recovers after Evaluate #1; provider-down after SetWeights #2; freeze after Evaluate '
         '#3; unfreeze after Evaluate #3; compare-spike after RestoreUnchanged #1; compare-errors after '
         'SetWeights #1; the operator restores after the end',
    205: 'seed 205: Route 53, steps [17, 100], a metric threshold, a cluster readiness gate (insight '
         'ready); lambda-throttle after Evaluate #1; lambda-5xx after SetWeights #2; alarm-clears after '
         'Evaluate #1; operator-restore after Evaluate #1; metric-fine after Evaluate #1; iam-reads-'
         'refused after SetWeights #2; iam-reads-restored after PrepareTraffic #1; the operator restores '
         'after the end',
    220: 'seed 220: Route 53 via Argo CD, steps [100]; late-safety-net after RestoreUnchanged #1; '
         'metrics-throttle[4] after Evaluate #2; abort after RestoreUnchanged #1; kube-fault[2, 429] '
         'after SetWeights #1; iam-reads-refused after SetWeights #1; iam-reads-restored after Restore #1',
    261: 'seed 261: ALB + Route 53, steps [100], approval before 100 %: approve, a metric threshold, '
         'retires the stable target group; second-rollout after Evaluate #1; metrics-throttle[4] after '
         'Evaluate #2; other-rollout after RestoreUnchanged #1; route53-pending[1] after SetWeights #1; '
         'record-write[8] after Restore #1; safety-net-disabled after Evaluate #2; metric-fine after '
         'Evaluate #1; metric-fine after SetWeights #1; iam-reads-refused after Evaluate #2; iam-reads-'
         'restored after RestoreUnchanged #1; the operator restores after the end',
    739: 'seed 739: ALB, steps [50, 93, 100], a gradual rollback (the old cluster healthy); second-'
         'rollout after SetWeights #2; alarm after SetWeights #1',
    828: 'seed 828: ALB, steps [100], the ALB judge; reply-lost after SetWeights #1; operator-restore '
         'after Evaluate #1; alb-breach after PrepareTraffic #1; alb-fine after Evaluate #2',
    1536: 'seed 1536: VPC Lattice, steps [51, 100], a cluster readiness gate (insight ready); lambda-thrott'
          'le after SetWeights #2; foreign-write[74, 26] after SetWeights #2; throttle after Evaluate #2; t'
          'hrottle after Evaluate #3; other-rollout after Restore #1; safety-net-lost after PrepareTraffic '
          '#1; the operator restores after the end',
    2061: 'seed 2061: ALB + Route 53, steps [41, 65, 100], approval before 100 %: approve, failureLimit '
          "2, a Datadog check, hooks {'afterPromotion': ['pass'], 'beforeTraffic': ['pass']}; operator-"
          'restore after SetWeights #1; lambda-throttle after SetWeights #3; alarm-clears after Evaluate '
          '#3; abort after SetWeights #3; route53-pending[2] after Evaluate #4; route53-throttle after '
          'Evaluate #4; provider-recovers after Evaluate #6; provider-nodata after Evaluate #5; provider-'
          'breach after SetWeights #1; iam-refusal after Evaluate #5; iam-restored after PrepareTraffic '
          '#1; the operator restores after the end',
    2081: "seed 2081: ALB + Route 53, steps [100], hooks {'afterEachStep': ['pass']}, a gradual rollback ("
          'the old cluster unhealthy), an error budget fine at the start (bounded to 60 s), judging the ne'
          "w cluster's share and burn; lambda-throttle after PrepareTraffic #1; budget-spent after Evaluat"
          'e #1; budget-burn after Evaluate #1',
    2993: 'seed 2993: ALB + Route 53, steps [71, 100], freezes bounded to 60 s, the comparison; reply-'
          'lost after Evaluate #4; freeze after Evaluate #1; compare-errors after Evaluate #3; compare-'
          'fine after Evaluate #3; the operator restores after the end',
    3621: "seed 3621: a fleet, 2 cells, waves [1, '100%'], budget 1, finishRunning, "
          'rollbackPromotedOnHalt; fleet-abort after c2:SetWeights #1; lambda-5xx after c2:SetWeights #2;'
          ' cell-alarm-clears[c1] after c1:Evaluate #3; soak-alarm after c1:SetWeights #1',
    7049: 'seed 7049: NLB, steps [82, 95, 100], failureLimit 3, a Datadog check; foreign-write[66, 34] '
          'after Evaluate #2; late-safety-net after Evaluate #2; foreign-write[25, 75] after Evaluate #'
          '6; provider-slow after Evaluate #1; provider-recovers after SetWeights #1',
    9223: 'seed 9223: ALB, steps [100], approval before 100 %: never, executions time out after 20 s, the c'
          'omparison; abort after PrepareTraffic #1; second-rollout after Restore #1; alarm after Restore #'
          '1; throttle after Evaluate #2; other-rollout after PrepareTraffic #1; safety-net-lost after Rest'
          'oreUnchanged #1; safety-net-disabled after Restore #1; iam-refusal after Evaluate #2; iam-restor'
          'ed after Restore #1; compare-errors after PrepareTraffic #1; the operator restores after the end',
    9228: 'seed 9228: ALB + Route 53, steps [26, 41, 100]; metrics-throttle[6] after Restore #1; foreign-'
          'write[80, 20] after SetWeights #3; metrics-throttle[6] after RestoreUnchanged #1; metrics-'
          'throttle[3] after RestoreUnchanged #1; iam-reads-refused after SetWeights #1; iam-reads-'
          'restored after Evaluate #1; the operator restores after the end',
    9413: 'seed 9413: ALB + Route 53, steps [100], a Prometheus check, a metric threshold, retires the '
          'stable target group, AWS Health issues: rollBack (bounded to 60 s); operator-restore after '
          'Restore #1; foreign-write[15, 85] after RestoreUnchanged #1; reply-lost after PrepareTraffic '
          '#1; alarm-clears after Evaluate #2; route53-pending[1] after Evaluate #2; route53-throttle '
          'after PrepareTraffic #1; provider-down after Evaluate #2; provider-up after SetWeights #1; '
          'metric-fine after RestoreUnchanged #1; health-open after Evaluate #2; the operator restores '
          'after the end',
    10405: 'seed 10405: ALB, steps [41, 100], failureLimit 2, a Prometheus check, target health gate '
           "(targets late), a metric threshold, retires the stable target group, shift-weights' Timeout "
           '10 s; throttle after Evaluate #3; operator-restore after RestoreUnchanged #1; lambda-5xx '
           'after PrepareTraffic #1; provider-up after Evaluate #2; provider-nodata after Restore #1; '
           'safety-net-lost after PrepareTraffic #1; targets-registered[4] after PrepareTraffic #1; '
           'metric-breach after SetWeights #2; metric-fine after PrepareTraffic #1; write-past-timeout '
           'after RestoreUnchanged #1; the operator restores after the end',
    12158: "seed 12158: ALB + Route 53, steps [100], hooks {'afterPromotion': ['raise']}, started by the Cr"
           'eateCluster event, retires the stable target group, executions time out after 30 s, a gradual r'
           'ollback (the old cluster unhealthy), an error budget spent at the start (bounded to 60 s); fore'
           'ign-write[48, 52] after RestoreUnchanged #1; other-rollout after SetWeights #1; record-write[74'
           '] after RestoreUnchanged #1; safety-net-lost after Evaluate #2; iam-refusal after RestoreUnchan'
           'ged #1; budget-back after FreezeGate #3; the operator restores after the end',
    12808: 'seed 12808: ALB, steps [15, 100], retires the stable target group, the comparison; metrics-'
           'throttle[6] after Evaluate #2; late-safety-net after Evaluate #1; abort after Evaluate #3; '
           'safety-net-lost after SetWeights #2; safety-net-disabled after PrepareTraffic #1; iam-refusal'
           ' after Evaluate #2; compare-errors after RestoreUnchanged #1; the operator restores after the'
           ' end',
    13608: 'seed 13608: Global Accelerator, steps [86, 100], approval before 86 %: approve, a Prometheus'
           ' check, a metric threshold, AWS Health issues: rollBack (bounded to 60 s); second-rollout af'
           'ter SetWeights #2; abort after Evaluate #2; operator-restore after Evaluate #3; foreign-writ'
           'e[9, 91] after Evaluate #4; provider-slow after PrepareTraffic #1; provider-up after SetWeig'
           'hts #2; provider-up after Evaluate #4; safety-net-lost after SetWeights #1; metric-breach af'
           'ter Evaluate #2; health-open after Evaluate #4; health-close after Evaluate #3; accelerator-'
           'stuck[11] after Evaluate #3; accelerator-busy[6] after PrepareTraffic #1; the operator resto'
           'res after the end',
    13718: 'seed 13718: ALB, steps [12, 81, 100], the comparison, a cluster readiness gate (insight '
           'never); throttle after SetWeights #1; compare-spike after Evaluate #4; compare-spike after '
           'SetWeights #1; addon-recovers after Evaluate #5',
    17447: 'seed 17447: Global Accelerator, steps [26, 100], failureLimit 2, a Prometheus check; abort a'
           'fter SetWeights #2; late-safety-net after Evaluate #2; provider-breach after RestoreUnchange'
           'd #1; safety-net-lost after Evaluate #3; iam-refusal after RestoreUnchanged #1; accelerator-'
           'stuck[16] after PrepareTraffic #1; accelerator-busy[3] after Evaluate #4; the operator resto'
           'res after the end',
    19674: 'seed 19674: ALB + Route 53, steps [53, 100], retires the stable target group, the comparison,'
           ' a cluster readiness gate (insight ready); late-safety-net after Evaluate #4; compare-'
           'regression after PrepareTraffic #1; compare-errors after Evaluate #4; the operator restores '
           'after the end',
    23821: 'seed 23821: ALB + Route 53, steps [100], AWS Health issues: rollBack (bounded to 60 s); '
           'lambda-5xx after RestoreUnchanged #1; health-open after Evaluate #1; health-close after '
           'Evaluate #2',
    35690: "seed 35690: a fleet, 2 cells, waves [1, '100%'], budget 1, abortRunning, "
           'rollbackPromotedOnHalt, a soak, approval before wave 2: approve, cells in us-east-1 and eu-'
           'west-1; reply-lost after c1:SetWeights #2; cell-foreign-write[c2] after c2:Evaluate #3; cell-'
           'alarm[c1] after c1:SetWeights #2; cell-event[c2] after c1:Evaluate #1',
    52052: 'seed 52052: ALB + Route 53, steps [5, 100], the comparison; alarm-clears after Evaluate #1; '
           'compare-nodata after Evaluate #1',
    138571: 'seed 138571: Route 53 via Argo CD, steps [76, 81, 100], a cluster readiness gate (insight '
            'late), AWS Health issues: hold (bounded to 60 s); lambda-throttle after RestoreUnchanged #1;'
            ' late-safety-net after Evaluate #4; lambda-5xx after Evaluate #2; insight-fixed[6] after '
            'PrepareTraffic #1; addon-recovers after PrepareTraffic #1; addon-degraded after Evaluate #6;'
            ' health-open after SetWeights #1; health-close after Evaluate #5',
    1119: 'seed 1119: ALB, steps [6, 83, 100], a gradual rollback (the old cluster unhealthy), the compari'
          'son, a test-traffic stage (its run none); alarm-clears after Evaluate #4; compare-fine after Re'
          'store #1; abort after OpenTestTraffic #1',
    1942: 'seed 1942: ALB + Route 53, steps [100], executions time out after 34 s, a test-traffic stage (i'
          'ts run failed); second-rollout after PrepareTraffic #1; lambda-5xx after RestoreUnchanged #1',
    6861: 'seed 6861: ALB + Route 53, steps [30, 100], a Datadog check, executions time out after 23 s, a '
          'test-traffic stage (its run passed); lambda-5xx after SetWeights #2; provider-up after Restore '
          '#1; test-rule-refused after PrepareTraffic #1',
    29294: 'seed 29294: ALB, steps [93, 95, 100], target health gate (targets ready), a gradual rollback (t'
           'he old cluster unhealthy), a test-traffic stage (its run passed); lambda-throttle after SetWeig'
           'hts #1',
}

ARN = "arn:aws:states:us-east-1:123456789012:execution:cluster-canary-rollout:history-1"
LISTENER, RECORD = "listener :80", "app.example.com."
BASELINE = {LISTENER: (100, 0), RECORD: (100, 0)}
PROMOTED = {LISTENER: (0, 100), RECORD: (0, 100)}


def exited(name, output, at=0.0):
    return {"timestamp": datetime.fromtimestamp(at, timezone.utc),
            "stateExitedEventDetails": {"name": name, "output": json.dumps(output)}}


def entered(name, at=0.0):
    return {"timestamp": datetime.fromtimestamp(at, timezone.utc), "stateEnteredEventDetails": {"name": name}}


def made_up(status, weights, states=(), error=None, events=(), metrics=(), history=(), **run):
    """A Run as `histories.run` would record it, of a one-step rollout on a listener and a record."""
    report = Report(execution_arn=ARN, status=status,
                    error=error, states=list(states), weights=weights, events=list(events),
                    metrics=list(metrics))
    record = histories.Run(report=report, baseline=BASELINE, promoted=PROMOTED, history_events=list(history), **run)
    return histories.History(1, histories.ALB_ROUTE53, [100]), record


def passing_step():
    return [exited("SetWeights", {}), entered("Evaluate"), exited("Evaluate", {"bake": {"verdict": "pass"}})]


def test_the_checker_flags_the_target_a_foreign_stop_left_at_the_canarys_weight():
    """The defect seeds 11 and 42 of the first generator found: the listener moved by hand, the
    record nobody touched left at the step's 10 %."""
    foreign = {LISTENER: (70, 30)}
    stopped = dict(states=["SetWeights", "StoppedByForeignChangeOutcome", "StoppedByForeignChange"],
                   error="WeightsChangedExternally", foreign=foreign, foreign_at=0,
                   history=[entered("Evaluate")],
                   events=[("Rollout Failed", {"executionArn": ARN, "error": "WeightsChangedExternally",
                                               "cause": "…", "end": "StoppedByForeignChange"})],
                   metrics=[("ForeignChanges", {}, 1)])
    history, left = made_up("FAILED", {LISTENER: (70, 30), RECORD: (90, 10)}, **stopped)
    assert any(v.startswith("traffic ended at") for v in histories.violations(history, left))
    history, fixed = made_up("FAILED", {LISTENER: (70, 30), RECORD: (100, 0)}, **stopped)
    assert histories.violations(history, fixed) == []
    # Without its event and its page, the same end is a broken promise too.
    stopped.update(events=[], metrics=[])
    history, silent = made_up("FAILED", {LISTENER: (70, 30), RECORD: (100, 0)}, **stopped)
    assert len(histories.violations(history, silent)) == 2


def test_the_checker_flags_a_promotion_without_evidence_or_past_a_refusal():
    history, unjudged = made_up("SUCCEEDED", PROMOTED, history=[exited("SetWeights", {}), entered("Evaluate"),
                                                                 exited("Evaluate", {"bake": {"verdict": "inconclusive"}})])
    assert histories.violations(history, unjudged) == ["promoted without a passing check at step(s) [1]"]
    history, judged = made_up("SUCCEEDED", PROMOTED, history=passing_step())
    assert histories.violations(history, judged) == []
    history.approval = ("reject", 100)
    judged.approval_requested = True
    assert histories.violations(history, judged) == ["promoted past an approval answered `reject`"]
    history, alarmed = made_up("SUCCEEDED", PROMOTED, history=[exited("SetWeights", {}), entered("Evaluate"),
                                                               exited("Evaluate", {"bake": {"verdict": "pass"}})],
                               conditions=[(1, "alarm", "ALARM", 0.0)])
    assert histories.violations(history, alarmed) == [
        "promoted, but no check of step 1 could pass (['fail'])",
        "promoted past 1 failing check(s) in a row at step 1 (failureLimit 1)"]


def checked_step(*outcomes):
    """A step's history whose checks begin and end at the given indexes (events numbered from 0)."""
    events = [exited("SetWeights", {})]
    for _ in outcomes:
        events += [entered("Evaluate"), exited("Evaluate", {"bake": {"verdict": "pass"}})]
    return events


def test_the_checker_judges_a_promotion_by_the_world_the_checks_read():
    """Datadog over its limit, an alarm, no data and an outage, each from a point of the history:
    what the checks must have concluded, against `failureLimit`."""
    history, record = made_up("SUCCEEDED", PROMOTED, history=checked_step("fail", "pass"),
                              conditions=[(1, "provider", "breach", 0.0), (3, "provider", "fine", 1.0)])
    history.provider = True
    assert histories.violations(history, record) == [
        "promoted past 1 failing check(s) in a row at step 1 (failureLimit 1)"]
    history.failure_limit = 2
    assert histories.violations(history, record) == []
    # Two in a row reach a limit of 2; an outage leaves a check undecided (it may have passed);
    # no data is no pass.
    _, twice = made_up("SUCCEEDED", PROMOTED, history=checked_step("fail", "fail"),
                       conditions=[(1, "alarm", "ALARM", 0.0)])
    assert histories.violations(history, twice) == [
        "promoted, but no check of step 1 could pass (['fail', 'fail'])",
        "promoted past 2 failing check(s) in a row at step 1 (failureLimit 2)"]
    _, out = made_up("SUCCEEDED", PROMOTED, history=checked_step("?"), conditions=[(1, "outage", "error", 0.0)])
    assert histories.violations(history, out) == []
    _, empty = made_up("SUCCEEDED", PROMOTED, history=checked_step("?"), conditions=[(1, "provider", "nodata", 0.0)])
    assert histories.violations(history, empty) == [
        "promoted, but no check of step 1 could pass (['inconclusive'])"]


def test_the_checker_flags_a_slow_rollback_for_an_unreachable_provider():
    slow = histories.UNJUDGED_BOUND_SECONDS + 1
    history, late = made_up("FAILED", BASELINE, error="MetricsProviderUnavailable",
                            conditions=[(0, "outage", "slow", 0.0)],
                            history=[exited("Restore", {"restored": {"weights": []}}, at=slow)])
    assert histories.violations(history, late) == [
        f"the rollback for an unreachable provider reached the baseline {slow} s after the outage began, "
        f"past the {histories.UNJUDGED_BOUND_SECONDS} s bound"]
    # An outage that ended before is not what the rollback was for.
    late.conditions.append((0, "outage", None, 1.0))
    assert histories.violations(history, late) == []
    # Seed 9171: the outage that caused it is the one under way at the restore, not one drawn
    # after it (timed from that one, the rollback took -0.6 s).
    history, again = made_up("FAILED", BASELINE, error="MetricsProviderUnavailable",
                             conditions=[(0, "outage", "error", 0.0), (0, "outage", "slow", slow + 0.6)],
                             history=[exited("Restore", {"restored": {"weights": []}}, at=slow)])
    assert histories.unjudged_to_baseline(again) == slow


def test_the_checker_flags_hooks_passed_over_or_skipped():
    history, record = made_up("SUCCEEDED", PROMOTED, history=passing_step(),
                              hook_calls=[("afterEachStep", 100, [{"stable": 0, "canary": 100}], "fail")])
    history.hooks = {"beforeTraffic": ["pass"], "afterEachStep": ["fail"]}
    assert histories.violations(history, record) == [
        "promoted although hooks answered {('afterEachStep', 100): 'fail'}",
        "promoted without running the hooks [('beforeTraffic', None)]"]
    _, moved = made_up("FAILED", BASELINE, error="HookFailed", states=["SetWeights"],
                       hook_calls=[("beforeTraffic", None, [], "slow"),
                                   ("afterEachStep", 100, [{"stable": 50, "canary": 50}], "pass")])
    assert histories.violations(history, moved) == [
        "the afterEachStep hook of the 100 % step saw weights [{'stable': 50, 'canary': 50}]",
        "a beforeTraffic hook failed, and weights were set"]


def test_the_checker_flags_a_lost_safety_net_nobody_hears_of():
    lost = dict(lost_deliveries=[None, 0, None], dead_letter_queue="cluster-canary-SafetyNetDeadLetterQueue-1",
                page_alarm={"MetricName": "ApproximateNumberOfMessagesVisible", "Threshold": 1.0,
                            "Dimensions": [{"Name": "QueueName", "Value": "cluster-canary-SafetyNetDeadLetterQueue-1"}]})
    half = {LISTENER: (50, 50), RECORD: (50, 50)}
    history, silent = made_up("ABORTED", half, **lost)
    assert histories.violations(history, silent) == [
        f"traffic ended at {half}: neither the baseline {BASELINE}, promoted, nor as a foreign writer left it "
        "(None, ended foreign: False), and nobody was paged",
        "the safety net's delivery failed every try, and its dead-letter queue does not name the execution"]
    history, heard = made_up("ABORTED", half, dead_letters=[ARN], **lost)
    assert histories.violations(history, heard) == []
    # Stopped at 100 %, its safety net lost: promoted traffic, and a page (seed 5045).
    history, stopped_at_the_top = made_up("ABORTED", PROMOTED, dead_letters=[ARN], **lost)
    assert histories.violations(history, stopped_at_the_top) == []
    heard.page_alarm = {**heard.page_alarm, "Dimensions": [{"Name": "QueueName", "Value": "another-queue"}]}
    assert histories.violations(history, heard)[0].startswith("no alarm pages on a message in the safety net's dead-letter queue")


def test_the_checker_flags_a_disabled_safety_net_rule_the_sweep_did_not_cover():
    """With the SafetyNet rule off, the sweep is the safety net: traffic left halfway is a broken
    promise (no page excuses it), and a sweep's restore must page."""
    half = {LISTENER: (50, 50), RECORD: (50, 50)}
    history, left = made_up("ABORTED", half, net_disabled=True)
    assert histories.violations(history, left) == [
        f"traffic ended at {half}: neither the baseline {BASELINE}, promoted, nor as a foreign writer left it "
        "(None, ended foreign: False)"]
    history, unheard = made_up("ABORTED", BASELINE, net_disabled=True)
    unheard.report.safety_net = {"executionArn": ARN, "reason": "…the sweep put it back at the baseline"}
    assert histories.violations(history, unheard) == [
        "the sweep put back a rollout its disabled SafetyNet rule left, and nothing paged (SafetyNetSweeps)"]
    history, heard = made_up("ABORTED", BASELINE, net_disabled=True,
                             metrics=[("SafetyNetSweeps", {"Cluster": "us-east-1/green"}, 1.0)])
    heard.report.safety_net = unheard.report.safety_net
    assert histories.violations(history, heard) == []


def test_the_checker_flags_a_slow_rollback_and_a_late_write_over_a_newer_rollout():
    slow = histories.ROLLBACK_BOUND_SECONDS + 1
    alarm = [(0, "alarm", "ALARM", 0.0)]
    said = (f"the rollback reached the baseline {slow} s after the checks' signals failed, past the "
            f"{histories.ROLLBACK_BOUND_SECONDS} s bound")
    decided = entered("DescribeCheckFailure", at=3)
    history, late = made_up("FAILED", BASELINE, error="CheckFailed", conditions=alarm,
                            history=[decided, exited("Restore", {"restored": {"weights": []}}, at=slow)])
    assert histories.violations(history, late) == [said]
    # Timed from its own cause: a spell that began after the rollback was decided is not it
    # (seed 9024), nor one over well before it.
    for other in ([(0, "alarm", "ALARM", 4.0)], [(0, "alarm", "ALARM", -60.0), (1, "alarm", "OK", -50.0)]):
        history, not_its_cause = made_up("FAILED", BASELINE, error="CheckFailed", conditions=other,
                                         history=[decided, exited("Restore", {"restored": {"weights": []}}, at=slow)])
        assert histories.alarm_to_baseline(not_its_cause) is None, other
    # A restore whose first attempt failed reaches the baseline when RestoreRetried does.
    history, retried = made_up("FAILED", BASELINE, error="CheckFailed", conditions=alarm,
                               history=[decided, exited("Restore", {"restoreFailing": {"Error": "AwsTransient"}}, at=1),
                                        exited("RestoreRetried", {"restored": {"weights": []}}, at=slow)])
    assert histories.violations(history, retried) == [said]
    # Each further failing check `failureLimit` asks for is one check interval more.
    history.failure_limit = 2
    assert histories.violations(history, retried) == []
    # A second rollout ran after this one ended and promoted: the first's late safety net must
    # not have put its own baseline back over it.
    newer = Report(execution_arn="second", status="SUCCEEDED", states=["PrepareTraffic", "SetWeights"],
                   weights={**PROMOTED, "listener :443": (0, 1)})
    history, overwritten = made_up("ABORTED", BASELINE, second=newer, second_overlapped=False)
    assert any(v.startswith("traffic ended at") for v in histories.violations(history, overwritten))
    history, left_alone = made_up("ABORTED", PROMOTED, second=newer, second_overlapped=False)
    assert histories.violations(history, left_alone) == []


def test_the_checker_flags_every_other_restoring_end_past_its_bound():
    """A hook's failure, a task's error, an approval refused, a freeze held too long: from the
    decision to the restore's read-back. A stop or a timeout: from the end to the safety net's
    answer, its settle period included."""
    bound = histories.DECIDED_TO_BASELINE_SECONDS
    decided = [entered("DescribeTaskFailure", at=10)]
    history, hook = made_up("FAILED", BASELINE, error="HookFailed",
                            history=decided + [exited("Restore", {"restored": {"weights": []}}, at=10 + bound + 1)])
    assert histories.violations(history, hook) == [
        f"the rollback reached the baseline {bound + 1} s after it was decided (HookFailed), past the {bound} s bound"]
    history, in_time = made_up("FAILED", BASELINE, error="HookFailed",
                               history=decided + [exited("Restore", {"restored": {"weights": []}}, at=10 + bound)])
    assert histories.violations(history, in_time) == []
    restored = {"restored": True, "reason": "the execution ended ABORTED at BakeWait, without its own rollback"}
    limit = histories.SAFETY_NET_DELIVERY_SECONDS + bound + 4
    history, slow = made_up("ABORTED", BASELINE, ended_at=100.0, safety_net_at=100.0 + limit + 1, settle_seconds=4)
    slow.report.safety_net = restored
    assert histories.violations(history, slow) == [
        f"the safety net restored {limit + 1} s after the execution ended ABORTED, past the {limit} s bound"]
    history, late_on_purpose = made_up("ABORTED", BASELINE, ended_at=100.0, safety_net_at=100.0 + limit + 1,
                                       settle_seconds=4, held=True)
    late_on_purpose.report.safety_net = restored
    assert histories.violations(history, late_on_purpose) == [], "a delivery the run held is late by design"


def test_the_checker_flags_a_restore_by_hand_that_undoes_too_much():
    history, promoted = made_up("SUCCEEDED", PROMOTED, history=passing_step(),
                                restore_after=(0, "restored", BASELINE))
    assert histories.violations(history, promoted)[0].startswith(
        "`cluster-canary restore` after a promotion (or a newer rollout) was not refused")
    history, running = made_up("FAILED", BASELINE, error="CheckFailed", restores_while_running=[(0, True)])
    assert histories.violations(history, running) == ["`cluster-canary restore` wrote while the execution ran"]
    # A rollout that never set a step has nothing to restore: a foreign write before it stays
    # (seed 5128); one that did set a step is put back at its baseline.
    foreign = {LISTENER: (7, 93), RECORD: (100, 0)}
    history, untouched = made_up("FAILED", foreign, error="HookFailed", states=["PrepareTraffic"],
                                 foreign=foreign, foreign_at=0, restore_after=(0, "nothing to restore", foreign))
    assert histories.violations(history, untouched) == []
    untouched.restore_after = (0, "restored", BASELINE)
    assert histories.violations(history, untouched)[0].startswith(
        "`cluster-canary restore` of a rollout that never set a step changed")


def test_the_checker_flags_a_second_rollout_of_the_same_targets_that_was_not_refused():
    def second(status, states, error=None):
        report = Report(execution_arn="second", status=status, error=error, states=states, weights=BASELINE)
        return made_up("FAILED", BASELINE, error="CheckFailed", second=report, second_overlapped=True)
    # Refused at Prepare, or its plan refused before (a provider's query without data: seed 5618).
    assert histories.violations(*second("FAILED", ["PrepareTraffic"], "ConcurrentRollout")) == []
    assert histories.violations(*second("FAILED", ["ValidatePlan"], "InvalidPlan")) == []
    assert histories.violations(*second("SUCCEEDED", ["PrepareTraffic", "SetWeights"])) == [
        "a second rollout of the same targets, started while the first ran, was not refused: SUCCEEDED None",
        "the refused second rollout set weights"]


def test_the_checker_flags_a_rollout_of_another_target_refused_or_moved_by_the_first():
    other = dict(other="arn:…:other-1", other_world={"listener": "arn:…:listener/app/web-other/1/2"})
    history, refused = made_up("FAILED", BASELINE, error="CheckFailed", other_weights=(100, 0),
                               other_end={"status": "FAILED", "error": "ConcurrentRollout", "cause": "…"}, **other)
    assert histories.violations(history, refused) == [
        "the rollout of another target was refused: ConcurrentRollout: …"]
    # The first's rollback put the other's listener back too.
    history, undone = made_up("FAILED", BASELINE, error="CheckFailed", other_weights=(100, 0),
                              other_end={"status": "SUCCEEDED"}, **other)
    assert histories.violations(history, undone) == [
        "the rollout of another target ended SUCCEEDED with its listener at (100, 0), not (0, 100)"]
    history, own = made_up("FAILED", BASELINE, error="CheckFailed", other_weights=(0, 100),
                           other_end={"status": "SUCCEEDED"}, **other)
    assert histories.violations(history, own) == []


def test_the_checker_flags_a_step_set_by_a_decision_made_while_frozen():
    """The freeze switch on at 10 s, off at 20 s: a step set by a last check entered at 12 s moved
    forward during the freeze; one entered at 25 s, or approved by a person, did not."""
    freeze = [(0, "freeze", "on", 10.0), (0, "freeze", None, 20.0)]

    def step_after(decision, at, approved=False):
        events = [entered(decision, at)] + ([entered("AwaitApproval", at + 1)] if approved else [])
        return events + [exited("SetWeights", {}, at + 2)]

    history, moved = made_up("SUCCEEDED", PROMOTED, conditions=freeze, history=step_after("Evaluate", 12.0))
    assert [v for v in histories.violations(history, moved) if "freeze switch" in v] == [
        "a step was set by Evaluate at 12.0, while the freeze switch was on"]
    for decision, at, approved in (("Evaluate", 25.0, False), ("FreezeGate", 5.0, False), ("Evaluate", 12.0, True)):
        history, fine = made_up("SUCCEEDED", PROMOTED, conditions=freeze, history=step_after(decision, at, approved))
        assert not [v for v in histories.violations(history, fine) if "freeze switch" in v], (decision, at)
    history, gate = made_up("SUCCEEDED", PROMOTED, conditions=freeze, history=step_after("FreezeGate", 15.0))
    assert any("set by FreezeGate" in v for v in histories.violations(history, gate))


def test_a_rollout_held_by_the_freeze_mid_rollout_is_known_held():
    """Seed 9204: the tester stops another rollout of the run that the freeze switch holds, at
    its gate or (as documented) at a check of its bake, rather than wait past its bound."""
    frozen_check = exited("Evaluate", {"bake": {"frozenSince": 1700000000, "verdict": "pass"}})

    class Executions:
        def __init__(self, events, status="RUNNING"):
            self.events, self.status = events, status

        def describe_execution(self, executionArn):
            return {"status": self.status}

        def get_execution_history(self, executionArn, maxResults):
            return {"events": self.events}

    held = histories.held_by_the_freeze
    assert held(Executions([entered("FreezeGate")]), ARN)
    assert held(Executions([entered("SetWeights"), entered("Evaluate"), frozen_check, entered("CheckVerdict?"),
                            entered("BakeWait")]), ARN)
    assert not held(Executions([entered("Evaluate"), frozen_check, entered("BakeFrozenTooLong")]), ARN)
    assert not held(Executions([entered("Evaluate"), exited("Evaluate", {"bake": {"verdict": "pass"}}),
                                entered("BakeWait")]), ARN)
    assert not held(Executions([entered("FreezeGate")], status="SUCCEEDED"), ARN)


def test_the_checker_flags_a_step_set_while_an_aws_health_issue_was_open():
    """An AWS Health issue of the Region recorded at 10 s, its close put at 20 s: a step set by a
    check entered at 12 s moved during the hold; one entered at 25 s did not. With `rollBack`,
    the issue fails the checks: a promotion past them is flagged too."""
    issue = [(0, "health", "open", 10.0), (0, "health", None, 20.0)]
    history, moved = made_up("SUCCEEDED", PROMOTED, conditions=issue,
                             history=[entered("Evaluate", 12.0), exited("SetWeights", {}, 14.0)])
    assert "a step was set by Evaluate at 12.0, while an AWS Health issue of the Region was open" in \
        histories.violations(history, moved)
    history, fine = made_up("SUCCEEDED", PROMOTED, conditions=issue,
                            history=[entered("Evaluate", 25.0), exited("SetWeights", {}, 27.0)])
    assert not [v for v in histories.violations(history, fine) if "AWS Health" in v]
    history, past = made_up("SUCCEEDED", PROMOTED, conditions=[(0, "issue", "open", 1.0)], history=passing_step())
    history.health = "rollBack"
    assert "promoted, but no check of step 1 could pass (['fail'])" in histories.violations(history, past)


def test_the_checker_flags_weights_set_before_the_cluster_was_ready_and_a_degraded_add_on_passed_over():
    """EKS's insight in ERROR from the start, fixed once the history held 4 events: weights set
    after a readiness look at events 0-1 are flagged; after one at 4-5 they are not; a failed gate
    that moved traffic is flagged; CoreDNS DEGRADED all through a step's check fails it."""
    error = [(0, "insight", "ERROR", 0.0), (4, "insight", None, 1.0)]
    gate = [entered("ClusterReadiness"), exited("ClusterReadiness", {})]
    history, early = made_up("SUCCEEDED", PROMOTED, conditions=error, history=gate + [entered("SetWeights")] + passing_step())
    history.readiness = "late"
    assert histories.violations(history, early)[0].startswith(
        "weights were set after a readiness look that found the cluster not ready")
    later = gate + [entered("WaitForClusterReadiness"), entered("CountReadinessPoll")] + gate
    history, fine = made_up("SUCCEEDED", PROMOTED, conditions=error, history=later + [entered("SetWeights")] + passing_step())
    history.readiness = "late"
    assert histories.violations(history, fine) == []
    history, moved = made_up("FAILED", PROMOTED, error="ClusterNotHealthy", conditions=error, history=gate)
    history.readiness = "never"
    assert "the cluster readiness gate failed, and traffic moved" in histories.violations(history, moved)[-1]
    # Seed 9166: a drawn foreign write moved the listener; the failed gate moved nothing.
    by_hand = {**BASELINE, LISTENER: (60, 40)}
    history, foreign = made_up("FAILED", by_hand, error="ClusterNotHealthy", conditions=error, history=gate,
                               foreign={LISTENER: (60, 40)}, foreign_at=0)
    history.readiness = "never"
    assert histories.moved_before_ready(foreign) == []
    history, degraded = made_up("SUCCEEDED", PROMOTED, conditions=[(0, "addon", "DEGRADED", 0.0)],
                                history=gate + [entered("SetWeights")] + passing_step())
    history.readiness = "ready"
    assert "promoted, but no check of step 1 could pass (['fail'])" in histories.violations(history, degraded)


def test_the_checker_flags_a_step_back_it_should_not_have_taken():
    """A step back after a critical alarm, upward, past an old cluster with no healthy target, or
    followed by anything but the restore when it was not taken, breaks a gradual rollback's
    promises; a step down to half and then the restore keeps them."""
    def run(caught, *steps_back, then="Restore", gradual="healthy"):
        events = [exited("DescribeCheckFailure", {"failure": {"Caught": caught}, "cursor": {"step": {"weight": 50}}})]
        for stepped, weight in steps_back:
            events += [entered("StepBack"), exited("StepBack", {"lastSet": {
                "steppedBack": stepped, "canaryWeight": weight, "reason": "why"}}), entered("SteppedBack?")]
        history, record = made_up("FAILED", BASELINE, error="CheckFailed", history=events + [entered(then)])
        history.gradual = gradual
        return [v for v in histories.violations(history, record) if "step back" in v or "stepped back" in v]

    assert run("CheckFailed", (True, 25), (False, 25)) == []
    assert run("CriticalCheckFailed", (False, 50)) == [
        "stepped back after CriticalCheckFailed, which goes to the baseline at once"]
    assert run("CheckFailed", (True, 60)) == ["a step back to 60 % from 50 %"]
    assert run("CheckFailed", (True, 25), gradual="unhealthy") == [
        "stepped back while the old cluster's target group had no healthy target"]
    assert run("CheckFailed", (False, 50), then="HoldStepBack") == [
        "after a step back not taken (why), HoldStepBack instead of the restore"]
    assert run("CheckFailed", (False, 50), gradual=None) == ["stepped back without rollback.gradual"]
    # A step back that failed (its error caught, lastSet as it was) goes to the restore; one that
    # found a foreign write under it (seed 138 with the comparison) leaves that as found.
    def failed(error):
        return [exited("DescribeCheckFailure", {"failure": {"Caught": "CheckFailed"}, "cursor": {"step": {"weight": 50}}}),
                entered("StepBack"),
                exited("StepBack", {"lastSet": {"weights": []}, "stepBackFailure": {"Error": error}})]
    for error, then, broken in (
            ("AwsAccessDenied", "Restore", []),
            ("AwsAccessDenied", "HoldStepBack",
             ["after a step back not taken (StepBack failed: AwsAccessDenied), HoldStepBack instead of the restore"]),
            ("WeightsChangedExternally", "MovedUnderStepBackOutcome", []),
            ("WeightsChangedExternally", "Restore",
             ["after a step back not taken (StepBack failed: WeightsChangedExternally), Restore instead of leaving the "
              "foreign change as found"])):
        history, record = made_up("FAILED", BASELINE, error="CheckFailed", history=failed(error) + [entered(then)])
        history.gradual = "healthy"
        assert [v for v in histories.violations(history, record) if "step back" in v] == broken, (error, then)


def test_a_seed_replays_the_same_story():
    for seed, story in CI_HISTORIES.items():
        assert str(histories.generate(seed)) == story


def test_the_comparisons_errors_come_request_by_request_and_replay_alike():
    from sandbox.histories.worlds import served_errors
    stable = [served_errors(second, "stable", 1) for second in range(2_000)]
    regressed = [served_errors(second, "canary", 10) for second in range(2_000)]
    # Binomial(100, 1 %) and (100, 10 %): their means, and a count that moves from second to second.
    assert 0.9 < sum(stable) / len(stable) < 1.1
    assert 9.5 < sum(regressed) / len(regressed) < 10.5
    assert len(set(stable[:20])) > 1 and len(set(regressed[:20])) > 3
    assert stable[:50] == [served_errors(second, "stable", 1) for second in range(50)]
    assert stable[:50] != [served_errors(second, "canary", 1) for second in range(50)], "the sides draw apart"


def test_the_pinned_histories_draw_every_kind_of_happening():
    drawn = [histories.generate(seed) for seed in CI_HISTORIES]
    rollouts = [history for history in drawn if not history.fleet]
    made = {h.action for history in rollouts for h in history.happenings}
    every = {*histories.HAPPENINGS, *histories.ROUTE53_HAPPENINGS, *histories.PROVIDER_HAPPENINGS,
             *histories.METRIC_HAPPENINGS, *histories.ALB_HAPPENINGS, "other-rollout", "safety-net-lost",
             "safety-net-disabled", "iam-refusal", "iam-restored", "iam-reads-refused", "iam-reads-restored",
             "targets-registered", "write-past-timeout", "freeze", "unfreeze", *histories.COMPARE_HAPPENINGS,
             "insight-fixed", *histories.ADDON_HAPPENINGS, *histories.HEALTH_HAPPENINGS,
             *histories.ACCELERATOR_HAPPENINGS, "budget-burn", "test-rule-refused"}
    assert every <= made, every - made
    assert {history.kind for history in rollouts} == {*histories.KINDS, histories.ROUTE53}
    assert {point for history in rollouts for point in history.hooks or {}} == set(histories.HOOK_POINTS)
    assert {history.provider for history in rollouts} == {None, "datadog", "prometheus"}
    for feature in ("by_event", "metric", "alb_judge", "retire", "short_timeout", "execution_timeout", "targets",
                    "freeze", "gradual", "compare", "budget_judged"):
        assert any(getattr(history, feature) for history in rollouts), feature
    assert {history.gradual for history in rollouts} == {None, *histories.GRADUAL}
    assert {history.readiness for history in rollouts} == {None, *histories.READINESS}
    assert {history.health for history in rollouts} == {None, *histories.HEALTH_MODES}
    assert {history.traffic for history in rollouts} == {None, histories.NLB, histories.ACCELERATOR, histories.LATTICE}
    assert any(history.failure_limit > 1 for history in rollouts)
    assert {history.test_traffic for history in rollouts} == {None, *histories.TEST_RUNS}
    assert any(h.action == "abort" and h.after == "OpenTestTraffic" for history in rollouts for h in history.happenings)
    fleets = [history.fleet for history in drawn if history.fleet]
    assert {h[0] for fleet in fleets for h in fleet.happenings} == set(fleet_histories.FLEET_ACTIONS)
    assert {fleet.on_halt for fleet in fleets} == {"finishRunning", "abortRunning"}
    assert any(fleet.soak for fleet in fleets) and any(fleet.approval for fleet in fleets)


@pytest.mark.parametrize("seed", sorted(CI_HISTORIES))
def test_a_seeded_history_keeps_every_promise(seed):
    history = histories.generate(seed)
    captured(str(history))
    record = histories.run(history, out=captured)
    captured("happened: " + (", ".join(histories.happened(record)) or "nothing"))
    assert histories.violations(history, record) == []


def test_the_checker_flags_a_gate_passed_too_early_and_a_retirement_without_a_promotion():
    history, record = made_up("SUCCEEDED", PROMOTED, history=[entered("SetWeights")] + passing_step(), targets_at=5,
                              stable_attached=False)
    history.targets, history.retire = "late", True
    assert histories.violations(history, record) == [
        "weights were set before the canary target group had a healthy target"]
    history, record = made_up("FAILED", BASELINE, error="CheckFailed", history=passing_step(), targets_at=0,
                              stable_attached=False)
    history.targets = "ready"
    assert histories.violations(history, record) == [
        "the stable target group was detached, though the rollout ended FAILED"]
    history, record = made_up("SUCCEEDED", PROMOTED, history=passing_step(), targets_at=0, stable_attached=True)
    history.retire = True
    assert histories.violations(history, record) == [
        "promoted with `retire`, and the stable target group is still attached"]


def made_up_fleet(children, weights, **run):
    story = fleet_histories.FleetStory(cells=len(weights), waves=[{"size": 1}, {"size": "100%"}], budget=0,
                                       on_halt="finishRunning", rollback_promoted=False, soak=False)
    end = run.pop("end", {"status": "FAILED", "error": "FleetHalted"})
    record = fleet_histories.FleetRun(end=end, children={c: {"status": s, "executionArn": c} for c, s in children.items()},
                                      weights=weights, rollouts=[f"{c}-0123456789" for c in children], **run)
    return story, record


def test_the_checker_flags_a_fleet_that_leaves_a_cell_half_moved_or_spends_past_its_budget():
    check = lambda story, record: fleet_histories.violations(  # noqa: E731
        story, record, histories.STATE_BUDGET, (), histories.SAFETY_NET_DELIVERY_SECONDS,
        histories.DECIDED_TO_BASELINE_SECONDS)
    promoted, baseline = fleet_histories.PROMOTED, fleet_histories.BASELINE
    story, half = made_up_fleet({"c1": "FAILED"}, {"c1": (50, 50), "c2": baseline})
    assert check(story, half) == ["cell c1 (FAILED) ended at (50, 50), not in [(100, 0)]"]
    # Wave 1's failure spent a budget of 0: wave 2's cell must not start, nor the fleet complete.
    story, spent = made_up_fleet({"c1": "FAILED", "c2": "SUCCEEDED"}, {"c1": baseline, "c2": promoted},
                                 end={"status": "SUCCEEDED"})
    assert check(story, spent) == [
        "the fleet completed with 1 failed cell(s) ['c1'], over its budget of 0",
        "cells ['c2'] started after wave 1 spent the budget"]
    # A promoted cell put back though the plan keeps it; a failure counted twice.
    story, undone = made_up_fleet({"c1": "SUCCEEDED", "c2": "FAILED"}, {"c1": baseline, "c2": baseline},
                                  events=[("Cell Failed", {"cell": "c2"}), ("Cell Failed", {"cell": "c2"})])
    assert check(story, undone)[:2] == [
        "cell c1 (SUCCEEDED) ended at (100, 0), not in [(0, 100)]",
        "cell c1 was promoted and is back at its baseline, though the plan keeps it"]
    assert "cells counted twice as failed: ['c2']" in check(story, undone)
    story.rollback_promoted = True
    # (The made-up events are not whole: their schema is a promise of its own.)
    assert [v for v in check(story, undone) if "breaks its schema" not in v] == ["cells counted twice as failed: ['c2']"]
    # The halt's tally against the cells' executions.
    story, tallied = made_up_fleet({"c1": "SUCCEEDED", "c2": "FAILED"}, {"c1": promoted, "c2": baseline},
                                   end={"status": "FAILED", "error": "FleetHalted", "cause":
                                        "fleet f halted after wave 2 of 2: …. Promoted: 1, failed: 1, "
                                        "stopped by the halt: 0, not started: 0"})
    assert check(story, tallied) == []
    tallied.end["cause"] = tallied.end["cause"].replace("failed: 1", "failed: 2")
    assert check(story, tallied) == [
        "the halt counted {'promoted': 1, 'failed': 2, 'stopped': 0, 'not started': 0}, its cells' executions say "
        "{'promoted': 1, 'stopped': 0, 'failed': 1, 'not started': 0}"]
    # A cell's CreateCluster event that started a rollout of its own.
    story, started = made_up_fleet({"c1": "SUCCEEDED"}, {"c1": promoted, "c2": baseline}, end={"status": "SUCCEEDED"},
                                   intake_answers=[("c2", None, {"action": "started"})])
    started.rollouts.append("green-c91ef3c73c29")
    assert check(story, started) == [
        "the CreateCluster event of cell c2's cluster was not left to the fleet: None {'action': 'started'}",
        "rollouts other than the fleet's cells ran: ['green-c91ef3c73c29']"]
    # A halt's restores, each within its bound: a stopped cell's safety net 10 + 90 + its settle
    # period (2 s) of the stop; the promoted cells 90 s per ten of them.
    story, halted = made_up_fleet({"c1": "SUCCEEDED", "c2": "ABORTED"}, {"c1": baseline, "c2": baseline},
                                  restored_after_stop={"c2": 102.0}, promoted_rolled_back=(90.0, 1),
                                  settle_seconds=2)
    story.rollback_promoted = True
    assert check(story, halted) == []
    halted.restored_after_stop["c2"], halted.promoted_rolled_back = 103.0, (91.0, 1)
    assert check(story, halted) == [
        "cell c2's safety net restored 103 s after it was stopped, past the 102 s bound",
        "the halt put its promoted cells back 91 s after it turned to them, past the 90 s bound"]
    halted.promoted_rolled_back = (150.0, 11)
    assert check(story, halted)[1:] == []


def test_the_checker_flags_a_healthy_comparison_that_found_a_regression_and_a_regression_promoted():
    high = "compare p99 latency: High (check Fail at score 50): canary 0.15 vs baseline 0.1 (x1.5)"
    failing = [exited("SetWeights", {}), entered("Evaluate", at=100.0),
               exited("Evaluate", {"bake": {"verdict": "fail", "summary": high}}, at=101.0)]
    history, record = made_up("FAILED", BASELINE, error="CheckFailed", history=failing)
    history.compare = True
    assert histories.violations(history, record) == [
        "a healthy comparison found a regression: ['compare p99 latency: High']"]
    # The same verdict with a regression in the world is the comparison doing its job.
    history, record = made_up("FAILED", BASELINE, error="CheckFailed", history=failing,
                              conditions=[(0, "compare", "regressed", 70.0)])
    history.compare = True
    assert histories.violations(history, record) == []
    # Promoted: a regression in effect 30 s before the last check must have been shown by then;
    # one of 10 s may not have been.
    passing = [exited("SetWeights", {}), entered("Evaluate", at=100.0),
               exited("Evaluate", {"bake": {"verdict": "pass"}}, at=101.0)]
    for since, broken in ((70.0, ["promoted with a regression beyond the band in effect 30 s before the last check"]),
                          (90.0, [])):
        history, record = made_up("SUCCEEDED", PROMOTED, history=passing,
                                  conditions=[(0, "compare", "regressed", since)])
        history.compare = True
        assert histories.violations(history, record) == broken
    # Regressed, then fine again before it could be shown, then regressed for a moment.
    history, record = made_up("SUCCEEDED", PROMOTED, history=passing, conditions=[
        (0, "compare", "regressed", 60.0), (0, "compare", "fine", 75.0), (0, "compare", "regressed", 95.0)])
    history.compare = True
    assert histories.violations(history, record) == []


def test_the_checker_flags_a_healthy_new_cluster_failed_on_its_budget_and_a_burning_one_promoted():
    spent = ("the rollout spent its share of SLO web-availability's error budget: the new cluster's 201 5xx are "
             "more than the 200 allowed")
    failing = [exited("SetWeights", {}, at=50.0), entered("Evaluate", at=100.0),
               exited("Evaluate", {"bake": {"verdict": "fail", "summary": spent}}, at=101.0)]
    history, record = made_up("FAILED", BASELINE, error="CheckFailed", history=failing)
    history.budget_judged = True
    assert histories.violations(history, record) == [f"a healthy new cluster failed on the error budget: {[spent]}"]
    # The same failure with the new cluster burning its budget is the share doing its job.
    history, record = made_up("FAILED", BASELINE, error="CheckFailed", history=failing,
                              conditions=[(0, "burn", "burning", 70.0)])
    history.budget_judged = True
    assert histories.violations(history, record) == []
    # Promoted: a burn with traffic 30 s before the last check must have been shown by then; one
    # of 10 s may not have been, nor one before the first weights (the canary served nothing).
    passing = [exited("SetWeights", {}, at=85.0), entered("Evaluate", at=100.0),
               exited("Evaluate", {"bake": {"verdict": "pass"}}, at=101.0)]
    for since, broken in ((70.0, []), (90.0, [])):
        history, record = made_up("SUCCEEDED", PROMOTED, history=passing,
                                  conditions=[(0, "burn", "burning", since)])
        history.budget_judged = True
        assert histories.violations(history, record) == broken
    passing[0] = exited("SetWeights", {}, at=60.0)
    history, record = made_up("SUCCEEDED", PROMOTED, history=passing, conditions=[(0, "burn", "burning", 70.0)])
    history.budget_judged = True
    assert histories.violations(history, record) == [
        "promoted with the new cluster burning its error budget 30 s before the last check"]


def test_the_checker_flags_a_step_before_the_test_stage_passed_and_a_test_rule_left():
    passed = ["OpenTestTraffic", "LookAtTestTraffic", "NotifyTestTrafficPassed", "SetWeights"]
    history, record = made_up("SUCCEEDED", PROMOTED, states=passed, history=passing_step(), test_rules_left=[])
    history.test_traffic = "passed"
    assert histories.violations(history, record) == []
    history, early = made_up("SUCCEEDED", PROMOTED, states=["OpenTestTraffic", "SetWeights", "NotifyTestTrafficPassed"],
                             history=passing_step(), test_rules_left=[])
    history.test_traffic = "passed"
    assert histories.violations(history, early) == ["a step was set before the test-traffic stage passed"]
    history, failed_run = made_up("SUCCEEDED", PROMOTED, states=passed, history=passing_step(), test_rules_left=[])
    history.test_traffic = "failed"
    assert histories.violations(history, failed_run) == ["the test-traffic stage passed, its canary's run failed"]
    rule = ("1", [], ["green"], {"cluster-canary:execution": ARN})
    history, left = made_up("ABORTED", BASELINE, states=["OpenTestTraffic"], test_rules_left=[rule])
    history.test_traffic = "none"
    assert histories.violations(history, left) == [f"the rollout ended ABORTED and left its test rule: {[rule]}"]
