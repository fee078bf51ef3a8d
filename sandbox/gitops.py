"""The management cluster of the sandbox (its Kubernetes API test server, Argo CD simulation)
as a test or a seeded history drives it: requests as its administrator, the GitOps world of
issue 19 (a Route 53 record `"via": "argocd"`, each cluster's ExternalDNS reading the Ingress
Argo CD syncs), a foreign server-side apply, and faults of the API server."""
import base64
import json
import ssl
import time
import urllib.error
import urllib.request

import yaml

from . import scenarios
from .controllers import ExternalDns, IngressSource
from .harness import REPO

STABLE_SECRET = "cluster-blue"
WEIGHT = "cluster-canary.io/weight"
APPLICATION_SET = REPO / "infra/kubernetes/gitops-applicationset.yaml"


def kube(sandbox, method, path, body=None, content_type="application/json"):
    """A request to the management cluster as its administrator: the answer, or None for a 404.
    A fault the API server was told to give (429, 5xx) is asked again, as a person or kubectl
    would (a history queues at most 12 of them)."""
    context = ssl.create_default_context(cadata=base64.b64decode(sandbox.kube["caData"]).decode())
    request = urllib.request.Request(
        f"{sandbox.kube['server']}{path}", method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer sandbox-admin", "Content-Type": content_type})
    for attempt in range(16):
        try:
            with urllib.request.urlopen(request, context=context) as response:
                return json.load(response)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            if e.code not in (429, 500, 503) or attempt == 15:
                raise
            time.sleep(0.5)


def secret(sandbox, name):
    """A Secret's metadata and its decoded data."""
    found = kube(sandbox, "GET", f"/api/v1/namespaces/argocd/secrets/{name}")
    return found["metadata"], {k: base64.b64decode(v).decode() for k, v in found["data"].items()}


# The ways a platform team sets the stable's weight annotation before the first rollout
# (docs/shapes/gitops.md, set-up step 2), each as kubectl or another tool sends it; each leaves
# the annotation owned by another field manager than cluster-canary's.
STABLE_SETUPS = ("kubectl-create", "client-side-apply", "kubectl-annotate", "another-apply")


def stable_secret_manifest(annotations=None):
    encoded = {k: base64.b64encode(v.encode()).decode()
               for k, v in {"name": "blue", "server": "https://blue.example.com", "config": "{}"}.items()}
    metadata = {"name": STABLE_SECRET, "namespace": "argocd", "labels": {"argocd.argoproj.io/secret-type": "cluster"}}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque", "data": encoded}


def make_stable_secret(sandbox, setup):
    """The stable cluster blue's Secret with its weight at 100, made the way `setup` names:
    `kubectl create` of a manifest with the annotation; client-side `kubectl apply` (a create
    that records last-applied-configuration); `kubectl create` without it, then `kubectl
    annotate` (a merge patch); or another team's server-side apply."""
    secrets = "/api/v1/namespaces/argocd/secrets"
    if setup == "kubectl-create":
        kube(sandbox, "POST", f"{secrets}?fieldManager=kubectl-create", stable_secret_manifest({WEIGHT: "100"}))
    elif setup == "client-side-apply":
        manifest = stable_secret_manifest({WEIGHT: "100"})
        manifest["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(manifest)
        kube(sandbox, "POST", f"{secrets}?fieldManager=kubectl-client-side-apply", manifest)
    elif setup == "kubectl-annotate":
        kube(sandbox, "POST", f"{secrets}?fieldManager=kubectl-create", stable_secret_manifest())
        kube(sandbox, "PATCH", f"{secrets}/{STABLE_SECRET}?fieldManager=kubectl-annotate",
             {"metadata": {"annotations": {WEIGHT: "100"}}}, content_type="application/merge-patch+json")
    elif setup == "another-apply":
        kube(sandbox, "PATCH", f"{secrets}/{STABLE_SECRET}?fieldManager=platform-team",
             stable_secret_manifest({WEIGHT: "100"}), content_type="application/apply-patch+yaml")
    else:
        raise ValueError(f"unknown set-up {setup!r}: one of {STABLE_SETUPS}")


def gitops_world(sandbox, sync_timeout_seconds=20, stable_setup="kubectl-create"):
    """The ApplicationSet, then the stable cluster blue's Secret as a platform team has it (its
    weight 100 already there, set the `stable_setup` way), and each cluster's ExternalDNS
    reading its own Ingress (started by the caller). The plan: the world's record only, through
    Argo CD."""
    world = sandbox.world
    kube(sandbox, "POST", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets",
         yaml.safe_load(APPLICATION_SET.read_text()))
    make_stable_secret(sandbox, stable_setup)

    def external_dns(cluster, weight):
        source = IngressSource(sandbox.kube, "sandbox-admin", cluster, "shop", "web")
        return ExternalDns.for_records(sandbox.client("route53"), world.zone_id, f"{cluster}-cluster", world.record,
                                       "A", {cluster: weight}, interval=1.0, source=source)

    plan = scenarios.manual_plan(sandbox)
    record = plan["trafficTargets"][1]
    record["route53"].update(via="argocd", gitops={"stableSecret": STABLE_SECRET,
                                                   "syncTimeoutSeconds": sync_timeout_seconds})
    plan["trafficTargets"] = [record]
    plan.setdefault("argocd", {})["minApps"] = 1  # the ApplicationSet's one Application per cluster
    return plan, external_dns("blue", 100), external_dns("green", 0)


def apply_stable_weight_as(sandbox, manager, weight):
    """Someone sets the stable's weight annotation by server-side apply under their own field
    manager, taking it over (`kubectl apply --server-side --force-conflicts
    --field-manager=<manager>`)."""
    return kube(
        sandbox, "PATCH", f"/api/v1/namespaces/argocd/secrets/{STABLE_SECRET}?fieldManager={manager}&force=true",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": STABLE_SECRET, "annotations": {WEIGHT: str(weight)}}},
        content_type="application/apply-patch+yaml")


def write_before_next(sandbox, method, path_contains, manager, annotations):
    """Another writer's merge patch of `annotations` (as field manager `manager`) lands just
    before the next `method` request on a path containing `path_contains` is served: a write
    between a client's read and its write (tests/kube/kube_api_server.py, its faults)."""
    kube(sandbox, "POST", "/_test/faults",
         {"method": method, "pathContains": path_contains, "times": 1,
          "writeFirst": {"fieldManager": manager, "annotations": annotations}})


def fail_next(sandbox, method, path_contains, times, code):
    """The API server answers the next `times` requests of `method` on a path containing
    `path_contains` with `code` (429 TooManyRequests with Retry-After, or a 5xx), as a
    loaded or restarting kube-apiserver does (tests/kube/kube_api_server.py, its faults)."""
    kube(sandbox, "POST", "/_test/faults",
         {"method": method, "pathContains": path_contains, "times": times, "code": code})
