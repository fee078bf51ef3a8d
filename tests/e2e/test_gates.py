"""End to end: the gates a rollout passes before traffic moves (README "Gates"), on the
sandbox (see test_rollouts.py). moto reports every registered target `healthy` and every
Route 53 health check `Success`; unhealthy targets are tried against fakes in
functions/shift-weights/tests/decisions.rs.
"""
from helpers import BASELINE, PROMOTED, captured
from sandbox import scenarios
from sandbox.harness import Sandbox


def gated_plan(sandbox, **gate):
    """The manual plan for a new cluster `green` (created here) with a target health gate."""
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["targetHealth"] = gate
    return plan


def test_a_canary_target_group_without_healthy_targets_fails_before_traffic():
    with Sandbox(log=captured) as sandbox:
        plan = gated_plan(sandbox, timeoutSeconds=4, intervalSeconds=2)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "no-targets"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TargetsNotHealthy")
        assert report.states.count("TargetHealth") == 3, "the first look and two more"
        assert "SetWeights" not in report.states and report.max_canary == 0
        assert report.cause.startswith("the targets of the new cluster were not healthy in time (")
        assert "canary target group web-green: 0 healthy targets, 1 needed" in report.cause
        assert report.cause.endswith("); no traffic was moved")
        assert report.safety_net["restored"] is False, "a settled end"
        assert report.weights == BASELINE


def test_targets_that_become_healthy_while_waiting_let_the_rollout_go_on():
    """The Route 53 canary record gets a health check (moto answers `Success`), so both kinds
    of look go over the wire."""
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world
        route53 = sandbox.client("route53")
        health_check = route53.create_health_check(
            CallerReference="green", HealthCheckConfig={"Type": "HTTP", "FullyQualifiedDomainName": "green.example.com"}
        )["HealthCheck"]["Id"]
        green = next(r for r in route53.list_resource_record_sets(HostedZoneId=world.zone_id)["ResourceRecordSets"]
                     if r.get("SetIdentifier") == "green")
        green["HealthCheckId"] = health_check
        route53.change_resource_record_sets(
            HostedZoneId=world.zone_id, ChangeBatch={"Changes": [{"Action": "UPSERT", "ResourceRecordSet": green}]})
        looks = []

        def on_event(name, state):
            if name == "TargetHealth":
                looks.append(state["targetHealth"])
                if len(looks) == 2:
                    sandbox.client("elbv2").register_targets(
                        TargetGroupArn=world.green_tg, Targets=[{"Id": "10.0.1.17", "Port": 8080},
                                                                {"Id": "10.0.2.17", "Port": 8080}])

        plan = gated_plan(sandbox, minHealthyTargets=2, timeoutSeconds=30, intervalSeconds=2)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "late-targets"),
                                 on_event=on_event, out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert [look["ready"] for look in looks] == [False, False, True]
        assert "canary target group web-green: 0 healthy targets, 2 needed" in looks[0]["reason"]
        assert looks[2]["reason"] == "every canary target is healthy"
        assert report.states.index("TargetsHealthy?") < report.states.index("SetWeights")
        assert report.weights == PROMOTED
