"""End to end on Amazon VPC Lattice (`vpcLattice` targets): the sandbox's `vpc-lattice`
scenarios, a rollout of the service web's listener alone (blue's and green's target groups
weighted in its default action), through the deployed stack (its IAM scoped by
LatticeServiceIds, the moto harness's Lattice), to a promotion and to a rollback at green's
alarm; and a grant narrowed to another service refuses it before anything moves."""
from helpers import captured, event_types, failed_on_alarm
from sandbox import scenarios
from sandbox.harness import Sandbox

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
