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
enforces it); a test-traffic stage before the first step (its Synthetics run passing, failing or never
coming; CreateRule refused by IAM; a stop during it); and, a fifth of the seeds, a fleet instead (sandbox/fleet_histories.py has its
story and its promises).

Where each part is (sandbox/histories/):

  stories.py   what a history is, drawn from its seed: the plan's features, the happenings and
               when each happens, and the constants the runs and the promises share
  worlds.py    the world a history runs in: its plan, the ALB traffic its checks read, the
               stack's template cut for short timeouts, an event-started rollout's profile
  faults.py    the faults a history plays through the sandbox's front door, and IAM's refusals
  play.py      a history played on a sandbox (`run`), into the record the promises read (`Run`)
  promises.py  the promises checked after the run (`violations`), and the bounds they hold
  cli.py       `python -m sandbox.histories`: seeds run, judged and summed up

A new happening is drawn in stories.py, played in play.py (its fault, if it is one, in
faults.py), and promised in promises.py.

`python -m sandbox.histories --seeds N [--first S] [--jobs J]` runs N histories, one sandbox
each (J at a time), and sums up what happened; tests/e2e/test_histories.py runs a fixed few in
CI; a defect a seed found becomes a named test of its own.
Not generated: Amazon Managed Prometheus (SigV4); NaN from a provider; IAM
refusals beyond the traffic writes and the checks' CloudWatch reads; the alarm watch's table
failing; a comparison of Prometheus or Datadog metrics (the comparison reads the ALB's), a
fleet's comparison with its peers, and `onMarginal: ask` (the e2e tests in
tests/e2e/test_compare.py cover those).
"""
from .play import Run, held_by_the_freeze, run
from .promises import (DECIDED_TO_BASELINE_SECONDS, ROLLBACK_BOUND_SECONDS, SAFETY_NET_DELIVERY_SECONDS, STATE_BUDGET,
                       UNJUDGED_BOUND_SECONDS, alarm_to_baseline, happened, moved_before_ready, unjudged_to_baseline,
                       violations)
from .stories import (ACCELERATOR, ACCELERATOR_HAPPENINGS, ADDON_HAPPENINGS, ALB_HAPPENINGS, ALB_ROUTE53,
                      COMPARE_HAPPENINGS, GRADUAL, HAPPENINGS, HEALTH_HAPPENINGS, HEALTH_MODES, HOOK_POINTS, KINDS,
                      LATTICE, METRIC_HAPPENINGS, NLB, PROVIDER_HAPPENINGS, READINESS, ROUTE53, ROUTE53_HAPPENINGS, TEST_RUNS,
                      History, generate)

__all__ = [
    "ACCELERATOR", "ACCELERATOR_HAPPENINGS", "ADDON_HAPPENINGS", "ALB_HAPPENINGS", "ALB_ROUTE53", "COMPARE_HAPPENINGS",
    "DECIDED_TO_BASELINE_SECONDS", "GRADUAL", "HAPPENINGS", "HEALTH_HAPPENINGS", "HEALTH_MODES", "HOOK_POINTS", "KINDS",
    "LATTICE", "METRIC_HAPPENINGS", "NLB", "PROVIDER_HAPPENINGS", "READINESS", "ROLLBACK_BOUND_SECONDS", "ROUTE53",
    "ROUTE53_HAPPENINGS", "Run", "TEST_RUNS", "SAFETY_NET_DELIVERY_SECONDS", "STATE_BUDGET", "UNJUDGED_BOUND_SECONDS", "History",
    "alarm_to_baseline", "generate", "happened", "held_by_the_freeze", "moved_before_ready", "run",
    "unjudged_to_baseline", "violations",
]
