"""End to end on AWS Global Accelerator (`globalAccelerator` targets): the sandbox's
`global-accelerator` scenarios, a rollout of the accelerator edge's us-east-1 endpoint group
alone (blue's and green's load balancers weighted in it), through the deployed stack (its IAM
scoped by AcceleratorIds, the API in us-west-2), to a promotion and to a rollback at green's
alarm."""
from helpers import captured, event_types, failed_on_alarm
from sandbox import scenarios

UNTOUCHED = {"listener :80": (100, 0), "app.example.com.": (100, 0)}


def test_an_accelerators_endpoint_weights_are_stepped_to_a_promotion():
    report = scenarios.run("global-accelerator", out=captured)
    assert report.status == "SUCCEEDED", report
    assert report.weights == {**UNTOUCHED, "accelerator": (0, 100)}, "only the accelerator moved"
    shifted = [d for t, d in report.events if t == "Traffic Shifted"]
    assert [d["weights"][0]["canary"] for d in shifted] == [10, 50, 100]
    assert "/endpoint-group/" in shifted[0]["weights"][0]["target"], shifted[0]
    assert event_types(report) == ["Rollout Started"] + ["Traffic Shifted"] * 3 + ["Promoted"]


def test_an_accelerator_is_rolled_back_when_the_alarm_fires():
    report = scenarios.run("global-accelerator-rollback", out=captured)
    assert report.status == "FAILED" and report.error == "CheckFailed", report
    assert failed_on_alarm(report.cause, "web-green-5xx"), report.cause
    assert report.max_canary == 50
    assert report.weights == {**UNTOUCHED, "accelerator": (100, 0)}, "the baseline restored"
    assert event_types(report)[-1] == "Rolled Back"
