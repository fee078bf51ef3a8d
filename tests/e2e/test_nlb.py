"""End to end on a Network Load Balancer (`nlb` targets): the sandbox's `nlb` scenarios, a
rollout of the NLB web-tcp's TCP listener alone, through the deployed stack (its IAM grants the
listener's `net/` ARN), to a promotion and to a rollback at green's alarm."""
from helpers import captured, event_types, failed_on_alarm
from sandbox import scenarios

UNTOUCHED = {"listener :80": (100, 0), "app.example.com.": (100, 0)}


def canary_weights(report):
    """The canary weight of each Traffic Shifted event, in order."""
    return [d["weights"][0]["canary"] for t, d in report.events if t == "Traffic Shifted"]


def test_an_nlb_listener_is_stepped_to_a_promotion():
    report = scenarios.run("nlb", out=captured)
    assert report.status == "SUCCEEDED", report
    assert report.weights == {**UNTOUCHED, "nlb :443": (0, 100)}, "only the NLB moved"
    assert report.states.count("SetWeights") == 3
    assert canary_weights(report) == [10, 50, 100]
    assert event_types(report) == ["Rollout Started"] + ["Traffic Shifted"] * 3 + ["Promoted"]
    shifted = next(d for t, d in report.events if t == "Traffic Shifted")
    assert ":listener/net/web-tcp/" in shifted["weights"][0]["target"], shifted


def test_an_nlb_listener_is_rolled_back_when_the_alarm_fires():
    report = scenarios.run("nlb-rollback", out=captured)
    assert report.status == "FAILED" and report.error == "CheckFailed", report
    assert failed_on_alarm(report.cause, "web-green-5xx"), report.cause
    assert report.max_canary == 50
    assert report.weights == {**UNTOUCHED, "nlb :443": (100, 0)}, "the baseline restored"
    assert event_types(report)[-1] == "Rolled Back"
