"""IAM, as AWS authorizes the calls of the stack's roles, resources included.

Every request the front door forwards is read for who signed it (the access key in its SigV4
`Authorization`), what it asks (the operation, found in botocore's service model from the
request's protocol: `X-Amz-Target`, `Action=`/`Version=`, the CBOR operation path or the REST
method and URI) and on what (the resource ARNs). A request signed with credentials of an
assumed role (the functions' roles, which lambda_service.py assumes, and the state machine's,
which tests/moto/moto_server.py makes moto's engine assume) is then evaluated as IAM evaluates an
identity's policies: an explicit Deny wins, else an Allow whose Action and Resource match,
else it is refused. A role's policies are read again once a second old, so a change to them
takes effect within a second (IAM's: within seconds). A refused call never reaches moto; it is
answered `AccessDenied` in the service's protocol with AWS's message ("User: <assumed role> is
not authorized to perform: <action> on resource: <arn> because no identity-based policy allows
the <action> action").
Requests signed otherwise (the operator's and the tests' keys) are not checked, as an
administrator's would pass.

The IAM action and the resource types it acts on come from the service authorization data the
policy linter parliament ships (`iam_definition.json`, generated from AWS's Service
Authorization Reference), never from a table here. A resource's ARN is an ARN the request
names that fits the resource type's ARN format, or that format filled from the request's
parameters by name (`${TableName}` from `TableName`, `${ClusterName}` from EKS's `name`, a
DynamoDB batch's table from its keys). A part the request cannot tell (an EKS access entry's
UUID) stays unknown, and only a `*` in a policy's resource covers an unknown part: the
conservative reading, so a grant narrower than the request needs is refused, never passed.

Why not moto's own authorization (INITIAL_NO_AUTH_ACTION_COUNT): moto evaluates every call
against the resource `*`, so a statement scoped to ARNs never matches and the stack's scoped
grants would all be refused; and it treats an unmet condition as a Deny.

Conditions: `StringEquals` and `StringLike` on `aws:RequestTag/<key>` (the tags a query-protocol
request such as ELB's CreateRule puts on what it creates) and `aws:ResourceTag/<key>` (an ELB
resource's tags, read from moto as the caller), IAM's AND across keys and OR across values, a key
the request lacks making the condition false. Any other operator or key is an error here, so a
template that adds one cannot pass unchecked.

Not modelled: other policy conditions, permissions boundaries, SCPs, session policies,
resource-based policies (a Lambda function's, a secret's, an SQS queue's: an EventBridge rule's
delivery to a function is not checked), dependent actions, and calls the AWS SDK-less
Prometheus API of AMP makes (no botocore model has them: refused as unknown).
"""
import fcntl
import functools
import gzip
import json
import os
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import boto3
import botocore
import botocore.session
import cbor2
import parliament

# SigV4's scope names the service by its signing name; IAM by its prefix. The one the stack's
# calls use that differs: CloudWatch signs as `monitoring`.
IAM_PREFIX = {"monitoring": "cloudwatch"}
# API operations whose IAM action has another name (Service Authorization Reference).
IAM_ACTION = {("lambda", "Invoke"): "InvokeFunction", ("s3", "HeadObject"): "GetObject",
              ("s3", "CopyObject"): "PutObject"}
# Values AWS uses for a parameter the request leaves out: PutEvents' bus is `default`.
DEFAULTS = {("events", "EventBusName"): "default"}
# Parameters a request names a resource by that are neither an ARN nor a name: an SQS queue's
# URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`) gives its name.
DERIVED = {("sqs", "QueueUrl"): ("QueueName", lambda url: url.rstrip("/").rsplit("/", 1)[-1]),
           # S3's object ARN format says `${BucketName}/${ObjectName}`; its requests, Bucket and Key.
           ("s3", "Bucket"): ("BucketName", lambda bucket: bucket),
           ("s3", "Key"): ("ObjectName", lambda key: key),
           # An SSM parameter's ARN holds its name without the leading slash
           # (`arn:aws:ssm:<region>:<account>:parameter/cluster-canary/<stack>/freeze`).
           ("ssm", "Name"): ("ParameterNameWithoutLeadingSlash", lambda name: name.lstrip("/")),
           # GetParametersByPath is authorized on the path's own parameter ARN.
           ("ssm", "Path"): ("ParameterNameWithoutLeadingSlash", lambda path: path.lstrip("/"))}
# What stands for a part of an ARN the request cannot tell. No literal character in a
# policy's resource matches it; `*` and `?` do.
UNKNOWN = "\x00"
# A role's policies are read again once this old: a change to them (a history's refusal) takes
# effect within it, as IAM's within seconds.
POLICY_CACHE_SECONDS = 1.0
CREDENTIAL = re.compile(r"Credential=([^/]+)/[^/]+/([^/]+)/([^/]+)/")
TEMPLATE_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class NotModelled(Exception):
    """The request or the policy uses what this evaluator does not model: the harness says so
    rather than guess."""


@functools.cache
def service_authorization():
    """IAM prefix -> {"actions": {name: [(resource type, required)]}, "formats": {resource type:
    [ARN format]}}, every service parliament's data lists under that prefix merged (ELB v1 and v2
    share `elasticloadbalancing`)."""
    data = json.loads((Path(parliament.__file__).parent / "iam_definition.json").read_text())
    services = {}
    for service in data:
        merged = services.setdefault(service["prefix"], {"actions": {}, "formats": {}})
        for privilege in service["privileges"]:
            types = merged["actions"].setdefault(privilege["privilege"], [])
            for resource_type in privilege["resource_types"]:
                name = resource_type["resource_type"]
                if name:
                    entry = (name.rstrip("*"), name.endswith("*"))
                    if entry not in types:
                        types.append(entry)
        for resource in service["resources"]:
            formats = merged["formats"].setdefault(resource["resource"], [])
            if resource["arn"] not in formats:
                formats.append(resource["arn"])
    return services


def _glob(pattern, case_sensitive=True):
    """An IAM wildcard pattern (`*` any run, `?` one character) as a regex."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"^{body}$", 0 if case_sensitive else re.IGNORECASE | re.DOTALL)


def _as_list(value):
    return value if isinstance(value, list) else [value]


def _statement_matches(statement, key, value, case_sensitive):
    if key in statement:
        return any(_glob(p, case_sensitive).match(value) for p in _as_list(statement[key]))
    not_key = "Not" + key
    if not_key in statement:
        return not any(_glob(p, case_sensitive).match(value) for p in _as_list(statement[not_key]))
    return False


class Context:
    """What a statement's conditions read of a request: the tags it puts on what it creates
    (`aws:RequestTag/<key>`), and the tags of a resource it acts on (`aws:ResourceTag/<key>`,
    read when asked)."""

    def __init__(self, request_tags=None, resource_tags=None):
        self.request_tags = request_tags or {}
        self.resource_tags = resource_tags or (lambda arn: {})

    def value(self, key, resource):
        """The condition key's value for the request on `resource`; None when it has none."""
        scope, _, tag = key.partition("/")
        if scope.lower() == "aws:requesttag":
            return self.request_tags.get(tag)
        if scope.lower() == "aws:resourcetag":
            return self.resource_tags(resource).get(tag)
        raise NotModelled(f"the condition key {key} is not one the sandbox's IAM evaluates "
                          "(aws:RequestTag/<key>, aws:ResourceTag/<key>)")


# The condition operators evaluated: each compares the key's value with any of the statement's
# values (IAM's OR within a key); a key the request does not have makes the condition false.
OPERATORS = {
    "StringEquals": lambda value, pattern: value == pattern,
    "StringLike": lambda value, pattern: bool(_glob(pattern).match(value)),
}


def _conditions_hold(condition, context, resource, where):
    """IAM's AND across operators and keys of one statement's Condition, for one resource."""
    for operator, keys in condition.items():
        if operator not in OPERATORS:
            raise NotModelled(f"{where} has the condition operator {operator}, which the sandbox's "
                              f"IAM does not evaluate ({', '.join(OPERATORS)})")
        for key, patterns in keys.items():
            value = context.value(key, resource)
            if value is None or not any(OPERATORS[operator](value, p) for p in _as_list(patterns)):
                return False
    return True


def refused(policies, action, resources, context=None):
    """IAM's identity-policy logic for one action on each of its resources (["*"] for an action
    on none): the resources refused, an explicitly denied one first, else those no statement
    (whose conditions hold for it, in `context`) allows; none when the call is allowed."""
    context = context or Context()
    allowed = set()
    for number, policy in enumerate(policies):
        for index, statement in enumerate(_as_list(policy.get("Statement", []))):
            if not _statement_matches(statement, "Action", action, case_sensitive=False):
                continue
            covered = [r for r in resources if _statement_matches(statement, "Resource", r, True)]
            if not covered:
                continue
            if "Condition" in statement:
                covered = [r for r in covered
                           if _conditions_hold(statement["Condition"], context, r, f"policy {number} statement {index}")]
                if not covered:
                    continue
            if statement["Effect"] == "Deny":
                return covered
            allowed.update(covered)
    return [r for r in resources if r not in allowed]


def evaluate(policies, action, resources, context=None):
    """Whether IAM allows the action on every one of the resources."""
    return not refused(policies, action, resources, context)


REQUEST_TAG = re.compile(r"^Tags\.member\.(\d+)\.(Key|Value)$")


def request_tags(request):
    """The tags a query-protocol request (ELB's CreateRule, AddTags) puts on what it acts on:
    `Tags.member.N.Key` and `.Value`."""
    form = dict(parse_qsl(request.body.decode("utf-8", "replace"))) if request.body else {}
    form.update(request.query)
    pairs = {}
    for key, value in form.items():
        match = REQUEST_TAG.match(key)
        if match:
            pairs.setdefault(match.group(1), {})[match.group(2)] = value
    return {p["Key"]: p.get("Value", "") for p in pairs.values() if "Key" in p}


class Request:
    """What a request asks, read from botocore's service model."""

    def __init__(self, method, path, headers, body):
        self.method, self.headers, self.body = method, headers, body or b""
        # botocore compresses a large PutMetricData (request compression, over 10 KiB), as the
        # SDKs may: AWS reads it, and so does IAM here.
        if self.body and "gzip" in (headers.get("Content-Encoding") or ""):
            self.body = gzip.decompress(self.body)
        split = urlsplit(path)
        # Kept encoded: a URI label may hold an encoded ARN, slashes and all.
        # Blank values kept: S3's `?tagging` names the operation.
        self.path, self.query = split.path, dict(parse_qsl(split.query, keep_blank_values=True))
        scope = CREDENTIAL.search(headers.get("Authorization", ""))
        self.access_key, self.region, self.signing_name = scope.groups() if scope else (None,) * 3


class ServiceModels:
    """botocore's models, indexed by how a request names its service (its signing name) and
    operation. Which services a signing name covers takes reading every model (about 25 s of
    CPU, which each test worker paid at its first request): read once per botocore version and
    kept beside the venv; a service's model is loaded when a request first names it."""

    def __init__(self):
        self.session = botocore.session.get_session()
        self.services = _services_by_signing_name(self.session)
        self.loaded = {}
        self.lock = threading.Lock()

    def models(self, signing_name):
        with self.lock:
            if signing_name not in self.loaded:
                self.loaded[signing_name] = [self.session.get_service_model(name)
                                             for name in self.services.get(signing_name, [])]
            return self.loaded[signing_name]

    def operation(self, request):
        """(service model, operation model, params as a list of (name, value)) or NotModelled."""
        models = self.models(request.signing_name)
        target = request.headers.get("X-Amz-Target")
        if target:
            prefix, operation = target.rsplit(".", 1)
            for model in models:
                if model.metadata.get("targetPrefix") == prefix and operation in model.operation_names:
                    found = model.operation_model(operation)
                    return model, found, _walk(found.input_shape, json.loads(request.body or b"{}"))
        if request.headers.get("smithy-protocol") == "rpc-v2-cbor":
            operation = request.path.rsplit("/operation/", 1)[-1]
            for model in models:
                if operation in model.operation_names:
                    found = model.operation_model(operation)
                    return model, found, _walk(found.input_shape, cbor2.loads(request.body) if request.body else {})
        form = dict(parse_qsl(request.body.decode("utf-8", "replace"))) if request.body else {}
        form.update(request.query)
        if "Action" in form:
            for model in models:
                if model.metadata.get("apiVersion") == form.get("Version") and form["Action"] in model.operation_names:
                    params = [(_member_name(k), v) for k, v in form.items() if k not in ("Action", "Version")]
                    return model, model.operation_model(form["Action"]), params
        best = None
        for model in models:
            for name in model.operation_names:
                operation = model.operation_model(name)
                http = operation.http
                if http.get("method") != request.method:
                    continue
                labels = _uri_pattern(http["requestUri"]).match(request.path)
                if not labels or not _asks_for(operation, request):
                    continue
                if best is None or len(http["requestUri"]) > len(best[1].http["requestUri"]):
                    best = (model, operation, labels.groupdict())
        if best is None:
            raise NotModelled(f"no operation of a service signing as {request.signing_name!r} "
                              f"answers {request.method} {request.path}")
        model, operation, labels = best
        params = []
        for member, shape in (operation.input_shape.members.items() if operation.input_shape else []):
            location, location_name = shape.serialization.get("location"), shape.serialization.get("name", member)
            if location == "uri" and _label(location_name) in labels:
                params.append((member, unquote(labels[_label(location_name)])))
            elif location == "querystring" and location_name in request.query:
                params.append((member, request.query[location_name]))
        return model, operation, params


def _asks_for(operation, request):
    """Whether the request has what the operation's URI and required members put in the query
    string and the headers: S3's `GET /{Bucket}/{Key+}` is GetObject, `?tagging` GetObjectTagging,
    with an `uploadId` ListParts; a PUT with `x-amz-copy-source` is CopyObject."""
    query = operation.http["requestUri"].partition("?")[2]
    for part in filter(None, query.split("&")):
        key, _, value = part.partition("=")
        if key not in request.query or (value and request.query[key] != value):
            return False
    shape = operation.input_shape
    headers = {k.lower() for k in request.headers}
    for member in (shape.required_members if shape else []):
        serialization = shape.members[member].serialization
        name = serialization.get("name", member)
        if serialization.get("location") == "querystring" and name not in request.query:
            return False
        if serialization.get("location") == "header" and name.lower() not in headers:
            return False
    return True


def _services_by_signing_name(session):
    """{signing name: [botocore service names]}, from a file kept per botocore version (written
    under a lock: the test workers start together)."""
    kept = Path(sys.prefix) / f"botocore-signing-names-{botocore.__version__}.json"
    with open(kept.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            return json.loads(kept.read_text())
        services = {}
        for name in session.get_available_services():
            metadata = session.get_service_model(name).metadata
            services.setdefault(metadata.get("signingName") or metadata.get("endpointPrefix"), []).append(name)
        written = kept.with_suffix(f".{os.getpid()}")
        written.write_text(json.dumps(services))
        written.replace(kept)
        return services


@functools.cache
def service_models():
    """One per process: the signing names read from their file, each model loaded when first named."""
    return ServiceModels()


def _label(name):
    return re.sub(r"\W", "_", name)


@functools.cache
def _uri_pattern(request_uri):
    path = request_uri.split("?", 1)[0]
    pattern = re.sub(r"\\\{([^}+]+)(\\\+)?\\\}",
                     lambda m: f"(?P<{_label(m.group(1))}>{'.+' if m.group(2) else '[^/]+'})",
                     re.escape(path))
    return re.compile(f"^{pattern.rstrip('/')}/?$")


def _member_name(query_key):
    """`Actions.member.1.ForwardConfig.TargetGroups.member.2.TargetGroupArn` -> `TargetGroupArn`."""
    parts = [p for p in query_key.split(".") if p != "member" and not p.isdigit()]
    return parts[-1] if parts else query_key


def _walk(shape, value, name=None):
    """Every scalar in a JSON/CBOR request as (member name, value); a map's keys under the name
    of their shape (DynamoDB's RequestItems keys are `TableArn`s: a table's name or ARN)."""
    found = []
    if shape is None:
        return found
    if shape.type_name == "structure" and isinstance(value, dict):
        for member, member_shape in shape.members.items():
            if member in value:
                found += _walk(member_shape, value[member], member)
    elif shape.type_name == "list" and isinstance(value, list):
        for item in value:
            found += _walk(shape.member, item, name)
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            found.append((shape.key.name, key))
            found += _walk(shape.value, item, name)
    elif isinstance(value, str):
        found.append((name, value))
    return found


def _format_pattern(arn_format):
    """An ARN format of the Service Authorization Reference as a regex any ARN of it matches."""
    parts = TEMPLATE_VARIABLE.split(arn_format)
    pattern = "".join(re.escape(p) if i % 2 == 0 else "[^:]*" if p in ("Partition", "Region", "Account") else ".+"
                      for i, p in enumerate(parts))
    return re.compile(f"^{pattern}$")


def _fill(arn_format, params, known):
    """The format with each variable from the request's parameters (an exact name, or one name
    ending with the other: EKS's `name` for `${ClusterName}`, `HealthCheckId` for `${Id}`), the
    request's partition, region and account, or a name of the same stem (a DynamoDB batch's
    `TableArn` keys, which may be names, for `${TableName}`); a variable the request cannot tell is UNKNOWN."""
    def value(match):
        variable = match.group(1)
        if variable in known:
            return known[variable]
        v = variable.lower()
        exact = {val for n, val in params if n and n.lower() == v}
        near = {val for n, val in params if n and (v.endswith(n.lower()) or n.lower().endswith(v))}
        same_stem = {val for n, val in params if n and _stem(n) and _stem(n) == _stem(variable)}
        candidates = exact or near or same_stem
        if len(candidates) == 1:
            only = candidates.pop()
            # A parameter that carries the whole ARN (a function's or a table's) gives its name.
            return only.rsplit(":", 1)[-1].rsplit("/", 1)[-1] if only.startswith("arn:") else only
        return UNKNOWN
    return TEMPLATE_VARIABLE.sub(value, arn_format)


def _stem(name):
    """`TableArn`, `TableName`, `TableId` -> `table`; VPC Lattice's `serviceIdentifier` (an ID or
    an ARN) -> `service`, for `${ServiceId}`."""
    return re.sub(r"(arn|name|id|identifier)$", "", name.lower())


def resource_arns(authorization, prefix, action, params, region, account):
    """The ARNs an action acts on: those the request names that fit one of its resource types,
    else the one a required type's format makes of the request; ["*"] for an action on none."""
    types = authorization.get(prefix, {}).get("actions", {}).get(action)
    if types is None:
        raise NotModelled(f"IAM's service authorization data has no action {prefix}:{action}")
    formats = authorization[prefix]["formats"]
    arns = [v for _, v in params if isinstance(v, str) and v.startswith("arn:")]
    patterns = [(f, _format_pattern(f)) for resource_type, _ in types for f in formats.get(resource_type, [])]
    named = [arn for arn in dict.fromkeys(arns) if any(p.match(arn) for _, p in patterns)]
    if named:
        return named
    required = [f for resource_type, required in types if required for f in formats.get(resource_type, [])]
    if not required:
        return ["*"]
    # The required types are alternatives (an ELB listener is `listener/app` or `listener/net`):
    # the one the request fills best.
    known = {"Partition": "aws", "Region": region, "Account": account}
    return [min((_fill(f, params, known) for f in required), key=lambda arn: arn.count(UNKNOWN))]


def iam_action(model, operation, params):
    """(IAM prefix, IAM action, the params with AWS's defaults for those left out)."""
    signing = model.metadata.get("signingName") or model.metadata["endpointPrefix"]
    prefix = IAM_PREFIX.get(signing, signing)
    action = IAM_ACTION.get((prefix, operation.name), operation.name)
    given = {name for name, _ in params}
    defaults = [(name, value) for (p, name), value in DEFAULTS.items() if p == prefix and name not in given]
    derived = []
    for name, value in params:
        if (prefix, name) in DERIVED:
            derived_name, derive = DERIVED[(prefix, name)]
            derived.append((derived_name, derive(value)))
    return prefix, action, params + defaults + derived


class Authorizer:
    """Decides each request of an assumed role; `decisions` keeps every one (role ARN, action,
    resources, allowed) in order, for tests to read."""

    def __init__(self, moto_endpoint):
        self.moto_endpoint = moto_endpoint
        self.callers = {}
        self.policies = {}
        self.clients = {}
        self.decisions = []
        self.lock = threading.Lock()

    def _client(self, service, access_key, region):
        # moto (without its own authorization) answers a request by the access key alone, so the
        # caller's key finds its identity and its role's policies in the role's own account.
        # Kept: a role's policies are read again every second, and making a client costs more
        # CPU than the reads. Called under self.lock.
        key = (service, access_key, region or "us-east-1")
        if key not in self.clients:
            self.clients[key] = boto3.client(service, endpoint_url=self.moto_endpoint, region_name=key[2],
                                             aws_access_key_id=access_key, aws_secret_access_key="unused")
        return self.clients[key]

    def _caller(self, access_key, region):
        with self.lock:
            if access_key not in self.callers:
                arn = self._client("sts", access_key, region).get_caller_identity()["Arn"]
                self.callers[access_key] = arn if ":assumed-role/" in arn else None
            return self.callers[access_key]

    def _role_policies(self, caller, access_key):
        role_name = caller.split(":assumed-role/", 1)[1].split("/")[0]
        with self.lock:
            read_at, documents = self.policies.get(caller, (0.0, None))
            if time.monotonic() - read_at > POLICY_CACHE_SECONDS:
                iam = self._client("iam", access_key, None)
                documents = [iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
                             for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]]
                for attached in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]:
                    try:
                        policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
                        documents.append(iam.get_policy_version(
                            PolicyArn=attached["PolicyArn"], VersionId=policy["DefaultVersionId"])["PolicyVersion"]["Document"])
                    except iam.exceptions.NoSuchEntityException:
                        # An AWS managed policy moto does not load (AWSLambdaBasicExecutionRole:
                        # CloudWatch Logs, which the sandbox's functions never call).
                        pass
                documents = [json.loads(d) if isinstance(d, str) else d for d in documents]
                self.policies[caller] = (time.monotonic(), documents)
            return documents

    def _resource_tags(self, prefix, arn, access_key, region):
        """A resource's tags, read from moto as the caller (straight to moto: not through the
        front door, so not authorized again). Only ELB's resources are read."""
        if prefix != "elasticloadbalancing":
            raise NotModelled(f"aws:ResourceTag of a {prefix} resource is not read by the sandbox's IAM")
        with self.lock:
            client = self._client("elbv2", access_key, region)
        try:
            described = client.describe_tags(ResourceArns=[arn])["TagDescriptions"]
        except client.exceptions.ClientError:
            return {}
        return {t["Key"]: t["Value"] for d in described for t in d.get("Tags", [])}

    def check(self, method, path, headers, body):
        """None when the request may go on; else the answer AWS gives, (status, headers, body)."""
        request = Request(method, path, headers, body)
        if request.access_key is None:
            return None
        caller = self._caller(request.access_key, request.region)
        if caller is None:
            return None
        try:
            model, operation, params = service_models().operation(request)
            prefix, action, params = iam_action(model, operation, params)
            account = caller.split(":")[4]
            resources = resource_arns(service_authorization(), prefix, action, params, request.region, account)
            context = Context(request_tags(request),
                              lambda arn: self._resource_tags(prefix, arn, request.access_key, request.region))
            denied = refused(self._role_policies(caller, request.access_key), f"{prefix}:{action}", resources, context)
        except NotModelled as e:
            self.decisions.append((caller, None, [], False))
            print(f"sandbox IAM: {e}", file=sys.stderr)
            return 500, [("Content-Type", "text/plain")], f"sandbox IAM: {e}".encode()
        self.decisions.append((caller, f"{prefix}:{action}", resources, not denied))
        if not denied:
            return None
        # Said where the sandbox's output goes: the function only sees AccessDenied.
        print(f"sandbox IAM refused {prefix}:{action} on {denied} to {caller}", file=sys.stderr)
        return access_denied(model, caller, f"{prefix}:{action}", denied[0])


def access_denied(model, caller, action, resource):
    """AWS's answer to an unauthorized call on `resource`, in the service's protocol."""
    shown = resource.replace(UNKNOWN, "*")
    message = (f"User: {caller} is not authorized to perform: {action} on resource: {shown} "
               f"because no identity-based policy allows the {action} action")
    protocol = model.metadata.get("protocol")
    # Every AWS answer carries one (moto's engine reads it off a failed Lambda call).
    request_id = ("x-amzn-RequestId", str(uuid.uuid4()))
    if protocol in ("query", "rest-xml"):
        body = (f"<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
                f"<Message>{message}</Message></Error><RequestId>{request_id[1]}</RequestId></ErrorResponse>")
        return 403, [("Content-Type", "text/xml"), request_id], body.encode()
    if protocol == "smithy-rpc-v2-cbor":
        # CloudWatch is awsQueryCompatible: the query error code travels in a header too.
        body = cbor2.dumps({"__type": "com.amazonaws.cloudwatch#AccessDenied", "message": message})
        return 403, [("Content-Type", "application/cbor"), ("smithy-protocol", "rpc-v2-cbor"),
                     ("x-amzn-query-error", "AccessDenied;Sender"), request_id], body
    body = json.dumps({"__type": "AccessDeniedException", "message": message, "Message": message}).encode()
    status = 400 if protocol == "json" else 403
    return status, [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", "AccessDeniedException"),
                    request_id], body
