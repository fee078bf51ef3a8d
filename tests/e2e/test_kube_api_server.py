"""The Kubernetes API test server against what a real kube-apiserver v1.28 and Argo CD's
ApplicationSet controller answered for the same requests (shared notes, real-kube-apiserver.md):
field ownership by structured-merge-diff (kube-fieldmanager), the 409 texts, resourceVersion
preconditions, and goTemplates rendered by text/template with sprig. No sandbox: the server
alone, over HTTPS on loopback."""
import base64
import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import yaml

from sandbox.harness import REPO

SECRETS = "/api/v1/namespaces/argocd/secrets"
SETS = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets"
APPS = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications"
WEIGHT = "cluster-canary.io/weight"
APPLY = "application/apply-patch+yaml"


@pytest.fixture
def kube():
    server = subprocess.Popen(
        [sys.executable, "tests/kube/kube_api_server.py", "--admin-token", "admin", "--argocd-sim", "healthy"],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(server.stdout.readline())
        context = ssl.create_default_context(cadata=base64.b64decode(info["caData"]).decode())

        def request(method, path, body=None, content_type="application/json", user_agent="kubectl/v1.32.0 (linux/amd64)"):
            sent = urllib.request.Request(
                info["server"] + path, method=method, data=None if body is None else json.dumps(body).encode(),
                headers={"Authorization": "Bearer admin", "Content-Type": content_type, "User-Agent": user_agent})
            try:
                with urllib.request.urlopen(sent, context=context) as answer:
                    return answer.status, json.load(answer)
            except urllib.error.HTTPError as e:
                return e.code, json.load(e)

        yield request
    finally:
        server.kill()
        server.wait()


def cluster_secret(name, cluster, annotations=None):
    metadata = {"name": name, "labels": {"argocd.argoproj.io/secret-type": "cluster"}}
    if annotations is not None:
        metadata["annotations"] = annotations
    data = {"name": cluster, "server": f"https://{name}.example.com"}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def weight_patch(name, value, **metadata):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "annotations": {WEIGHT: value}, **metadata}}


def owners(secret, key=WEIGHT):
    return sorted((e["manager"], e["operation"]) for e in secret["metadata"].get("managedFields") or []
                  if f"f:{key}" in e["fieldsV1"].get("f:metadata", {}).get("f:annotations", {}))


def test_a_created_annotation_is_the_creators_and_a_step_apply_over_it_conflicts_in_kubes_words(kube):
    code, created = kube("POST", f"{SECRETS}?fieldManager=kubectl-create",
                         cluster_secret("cluster-blue", "blue", {WEIGHT: "100"}))
    assert code == 201
    assert owners(created) == [("kubectl-create", "Update")]
    code, refused = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights",
                         weight_patch("cluster-blue", "90"), APPLY)
    assert (code, refused["reason"]) == (409, "Conflict")
    assert refused["message"] == ('Apply failed with 1 conflict: conflict with "kubectl-create" using v1: '
                                  '.metadata.annotations.cluster-canary.io/weight')
    assert refused["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                             "message": 'conflict with "kubectl-create" using v1',
                                             "field": ".metadata.annotations.cluster-canary.io/weight"}]
    # An Apply manager is named without its API version.
    kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=platform-team&force=true", weight_patch("cluster-blue", "70"), APPLY)
    code, refused = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights",
                         weight_patch("cluster-blue", "90"), APPLY)
    assert refused["message"] == ('Apply failed with 1 conflict: conflict with "platform-team": '
                                  '.metadata.annotations.cluster-canary.io/weight')


def test_the_same_value_is_co_owned_force_takes_over_and_a_left_out_field_stays_while_another_owns_it(kube):
    kube("POST", SECRETS, cluster_secret("cluster-blue", "blue", {WEIGHT: "100"}))
    code, secret = kube("GET", f"{SECRETS}/cluster-blue")
    assert owners(secret) == [("kubectl", "Update")], "without fieldManager: the User-Agent up to its first /"
    code, same = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights",
                      weight_patch("cluster-blue", "100"), APPLY)
    assert code == 200 and owners(same) == [("cluster-canary-weights", "Apply"), ("kubectl", "Update")]
    code, forced = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights&force=true",
                        weight_patch("cluster-blue", "90"), APPLY)
    assert code == 200 and owners(forced) == [("cluster-canary-weights", "Apply")]
    assert forced["metadata"]["labels"] == {"argocd.argoproj.io/secret-type": "cluster"}, "nothing else changed"
    # The applier leaves the annotation out: nobody else owns it any more, so it goes.
    code, pruned = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights",
                        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cluster-blue"}}, APPLY)
    assert WEIGHT not in (pruned["metadata"].get("annotations") or {})
    assert base64.b64decode(pruned["data"]["name"]) == b"blue", "the creator's fields stay"


def test_a_merge_patch_is_an_update_manager_and_a_resource_version_in_an_apply_is_a_precondition(kube):
    _, created = kube("POST", f"{SECRETS}?fieldManager=kubectl-create", cluster_secret("cluster-blue", "blue"))
    assert "annotations" not in created["metadata"], "no empty maps served"
    _, annotated = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=kubectl-annotate",
                        {"metadata": {"annotations": {WEIGHT: "100"}}}, "application/merge-patch+json")
    assert owners(annotated) == [("kubectl-annotate", "Update")]
    assert annotated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    code, stale = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights&force=true",
                       weight_patch("cluster-blue", "90", resourceVersion=created["metadata"]["resourceVersion"]), APPLY)
    assert (code, stale["reason"]) == (409, "Conflict")
    assert stale["message"] == ('Operation cannot be fulfilled on secrets "cluster-blue": the object has been modified; '
                                'please apply your changes to the latest version and try again')
    code, current = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights&force=true",
                         weight_patch("cluster-blue", "90", resourceVersion=annotated["metadata"]["resourceVersion"]), APPLY)
    assert code == 200 and current["metadata"]["annotations"][WEIGHT] == "90"


def test_a_delete_whose_uid_precondition_fails_is_refused_in_kube_apiservers_words(kube):
    """register-cluster's deregister deletes with the uid it read: another object of the same name
    (deleted and made again since) is not deleted."""
    _, created = kube("POST", f"{SECRETS}?fieldManager=kubectl-create", cluster_secret("cluster-blue", "blue"))
    uid = created["metadata"]["uid"]
    code, refused = kube("DELETE", f"{SECRETS}/cluster-blue",
                         {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "not-" + uid}})
    assert (code, refused["reason"], refused["details"]) == (409, "Conflict", {"name": "cluster-blue", "kind": "secrets"})
    assert refused["message"] == (
        'Operation cannot be fulfilled on secrets "cluster-blue": StorageError: invalid object, Code: 4, '
        "Key: /registry/secrets/argocd/cluster-blue, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: not-{uid}, UID in object meta: {uid}")
    assert kube("GET", f"{SECRETS}/cluster-blue")[0] == 200, "not deleted"
    code, deleted = kube("DELETE", f"{SECRETS}/cluster-blue",
                         {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}})
    assert (code, deleted["status"]) == (200, "Success")
    assert kube("GET", f"{SECRETS}/cluster-blue")[0] == 404


def go_set(weight_template, name_template="web-{{ .nameNormalized }}"):
    shipped = yaml.safe_load((REPO / "infra/kubernetes/gitops-applicationset.yaml").read_text())
    annotations = shipped["spec"]["template"]["spec"]["source"]["helm"]["valuesObject"]["ingress"]["annotations"]
    annotations["external-dns.kubernetes.io/aws-weight"] = weight_template
    shipped["spec"]["template"]["metadata"]["name"] = name_template
    return shipped


def apps(kube):
    """The Applications the set `web` generated."""
    return {a["metadata"]["name"]: a for a in kube("GET", APPS)[1]["items"]
            if any(o["name"] == "web" for o in a["metadata"].get("ownerReferences") or [])}


def weight_of(app):
    return app["spec"]["source"]["helm"]["valuesObject"]["ingress"]["annotations"]["external-dns.kubernetes.io/aws-weight"]


def test_a_bare_index_of_a_secret_without_annotations_stops_the_whole_set_as_argo_cd_does(kube):
    kube("POST", SECRETS, cluster_secret("cluster-blue", "blue", {WEIGHT: "100"}))
    kube("POST", SECRETS, cluster_secret("cluster-team", "team"))  # no annotations at all
    kube("POST", SETS, go_set('{{ index .metadata.annotations "cluster-canary.io/weight" | default "0" }}'))
    assert apps(kube) == {}, "no Application of the set, for any cluster"
    _, app_set = kube("GET", f"{SETS}/web")
    [condition] = app_set["status"]["conditions"]
    assert condition["type"] == "ErrorOccurred"
    assert ('executing "base" at <.metadata.annotations>: map has no entry for key "annotations"'
            in condition["message"]), condition


def test_the_shipped_snippet_renders_for_every_cluster_secret_and_any_eks_name(kube):
    long_name = "Team_" + "Payments" * 11 + "x" * 7
    assert len(long_name) == 100
    shipped = yaml.safe_load((REPO / "infra/kubernetes/gitops-applicationset.yaml").read_text())
    kube("POST", SECRETS, cluster_secret("cluster-blue", "blue", {WEIGHT: "100"}))
    kube("POST", SECRETS, cluster_secret("cluster-team", long_name))
    kube("POST", SECRETS, cluster_secret("cluster-green", "Web_Green-", {"other": "x"}))
    assert kube("POST", SETS, shipped)[0] == 201
    generated = apps(kube)
    normalized = "web-" + long_name.lower().replace("_", "-")
    assert set(generated) == {"web-blue", normalized, "web-web-green"}, set(generated)
    assert [weight_of(generated[n]) for n in ("web-blue", normalized, "web-web-green")] == ["100", "0", "0"]
    ingress = generated[normalized]["spec"]["source"]["helm"]["valuesObject"]["ingress"]["annotations"]
    assert ingress["external-dns.kubernetes.io/set-identifier"] == long_name
    # `.name` as the Application's name: the server refuses it, and says so in the set's status.
    kube("DELETE", f"{SETS}/web")
    shipped["spec"]["template"]["metadata"]["name"] = "web-{{ .name }}"
    kube("POST", SETS, shipped)
    assert "web-Web_Green-" not in apps(kube)
    _, app_set = kube("GET", f"{SETS}/web")
    assert "a lowercase RFC 1123 subdomain" in app_set["status"]["conditions"][0]["message"]


def test_argo_cds_template_engine_has_sprig_without_env_and_network_functions(kube):
    kube("POST", SECRETS, cluster_secret("cluster-blue", "blue", {WEIGHT: "100"}))
    kube("POST", SETS, go_set('{{ .metadata.annotations | keys | sortAlpha | join "," | upper }}'))
    assert weight_of(apps(kube)["web-blue"]) == WEIGHT.upper()
    kube("DELETE", f"{SETS}/web")
    kube("POST", SETS, go_set('{{ env "HOME" }}'))
    _, app_set = kube("GET", f"{SETS}/web")
    assert 'function "env" not defined' in app_set["status"]["conditions"][0]["message"]
