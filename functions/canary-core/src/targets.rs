//! The plan's traffic targets: where traffic is weighted between the stable and the new
//! cluster, each kind's identity (its key) and validation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::arn::{parse_elb_arn, ElbResource};
use crate::ownership::OwnerCheck;
use crate::validate::Errors;

/// One place where traffic is weighted. Exactly one of `alb`, `nlb`, `globalAccelerator`,
/// `vpcLattice` or `route53`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TrafficTarget {
    /// An Application Load Balancer listener's default action, or one of its rules, that
    /// forwards to the stable and the canary target group with weights.
    Alb(AlbTarget),
    /// A Network Load Balancer TCP, TLS, UDP or TCP_UDP listener whose default action forwards
    /// to the stable and the canary target group with weights (docs/traffic/nlb.md).
    Nlb(NlbTarget),
    /// An AWS Global Accelerator endpoint group: the weights of the stable and the canary
    /// cluster's load balancers in it, or its traffic dial (docs/traffic/global-accelerator.md).
    GlobalAccelerator(GlobalAcceleratorTarget),
    /// An Amazon VPC Lattice service's listener default action, or one of its rules, that
    /// forwards to the stable and the canary cluster's target group with weights
    /// (docs/traffic/vpc-lattice.md).
    VpcLattice(VpcLatticeTarget),
    /// Two Route 53 weighted records of the same name and type.
    Route53(Route53Target),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GlobalAcceleratorTarget {
    /// The endpoint group
    /// (`arn:aws:globalaccelerator::<account>:accelerator/<id>/listener/<id>/endpoint-group/<id>`).
    pub endpoint_group_arn: String,
    /// `endpointWeights` (the default): the stable and the canary endpoint of this group (the
    /// two clusters' load balancers in one Region) weighted as shares, 0 to 255 each.
    /// `trafficDial`: the group is the new cluster's Region's, and its traffic dial is stepped
    /// 0 to 100 %; the traffic it turns away goes to the accelerator's other Regions.
    #[serde(default)]
    pub shift: AcceleratorShift,
    /// The stable cluster's endpoint (a load balancer ARN, `eipalloc-…` or `i-…`); with
    /// `endpointWeights` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable_endpoint_id: Option<String>,
    /// The new cluster's endpoint; with `endpointWeights` only. Prepare adds it at weight 0
    /// when the group does not hold it yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_endpoint_id: Option<String>,
    /// An accelerator the AWS Load Balancer Controller manages (its `GlobalAccelerator`
    /// resource; tags `elbv2.k8s.aws/*`) is refused (`TrafficOwnedByController`): it would put
    /// its endpoints back. `{"ignore": "<reason>"}` shifts it anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerCheck>,
}

/// How a Global Accelerator target moves traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AcceleratorShift {
    /// Endpoint weights in one endpoint group.
    #[default]
    EndpointWeights,
    /// The traffic dial of the new cluster's Region's endpoint group.
    TrafficDial,
}

impl GlobalAcceleratorTarget {
    /// The accelerator the endpoint group belongs to (its ARN's prefix).
    pub fn accelerator_arn(&self) -> &str {
        self.endpoint_group_arn
            .split_once("/listener/")
            .map_or(self.endpoint_group_arn.as_str(), |(accelerator, _)| {
                accelerator
            })
    }

    /// The stable and the canary endpoint, with `endpointWeights`.
    pub fn endpoints(&self) -> Option<(&str, &str)> {
        match self.shift {
            AcceleratorShift::EndpointWeights => Some((
                self.stable_endpoint_id.as_deref()?,
                self.canary_endpoint_id.as_deref()?,
            )),
            AcceleratorShift::TrafficDial => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VpcLatticeTarget {
    /// The service: its ID (`svc-0123456789abcdef0`) or ARN.
    pub service_identifier: String,
    /// One of its listeners: its ID (`listener-0123456789abcdef0`) or ARN.
    pub listener_identifier: String,
    /// A rule of that listener (`rule-0123456789abcdef0` or its ARN). Without it, the
    /// listener's default action is shifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_identifier: Option<String>,
    /// The target group of the cluster(s) serving traffic now: its ID (`tg-…`) or ARN.
    pub stable_target_group: String,
    /// The target group of the new cluster: its ID or ARN.
    pub canary_target_group: String,
    /// A service, listener or rule the AWS Gateway API Controller manages (tag
    /// `application-networking.k8s.aws/ManagedBy`, from an HTTPRoute) is refused
    /// (`TrafficOwnedByController`): it would put its `backendRefs` weights back.
    /// `{"ignore": "<reason>"}` shifts it anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerCheck>,
}

impl VpcLatticeTarget {
    /// The service's, listener's, rule's and target groups' IDs, whether the plan gives IDs
    /// or ARNs (an ARN's last segment): what the API answers and what the weights are keyed by.
    pub fn service_id(&self) -> &str {
        lattice_id(&self.service_identifier)
    }
    pub fn listener_id(&self) -> &str {
        lattice_id(&self.listener_identifier)
    }
    pub fn rule_id(&self) -> Option<&str> {
        self.rule_identifier.as_deref().map(lattice_id)
    }
    pub fn stable_target_group_id(&self) -> &str {
        lattice_id(&self.stable_target_group)
    }
    pub fn canary_target_group_id(&self) -> &str {
        lattice_id(&self.canary_target_group)
    }
}

/// A Lattice resource's ID from its ID or ARN (the ARN's last path segment).
pub fn lattice_id(identifier: &str) -> &str {
    identifier.rsplit('/').next().unwrap_or(identifier)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlbTarget {
    pub listener_arn: String,
    /// A rule of that listener. Without it, the listener's default action is shifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_arn: Option<String>,
    /// The target group of the cluster(s) serving traffic now.
    pub stable_target_group_arn: String,
    /// The target group of the new cluster.
    pub canary_target_group_arn: String,
    /// A listener or rule that the AWS Load Balancer Controller or ACK manages is refused
    /// (`TrafficOwnedByController`): it would put its weights back. `{"ignore": "<reason>"}`
    /// shifts it anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerCheck>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NlbTarget {
    /// The listener (`listener/net/…`). An NLB listener has no rules: its default action is
    /// shifted.
    pub listener_arn: String,
    /// The target group of the cluster(s) serving traffic now.
    pub stable_target_group_arn: String,
    /// The target group of the new cluster, of the stable one's protocol.
    pub canary_target_group_arn: String,
    /// A listener or load balancer that the AWS Load Balancer Controller (a Service of type
    /// LoadBalancer) or ACK manages is refused (`TrafficOwnedByController`): it would put its
    /// weights back. `{"ignore": "<reason>"}` shifts it anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerCheck>,
    /// The shortest bake a step may have, in seconds: a plan with a shorter step is refused.
    /// An NLB weighs connections, not requests, and a connection stays on the target group it
    /// opened on: with long-lived flows a step's new weight reaches only the connections opened
    /// since, and a short bake judges the old ones. Set it to about the clients' connection
    /// lifetime (ECS waits 10 minutes at each NLB shift). 1 to 86400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub min_step_seconds: Option<i64>,
}

/// What an ALB and an NLB target share: a listener (or an ALB rule) whose forward action
/// weights the stable and the canary target group. The ELB calls and the router are written
/// once over it; its `name()` is `alb` or `nlb`, its `region()` the listener's.
pub trait ForwardTarget: TargetKind + Send + Sync {
    fn listener_arn(&self) -> &str;
    /// The rule shifted instead of the listener's default action (ALB only).
    fn rule_arn(&self) -> Option<&str>;
    fn stable_target_group_arn(&self) -> &str;
    fn canary_target_group_arn(&self) -> &str;
    fn owner(&self) -> Option<&OwnerCheck>;
    /// The shortest bake a step may have, when the plan sets one (an NLB's `minStepSeconds`).
    fn min_step_seconds(&self) -> Option<i64> {
        None
    }
}

/// The Region a load balancer lives in (from its listener's ARN).
fn listener_region(listener_arn: &str) -> Option<&str> {
    listener_arn.split(':').nth(3)
}

impl ForwardTarget for AlbTarget {
    fn listener_arn(&self) -> &str {
        &self.listener_arn
    }
    fn rule_arn(&self) -> Option<&str> {
        self.rule_arn.as_deref()
    }
    fn stable_target_group_arn(&self) -> &str {
        &self.stable_target_group_arn
    }
    fn canary_target_group_arn(&self) -> &str {
        &self.canary_target_group_arn
    }
    fn owner(&self) -> Option<&OwnerCheck> {
        self.owner.as_ref()
    }
}

impl ForwardTarget for NlbTarget {
    fn listener_arn(&self) -> &str {
        &self.listener_arn
    }
    fn rule_arn(&self) -> Option<&str> {
        None
    }
    fn stable_target_group_arn(&self) -> &str {
        &self.stable_target_group_arn
    }
    fn canary_target_group_arn(&self) -> &str {
        &self.canary_target_group_arn
    }
    fn owner(&self) -> Option<&OwnerCheck> {
        self.owner.as_ref()
    }
    fn min_step_seconds(&self) -> Option<i64> {
        self.min_step_seconds
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Route53Target {
    /// The bare hosted zone id, e.g. `Z0123456789ABCDEFGHIJ`.
    pub hosted_zone_id: String,
    /// The record name, e.g. `api.example.com` (a trailing dot is optional).
    pub record_name: String,
    pub record_type: RecordType,
    /// `SetIdentifier` of the record pointing at the stable cluster.
    pub stable_set_identifier: String,
    /// `SetIdentifier` of the record pointing at the new cluster.
    pub canary_set_identifier: String,
    /// Records ExternalDNS owns (its TXT registry records are beside them) are refused
    /// (`TrafficOwnedByController`): it would put its weights back. `ignore` shifts them anyway;
    /// `txtPrefix`/`txtSuffix` say where ExternalDNS keeps its registry records, when it runs
    /// with `--txt-prefix`/`--txt-suffix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerCheck>,
    /// `argocd`: GitOps mode, for records ExternalDNS owns. The weights are not written to
    /// Route 53 but as an annotation on each cluster's Argo CD cluster Secret, which the user's
    /// ApplicationSet templates into the Ingress ExternalDNS reads; a step is set once Route 53
    /// reads it back (docs/shapes/gitops.md). Needs `gitops`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The GitOps mode's settings (with `"via": "argocd"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitops: Option<GitOpsWeights>,
}

/// Who writes a Route 53 target's weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// Argo CD, through the clusters' Argo CD cluster Secrets (then ExternalDNS).
    Argocd,
}

/// The weight annotation's default key.
pub const DEFAULT_WEIGHT_ANNOTATION: &str = "cluster-canary.io/weight";

/// GitOps mode: where the weights are written, and how long they may take to reach Route 53.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitOpsWeights {
    /// The stable cluster's Argo CD cluster Secret, in `argocd.namespace`. cluster-canary did
    /// not create it, so it writes only the weight annotation there (server-side apply, field
    /// manager `cluster-canary-weights`). The canary's weight goes on the Secret cluster-canary
    /// registered for the new cluster.
    pub stable_secret: String,
    /// The annotation the ApplicationSet templates into the Ingress's
    /// `external-dns.kubernetes.io/aws-weight`. Default `cluster-canary.io/weight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_annotation: Option<String>,
    /// How long a step's weights may take to reach Route 53 (Argo CD's sync, then
    /// ExternalDNS's interval) before the step fails and the rollout rolls back; also how long
    /// a restore holds the baseline against the flaps of a sync in flight. 10 to 180, default 120.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 180))]
    pub sync_timeout_seconds: Option<i64>,
}

impl GitOpsWeights {
    pub fn weight_annotation(&self) -> &str {
        self.weight_annotation
            .as_deref()
            .unwrap_or(DEFAULT_WEIGHT_ANNOTATION)
    }

    pub fn sync_timeout_seconds(&self) -> i64 {
        self.sync_timeout_seconds.unwrap_or(120)
    }

    fn validate(&self, path: &str, errors: &mut Errors) {
        if !crate::argocd::is_dns_subdomain(&self.stable_secret) {
            errors.push(
                format!("{path}.stableSecret"),
                format!("`{}` is not a Kubernetes Secret name", self.stable_secret),
            );
        }
        if let Some(key) = &self.weight_annotation {
            if !crate::argocd::is_label_key(key) {
                errors.push(
                    format!("{path}.weightAnnotation"),
                    format!("`{key}` is not a Kubernetes annotation key (e.g. cluster-canary.io/weight)"),
                );
            }
        }
        if let Some(seconds) = self.sync_timeout_seconds {
            if !(10..=180).contains(&seconds) {
                errors.push(
                    format!("{path}.syncTimeoutSeconds"),
                    "must be 10 to 180: a step's wait for Route 53 runs inside one function invocation",
                );
            }
        }
    }
}

/// Record types Route 53 allows weighted routing for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum RecordType {
    A,
    Aaaa,
    Caa,
    Cname,
    Ds,
    Mx,
    Naptr,
    Ptr,
    Spf,
    Srv,
    Txt,
}

impl RecordType {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::A => "A",
            RecordType::Aaaa => "AAAA",
            RecordType::Caa => "CAA",
            RecordType::Cname => "CNAME",
            RecordType::Ds => "DS",
            RecordType::Mx => "MX",
            RecordType::Naptr => "NAPTR",
            RecordType::Ptr => "PTR",
            RecordType::Spf => "SPF",
            RecordType::Srv => "SRV",
            RecordType::Txt => "TXT",
        }
    }
}

impl TrafficTarget {
    /// The identity of the traffic this target weights. Two targets with the same key shift
    /// the same traffic: the rule (or the listener's default action), or the Route 53 record
    /// name and type, whatever the set identifiers.
    pub fn key(&self) -> String {
        self.kind().key()
    }

    /// What every kind of target answers; the one place in the plan that tells the kinds
    /// apart. (The rollout's traffic routers are built in `canary_rollout::traffic`.)
    pub fn kind(&self) -> &dyn TargetKind {
        match self {
            TrafficTarget::Alb(alb) => alb,
            TrafficTarget::Nlb(nlb) => nlb,
            TrafficTarget::GlobalAccelerator(ga) => ga,
            TrafficTarget::VpcLattice(lattice) => lattice,
            TrafficTarget::Route53(r53) => r53,
        }
    }

    /// The ALB target, for what only an ALB has (detaching, a fleet's peers).
    pub fn as_alb(&self) -> Option<&AlbTarget> {
        if let TrafficTarget::Alb(alb) = self {
            Some(alb)
        } else {
            None
        }
    }

    /// The canary's and the stable's target groups, for the checks that read their CloudWatch
    /// metrics (`analysis.alb`, the comparison's `alb` metrics, the error budget's spend): an
    /// `alb` target's ARNs, a `vpcLattice` target's IDs (however the plan names them). None for
    /// the kinds whose metrics are not per target group.
    pub fn judged_target_groups(&self) -> Option<(&str, &str)> {
        match self {
            TrafficTarget::Alb(alb) => Some((
                alb.canary_target_group_arn.as_str(),
                alb.stable_target_group_arn.as_str(),
            )),
            TrafficTarget::VpcLattice(lattice) => Some((
                lattice.canary_target_group_id(),
                lattice.stable_target_group_id(),
            )),
            _ => None,
        }
    }
}

/// The cluster tags a profile's traffic targets take (`crate::profile`): what only the new
/// cluster knows. Each fills (or overrides) its field in every target of its kind; a new kind
/// adds its rows here.
pub const CLUSTER_TAGS: [(&str, &str, &str); 8] = [
    (
        "cluster-canary/stable-target-group",
        "alb",
        "stableTargetGroupArn",
    ),
    (
        "cluster-canary/canary-target-group",
        "alb",
        "canaryTargetGroupArn",
    ),
    (
        "cluster-canary/stable-target-group",
        "nlb",
        "stableTargetGroupArn",
    ),
    (
        "cluster-canary/canary-target-group",
        "nlb",
        "canaryTargetGroupArn",
    ),
    (
        "cluster-canary/stable-target-group",
        "vpcLattice",
        "stableTargetGroup",
    ),
    (
        "cluster-canary/canary-target-group",
        "vpcLattice",
        "canaryTargetGroup",
    ),
    (
        "cluster-canary/stable-set-identifier",
        "route53",
        "stableSetIdentifier",
    ),
    (
        "cluster-canary/canary-set-identifier",
        "route53",
        "canarySetIdentifier",
    ),
];

/// A kind of traffic target, as the plan knows it: its identity and its validation.
pub trait TargetKind {
    /// The plan's field name for the kind (`alb`, `route53`).
    fn name(&self) -> &'static str;
    /// The identity of the traffic this target weights (see [`TrafficTarget::key`]).
    fn key(&self) -> String;
    /// Its problems, at `path` (`trafficTargets[1].route53`).
    fn validate(&self, path: &str, errors: &mut Errors);
    /// The Region its traffic is weighted in; `None` for a global one (Route 53).
    fn region(&self) -> Option<&str> {
        None
    }
}

impl TargetKind for AlbTarget {
    fn name(&self) -> &'static str {
        "alb"
    }

    fn key(&self) -> String {
        self.rule_arn
            .clone()
            .unwrap_or_else(|| self.listener_arn.clone())
    }

    fn validate(&self, path: &str, errors: &mut Errors) {
        validate_alb(self, path, errors)
    }

    fn region(&self) -> Option<&str> {
        listener_region(&self.listener_arn)
    }
}

impl TargetKind for NlbTarget {
    fn name(&self) -> &'static str {
        "nlb"
    }

    fn key(&self) -> String {
        self.listener_arn.clone()
    }

    fn validate(&self, path: &str, errors: &mut Errors) {
        validate_nlb(self, path, errors)
    }

    fn region(&self) -> Option<&str> {
        listener_region(&self.listener_arn)
    }
}

impl TargetKind for GlobalAcceleratorTarget {
    fn name(&self) -> &'static str {
        "globalAccelerator"
    }

    /// The endpoint group: its weights and its dial are one traffic.
    fn key(&self) -> String {
        self.endpoint_group_arn.clone()
    }

    fn validate(&self, path: &str, errors: &mut Errors) {
        validate_global_accelerator(self, path, errors)
    }

    /// The Region of the new cluster's load balancer, when the plan names it by ARN (an
    /// endpoint group's ARN names no Region).
    fn region(&self) -> Option<&str> {
        let endpoint = self.canary_endpoint_id.as_deref()?;
        endpoint.strip_prefix("arn:")?.split(':').nth(2)
    }
}

impl TargetKind for VpcLatticeTarget {
    fn name(&self) -> &'static str {
        "vpcLattice"
    }

    /// The rule, or the listener's default action (IDs are unique in AWS).
    fn key(&self) -> String {
        match self.rule_id() {
            Some(rule) => format!(
                "vpcLattice:{}/{}/{rule}",
                self.service_id(),
                self.listener_id()
            ),
            None => format!("vpcLattice:{}/{}", self.service_id(), self.listener_id()),
        }
    }

    fn validate(&self, path: &str, errors: &mut Errors) {
        validate_vpc_lattice(self, path, errors)
    }

    /// The Region of the first identifier given as an ARN; none given: the stack's.
    fn region(&self) -> Option<&str> {
        self.arns().next().map(|arn| arn.region)
    }
}

impl VpcLatticeTarget {
    /// The identifiers the plan gives as ARNs, parsed (those that parse).
    fn arns(&self) -> impl Iterator<Item = LatticeArn<'_>> {
        [
            Some(self.service_identifier.as_str()),
            Some(self.listener_identifier.as_str()),
            self.rule_identifier.as_deref(),
            Some(self.stable_target_group.as_str()),
            Some(self.canary_target_group.as_str()),
        ]
        .into_iter()
        .flatten()
        .filter_map(|identifier| parse_lattice_arn(identifier).ok())
    }
}

impl TargetKind for Route53Target {
    fn name(&self) -> &'static str {
        "route53"
    }

    fn key(&self) -> String {
        format!(
            "route53:{}:{}:{}",
            self.hosted_zone_id,
            self.fqdn(),
            self.record_type.as_str()
        )
    }

    fn validate(&self, path: &str, errors: &mut Errors) {
        validate_route53(self, path, errors)
    }
}

impl Route53Target {
    /// The record name as Route 53 lists it: lower case, a trailing dot, and a leading `*`
    /// escaped as `\052`.
    pub fn fqdn(&self) -> String {
        route53_name(&self.record_name)
    }

    /// The GitOps settings, when the target's weights go through Argo CD.
    pub fn gitops(&self) -> Option<&GitOpsWeights> {
        match self.via {
            Some(Via::Argocd) => self.gitops.as_ref(),
            None => None,
        }
    }
}

/// A DNS name as Route 53 lists it: lower case, a trailing dot, and a leading `*` escaped as
/// `\052`.
pub fn route53_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let escaped = match lower.strip_prefix('*') {
        Some(rest) => format!("\\052{rest}"),
        None => lower,
    };
    if escaped.ends_with('.') {
        escaped
    } else {
        format!("{escaped}.")
    }
}

/// What an ALB and an NLB target validate alike: the owner check, the listener's ARN (of
/// `listener_kind`), and the two target groups against it. The listener, when its ARN parsed.
fn validate_forward<'t>(
    target: &'t dyn ForwardTarget,
    listener_kind: ElbResource,
    path: &str,
    errors: &mut Errors,
) -> Option<crate::arn::ElbArn<'t>> {
    if let Some(owner) = target.owner() {
        owner.validate(path, false, errors);
    }
    let listener = match parse_elb_arn(target.listener_arn(), listener_kind) {
        Ok(l) => Some(l),
        Err(e) => {
            errors.push(format!("{path}.listenerArn"), e);
            None
        }
    };
    validate_target_groups(target, listener.as_ref(), path, errors);
    listener
}

fn validate_alb(alb: &AlbTarget, path: &str, errors: &mut Errors) {
    let listener = validate_forward(alb, ElbResource::Listener, path, errors);
    if let Some(rule_arn) = &alb.rule_arn {
        match parse_elb_arn(rule_arn, ElbResource::ListenerRule) {
            Ok(rule) => {
                if let Some(listener) = &listener {
                    if rule.listener_path() != listener.listener_path()
                        || rule.region != listener.region
                        || rule.account != listener.account
                    {
                        errors.push(
                            format!("{path}.ruleArn"),
                            format!(
                                "the rule does not belong to the listener {}",
                                alb.listener_arn
                            ),
                        );
                    }
                }
            }
            Err(e) => errors.push(format!("{path}.ruleArn"), e),
        }
    }
}

fn validate_nlb(nlb: &NlbTarget, path: &str, errors: &mut Errors) {
    validate_forward(nlb, ElbResource::NetworkListener, path, errors);
    if let Some(seconds) = nlb.min_step_seconds {
        if !(1..=crate::limits::MAX_BAKE_SECONDS).contains(&seconds) {
            errors.push(
                format!("{path}.minStepSeconds"),
                format!(
                    "must be from 1 to {} seconds, got {seconds}",
                    crate::limits::MAX_BAKE_SECONDS
                ),
            );
        }
    }
}

/// A forward target's two target groups: ELB target group ARNs of the listener's account and
/// Region, and not the same one.
fn validate_target_groups(
    target: &dyn ForwardTarget,
    listener: Option<&crate::arn::ElbArn<'_>>,
    path: &str,
    errors: &mut Errors,
) {
    for (field, arn) in [
        ("stableTargetGroupArn", target.stable_target_group_arn()),
        ("canaryTargetGroupArn", target.canary_target_group_arn()),
    ] {
        match parse_elb_arn(arn, ElbResource::TargetGroup) {
            Ok(tg) => {
                if let Some(listener) = listener {
                    if (tg.partition, tg.region, tg.account)
                        != (listener.partition, listener.region, listener.account)
                    {
                        errors.push(
                            format!("{path}.{field}"),
                            "a listener can only forward to target groups of its own account and region",
                        );
                    }
                }
            }
            Err(e) => errors.push(format!("{path}.{field}"), e),
        }
    }
    if target.stable_target_group_arn() == target.canary_target_group_arn() {
        errors.push(
            format!("{path}.canaryTargetGroupArn"),
            "must differ from stableTargetGroupArn",
        );
    }
}

fn validate_route53(r53: &Route53Target, path: &str, errors: &mut Errors) {
    if let Some(owner) = &r53.owner {
        owner.validate(path, true, errors);
    }
    let zone = &r53.hosted_zone_id;
    if let Some(bare) = zone.strip_prefix("/hostedzone/") {
        errors.push(
            format!("{path}.hostedZoneId"),
            format!("give the bare hosted zone id `{bare}`, without `/hostedzone/`"),
        );
    } else if zone.is_empty()
        || zone.len() > 32
        || !zone
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        errors.push(
            format!("{path}.hostedZoneId"),
            format!("`{zone}` is not a hosted zone id (upper-case letters and digits, e.g. Z0123456789ABCDEFGHIJ)"),
        );
    }
    let name = r53.record_name.trim_end_matches('.');
    if name.is_empty()
        || r53.record_name.len() > 255
        || name
            .split('.')
            .any(|label| label.is_empty() || label.len() > 63)
    {
        errors.push(
            format!("{path}.recordName"),
            format!("`{}` is not a DNS name", r53.record_name),
        );
    }
    for (field, id) in [
        ("stableSetIdentifier", &r53.stable_set_identifier),
        ("canarySetIdentifier", &r53.canary_set_identifier),
    ] {
        if id.is_empty() || id.len() > 128 {
            errors.push(format!("{path}.{field}"), "must be 1 to 128 characters");
        }
    }
    if r53.stable_set_identifier == r53.canary_set_identifier {
        errors.push(
            format!("{path}.canarySetIdentifier"),
            "must differ from stableSetIdentifier",
        );
    }
    match (r53.via, &r53.gitops) {
        (Some(Via::Argocd), Some(gitops)) => gitops.validate(&format!("{path}.gitops"), errors),
        (Some(Via::Argocd), None) => errors.push(
            format!("{path}.gitops"),
            "is required with \"via\": \"argocd\": name the stable cluster's Argo CD cluster Secret \
             (gitops.stableSecret), where its weight is written",
        ),
        (None, Some(_)) => errors.push(
            format!("{path}.gitops"),
            "only has a meaning with \"via\": \"argocd\"",
        ),
        (None, None) => {}
    }
    if r53.via.is_some() && r53.owner.as_ref().is_some_and(|o| o.ignore.is_some()) {
        errors.push(
            format!("{path}.owner.ignore"),
            "has no meaning with \"via\": \"argocd\": the records are ExternalDNS's, and the weights go through it",
        );
    }
}

/// A VPC Lattice ARN: `arn:<partition>:vpc-lattice:<region>:<account>:<resource>`, the resource
/// `service/svc-…[/listener/listener-…[/rule/rule-…]]` or `targetgroup/tg-…`.
struct LatticeArn<'a> {
    region: &'a str,
    account: &'a str,
    /// The resource's path segments, e.g. `["service", "svc-…", "listener", "listener-…"]`.
    segments: Vec<&'a str>,
}

/// `<prefix>` and 17 lower-case letters or digits: a Lattice resource ID (the API's pattern).
fn is_lattice_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| {
        rest.len() == 17
            && rest
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    })
}

fn parse_lattice_arn(arn: &str) -> Result<LatticeArn<'_>, String> {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let ["arn", partition, "vpc-lattice", region, account, resource] = parts[..] else {
        return Err(format!("`{arn}` is not a VPC Lattice ARN"));
    };
    if !partition.starts_with("aws")
        || !crate::arn::is_region(region)
        || account.len() != 12
        || !account.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(format!("`{arn}` is not a VPC Lattice ARN"));
    }
    Ok(LatticeArn {
        region,
        account,
        segments: resource.split('/').collect(),
    })
}

/// What a Lattice identifier of the plan must be, and the segments its ARN has.
struct LatticeField<'t> {
    field: &'static str,
    value: &'t str,
    /// The ARN's resource path: kinds, the last one this field's (`["service", "listener"]`).
    kinds: &'static [&'static str],
    /// The ID's prefix (`listener-`).
    prefix: &'static str,
    example: &'static str,
}

/// The IDs the identifier names, outermost first (an ID alone: just its own), or the problem.
fn lattice_ids<'t>(
    field: &LatticeField<'t>,
) -> Result<(Vec<&'t str>, Option<LatticeArn<'t>>), String> {
    if !field.value.starts_with("arn:") {
        return match is_lattice_id(field.value, field.prefix) {
            true => Ok((vec![field.value], None)),
            false => Err(format!(
                "`{}` is not a VPC Lattice {} ID or ARN; expected `{}` or its ARN",
                field.value,
                field.kinds[field.kinds.len() - 1],
                field.example
            )),
        };
    }
    let arn = parse_lattice_arn(field.value)?;
    let ids: Vec<&str> = arn.segments.iter().skip(1).step_by(2).copied().collect();
    let kinds: Vec<&str> = arn.segments.iter().step_by(2).copied().collect();
    let prefix_of = |kind: &str| match kind {
        "service" => "svc-",
        "listener" => "listener-",
        "rule" => "rule-",
        _ => "tg-",
    };
    let well_formed = arn.segments.len() == field.kinds.len() * 2
        && kinds == field.kinds
        && ids
            .iter()
            .zip(&kinds)
            .all(|(id, kind)| is_lattice_id(id, prefix_of(kind)));
    match well_formed {
        true => Ok((ids, Some(arn))),
        false => Err(format!(
            "`{}` is not a VPC Lattice {} ARN; expected arn:aws:vpc-lattice:<region>:<account>:{}",
            field.value,
            field.kinds[field.kinds.len() - 1],
            match field.kinds {
                ["targetgroup"] => "targetgroup/tg-0123456789abcdef0".to_owned(),
                kinds => kinds
                    .iter()
                    .zip([
                        "svc-0123456789abcdef0",
                        "listener-0123456789abcdef0",
                        "rule-0123456789abcdef0"
                    ])
                    .map(|(kind, id)| format!("{kind}/{id}"))
                    .collect::<Vec<_>>()
                    .join("/"),
            }
        )),
    }
}

fn validate_vpc_lattice(lattice: &VpcLatticeTarget, path: &str, errors: &mut Errors) {
    if let Some(owner) = &lattice.owner {
        owner.validate(path, false, errors);
    }
    let mut fields = vec![
        LatticeField {
            field: "serviceIdentifier",
            value: &lattice.service_identifier,
            kinds: &["service"],
            prefix: "svc-",
            example: "svc-0123456789abcdef0",
        },
        LatticeField {
            field: "listenerIdentifier",
            value: &lattice.listener_identifier,
            kinds: &["service", "listener"],
            prefix: "listener-",
            example: "listener-0123456789abcdef0",
        },
        LatticeField {
            field: "stableTargetGroup",
            value: &lattice.stable_target_group,
            kinds: &["targetgroup"],
            prefix: "tg-",
            example: "tg-0123456789abcdef0",
        },
        LatticeField {
            field: "canaryTargetGroup",
            value: &lattice.canary_target_group,
            kinds: &["targetgroup"],
            prefix: "tg-",
            example: "tg-0123456789abcdef0",
        },
    ];
    // The service's resources first: a target group in another place is the one said.
    if let Some(rule) = &lattice.rule_identifier {
        fields.insert(
            2,
            LatticeField {
                field: "ruleIdentifier",
                value: rule,
                kinds: &["service", "listener", "rule"],
                prefix: "rule-",
                example: "rule-0123456789abcdef0",
            },
        );
    }
    // Where an ARN names the resources around its own, they must be the plan's.
    let chain = [
        lattice.service_id(),
        lattice.listener_id(),
        lattice.rule_id().unwrap_or_default(),
    ];
    let mut place: Option<(&str, &str, &str)> = None;
    for field in &fields {
        match lattice_ids(field) {
            Err(problem) => errors.push(format!("{path}.{}", field.field), problem),
            Ok((ids, arn)) => {
                // An ARN's IDs, outermost first; an ID alone names nothing around it.
                if arn.is_some()
                    && field.kinds[0] == "service"
                    && ids.iter().zip(chain).any(|(id, plan)| *id != plan)
                {
                    errors.push(
                        format!("{path}.{}", field.field),
                        "names another service or listener than the target's serviceIdentifier and listenerIdentifier",
                    );
                }
                if let Some(arn) = arn {
                    match place {
                        Some((first, region, account))
                            if (region, account) != (arn.region, arn.account) =>
                        {
                            errors.push(
                                format!("{path}.{}", field.field),
                                format!("is in {} of account {}, {first} in {region} of account {account}: a service forwards only to target groups of its own account and Region", arn.region, arn.account),
                            );
                        }
                        Some(_) => {}
                        None => place = Some((field.field, arn.region, arn.account)),
                    }
                }
            }
        }
    }
    if lattice.stable_target_group_id() == lattice.canary_target_group_id() {
        errors.push(
            format!("{path}.canaryTargetGroup"),
            "must differ from stableTargetGroup",
        );
    }
}

/// `arn:<partition>:globalaccelerator::<account>:accelerator/<id>/listener/<id>/endpoint-group/<id>`.
fn is_endpoint_group_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let ["arn", partition, "globalaccelerator", "", account, resource] = parts[..] else {
        return false;
    };
    let segments: Vec<&str> = resource.split('/').collect();
    partition.starts_with("aws")
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && matches!(segments[..], ["accelerator", a, "listener", l, "endpoint-group", g]
            if [a, l, g].iter().all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')))
}

fn validate_global_accelerator(ga: &GlobalAcceleratorTarget, path: &str, errors: &mut Errors) {
    if let Some(owner) = &ga.owner {
        owner.validate(path, false, errors);
    }
    if !is_endpoint_group_arn(&ga.endpoint_group_arn) {
        errors.push(
            format!("{path}.endpointGroupArn"),
            format!(
                "`{}` is not a Global Accelerator endpoint group ARN; expected the form \
                 arn:aws:globalaccelerator::123456789012:accelerator/1234abcd-abcd-1234-abcd-1234abcdefgh/listener/0123vxyz/endpoint-group/098765zyxwvu",
                ga.endpoint_group_arn
            ),
        );
    }
    let ids = [
        ("stableEndpointId", &ga.stable_endpoint_id),
        ("canaryEndpointId", &ga.canary_endpoint_id),
    ];
    match ga.shift {
        AcceleratorShift::EndpointWeights => {
            for (field, id) in ids {
                match id {
                    None => errors.push(
                        format!("{path}.{field}"),
                        "is required with \"shift\": \"endpointWeights\" (the default): the load balancer's ARN, an Elastic IP allocation id or an instance id",
                    ),
                    // The API's EndpointId: 1 to 255 characters.
                    Some(id) if id.is_empty() || id.len() > 255 => errors.push(
                        format!("{path}.{field}"),
                        "must be 1 to 255 characters (a load balancer ARN, eipalloc-… or i-…)",
                    ),
                    Some(_) => {}
                }
            }
            if ga.stable_endpoint_id.is_some() && ga.stable_endpoint_id == ga.canary_endpoint_id {
                errors.push(
                    format!("{path}.canaryEndpointId"),
                    "must differ from stableEndpointId",
                );
            }
        }
        AcceleratorShift::TrafficDial => {
            for (field, id) in ids {
                if id.is_some() {
                    errors.push(
                        format!("{path}.{field}"),
                        "has no meaning with \"shift\": \"trafficDial\": the dial moves the whole endpoint group (the new cluster's Region's)",
                    );
                }
            }
        }
    }
}
