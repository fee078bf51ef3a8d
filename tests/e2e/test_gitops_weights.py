"""End to end: GitOps mode (issue 19), a Route 53 target `"via": "argocd"` whose records each
cluster's ExternalDNS owns. cluster-canary writes the weights as an annotation on the Argo CD
cluster Secrets; the ApplicationSet of infra/kubernetes/gitops-applicationset.yaml (applied to
the Kubernetes test server's Argo CD simulation) templates it into each cluster's Ingress; the
simulated sync writes the Ingress; each cluster's ExternalDNS stand-in (sandbox/controllers.py)
reads its Ingress and writes Route 53 in moto. Nothing writes Route 53 around ExternalDNS but a
restore.
"""
import base64
import json
import os
import re
import time

import pytest

from helpers import FAILED_BEFORE_TRAFFIC, TO_PREPARE, captured, event_types
from sandbox import scenarios
from sandbox.gitops import (STABLE_SECRET, WEIGHT, apply_stable_weight_as, gitops_world, kube, secret,
                            write_before_next)
from sandbox.harness import Sandbox

def record_weights(sandbox):
    return scenarios.read_weights(sandbox)[sandbox.world.record]


def holds(sandbox):
    """How many times each restore's hold put the baseline back, from the functions' logs."""
    with open(os.path.join(sandbox.run_dir, "functions.log"), errors="replace") as log:
        return [int(m.group(1)) for line in log if "the baseline held" in line
                for m in [re.search(r'"reasserted":(\d+)', line)] if m]


def owners(meta, key=WEIGHT):
    """The managers that own annotation `key`, from managedFields: {(manager, operation)}."""
    return {(e["manager"], e["operation"]) for e in meta.get("managedFields") or []
            if f"f:{key}" in ((e.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:annotations", {})}


# An EKS cluster name of 100 characters with `_` and upper case: not a Kubernetes name.
LONG_EKS_NAME = "Team_" + "Payments" * 11 + "x" * 7


def add_cluster_without_annotations(sandbox):
    """A third cluster's Secret made with `kubectl create`, no annotations at all, with
    LONG_EKS_NAME: the ApplicationSet must still render, for it (weight 0) and for every other
    cluster."""
    data = {"name": LONG_EKS_NAME, "server": "https://team.example.com", "config": "{}"}
    kube(sandbox, "POST", "/api/v1/namespaces/argocd/secrets?fieldManager=kubectl-create", {
        "metadata": {"name": "cluster-team", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "type": "Opaque", "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}})


def rolls_out(sandbox, plan, name):
    """A rollout of green that must promote, every step read back from Route 53 as ExternalDNS
    wrote it (the caller runs both ExternalDNS stand-ins)."""
    seen = []

    def on_event(event, state):
        if event == "NotifyShifted":
            # SetWeights has returned: Route 53 reads the step, as ExternalDNS wrote it.
            seen.append((state["cursor"]["step"]["weight"], record_weights(sandbox)))

    report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, name), on_event=on_event, out=captured)
    assert report.status == "SUCCEEDED", (report.error, report.cause)
    assert seen == [(w, (100 - w, w)) for w in (10, 50, 100)], seen
    assert report.weights[sandbox.world.record] == (0, 100)
    return report


def promotes(sandbox, plan, blue_dns, green_dns, name):
    """Green created, then rolls_out with both ExternalDNS stand-ins running."""
    with blue_dns, green_dns:
        scenarios.create_green(sandbox)
        report = rolls_out(sandbox, plan, name)
    assert blue_dns.errors == green_dns.errors == [], (blue_dns.errors, green_dns.errors)
    return report


def test_a_gitops_rollout_promotes_with_every_step_read_back_from_route53():
    """The stable's weight made with `kubectl create` (another field manager owns it); a third
    cluster whose Secret has no annotations and a 100-character EKS name with `_`."""
    with Sandbox(log=captured) as sandbox:
        plan, blue_dns, green_dns = gitops_world(sandbox)
        add_cluster_without_annotations(sandbox)
        assert owners(secret(sandbox, STABLE_SECRET)[0]) == {("kubectl-create", "Update")}
        scenarios.create_green(sandbox)
        path = os.path.join(sandbox.run_dir, "plan.json")
        with open(path, "w") as f:
            json.dump(plan, f)
        checked = sandbox.cli("plan", "check", path, env=sandbox.management_env())
        captured(checked.stdout + checked.stderr)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert (f'Secret {STABLE_SECRET} has `{WEIGHT}: "100"`, owned by "kubectl-create" (Update): the first step '
                f"takes it over") in checked.stdout, checked.stdout
        with blue_dns, green_dns:
            rolls_out(sandbox, plan, "green-through-argocd")
        assert blue_dns.errors == green_dns.errors == [], (blue_dns.errors, green_dns.errors)
        assert blue_dns.reconciles >= 3 and green_dns.reconciles >= 3, "ExternalDNS wrote every step"

        blue_meta, blue_data = secret(sandbox, STABLE_SECRET)
        assert blue_meta["annotations"][WEIGHT] == "0"
        assert owners(blue_meta) == {("cluster-canary-weights", "Apply")}, blue_meta["managedFields"]
        assert blue_data["name"] == "blue" and blue_meta["labels"] == {"argocd.argoproj.io/secret-type": "cluster"}, \
            "nothing but the annotation changed on a Secret cluster-canary did not create"
        green = scenarios.read_secret(sandbox, scenarios.cluster_arn("green"))
        assert green["annotations"][WEIGHT] == "100"

        app_set = kube(sandbox, "GET", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets/web")
        assert not (app_set.get("status") or {}).get("conditions"), app_set["status"]
        team = kube(sandbox, "GET", f"/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/web-{LONG_EKS_NAME.lower().replace('_', '-')}")
        assert team is not None, "a valid Application for the 100-character EKS name"
        ingress = team["spec"]["source"]["helm"]["valuesObject"]["ingress"]["annotations"]
        assert ingress["external-dns.kubernetes.io/aws-weight"] == "0", ingress
        assert ingress["external-dns.kubernetes.io/set-identifier"] == LONG_EKS_NAME, "the plan's set identifier"


@pytest.mark.parametrize("setup", ["client-side-apply", "kubectl-annotate", "another-apply"])
def test_a_stable_weight_set_up_any_usual_way_is_taken_over_and_promotes(setup):
    """docs/shapes/gitops.md, set-up step 2, done with client-side `kubectl apply`, with
    `kubectl annotate`, or by another team's server-side apply: the annotation is another field
    manager's, at the baseline's weight; the first step takes it over and the rollout promotes."""
    with Sandbox(log=captured) as sandbox:
        plan, blue_dns, green_dns = gitops_world(sandbox, stable_setup=setup)
        manager = {"client-side-apply": ("kubectl-client-side-apply", "Update"),
                   "kubectl-annotate": ("kubectl-annotate", "Update"),
                   "another-apply": ("platform-team", "Apply")}[setup]
        assert owners(secret(sandbox, STABLE_SECRET)[0]) == {manager}
        promotes(sandbox, plan, blue_dns, green_dns, f"green-{setup}")
        blue_meta, blue_data = secret(sandbox, STABLE_SECRET)
        assert owners(blue_meta) == {("cluster-canary-weights", "Apply")}, blue_meta["managedFields"]
        assert blue_data["name"] == "blue", "the Secret kept its data"


def test_a_write_between_the_steps_read_and_its_apply_is_not_overwritten():
    """Someone annotates the stable's Secret (80) after the first step has read it and before
    its apply lands: the apply's resourceVersion precondition answers 409, nothing of the
    step's is written over it, and the rollout rolls back as for any change outside it."""
    with Sandbox(log=captured) as sandbox:
        plan, blue_dns, green_dns = gitops_world(sandbox)
        write_before_next(sandbox, "PATCH", f"secrets/{STABLE_SECRET}", "kubectl-annotate", {WEIGHT: "80"})
        with blue_dns, green_dns:
            scenarios.create_green(sandbox)
            arn = scenarios.start_manual(sandbox, plan, "green-raced")
            report = scenarios.watch(sandbox, arn, out=captured)
        assert (report.status, report.error) == ("FAILED", "WeightsNotSynced"), (report.error, report.cause)
        assert f"annotation on Secret {STABLE_SECRET} changed outside this rollout; nothing was overwritten" in report.cause
        assert "the object has been modified" in report.cause, report.cause
        assert report.states[-1] == "RolledBack", report.states
        assert report.weights[sandbox.world.record] == (100, 0)
        assert secret(sandbox, STABLE_SECRET)[0]["annotations"][WEIGHT] == "100", "the restore forced the baseline"


def test_a_gitops_rollback_holds_the_baseline_while_argo_cd_catches_up():
    """A check fails at 50 %: the restore writes Route 53 at once and the annotations; until
    Argo CD's sync (3 s here) reaches the Ingresses, ExternalDNS keeps writing 50/50 back, and
    the restore puts the baseline back each time. Two ExternalDNS intervals after the end, the
    baseline still holds, and nothing was reverted behind the rollback."""
    with Sandbox(log=captured, sync_delay=3.0) as sandbox:
        plan, blue_dns, green_dns = gitops_world(sandbox)

        def on_event(name, state):
            if name == "SetWeights" and state["cursor"]["step"]["weight"] == 50:
                sandbox.alarm_events.set_state("web-green-5xx", "ALARM", "Threshold Crossed")

        with blue_dns, green_dns:
            scenarios.create_green(sandbox)
            arn = scenarios.start_manual(sandbox, plan, "green-through-argocd-fails")
            report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
            assert (report.status, report.error) == ("FAILED", "CheckFailed"), report.cause
            assert report.weights[sandbox.world.record] == (100, 0)
            time.sleep(2 * blue_dns.interval + 0.5)
            assert record_weights(sandbox) == (100, 0), "the baseline holds through two ExternalDNS intervals"
            assert secret(sandbox, STABLE_SECRET)[0]["annotations"][WEIGHT] == "100"
            assert scenarios.read_secret(sandbox, scenarios.cluster_arn("green"))["annotations"][WEIGHT] == "0"
            # The next rollout steps, whoever owns the annotation after the forced restore.
            sandbox.alarm_events.set_state("web-green-5xx", "OK", "Recovered")
            rolls_out(sandbox, plan, "green-through-argocd-again")
        assert blue_dns.errors == green_dns.errors == [], (blue_dns.errors, green_dns.errors)
        assert "Rollback Reverted" not in event_types(report)
        assert report.states[-1] == "RolledBack"
        # The Restore's hold put the baseline back at least once (the look after the settle
        # period does not hold: it found nothing to do).
        held = holds(sandbox)
        assert len(held) == 1 and held[0] >= 1, held
        assert secret(sandbox, STABLE_SECRET)[0]["annotations"][WEIGHT] == "0", "the second rollout promoted"


def test_a_step_that_never_reaches_route53_fails_and_rolls_back():
    """The new cluster's ExternalDNS is down: the step's annotations reach both Ingresses, but
    only the stable's record follows. After syncTimeoutSeconds the step fails (WeightsNotSynced)
    and the rollout rolls back, writing Route 53 directly."""
    with Sandbox(log=captured) as sandbox:
        plan, blue_dns, _ = gitops_world(sandbox)
        plan["trafficTargets"][0]["route53"]["gitops"]["syncTimeoutSeconds"] = 10
        with blue_dns:
            scenarios.create_green(sandbox)
            arn = scenarios.start_manual(sandbox, plan, "green-never-in-route53")
            report = scenarios.watch(sandbox, arn, out=captured)
        assert (report.status, report.error) == ("FAILED", "WeightsNotSynced"), report.cause
        assert "after 10 s Route 53 still reads stable 90 / canary 0" in report.cause, report.cause
        assert "Argo CD has not synced the Ingresses, or ExternalDNS has not written them" in report.cause
        assert report.weights[sandbox.world.record] == (100, 0)
        assert "Rolled Back" in event_types(report)


def test_a_rollback_takes_over_an_annotation_another_field_manager_set():
    """Mid-bake at 50 %, someone sets the stable's weight annotation to 70 by server-side apply
    under their own field manager, taking it over (`kubectl apply --server-side
    --force-conflicts --field-manager=kubectl`); Argo CD and
    ExternalDNS carry it to Route 53. The next check finds the record moved and the rollout
    rolls back: the restore writes Route 53, then forces the annotations back (the canary's
    first), so Route 53 ends at the baseline and the execution ends Rolled Back, not
    RollbackFailed."""
    with Sandbox(log=captured) as sandbox:
        plan, blue_dns, green_dns = gitops_world(sandbox)
        plan["bake"] = {"seconds": 12, "checkIntervalSeconds": 2}
        applied = []

        def on_event(name, state):
            if name == "NotifyShifted" and state["cursor"]["step"]["weight"] == 50 and not applied:
                applied.append(apply_stable_weight_as(sandbox, "kubectl", 70))

        with blue_dns, green_dns:
            scenarios.create_green(sandbox)
            arn = scenarios.start_manual(sandbox, plan, "green-annotation-taken")
            report = scenarios.watch(sandbox, arn, on_event=on_event, out=captured)
            assert applied, "the foreign apply happened during the 50 % bake"
            assert (report.status, report.error) == ("FAILED", "WeightsNotSynced"), (report.error, report.cause)
            assert report.states[-1] == "RolledBack", report.states
            assert "RollbackFailedOutcome" not in report.states
            assert report.weights[sandbox.world.record] == (100, 0)
            time.sleep(2 * blue_dns.interval + 0.5)
            assert record_weights(sandbox) == (100, 0), "ExternalDNS carries the baseline now"
        assert "Rolled Back" in event_types(report)
        blue_meta, _ = secret(sandbox, STABLE_SECRET)
        assert blue_meta["annotations"][WEIGHT] == "100"
        assert "kubectl" not in {m["manager"] for m in blue_meta["managedFields"]}, \
            "the rollback took the annotation over"
        assert scenarios.read_secret(sandbox, scenarios.cluster_arn("green"))["annotations"][WEIGHT] == "0"


def test_a_stable_secret_that_is_not_the_stable_clusters_is_refused_before_anything_moves(tmp_path):
    """gitops.stableSecret naming a Secret that is not an Argo CD cluster Secret, or the cluster
    Secret of a third cluster: `plan check` (given the management cluster) and Prepare refuse
    it, and nothing is annotated or moved."""
    with Sandbox(log=captured) as sandbox:
        plan, blue_dns, green_dns = gitops_world(sandbox)
        encoded = {k: base64.b64encode(v.encode()).decode()
                   for k, v in {"name": "purple", "server": "https://purple.example.com", "config": "{}"}.items()}
        kube(sandbox, "POST", "/api/v1/namespaces/argocd/secrets", {
            "metadata": {"name": "cluster-purple", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
            "type": "Opaque", "data": encoded})
        kube(sandbox, "POST", "/api/v1/namespaces/argocd/secrets", {
            "metadata": {"name": "web-tls"}, "type": "Opaque", "data": {"tls.crt": base64.b64encode(b"x").decode()}})
        path = tmp_path / "plan.json"
        with blue_dns, green_dns:
            scenarios.create_green(sandbox)
            path.write_text(json.dumps(plan))
            unchecked = sandbox.cli("plan", "check", str(path))
            assert "not looked at from here: no access to the management cluster" in unchecked.stdout, unchecked.stdout
            checked = sandbox.cli("plan", "check", str(path), env=sandbox.management_env())
            captured(checked.stdout + checked.stderr)
            assert checked.returncode == 0, checked.stdout + checked.stderr
            assert f"Secrets {STABLE_SECRET} and the new cluster's, once registered" in checked.stdout, checked.stdout
            before = record_weights(sandbox)
            for name, expected in [
                ("web-tls", "Secret web-tls is not an Argo CD cluster Secret (it has no label "
                            "`argocd.argoproj.io/secret-type: cluster`)"),
                ("cluster-purple", "Secret cluster-purple registers cluster `purple`, not the stable cluster `blue`"),
            ]:
                plan["trafficTargets"][0]["route53"]["gitops"]["stableSecret"] = name
                path.write_text(json.dumps(plan))
                refused = sandbox.cli("plan", "check", str(path), env=sandbox.management_env())
                captured(refused.stdout + refused.stderr)
                assert refused.returncode != 0
                assert "TargetMisconfigured" in refused.stdout and expected in refused.stdout, refused.stdout
                report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, f"green-{name}"), out=captured)
                assert (report.status, report.error) == ("FAILED", "TargetMisconfigured"), report.cause
                assert expected in report.cause
                assert report.states == [*TO_PREPARE, *FAILED_BEFORE_TRAFFIC]
                assert WEIGHT not in (secret(sandbox, name)[0].get("annotations") or {}), "nothing annotated"
            assert record_weights(sandbox) == before == (100, 0), "nothing moved"
