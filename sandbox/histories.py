"""Seeded histories: a random plan, random things happening while it runs, and the promises
checked after each run, on a sandbox (the stack `sam deploy` creates, IAM enforced).

A history is generated from its seed alone (`generate(seed)`): the plan (its kind of targets: an
ALB listener, a listener and a Route 53 record, a record alone, or a record through Argo CD
(GitOps) with each cluster's ExternalDNS; one to three steps; sometimes an approval before a
step, answered `approve` or `reject` or never), one to four happenings, each tied to a point of
the execution (the n-th exit of a state: `PrepareTraffic`, `SetWeights`, `Evaluate`, `Restore`,
`RestoreUnchanged`), not to a wall clock, so a seed replays the same story, and sometimes an
operator's `cluster-canary restore` after the end. What came after the first generator is drawn
from streams of its own (`FEATURES`, `stream(seed, name)`), so adding it left every earlier draw
of a seed as it was: a Route 53-only plan; a provider's check beside the alarm (Datadog's, the
sandbox's API double, or a real Prometheus's behind a proxy that plays its outages), with
`failureLimit` 1 to 3 and `maxUnjudgedSeconds`; a CloudWatch metric threshold; the built-in ALB
checks (the canary's and the stable's ALB metrics put every second); hooks at each point (each
invocation answering pass, fail, an error, or too late); the target health gate (the canary's
target registered before, late, or never); `retire` (the stable target group detached once
promoted); the rollout started by the CreateCluster event (the plan then the stack's profile);
shift-weights deployed with a 10 s `Timeout`; the rollout state machine deployed with a
`TimeoutSeconds` of 10 to 35 s (an execution that times out, into the safety net: moto's engine
enforces it); and, a fifth of the seeds, a fleet instead (sandbox/fleet_histories.py has its
story and its promises). The happenings:

  alarm              an alarm the plan watches goes to ALARM (its event through the stack's rule)
  alarm-clears       it goes back to OK
  foreign-write      someone sets the listener's weights by hand (the NLB listener's, the
                     endpoint group's: `other-kinds`)
  foreign-apply      someone takes the stable's weight annotation by server-side apply under
                     their own field manager (GitOps)
  record-write       someone sets the weighted record's weights by hand
  abort              the operator stops the execution (StopExecution)
  late-safety-net    the safety net's delivery is held until the history ends (a late delivery)
  safety-net-lost    every try of the safety net's delivery fails (Lambda's retries spent): its
                     record goes to the dead-letter queue; the person it pages restores by hand
  safety-net-disabled  someone disables the stack's SafetyNet rule: nothing is delivered; the
                     sweep puts back what the rollout left, and pages (SafetyNetSweeps)
  throttle           ELBv2 throttles the next two ModifyListener calls
  route53-throttle   Route 53 throttles the next two ChangeResourceRecordSets calls
  route53-pending    GetChange answers PENDING once or twice (the change not yet INSYNC)
  kube-fault         the Kubernetes API answers the next Secret writes 429 or 500 (GitOps)
  metrics-throttle   CloudWatch throttles its next calls (the alarm checks, the watch)
  provider-breach    the provider's value goes over the check's limit (`provider-recovers`: back)
  provider-nodata    the provider has no value for the query (Prometheus: the series went stale)
  provider-down      the provider answers 503 (`provider-slow`: answers past the request
                     timeout; `provider-up`: answers again)
  metric-breach      the metric threshold's latest datapoint goes over it (`metric-fine`: back)
  alb-breach         the canary's 5xx rate goes over the ALB judge's limit (`alb-fine`: back)
  targets-registered the canary's target is registered some seconds later (a late gate)
  write-past-timeout the next traffic write is held past shift-weights' Timeout, then lands
                     (the plan settles LATE_WRITE_SETTLE seconds: longer than it can be late)
  iam-refusal        shift-weights' role is denied its traffic writes (`iam-restored`: given
                     back; else the person its Rollback Failing event pages gives it back)
  iam-reads-refused  evaluate-alarms' role is denied CloudWatch's reads (`iam-reads-restored`:
                     given back): a check that cannot read its signals never passes
  lambda-throttle    Lambda answers the next invocation 429 (TooManyRequestsException)
  lambda-5xx         Lambda answers the next invocation 500 without running it (lost)
  reply-lost         the next invocation runs, and its answer is lost (500): delivered twice
  second-rollout     a second rollout of the same targets is started
  other-rollout      a rollout of another target (a listener of its own, a cluster of its own)
                     is started
  operator-restore   the operator runs `cluster-canary restore --yes` (refused while it runs)
  freeze             the operator turns the stack's freeze switch on (`cluster-canary freeze`;
                     `unfreeze`: off again), the plan bounding one hold to a minute
  insight-fixed      the team fixes what EKS's cluster insight found (deprecated API calls) some
                     seconds after Prepare: the insight turns PASSING (a late readiness gate)
  addon-degraded     the new cluster's CoreDNS add-on goes DEGRADED (`addon-recovers`: ACTIVE)
  health-open        AWS Health's event for an open EKS issue in the rollout's Region is put on
                     the bus as AWS delivers it (`health-close`: the same issue closed)
  accelerator-busy   Global Accelerator refuses the next 1-6 UpdateEndpointGroup calls with
                     TransactionInProgressException (`other-kinds`)
  accelerator-stuck  the accelerator reads IN_PROGRESS 4-20 s after each write from then on

  compare-regression the canary answers 1.5 times slower than the stable, beyond the comparison's
                     allowed band of 1.2 (`compare-errors`: ten times the stable's 5xx rate;
                     `compare-nodata`: the canary's target group publishes nothing;
                     `compare-fine`: back to healthy; `compare-spike`: both clusters 3 times
                     slower at once, no regression)

and, without a happening of its own, `other-kinds`: a plain ALB plan (no gate, judge, comparison,
gradual rollback, retire or profile that names the ALB's target groups) shifts an NLB's TCP
listener (its `minStepSeconds` the bake) or a Global Accelerator's endpoint group (blue's and
green's load balancers weighted in it) instead, made for the history (`throttle` then throttles
the accelerator's writes); `readiness`: the plan's cluster readiness gate (CoreDNS named),
EKS's insight in ERROR at the start or not, fixed later or never; `aws-health`: the plan's
`awsHealth.onOpenIssue` (hold, or rollBack), one hold bounded to a minute; `gradual`: the plan's
rollback steps back ([50, 0], a short hold), the old cluster's target group healthy (its pods
registered) or not (none); and `compare`: the plan's `analysis.compare` (p99 with `allowedIncrease`
1.2 and the 5xx rate, 1 s periods over 20 s) of the canary's ALB metrics against the stable's, put
every second in sandbox/compare.py's healthy pattern (as often above as below, within 11 %).

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
  - every state stays under the written budget, every event is valid against its schema, and
    no token or key of the sandbox appears in a log, an event or an execution's history.

`python -m sandbox.histories --seeds N [--first S] [--jobs J]` runs N histories, one sandbox
each (J at a time), and sums up what happened; tests/e2e/test_histories.py runs a fixed few in
CI; a defect a seed found becomes a named test of its own.
Not generated: Amazon Managed Prometheus (SigV4); NaN from a provider; IAM
refusals beyond the traffic writes and the checks' CloudWatch reads; the alarm watch's table
failing; a comparison of Prometheus or Datadog metrics (the comparison reads the ALB's), a
fleet's comparison with its peers, and `onMarginal: ask` (the e2e tests in
tests/e2e/test_compare.py cover those).
"""
import argparse
import contextlib
import json
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import jsonschema

from . import compare, datadog, fleet_histories, fleets, gitops, prometheus, scenarios
from .alb_metrics import AlbMetrics
from .front_door import (INVOKE, cloudwatch_throttled, is_invocation, json_error, lambda_service_exception,
                         lambda_throttled, query_throttled, route53_pending, route53_throttled)
from .harness import CONTRACT, DATADOG_KEYS, FUNCTIONS_TOKEN, REPO, Sandbox
from .world import REGION

ALB, ALB_ROUTE53, GITOPS = "ALB", "ALB + Route 53", "Route 53 via Argo CD"
KINDS = (ALB, ALB_ROUTE53, GITOPS)
# A Route 53-only plan: drawn from a stream of its own, over the kind the first draw chose.
ROUTE53 = "Route 53"
DIRECT = (ALB, ALB_ROUTE53, ROUTE53)
WITH_LISTENER = (ALB, ALB_ROUTE53)
WITH_RECORD = (ALB_ROUTE53, ROUTE53)
# Each happening, and the kinds of plan it can happen to.
HAPPENINGS = {
    "alarm": KINDS, "alarm-clears": KINDS, "foreign-write": WITH_LISTENER, "foreign-apply": (GITOPS,),
    "abort": KINDS, "late-safety-net": KINDS, "throttle": WITH_LISTENER, "kube-fault": (GITOPS,),
    "metrics-throttle": KINDS, "lambda-throttle": KINDS, "lambda-5xx": KINDS, "reply-lost": KINDS,
    "second-rollout": KINDS, "operator-restore": KINDS,
}
# What came later, each drawn from a stream of its own (`stream(seed, name)`), so that adding one
# left every earlier draw of a seed, and the stories pinned then, as they were: (its share of the
# histories it can happen to, the happenings it brings).
FEATURES = {
    "route53-only": 0.2,  # the plan is a Route 53 record alone
    "route53": 0.5,  # of the plans with a record written directly
    "provider": 0.35,  # a provider's check beside the alarm
    "provider-kind": 0.5,  # of those: a real Prometheus's (behind a proxy that plays its outages), else Datadog's
    "hooks": 0.25,
    "deliveries": 0.15,
    "deliveries-disabled": 0.08,  # the SafetyNet rule disabled at a point of the run
    "intake": 0.2,  # of the direct plans: started by the CreateCluster event, the plan a profile
    "iam": 0.15,  # of the direct plans
    "fleet": 0.2,  # a fleet history instead (sandbox/fleet_histories.py)
    "fleet-regions": 0.5,  # of those: cells in two regions
    "target-health": 0.2,  # of the plans with a listener: the gate, its targets ready, late or never
    "metric-threshold": 0.2,  # a CloudWatch metric threshold beside the alarm
    "retire": 0.2,  # of the plans with a listener: the stable target group detached once promoted
    "timeouts": 0.15,  # shift-weights deployed with a short Timeout, and its writes held past it
    "execution-timeout": 0.1,  # the rollout state machine deployed with a short TimeoutSeconds
    "iam-reads": 0.1,  # evaluate-alarms' role denied the CloudWatch reads its checks make
    "alb-judge": 0.15,  # of the plans with a listener: the built-in ALB checks, fed every second
    "freeze": 0.15,  # the stack's freeze switch turned on at a point (and off at another, or never)
    "gradual": 0.2,  # the plan's rollback.gradual, the old cluster's target group healthy or not
    "compare": 0.2,  # of the plans with a listener and no ALB judge: the comparison, its ALB metrics fed every second
    "readiness": 0.2,  # the cluster readiness gate: EKS's insight in ERROR at the start or not, CoreDNS's health
    "aws-health": 0.15,  # an AWS Health issue in the Region, the plan holding or rolling back on it
    "other-kinds": 0.3,  # of the plain ALB plans: an NLB listener or a Global Accelerator endpoint group instead
}
GRADUAL = ("healthy", "unhealthy")  # the old cluster's target group in a `gradual` history
# When EKS's cluster insight stops saying ERROR: never in ERROR, some seconds after Prepare, never.
READINESS = ("ready", "late", "never")
READINESS_TIMEOUT = 8
ADDON = "coredns"
ADDON_HAPPENINGS = ("addon-degraded", "addon-recovers")
DEPRECATED_APIS = {
    "id": "5c1e1b3a-0000-0000-0000-000000000135", "name": "Deprecated APIs removed in Kubernetes v1.35",
    "category": "UPGRADE_READINESS", "description": "Checks for usage of deprecated APIs",
    "recommendation": "Update manifests and API clients to use newer Kubernetes APIs",
}
HEALTH_MODES = ("hold", "rollBack")  # the plan's awsHealth.onOpenIssue
HEALTH_HAPPENINGS = ("health-open", "health-close")
COMPARE_HAPPENINGS = ("compare-regression", "compare-errors", "compare-spike", "compare-nodata", "compare-fine")
# The comparison's 5xx per 100 requests on both clusters, and the canary's in a regression.
COMPARE_ERRORS, COMPARE_ERRORS_REGRESSED = 1, 10
# A regression beyond the band this long before a rollout's last check has been shown by then:
# the slow requests (3 in 100 against none) reach 1/α at the plan's α in 5 to 8 periods of 1 s,
# the 5xx rate ten times the stable's in as many (docs/signals/compare.md), with a put's second,
# a check's reads and a step without a baseline (100 %: not compared) on top.
COMPARE_SHOWN_SECONDS = 25
GRADUAL_HOLD = 5  # rollback.gradual.holdSeconds in the histories
# What one step back may add to the way to the baseline: its hold, and its write (one attempt:
# any error goes to the restore), as long as a step's at most.
STEP_BACK_SECONDS = GRADUAL_HOLD + 90
# A freeze holds one rollout at most this long in the histories (freeze.maxFrozenSeconds).
FROZEN_BOUND = 60
TARGETS = ("ready", "late", "never")  # when the canary target group gets its (healthy) target
TARGET_HEALTH_TIMEOUT = 8
METRIC_HAPPENINGS = ("metric-breach", "metric-fine")
METRIC_FINE, METRIC_LIMIT, METRIC_BREACH = 0.1, 0.5, 0.9
SHORT_TIMEOUT = 10  # shift-weights' Timeout in the `timeouts` histories, seconds
# ... and their plans' rollback.settleSeconds: a write held past the Timeout (after throttled
# tries, then SHORT_TIMEOUT + 2 s) lands up to about 15 s after the function ended (seed 524),
# and only a look after it (the restore's or the safety net's, one settle period on) puts it
# back. A plan whose writes can land late must settle longer than they can (docs/operations.md).
LATE_WRITE_SETTLE = 25
ALB_HAPPENINGS = ("alb-breach", "alb-fine")
# The kinds an `other-kinds` history shifts instead of the ALB listener, and their weights' keys
# in scenarios.read_weights.
NLB, ACCELERATOR = "nlb", "global-accelerator"
TRAFFIC_KEYS = {NLB: "nlb :443", ACCELERATOR: "accelerator"}
# An accelerator busy with a transaction (its writes refused n times), or slow to deploy (s).
ACCELERATOR_HAPPENINGS = ("accelerator-busy", "accelerator-stuck")
# The ALB judge's window: a change of the canary's 5xx count is all it reads this long after.
ALB_LOOKBACK = 5
ALB_REQUESTS, ALB_ERRORS_BREACH, ALB_MAX_ERROR_PERCENT = 100, 20, 5
ROUTE53_HAPPENINGS = ("record-write", "route53-throttle", "route53-pending")
PROVIDER_HAPPENINGS = ("provider-breach", "provider-recovers", "provider-nodata", "provider-down",
                       "provider-slow", "provider-up")
HOOK_POINTS = ("beforeTraffic", "afterEachStep", "afterPromotion")
HOOK_ANSWERS = ("fail", "raise", "slow")
HOOK = "arn:aws:lambda:us-east-1:123456789012:function:cluster-canary-hook-history"
HOOK_TIMEOUT = 3
# Datadog's error count for the canary: fine, and over the check's limit.
DATADOG_FINE, DATADOG_LIMIT, DATADOG_BREACH = 2, 25, 40
MAX_UNJUDGED = 10
PROVIDER_TIMEOUT = 20  # the function's request timeout (docs/signals/datadog.md, prometheus.md)
# Prometheus's error ratio for the canary: fine, the check's limit, over it.
RATIO_FINE, RATIO_LIMIT, RATIO_BREACH = 0.001, 0.05, 0.2
ANSWERS = ("approve", "reject", "never")
# The other-target rollout's own draw (a stream seeded by the seed and this name): adding it left
# every other draw of a seed, and so the pinned stories, as they were.
OTHER_ROLLOUT_SHARE = 0.3
OTHER = "other"  # its cell: listener `web-other`, cluster `other-new`, alarm `web-other-5xx`
ALARM = "web-green-5xx"
LISTENER = "listener :80"
FOREIGN_ENDS = set(CONTRACT["states"]["foreignEnds"])
# The states that read the weights (and so must notice a foreign write before them).
LOOKS = {"SetWeights", "Evaluate", "VerifyPromotion", "Restore", "RestoreRetried", "RestoreUnchanged",
         "LookAfterRestore"}
STATE_BUDGET = CONTRACT["limits"]["stateBudgetBytes"]
SECRETS = ("sandbox-admin", FUNCTIONS_TOKEN, *DATADOG_KEYS.values())
CHECKS_PER_STEP = 2
CHECK_INTERVAL = 2
APPROVAL_TIMEOUT = 4
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
def is_modify_listener(method, path, body):
    return b"Action=ModifyListener" in body


def is_endpoint_group_update(method, path, body):
    """Global Accelerator's UpdateEndpointGroup (JSON 1.1: the operation is in a header; only
    an update names a group with its endpoints or its dial)."""
    return bool(body) and b'"EndpointGroupArn"' in body and (
        b'"EndpointConfigurations"' in body or b'"TrafficDialPercentage"' in body)


def is_cloudwatch(method, path, body):
    return "/service/GraniteServiceVersion20100801/operation/" in path


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
    kind: str
    steps: list
    approval: tuple = None  # (answer, the step's weight it comes before)
    happenings: list = field(default_factory=list)
    restore_after: bool = False  # the operator runs `cluster-canary restore` once it ended
    failure_limit: int = 1
    provider: str = None  # a provider's check beside the alarm: `datadog` or `prometheus`
    hooks: dict = None  # point -> the hook's answer at each of its invocations (pass, fail, raise, slow)
    by_event: bool = False  # started by the CreateCluster event (the plan a profile of the stack)
    fleet: object = None  # a fleet_histories.FleetStory: the history is that fleet's instead
    targets: str = None  # the target health gate: when its target comes (TARGETS), or None: no gate
    metric: bool = False  # a metric threshold beside the alarm
    retire: bool = False  # the stable target group detached once promoted
    short_timeout: bool = False  # shift-weights runs SHORT_TIMEOUT seconds at most
    execution_timeout: int = None  # the rollout state machine's TimeoutSeconds, when cut short
    alb_judge: bool = False  # the built-in ALB checks beside the alarm
    freeze: bool = False  # the stack's freeze switch is turned at points of the run
    gradual: str = None  # rollback.gradual, the old cluster's target group one of GRADUAL
    compare: bool = False  # the comparison (analysis.compare) of the canary's ALB metrics with the stable's
    readiness: str = None  # the cluster readiness gate: when EKS's insight stops saying ERROR (READINESS)
    health: str = None  # the plan's awsHealth.onOpenIssue (HEALTH_MODES), or None: no AWS Health issue
    traffic: str = None  # NLB or ACCELERATOR: the plan's one target, instead of the ALB listener

    def __str__(self):
        if self.fleet:
            return f"seed {self.seed}: {self.fleet}"
        approval = f", approval before {self.approval[1]} %: {self.approval[0]}" if self.approval else ""
        after = "; the operator restores after the end" if self.restore_after else ""
        extra = "".join([
            f", failureLimit {self.failure_limit}" if self.failure_limit != 1 else "",
            f", a {self.provider.capitalize()} check" if self.provider else "",
            f", hooks {self.hooks}" if self.hooks else "",
            ", started by the CreateCluster event" if self.by_event else "",
            f", target health gate (targets {self.targets})" if self.targets else "",
            ", a metric threshold" if self.metric else "",
            ", retires the stable target group" if self.retire else "",
            f", shift-weights' Timeout {SHORT_TIMEOUT} s" if self.short_timeout else "",
            f", executions time out after {self.execution_timeout} s" if self.execution_timeout else "",
            ", the ALB judge" if self.alb_judge else "",
            f", freezes bounded to {FROZEN_BOUND} s" if self.freeze else "",
            f", a gradual rollback (the old cluster {self.gradual})" if self.gradual else "",
            ", the comparison" if self.compare else "",
            f", a cluster readiness gate (insight {self.readiness})" if self.readiness else "",
            f", AWS Health issues: {self.health} (bounded to {FROZEN_BOUND} s)" if self.health else "",
        ])
        kind = {NLB: "NLB", ACCELERATOR: "Global Accelerator"}.get(self.traffic, self.kind)
        return (f"seed {self.seed}: {kind}, steps {self.steps}{approval}{extra}; "
                + ("; ".join(map(str, self.happenings)) or "nothing happens") + after)


def stream(seed, name):
    """The draws of one feature of a seed's history, apart from every other's."""
    return random.Random(f"{seed}-{name}")


def generate(seed):
    rng = random.Random(seed)
    kind = rng.choice(KINDS)
    count = rng.randint(1, 3)
    steps = sorted(rng.sample(range(5, 96), count - 1)) + [100]
    approval = (rng.choice(ANSWERS), rng.choice(steps)) if rng.random() < 0.3 else None
    # `Restore` exits only in a rollback, `RestoreUnchanged` after a foreign change: what is
    # tied to them happens then, or not at all.
    points = ([("PrepareTraffic", 1)] + [("SetWeights", k) for k in range(1, count + 1)]
              + [("Evaluate", k) for k in range(1, count * CHECKS_PER_STEP + 1)]
              + [("Restore", 1), ("RestoreUnchanged", 1)])
    possible = [action for action, kinds in HAPPENINGS.items() if kind in kinds]
    happenings = []
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(possible)
        after, nth = rng.choice(points)
        value = ()
        if action == "foreign-write":
            green = rng.randint(1, 99)
            value = (100 - green, green)
        elif action == "foreign-apply":
            value = (rng.randint(1, 99),)  # the stable's weight
        elif action == "kube-fault":
            value = (rng.randint(1, 3), rng.choice((429, 500, 503)))
        elif action == "metrics-throttle":
            value = (rng.randint(1, 6),)
        happenings.append(Happening(action, after, nth, value))
    restore_after = rng.random() < 0.25
    other = stream(seed, "other-rollout")
    if other.random() < OTHER_ROLLOUT_SHARE:
        happenings.append(Happening("other-rollout", *other.choice(points)))
    history = History(seed, kind, steps, approval, happenings, restore_after)
    draw_later_features(history, points)
    return history


def draw_later_features(history, points):
    """The features added after the first generator, each from its own stream."""
    seed, happenings = history.seed, history.happenings

    def drawn(name, applies=True):
        r = stream(seed, name)
        return r if applies and r.random() < FEATURES[name] else None

    def some(r, actions, most):
        for _ in range(r.randint(1, most)):
            action = r.choice(actions)
            value = (r.randint(1, 99),) if action == "record-write" else (r.randint(1, 2),) if action == "route53-pending" else ()
            happenings.append(Happening(action, *r.choice(points), value))

    if drawn("route53-only", history.kind != GITOPS):
        history.kind = ROUTE53
        happenings[:] = [h for h in happenings if h.action not in HAPPENINGS or HAPPENINGS[h.action] == KINDS]
    if r := drawn("route53", history.kind in WITH_RECORD):
        some(r, ROUTE53_HAPPENINGS, 2)
    if r := drawn("provider"):
        history.provider = "prometheus" if drawn("provider-kind") else "datadog"
        history.failure_limit = r.choice((1, 1, 2, 3))
        some(r, PROVIDER_HAPPENINGS, 3)
    if r := drawn("hooks"):
        invocations = {"beforeTraffic": 1, "afterEachStep": len(history.steps), "afterPromotion": 1}
        history.hooks = {point: [("pass" if r.random() < 0.7 else r.choice(HOOK_ANSWERS)) for _ in range(invocations[point])]
                         for point in r.sample(HOOK_POINTS, r.randint(1, 3))}
    if r := drawn("deliveries"):
        happenings.append(Happening("safety-net-lost", *r.choice(points)))
        history.restore_after = True  # what the person the dead-letter queue pages does
    if r := drawn("deliveries-disabled"):
        happenings.append(Happening("safety-net-disabled", *r.choice(points)))
        history.restore_after = True  # the way back by hand, the one left
    if drawn("intake", history.kind in DIRECT):
        history.by_event = True
    if r := drawn("fleet"):
        history.fleet = fleet_histories.draw(r)
        history.fleet.two_regions = bool(drawn("fleet-regions"))
    if r := drawn("target-health", history.kind in WITH_LISTENER):
        history.targets = r.choice(TARGETS)
        if history.targets == "late":
            happenings.append(Happening("targets-registered", "PrepareTraffic", 1, (r.randint(1, 12),)))
    if r := drawn("metric-threshold"):
        history.metric = True
        some(r, METRIC_HAPPENINGS, 2)
    if drawn("retire", history.kind in WITH_LISTENER):
        history.retire = True
    if r := drawn("iam-reads"):
        happenings.append(Happening("iam-reads-refused", *r.choice(points)))
        if r.random() < 0.5:
            happenings.append(Happening("iam-reads-restored", *r.choice(points)))
    if r := drawn("alb-judge", history.kind in WITH_LISTENER):
        history.alb_judge = True
        some(r, ALB_HAPPENINGS, 2)
    if r := drawn("execution-timeout"):
        history.execution_timeout = r.randint(10, 35)
    if r := drawn("timeouts", history.kind in DIRECT):
        history.short_timeout = True
        for _ in range(r.randint(1, 2)):
            happenings.append(Happening("write-past-timeout", *r.choice(points)))
    if r := drawn("freeze"):
        history.freeze = True
        happenings.append(Happening("freeze", *r.choice(points)))
        if r.random() < 0.7:
            happenings.append(Happening("unfreeze", *r.choice(points)))
    if r := drawn("gradual"):
        history.gradual = r.choice(GRADUAL)
    if r := drawn("iam", history.kind in DIRECT):
        happenings.append(Happening("iam-refusal", *r.choice(points)))
        if r.random() < 0.5:
            happenings.append(Happening("iam-restored", *r.choice(points)))
        history.restore_after = True  # once the grant is back
    if r := drawn("compare", history.kind in WITH_LISTENER and not history.alb_judge):
        history.compare = True
        some(r, COMPARE_HAPPENINGS, 2)
    if r := drawn("readiness"):
        history.readiness = r.choice(READINESS)
        if history.readiness == "late":
            happenings.append(Happening("insight-fixed", "PrepareTraffic", 1, (r.randint(1, 6),)))
        if r.random() < 0.6:
            some(r, ADDON_HAPPENINGS, 2)
    if r := drawn("aws-health"):
        history.health = r.choice(HEALTH_MODES)
        happenings.append(Happening("health-open", *r.choice(points)))
        if r.random() < 0.7:
            happenings.append(Happening("health-close", *r.choice(points)))
    listener_bound = (history.fleet or history.by_event or history.targets or history.retire or history.alb_judge
                      or history.compare or history.gradual)
    if r := drawn("other-kinds", history.kind == ALB and not listener_bound):
        history.traffic = r.choice((NLB, ACCELERATOR))
        if history.traffic == ACCELERATOR:
            for _ in range(r.randint(1, 2)):
                action = r.choice(ACCELERATOR_HAPPENINGS)
                # Up to 6 refusals: past the router's 5 tries the step fails AwsTransient and the
                # state machine tries it again. Deploys of 4-20 s: every write waits them out.
                value = (r.randint(1, 6),) if action == "accelerator-busy" else (r.randint(4, 20),)
                happenings.append(Happening(action, *r.choice(points), value))


@dataclass
class Run:
    """What happened, for the invariants."""
    report: object = None
    baseline: dict = None
    promoted: dict = None
    done: list = field(default_factory=list)  # (happening, index of the history event it followed)
    foreign: dict = None  # the weights foreign writes left, by target (None: any, for a side not set)
    foreign_at: int = None  # ... the history index the last of them followed
    approval_requested: bool = False
    second: object = None  # the second rollout's report
    other: str = None  # the other-target rollout's execution ARN
    other_world: dict = None  # its cell (fleets.seed_cells): listener, target groups, alarm
    other_end: dict = None  # its DescribeExecution once ended
    other_weights: tuple = None  # its listener's (old, new) weights at the end
    # The first ran (RUNNING, as the API says) all through the second's Prepare, which must then
    # refuse it. (moto's engine shows a stop only once its worker ends, and dates it then.)
    second_overlapped: bool = False
    held: bool = False  # the safety net's delivery was held until the end
    restores_while_running: list = field(default_factory=list)  # (exit code, still running after it)
    restore_after: object = None  # (exit code, output, weights after it)
    history_events: list = field(default_factory=list)
    logs: str = ""
    # The world the checks read, over the execution's history: (index, what, its state), where
    # what is `alarm` (ALARM, OK), `provider` (fine, breach, nodata), `metric` (fine, breach),
    # `alb` (fine, moving: its window still holds both, breach), `outage` (error, slow, None),
    # `reads` (denied, None), `insight` (ERROR, None), `addon` (DEGRADED, None), `health` (open,
    # None: an AWS Health issue holds), `issue` (open, None: ... and fails the checks, `rollBack`).
    conditions: list = field(default_factory=list)
    hook_calls: list = field(default_factory=list)  # (point, step weight, weights, answer) of the first's hooks
    lost_deliveries: list = field(default_factory=list)  # the safety net's tries that failed
    dead_letters: list = field(default_factory=list)  # the executions the safety net's dead-letter queue names
    page_alarm: dict = None  # SafetyNetFailedAlarm as moto holds it
    dead_letter_queue: str = None  # the safety net's dead-letter queue's name
    denied_at: int = None  # history index from which the functions' traffic writes were refused
    denied_until: int = None  # ... and until which (None: the end of the run)
    net_disabled: bool = False  # the SafetyNet rule was disabled during the run
    ended_at: float = None  # when the execution ended (epoch seconds)
    safety_net_at: float = None  # when its safety net's answer came (epoch seconds)
    settle_seconds: int = 0  # the plan's rollback.settleSeconds (the safety net waits it)
    targets_at: int = None  # history index before which the canary target group got its target
    stable_attached: bool = None  # the listener still forwards to the stable target group at the end
    health_issue: str = None  # the AWS Health issue's event ARN, while it is open


def shaped(history, plan, prometheus_url=None):
    """`plan` (a manual plan or the stack's profile) with the history's targets, steps, checks,
    approval and hooks (a Prometheus check asks `prometheus_url`)."""
    if history.traffic == NLB:
        plan["trafficTargets"][0]["nlb"]["minStepSeconds"] = CHECK_INTERVAL * CHECKS_PER_STEP
    elif history.kind in DIRECT and not history.traffic:
        plan["trafficTargets"] = {ALB: plan["trafficTargets"][:1], ALB_ROUTE53: plan["trafficTargets"][:2],
                                  ROUTE53: plan["trafficTargets"][1:2]}[history.kind]
    plan["steps"] = [{"weight": w} for w in history.steps]
    plan["bake"] = {"seconds": CHECK_INTERVAL * CHECKS_PER_STEP, "checkIntervalSeconds": CHECK_INTERVAL}
    plan["analysis"] = {"alarms": {"names": [ALARM]}, "failureLimit": history.failure_limit}
    if history.provider:
        checks = (prometheus.analysis(prometheus_url, RATIO_LIMIT) if history.provider == "prometheus"
                  else datadog.analysis(DATADOG_LIMIT))
        plan["analysis"].update(checks, failureLimit=history.failure_limit, maxUnjudgedSeconds=MAX_UNJUDGED)
    if history.approval:
        answer, before = history.approval
        plan["approval"] = {"beforeSteps": [before],
                            "timeoutSeconds": APPROVAL_TIMEOUT if answer == "never" else 600}
    if history.hooks:
        plan["hooks"] = {point: [HOOK] for point in history.hooks}
        plan["hooks"]["timeoutSeconds"] = HOOK_TIMEOUT
    if history.targets:
        plan["targetHealth"] = {"minHealthyTargets": 1, "timeoutSeconds": TARGET_HEALTH_TIMEOUT, "intervalSeconds": 1}
    if history.metric:
        plan["analysis"]["metrics"] = [{
            "name": "canary latency", "namespace": "History", "metricName": "Latency",
            "dimensions": {"Cluster": "green"}, "stat": "Maximum", "periodSeconds": 1, "lookbackSeconds": 60,
            "reduce": "latest", "max": METRIC_LIMIT}]
    if history.retire:
        plan["retire"] = {"detachStableTargetGroups": True}
    if history.alb_judge:
        plan["analysis"]["alb"] = {"maxErrorRatePercent": ALB_MAX_ERROR_PERCENT, "minRequests": 10, "periodSeconds": 1,
                                   "lookbackSeconds": ALB_LOOKBACK, "latencyStatistic": "Maximum"}
    if history.freeze:
        plan["freeze"] = {"maxFrozenSeconds": FROZEN_BOUND}
    if history.gradual:
        plan.setdefault("rollback", {})["gradual"] = {"steps": [50, 0], "holdSeconds": GRADUAL_HOLD}
    if history.short_timeout:
        plan.setdefault("rollback", {})["settleSeconds"] = LATE_WRITE_SETTLE
    if history.readiness:
        plan["clusterReadiness"] = {"addons": [ADDON], "timeoutSeconds": READINESS_TIMEOUT, "intervalSeconds": 1}
    if history.health:
        plan["awsHealth"] = {"onOpenIssue": history.health}
        plan["freeze"] = {"maxFrozenSeconds": FROZEN_BOUND}
    if history.compare:
        plan["analysis"]["extendBakeSeconds"] = compare.EXTEND_BAKE_SECONDS
        plan["analysis"]["compare"] = {
            "periodSeconds": 1, "lookbackSeconds": compare.LOOKBACK_SECONDS, "minSamples": compare.MIN_SAMPLES,
            "metrics": compare.METRICS}
    return plan


class AlbTraffic(AlbMetrics):
    """The ALB metrics the built-in ALB checks read: requests, the canary's 5xx count
    (`errors`), and a response time. Setting `errors` changes the canary's from the next second
    on."""

    def __init__(self, sandbox):
        self.errors = 0
        super().__init__(sandbox, self.traffic)

    def traffic(self, _second):
        return {side: {"RequestCount": ALB_REQUESTS,
                       "HTTPCode_Target_5XX_Count": self.errors if side == "canary" else 0,
                       "TargetResponseTime": 0.1}
                for side in ("canary", "stable")}


class CompareTraffic(AlbMetrics):
    """The ALB metrics the comparison reads: sandbox/compare.py's healthy pattern (the canary as
    often above the stable as below, within 11 %), `latencies.canary_factor` and `.load` as there,
    the canary's 5xx per 100 requests (`errors`; the stable's COMPARE_ERRORS), and `canary_on`
    (False: the canary's target group publishes nothing)."""

    def __init__(self, sandbox):
        self.latencies = compare.Latencies()
        self.errors = COMPARE_ERRORS
        self.canary_on = True
        super().__init__(sandbox, self.traffic)

    def traffic(self, second):
        sides = self.latencies(second)
        sides["canary"]["HTTPCode_Target_5XX_Count"] = self.errors
        sides["stable"]["HTTPCode_Target_5XX_Count"] = COMPARE_ERRORS
        if not self.canary_on:
            sides["canary"] = {}
        return sides


def put_latency(sandbox, value):
    """The canary's latency datapoint, now (a high-resolution metric: the threshold reads the
    latest one)."""
    sandbox.client("cloudwatch").put_metric_data(Namespace="History", MetricData=[{
        "MetricName": "Latency", "Dimensions": [{"Name": "Cluster", "Value": "green"}], "Value": value,
        "Timestamp": datetime.now(timezone.utc), "StorageResolution": 1}])


def register_target(sandbox):
    """The new cluster's pod in its target group (moto reports a registered target healthy)."""
    sandbox.client("elbv2").register_targets(TargetGroupArn=sandbox.world.green_tg,
                                             Targets=[{"Id": "10.0.1.5", "Port": 8080}])


def cut_template(directory, function_timeout=None, execution_timeout=None):
    """template.yaml with shift-weights' Timeout cut to `function_timeout` (its own `Timeout:
    300`, the first after its CodeUri), beside a copy of the state machines it names, the rollout
    machine's TimeoutSeconds cut to `execution_timeout`."""
    text = (REPO / "template.yaml").read_text()
    if function_timeout:
        shift_weights = "      CodeUri: functions/shift-weights\n"
        head, tail = text.split(shift_weights, 1)
        text = head + shift_weights + tail.replace("      Timeout: 300\n", f"      Timeout: {function_timeout}\n", 1)
    cut = Path(directory) / "template.yaml"
    cut.write_text(text)
    shutil.copytree(REPO / "statemachine", Path(directory) / "statemachine")
    if execution_timeout:
        machine = Path(directory) / "statemachine" / "rollout.asl.json"
        definition = json.loads(machine.read_text())
        definition["TimeoutSeconds"] = execution_timeout
        machine.write_text(json.dumps(definition, indent=2))
    return cut


def is_traffic_write(method, path, body):
    return (is_modify_listener(method, path, body) or is_route53_change(method, path, body)
            or is_endpoint_group_update(method, path, body))


def held_past_timeout():
    """A fault's predicate that holds the next traffic write past shift-weights' short Timeout,
    then lets it through (it never answers itself: the request is forwarded)."""
    left = [1]
    lock = threading.Lock()

    def predicate(method, path, body):
        if is_traffic_write(method, path, body):
            with lock:
                hold, left[0] = left[0] > 0, 0
            if hold:
                time.sleep(SHORT_TIMEOUT + 2)
        return False
    return predicate


def the_profile(history, prometheus_url):
    """The stack's profiles, when the CreateCluster event starts the history's rollout."""
    def profiles(world):
        return {"web": shaped(history, json.loads(json.dumps(world.profiles["web"])), prometheus_url)}
    return profiles if history.by_event else None


def play_hook(sandbox, history, record, first):
    """The hook function, played by the front door: for the history's rollout (`first()` its
    execution ARN), each point's n-th invocation answers as the history says (a slow one past
    the plan's hook timeout); any other rollout's hooks pass."""
    counts = Counter()

    def predicate(method, path, body):
        match = INVOKE.match(path)
        if not match or match.group(1) != HOOK:
            return False
        payload = json.loads(body)
        point, answer = payload["hook"], "pass"
        if payload.get("executionArn") == first():
            counts[point] += 1
            script = history.hooks.get(point, [])
            answer = script[min(counts[point], len(script)) - 1] if script else "pass"
            record.hook_calls.append((point, (payload.get("step") or {}).get("weight"), payload.get("weights"), answer))
        if answer == "slow":
            time.sleep(HOOK_TIMEOUT + 3)
        fault[2] = ((200, [("Content-Type", "application/json"), ("X-Amz-Function-Error", "Unhandled")],
                     json.dumps({"errorType": "RuntimeError", "errorMessage": "history: the hook raised"}).encode())
                    if answer == "raise" else
                    (200, [("Content-Type", "application/json")],
                     json.dumps({"status": "fail", "reason": "history: the hook says no"} if answer == "fail"
                                else {"status": "pass"}).encode()))
        return True

    fault = [predicate, 1_000_000, None]
    sandbox.front.faults.append(fault)


def is_safety_net_try(sandbox, execution_arn):
    """A delivery of the SafetyNet rule for `execution_arn` (shift-weights' `safetyNet`)."""
    function = sandbox.function("shift-weights")

    def predicate(method, path, body):
        match = INVOKE.match(path)
        return (bool(match) and match.group(1).split(":")[-1] == function and b'"safetyNet"' in body
                and execution_arn.encode() in body)
    return predicate


def function_error():
    """An invocation that ran and failed (the function's error), as Lambda answers it."""
    return (200, [("Content-Type", "application/json"), ("X-Amz-Function-Error", "Unhandled")],
            json.dumps({"errorType": "Runtime.ExitError", "errorMessage": "history: the safety net crashed"}).encode())


def is_route53_change(method, path, body):
    return method == "POST" and "/2013-04-01/hostedzone/" in path and path.endswith("/rrset")


def pending_change(times):
    """GetChange answers PENDING `times` times (the change's id read from its path)."""
    def predicate(method, path, body):
        if not (method == "GET" and path.startswith("/2013-04-01/change/")):
            return False
        fault[2] = route53_pending(path.rsplit("/", 1)[-1])
        return True
    fault = [predicate, times, None]
    return fault


# What a denial of the functions' traffic writes (someone narrowed the role) says.
DENY_WRITES = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Action": ["elasticloadbalancing:ModifyListener", "route53:ChangeResourceRecordSets",
                                 "globalaccelerator:UpdateEndpointGroup"],
    "Resource": "*"}]}
DENY_POLICY = "history-denies-traffic-writes"
# ... and of the checks' reads.
DENY_READS = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Action": ["cloudwatch:DescribeAlarms", "cloudwatch:GetMetricData"], "Resource": "*"}]}
DENY_READS_POLICY = "history-denies-check-reads"


def run(history, out=print):
    """Runs one history on a fresh sandbox; the Run (a fleet's: the FleetRun)."""
    if history.fleet:
        with Sandbox(log=out) as sandbox:
            return fleet_histories.run(history.seed, history.fleet, sandbox, out)
    with contextlib.ExitStack() as controllers:
        template = REPO / "template.yaml"
        if history.short_timeout or history.execution_timeout:
            template = cut_template(controllers.enter_context(tempfile.TemporaryDirectory()),
                                    SHORT_TIMEOUT if history.short_timeout else None, history.execution_timeout)
        provider = None
        if history.provider == "prometheus":
            metrics = controllers.enter_context(prometheus.Metrics({"green": RATIO_FINE}, log=out))
            provider = Provider(history.provider, metrics, controllers.enter_context(
                prometheus.Outage(metrics.url, seconds=PROVIDER_TIMEOUT + 5)))
        sandbox = controllers.enter_context(Sandbox(
            log=out, profiles=the_profile(history, provider and provider.outage.url), template=template))
        if history.provider == "datadog":
            provider = Provider(history.provider, sandbox)
        return run_on(history, sandbox, controllers, provider, out)


class Provider:
    """The history's metrics provider: Datadog's API double, or a real Prometheus behind a proxy
    that plays its outages."""

    def __init__(self, kind, source, outage=None):
        """`source`: the sandbox (Datadog's double is its) or the prometheus.Metrics;
        `outage`: the prometheus.Outage proxy in front of the latter."""
        self.kind, self.source, self.outage = kind, source, outage

    def set(self, value):
        """The canary's value: `fine`, `breach`, or `nodata`."""
        if self.kind == "prometheus":
            self.source.set("green", {"fine": RATIO_FINE, "breach": RATIO_BREACH, "nodata": None}[value])
        else:
            datadog.set_errors(self.source, "green", {"fine": DATADOG_FINE, "breach": DATADOG_BREACH, "nodata": None}[value])

    def out(self, answer):
        """Its query endpoint from now on: `error`, `slow` (past the request timeout), or None."""
        if self.kind == "prometheus":
            self.outage.answer = answer
        else:
            datadog.outage(self.source, answer, seconds=PROVIDER_TIMEOUT + 5)


def run_on(history, sandbox, controllers, provider, out):
    """The history on a sandbox up."""
    if history.kind == GITOPS:
        plan, blue_dns, green_dns = gitops.gitops_world(sandbox)
        controllers.enter_context(blue_dns)
        controllers.enter_context(green_dns)
        targets = [sandbox.world.record]
    elif history.traffic:
        seed_target, plan_for, _ = scenarios.ONE_TARGET_SCENARIOS[history.traffic]
        seed_target(sandbox.client, sandbox.world)
        plan = plan_for(sandbox)
        targets = [TRAFFIC_KEYS[history.traffic]]
    else:
        plan = scenarios.manual_plan(sandbox)
        targets = {ALB: [LISTENER], ALB_ROUTE53: [LISTENER, sandbox.world.record],
                   ROUTE53: [sandbox.world.record]}[history.kind]
    scenarios.create_green(sandbox)
    if any(h.action == "other-rollout" for h in history.happenings):
        other_world = fleets.seed_cells(sandbox, [(OTHER, REGION)])
        fleet = fleets.fleet_plan(other_world)
        other_plan = {**fleet["template"], **fleet["cells"][0]["values"]}
    plan = shaped(history, plan, provider and provider.outage and provider.outage.url)
    if history.provider == "datadog":
        provider.set("fine")
    if history.metric:
        put_latency(sandbox, METRIC_FINE)
    alb = controllers.enter_context(AlbTraffic(sandbox)) if history.alb_judge else None
    traffic = controllers.enter_context(CompareTraffic(sandbox)) if history.compare else None
    if traffic:
        # The first check finds a window's worth of samples.
        time.sleep(compare.MIN_SAMPLES)

    def weights():
        if history.kind == GITOPS:
            # What the annotations say reaches Route 53 through a sync and an ExternalDNS pass.
            time.sleep(sandbox.sync_delay + 2 * blue_dns.interval + 0.5)
        return {k: v for k, v in scenarios.read_weights(sandbox).items() if k in targets}

    def restore_by_hand():
        done = sandbox.cli("restore", arn, "--yes", env=sandbox.management_env())
        out(done.stdout + done.stderr)
        return done

    record = Run()
    if history.targets == "ready":
        register_target(sandbox)
        record.targets_at = 0
    if history.readiness:
        sandbox.client("eks").create_addon(clusterName="green", addonName=ADDON)
        if history.readiness != "ready":
            sandbox.set_eks("green", "insights", {**DEPRECATED_APIS, "insightStatus": {
                "status": "ERROR", "reason": "Deprecated API usage detected within last 30 days"}})
            record.conditions.append((0, "insight", "ERROR", time.time()))
    if history.gradual == "healthy":
        sandbox.client("elbv2").register_targets(TargetGroupArn=sandbox.world.blue_tg,
                                                 Targets=[{"Id": "10.0.1.9", "Port": 8080}])
    iam = sandbox.client("iam")
    shift_weights_role, evaluate_alarms_role = (sandbox.client("lambda").get_function_configuration(
        FunctionName=sandbox.function(binary))["Role"].rsplit("/", 1)[-1] for binary in ("shift-weights", "evaluate-alarms"))
    if history.hooks:
        play_hook(sandbox, history, record, lambda: arn)
    record.baseline = weights()
    record.promoted = {k: (0, 100) for k in targets}
    sfn = sandbox.client("stepfunctions")
    exits = Counter()
    holding = contextlib.ExitStack()  # the safety net's delivery, once held
    arn = None

    def history_length():
        return len(sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"])

    def written_by_hand(target, weights):
        """A foreign writer's weights for `target` (each target's last), and the history index
        once the last such write landed (a throttled writer's retries take seconds: a look
        before then may have read the weights before it)."""
        record.foreign = {**(record.foreign or {}), target: weights}
        record.foreign_at = history_length()

    def happen(happening):
        action, value = happening.action, happening.value
        out(f">>> {happening}")
        index = history_length()
        if action == "alarm":
            sandbox.alarm_events.set_state(ALARM, "ALARM", "Threshold Crossed: history")
            record.conditions.append((index, "alarm", "ALARM", time.time()))
        elif action == "alarm-clears":
            sandbox.alarm_events.set_state(ALARM, "OK", "Threshold no longer crossed")
            record.conditions.append((index, "alarm", "OK", time.time()))
        elif action in ("provider-breach", "provider-recovers", "provider-nodata"):
            said = {"provider-breach": "breach", "provider-recovers": "fine", "provider-nodata": "nodata"}[action]
            provider.set(said)
            record.conditions.append((index, "provider", said, time.time()))
        elif action in ("provider-down", "provider-slow", "provider-up"):
            answer = {"provider-down": "error", "provider-slow": "slow", "provider-up": None}[action]
            provider.out(answer)
            record.conditions.append((index, "outage", answer, time.time()))
        elif action == "record-write":
            green = value[0]
            scenarios.move_record_by_hand(sandbox, 100 - green, green)
            written_by_hand(sandbox.world.record, (100 - green, green))
        elif action == "route53-throttle":
            sandbox.front.faults.append([is_route53_change, 2, route53_throttled()])
        elif action == "route53-pending":
            sandbox.front.faults.append(pending_change(value[0]))
        elif action == "safety-net-lost" and not record.lost_deliveries:
            # Every try of the next delivery (Lambda's two retries included) fails.
            record.lost_deliveries = [is_safety_net_try(sandbox, arn), 3, function_error()]
            sandbox.front.faults.append(record.lost_deliveries)
        elif action in ALB_HAPPENINGS:
            # The judge reads a window: the change is all it sees ALB_LOOKBACK (and a put) later.
            said = "breach" if action == "alb-breach" else "fine"
            alb.errors = ALB_ERRORS_BREACH if said == "breach" else 0
            record.conditions.append((index, "alb", "moving", time.time()))
            changes = sum(1 for c in record.conditions if c[1] == "alb")

            def settled():
                time.sleep(ALB_LOOKBACK + 2)
                if sum(1 for c in record.conditions if c[1] == "alb") == changes:  # no newer change
                    record.conditions.append((history_length(), "alb", said, time.time()))
            threading.Thread(target=settled, daemon=True).start()
        elif action in COMPARE_HAPPENINGS:
            if action == "compare-spike":
                traffic.latencies.load = 3.0  # both clusters alike: no regression
            else:
                regressed = action in ("compare-regression", "compare-errors")
                traffic.latencies.canary_factor = 1.5 if action == "compare-regression" else 1.0
                traffic.errors = COMPARE_ERRORS_REGRESSED if action == "compare-errors" else COMPARE_ERRORS
                traffic.canary_on = action != "compare-nodata"
                said = "regressed" if regressed else "nodata" if action == "compare-nodata" else "fine"
                if said != "nodata":
                    record.conditions.append((index, "compare", said, time.time()))
                else:
                    # The window still holds the periods before: a check finds too few only once
                    # fewer than minSamples are left in it.
                    record.conditions.append((index, "compare", "draining", time.time()))
                    changes = sum(1 for c in record.conditions if c[1] == "compare")

                    def drained():
                        time.sleep(compare.LOOKBACK_SECONDS - compare.MIN_SAMPLES + 2)
                        if sum(1 for c in record.conditions if c[1] == "compare") == changes:  # no newer change
                            record.conditions.append((history_length(), "compare", "nodata", time.time()))
                    threading.Thread(target=drained, daemon=True).start()
        elif action in METRIC_HAPPENINGS:
            put_latency(sandbox, METRIC_BREACH if action == "metric-breach" else METRIC_FINE)
            record.conditions.append((index, "metric", "breach" if action == "metric-breach" else "fine", time.time()))
        elif action == "targets-registered":
            def register_later():
                time.sleep(value[0])
                before = history_length()
                register_target(sandbox)
                record.targets_at = before
            threading.Thread(target=register_later, daemon=True).start()
        elif action == "insight-fixed":
            def fixed_later():
                time.sleep(value[0])
                before = history_length()
                sandbox.set_eks("green", "insights", {**DEPRECATED_APIS, "insightStatus": {
                    "status": "PASSING", "reason": "No deprecated API usage detected"}})
                record.conditions.append((before, "insight", None, time.time()))
            threading.Thread(target=fixed_later, daemon=True).start()
        elif action in ADDON_HAPPENINGS:
            # Blamed only where it is certain: DEGRADED from the history's length once EKS says
            # it, ACTIVE from its length before (a look between may have read either).
            degraded = action == "addon-degraded"
            before = history_length()
            sandbox.set_eks("green", f"addons/{ADDON}/health", {"status": "DEGRADED", "issues": [
                {"code": "InsufficientNumberOfReplicas", "message": "0 of 2 replicas are available"}]}
                if degraded else {"status": "ACTIVE", "issues": []})
            record.conditions.append((history_length() if degraded else before, "addon",
                                      "DEGRADED" if degraded else None, time.time()))
        elif action == "health-open" and record.health_issue is None:
            # Open from its record (the stack's answer to its event): a decision after it holds.
            put_at = time.time()
            record.health_issue = sandbox.health_events.put("EKS", REGION, description="history: API errors")
            sandbox.health_events.answered(record.health_issue, "open")
            recorded = history_length()
            record.conditions.append((recorded, "health", "open", time.time()))
            if history.health == "rollBack":
                record.conditions.append((recorded, "issue", "open", put_at))
        elif action == "health-close" and record.health_issue is not None:
            asked, before = time.time(), history_length()
            sandbox.health_events.put("EKS", REGION, status="closed", event_arn=record.health_issue)
            record.health_issue = None
            record.conditions.append((before, "health", None, asked))
            if history.health == "rollBack":
                record.conditions.append((before, "issue", None, asked))
        elif action == "write-past-timeout":
            # The next traffic write is held past the function's Timeout, then goes on: it
            # lands after Lambda ended the function that sent it.
            sandbox.front.faults.append([held_past_timeout(), 1, None])
        elif action == "safety-net-disabled":
            sandbox.client("events").disable_rule(Name=sandbox.safety_net.rule)
            record.net_disabled = True
        elif action == "iam-refusal" and record.denied_at is None:
            iam.put_role_policy(RoleName=shift_weights_role, PolicyName=DENY_POLICY, PolicyDocument=json.dumps(DENY_WRITES))
            record.denied_at = index
        elif action == "iam-restored" and record.denied_at is not None and record.denied_until is None:
            give_the_grant_back()
        elif action in ("freeze", "unfreeze"):
            # On from when the write is done; off from before it is asked (a decision between
            # the two may have read either): the checker never blames a read it cannot date.
            asked = time.time()
            turned = sandbox.cli(*(("freeze", "--reason", "history: an incident") if action == "freeze" else ("unfreeze",)))
            out(turned.stdout + turned.stderr)
            on = action == "freeze"
            record.conditions.append((index, "freeze", "on" if on else None, time.time() if on else asked))
        elif action == "iam-reads-refused":
            iam.put_role_policy(RoleName=evaluate_alarms_role, PolicyName=DENY_READS_POLICY,
                                PolicyDocument=json.dumps(DENY_READS))
            record.conditions.append((index, "reads", "denied", time.time()))
        elif action == "iam-reads-restored":
            with contextlib.suppress(iam.exceptions.NoSuchEntityException):
                iam.delete_role_policy(RoleName=evaluate_alarms_role, PolicyName=DENY_READS_POLICY)
            record.conditions.append((index, "reads", None, time.time()))
        elif action == "foreign-write":
            blue, green = value
            move = {NLB: scenarios.move_nlb_by_hand, ACCELERATOR: scenarios.move_accelerator_by_hand}.get(
                history.traffic, scenarios.move_listener_by_hand)
            move(sandbox, blue, green)
            written_by_hand(targets[0], (blue, green))
        elif action == "foreign-apply":
            gitops.apply_stable_weight_as(sandbox, "kubectl", value[0])
            written_by_hand(sandbox.world.record, (value[0], None))
        elif action == "abort":
            sfn.stop_execution(executionArn=arn, cause="history: the operator stops it")
        elif action == "late-safety-net" and not record.held:
            holding.enter_context(sandbox.safety_net.held())
            record.held = True
        elif action == "throttle" and history.traffic == ACCELERATOR:
            sandbox.front.faults.append([is_endpoint_group_update, 2, json_error("ThrottlingException", "Rate exceeded")])
        elif action == "throttle":
            sandbox.front.faults.append([is_modify_listener, 2, query_throttled()])
        elif action == "accelerator-busy":
            sandbox.front.faults.append([is_endpoint_group_update, value[0], json_error(
                "TransactionInProgressException",
                "There's already a transaction in progress. Another transaction can't be processed.")])
        elif action == "accelerator-stuck":
            sandbox.set_accelerator({"deploySeconds": value[0]})
        elif action == "kube-fault":
            gitops.fail_next(sandbox, "PATCH", "/secrets/", *value)
        elif action == "metrics-throttle":
            sandbox.front.faults.append([is_cloudwatch, value[0], cloudwatch_throttled()])
        elif action == "lambda-throttle":
            sandbox.front.faults.append([is_invocation, 1, lambda_throttled()])
        elif action == "lambda-5xx":
            sandbox.front.faults.append([is_invocation, 1, lambda_service_exception()])
        elif action == "reply-lost":
            sandbox.front.lost.append([is_invocation, 1, lambda_service_exception()])
        elif action == "second-rollout" and record.second is None:
            second = scenarios.start_manual(sandbox, plan, f"second-{history.seed}")
            record.second = unless_held_by_the_freeze(
                sfn, second, lambda timeout: scenarios.watch(sandbox, second, out=out, await_safety_net=False,
                                                             timeout=timeout), out)
        elif action == "other-rollout" and record.other is None:
            record.other = scenarios.start_manual(sandbox, other_plan, f"other-{history.seed}")
            record.other_world = other_world[OTHER]
        elif action == "operator-restore":
            done = restore_by_hand()
            running = sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
            record.restores_while_running.append((done.returncode, running))
        record.done.append((happening, index))

    def on_event(name, state):
        exits[name] += 1
        for happening in history.happenings:
            if happening.after == name and happening.nth == exits[name]:
                happen(happening)

    def give_the_grant_back():
        iam.delete_role_policy(RoleName=shift_weights_role, PolicyName=DENY_POLICY)
        record.denied_until = history_length()

    def on_notification(detail_type, detail):
        if detail_type == "Rollback Failing" and record.denied_at is not None and record.denied_until is None:
            out(">>> paged by Rollback Failing: the grant is given back")
            give_the_grant_back()
        if detail_type != "Approval Requested" or record.approval_requested:
            return
        record.approval_requested = True
        answer = history.approval[0]
        if answer == "approve":
            out(sandbox.cli("approve", arn).stderr)
        elif answer == "reject":
            out(sandbox.cli("reject", arn, "--reason", "history: not now").stderr)

    if history.by_event:
        arn = scenarios.put_create_cluster_event(sandbox)
    else:
        arn = scenarios.start_manual(sandbox, plan, f"history-{history.seed}")
    with holding:
        report = scenarios.watch(sandbox, arn, on_event=on_event, on_notification=on_notification,
                                 out=out, await_safety_net=False)
    if record.net_disabled:
        # No delivery: the sweep is the safety net. What it put back, once every sweep that
        # would act did; then the traffic and the metrics as they are after it.
        ended = sfn.describe_execution(executionArn=arn).get("stopDate")
        if sandbox.safety_net.matches(report.status) and ended is not None:
            sandbox.sweep.settle(ended.timestamp())
            swept = sandbox.sweep.swept(arn)
            report.safety_net = swept[0] if swept else None
            out("safety net: its rule is disabled; the sweep " + (swept[0]["reason"] if swept else "put nothing back"))
            report.weights = scenarios.read_weights(sandbox)
            report.metrics = scenarios.emitted_metrics(sandbox, f"{plan['cluster']['region']}/{plan['cluster']['name']}")
        else:
            report.safety_net = None
            out("safety net: none (its rule is disabled)")
    elif sandbox.safety_net.matches(report.status):
        try:
            report.safety_net = sandbox.safety_net.answer_for(arn)
            record.safety_net_at = sandbox.safety_net.answered_at.get(arn)
            out(f"safety net{' (late)' if record.held else ''}: {report.safety_net['reason']}")
        except RuntimeError as failed:  # every try failed: its record went to the dead-letter queue
            out(f"safety net: {failed}")
            report.safety_net = None
    record.dead_letters, record.page_alarm, record.dead_letter_queue = dead_letters(sandbox)
    stopped = sfn.describe_execution(executionArn=arn).get("stopDate")
    record.ended_at = stopped.timestamp() if stopped else None
    # canary_core::plan::DEFAULT_SETTLE_SECONDS when the plan gives none.
    record.settle_seconds = plan.get("rollback", {}).get("settleSeconds", 120)
    if record.other is not None:
        record.other_end = unless_held_by_the_freeze(
            sfn, record.other, lambda timeout: fleets.wait_for_end(sandbox, record.other, timeout=timeout), out)
        if sandbox.safety_net.matches(record.other_end["status"]):
            # Its safety net (its rule off: the sweep) has its turn first: its answer, then the
            # sweeps. Seeds 9223 and 12158 waited for nothing (a TIMED_OUT end had no stopDate
            # before moto patch 23) and read the listener before the safety net's write.
            if not record.net_disabled:
                try:
                    sandbox.safety_net.answer_for(record.other, timeout=120)
                except (TimeoutError, RuntimeError) as failed:  # the weights below say what it left
                    out(f"safety net, for the other rollout: {failed}")
            sandbox.sweep.settle(record.other_end["stopDate"].timestamp())
        record.other_weights = fleets.cell_weights(sandbox, {OTHER: record.other_world})[OTHER]
    if record.second is not None:
        first_ended = sfn.describe_execution(executionArn=arn).get("stopDate")
        second = sfn.get_execution_history(executionArn=record.second.execution_arn, maxResults=1000)["events"]
        record.second_overlapped = first_ended is None or first_ended > prepare_answered(second)
    # What a settled world holds: the safety net has answered, the look after it is done.
    report.weights = weights()
    record.report = report
    if history.kind in WITH_LISTENER:
        listener = sandbox.client("elbv2").describe_listeners(ListenerArns=[sandbox.world.listener])["Listeners"][0]
        record.stable_attached = sandbox.world.blue_tg in {
            tg["TargetGroupArn"] for action in listener["DefaultActions"]
            for tg in action.get("ForwardConfig", {}).get("TargetGroups", [])}
    if record.denied_at is not None and record.denied_until is None:
        # The person paged gives the functions their grant back, then restores.
        give_the_grant_back()
    if history.restore_after:
        # A fault meant for the functions may still be queued: the operator runs it again
        # (a refusal is refused again, and writes nothing).
        for _ in range(3):
            done = restore_by_hand()
            if done.returncode == 0:
                break
        record.restore_after = (done.returncode, done.stdout + done.stderr, weights())
    paged = sfn.get_execution_history(executionArn=arn, maxResults=1000)
    record.history_events = paged["events"]
    record.logs = "".join(p.read_text(errors="replace") for p in Path(sandbox.run_dir).glob("*.log"))
    return record


def dead_letters(sandbox):
    """The executions named by the messages in the safety net's dead-letter queue ("sweep" for a
    failed sweep's), the alarm that
    pages on it (SafetyNetFailedAlarm, as moto holds it; moto does not evaluate alarms) and the
    queue's name."""
    sqs, named = sandbox.client("sqs"), []
    queue = sandbox.stack.outputs["SafetyNetDeadLetterQueueUrl"]
    while True:
        messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, VisibilityTimeout=600).get("Messages", [])
        if not messages:
            break
        for message in messages:
            document = json.loads(message["Body"])
            payload = document.get("requestPayload") or {}
            named.append("sweep" if payload.get("operation") == "sweep"
                         else payload.get("executionArn") or payload.get("fleetExecution"))
    alarms = sandbox.client("cloudwatch").describe_alarms()["MetricAlarms"]
    name = sandbox.stack.resources.get("SafetyNetFailedAlarm")
    return named, next((a for a in alarms if a["AlarmName"] == name), None), queue.rsplit("/", 1)[-1]


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
    if report.largest_state >= STATE_BUDGET:
        found.append(f"a state of {report.largest_state} bytes at {report.largest_state_at}, over {STATE_BUDGET}")
    for detail_type, detail in report.events:
        try:
            jsonschema.validate(detail, scenarios.event_schema(detail_type))
        except jsonschema.ValidationError as e:
            found.append(f"event {detail_type} breaks its schema: {e.message}")
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


def unless_held_by_the_freeze(sfn, execution_arn, wait, out):
    """`wait(timeout)` for another rollout of the run to end. One started while the freeze switch
    was on waits at its gate, as documented, up to its plan's bound (an hour by default; seed 9009):
    "held by the freeze" is its end here. It moved nothing; stopped, its safety net leaves it
    alone."""
    try:
        return wait(300)
    except TimeoutError:
        if not held_by_the_freeze(sfn, execution_arn):
            raise
    sfn.stop_execution(executionArn=execution_arn, cause="history: held by the freeze past the wait")
    out(f"{execution_arn.rsplit(':', 1)[-1]}: held by the freeze past the wait; stopped")
    return wait(60)


def held_by_the_freeze(sfn, execution_arn):
    """Whether the running execution waits at its freeze gate (before its first step)."""
    if sfn.describe_execution(executionArn=execution_arn)["status"] != "RUNNING":
        return False
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    entered_states = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
    return bool(entered_states) and entered_states[-1] in ("FreezeGate", "Frozen?", "WaitWhileFrozen")


def restored_at(record):
    restored = [e["timestamp"].timestamp() for e in record.history_events if restored_by(e)]
    return restored[0] if restored else None


HOLDS = {"freeze": "the freeze switch was on", "health": "an AWS Health issue of the Region was open"}


def moved_while_frozen(record):
    """Steps set by a decision made while a freeze held: the bake's last check (the last
    `Evaluate` before the step's `SetWeights`) or the gate before the first step, entered after
    the switch was turned on (or an AWS Health issue recorded) and before it was turned off (or
    the issue's close put). A step a person approved is theirs (docs/operations.md, Change
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
    or CoreDNS DEGRADED); weights moved by a rollout whose gate failed."""
    events, report = record.history_events, record.report
    sets = [i for i, e in enumerate(events) if entered(e, "SetWeights")]
    if report.error == "ClusterNotHealthy" and (sets or report.weights != record.baseline):
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
    """Seconds from an outage of the provider (one that lasted to the end) to the end of the
    rollback it caused (`MetricsProviderUnavailable`); None otherwise."""
    outages = [(value, when) for _, what, value, when in record.conditions if what == "outage"]
    restored = restored_at(record)
    if record.report.error != "MetricsProviderUnavailable" or not outages or not outages[-1][0] or restored is None:
        return None
    return restored - outages[-1][1]


def condition_at(record, index):
    """What the checks' world was at the execution's history event `index`."""
    state = {"alarm": "OK", "provider": "fine", "metric": "fine", "alb": "fine", "outage": None, "reads": None,
             "compare": "fine", "insight": None, "addon": None, "health": None, "issue": None}
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
        ([f"AWS Health ({history.health})"] if history.health else [])


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


if __name__ == "__main__":
    main()
