"""End to end: which Applications a rollout waits for comes from Argo CD's ApplicationSets
(README "Readiness from the ApplicationSets"), on the sandbox, whose Kubernetes API test server
plays the ApplicationSet controller (tests/kube/kube_api_server.py)."""
import base64
import json
import ssl
import urllib.request

from helpers import PROMOTED, captured
from sandbox import scenarios
from sandbox.harness import Sandbox


def kube(sandbox, method, path, body=None):
    """A request to the management cluster as its administrator."""
    context = ssl.create_default_context(cadata=base64.b64decode(sandbox.kube["caData"]).decode())
    request = urllib.request.Request(
        f"{sandbox.kube['server']}{path}", method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer sandbox-admin", "Content-Type": "application/json"},
    )
    return json.load(urllib.request.urlopen(request, context=context))


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
