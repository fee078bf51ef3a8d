"""Patch 22: Elastic Load Balancing's forward actions and Network Load Balancers as AWS checks
them (moto's elbv2 does not).

Modelled, from the Elastic Load Balancing API reference (TargetGroupTuple, ForwardActionConfig,
CreateRule) and the NLB weighted target groups launch (November 2025):

- A load balancer's ARN, and so its listeners' and their rules', names its type:
  `loadbalancer/app/...` for an application, `net/` for a network and `gwy/` for a gateway load
  balancer (moto names every one `app/`; ARN checks and IAM resources depend on it).
- A forward action's target group weight is 0 to 999 (moto takes any number), on every write
  that carries actions: CreateListener, ModifyListener, CreateRule, ModifyRule. The target groups
  must exist on ModifyListener too (moto checks that on the others only).
- A network load balancer's listener forwards to target groups of one protocol, each of a
  protocol an NLB serves (TCP, UDP, TLS, TCP_UDP); an application load balancer's to HTTP or
  HTTPS target groups. A protocol-less target group (a Lambda one) is not checked.
- No target group stickiness (`TargetGroupStickinessConfig` enabled) on an NLB's forward action.
- No rules on an NLB's listener: CreateRule refuses it.
- A rule's conditions as the Application Load Balancers guide counts them (its quotas, and
  "Condition types for listener rules"), on CreateRule and ModifyRule: at most one each of
  `host-header`, `http-request-method`, `path-pattern` and `source-ip` (`http-header` and
  `query-string` may repeat), at most 5 condition values in the whole rule (each value of each
  condition, each key/value pair of a query string), and an `http-header` name that is an
  RFC 7230 token (letters, digits and ``!#$%&'*+-.^_`|~``; moto checks its length only). A
  priority taken on the listener is moto's own PriorityInUse.

The error codes are the API reference's (ValidationError, InvalidConfigurationRequest,
InvalidLoadBalancerAction); the message wording is ours where AWS does not publish its own.

Not modelled: the weight's effect on traffic (nothing flows through moto), connection draining,
cross-zone settings, the listener protocol's own rules for TLS certificates; a rule's conditions'
wildcards quota and its evaluation against requests (nothing flows).
"""

import re

from moto.elbv2 import exceptions as elbv2_exceptions

MAX_WEIGHT = 999
NETWORK_PROTOCOLS = ("TCP", "UDP", "TLS", "TCP_UDP")
APPLICATION_PROTOCOLS = ("HTTP", "HTTPS")
TYPE_SEGMENT = {"application": "app", "network": "net", "gateway": "gwy"}
ONCE_PER_RULE = ("host-header", "http-request-method", "path-pattern", "source-ip")
MAX_CONDITION_VALUES = 5
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 7230's token
CONDITION_CONFIGS = {"host-header": "HostHeaderConfig", "http-header": "HttpHeaderConfig",
                     "http-request-method": "HttpRequestMethodConfig", "path-pattern": "PathPatternConfig",
                     "query-string": "QueryStringConfig", "source-ip": "SourceIpConfig"}


def _forwards(actions):
    """(index, action) of every forward action."""
    return [(i, a) for i, a in enumerate(actions or [], start=1) if a.get("Type") == "forward"]


def _check_actions(backend, balancer, actions, field):
    """Refuses what ELB refuses in the forward actions `actions` of a listener (or rule) on
    `balancer`; `field` is the request's member (`defaultActions`, `actions`)."""
    for index, action in _forwards(actions):
        config = action.get("ForwardConfig") or {}
        tuples = config.get("TargetGroups") or []
        arns = [t.get("TargetGroupArn") for t in tuples]
        if action.get("TargetGroupArn"):
            arns.append(action["TargetGroupArn"])
        for n, group in enumerate(tuples, start=1):
            weight = group.get("Weight")
            if weight is not None and not 0 <= int(weight) <= MAX_WEIGHT:
                raise elbv2_exceptions.ValidationError(
                    f"1 validation error detected: Value '{weight}' at "
                    f"'{field}.{index}.member.forwardConfig.targetGroups.{n}.member.weight' failed to "
                    f"satisfy constraint: Member must have value less than or equal to {MAX_WEIGHT}")
        groups = []
        for arn in dict.fromkeys(arns):
            group = backend.target_groups.get(arn)
            if group is None:
                raise elbv2_exceptions.ActionTargetGroupNotFoundError(arn)
            groups.append(group)
        network = balancer.type == "network"
        allowed = NETWORK_PROTOCOLS if network else APPLICATION_PROTOCOLS
        protocols = {g.protocol for g in groups if g.protocol}
        for group in groups:
            if group.protocol and group.protocol not in allowed:
                raise elbv2_exceptions.InvalidConfigurationRequest(
                    f"The target group '{group.arn}' has protocol {group.protocol}, which a "
                    f"load balancer of type '{balancer.type}' cannot forward to")
        if network and len(protocols) > 1:
            raise elbv2_exceptions.InvalidConfigurationRequest(
                "All target groups of a forward action on a load balancer of type 'network' must "
                f"have the same protocol; found {', '.join(sorted(protocols))}")
        stickiness = config.get("TargetGroupStickinessConfig") or {}
        if network and str(stickiness.get("Enabled", "false")).lower() == "true":
            raise elbv2_exceptions.InvalidConfigurationRequest(
                "Target group stickiness is not supported for load balancers of type 'network'")


def _check_conditions(conditions):
    """Refuses what ELB refuses in a rule's `conditions` beyond moto's own checks of each one
    (the module's header)."""
    fields = [c.get("Field") for c in conditions or []]
    for field in ONCE_PER_RULE:
        if fields.count(field) > 1:
            raise elbv2_exceptions.ValidationError(f"A rule can only have one '{field}' condition")
    values = 0
    for condition in conditions or []:
        config = condition.get(CONDITION_CONFIGS.get(condition.get("Field"), ""), {}) or {}
        values += len(config.get("Values") or condition.get("Values") or [])
        name = config.get("HttpHeaderName")
        if condition.get("Field") == "http-header" and name is not None and not HEADER_NAME.fullmatch(name):
            raise elbv2_exceptions.ValidationError(
                f"The 'HttpHeaderName' value '{name}' is not valid; the allowed characters are those of an "
                "RFC 7230 token: letters, digits and !#$%&'*+-.^_`|~")
    if values > MAX_CONDITION_VALUES:
        raise elbv2_exceptions.ValidationError(
            f"A rule can only have '{MAX_CONDITION_VALUES}' condition values; these conditions have {values}")


def _balancer_of(backend, listener_arn):
    """The load balancer of a listener (ListenerNotFound as ELB answers it)."""
    listeners = backend.describe_listeners(None, [listener_arn])
    return backend.load_balancers[listeners[0].load_balancer_arn]


def install(elbv2_models):
    """Wraps the backend's writes of load balancers, listeners and rules."""
    backend_class = elbv2_models.ELBv2Backend
    stock_create_load_balancer = backend_class.create_load_balancer
    stock_create_listener = backend_class.create_listener
    stock_modify_listener = backend_class.modify_listener
    stock_create_rule = backend_class.create_rule
    stock_modify_rule = backend_class.modify_rule

    def create_load_balancer(self, *args, **kwargs):
        balancer = stock_create_load_balancer(self, *args, **kwargs)
        segment = TYPE_SEGMENT.get(balancer.type, "app")
        if segment != "app":
            old = balancer.arn
            new = old.replace(":loadbalancer/app/", f":loadbalancer/{segment}/", 1)
            self.load_balancers[new] = self.load_balancers.pop(old)
            balancer.arn = new
            tags = self.tagging_service.get_tag_dict_for_resource(old)
            self.tagging_service.delete_all_tags_for_resource(old)
            if tags:
                self.tagging_service.tag_resource(new, [{"Key": k, "Value": v} for k, v in tags.items()])
        return balancer

    def create_listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate, actions,
                        *args, **kwargs):
        balancer = self.load_balancers.get(load_balancer_arn)
        if balancer is not None:
            _check_actions(self, balancer, actions, "defaultActions")
        return stock_create_listener(self, load_balancer_arn, protocol, port, ssl_policy,
                                     certificate, actions, *args, **kwargs)

    def modify_listener(self, arn, port=None, protocol=None, ssl_policy=None, certificates=None,
                        actions=None):
        _check_actions(self, _balancer_of(self, arn), actions, "defaultActions")
        return stock_modify_listener(self, arn, port, protocol, ssl_policy, certificates, actions)

    def create_rule(self, listener_arn, conditions, priority, actions, *args, **kwargs):
        balancer = _balancer_of(self, listener_arn)
        if balancer.type == "network":
            raise elbv2_exceptions.InvalidLoadBalancerActionException(
                "Listener rules are not supported for load balancers of type 'network'")
        _check_actions(self, balancer, actions, "actions")
        _check_conditions(conditions)
        return stock_create_rule(self, listener_arn, conditions, priority, actions, *args, **kwargs)

    def modify_rule(self, rule_arn, conditions, actions):
        rules = self.describe_rules(listener_arn=None, rule_arns=[rule_arn])
        if rules:
            _check_actions(self, _balancer_of(self, rules[0].listener_arn), actions, "actions")
        _check_conditions(conditions)
        return stock_modify_rule(self, rule_arn, conditions, actions)

    backend_class.create_load_balancer = create_load_balancer
    backend_class.create_listener = create_listener
    backend_class.modify_listener = modify_listener
    backend_class.create_rule = create_rule
    backend_class.modify_rule = modify_rule
