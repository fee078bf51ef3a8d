"""AWS Global Accelerator for the moto harness (moto has no Global Accelerator service).

Written from AWS's API reference (API version 2018-08-08) and its machine form, botocore's
service model, which this module reads for every request's constraints: required members,
string lengths and enums, number ranges (an endpoint's `Weight` 0-255, `TrafficDialPercentage`
0-100, `ThresholdCount` 1-10), list sizes (at most 10 endpoints in a group's configuration),
answered as AWS's front end answers them (`ValidationException`, "1 validation error
detected: Value '300' at 'endpointConfigurations.1.member.weight' failed to satisfy
constraint: ..."). JSON 1.1 over `POST /` with `X-Amz-Target: GlobalAccelerator_V20180706.<Op>`,
as the SDKs send it; the service's one endpoint is in us-west-2, so a request signed for another
Region is refused as AWS refuses it (`InvalidSignatureException`, "Credential should be scoped
to a valid region").

Modelled, standard accelerators only: Create/Describe/List/Update/DeleteAccelerator (deleting
needs it disabled and without listeners), Create/Describe/List/Update/DeleteListener (port
ranges 1-65535, TCP or UDP, overlapping ranges refused), Create/Describe/List/Update/
DeleteEndpointGroup (one per Region per listener: EndpointGroupAlreadyExistsException),
AddEndpoints and RemoveEndpoints, TagResource/UntagResource/ListTagsForResource. An
UpdateEndpointGroup replaces the whole endpoint list (what it does not name is removed); an
endpoint's weight defaults to 128, a group's dial to 100, its health checks to TCP every 30 s,
threshold 3. An endpoint is a load balancer's ARN in the group's Region that exists in moto's
ELBv2 (a resource "must be valid and active when you add it"), an Elastic IP allocation
(`eipalloc-`) or an instance (`i-`); anything else, an endpoint twice, or an ARN of another
Region is InvalidArgumentException; an 11th endpoint is LimitExceededException. Every write to
an accelerator or what it holds leaves the accelerator IN_PROGRESS for `deploySeconds` (2 s
unless the harness says otherwise), then DEPLOYED; for the first `transactionSeconds` (0.5 s)
of that, the operations whose errors the API reference lists TransactionInProgressException
for (AddEndpoints, RemoveEndpoints, UpdateAccelerator, DeleteAccelerator, CreateAccelerator,
...) answer it; UpdateEndpointGroup, whose reference does not list it, does not. New endpoints'
HealthState is INITIAL until the accelerator is DEPLOYED, then HEALTHY. Unknown ARNs are the
resource's NotFoundException.

The harness's own control (not AWS's API): `POST /_harness/globalaccelerator/<account>` with
`deploySeconds` and `transactionSeconds` (an accelerator "stuck IN_PROGRESS": a long
deploySeconds), or `{"health": {"<endpoint id>": "UNHEALTHY"}}`.

Not modelled: custom routing accelerators, cross-account attachments, BYOIP, accelerator
attributes (flow logs), dual-stack addressing beyond its DNS name, client IP preservation's
effect (stored only), port overrides' effect, traffic itself (dials and weights are stored and
read back, nothing is routed), real health checks, idempotency tokens (each create makes a
new resource), quotas beyond endpoints per group.
"""
import json
import re
import threading
import time
import uuid

import botocore.session

TARGET_PREFIX = "GlobalAccelerator_V20180706."
API_REGION = "us-west-2"
HARNESS = re.compile(r"/_harness/globalaccelerator/(\d{12})")
MODEL = botocore.session.get_session().get_service_model("globalaccelerator")
MAX_ENDPOINTS = 10
DEFAULT_WEIGHT = 128

_lock = threading.RLock()
_accounts = {}


class GaError(Exception):
    def __init__(self, code, message, status=400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class Account:
    def __init__(self):
        self.accelerators = {}  # arn -> accelerator dict (with "_listeners": {arn: listener})
        self.deploy_seconds = 2.0
        self.transaction_seconds = 0.5
        self.health = {}  # endpoint id -> HEALTHY/UNHEALTHY forced by the harness


def _account(account_id):
    with _lock:
        return _accounts.setdefault(account_id, Account())


# --- validation from the service model -----------------------------------------------------
def _lower_camel(name):
    return name[:1].lower() + name[1:]


def violations(shape, value, path, found):
    """Appends to `found` each constraint of `shape` (a botocore shape) that `value` breaks, as
    (path, value, constraint) in AWS's words; application_signals.py validates with it too."""
    kind = shape.type_name
    meta = shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            found.append((path, value, "Member must be a structure"))
            return
        for name in shape.required_members:
            if value.get(name) is None:
                found.append((f"{path}.{_lower_camel(name)}" if path else _lower_camel(name), None,
                              "Member must not be null"))
        for name, member in shape.members.items():
            if value.get(name) is not None:
                violations(member, value[name], f"{path}.{_lower_camel(name)}" if path else _lower_camel(name), found)
    elif kind == "list":
        if not isinstance(value, list):
            found.append((path, value, "Member must be a list"))
            return
        if "min" in meta and len(value) < meta["min"]:
            found.append((path, value, f"Member must have length greater than or equal to {meta['min']}"))
        if "max" in meta and len(value) > meta["max"]:
            found.append((path, value, f"Member must have length less than or equal to {meta['max']}"))
        for i, item in enumerate(value, 1):
            violations(shape.member, item, f"{path}.{i}.member", found)
    elif kind == "string":
        if not isinstance(value, str):
            found.append((path, value, "Member must be a string"))
            return
        if shape.enum and value not in shape.enum:
            found.append((path, value, f"Member must satisfy enum value set: [{', '.join(shape.enum)}]"))
        if "min" in meta and len(value) < meta["min"]:
            found.append((path, value, f"Member must have length greater than or equal to {meta['min']}"))
        if "max" in meta and len(value) > meta["max"]:
            found.append((path, value, f"Member must have length less than or equal to {meta['max']}"))
    elif kind in ("integer", "long", "float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            found.append((path, value, "Member must be a number"))
            return
        if "min" in meta and value < meta["min"]:
            found.append((path, value, f"Member must have value greater than or equal to {meta['min']}"))
        if "max" in meta and value > meta["max"]:
            found.append((path, value, f"Member must have value less than or equal to {meta['max']}"))
    elif kind == "boolean" and not isinstance(value, bool):
        found.append((path, value, "Member must be a boolean"))


def validation_message(model, operation, body):
    """AWS's front end's message for a request `model` (a botocore service model) refuses, or None."""
    found = []
    violations(model.operation_model(operation).input_shape, body, "", found)
    if not found:
        return None
    said = "; ".join(f"Value '{v}' at '{p}' failed to satisfy constraint: {c}" if v is not None
                     else f"Value null at '{p}' failed to satisfy constraint: {c}" for p, v, c in found)
    return f"{len(found)} validation error{'s' if len(found) > 1 else ''} detected: {said}"


def validate(operation, body):
    """AWS's front end's answer to a request its model refuses."""
    message = validation_message(MODEL, operation, body)
    if message:
        raise GaError("ValidationException", message)


# --- the resources --------------------------------------------------------------------------
def _id(n=8):
    return uuid.uuid4().hex[:n]


def _find(account, arn, kind):
    """(accelerator, listener or None, endpoint group or None) named by `arn` of `kind`."""
    accelerator_arn = arn.split("/listener/")[0]
    accelerator = account.accelerators.get(accelerator_arn)
    missing = {"accelerator": "AcceleratorNotFoundException", "listener": "ListenerNotFoundException",
               "endpoint-group": "EndpointGroupNotFoundException"}[kind]
    said = {"accelerator": "Accelerator", "listener": "Listener", "endpoint-group": "Endpoint group"}[kind]
    if accelerator is None:
        raise GaError(missing, f"{said} not found with ARN {arn}")
    if kind == "accelerator":
        if arn != accelerator_arn:
            raise GaError("AcceleratorNotFoundException", f"Accelerator not found with ARN {arn}")
        return accelerator, None, None
    listener = accelerator["_listeners"].get(arn.split("/endpoint-group/")[0])
    if listener is None:
        raise GaError(missing, f"{said} not found with ARN {arn}")
    if kind == "listener":
        if "/endpoint-group/" in arn:
            raise GaError("ListenerNotFoundException", f"Listener not found with ARN {arn}")
        return accelerator, listener, None
    group = listener["_groups"].get(arn)
    if group is None:
        raise GaError("EndpointGroupNotFoundException", f"Endpoint group not found with ARN {arn}")
    return accelerator, listener, group


def _status(account, accelerator, now):
    return "IN_PROGRESS" if now < accelerator["_deployed_at"] else "DEPLOYED"


def _written(account, accelerator, operation, now):
    """A write: refused while the last one's transaction runs (where the reference lists it),
    else the accelerator goes IN_PROGRESS."""
    errors = [e.name for e in MODEL.operation_model(operation).error_shapes]
    if "TransactionInProgressException" in errors and now < accelerator["_transaction_until"]:
        raise GaError("TransactionInProgressException",
                      "There's already a transaction in progress. Another transaction can't be processed.")
    accelerator["_transaction_until"] = now + account.transaction_seconds
    accelerator["_deployed_at"] = now + account.deploy_seconds
    accelerator["LastModifiedTime"] = now


def _endpoint_region(endpoint_id):
    parts = endpoint_id.split(":")
    return parts[3] if endpoint_id.startswith("arn:") and len(parts) > 5 else None


def _check_endpoint(account_id, region, endpoint_id):
    if endpoint_id.startswith("arn:"):
        if ":elasticloadbalancing:" not in endpoint_id or ":loadbalancer/" not in endpoint_id:
            raise GaError("InvalidArgumentException", f"Endpoint ID {endpoint_id} is not a load balancer ARN, an "
                                                      "Elastic IP address allocation ID or an EC2 instance ID")
        if _endpoint_region(endpoint_id) != region:
            raise GaError("InvalidArgumentException",
                          f"Endpoint {endpoint_id} is not in the endpoint group's Region {region}")
        from moto.elbv2.models import elbv2_backends
        if endpoint_id not in elbv2_backends[account_id][region].load_balancers:
            raise GaError("InvalidArgumentException", f"Endpoint {endpoint_id} is not a valid, active resource")
    elif not re.fullmatch(r"eipalloc-[0-9a-f]{8,17}|i-[0-9a-f]{8,17}", endpoint_id):
        raise GaError("InvalidArgumentException", f"Endpoint ID {endpoint_id} is not a load balancer ARN, an "
                                                  "Elastic IP address allocation ID or an EC2 instance ID")


def _endpoints(account_id, group, configurations):
    seen, endpoints = set(), []
    for configuration in configurations:
        endpoint_id = configuration["EndpointId"]
        if endpoint_id in seen:
            raise GaError("InvalidArgumentException", f"Endpoint {endpoint_id} is given more than once")
        seen.add(endpoint_id)
        _check_endpoint(account_id, group["EndpointGroupRegion"], endpoint_id)
        endpoints.append({"EndpointId": endpoint_id, "Weight": configuration.get("Weight", DEFAULT_WEIGHT),
                          "ClientIPPreservationEnabled": configuration.get(
                              "ClientIPPreservationEnabled", ":loadbalancer/app/" in endpoint_id)})
    if len(endpoints) > MAX_ENDPOINTS:
        raise GaError("LimitExceededException", f"An endpoint group can have at most {MAX_ENDPOINTS} endpoints")
    return endpoints


def _accelerator_view(account, accelerator, now):
    view = {k: v for k, v in accelerator.items() if not k.startswith("_")}
    view["Status"] = _status(account, accelerator, now)
    return view


def _group_view(account, accelerator, group, now):
    deployed = _status(account, accelerator, now) == "DEPLOYED"
    view = {k: v for k, v in group.items() if not k.startswith("_")}
    view["EndpointDescriptions"] = [
        {**e, "HealthState": account.health.get(e["EndpointId"], "HEALTHY") if deployed else "INITIAL"}
        for e in group["_endpoints"]]
    return view


def _page(items, body, key):
    size = body.get("MaxResults", 100)
    start = int(body.get("NextToken") or 0) if str(body.get("NextToken") or "0").isdigit() else None
    if start is None:
        raise GaError("InvalidNextTokenException", "The nextToken is not valid")
    answer = {key: items[start:start + size]}
    if start + size < len(items):
        answer["NextToken"] = str(start + size)
    return answer


def handle(account_id, operation, body, now=None):
    now = time.time() if now is None else now
    if operation not in MODEL.operation_names:
        raise GaError("UnknownOperationException", f"Unknown operation {operation}")
    validate(operation, body)
    account = _account(account_id)
    with _lock:
        return _OPERATIONS.get(operation, _not_modelled)(account_id, account, body, now)


def _not_modelled(account_id, account, body, now):
    raise GaError("InternalServiceErrorException", "not modelled by the moto harness", status=500)


def create_accelerator(account_id, account, body, now):
    accelerator_id = str(uuid.uuid4())
    arn = f"arn:aws:globalaccelerator::{account_id}:accelerator/{accelerator_id}"
    dns = f"a{uuid.uuid4().hex[:16]}.awsglobalaccelerator.com"
    accelerator = {
        "AcceleratorArn": arn, "Name": body["Name"], "IpAddressType": body.get("IpAddressType", "IPV4"),
        "Enabled": body.get("Enabled", True),
        "IpSets": [{"IpFamily": "IPv4", "IpAddresses": ["75.2.0.10", "99.83.0.10"], "IpAddressFamily": "IPv4"}],
        "DnsName": dns, "CreatedTime": now, "LastModifiedTime": now,
        "_listeners": {}, "_transaction_until": 0.0, "_deployed_at": 0.0, "_tags": list(body.get("Tags", [])),
    }
    account.accelerators[arn] = accelerator
    _written(account, accelerator, "CreateAccelerator", now)
    return {"Accelerator": _accelerator_view(account, accelerator, now)}


def describe_accelerator(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["AcceleratorArn"], "accelerator")
    return {"Accelerator": _accelerator_view(account, accelerator, now)}


def list_accelerators(account_id, account, body, now):
    views = [_accelerator_view(account, a, now) for a in account.accelerators.values()]
    return _page(views, body, "Accelerators")


def update_accelerator(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["AcceleratorArn"], "accelerator")
    _written(account, accelerator, "UpdateAccelerator", now)
    for key in ("Name", "IpAddressType", "Enabled"):
        if key in body:
            accelerator[key] = body[key]
    return {"Accelerator": _accelerator_view(account, accelerator, now)}


def delete_accelerator(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["AcceleratorArn"], "accelerator")
    if accelerator["Enabled"]:
        raise GaError("AcceleratorNotDisabledException", "The accelerator must be disabled before it is deleted")
    if accelerator["_listeners"]:
        raise GaError("AssociatedListenerFoundException", "The accelerator has listeners: delete them first")
    _written(account, accelerator, "DeleteAccelerator", now)
    del account.accelerators[body["AcceleratorArn"]]
    return {}


def _port_ranges(ranges):
    for r in ranges:
        if not 1 <= r["FromPort"] <= r["ToPort"] <= 65535:
            raise GaError("InvalidPortRangeException", f"Port range {r['FromPort']}-{r['ToPort']} is not valid")
    spans = sorted((r["FromPort"], r["ToPort"]) for r in ranges)
    if any(a[1] >= b[0] for a, b in zip(spans, spans[1:])):
        raise GaError("InvalidPortRangeException", "Port ranges overlap")
    return ranges


def _free_ports(accelerator, ranges, protocol, but=None):
    """`ranges` valid, and overlapping no other listener's of `protocol` (`but`: the one updated)."""
    taken = [r for arn, listener in accelerator["_listeners"].items() for r in listener["PortRanges"]
             if listener["Protocol"] == protocol and arn != but]
    _port_ranges(taken + _port_ranges(ranges))
    return ranges


def create_listener(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["AcceleratorArn"], "accelerator")
    ranges = _free_ports(accelerator, body["PortRanges"], body["Protocol"])
    _written(account, accelerator, "CreateListener", now)
    arn = f"{accelerator['AcceleratorArn']}/listener/{_id()}"
    listener = {"ListenerArn": arn, "PortRanges": ranges, "Protocol": body["Protocol"],
                "ClientAffinity": body.get("ClientAffinity", "NONE"), "_groups": {}}
    accelerator["_listeners"][arn] = listener
    return {"Listener": {k: v for k, v in listener.items() if not k.startswith("_")}}


def describe_listener(account_id, account, body, now):
    _, listener, _ = _find(account, body["ListenerArn"], "listener")
    return {"Listener": {k: v for k, v in listener.items() if not k.startswith("_")}}


def list_listeners(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["AcceleratorArn"], "accelerator")
    views = [{k: v for k, v in listener.items() if not k.startswith("_")}
             for listener in accelerator["_listeners"].values()]
    return _page(views, body, "Listeners")


def update_listener(account_id, account, body, now):
    accelerator, listener, _ = _find(account, body["ListenerArn"], "listener")
    _free_ports(accelerator, body.get("PortRanges", listener["PortRanges"]), body.get("Protocol", listener["Protocol"]),
                but=body["ListenerArn"])
    _written(account, accelerator, "UpdateListener", now)
    for key in ("PortRanges", "Protocol", "ClientAffinity"):
        if key in body:
            listener[key] = body[key]
    return {"Listener": {k: v for k, v in listener.items() if not k.startswith("_")}}


def delete_listener(account_id, account, body, now):
    accelerator, listener, _ = _find(account, body["ListenerArn"], "listener")
    if listener["_groups"]:
        raise GaError("AssociatedEndpointGroupFoundException", "The listener has endpoint groups: delete them first")
    _written(account, accelerator, "DeleteListener", now)
    del accelerator["_listeners"][body["ListenerArn"]]
    return {}


def _health_settings(group, body):
    interval = body.get("HealthCheckIntervalSeconds")
    if interval is not None and interval not in (10, 30):
        raise GaError("InvalidArgumentException", "HealthCheckIntervalSeconds must be 10 or 30")
    for key in ("TrafficDialPercentage", "HealthCheckPort", "HealthCheckProtocol", "HealthCheckPath",
                "HealthCheckIntervalSeconds", "ThresholdCount", "PortOverrides"):
        if key in body:
            group[key] = body[key]


def create_endpoint_group(account_id, account, body, now):
    accelerator, listener, _ = _find(account, body["ListenerArn"], "listener")
    region = body["EndpointGroupRegion"]
    if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", region):
        raise GaError("InvalidArgumentException", f"EndpointGroupRegion {region} is not an AWS Region")
    if any(g["EndpointGroupRegion"] == region for g in listener["_groups"].values()):
        raise GaError("EndpointGroupAlreadyExistsException",
                      f"The listener already has an endpoint group in {region}")
    group = {"EndpointGroupArn": f"{body['ListenerArn']}/endpoint-group/{_id(12)}", "EndpointGroupRegion": region,
             "TrafficDialPercentage": 100.0, "HealthCheckPort": listener["PortRanges"][0]["FromPort"],
             "HealthCheckProtocol": "TCP", "HealthCheckIntervalSeconds": 30, "ThresholdCount": 3,
             "PortOverrides": []}
    _health_settings(group, body)
    group["_endpoints"] = _endpoints(account_id, group, body.get("EndpointConfigurations", []))
    _written(account, accelerator, "CreateEndpointGroup", now)
    listener["_groups"][group["EndpointGroupArn"]] = group
    return {"EndpointGroup": _group_view(account, accelerator, group, now)}


def describe_endpoint_group(account_id, account, body, now):
    accelerator, _, group = _find(account, body["EndpointGroupArn"], "endpoint-group")
    return {"EndpointGroup": _group_view(account, accelerator, group, now)}


def list_endpoint_groups(account_id, account, body, now):
    accelerator, listener, _ = _find(account, body["ListenerArn"], "listener")
    views = [_group_view(account, accelerator, g, now) for g in listener["_groups"].values()]
    return _page(views, body, "EndpointGroups")


def update_endpoint_group(account_id, account, body, now):
    accelerator, _, group = _find(account, body["EndpointGroupArn"], "endpoint-group")
    changed = dict(group)
    _health_settings(changed, body)
    if "EndpointConfigurations" in body:
        # The whole list: what it does not name is no longer an endpoint.
        changed["_endpoints"] = _endpoints(account_id, group, body["EndpointConfigurations"])
    _written(account, accelerator, "UpdateEndpointGroup", now)
    group.update(changed)
    return {"EndpointGroup": _group_view(account, accelerator, group, now)}


def delete_endpoint_group(account_id, account, body, now):
    accelerator, listener, _ = _find(account, body["EndpointGroupArn"], "endpoint-group")
    _written(account, accelerator, "DeleteEndpointGroup", now)
    del listener["_groups"][body["EndpointGroupArn"]]
    return {}


def add_endpoints(account_id, account, body, now):
    accelerator, _, group = _find(account, body["EndpointGroupArn"], "endpoint-group")
    added = _endpoints(account_id, group, body["EndpointConfigurations"])
    kept = [e for e in group["_endpoints"] if e["EndpointId"] not in {a["EndpointId"] for a in added}]
    if len(kept) + len(added) > MAX_ENDPOINTS:
        raise GaError("LimitExceededException", f"An endpoint group can have at most {MAX_ENDPOINTS} endpoints")
    _written(account, accelerator, "AddEndpoints", now)
    group["_endpoints"] = kept + added
    return {"EndpointDescriptions": [{**e, "HealthState": "INITIAL"} for e in added],
            "EndpointGroupArn": group["EndpointGroupArn"]}


def remove_endpoints(account_id, account, body, now):
    accelerator, _, group = _find(account, body["EndpointGroupArn"], "endpoint-group")
    gone = {e["EndpointId"] for e in body["EndpointIdentifiers"]}
    unknown = gone - {e["EndpointId"] for e in group["_endpoints"]}
    if unknown:
        raise GaError("EndpointNotFoundException", f"Endpoint {sorted(unknown)[0]} is not in the endpoint group")
    _written(account, accelerator, "RemoveEndpoints", now)
    group["_endpoints"] = [e for e in group["_endpoints"] if e["EndpointId"] not in gone]
    return {}


def tag_resource(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["ResourceArn"], "accelerator")
    tags = {t["Key"]: t["Value"] for t in accelerator["_tags"]}
    tags.update({t["Key"]: t["Value"] for t in body["Tags"]})
    accelerator["_tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
    return {}


def untag_resource(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["ResourceArn"], "accelerator")
    accelerator["_tags"] = [t for t in accelerator["_tags"] if t["Key"] not in body["TagKeys"]]
    return {}


def list_tags_for_resource(account_id, account, body, now):
    accelerator, _, _ = _find(account, body["ResourceArn"], "accelerator")
    return {"Tags": accelerator["_tags"]}


_OPERATIONS = {
    "CreateAccelerator": create_accelerator, "DescribeAccelerator": describe_accelerator,
    "ListAccelerators": list_accelerators, "UpdateAccelerator": update_accelerator,
    "DeleteAccelerator": delete_accelerator, "CreateListener": create_listener, "DescribeListener": describe_listener,
    "ListListeners": list_listeners, "UpdateListener": update_listener, "DeleteListener": delete_listener,
    "CreateEndpointGroup": create_endpoint_group, "DescribeEndpointGroup": describe_endpoint_group,
    "ListEndpointGroups": list_endpoint_groups, "UpdateEndpointGroup": update_endpoint_group,
    "DeleteEndpointGroup": delete_endpoint_group, "AddEndpoints": add_endpoints, "RemoveEndpoints": remove_endpoints,
    "TagResource": tag_resource, "UntagResource": untag_resource, "ListTagsForResource": list_tags_for_resource,
}


def harness(account_id, body):
    """The harness's control: deploy and transaction times, endpoints' forced health."""
    account = _account(account_id)
    with _lock:
        for key, attribute in (("deploySeconds", "deploy_seconds"), ("transactionSeconds", "transaction_seconds")):
            if key in body:
                setattr(account, attribute, float(body[key]))
        account.health.update(body.get("health") or {})
        return {"deploySeconds": account.deploy_seconds, "transactionSeconds": account.transaction_seconds,
                "health": account.health}


# --- the wire --------------------------------------------------------------------------------
_SCOPE = re.compile(r"Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


def _respond(start_response, status, answer, code=None):
    text = json.dumps(answer, default=str).encode()
    headers = [("Content-Type", "application/x-amz-json-1.1"), ("Content-Length", str(len(text))),
               ("x-amzn-RequestId", str(uuid.uuid4()))]
    if code:
        headers.append(("x-amzn-ErrorType", code))
    start_response(f"{status} {'OK' if status == 200 else 'Error'}", headers)
    return [text]


def serves(environ):
    return (environ.get("HTTP_X_AMZ_TARGET", "").startswith(TARGET_PREFIX)
            or bool(HARNESS.fullmatch(environ.get("PATH_INFO", ""))))


def serve(environ, start_response):
    """One request of the Global Accelerator API (or the harness's control of it)."""
    from moto.iam.models import get_account_id_from

    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) or b"{}"
    try:
        body = json.loads(raw)
    except ValueError:
        return _respond(start_response, 400, {"__type": "SerializationException", "message": "not JSON"},
                        "SerializationException")
    control = HARNESS.fullmatch(environ.get("PATH_INFO", ""))
    if control:
        return _respond(start_response, 200, harness(control.group(1), body))
    scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if scope and scope.group(2) != API_REGION:
        message = f"Credential should be scoped to a valid region, not '{scope.group(2)}'. "
        return _respond(start_response, 403, {"__type": "InvalidSignatureException", "message": message},
                        "InvalidSignatureException")
    account_id = get_account_id_from(scope.group(1)) if scope else "123456789012"
    operation = environ["HTTP_X_AMZ_TARGET"][len(TARGET_PREFIX):]
    try:
        return _respond(start_response, 200, handle(account_id, operation, body))
    except GaError as e:
        return _respond(start_response, e.status, {"__type": e.code, "message": e.message}, e.code)
