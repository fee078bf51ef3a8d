"""End to end: the safety net does not hang on one rule. With the stack's SafetyNet rule disabled
(as a person or a drift-fixing tool might), a rollout stopped halfway gets no delivery; the
live view and `abort` say what they read and that the rule is off, the sweep (the template's
`SafetyNetSweep` schedule, fired every few seconds by the sandbox) puts back the targets still
where the rollout left them and leaves a person's alone, says so in an event and a metric that
pages, and Admit refuses every new rollout until the rule is back (see test_rollouts.py for the
sandbox).
"""
import time

import jsonschema

from helpers import BASELINE, captured
from sandbox import scenarios
from sandbox.harness import Sandbox


def halfway(sandbox, plan, name):
    """A rollout of `plan` once it set its first step: its ARN."""
    arn = scenarios.start_manual(sandbox, plan, name)
    deadline = time.monotonic() + 120
    while scenarios.read_weights(sandbox) == BASELINE:
        assert time.monotonic() < deadline, "the first step never came"
        time.sleep(0.5)
    return arn


def test_a_disabled_safety_net_rule_is_said_swept_paged_and_refuses_new_rollouts():
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        events = sandbox.client("events")
        rule = sandbox.safety_net.rule
        arn = halfway(sandbox, plan, "left-halfway")
        events.disable_rule(Name=rule)
        # The function's event queue is held: neither a delivery nor the sweep comes meanwhile.
        with sandbox.safety_net.held():
            sandbox.client("stepfunctions").stop_execution(executionArn=arn, cause="operator")
            left = scenarios.read_weights(sandbox)
            assert left != BASELINE
            watched = sandbox.cli("watch", arn)
            captured(watched.stdout + watched.stderr)
            assert "restores the baseline" not in watched.stdout, "said before it was read back"
            assert "it ran no rollback of its own" in watched.stdout, watched.stdout
            assert f"not at the baseline (listener " in watched.stdout
            assert f"The stack's SafetyNet rule {rule} is DISABLED" in watched.stdout, watched.stdout
            assert f"aws events enable-rule --name {rule}" in watched.stdout
            aborted = sandbox.cli("abort", arn, "--timeout", "3")
            captured(aborted.stdout + aborted.stderr)
            assert aborted.returncode == 1
            assert f"The stack's SafetyNet rule {rule} is DISABLED" in aborted.stdout, "said at once"
            assert f"The stack's SafetyNet rule {rule} is DISABLED" in aborted.stderr, "and in the end's advice"
            assert f"cluster-canary restore {arn}" in aborted.stderr

            # Admit refuses a rollout while the rule is off: nothing moves.
            refused = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "refused"), out=captured,
                                      await_safety_net=False)
            assert (refused.status, refused.error) == ("FAILED", "SafetyNetDisabled"), refused.cause
            assert f"the stack's SafetyNet rule {rule} is DISABLED" in refused.cause
            assert f"aws events enable-rule --name {rule}" in refused.cause
            assert "PrepareTraffic" not in refused.states
            assert refused.max_canary == 0

            # Meanwhile a person sets the listener's weights themselves: theirs to keep.
            scenarios.move_listener_by_hand(sandbox, 70, 30)

        deadline = time.monotonic() + 60
        while not sandbox.sweep.swept(arn):
            assert time.monotonic() < deadline, "the sweep never put the rollout's traffic back"
            time.sleep(0.5)
        [swept] = sandbox.sweep.swept(arn)
        assert swept["reason"].startswith("the execution ended ABORTED at "), swept
        assert "the sweep put it back at the baseline" in swept["reason"]
        assert scenarios.read_weights(sandbox) == {"listener :80": (70, 30),
                                                   "app.example.com.": BASELINE["app.example.com."]}, \
            "the record the rollout left goes back; the listener the person set stays theirs"
        # Said: an event (its schema's), and a metric a template alarm pages on.
        said = [detail for detail_type, detail in scenarios.read_events(sandbox, arn) if detail_type == "Safety Net Swept"]
        assert len(said) == 1, said
        jsonschema.validate(said[0], scenarios.event_schema("Safety Net Swept"))
        assert said[0]["safetyNetRule"] == {"name": rule, "state": "DISABLED"}
        assert said[0]["status"] == "ABORTED"
        cluster = f"{plan['cluster']['region']}/{plan['cluster']['name']}"
        assert ("SafetyNetSweeps", {"Cluster": cluster}, 1) in scenarios.emitted_metrics(sandbox, cluster)
        alarms = sandbox.client("cloudwatch").describe_alarms()["MetricAlarms"]
        [pages] = [a for a in alarms if a["AlarmName"] == sandbox.stack.resources["SafetyNetSweptAlarm"]]
        assert (pages["Namespace"], pages["MetricName"], pages["Threshold"]) == ("ClusterCanary", "SafetyNetSweeps", 1)
        # Swept once: the next sweeps find nothing of the rollout's left to put back.
        sandbox.sweep.settle(time.time())
        assert len(sandbox.sweep.swept(arn)) == 1
        assert scenarios.read_weights(sandbox)["listener :80"] == (70, 30)

        # A rule deleted is refused too, saying so.
        targets = [t["Id"] for t in events.list_targets_by_rule(Rule=rule)["Targets"]]
        events.remove_targets(Rule=rule, Ids=targets)
        events.delete_rule(Name=rule)
        gone = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "rule-gone"), out=captured,
                               await_safety_net=False)
        assert (gone.status, gone.error) == ("FAILED", "SafetyNetDisabled"), gone.cause
        assert f"the stack's SafetyNet rule {rule} does not exist" in gone.cause
