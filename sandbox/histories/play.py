"""Playing a history on a sandbox: the rollout started, each happening at its point of the
execution, the other rollouts and the operator's restores, and the record (`Run`) the promises
are checked against."""

import contextlib
import json
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .. import (compare, datadog, error_budget, fleet_histories, fleets, gitops, prometheus, scenarios,
               test_traffic)
from ..front_door import (INVOKE, cloudwatch_throttled, is_invocation, json_error, lambda_service_exception,
                          lambda_throttled, lattice_throttled, query_throttled, route53_throttled)
from ..harness import REPO, Sandbox
from ..world import REGION
from .stories import (ACCELERATOR, ADDON, ADDON_HAPPENINGS, ALARM, ALB, ALB_ERRORS_BREACH, ALB_HAPPENINGS,
                      BUDGET_HAPPENINGS,
                      ALB_LOOKBACK, ALB_ROUTE53, COMPARE_ERRORS, COMPARE_ERRORS_REGRESSED, COMPARE_HAPPENINGS,
                      DATADOG_BREACH, DATADOG_FINE, DEPRECATED_APIS, GITOPS, HOOK, HOOK_TIMEOUT, LATTICE, LISTENER,
                      METRIC_BREACH, METRIC_FINE, METRIC_HAPPENINGS, NLB, OTHER, PROVIDER_TIMEOUT, RATIO_BREACH,
                      RATIO_FINE, ROUTE53, SHORT_TIMEOUT, TRAFFIC_KEYS, WITH_LISTENER)
from .faults import (DENY_POLICY, DENY_READS, DENY_READS_POLICY, DENY_TEST_RULES, DENY_TEST_RULES_POLICY, DENY_WRITES,
                     function_error, held_past_timeout,
                     is_cloudwatch, is_endpoint_group_update, is_lattice_update, is_modify_listener, is_route53_change,
                     is_safety_net_try, pending_change)
from .worlds import AlbTraffic, CompareTraffic, cut_template, put_latency, register_target, shaped, the_profile
from .promises import exited_output, prepare_answered


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
    # None: an AWS Health issue holds), `issue` (open, None: ... and fails the checks, `rollBack`),
    # `budget` (spent, None: the plan's SLO's error budget holds).
    conditions: list = field(default_factory=list)
    hook_calls: list = field(default_factory=list)  # (point, step weight, weights, answer) of the first's hooks
    test_rules_left: list = None  # the test-traffic rules tagged with the execution, once all is settled
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
    # The requests and errors the plan's SLO has been served (an `error-budget` history): a
    # `budget-spent` puts as many failed requests as were served so far, a `budget-back` a
    # hundred times more good ones, so each flips its status whatever came before.
    budget_served: list = field(default_factory=lambda: [0, 0])


def serve_the_slo(sandbox, record, requests, errors):
    """The plan's SLO is served `requests` and `errors` more (sandbox/error_budget.py)."""
    error_budget.served(sandbox, requests, errors)
    record.budget_served = [record.budget_served[0] + requests, record.budget_served[1] + errors]


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
    # The new cluster's requests the error budget's share and burn count (none fail until `budget-burn`).
    burning = controllers.enter_context(AlbTraffic(sandbox)) if history.budget_judged else None
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
    if history.budget:
        error_budget.create_slo(sandbox)
        serve_the_slo(sandbox, record, *((1_000, 50) if history.budget == "spent" else (1_000_000, 0)))
        if history.budget == "spent":
            record.conditions.append((0, "budget", "spent", time.time()))
    if history.test_traffic:
        test_traffic.create_canary(sandbox)
        if history.kind == ALB_ROUTE53:
            test_traffic.create_own_record(sandbox)
        test_traffic.set_runs(sandbox, history.test_traffic)
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
            # Failing from the history's length once the change is in, as every breach below
            # (a check that entered during a loaded write read the state before it).
            sandbox.alarm_events.set_state(ALARM, "ALARM", "Threshold Crossed: history")
            record.conditions.append((history_length(), "alarm", "ALARM", time.time()))
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
            # A breach from the history's length once the datapoint is in, a recovery from its
            # length before the put: a check that entered meanwhile may have read either (seed
            # 10405: the first check of a step read the metric before a loaded put landed).
            breach = action == "metric-breach"
            put_latency(sandbox, METRIC_BREACH if breach else METRIC_FINE)
            record.conditions.append((history_length() if breach else index, "metric",
                                      "breach" if breach else "fine", time.time()))
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
        elif action == "budget-burn":
            burning.errors = ALB_ERRORS_BREACH
            record.conditions.append((index, "burn", "burning", time.time()))
        elif action in BUDGET_HAPPENINGS:
            # Spent from when the datapoints are in, back from before they are asked (a look
            # between may have read either), as a freeze's turns.
            asked, before = time.time(), history_length()
            requests, errors = record.budget_served
            spent = action == "budget-spent"
            serve_the_slo(sandbox, record, *((requests + 1,) * 2 if spent else (100 * (requests + errors), 0)))
            record.conditions.append((history_length() if spent else before, "budget",
                                      "spent" if spent else None, time.time() if spent else asked))
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
        elif action == "test-rule-refused":
            iam.put_role_policy(RoleName=shift_weights_role, PolicyName=DENY_TEST_RULES_POLICY,
                                PolicyDocument=json.dumps(DENY_TEST_RULES))
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
            record.conditions.append((history_length(), "reads", "denied", time.time()))
        elif action == "iam-reads-restored":
            with contextlib.suppress(iam.exceptions.NoSuchEntityException):
                iam.delete_role_policy(RoleName=evaluate_alarms_role, PolicyName=DENY_READS_POLICY)
            record.conditions.append((index, "reads", None, time.time()))
        elif action == "foreign-write":
            blue, green = value
            move = {NLB: scenarios.move_nlb_by_hand, ACCELERATOR: scenarios.move_accelerator_by_hand,
                    LATTICE: scenarios.move_lattice_by_hand}.get(
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
        elif action == "throttle" and history.traffic == LATTICE:
            # Lattice's throttle (REST-JSON, 429), past the SDK's own retries of it.
            sandbox.front.faults.append([is_lattice_update, 4, lattice_throttled()])
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
    if history.test_traffic:
        record.test_rules_left = [rule for rule in test_traffic.listener_rules(sandbox)
                                  if rule[3].get("cluster-canary:execution") == arn]
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


def unless_held_by_the_freeze(sfn, execution_arn, wait, out):
    """`wait(timeout)` for another rollout of the run to end. One started while the freeze switch
    was on waits at its gate, as documented, up to its plan's bound (an hour by default; seed 9009);
    one the switch caught mid-rollout holds its step at each check, as documented, as long (seed
    9204): "held by the freeze" is its end here. Stopped, its safety net leaves it alone (at the
    gate it moved nothing) or restores its baseline (mid-rollout), as for any stopped rollout."""
    try:
        return wait(300)
    except TimeoutError:
        if not held_by_the_freeze(sfn, execution_arn):
            raise
    sfn.stop_execution(executionArn=execution_arn, cause="history: held by the freeze past the wait")
    out(f"{execution_arn.rsplit(':', 1)[-1]}: held by the freeze past the wait; stopped")
    return wait(60)


def held_by_the_freeze(sfn, execution_arn):
    """Whether the running execution waits at its freeze gate (before its first step), or its
    bake's last check was held by a freeze and nothing but the bake's loop ran since."""
    if sfn.describe_execution(executionArn=execution_arn)["status"] != "RUNNING":
        return False
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    entered_states = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
    if entered_states and entered_states[-1] in ("FreezeGate", "Frozen?", "WaitWhileFrozen"):
        return True
    checks = [i for i, e in enumerate(events) if exited_output(e, "Evaluate") is not None]
    if not checks or not exited_output(events[checks[-1]], "Evaluate")["bake"].get("frozenSince"):
        return False
    since = [e["stateEnteredEventDetails"]["name"] for e in events[checks[-1]:] if "stateEnteredEventDetails" in e]
    return all(name in BAKE_LOOP for name in since)


# The states a bake's loop of checks enters, and the alarm watch beside it.
BAKE_LOOP = ("CheckVerdict?", "BakeWait", "Evaluate", "WatchAlarms")
