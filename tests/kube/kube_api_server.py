"""A Kubernetes API test server: just enough of kube-apiserver for Argo CD cluster
registration, over HTTPS, following the Kubernetes API conventions (JSON objects, `Status`
errors, 401/403/404/409 semantics). No real kube-apiserver can be installed on our machines.

What it serves (core/v1 Secrets and argoproj.io/v1alpha1 Applications, namespaced):
  GET    /api/v1/namespaces/{ns}/secrets[?labelSelector=k=v,k!=v,k]
  POST   /api/v1/namespaces/{ns}/secrets[?fieldManager=M]       create (409 AlreadyExists)
  GET|PUT /api/v1/namespaces/{ns}/secrets/{name}[?fieldManager=M]
  PATCH  /api/v1/namespaces/{ns}/secrets/{name}?fieldManager=M[&force=true]
         server-side apply (Content-Type application/apply-patch+yaml; JSON is YAML), or a merge
         or strategic merge patch (a Secret has no lists: both are RFC 7386 merges)
  DELETE /api/v1/namespaces/{ns}/secrets/{name}   (DeleteOptions.preconditions.uid: 409 Conflict)
  GET|POST /apis/argoproj.io/v1alpha1/namespaces/{ns}/applications
  GET|PUT|DELETE /apis/argoproj.io/v1alpha1/namespaces/{ns}/applications/{name}
  PATCH  /apis/argoproj.io/v1alpha1/namespaces/{ns}/applications/{name}
         merge patch of metadata.labels and metadata.annotations (e.g. Argo CD's refresh)
  GET|POST /apis/argoproj.io/v1alpha1/namespaces/{ns}/applicationsets
  GET|DELETE /apis/argoproj.io/v1alpha1/namespaces/{ns}/applicationsets/{name}
  GET    /version

Auth: `Authorization: Bearer <token>`. The admin token may do everything; the limited token
is authenticated but forbidden in the Argo CD namespace (403); with `--rbac-token`, that token
may do what the Roles and RoleBindings of the `--rbac` manifests grant its user and groups,
and gets a 403 naming the verb, resource and API group for anything else, on any path (an
unserved resource too: authorization comes first, as in kube-apiserver); anything else is 401. With
`--accept-eks-tokens`, an EKS token (`k8s-aws-v1.` + base64url of a presigned STS
GetCallerIdentity URL that signs `x-k8s-aws-id`) also counts as admin: its shape is checked,
but it is not sent to STS, which is what a real EKS control plane would do.

Field ownership of Secrets is kube-apiserver's, by the library it uses: kube-fieldmanager
(tests/kube/fieldmanager/main.go, sigs.k8s.io/structured-merge-diff, built by scripts/setup.sh)
owns the fields of every write. A create, update or merge patch records an `Update` manager (the
`fieldManager` parameter, else the User-Agent up to its first `/`) owning each field it set; a
server-side apply an `Apply` manager. A non-forced apply of a different value of a field another
manager owns is a 409 Conflict in kube's words; the same value makes the field co-owned;
`force=true` takes it over; a field a manager applied before and leaves out is removed unless
another manager owns it. `managedFields` are served in kube's format (FieldsV1). A
`metadata.resourceVersion` in a PUT, patch or apply body is a precondition: another current
version is a 409 Conflict ("the object has been modified; ..."). `stringData` becomes `data`
before ownership is computed (kube-apiserver tracks an applied `stringData` as given).

Argo CD simulation (`--argocd-sim healthy|degraded`): like an ApplicationSet with a cluster
generator, every new cluster Secret (label argocd.argoproj.io/secret-type=cluster) gets
`--apps-per-cluster` Applications whose destination is the Secret's `server`. They report
Synced/Progressing until `--healthy-after` seconds have passed, then Synced/Healthy
(`healthy`) or stay Synced/Degraded (`degraded`). Deleting the Secret deletes them.
When the namespace has ApplicationSets, they generate the Applications instead, as Argo CD's
ApplicationSet controller would: for each cluster Secret a `clusters` generator selects
(`selector` with `matchLabels` and `matchExpressions` In/NotIn/Exists/DoesNotExist, Kubernetes
semantics; at the top, or nested in `matrix`/`merge`), one Application `<set>-<secret>` owned
by the set (ownerReferences); a `matrix` of `clusters` and a `list` generator gives one per
list element, `<set>-<element app>-<secret>`. A set annotated
`kube-api-test-server/generate: "false"` generates nothing (a stuck generator). Deleting a set
deletes its Applications.
A set's `template.spec` becomes each Application's spec, rendered with the cluster's parameters:
fasttemplate's `{{name}}`, `{{server}}`, `{{metadata.annotations.<key>}}` (a parameter the
cluster lacks stays as written, as in Argo CD), or with `goTemplate: true` by Go's text/template
with sprig minus `env`, `expandenv` and `getHostByName` (kube-fieldmanager: Argo CD's engine),
`goTemplateOptions` applied, every string and map key of `template.metadata.name` and
`template.spec` rendered, with the cluster generator's parameters `name`, `nameNormalized`,
`server`, `project` and `metadata` (`labels`/`annotations` only when the Secret has some). A
goTemplate set's Applications are named by its rendered `template.metadata.name`; a name the
server refuses is not created. A render that fails for any cluster stops the whole set: it
generates and updates nothing, its `status.conditions` says ErrorOccurred with Argo CD's
message. A cluster Secret's change reconciles every set; each render is "synced" `--sync-delay`
seconds later, which writes the Ingress its `source.helm.valuesObject.ingress`
describes ({"name", "namespace", "annotations"}) into that cluster.
The workload clusters: the same server stands in for them, read-only, each under
`/clusters/<name>` (the cluster Secret's `name`):
  GET    /clusters/{cluster}/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses[/{name}]
`--without-applicationsets` serves no ApplicationSet resource (404),
as a cluster without Argo CD's ApplicationSet CRD.

Validation as kube-apiserver does it: object names must be DNS-1123 subdomains, label keys
and values and annotation keys must be well-formed (422 Invalid, with each field in
`details.causes`); an invalid name in a URL reaches validation (not a 404).

With `--audit-log PATH`, every request's verb, URI and User-Agent is appended there as a JSON
line (kube-apiserver's audit log, much reduced).

Faults (a test's control, not part of any Kubernetes API): `POST /_test/faults` as the admin
with {"method", "pathContains", "times", "code"} makes the next `times` authorized requests of
that method on a path containing `pathContains` fail with `code` as kube-apiserver does under
load or while restarting: 429 `TooManyRequests` (with `Retry-After: 1` and
`details.retryAfterSeconds`, as API Priority and Fairness answers), 500 `InternalError`, 503
`ServiceUnavailable`; the request is not served. With {"writeFirst": {"fieldManager",
"annotations"}} instead of a code, another writer's merge patch of the Secret's annotations
lands just before the request is served (a write between a client's read and its write). `GET /_test/faults` lists them, with the
times each has left.

Fed the same Secret write sequences as kube-apiserver 1.28 (issue 56), it now also answers as
kube does: a DELETE whose uid precondition fails (the storage layer's text); 422s in
errors.NewInvalid's shape (`<Kind>[.<group>] "<name>" is invalid: ...`, one error or a bracketed
list; details with the kind, group and each cause's type, field and body) with apimachinery's
validation texts (IsDNS1123Subdomain, IsQualifiedName on lowercased annotation keys,
IsValidLabelValue; a missing name is "name or generateName is required"); an apply without
`fieldManager` (PatchOptions' validation); a create validated first, then refused a
resourceVersion (1.28's 500 without a reason; 1.29 made it a 400) before its name is looked up;
an apply that both conflicts and carries a stale resourceVersion answers the conflict;
`managedFields` reset by `[]` or `[{}]` (isResetManagedFields: only what that write changes is
owned after it) and refused in an apply ("metadata.managedFields must be nil"); a
strategic-merge `$patch: replace` or `delete` on a map.
Where it still differs: a wrong kind's or apiVersion's text (a 400 of its own words here); other
strategic-merge directives (`$retainKeys`, `$deleteFromPrimitiveList`, `$setElementOrder`: a
Secret has no lists); Secrets' data keys and size limits (1 MiB of data, 256 KiB of
annotations); the order of several errors (kube's follows Go's map order, which varies).
Not modelled: watches, resourceVersion preconditions on anything but Secrets, list paging
(limit/continue), field selectors, JSON patches, field ownership of anything but Secrets,
kube's last-applied-configuration handling for a manager named `kubectl` and its cap of 10
Update managers, set-based label selectors in URLs (in, notin), the status
subresource (an Application's `status` is kept as given on create/replace), ClusterRoles (see
`Rbac`), admission, any other resource, other ApplicationSet generators (git, scm, pull
request...), `template.metadata` but a goTemplate's name, a sync of anything but that one
Ingress (no Helm, no Git), an Application's refresh (the annotation is kept, nothing reacts to
it), and any write to a workload cluster's API.

Prints one JSON line {"server": ..., "caData": ..., "port": ...} once it listens, then serves
until killed. caData is the base64 of the PEM CA bundle, as EKS gives it.
"""
import argparse
import base64
import datetime
import ipaddress
import json
import re
import os
import ssl
import subprocess
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

try:
    import yaml
except ImportError:  # JSON bodies still work
    yaml = None

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIELD_MANAGER_BINARY = os.environ.get("KUBE_FIELDMANAGER",
                                      os.path.join(REPO, "target/kube-fieldmanager/kube-fieldmanager"))


class FieldManager:
    """kube-fieldmanager (tests/kube/fieldmanager/main.go), one long-running process: field
    ownership by structured-merge-diff, goTemplates by text/template with sprig. One request at
    a time (a JSON line each way)."""

    def __init__(self):
        if not os.access(FIELD_MANAGER_BINARY, os.X_OK):
            raise SystemExit(f"{FIELD_MANAGER_BINARY} is missing: run scripts/setup.sh (it builds it)")
        self.process = subprocess.Popen([FIELD_MANAGER_BINARY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)
        self.lock = threading.Lock()

    def ask(self, request):
        with self.lock:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("kube-fieldmanager exited")
        return json.loads(line)

APP_NAMES = ["guestbook", "payments", "search", "checkout", "accounts"]


def make_certificates(names=None):
    """A CA generated at start and a server certificate signed by it, for 127.0.0.1/localhost
    or, with `names`, for those DNS names only (to test a name the certificate does not cover)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-api-test-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(n) for n in names]
                if names
                else [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem(ca), pem(cert), key_pem


# k8s.io/apimachinery/pkg/util/validation: the formats, messages and examples its checks say.
DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
QUALIFIED_NAME_FMT = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
LABEL_NAME = re.compile(QUALIFIED_NAME_FMT)
LABEL_VALUE = re.compile(LABEL_VALUE_FMT)


def regex_error(message, fmt, *examples):
    """validation.RegexError, spaces and all."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = "".join((" or " if i else "") + f"'{e}', " for i, e in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def dns1123_subdomain_errors(value):
    """validation.IsDNS1123Subdomain."""
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                  "'-' or '.', and must start and end with an alphanumeric character",
                                  DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


QUALIFIED_NAME_MESSAGE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                          "alphanumeric character")


def qualified_name_errors(value):
    """validation.IsQualifiedName: label keys, annotation keys."""
    parts = value.split("/")
    errors = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + e for e in dns1123_subdomain_errors(prefix)]
    else:
        return ["a qualified name " + regex_error(QUALIFIED_NAME_MESSAGE, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not LABEL_NAME.fullmatch(name):
        errors.append("name part " + regex_error(QUALIFIED_NAME_MESSAGE, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                 "123-abc"))
    return errors


def label_value_errors(value):
    """validation.IsValidLabelValue."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not LABEL_VALUE.fullmatch(value):
        errors.append(regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                                  "'_' or '.', and must start and end with an alphanumeric character",
                                  LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def go_quoted(value):
    """Go's %q of a string (as field.Error prints a bad value)."""
    return json.dumps(value, ensure_ascii=False)


def invalid_status(kind, name, errors, group=""):
    """errors.NewInvalid: a 422 whose message is `<Kind>[.<group>] "<name>" is invalid: ...` and
    whose causes are the field errors. `errors` are (type, field, bad value or None, detail),
    type "FieldValueInvalid" or "FieldValueRequired" (field.ErrorType's values)."""
    def body(kind_of_error, value, detail):
        said = {"FieldValueInvalid": "Invalid value", "FieldValueRequired": "Required value"}[kind_of_error]
        if kind_of_error == "FieldValueInvalid":
            said += ": " + go_quoted(value)
        return f"{said}: {detail}" if detail else said

    texts = [f"{field}: {body(t, value, detail)}" for t, field, value, detail in errors]
    qualified = f"{kind}.{group}" if group else kind
    message = f'{qualified} "{name}" is invalid: ' + (texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]")
    details = {"name": name, "group": group, "kind": kind,
               "causes": [{"reason": t, "message": body(t, value, detail), "field": field}
                          for t, field, value, detail in errors]}
    return status(422, "Invalid", message, {k: v for k, v in details.items() if v})


def invalid_metadata(kind, name, meta, group=""):
    """What kube-apiserver's ValidateObjectMeta says of an object's name, labels and annotation
    keys (annotation keys lowercased first, as it does), as errors.NewInvalid does (None when
    valid). A missing name is `name or generateName is required`."""
    errors = []
    if not name:
        errors.append(("FieldValueRequired", "metadata.name", None, "name or generateName is required"))
    else:
        errors += [("FieldValueInvalid", "metadata.name", name, e) for e in dns1123_subdomain_errors(name)]
    for key, value in (meta.get("labels") or {}).items():
        errors += [("FieldValueInvalid", "metadata.labels", key, e) for e in qualified_name_errors(key)]
        if value is not None:  # (None: a merge patch removing the label)
            errors += [("FieldValueInvalid", "metadata.labels", value, e) for e in label_value_errors(str(value))]
    for key in (meta.get("annotations") or {}):
        errors += [("FieldValueInvalid", "metadata.annotations", key, e) for e in qualified_name_errors(key.lower())]
    return invalid_status(kind, name or "", errors, group) if errors else None


def status(code, reason, message, details=None):
    """A Status; `reason` None for kube's StatusReasonUnknown (an error no registry converted),
    which is left out."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if reason is None:
        del body["reason"]
    if details:
        body["details"] = details
    return code, body


# What kube-apiserver answers when it sheds load (API Priority and Fairness) or is restarting.
FAULTS = {
    429: status(429, "TooManyRequests", "too many requests, please try again later", {"retryAfterSeconds": 1}),
    500: status(500, "InternalError", "Internal error occurred: etcdserver: request timed out"),
    503: status(503, "ServiceUnavailable", "the server is currently unable to handle the request"),
}


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def matches_selector(labels, selector):
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            k = k.rstrip("=")
            if labels.get(k) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


class Rbac:
    """Roles and RoleBindings (rbac.authorization.k8s.io/v1) from manifests, for the one
    identity `--rbac-token` authenticates: user `--rbac-user` in groups `--rbac-groups`. A
    request is allowed when a RoleBinding in its namespace binds that user or one of those
    groups to a Role there with a rule naming its API group, resource and verb (and, when the
    rule has resourceNames, the object's name); `*` matches anything. Not modelled:
    ClusterRoles and ClusterRoleBindings, aggregation, non-resource URLs, subresources."""

    def __init__(self, paths, user, groups):
        self.user, self.groups = user, set(groups)
        self.roles, self.bindings = {}, []
        for path in paths or []:
            with open(path) as f:
                for doc in yaml.safe_load_all(f):
                    if not doc:
                        continue
                    meta = doc["metadata"]
                    if doc["kind"] == "Role":
                        self.roles[(meta["namespace"], meta["name"])] = doc.get("rules") or []
                    elif doc["kind"] == "RoleBinding":
                        self.bindings.append(doc)
                    else:
                        raise ValueError(f"{path}: {doc['kind']} is not modelled (Role and RoleBinding are)")

    def binds_us(self, binding):
        return any((s["kind"] == "User" and s["name"] == self.user) or (s["kind"] == "Group" and s["name"] in self.groups)
                   for s in binding.get("subjects") or [])

    def allows(self, ns, group, resource, verb, name):
        def has(items, value):
            return "*" in items or value in items

        for binding in self.bindings:
            if binding["metadata"]["namespace"] != ns or binding["roleRef"]["kind"] != "Role" or not self.binds_us(binding):
                continue
            for rule in self.roles.get((ns, binding["roleRef"]["name"]), []):
                if (has(rule.get("apiGroups") or [], group) and has(rule.get("resources") or [], resource)
                        and has(rule.get("verbs") or [], verb)
                        and (not rule.get("resourceNames") or (name is not None and name in rule["resourceNames"]))):
                    return True
        return False


def selector_matches(labels, selector):
    """A metav1.LabelSelector as Kubernetes evaluates it: every matchLabels pair and every
    matchExpressions requirement holds; NotIn and DoesNotExist hold for a missing label; an
    empty selector matches everything."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for requirement in selector.get("matchExpressions") or []:
        key, operator, values = requirement.get("key"), requirement.get("operator"), requirement.get("values") or []
        holds = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(operator, False)
        if not holds:
            return False
    return True


def cluster_params(clusters, labels, name, server, annotations=None):
    """The parameters a `clusters` generator gives a cluster, flattened as Argo CD flattens
    them for a post-selector and fasttemplate."""
    params = {"name": name, "server": server, **{f"metadata.labels.{k}": v for k, v in labels.items()},
              **{f"metadata.annotations.{k}": v for k, v in (annotations or {}).items()}}
    params.update({f"values.{k}": v for k, v in ((clusters or {}).get("values") or {}).items() if isinstance(v, str)})
    return params


def generated_names(spec, labels, depth=0, name="", server=""):
    """The name parts of the Applications an ApplicationSet's generators make for a cluster
    Secret with `labels`: "" for a selecting `clusters` generator (whose post-selector, the
    generator's own `selector`, keeps the cluster's parameters), each element's `app` for a
    matrix of a selecting `clusters` generator and a `list` generator."""
    names = []
    for generator in spec.get("generators") or []:
        if ("clusters" in generator and selector_matches(labels, (generator["clusters"] or {}).get("selector"))
                and selector_matches(cluster_params(generator["clusters"], labels, name, server),
                                     generator.get("selector"))):
            names.append("")
        for combining in ("matrix", "merge"):
            inner = (generator.get(combining) or {}).get("generators") or []
            if not inner or depth >= 2:
                continue
            if not generated_names({"generators": [g for g in inner if "list" not in g]}, labels, depth + 1, name, server):
                continue
            elements = [e for g in inner if "list" in g for e in (g["list"].get("elements") or [])]
            names += [str(e.get("app", i)) for i, e in enumerate(elements)] if combining == "matrix" and elements else [""]
    return names


FAST = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")


def render(value, params):
    """A fasttemplate ApplicationSet template's value with the cluster's parameters in it (a
    parameter the cluster lacks stays as written, as in Argo CD)."""
    if isinstance(value, dict):
        return {render(k, params): render(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, params) for v in value]
    if not isinstance(value, str):
        return value
    return FAST.sub(lambda m: params.get(m.group(1), m.group(0)), value)


class RenderError(Exception):
    """A goTemplate that failed for a cluster: Argo CD's message."""


def sanitize_name(name):
    """Argo CD's utils.SanitizeName, which gives the cluster generator's `nameNormalized`."""
    name = re.sub(r"[^-a-z0-9.]", "-", name.lower())[:253]
    return name.strip("-.")


def go_cluster_params(secret):
    """The parameters Argo CD's cluster generator gives a goTemplate: `metadata` has
    `labels` and `annotations` only when the Secret has some."""
    metadata = {field: values for field, values in (("labels", labels_of(secret)), ("annotations", annotations_of(secret)))
                if values}
    params = {"name": secret_text(secret, "name"), "nameNormalized": sanitize_name(secret_text(secret, "name")),
              "server": secret_text(secret, "server"), "metadata": metadata}
    if (secret.get("data") or {}).get("project"):
        params["project"] = secret_text(secret, "project")
    return params


def secret_text(secret, key):
    return base64.b64decode((secret.get("data") or {}).get(key) or "").decode()


class Store:
    def __init__(self, args):
        self.args = args
        self.rbac = Rbac(args.rbac, args.rbac_user, (args.rbac_groups or "").split(",")) if args.rbac_token else None
        self.lock = threading.Lock()
        self.secrets = {}  # (ns, name) -> object
        self.fields = FieldManager()
        self.apps = {}  # (ns, name) -> object
        self.app_sets = {}  # (ns, name) -> object
        self.generated = {}  # (ns, secret name) -> [app names]
        self.ingresses = {}  # (cluster name, ns, name) -> Ingress the simulated sync wrote
        self.resource_version = 0
        self.faults = []  # [{"method", "pathContains", "times", "code"}], used up front to back

    def take_fault(self, method, path):
        """The first fault with times left that matches, used once; or None."""
        with self.lock:
            for fault in self.faults:
                if fault["times"] > 0 and fault["method"] == method and fault["pathContains"] in path:
                    fault["times"] -= 1
                    return fault
        return None

    def next_version(self):
        self.resource_version += 1
        return str(self.resource_version)

    def new_metadata(self, ns, name, meta):
        return {
            "name": name,
            "namespace": ns,
            "uid": str(uuid.uuid4()),
            "resourceVersion": self.next_version(),
            "creationTimestamp": now_rfc3339(),
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
        }

    # --- Argo CD simulation -------------------------------------------------------------
    def simulate_argocd(self, ns, secret):
        if self.args.argocd_sim == "off" or labels_of(secret).get(SECRET_TYPE_LABEL) != "cluster":
            return
        key = (ns, secret["metadata"]["name"])
        sets = [app_set for (n, _), app_set in sorted(self.app_sets.items()) if n == ns]
        if not sets:
            if key not in self.generated:
                server = secret_text(secret, "server")
                self.generated[key] = [self.generate_app(ns, f"{app}-{secret['metadata']['name']}", server, app)
                                       for app in APP_NAMES[: self.args.apps_per_cluster]]
            return
        # A cluster Secret's change requeues every ApplicationSet, which renders for every cluster.
        for app_set in sets:
            self.reconcile_set(ns, app_set)

    def reconcile_set(self, ns, app_set):
        """One ApplicationSet reconcile, as Argo CD's controller does it: the template rendered
        for every cluster its generators give; a render that fails for any cluster (a goTemplate
        error) stops the whole set, which generates and updates no Application and records the
        error in its status (ErrorOccurred); an Application name the server refuses is not
        created, and said in the status too."""
        if annotations_of(app_set).get("kube-api-test-server/generate") == "false":
            return
        spec = app_set.get("spec") or {}
        template = spec.get("template") or {}
        go = bool(spec.get("goTemplate"))
        wanted = []
        try:
            for (n, secret_name), secret in sorted(self.secrets.items()):
                if n != ns or labels_of(secret).get(SECRET_TYPE_LABEL) != "cluster":
                    continue
                for part in generated_names(spec, labels_of(secret), name=secret_text(secret, "name"),
                                            server=secret_text(secret, "server")):
                    name, rendered = self.render_template(template, secret, go, spec.get("goTemplateOptions") or [])
                    if not (go and name):
                        name = "-".join(p for p in (app_set["metadata"]["name"], part, secret_name) if p)
                    wanted.append((secret, part, name, rendered))
        except RenderError as e:
            app_set["status"] = {"conditions": [{"type": "ErrorOccurred", "status": "True",
                                                 "reason": "ApplicationGenerationFromParamsError", "message": str(e)}]}
            return
        problems = []
        for secret, part, name, rendered in wanted:
            if (ns, name) not in self.apps:
                invalid = invalid_metadata("Application", name, {}, "argoproj.io")
                if invalid:
                    problems.append(invalid[1]["message"])
                    continue
                owner = {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": app_set["metadata"]["name"],
                         "uid": app_set["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
                self.generate_app(ns, name, secret_text(secret, "server"), part or app_set["metadata"]["name"], owner)
                self.apps[(ns, name)]["_set"] = app_set["metadata"]["name"]
                self.generated.setdefault((ns, secret["metadata"]["name"]), []).append(name)
            if rendered is not None:
                self.update_app(ns, name, rendered, secret_text(secret, "name"))
        app_set["status"] = {"conditions": [{"type": "ErrorOccurred", "status": "True",
                                             "reason": "ApplicationGenerationFromParamsError",
                                             "message": "; ".join(problems)}]} if problems else {}

    def render_template(self, template, secret, go, options):
        """The template's (name, spec) for one cluster: goTemplates by Go's text/template and
        sprig (kube-fieldmanager), with the parameters Argo CD's cluster generator gives;
        otherwise fasttemplate's forms. The spec is None when the template has none."""
        if not go:
            params = cluster_params(None, labels_of(secret), secret_text(secret, "name"),
                                    secret_text(secret, "server"), annotations_of(secret))
            return None, render(template["spec"], params) if template.get("spec") else None
        params = go_cluster_params(secret)
        answer = self.fields.ask({"op": "render", "params": params, "options": options,
                                  "template": {"name": (template.get("metadata") or {}).get("name") or "",
                                               "spec": template.get("spec") or {}}})
        if answer.get("error"):
            raise RenderError(answer["error"])
        return answer["value"]["name"], answer["value"]["spec"] if template.get("spec") else None

    def update_app(self, ns, app_name, spec, cluster):
        """An Application's spec as rendered, and its sync scheduled, if it differs."""
        app = self.apps.get((ns, app_name))
        if app is None or spec == app["spec"]:
            return
        app["spec"] = spec
        timer = threading.Timer(self.args.sync_delay, self.sync, (ns, app_name, json.dumps(spec), cluster))
        timer.daemon = True
        timer.start()

    def sync(self, ns, app_name, rendered, cluster):
        """Argo CD's sync of one render: the Ingress it describes, in the cluster. A render
        overtaken by a newer one is not synced."""
        with self.lock:
            app = self.apps.get((ns, app_name))
            if app is None or json.dumps(app["spec"]) != rendered:
                return
            ingress = ((app["spec"].get("source") or {}).get("helm") or {}).get("valuesObject", {}).get("ingress")
            if not ingress:
                return
            namespace = ingress.get("namespace") or app["spec"].get("destination", {}).get("namespace")
            self.ingresses[(cluster, namespace, ingress["name"])] = {
                "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": ingress["name"], "namespace": namespace,
                             "annotations": dict(ingress.get("annotations") or {}),
                             "resourceVersion": self.next_version()},
            }

    def generate_app(self, ns, name, server, app, owner=None):
        metadata = self.new_metadata(ns, name, {"labels": {"cluster-canary.test/generated": "true"}})
        if owner:
            metadata["ownerReferences"] = [owner]
        self.apps[(ns, name)] = {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": metadata,
            "spec": {
                "project": "default",
                "destination": {"server": server, "namespace": app},
                "source": {"repoURL": "https://git.example.com/apps.git", "path": app},
            },
            "status": {"sync": {"status": "OutOfSync"}, "health": {"status": "Progressing"}},
            "_simulated_since": time.monotonic(),
        }
        return name

    def set_created(self, ns, app_set):
        """A new ApplicationSet generates for the cluster Secrets already there."""
        if self.args.argocd_sim != "off":
            self.reconcile_set(ns, app_set)

    def settle(self, app):
        since = app.get("_simulated_since")
        if since is None:
            return
        if time.monotonic() - since >= self.args.healthy_after:
            health = "Healthy" if self.args.argocd_sim == "healthy" else "Degraded"
            app["status"] = {"sync": {"status": "Synced"}, "health": {"status": health}}

    def forget_generated(self, ns, secret_name):
        for name in self.generated.pop((ns, secret_name), []):
            self.apps.pop((ns, name), None)


def is_eks_token(token):
    if not token.startswith("k8s-aws-v1."):
        return False
    encoded = token[len("k8s-aws-v1."):]
    try:
        url = urlparse(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
    except ValueError:
        return False
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    return (
        url.scheme == "https"
        and re.fullmatch(r"sts\.[a-z0-9-]+\.amazonaws\.com", url.hostname or "") is not None
        and query.get("Action") == "GetCallerIdentity"
        and "x-k8s-aws-id" in query.get("X-Amz-SignedHeaders", "").split(";")
        and "X-Amz-Signature" in query
    )


def labels_of(obj):
    return obj["metadata"].get("labels") or {}


def annotations_of(obj):
    return obj["metadata"].get("annotations") or {}


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def strategic_merge_patch(target, patch):
    """A strategic merge patch of an object without lists: RFC 7386 but for a map's `$patch`
    directive, `replace` (the map becomes the patch's, the directive aside) or `delete` (the map
    goes)."""
    if not isinstance(patch, dict):
        return patch
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    rest = {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "replace":
        return {k: strategic_merge_patch(None, v) for k, v in rest.items() if v is not None}
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in rest.items():
        value = strategic_merge_patch(merged.get(key), value)
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def without_times(obj):
    """An object as a write compares it: the managers' times and the resourceVersion aside."""
    meta = dict(obj["metadata"])
    meta.pop("resourceVersion", None)
    meta["managedFields"] = [{k: v for k, v in e.items() if k != "time"} for e in meta.get("managedFields") or []]
    return {**obj, "metadata": meta}


def public(obj):
    return {k: v for k, v in obj.items() if not k.startswith("_")}


class Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # no 40 ms wait per answer (sandbox/front_door.py)
    protocol_version = "HTTP/1.1"
    store: Store = None

    def log_message(self, fmt, *args):  # quiet; the tests read results, not logs
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if code == 429:
            self.send_header("Retry-After", "1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self, raw):
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            if yaml is None:
                raise
            return yaml.safe_load(raw)

    def authorize(self, ns, verb, group, resource, name):
        header = self.headers.get("Authorization", "")
        token = header[len("Bearer "):] if header.startswith("Bearer ") else None
        if token == self.store.args.admin_token:
            return None
        if token and self.store.args.accept_eks_tokens and is_eks_token(token):
            return None
        if token and token == self.store.args.rbac_token:
            rbac = self.store.rbac
            if ns is not None and rbac.allows(ns, group, resource, verb, name):
                return None
            where = f'in the namespace "{ns}"' if ns else "at the cluster scope"
            return status(
                403, "Forbidden",
                f'{resource}{"." + group if group else ""}{f" {name!r}" if name else ""} is forbidden: User '
                f'"{rbac.user}" cannot {verb} resource "{resource}" in API group "{group}" {where}',
                {"kind": resource, "group": group},
            )
        if token and token == self.store.args.limited_token:
            if ns == self.store.args.namespace:
                return status(
                    403,
                    "Forbidden",
                    f'{resource} is forbidden: User "limited" cannot {verb} resource "{resource}" in the namespace "{ns}"',
                    {"kind": resource},
                )
            return None
        return status(401, "Unauthorized", "Unauthorized")

    def route(self, method):
        # Always consume the body (a DELETE carries DeleteOptions): on a kept-alive connection
        # an unread body would be read as the start of the next request.
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.store.args.audit_log:
            # As kube-apiserver's audit log (--audit-log-path), one JSON line per request.
            with self.store.lock, open(self.store.args.audit_log, "a") as audit:
                audit.write(json.dumps({"verb": method, "requestURI": self.path,
                                        "userAgent": self.headers.get("User-Agent")}) + "\n")
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path == "/_test/faults":
            return self.test_faults(method, raw)
        if url.path == "/version":
            return 200, {"major": "1", "minor": "34", "gitVersion": "v1.34.0-kube-api-test-server"}
        workload = re.fullmatch(r"/clusters/([^/]+)/apis/networking\.k8s\.io/v1/namespaces/([a-z0-9-]+)/ingresses(?:/([^/]+))?",
                                url.path)
        if workload:
            return self.ingresses(method, *workload.groups())
        # Any resource path, namespaced or not: authorization comes before knowing whether the
        # resource exists, as in kube-apiserver's filter chain.
        m = re.fullmatch(r"/(?:api/v1|apis/([a-z0-9.-]+)/[a-z0-9]+)(?:/namespaces/([a-z0-9-]+))?/([a-z]+)(?:/([^/]+))?",
                         url.path)
        if not m:
            return status(404, "NotFound", "the server could not find the requested resource")
        group, ns, resource, name = m.groups()
        group = group or ""
        verb = {"GET": "get" if name else "list", "POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[method]
        denied = self.authorize(ns, verb, group, resource, name)
        if denied:
            return denied
        fault = self.store.take_fault(method, url.path)
        if fault and fault.get("code"):
            return FAULTS[fault["code"]]
        if fault and resource == "secrets" and name:
            # Another writer's merge patch lands first: this request then meets a newer object.
            with self.store.lock:
                current = self.store.secrets.get((ns, name))
                if current:
                    theirs = fault["writeFirst"]
                    merged = merge_patch(public(current), {"metadata": {"annotations": theirs["annotations"]}})
                    self.write_secret(ns, name, {"fieldManager": theirs["fieldManager"]}, merged, current, "update")
        served = {("", "secrets"), ("argoproj.io", "applications")}
        if not self.store.args.without_applicationsets:
            served.add(("argoproj.io", "applicationsets"))
        if ns is None or (group, resource) not in served or (
                not url.path.startswith("/api/v1/") and not url.path.startswith("/apis/argoproj.io/v1alpha1/")):
            return status(404, "NotFound", "the server could not find the requested resource")
        try:
            body = self.read_body(raw) if method in ("POST", "PATCH", "PUT", "DELETE") else None
        except ValueError as e:
            return status(400, "BadRequest", f"the request body is not JSON or YAML: {e}")
        with self.store.lock:
            if resource == "secrets":
                return self.secrets(method, ns, name, query, body)
            if resource == "applicationsets":
                return self.application_sets(method, ns, name, body)
            return self.applications(method, ns, name, query, body)

    def test_faults(self, method, raw):
        header = self.headers.get("Authorization", "")
        if header != f"Bearer {self.store.args.admin_token}":
            return status(403, "Forbidden", "only the admin sets faults")
        if method == "GET":
            with self.store.lock:
                return 200, {"items": list(self.store.faults)}
        try:
            body = self.read_body(raw)
            fault = {key: body[key] for key in ("method", "pathContains", "times")}
            fault.update({key: body[key] for key in ("code", "writeFirst") if key in body})
            if "writeFirst" in fault:
                fault["writeFirst"] = {key: fault["writeFirst"][key] for key in ("fieldManager", "annotations")}
        except (ValueError, KeyError, TypeError) as e:
            return status(400, "BadRequest", f"a fault is {{method, pathContains, times, code or writeFirst}}: {e!r}")
        if ("code" in fault) == ("writeFirst" in fault):
            return status(400, "BadRequest", "a fault has a code or a writeFirst, one of them")
        if "code" in fault and fault["code"] not in FAULTS:
            return status(400, "BadRequest", f"code {fault['code']} is not one of {sorted(FAULTS)}")
        with self.store.lock:
            self.store.faults.append(fault)
        return 201, fault

    # --- A workload cluster's Ingresses (read-only) ---------------------------------------
    def ingresses(self, method, cluster, ns, name):
        denied = self.authorize(ns, "get" if name else "list", "networking.k8s.io", "ingresses", name)
        if denied:
            return denied
        if method != "GET":
            return status(405, "MethodNotAllowed", f"{method} is not supported on a workload cluster here")
        with self.store.lock:
            found = {key[2]: obj for key, obj in self.store.ingresses.items() if key[:2] == (cluster, ns)}
        if name is None:
            return 200, {"kind": "IngressList", "apiVersion": "networking.k8s.io/v1", "metadata": {},
                         "items": [found[n] for n in sorted(found)]}
        if name not in found:
            return status(404, "NotFound", f'ingresses.networking.k8s.io "{name}" not found')
        return 200, found[name]

    # --- Secrets ------------------------------------------------------------------------
    def secrets(self, method, ns, name, query, body):
        store = self.store
        if name is None and method == "GET":
            items = [
                public(s)
                for (n, _), s in sorted(store.secrets.items())
                if n == ns and matches_selector(labels_of(s), query.get("labelSelector"))
            ]
            return 200, {"kind": "SecretList", "apiVersion": "v1", "metadata": {"resourceVersion": str(store.resource_version)}, "items": items}
        if name is None and method == "POST":
            # As the registry orders it: validation (422), then the storage's create, which refuses
            # a resourceVersion before it looks the name up (409 AlreadyExists).
            meta = (body or {}).get("metadata") or {}
            name = meta.get("name")
            problem = invalid_metadata("Secret", name, meta)
            if problem:
                return problem
            if meta.get("resourceVersion"):
                # etcd3 store.Create's plain error, which kube-apiserver 1.28 answers as a 500
                # without a reason (1.29 made it a 400).
                return status(500, None, "resourceVersion should not be set on objects to be created")
            if (ns, name) in store.secrets:
                return status(409, "AlreadyExists", f'secrets "{name}" already exists', {"name": name, "kind": "secrets"})
            return self.write_secret(ns, name, query, body, None, "create")
        if name is None:
            return status(405, "MethodNotAllowed", f"{method} is not supported on a collection")
        current = store.secrets.get((ns, name))
        not_found = status(404, "NotFound", f'secrets "{name}" not found', {"name": name, "kind": "secrets"})
        if method == "GET":
            return (200, public(current)) if current else not_found
        if method == "DELETE":
            if not current:
                return not_found
            # DeleteOptions.preconditions, as kube-apiserver checks them: its storage layer refuses
            # the object (an invalid-object StorageError, whose text the registry wraps as a
            # Conflict: k8s.io/apiserver storage.StorageError and storeerr.InterpretDeleteError).
            wanted = ((body or {}).get("preconditions") or {}).get("uid")
            if wanted and wanted != current["metadata"]["uid"]:
                return status(409, "Conflict",
                              f'Operation cannot be fulfilled on secrets "{name}": StorageError: invalid object, '
                              f'Code: 4, Key: /registry/secrets/{ns}/{name}, ResourceVersion: 0, AdditionalErrorMsg: '
                              f'Precondition failed: UID in precondition: {wanted}, UID in object meta: '
                              f'{current["metadata"]["uid"]}',
                              {"name": name, "kind": "secrets"})
            del store.secrets[(ns, name)]
            store.forget_generated(ns, name)
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": {"name": name, "kind": "secrets"}}
        if method == "PUT":
            if not current:
                return not_found
            return self.write_secret(ns, name, query, body, current, "update")
        if method == "PATCH":
            content_type = self.headers.get("Content-Type", "").split(";")[0]
            if content_type == "application/apply-patch+yaml":
                return self.write_secret(ns, name, query, body, current, "apply")
            if content_type not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                return status(415, "UnsupportedMediaType",
                              f"{content_type} is not served here (apply, merge and strategic merge patches are)")
            if not current:
                return not_found
            # A Secret has no lists: a strategic merge patch of it is a JSON merge patch but for
            # its maps' `$patch` directives.
            merge = strategic_merge_patch if content_type.startswith("application/strategic") else merge_patch
            merged = merge({k: v for k, v in public(current).items()}, body)
            return self.write_secret(ns, name, query, merged, current, "update")
        return status(405, "MethodNotAllowed", f"{method} is not supported on secrets here")

    def field_manager(self, query, apply):
        """The request's field manager as kube-apiserver derives it: the `fieldManager`
        parameter, else (not for an apply, which requires it) the User-Agent up to its first
        `/`."""
        if query.get("fieldManager"):
            return query["fieldManager"], None
        if apply:
            return None, invalid_status("PatchOptions", "", [
                ("FieldValueRequired", "fieldManager", None, "is required for apply patch")], "meta.k8s.io")
        return (self.headers.get("User-Agent") or "").split("/")[0][:128], None

    def write_secret(self, ns, name, query, body, current, operation):
        """A create, update or merge patch (an `Update` manager) or a server-side apply (an
        `Apply` manager) of a Secret: validated here, fields owned by kube-fieldmanager, then
        the system metadata (uid, creationTimestamp, resourceVersion) set as the store does."""
        store = self.store
        manager, problem = self.field_manager(query, operation == "apply")
        if problem:
            return problem
        body = body or {}
        if operation == "apply" and (body.get("apiVersion") != "v1" or body.get("kind") != "Secret"):
            return status(400, "BadRequest", "apply patch must name apiVersion v1 and kind Secret")
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            return status(400, "BadRequest", f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})")
        invalid = invalid_metadata("Secret", name, meta)
        if invalid:
            return invalid
        if operation == "apply" and meta.get("managedFields") is not None:
            # structuredMergeManager.Apply refuses an applied object that carries any.
            return status(400, "BadRequest", "metadata.managedFields must be nil")
        # resourceVersion in the body is a precondition (optimistic concurrency), for an apply
        # too, checked by the registry's update after the field manager: an apply that also
        # conflicts answers the field conflict.
        wanted = meta.get("resourceVersion")
        stale = None
        if current is not None and wanted and wanted != current["metadata"]["resourceVersion"]:
            stale = status(409, "Conflict",
                           f'Operation cannot be fulfilled on secrets "{name}": the object has been modified; '
                           f'please apply your changes to the latest version and try again',
                           {"name": name, "kind": "secrets"})
            if operation != "apply":
                return stale
        try:
            data = self.checked_data(body)
        except ValueError as e:
            return status(400, "BadRequest", str(e))
        obj = {"apiVersion": "v1", "kind": "Secret",
               "metadata": {k: meta[k] for k in ("labels", "annotations", "ownerReferences", "finalizers")
                            if meta.get(k)}}
        if meta.get("managedFields") is not None:  # `[]` and `[{}]` too: they reset them
            obj["metadata"]["managedFields"] = meta["managedFields"]
        obj["metadata"].update(name=name, namespace=ns)
        if data or operation != "apply":
            obj["data"] = data
        if "type" in body or operation != "apply":
            obj["type"] = body.get("type") or "Opaque"
        if current is None and operation == "apply":
            # A server-side apply that creates the object needs `create` as well as `patch`,
            # as kube-apiserver authorizes it.
            denied = self.authorize(ns, "create", "", "secrets", name)
            if denied:
                return denied
        live = None if current is None else public(current)
        if operation == "apply":
            answer = store.fields.ask({"op": "apply", "manager": manager, "force": query.get("force") == "true",
                                       "live": live, "patch": obj})
        else:
            answer = store.fields.ask({"op": operation, "manager": manager, "live": live, "object": obj})
        if answer.get("conflict"):
            return status(409, "Conflict", answer["conflict"]["message"],
                          {"name": name, "kind": "secrets", "causes": answer["conflict"]["causes"]})
        if stale:
            return stale
        if answer.get("error"):
            return status(500, "InternalError", f"kube-fieldmanager: {answer['error']}")
        written = answer["object"]
        system = current["metadata"] if current else store.new_metadata(ns, name, {})
        written["metadata"].update({k: system[k] for k in ("uid", "creationTimestamp", "resourceVersion")},
                                   name=name, namespace=ns)
        written.setdefault("type", "Opaque")
        for field in ("labels", "annotations"):  # served as kube serves them: no empty maps
            if not written["metadata"].get(field):
                written["metadata"].pop(field, None)
        if current is None or without_times(written) != without_times(current):
            written["metadata"]["resourceVersion"] = store.next_version()
        else:
            written = current
        store.secrets[(ns, name)] = written
        store.simulate_argocd(ns, written)
        return (201 if current is None else 200), public(written)

    @staticmethod
    def checked_data(body):
        data = dict(body.get("data") or {})
        for k, v in data.items():
            try:
                base64.b64decode(v, validate=True)
            except Exception:
                raise ValueError(f"Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at data.{k}")
        for k, v in (body.get("stringData") or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        return data

    # --- Applications ---------------------------------------------------------------
    def applications(self, method, ns, name, query, body):
        store = self.store
        if name is None and method == "GET":
            items = []
            for (n, _), app in sorted(store.apps.items()):
                if n == ns and matches_selector(app["metadata"]["labels"], query.get("labelSelector")):
                    store.settle(app)
                    items.append(public(app))
            return 200, {"kind": "ApplicationList", "apiVersion": "argoproj.io/v1alpha1", "metadata": {}, "items": items}
        if name is None and method == "POST" or method == "PUT":
            body = body or {}
            name = name or (body.get("metadata") or {}).get("name")
            invalid = invalid_metadata("Application", name, body.get("metadata") or {}, "argoproj.io")
            if invalid:
                return invalid
            exists = (ns, name) in store.apps
            if method == "POST" and exists:
                return status(409, "AlreadyExists", f'applications.argoproj.io "{name}" already exists')
            if method == "PUT" and not exists:
                return status(404, "NotFound", f'applications.argoproj.io "{name}" not found')
            app = {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Application",
                "metadata": store.new_metadata(ns, name, body.get("metadata") or {}),
                "spec": body.get("spec") or {},
                "status": body.get("status") or {},
            }
            store.apps[(ns, name)] = app
            return (200 if exists else 201), public(app)
        if name is None:
            return status(405, "MethodNotAllowed", f"{method} is not supported on a collection")
        app = store.apps.get((ns, name))
        if not app:
            return status(404, "NotFound", f'applications.argoproj.io "{name}" not found')
        if method == "GET":
            store.settle(app)
            return 200, public(app)
        if method == "DELETE":
            del store.apps[(ns, name)]
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        if method == "PATCH":
            if self.headers.get("Content-Type", "").split(";")[0] != "application/merge-patch+json":
                return status(415, "UnsupportedMediaType", "applications here take merge patches only")
            changes = (body or {}).get("metadata") or {}
            merged = {field: {**app["metadata"][field], **(changes.get(field) or {})} for field in ("labels", "annotations")}
            invalid = invalid_metadata("Application", name, merged, "argoproj.io")
            if invalid:
                return invalid
            for field, values in merged.items():
                app["metadata"][field] = {k: v for k, v in values.items() if v is not None}
            app["metadata"]["resourceVersion"] = store.next_version()
            store.settle(app)
            return 200, public(app)
        return status(405, "MethodNotAllowed", f"{method} is not supported on applications here")

    # --- ApplicationSets ------------------------------------------------------------
    def application_sets(self, method, ns, name, body):
        store = self.store
        if name is None and method == "GET":
            items = [public(s) for (n, _), s in sorted(store.app_sets.items()) if n == ns]
            return 200, {"kind": "ApplicationSetList", "apiVersion": "argoproj.io/v1alpha1", "metadata": {}, "items": items}
        if name is None and method == "POST":
            body = body or {}
            name = (body.get("metadata") or {}).get("name")
            invalid = invalid_metadata("ApplicationSet", name, body.get("metadata") or {}, "argoproj.io")
            if invalid:
                return invalid
            if (ns, name) in store.app_sets:
                return status(409, "AlreadyExists", f'applicationsets.argoproj.io "{name}" already exists')
            app_set = {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                       "metadata": store.new_metadata(ns, name, body.get("metadata") or {}), "spec": body.get("spec") or {}}
            store.app_sets[(ns, name)] = app_set
            store.set_created(ns, app_set)
            return 201, public(app_set)
        if name is None:
            return status(405, "MethodNotAllowed", f"{method} is not supported on a collection")
        app_set = store.app_sets.get((ns, name))
        if not app_set:
            return status(404, "NotFound", f'applicationsets.argoproj.io "{name}" not found')
        if method == "GET":
            return 200, public(app_set)
        if method == "DELETE":
            del store.app_sets[(ns, name)]
            for key, app in list(store.apps.items()):
                if any(o.get("uid") == app_set["metadata"]["uid"] for o in app["metadata"].get("ownerReferences") or []):
                    del store.apps[key]
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        return status(405, "MethodNotAllowed", f"{method} is not supported on applicationsets here")

    def handle_method(self, method):
        try:
            code, body = self.route(method)
        except Exception as e:  # a bug here must look like a server error, not a hang
            code, body = status(500, "InternalError", f"test server error: {e!r}")
        self.reply(code, body)

    def do_GET(self):
        self.handle_method("GET")

    def do_POST(self):
        self.handle_method("POST")

    def do_PATCH(self):
        self.handle_method("PATCH")

    def do_PUT(self):
        self.handle_method("PUT")

    def do_DELETE(self):
        self.handle_method("DELETE")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--limited-token", default=None)
    parser.add_argument("--accept-eks-tokens", action="store_true")
    parser.add_argument("--namespace", default="argocd", help="Argo CD's namespace")
    parser.add_argument("--argocd-sim", choices=["off", "healthy", "degraded"], default="off")
    parser.add_argument("--apps-per-cluster", type=int, default=2)
    parser.add_argument("--healthy-after", type=float, default=0.0, help="seconds")
    parser.add_argument("--sync-delay", type=float, default=1.0,
                        help="seconds from an ApplicationSet's render to its simulated sync")
    parser.add_argument("--audit-log", default=None, metavar="PATH",
                        help="append each request (verb, requestURI, userAgent) as a JSON line, like kube-apiserver's audit log")
    parser.add_argument("--rbac-token", default=None,
                        help="a token authorized only by the RBAC manifests (--rbac), as user --rbac-user in --rbac-groups")
    parser.add_argument("--rbac", action="append", metavar="MANIFEST", help="Roles and RoleBindings (YAML, multi-document)")
    parser.add_argument("--rbac-user", default="cluster-canary")
    parser.add_argument("--rbac-groups", default="", help="comma-separated")
    parser.add_argument("--without-applicationsets", action="store_true",
                        help="serve no ApplicationSet resource (404), as without Argo CD's ApplicationSet CRD")
    parser.add_argument("--certificate-for", action="append", default=None, metavar="DNS_NAME",
                        help="serve a certificate for these names only, not for 127.0.0.1 (TLS name mismatch tests)")
    args = parser.parse_args()

    ca_pem, cert_pem, key_pem = make_certificates(args.certificate_for)
    with tempfile.NamedTemporaryFile(suffix=".pem") as chain:
        chain.write(cert_pem + key_pem)
        chain.flush()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(chain.name)
    context.set_alpn_protocols(["http/1.1"])

    Handler.store = Store(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    print(json.dumps({"server": f"https://127.0.0.1:{port}", "port": port, "caData": base64.b64encode(ca_pem).decode()}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
