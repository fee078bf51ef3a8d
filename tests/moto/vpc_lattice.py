"""Amazon VPC Lattice for the moto harness: the part a rollout moves (a service's listener and
its rules, forwarding to target groups with weights), which moto 5.2.5 has only in part (no
GetRule, UpdateRule or UpdateListener; identifiers that are not Lattice's, `listener-` and the
first 17 characters of a UUID, dashes included; rule ARNs with `listener/listener-listener-…`;
a rule created on a listener that does not exist).

Written from AWS's API reference (API version 2022-11-30) and botocore's service model of it,
which its wire (rest_json.py, shared with Synthetics') reads for every request: the routes
(REST-JSON, each operation's method and `requestUri`, its URI members), the constraints of every
member (required members, lengths, enums, number ranges: a target group's `weight` 0-999, a
rule's `priority` 1-2000; list sizes: a forward action's 1-10 target groups) and the
identifiers' patterns (`svc-`, `listener-`, `rule-`, `tg-` and 17 lower-case letters or digits,
or the resource's ARN), answered as the service answers them: `ValidationException` (400,
with `reason` `fieldValidationFailed` and a `fieldList`), `ResourceNotFoundException` (404, with
`resourceId` and `resourceType`), `ConflictException` (409). A request signed for
`vpc-lattice` is this module's; the account comes from the signing key (moto's mapping of access
keys to accounts), the Region from the credential scope. Their wording is ours where the
reference gives none.

Modelled: CreateService/GetService, CreateTargetGroup/GetTargetGroup (`INSTANCE`, `IP`, `LAMBDA`
or `ALB`), RegisterTargets/ListTargets, CreateListener/GetListener/UpdateListener (its default
action), CreateRule/GetRule/UpdateRule/ListRules, TagResource/ListTagsForResource (tags given at
creation included). A forward action's target groups must exist in the account and Region
(ResourceNotFoundException), each once (ValidationException); a rule's priority is one of its
listener's (ConflictException when another rule has it); an identifier may be the ID or the ARN,
and an ARN of another account or Region is not found. GetRule and UpdateRule answer the rule as
it is after the call; UpdateRule and UpdateListener replace the action they are given whole (the
weights of target groups they do not name are gone, as with the API). A target's status is
`UNUSED` while no listener or rule of a service forwards to its target group, else `HEALTHY`
(or what the harness sets).

The harness's own control (not AWS's API): `POST /_harness/vpclattice/<account>/<region>` with
`{"status": {"<target group id>": {"<target id>": "UNHEALTHY"}}}`.

Not modelled: service networks and their associations (moto's own are not reached either, as
every request signed for the service is this module's), access logs, auth and resource
policies, resource configurations and gateways, deletions, listener protocols' and target
groups' types' compatibility, health checks (statuses are set), match conditions' evaluation
(stored and echoed), the default rule in ListRules, quotas beyond the model's list sizes,
idempotency tokens, throttling, a weight left out (echoed left out; the reference gives
no default).
"""
import secrets
from datetime import datetime, timezone

from rest_json import RestJsonApi, ServiceError



def _not_found(kind, identifier):
    return ServiceError("ResourceNotFoundException", 404, f"{kind.capitalize()} {identifier} not found",
                        resourceId=identifier, resourceType=kind.upper().replace(" ", "_"))


def _invalid(message, fields, reason="fieldValidationFailed"):
    extra = {"fieldList": [{"name": name, "message": said} for name, said in fields]} if fields else {}
    return ServiceError("ValidationException", 400, message, reason=reason, **extra)


class Region:
    def __init__(self, account, name):
        self.account, self.name = account, name
        self.services, self.target_groups = {}, {}  # id -> resource
        self.listeners, self.rules = {}, {}  # id -> resource (with "_service", "_listener")
        self.tags = {}  # arn -> {key: value}
        self.status = {}  # target group id -> {target id: status} set by the harness

    def arn(self, resource):
        return f"arn:aws:vpc-lattice:{self.name}:{self.account}:{resource}"


def _new_id(prefix):
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(17))


def _now():
    return datetime.now(timezone.utc).isoformat()


# --- identifiers ------------------------------------------------------------------------------
def _identifier(region, value, kind, table):
    """The resource `value` (an ID or an ARN) names, or ResourceNotFoundException; an ARN of
    another account or Region names nothing here."""
    if value.startswith("arn:"):
        parts = value.split(":", 5)
        if parts[3] != region.name or parts[4] != region.account:
            raise _not_found(kind, value)
        value = parts[5].rsplit("/", 1)[-1]
    found = table.get(value)
    if found is None:
        raise _not_found(kind, value)
    return found


# --- the resources ----------------------------------------------------------------------------
def _tagged(region, arn, tags):
    region.tags.setdefault(arn, {}).update(tags or {})


def _view(resource):
    return {k: v for k, v in resource.items() if not k.startswith("_")}


def _forward_targets(region, action, path):
    """A rule action's target groups, as the service checks them: each one existing, once."""
    forward = (action or {}).get("forward")
    if forward is None:
        return
    seen = set()
    for i, weighted in enumerate(forward.get("targetGroups") or [], 1):
        group = _identifier(region, weighted["targetGroupIdentifier"],
                            "target group", region.target_groups)
        if group["id"] in seen:
            raise _invalid(f"Target group {group['id']} is listed more than once in the forward action",
                           [(f"{path}.forward.targetGroups.{i}", "duplicate target group")])
        seen.add(group["id"])
        # The service answers target groups by ID, whichever way they were named.
        weighted["targetGroupIdentifier"] = group["id"]


def create_service(region, body):
    service_id = _new_id("svc-")
    arn = region.arn(f"service/{service_id}")
    dns = f"{body['name']}-{service_id[4:]}.7d67968.vpc-lattice-svcs.{region.name}.on.aws"
    service = {"id": service_id, "arn": arn, "name": body["name"], "status": "ACTIVE",
               "authType": body.get("authType", "NONE"), "dnsEntry": {"domainName": dns, "hostedZoneId": "Z0123456789LATTICE"},
               "createdAt": _now(), "lastUpdatedAt": _now()}
    if any(s["name"] == body["name"] for s in region.services.values()):
        raise ServiceError("ConflictException", 409, f"Service with name {body['name']} already exists",
                           resourceId=body["name"], resourceType="SERVICE")
    region.services[service_id] = service
    _tagged(region, arn, body.get("tags"))
    return 201, _view(service)


def get_service(region, body):
    return 200, _view(_identifier(region, body["serviceIdentifier"], "service", region.services))


def create_target_group(region, body):
    group_id = _new_id("tg-")
    arn = region.arn(f"targetgroup/{group_id}")
    group = {"id": group_id, "arn": arn, "name": body["name"], "type": body["type"], "status": "ACTIVE",
             "config": body.get("config") or {}, "createdAt": _now(), "lastUpdatedAt": _now(), "_targets": {}}
    region.target_groups[group_id] = group
    _tagged(region, arn, body.get("tags"))
    return 201, _view(group)


def get_target_group(region, body):
    group = _identifier(region, body["targetGroupIdentifier"], "target group",
                        region.target_groups)
    return 200, {**_view(group), "serviceArns": sorted(_services_forwarding_to(region, group["id"]))}


def _services_forwarding_to(region, group_id):
    actions = [(listener["_service"], listener["defaultAction"]) for listener in region.listeners.values()]
    actions += [(rule["_service"], rule["action"]) for rule in region.rules.values()]
    return {region.services[service]["arn"] for service, action in actions
            if any(t["targetGroupIdentifier"] == group_id for t in (action.get("forward") or {}).get("targetGroups", []))}


def register_targets(region, body):
    group = _identifier(region, body["targetGroupIdentifier"], "target group",
                        region.target_groups)
    for target in body["targets"]:
        group["_targets"][target["id"]] = {"id": target["id"], "port": target.get("port", group["config"].get("port", 80))}
    return 200, {"successful": body["targets"], "unsuccessful": []}


def list_targets(region, body):
    group = _identifier(region, body["targetGroupIdentifier"], "target group",
                        region.target_groups)
    used = bool(_services_forwarding_to(region, group["id"]))
    forced = region.status.get(group["id"], {})
    items = [{**target, "status": forced.get(target["id"], "HEALTHY") if used else "UNUSED"}
             for target in group["_targets"].values()]
    return 200, {"items": items}


def _listener(region, body):
    service = _identifier(region, body["serviceIdentifier"], "service", region.services)
    listener = _identifier(region, body["listenerIdentifier"], "listener", region.listeners)
    if listener["_service"] != service["id"]:
        raise _not_found("listener", body["listenerIdentifier"])
    return service, listener


def create_listener(region, body):
    service = _identifier(region, body["serviceIdentifier"], "service", region.services)
    _forward_targets(region, body["defaultAction"], "defaultAction")
    listener_id = _new_id("listener-")
    arn = f"{service['arn']}/listener/{listener_id}"
    port = body.get("port") or (443 if body["protocol"] == "HTTPS" else 80)
    if any(l["_service"] == service["id"] and l["port"] == port for l in region.listeners.values()):
        raise ServiceError("ConflictException", 409, f"A listener on port {port} already exists in service {service['id']}",
                           resourceId=service["id"], resourceType="LISTENER")
    listener = {"id": listener_id, "arn": arn, "name": body["name"], "protocol": body["protocol"], "port": port,
                "serviceArn": service["arn"], "serviceId": service["id"], "defaultAction": body["defaultAction"],
                "createdAt": _now(), "lastUpdatedAt": _now(), "_service": service["id"]}
    region.listeners[listener_id] = listener
    _tagged(region, arn, body.get("tags"))
    return 201, _view(listener)


def get_listener(region, body):
    return 200, _view(_listener(region, body)[1])


def update_listener(region, body):
    _, listener = _listener(region, body)
    _forward_targets(region, body["defaultAction"], "defaultAction")
    listener.update(defaultAction=body["defaultAction"], lastUpdatedAt=_now())
    return 200, {k: v for k, v in _view(listener).items() if k not in ("createdAt", "lastUpdatedAt")}


def _rule(region, body):
    _, listener = _listener(region, body)
    rule = _identifier(region, body["ruleIdentifier"], "rule", region.rules)
    if rule["_listener"] != listener["id"]:
        raise _not_found("rule", body["ruleIdentifier"])
    return listener, rule


def _priority_free(region, listener, priority, but=None):
    taken = [r for r in region.rules.values() if r["_listener"] == listener["id"] and r["priority"] == priority
             and r["id"] != but]
    if taken:
        raise ServiceError("ConflictException", 409,
                           f"Priority {priority} is already in use by rule {taken[0]['id']} of listener {listener['id']}",
                           resourceId=taken[0]["id"], resourceType="RULE")


def create_rule(region, body):
    _, listener = _listener(region, body)
    _forward_targets(region, body["action"], "action")
    _priority_free(region, listener, body["priority"])
    rule_id = _new_id("rule-")
    arn = f"{listener['arn']}/rule/{rule_id}"
    rule = {"id": rule_id, "arn": arn, "name": body["name"], "isDefault": False, "match": body["match"],
            "priority": body["priority"], "action": body["action"], "createdAt": _now(), "lastUpdatedAt": _now(),
            "_listener": listener["id"], "_service": listener["_service"]}
    region.rules[rule_id] = rule
    _tagged(region, arn, body.get("tags"))
    return 201, {k: v for k, v in _view(rule).items() if k not in ("isDefault", "createdAt", "lastUpdatedAt")}


def get_rule(region, body):
    return 200, _view(_rule(region, body)[1])


def update_rule(region, body):
    listener, rule = _rule(region, body)
    if "action" in body:
        _forward_targets(region, body["action"], "action")
    if "priority" in body:
        _priority_free(region, listener, body["priority"], but=rule["id"])
    for key in ("action", "match", "priority"):
        if key in body:
            rule[key] = body[key]
    rule["lastUpdatedAt"] = _now()
    return 200, {k: v for k, v in _view(rule).items() if k not in ("createdAt", "lastUpdatedAt")}


def list_rules(region, body):
    _, listener = _listener(region, body)
    items = [{k: v for k, v in _view(r).items() if k in ("arn", "id", "name", "priority", "isDefault", "createdAt", "lastUpdatedAt")}
             for r in region.rules.values() if r["_listener"] == listener["id"]]
    return 200, {"items": sorted(items, key=lambda r: r["priority"])}


def _tagged_arn(region, arn):
    known = ([s["arn"] for s in region.services.values()] + [g["arn"] for g in region.target_groups.values()]
             + [l["arn"] for l in region.listeners.values()] + [r["arn"] for r in region.rules.values()])
    if arn not in known:
        raise _not_found("resource", arn)
    return arn


def tag_resource(region, body):
    _tagged(region, _tagged_arn(region, body["resourceArn"]), body["tags"])
    return 200, {}


def list_tags_for_resource(region, body):
    return 200, {"tags": dict(region.tags.get(_tagged_arn(region, body["resourceArn"]), {}))}


OPERATIONS = {
    "CreateService": create_service, "GetService": get_service,
    "CreateTargetGroup": create_target_group, "GetTargetGroup": get_target_group,
    "RegisterTargets": register_targets, "ListTargets": list_targets,
    "CreateListener": create_listener, "GetListener": get_listener, "UpdateListener": update_listener,
    "CreateRule": create_rule, "GetRule": get_rule, "UpdateRule": update_rule, "ListRules": list_rules,
    "TagResource": tag_resource, "ListTagsForResource": list_tags_for_resource,
}


def harness(region, body):
    for group, statuses in (body.get("status") or {}).items():
        region.status.setdefault(group, {}).update(statuses)
    return {"status": region.status}


API = RestJsonApi("vpc-lattice", "vpclattice", OPERATIONS, Region, harness, _invalid)
serves, serve = API.serves, API.serve
