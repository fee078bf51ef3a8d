"""End to end: weights a controller owns (issue 19). The sandbox's ExternalDNS and AWS Load
Balancer Controller stand-ins (sandbox/controllers.py) run against moto as the real ones run
against AWS: owned targets are refused before anything moves, a check finds weights a
controller put back under a bake, and a baseline undone after a rollback is put back and
reported (Rollback Reverted). No execution here ends with traffic away from the baseline.
"""
import json
import re
import threading
import time

from helpers import BASELINE, FAILED_BEFORE_TRAFFIC, TO_PREPARE, captured, event_types, move_listener_by_hand
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


def wait_for(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


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
            assert report.states == [*TO_PREPARE, *FAILED_BEFORE_TRAFFIC]
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
            assert "is managed by ExternalDNS (owner green-cluster, resource ingress/shop/web)" in text, \
                "every owner named at once: " + text
            before = scenarios.read_weights(sandbox)
            second = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "green-owned-record"), out=captured)
            assert (second.status, second.error) == ("FAILED", "TrafficOwnedByController")
            assert "owner blue-cluster" in second.cause and "owner green-cluster" in second.cause, second.cause
            assert second.weights == before == BASELINE, "nothing moved"


def test_a_rule_the_load_balancer_controller_tagged_is_refused_before_anything_moves(tmp_path):
    """The controller tags each rule it makes (`ingress.k8s.aws/resource: 80:1`): a plan that
    shifts such a rule is refused by `plan check` and at Prepare, the rule untouched."""
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world
        elbv2 = sandbox.client("elbv2")
        forward = {"Type": "forward", "ForwardConfig": {"TargetGroups": [
            {"TargetGroupArn": world.blue_tg, "Weight": 100}, {"TargetGroupArn": world.green_tg, "Weight": 0}]}}
        rule = elbv2.create_rule(ListenerArn=world.listener, Priority=10, Actions=[forward],
                                 Conditions=[{"Field": "path-pattern", "Values": ["/api/*"]}])["Rules"][0]["RuleArn"]
        elbv2.add_tags(ResourceArns=[rule], Tags=[{"Key": "elbv2.k8s.aws/cluster", "Value": "blue"},
                                                  {"Key": "ingress.k8s.aws/stack", "Value": "shop/web"},
                                                  {"Key": "ingress.k8s.aws/resource", "Value": "80:1"}])

        def rule_weights():
            found = elbv2.describe_rules(RuleArns=[rule])["Rules"][0]["Actions"][0]["ForwardConfig"]["TargetGroups"]
            return {g["TargetGroupArn"]: g["Weight"] for g in found}

        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        alb = plan["trafficTargets"][0]
        alb["alb"]["ruleArn"] = rule
        plan["trafficTargets"] = [alb]
        code, text = plan_check(sandbox, tmp_path, plan)
        assert code != 0
        assert "TrafficOwnedByController: trafficTargets[0]" in text, text
        assert "the rule is managed by the AWS Load Balancer Controller (cluster blue, stack shop/web, resource 80:1)" in text
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "green-owned-rule"), out=captured)
        assert (report.status, report.error) == ("FAILED", "TrafficOwnedByController")
        assert report.states == [*TO_PREPARE, *FAILED_BEFORE_TRAFFIC]
        assert rule_weights() == {world.blue_tg: 100, world.green_tg: 0}, "nothing moved"

        # The same rule made by hand (untagged) on a listener the controller owns: the
        # controller deletes rules it does not know, so the listener's tags refuse it too.
        elbv2.remove_tags(ResourceArns=[rule],
                          TagKeys=["elbv2.k8s.aws/cluster", "ingress.k8s.aws/stack", "ingress.k8s.aws/resource"])
        elbv2.add_tags(ResourceArns=[world.listener], Tags=[{"Key": "elbv2.k8s.aws/cluster", "Value": "blue"},
                                                            {"Key": "ingress.k8s.aws/stack", "Value": "shop/web"}])
        code, text = plan_check(sandbox, tmp_path, plan)
        assert code != 0
        assert "its listener is managed by the AWS Load Balancer Controller (cluster blue, stack shop/web)" in text, text
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "green-rule-on-owned-listener"),
                                 out=captured)
        assert (report.status, report.error) == ("FAILED", "TrafficOwnedByController"), report.cause
        assert "its listener is managed by the AWS Load Balancer Controller" in report.cause
        assert rule_weights() == {world.blue_tg: 100, world.green_tg: 0}, "nothing moved"


def test_a_check_finds_weights_a_controller_put_back_and_stops_the_rollout_there():
    """The issue's loop: a controller puts the weights back while a step bakes. Before, every
    check of the bake passed on a canary without traffic; now the first check after the
    revert stops the rollout (or the step's own read-back, when the revert lands between the
    step's write and its read-back)."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        record = plan["trafficTargets"][1]
        record["route53"]["owner"] = {"ignore": IGNORED}
        plan["trafficTargets"] = [record]
        with external_dns(sandbox, "blue-cluster", "blue", 100) as blue, \
                external_dns(sandbox, "green-cluster", "green", 0) as green:
            arn = scenarios.start_manual(sandbox, plan, "green-under-external-dns")
            report = scenarios.watch(sandbox, arn, out=captured)
            reverted = blue.reconciles + green.reconciles
            # The rollout left the record as the foreign writer left it; ExternalDNS owns both
            # sides and puts its own weights back, blue's loop and green's each in its own
            # second: the end read may come between the two (stable 90 / canary 0), so the
            # baseline is waited for, not read once.
            wait_for(lambda: scenarios.read_weights(sandbox)[sandbox.world.record] == (100, 0))

            # Someone sets green's Ingress weight to 50; a person's restore warns that
            # ExternalDNS will put it back, and writes the baseline all the same.
            green.set_weight(sandbox.world.record, "A", "green", 50)
            wait_for(lambda: scenarios.read_weights(sandbox)[sandbox.world.record] == (100, 50))
            # Between two of its reconciles (a loaded machine could otherwise let one land
            # between the restore's write and its read-back).
            with green.paused():
                restored = sandbox.cli("restore", arn, "--yes")
            captured(restored.stdout + restored.stderr)
            assert restored.returncode == 0, restored.stderr
            assert "warning: trafficTargets[0] (route53:" in restored.stdout
            assert "(its TXT registry record cname-app.example.com.) is managed by ExternalDNS (owner " in restored.stdout
            assert "which puts its own weights back" in restored.stdout
            assert "baseline restored, read back:" in restored.stdout
            wait_for(lambda: scenarios.read_weights(sandbox)[sandbox.world.record] == (100, 50))
        started = dict(report.events)["Rollout Started"]
        assert IGNORED in json.dumps(started["trafficTargets"]), started
        assert (report.status, report.error) == ("FAILED", "WeightsChangedExternally")
        assert reverted > 2, "ExternalDNS put the weights back after the step was set"
        assert blue.errors == green.errors == [], (blue.errors, green.errors)
        assert report.states[-1] == "StoppedByForeignChange"
        if "Evaluate" in report.states:
            assert report.states.count("Evaluate") == 1, "stopped at the first check after the revert"
            assert "MovedUnderCheckOutcome" in report.states
            assert "A check at step 1 of 3 found the weights changed outside this rollout" in report.cause, report.cause
            assert "found stable 100 / canary 0, this rollout last set stable 90 / canary 10" in report.cause
            assert report.weights[sandbox.world.record] == (100, 0)
        else:
            # An ExternalDNS loop (every second, one per record) put its record back between the
            # step's write and its read-back: the step itself stops, before any check could pass
            # on the revert. Either loop, or both, may have run by then.
            assert report.states[report.states.index("SetWeights") + 1:].count("SetWeights") == 0
            read_back = re.search(r"wrote stable 90 / canary 10 but read back stable (\d+) / canary (\d+)", report.cause)
            assert read_back, report.cause
            stable, canary = int(read_back[1]), int(read_back[2])
            assert stable in (90, 100) and canary in (10, 0) and (stable, canary) != (90, 10), report.cause
            # Left as the step read it back, or already put back by ExternalDNS's other loop.
            assert report.weights[sandbox.world.record] in ((100, 0), (stable, canary)), report.weights
        assert "Rolled Back" not in event_types(report)


def test_a_rollback_a_controller_undoes_is_put_back_and_reported():
    """After the rollback's restore, controllers reconciling stale state write the canary's
    50/50 back: the Load Balancer Controller on the listener, ExternalDNS (one pass) on the
    record. The look after the settle period re-asserts the baseline, sends Rollback Reverted
    and counts RollbacksReverted, which pages a person."""
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                sandbox.alarm_events.set_state("web-green-5xx", "ALARM", "Threshold Crossed")
            if name == "Restore":
                move_listener_by_hand(sandbox, 50, 50)
                ExternalDns.for_records(sandbox.client("route53"), world.zone_id, "stale-cluster", world.record, "A",
                                        {"blue": 50, "green": 50}).reconcile()

        report = scenarios.watch(sandbox, start_green(sandbox), on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed")
        assert report.states[-6:] == ["NotifyRolledBack", "SettleAfterRestore", "LookAfterRestore", "Reverted?",
                                      "NotifyRollbackReverted", "RolledBack"]
        assert event_types(report)[-2:] == ["Rolled Back", "Rollback Reverted"]
        reverted = dict(report.events)["Rollback Reverted"]
        record_key = f"route53:{world.zone_id}:{world.record}:A"
        assert reverted["found"] == f"{world.listener} was stable 50 / canary 50; {record_key} was stable 50 / canary 50", \
            reverted
        assert report.weights == BASELINE, "the baseline re-asserted"
        assert any(name == "RollbacksReverted" for name, _, _ in report.metrics), report.metrics
        replayed = sandbox.cli("watch", report.execution_arn)
        assert (f"ROLLBACK REVERTED: after the rollback something put weights back ({world.listener} was "
                f"stable 50 / canary 50; {record_key} was stable 50 / canary 50); baseline put back:") in replayed.stdout, \
            replayed.stdout
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


def test_apex_records_let_a_rollout_shift_a_name_beside_each_clusters_external_dns(tmp_path):
    """The supported Route 53 shape: each cluster's ExternalDNS manages its own name
    (blue.shop.example.com, green.shop.example.com); `plan apex-records` creates the weighted
    aliases of shop.example.com that cluster-canary owns, and a rollout shifts them with no
    controller putting anything back."""
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world
        route53 = sandbox.client("route53")
        lb_alias = route53.list_resource_record_sets(
            HostedZoneId=world.zone_id, StartRecordName=world.record, StartRecordType="A",
        )["ResourceRecordSets"][0]["AliasTarget"]

        def cluster_dns(cluster):
            name = f"{cluster}.shop.example.com."
            return ExternalDns(route53, world.zone_id, f"{cluster}-cluster", {(name, "A", None): {"AliasTarget": lb_alias}})

        def shop_weights():
            records = route53.list_resource_record_sets(HostedZoneId=world.zone_id, StartRecordName="shop.example.com.",
                                                        StartRecordType="A")["ResourceRecordSets"]
            return {r["SetIdentifier"]: (r["Weight"], r["AliasTarget"]["DNSName"])
                    for r in records if r["Name"] == "shop.example.com." and r["Type"] == "A"}

        with cluster_dns("blue") as blue, cluster_dns("green") as green:
            scenarios.create_green(sandbox)
            plan = scenarios.manual_plan(sandbox)
            plan["trafficTargets"][1]["route53"]["recordName"] = "shop.example.com"
            path = tmp_path / "plan.json"
            path.write_text(json.dumps(plan))
            points = ["--point", "blue=blue.shop.example.com", "--point", "green=green.shop.example.com"]

            dry = sandbox.cli("plan", "apex-records", str(path), *points, "--dry-run")
            captured(dry.stdout + dry.stderr)
            assert dry.returncode == 0, dry.stderr
            assert "would create shop.example.com. A `blue` weight 100 -> alias of blue.shop.example.com." in dry.stdout
            assert "would create shop.example.com. A `green` weight 0 -> alias of green.shop.example.com." in dry.stdout
            assert "dry run: nothing was written" in dry.stdout
            assert shop_weights() == {}

            created = sandbox.cli("plan", "apex-records", str(path), *points)
            assert created.returncode == 0, created.stderr
            assert shop_weights() == {"blue": (100, "blue.shop.example.com."), "green": (0, "green.shop.example.com.")}
            again = sandbox.cli("plan", "apex-records", str(path), *points)
            assert again.returncode == 0, again.stderr
            assert "keeping shop.example.com. A `green` (weight 0, alias of green.shop.example.com.)" in again.stdout

            # A name ExternalDNS manages is refused as an apex, with nothing written.
            owned = json.loads(json.dumps(plan))
            owned["trafficTargets"][1]["route53"]["recordName"] = "blue.shop.example.com"
            owned_path = tmp_path / "owned.json"
            owned_path.write_text(json.dumps(owned))
            refused = sandbox.cli("plan", "apex-records", str(owned_path), "--point", "blue=b.shop.example.com",
                                  "--point", "green=g.shop.example.com")
            assert refused.returncode == 1
            assert "is managed by ExternalDNS (owner blue-cluster" in refused.stderr, refused.stderr
            assert "nothing was written" in refused.stderr

            # A name where ExternalDNS keeps weighted records under other set identifiers
            # (blue-cluster, green-cluster): refused, both owners named, nothing written.
            ext = "ext.shop.example.com."
            ext_dns = [ExternalDns(route53, world.zone_id, f"{c}-cluster",
                                   {(ext, "A", f"{c}-cluster"): {"Weight": w, "AliasTarget": lb_alias}})
                       for c, w in (("blue", 100), ("green", 0))]
            with ext_dns[0], ext_dns[1]:
                wait_for(lambda: all(d.reconciles >= 1 for d in ext_dns))
                beside = json.loads(json.dumps(plan))
                beside["trafficTargets"][1]["route53"]["recordName"] = "ext.shop.example.com"
                beside_path = tmp_path / "beside.json"
                beside_path.write_text(json.dumps(beside))

                def ext_records():
                    return sorted((r.get("SetIdentifier"), r["Type"]) for r in route53.list_resource_record_sets(
                        HostedZoneId=world.zone_id, StartRecordName=ext)["ResourceRecordSets"] if r["Name"] == ext)
                before = ext_records()
                refused = sandbox.cli("plan", "apex-records", str(beside_path), *points)
                captured(refused.stdout + refused.stderr)
                assert refused.returncode == 1, refused.stdout
                assert "managed by ExternalDNS (owner blue-cluster" in refused.stderr, refused.stderr
                assert "managed by ExternalDNS (owner green-cluster" in refused.stderr, refused.stderr
                assert "under any set identifier" in refused.stderr
                assert ext_records() == before, "nothing written"

            report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "green-shop"), out=captured)
            assert report.status == "SUCCEEDED", report.cause
            assert shop_weights() == {"blue": (0, "blue.shop.example.com."), "green": (100, "green.shop.example.com.")}
            assert blue.reconciles == green.reconciles == 1, "each ExternalDNS wrote its own name once, nothing after"
            assert blue.errors == green.errors == []


def test_plan_check_says_which_registry_records_it_cannot_use(tmp_path):
    """ExternalDNS runs with `--txt-prefix=edns-` and owns blue's record; the plan gives no
    owner.txtPrefix, so the ownership check looks at the default registry names only and
    finds nothing there: `plan check` says where the registry records are. A registry record
    ExternalDNS encrypted (`--txt-encrypt-enabled`) at a default name cannot be read: said too."""
    with Sandbox(log=captured) as sandbox:
        world = sandbox.world
        route53 = sandbox.client("route53")
        with ExternalDns.for_records(route53, world.zone_id, "blue-cluster", world.record, "A", {"blue": 100},
                                     interval=1.0, txt_prefix="edns-") as blue:
            wait_for(lambda: blue.reconciles >= 1)
            route53.change_resource_record_sets(HostedZoneId=world.zone_id, ChangeBatch={"Changes": [{
                "Action": "UPSERT", "ResourceRecordSet": {
                    "Name": f"cname-{world.record}", "Type": "TXT", "SetIdentifier": "green", "Weight": 0,
                    "TTL": 300, "ResourceRecords": [{"Value": '"KUb1a2V6Zm9vYmFyIHNlY3JldCBjaXBoZXJ0ZXh0IQ=="'}]}}]})
            scenarios.create_green(sandbox)
            plan = scenarios.manual_plan(sandbox)
            code, text = plan_check(sandbox, tmp_path, plan)
            assert (f"! trafficTargets[1] (route53:{world.zone_id}:{world.record}:A): ExternalDNS registry records "
                    f"of this record's sets are at edns-cname-{world.record} (set blue), where this plan does not look") \
                in text, text
            assert f"TXT records at cname-{world.record} cannot be read as ExternalDNS registry records" in text, text
            assert "--txt-encrypt-enabled" in text

            # With the prefix given, the claim is seen and refused; only the unreadable one is said.
            plan["trafficTargets"][1]["route53"]["owner"] = {"txtPrefix": "edns-"}
            code, text = plan_check(sandbox, tmp_path, plan)
        assert code != 0
        assert "is managed by ExternalDNS (owner blue-cluster" in text, text
        assert "where this plan does not look" not in text
