"""End to end: which Applications a rollout waits for comes from Argo CD's ApplicationSets
(docs/functions.md, "Readiness from the ApplicationSets"), on the sandbox, whose Kubernetes API test server
plays the ApplicationSet controller (tests/kube/kube_api_server.py)."""
import base64
import ssl
import urllib.error
import urllib.request

from helpers import BASELINE, PROMOTED, captured, delete_cluster_event
from sandbox import scenarios
from sandbox.gitops import kube
from sandbox.harness import FUNCTIONS_TOKEN, REPO, Sandbox


def application_set(sandbox, name, generators):
    kube(sandbox, "POST", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets", {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": name},
        "spec": {"generators": generators, "template": {"metadata": {"name": "{{name}}"}, "spec": {}}}})


def test_the_rollout_waits_for_the_applications_of_the_application_sets_that_select_the_cluster():
    with Sandbox(log=captured) as sandbox:
        application_set(sandbox, "web", [{"clusters": {"selector": {"matchLabels": {"fleet": "web"}}}}])
        application_set(sandbox, "per-team", [{"matrix": {"generators": [
            {"list": {"elements": [{"app": "ledger"}, {"app": "search"}]}},
            {"clusters": {"selector": {"matchExpressions": [{"key": "fleet", "operator": "In", "values": ["web"]}]}}},
        ]}}])
        application_set(sandbox, "api-only", [{"clusters": {"selector": {"matchLabels": {"fleet": "api"}}}}])
        scenarios.create_green(sandbox)
        polls = []

        def on_event(name, state):
            if name == "AppsStatus":
                polls.append(state["apps"])

        plan = scenarios.manual_plan(sandbox)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "from-appsets"),
                                 on_event=on_event, out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert report.weights == PROMOTED
        assert polls[-1]["ready"] is True
        assert polls[-1]["reason"] == "all 3 Applications are Synced and Healthy (from ApplicationSets per-team, web)"
        assert polls[-2]["stablePolls"] == 1, "two looks in a row (stableChecks 2) before traffic moves"
        secret = report.secret["name"]
        apps = kube(sandbox, "GET", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications")["items"]
        owned = {app["metadata"]["name"]: app["metadata"]["ownerReferences"][0]["name"] for app in apps}
        assert owned == {f"web-{secret}": "web", f"per-team-ledger-{secret}": "per-team",
                         f"per-team-search-{secret}": "per-team"}


RBAC = REPO / "infra/kubernetes/argocd-rbac.yaml"
REFRESH_RBAC = REPO / "infra/kubernetes/argocd-rbac-refresh.yaml"


def as_functions(sandbox, method, path):
    """A request as the functions make them: the group cluster-canary, RBAC only. The status."""
    context = ssl.create_default_context(cadata=base64.b64decode(sandbox.kube["caData"]).decode())
    request = urllib.request.Request(f"{sandbox.kube['server']}{path}", method=method,
                                     headers={"Authorization": f"Bearer {FUNCTIONS_TOKEN}"})
    try:
        return urllib.request.urlopen(request, context=context).status
    except urllib.error.HTTPError as e:
        return e.code


def test_a_rollout_and_a_deregistration_need_no_more_than_the_documented_rbac():
    with Sandbox(log=captured, rbac=[RBAC]) as sandbox:
        for method, path in [("GET", "/api/v1/namespaces/argocd/configmaps"),
                             ("GET", "/api/v1/namespaces/kube-system/secrets"),
                             ("GET", "/api/v1/namespaces"),
                             ("DELETE", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook")]:
            assert as_functions(sandbox, method, path) == 403, (method, path)
        assert as_functions(sandbox, "GET", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets") == 200

        report = scenarios.run_on(sandbox, "happy", out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert report.secret is not None

        error, deleted = sandbox.invoke("cluster-created", delete_cluster_event("green", "us-east-1"))
        assert not error, deleted
        assert deleted["action"] == "deregistered", deleted
        assert scenarios.read_secret(sandbox, scenarios.cluster_arn("green")) is None


def test_registering_needs_create_as_well_as_patch(tmp_path):
    """A server-side apply that creates the Secret is a `create` for RBAC, as kube-apiserver
    authorizes it: a Role without it fails the rollout before traffic, naming the verb."""
    without_create = tmp_path / "argocd-rbac-without-create.yaml"
    without_create.write_text(RBAC.read_text().replace("verbs: [get, list, create, patch, delete]",
                                                       "verbs: [get, list, patch, delete]"))
    assert without_create.read_text() != RBAC.read_text()
    with Sandbox(log=captured, rbac=[without_create]) as sandbox:
        scenarios.create_green(sandbox)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, scenarios.manual_plan(sandbox), "no-create"),
                                 out=captured)
        assert (report.status, report.error) == ("FAILED", "KubePermissionDenied"), report.cause
        assert "cannot create resource" in report.cause, report.cause
        assert report.max_canary == 0 and report.weights == BASELINE


def test_refreshing_stale_apps_needs_the_refresh_role():
    # Without the refresh role the apps stay Progressing far longer than the rollout's first poll
    # of them, so that poll, however late a busy machine makes it, finds them stale and patches.
    for rbac, refreshed, healthy_after in (([RBAC], False, 600.0), ([RBAC, REFRESH_RBAC], True, 3.0)):
        with Sandbox(log=captured, rbac=rbac, healthy_after=healthy_after) as sandbox:
            scenarios.create_green(sandbox)
            plan = scenarios.manual_plan(sandbox)
            plan["argocd"]["refreshStaleApps"] = True
            report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "refresh"), out=captured)
            if refreshed:
                assert report.status == "SUCCEEDED", report.cause
            else:
                assert (report.status, report.error) == ("FAILED", "KubePermissionDenied"), report.cause
                # Sentences with the error's name once, not the function's JSON error document.
                assert report.cause.startswith("KubePermissionDenied before any traffic moved: "), report.cause
                assert 'cannot patch resource "applications" in API group "argoproj.io"' in report.cause, report.cause
                assert "errorType" not in report.cause and report.cause.count("KubePermissionDenied") == 1
                assert report.max_canary == 0


CAPABILITY_ROLE = "arn:aws:iam::123456789012:role/argocd-capability"


def test_with_the_eks_capability_for_argo_cd_the_cluster_is_its_arn_and_the_role_gets_an_access_entry():
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        plan["argocd"].update(mode="eks-capability", capabilityRoleArn=CAPABILITY_ROLE)
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "capability"), out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert report.weights == PROMOTED
        assert report.secret["data"]["server"] == scenarios.cluster_arn("green")
        assert "config" not in report.secret["data"], "the capability reaches the cluster by its access entry"
        policies = sandbox.client("eks").list_associated_access_policies(
            clusterName="green", principalArn=CAPABILITY_ROLE)["associatedAccessPolicies"]
        assert [p["policyArn"] for p in policies] == [
            "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"]
        assert [p["accessScope"]["type"] for p in policies] == ["cluster"]
