"""End to end on Amazon VPC Lattice (`vpcLattice` targets): the sandbox's `vpc-lattice`
scenarios, a rollout of the service web's listener alone (blue's and green's target groups
weighted in its default action), through the deployed stack (its IAM scoped by
LatticeServiceIds, the moto harness's Lattice), to a promotion and to a rollback at green's
alarm; a rollout judged by Lattice's own target group metrics; and a grant narrowed to another
service refuses it before anything moves."""
import re

from helpers import captured, event_types, failed_on_alarm
from sandbox import scenarios
from sandbox.alb_metrics import LatticeMetrics
from sandbox.harness import Sandbox
from sandbox.world import seed_lattice

UNTOUCHED = {"listener :80": (100, 0), "app.example.com.": (100, 0)}


def test_a_lattice_listeners_weights_are_stepped_to_a_promotion():
    report = scenarios.run("vpc-lattice", out=captured)
    assert report.status == "SUCCEEDED", report
    assert report.weights == {**UNTOUCHED, "lattice web": (0, 100)}, "only the Lattice listener moved"
    shifted = [d for t, d in report.events if t == "Traffic Shifted"]
    assert [d["weights"][0]["canary"] for d in shifted] == [10, 50, 100]
    assert shifted[0]["weights"][0]["target"].startswith("vpcLattice:svc-"), shifted[0]
    assert event_types(report) == ["Rollout Started"] + ["Traffic Shifted"] * 3 + ["Promoted"]


def test_a_lattice_listener_is_rolled_back_when_the_alarm_fires():
    report = scenarios.run("vpc-lattice-rollback", out=captured)
    assert report.status == "FAILED" and report.error == "CheckFailed", report
    assert failed_on_alarm(report.cause, "web-green-5xx"), report.cause
    assert report.max_canary == 50
    assert report.weights == {**UNTOUCHED, "lattice web": (100, 0)}, "the baseline restored"
    assert event_types(report)[-1] == "Rolled Back"


def test_a_grant_narrowed_to_another_lattice_service_fails_the_rollout_with_access_denied():
    """The stack's LatticeServiceIds names another service: shift-weights may not read (nor
    write) this one's listener, and the rollout fails before anything moves, naming the call."""
    with Sandbox(log=captured, parameters={"LatticeServiceIds": "svc-0000000000000000a"}) as sandbox:
        report = scenarios.run_on(sandbox, "vpc-lattice", captured, False)
        assert (report.status, report.error) == ("FAILED", "AwsAccessDenied"), report
        assert "vpc-lattice:GetListener" in report.cause, report.cause
        assert f"service/{sandbox.world.lattice_service}/listener/" in report.cause, "the listener is named"
        assert report.max_canary == 0, "nothing moved"
        assert report.weights == {**UNTOUCHED, "lattice web": (100, 0)}


def test_a_lattice_canary_judged_by_its_target_groups_metrics_rolls_back_on_its_5xx():
    """The built-in target group checks on Lattice's own metrics (`AWS/VpcLattice` by target
    group ID, `RequestTime` in milliseconds): at 10 % green answers in 200 ms as blue does, under
    the plan's 0.5 s (a check that read milliseconds as seconds fails there), and passes; at 50 %
    a fifth of green's requests fail, and a check rolls back, naming its 5xx rate."""
    failing = []

    def traffic(_second):
        return {side: {"TotalRequestCount": 100, "RequestTime": 200,
                       "HTTPCode_5XX_Count": 20 if failing and side == "canary" else 0}
                for side in ("canary", "stable")}

    with Sandbox(log=captured) as sandbox:
        seed_lattice(sandbox.client, sandbox.world)
        scenarios.create_green(sandbox)
        plan = scenarios.lattice_plan(sandbox)
        plan["analysis"]["alb"] = {"maxErrorRatePercent": 5, "maxLatencySeconds": 0.5, "minRequests": 10,
                                   "periodSeconds": 1, "lookbackSeconds": 5}

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                failing.append(True)

        with LatticeMetrics(sandbox, traffic):
            report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "green-lattice-judged"),
                                     on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed"), report
        assert report.max_canary == 50, "the 10 % step's checks passed on 200 ms"
        group = sandbox.world.lattice_green_tg
        assert re.search(rf"{group}: canary 5xx rate [\d.]+ % > max 5 %", report.cause), report.cause
        assert report.weights == {**UNTOUCHED, "lattice web": (100, 0)}, "the baseline restored"
