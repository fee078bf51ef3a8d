"""End to end: weights a controller owns (issue 19). The sandbox's ExternalDNS and AWS Load
Balancer Controller stand-ins (sandbox/controllers.py) run against moto as the real ones run
against AWS: owned targets are refused before anything moves, a check finds weights a
controller put back under a bake, and a baseline undone after a rollback is put back and
reported (Rollback Reverted). No execution here ends with traffic away from the baseline.
"""
import json
import threading
import time

from helpers import BASELINE, FAILED_BEFORE_TRAFFIC, captured, event_types, move_listener_by_hand
from sandbox import scenarios
from sandbox.controllers import ExternalDns, LoadBalancerController
from sandbox.harness import Sandbox

IGNORED = "the record's ExternalDNS is being replaced this week"


def external_dns(sandbox, owner, side, weight):
    """The ExternalDNS of the cluster `owner`, which owns the `side` record of the world's
    weighted pair (its Ingress asks for `weight`), under `--policy sync` every second."""
    world = sandbox.world
    return ExternalDns.for_records(sandbox.client("route53"), world.zone_id, owner, world.record, "A",
                                   {side: weight}, interval=1.0)


def start_green(sandbox, create=True):
    """The platform team creates cluster green (unless it exists) and its CreateCluster event
    starts the rollout; the execution ARN."""
    if create:
        scenarios.create_green(sandbox)
    error, started = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox))
    assert not error, started
    return started["executionArn"]


def plan_check(sandbox, tmp_path, plan):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    checked = sandbox.cli("plan", "check", str(path))
    captured(checked.stdout + checked.stderr)
    return checked.returncode, checked.stdout + checked.stderr


def test_targets_a_controller_owns_are_refused_before_anything_moves(tmp_path):
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world
        elbv2 = sandbox.client("elbv2")
        listener = elbv2.describe_listeners(ListenerArns=[world.listener])["Listeners"][0]
        model = {tg["TargetGroupArn"]: tg.get("Weight", 1)
                 for tg in listener["DefaultActions"][0]["ForwardConfig"]["TargetGroups"]}
        with LoadBalancerController(elbv2, world.listener, model), \
                external_dns(sandbox, "blue-cluster", "blue", 100), \
                external_dns(sandbox, "green-cluster", "green", 0):
            scenarios.create_green(sandbox)
            code, text = plan_check(sandbox, tmp_path, scenarios.manual_plan(sandbox))
            assert code != 0
            assert "TrafficOwnedByController: trafficTargets[0]" in text, text
            assert "managed by the AWS Load Balancer Controller (cluster blue, stack shop/web, resource 80)" in text
            assert "owner.ignore" in text

            report = scenarios.watch(sandbox, start_green(sandbox, create=False), out=captured)
            assert (report.status, report.error) == ("FAILED", "TrafficOwnedByController")
            assert report.states == ["Init", "ValidateAnalysis", "PrepareTraffic", *FAILED_BEFORE_TRAFFIC]
            assert "managed by the AWS Load Balancer Controller" in report.cause
            assert report.weights == BASELINE, "nothing moved"

            # The listener is now shared and outside the clusters (TargetGroupBinding): its tags
            # go. The record is still ExternalDNS's.
            elbv2.remove_tags(ResourceArns=[world.listener],
                              TagKeys=["elbv2.k8s.aws/cluster", "ingress.k8s.aws/stack", "ingress.k8s.aws/resource"])
            plan = scenarios.manual_plan(sandbox)
            code, text = plan_check(sandbox, tmp_path, plan)
            assert code != 0
            assert "is managed by ExternalDNS (owner blue-cluster, resource ingress/shop/web)" in text, text
            before = scenarios.read_weights(sandbox)
            second = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "green-owned-record"), out=captured)
            assert (second.status, second.error) == ("FAILED", "TrafficOwnedByController")
            assert "is managed by ExternalDNS" in second.cause
            assert second.weights == before == BASELINE, "nothing moved"


def test_a_check_finds_weights_a_controller_put_back_and_stops_the_rollout_there():
    """The issue's loop: a controller puts the weights back while a step bakes. Before, every
    check of the bake passed on a canary without traffic; now the first check after the
    revert stops the rollout."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        record = plan["trafficTargets"][1]
        record["route53"]["owner"] = {"ignore": IGNORED}
        plan["trafficTargets"] = [record]
        with external_dns(sandbox, "blue-cluster", "blue", 100) as blue, \
                external_dns(sandbox, "green-cluster", "green", 0) as green:
            report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "green-under-external-dns"),
                                     out=captured)
            reverted = blue.reconciles + green.reconciles
        started = dict(report.events)["Rollout Started"]
        assert IGNORED in json.dumps(started["trafficTargets"]), started
        assert (report.status, report.error) == ("FAILED", "WeightsChangedExternally")
        assert reverted > 2, "ExternalDNS put the weights back after the step was set"
        assert report.states.count("Evaluate") == 1, "stopped at the first check after the revert"
        assert "MovedUnderCheckOutcome" in report.states and report.states[-1] == "StoppedByForeignChange"
        assert "A check at step 1 of 3 found the weights changed outside this rollout" in report.cause, report.cause
        assert "found stable 100 / canary 0, this rollout last set stable 90 / canary 10" in report.cause
        assert report.weights[sandbox.world.record] == (100, 0)
        assert "Rolled Back" not in event_types(report)


def test_a_rollback_a_controller_undoes_is_put_back_and_reported():
    """After the rollback's restore, something writes the canary's 50/50 back (a controller
    reconciling stale state): the look after the settle period re-asserts the baseline, sends
    Rollback Reverted and counts RollbacksReverted, which pages a person."""
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                sandbox.alarm_events.set_state("web-green-5xx", "ALARM", "Threshold Crossed")
            if name == "Restore":
                move_listener_by_hand(sandbox, 50, 50)

        report = scenarios.watch(sandbox, start_green(sandbox), on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.states[-6:] == ["NotifyRolledBack", "SettleAfterRestore", "LookAfterRestore", "Reverted?",
                                      "NotifyRollbackReverted", "RolledBack"]
        assert event_types(report)[-2:] == ["Rolled Back", "Rollback Reverted"]
        reverted = dict(report.events)["Rollback Reverted"]
        assert reverted["found"] == f"{world.listener} was stable 50 / canary 50", reverted
        assert report.weights == BASELINE, "the baseline re-asserted"
        assert any(name == "RollbacksReverted" for name, _, _ in report.metrics), report.metrics
        assert report.safety_net is None or report.safety_net["restored"] is False


def test_the_safety_net_looks_again_after_its_restore():
    """An operator stops a rollout at 50 %; the safety net restores the baseline, and a
    controller writes 50/50 back during its settle period: it puts the baseline back again and
    says so."""
    with Sandbox(log=captured) as sandbox:
        undone = threading.Event()

        def undo_once_restored():
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                if scenarios.read_weights(sandbox) == BASELINE:
                    move_listener_by_hand(sandbox, 50, 50)
                    undone.set()
                    return
                time.sleep(0.2)

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                sandbox.client("stepfunctions").stop_execution(executionArn=arn, cause="stopped by hand")
                threading.Thread(target=undo_once_restored, daemon=True).start()

        arn = start_green(sandbox)
        report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
        assert report.status == "ABORTED"
        assert undone.is_set(), "the controller wrote 50/50 after the safety net's restore"
        net = report.safety_net
        assert net["restored"] is True and net["lookAgain"]["reverted"] is True, net
        assert f"{sandbox.world.listener} was stable 50 / canary 50" in net["reason"], net["reason"]
        assert "re-asserted" in net["reason"]
        assert report.weights == BASELINE
