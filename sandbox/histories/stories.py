"""What a history is, drawn from its seed alone: its plan, its features and its happenings
(`generate(seed)`), and the constants the runs and the promises share.

The happenings a story draws:

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
  budget-spent       the plan's SLO spends its error budget (BREACHED; `budget-back`: OK again):
                     the rollout holds at its gate or its bake's end, as under a freeze
  budget-burn        the new cluster's 5xx become a fifth of its requests, from then on (a plan
                     whose errorBudget judges the new cluster: its share and its fast burn)
  accelerator-busy   Global Accelerator refuses the next 1-6 UpdateEndpointGroup calls with
                     TransactionInProgressException (`other-kinds`)
  accelerator-stuck  the accelerator reads IN_PROGRESS 4-20 s after each write from then on

  test-rule-refused  shift-weights' role is denied CreateRule: the test-traffic stage cannot open
                     (a `test-traffic` history)

  compare-regression the canary answers 1.5 times slower than the stable, beyond the comparison's
                     allowed band of 1.2 (`compare-errors`: ten times the stable's 5xx rate;
                     `compare-nodata`: the canary's target group publishes nothing;
                     `compare-fine`: back to healthy; `compare-spike`: both clusters 3 times
                     slower at once, no regression)

and, without a happening of its own, `other-kinds`: a plain ALB plan (no gate, judge, comparison,
gradual rollback, retire or profile that names the ALB's target groups) shifts an NLB's TCP
listener (its `minStepSeconds` the bake) or a Global Accelerator's endpoint group (blue's and
green's load balancers weighted in it) instead, made for the history (`throttle` then throttles
the accelerator's writes), and `vpc-lattice` (a stream of its own) a VPC Lattice service's listener
(`throttle`: its UpdateListener, past the SDK's retries); `readiness`: the plan's cluster readiness gate (CoreDNS named),
EKS's insight in ERROR at the start or not, fixed later or never; `aws-health`: the plan's
`awsHealth.onOpenIssue` (hold, or rollBack), one hold bounded to a minute; `gradual`: the plan's
rollback steps back ([50, 0], a short hold), the old cluster's target group healthy (its pods
registered) or not (none); and `compare`: the plan's `analysis.compare` (p99 with `allowedIncrease`
1.2 and the 5xx rate, 1 s periods over 20 s) of the canary's ALB metrics against the stable's, put
every second in sandbox/compare.py's healthy pattern (as often above as below, within 11 %);
`test-traffic`: the plan's testTraffic stage (a header rule on the listener, the new cluster's own
record for a Route 53 target, a Synthetics canary whose run passes, fails or never comes), and
sometimes the operator's stop during it.
"""

import random
from dataclasses import dataclass, field

from .. import fleet_histories


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
    "error-budget": 0.15,  # the plan's errorBudget: its SLO's budget spent at the start or at a point, back or not
    "budget-judged": 0.5,  # of those with a listener, no ALB judge and no comparison: the share and the fast burn on
    "other-kinds": 0.3,  # of the plain ALB plans: an NLB listener or a Global Accelerator endpoint group instead
    # Of the plain ALB plans left: a VPC Lattice listener instead (a stream of its own, so that
    # the other kinds' seeds replay as they did).
    "vpc-lattice": 0.15,
    # Of the plans with the listener, written by hand: a test-traffic stage before the first step
    # (its stream named so that the stories pinned before it replay as they were).
    "test-traffic-before-steps": 0.15,
}


# The stage's Synthetics canary's run in a `test-traffic` history, and how long the stage lasts.
TEST_RUNS = ("passed", "failed", "none")
TEST_STAGE_SECONDS = 3


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


# The plan's SLO's budget when the rollout starts, in an `error-budget` history; spent or back at
# points of it. One hold bounded to FROZEN_BOUND, as a freeze's.
BUDGET_AT_START = ("spent", "fine")
BUDGET_HAPPENINGS = ("budget-spent", "budget-back")


# A new cluster burning its budget (`budget-burn`: ALB_ERRORS_BREACH 5xx of ALB_REQUESTS a second)
# this long before a rollout's last check, with traffic, has been shown by then: the rollout's
# share of the SLO (2 % of a budget of 10,000 requests, or of about 1,060 once a spent budget is
# back) is spent in at most 10 s of its 5xx; a put's second, a check's interval and its reads on top.
BUDGET_BURN_SHOWN_SECONDS = 20


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
NLB, ACCELERATOR, LATTICE = "nlb", "global-accelerator", "vpc-lattice"


TRAFFIC_KEYS = {NLB: "nlb :443", ACCELERATOR: "accelerator", LATTICE: "lattice web"}


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


CHECKS_PER_STEP = 2


CHECK_INTERVAL = 2


APPROVAL_TIMEOUT = 4


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
    budget: str = None  # the plan's SLO's budget at the start (BUDGET_AT_START), or None: no errorBudget
    budget_judged: bool = False  # the errorBudget judges the new cluster (its 5xx put every second, AlbTraffic)
    test_traffic: str = None  # the test-traffic stage's canary run (TEST_RUNS), or None: no stage

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
            f", an error budget {self.budget} at the start (bounded to {FROZEN_BOUND} s)" if self.budget else "",
            ", judging the new cluster's share and burn" if self.budget_judged else "",
            f", a test-traffic stage (its run {self.test_traffic})" if self.test_traffic else "",
        ])
        kind = {NLB: "NLB", ACCELERATOR: "Global Accelerator", LATTICE: "VPC Lattice"}.get(self.traffic, self.kind)
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
    if r := drawn("error-budget", not history.fleet):
        history.budget = r.choice(BUDGET_AT_START)
        if history.budget == "fine":
            happenings.append(Happening("budget-spent", *r.choice(points)))
        if r.random() < 0.7:
            # Spent at the start, the rollout is at its gate: back at one of its first looks.
            at = ("FreezeGate", r.randint(1, 4)) if history.budget == "spent" else r.choice(points)
            happenings.append(Happening("budget-back", *at))
        judging = history.kind in WITH_LISTENER and not history.alb_judge and not history.compare
        if r := drawn("budget-judged", judging):
            history.budget_judged = True
            if r.random() < 0.6:
                happenings.append(Happening("budget-burn", *r.choice(points)))
    if r := drawn("aws-health"):
        history.health = r.choice(HEALTH_MODES)
        happenings.append(Happening("health-open", *r.choice(points)))
        if r.random() < 0.7:
            happenings.append(Happening("health-close", *r.choice(points)))
    listener_bound = (history.fleet or history.by_event or history.targets or history.retire or history.alb_judge
                      or history.compare or history.gradual or history.budget_judged)
    if r := drawn("other-kinds", history.kind == ALB and not listener_bound):
        history.traffic = r.choice((NLB, ACCELERATOR))
        if history.traffic == ACCELERATOR:
            for _ in range(r.randint(1, 2)):
                action = r.choice(ACCELERATOR_HAPPENINGS)
                # Up to 6 refusals: past the router's 5 tries the step fails AwsTransient and the
                # state machine tries it again. Deploys of 4-20 s: every write waits them out.
                value = (r.randint(1, 6),) if action == "accelerator-busy" else (r.randint(4, 20),)
                happenings.append(Happening(action, *r.choice(points), value))
    if drawn("vpc-lattice", history.kind == ALB and not listener_bound and not history.traffic):
        history.traffic = LATTICE
    staged = history.kind in WITH_LISTENER and not history.traffic and not history.by_event and not history.fleet
    if r := drawn("test-traffic-before-steps", staged):
        history.test_traffic = r.choice(TEST_RUNS)
        if r.random() < 0.25:
            happenings.append(Happening("test-rule-refused", "PrepareTraffic", 1))
        if r.random() < 0.25:
            happenings.append(Happening("abort", "OpenTestTraffic", 1))
