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


def test_an_apply_that_conflicts_and_carries_a_stale_resource_version_answers_the_conflict(kube):
    """The registry checks the resourceVersion after the field manager: the field conflict is
    what kube-apiserver says (a step's apply after another writer moved the weight)."""
    _, created = kube("POST", f"{SECRETS}?fieldManager=kubectl-create", cluster_secret("cluster-blue", "blue", {WEIGHT: "100"}))
    kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=kubectl-label", {"metadata": {"labels": {"team": "web"}}},
         "application/merge-patch+json")
    stale = created["metadata"]["resourceVersion"]
    code, refused = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights",
                         weight_patch("cluster-blue", "90", resourceVersion=stale), APPLY)
    assert (code, refused["reason"]) == (409, "Conflict")
    assert refused["message"] == ('Apply failed with 1 conflict: conflict with "kubectl-create" using v1: '
                                  '.metadata.annotations.cluster-canary.io/weight')
    # No conflict (the same value, co-owned): then the stale version is what is refused.
    code, refused = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights",
                         weight_patch("cluster-blue", "100", resourceVersion=stale), APPLY)
    assert (code, refused["reason"]) == (409, "Conflict")
    assert "the object has been modified" in refused["message"]


def test_a_create_is_validated_then_refused_a_resource_version_before_its_name_is_looked_up(kube):
    """kube-apiserver 1.28: validation (422), then etcd's store refuses a resourceVersion (a 500
    without a reason), then a taken name (409)."""
    taken = cluster_secret("cluster-blue", "blue")
    assert kube("POST", SECRETS, taken)[0] == 201
    for body in (cluster_secret("cluster-green", "green"), taken):
        body["metadata"]["resourceVersion"] = "12"
        code, refused = kube("POST", SECRETS, body)
        assert code == 500 and "reason" not in refused, refused
        assert refused["message"] == "resourceVersion should not be set on objects to be created"
    bad = cluster_secret("cluster-blue", "blue")
    bad["metadata"]["labels"]["team"] = "web team"
    code, refused = kube("POST", SECRETS, bad)
    assert (code, refused["reason"]) == (422, "Invalid"), "validated before the name is looked up"
    code, refused = kube("POST", SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {}})
    assert (code, refused["message"]) == (422, 'Secret "" is invalid: metadata.name: Required value: name or '
                                               'generateName is required')
    assert refused["details"] == {"kind": "Secret", "causes": [
        {"reason": "FieldValueRequired", "message": "Required value: name or generateName is required",
         "field": "metadata.name"}]}


def test_422s_say_what_kube_apiservers_validation_says(kube):
    code, refused = kube("POST", SECRETS, cluster_secret("Web_Green", "green"))
    why = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
           "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    assert (code, refused["reason"]) == (422, "Invalid")
    assert refused["message"] == f'Secret "Web_Green" is invalid: metadata.name: Invalid value: "Web_Green": {why}'
    assert refused["details"] == {"name": "Web_Green", "kind": "Secret", "causes": [
        {"reason": "FieldValueInvalid", "message": f'Invalid value: "Web_Green": {why}', "field": "metadata.name"}]}
    # Two errors: listed in brackets. A label value too long but well-formed says only its length;
    # an annotation key is checked lowercased (`Team` is fine).
    bad = cluster_secret("cluster-blue", "blue", {"Team": "x", "bad key": "x"})
    bad["metadata"]["labels"]["team"] = "a" * 64
    code, refused = kube("POST", SECRETS, bad)
    name_part = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    assert refused["message"] == (
        f'Secret "cluster-blue" is invalid: [metadata.labels: Invalid value: "{"a" * 64}": must be no more than 63 '
        f'characters, metadata.annotations: Invalid value: "bad key": {name_part}]')
    assert [c["field"] for c in refused["details"]["causes"]] == ["metadata.labels", "metadata.annotations"]
    # An apply without a field manager: PatchOptions' validation.
    code, refused = kube("PATCH", f"{SECRETS}/cluster-blue", weight_patch("cluster-blue", "90"), APPLY)
    assert (code, refused["message"]) == (422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
                                               'value: is required for apply patch')
    assert refused["details"] == {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
        {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
         "field": "fieldManager"}]}


def test_a_strategic_merge_patch_replaces_or_deletes_a_map_as_its_directive_says(kube):
    kube("POST", f"{SECRETS}?fieldManager=kubectl-create", cluster_secret("cluster-blue", "blue", {WEIGHT: "100", "a": "1"}))
    smp = "application/strategic-merge-patch+json"
    code, replaced = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=kubectl-patch",
                          {"metadata": {"annotations": {"$patch": "replace", "b": "2"}}}, smp)
    assert code == 200 and replaced["metadata"]["annotations"] == {"b": "2"}
    code, deleted = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=kubectl-patch",
                         {"metadata": {"annotations": {"$patch": "delete"}}}, smp)
    assert code == 200 and "annotations" not in deleted["metadata"]
    # A JSON merge patch has no directives: `$patch` is an annotation key, which is invalid.
    code, refused = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=kubectl-patch",
                         {"metadata": {"annotations": {"$patch": "replace"}}}, "application/merge-patch+json")
    assert (code, refused["details"]["causes"][0]["field"]) == (422, "metadata.annotations")


def test_managed_fields_reset_by_an_empty_list_or_one_empty_entry_and_refused_in_an_apply(kube):
    kube("POST", f"{SECRETS}?fieldManager=kubectl-create", cluster_secret("cluster-blue", "blue", {WEIGHT: "100"}))
    merge = "application/merge-patch+json"
    code, reset = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=kubectl-patch",
                       {"metadata": {"managedFields": [{}]}}, merge)
    assert code == 200 and "managedFields" not in reset["metadata"], "nothing changed: nobody owns anything"
    kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=kubectl-annotate", {"metadata": {"annotations": {"a": "1"}}}, merge)
    code, reset = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=platform-team",
                       {"metadata": {"managedFields": [], "annotations": {WEIGHT: "90"}}}, merge)
    assert code == 200 and [e["manager"] for e in reset["metadata"]["managedFields"]] == ["platform-team"]
    assert owners(reset) == [("platform-team", "Update")], "only what the resetting write changed is owned"
    # The weight is the resetting writer's alone now (kubectl-create's claim went with the reset).
    code, _ = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights",
                   weight_patch("cluster-blue", "80"), APPLY)
    assert code == 409, "platform-team owns it"
    applied = weight_patch("cluster-blue", "80", managedFields=[])
    code, refused = kube("PATCH", f"{SECRETS}/cluster-blue?fieldManager=cluster-canary-weights", applied, APPLY)
    assert (code, refused["reason"], refused["message"]) == (400, "BadRequest", "metadata.managedFields must be nil")


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
