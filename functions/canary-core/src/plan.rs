//! The rollout plan: the JSON document a person passes to a manual execution and that the
//! cluster-created function builds from a profile. [`RolloutPlan::parse`] is the only way in:
//! it rejects unknown fields and checks every rule below, naming each offending field by its
//! JSON path (`trafficTargets[1].alb.canaryTargetGroupArn`), all at once.

use std::collections::HashMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::analysis::AnalysisSection;
use crate::argocd::ArgoCdSection;
use crate::arn::{self, parse_elb_arn, ElbResource};
use crate::gates::{ApprovalSection, HooksSection, OnApprovalTimeout, TargetHealthGate};
use crate::limits;

/// Most steps a plan may have. Each step is one weight change plus a bake of checks in the
/// state machine; the cap keeps a rollout well inside Step Functions' 25,000 history events.
pub const MAX_STEPS: usize = 20;
/// Most traffic targets a plan may shift. Every change is one API call per target, made one
/// after the other, and must finish inside one Lambda invocation.
pub const MAX_TARGETS: usize = 10;
/// Most bake checks a whole rollout may run (sum over steps of bake / interval). At about ten
/// history events per check this leaves room under the 25,000-event limit for the rest.
pub const MAX_TOTAL_CHECKS: u64 = 2000;
/// Longest bake of one step: one day.
pub const MAX_BAKE_SECONDS: i64 = 86_400;
/// The state machine polls the new cluster's status this often, at most this many times
/// (EKS takes 10–15 minutes to create a cluster): `WaitForCluster` and `ClusterActive?`.
pub const CLUSTER_POLL_SECONDS: u64 = 30;
pub const MAX_CLUSTER_POLLS: u64 = 40;

/// A rollout of traffic from the clusters that serve it now to a new cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "cluster-canary rollout plan")]
pub struct RolloutPlan {
    /// Optional reference to this schema, for editors. Ignored.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The new EKS cluster that receives traffic.
    pub cluster: ClusterRef,
    /// Where traffic is weighted between the stable and the new cluster. Every target moves
    /// together at each step.
    pub traffic_targets: Vec<TrafficTarget>,
    /// The canary's share of traffic at each step, in percent. Strictly increasing, ending at 100.
    pub steps: Vec<Step>,
    /// How long each step bakes and how often it is checked, unless the step says otherwise.
    pub bake: Bake,
    /// Alarm and metric analysis between steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisSection>,
    /// Registration of the new cluster in Argo CD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argocd: Option<ArgoCdSection>,
    /// Wait, before any traffic moves, until the load balancer sees the new cluster's
    /// targets as healthy. Without it, traffic moves once the Argo CD apps are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_health: Option<TargetHealthGate>,
    /// Steps that wait for a person's approval before they are set, and how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalSection>,
    /// How long the new cluster is watched with all traffic before the rollout is promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<Promotion>,
    /// Lambda functions of the team's own that check the rollout at three points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<HooksSection>,
    /// After promotion, finish the old cluster's part: detach it, deregister it from Argo CD,
    /// say so. Nothing is deleted in AWS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retire: Option<Retire>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retire {
    /// Remove the stable target group (at weight 0 after promotion) from every ALB target's
    /// forward action, in one compare-and-set write each.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detach_stable_target_groups: bool,
    /// The old cluster, named in the Old Cluster Retired event for a team's own automation
    /// (cluster-canary deletes nothing in AWS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_cluster: Option<ClusterRef>,
    /// The old cluster's Argo CD cluster Secret, in `argocd.namespace`: deleted if
    /// cluster-canary created it, or whoever did with `evenIfNotOurs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argocd_secret: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub even_if_not_ours: bool,
}

/// After 100 %, the checks go on for `bakeSeconds` (every `bake.checkIntervalSeconds`); a
/// failure then still restores the baseline: the old cluster is still attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Promotion {
    /// The 100 % step's bake (instead of `bake.seconds`).
    #[schemars(range(min = 1, max = 86400))]
    pub bake_seconds: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterRef {
    /// EKS cluster name.
    pub name: String,
    /// AWS region of the cluster, e.g. `eu-west-1`.
    pub region: String,
    /// A cluster in another account: the role the functions assume there (session name: the
    /// execution's name) to describe it. Its trust policy must trust this stack's function
    /// roles; see infra/cluster-account.yaml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
}

/// One place where traffic is weighted. Exactly one of `alb` or `route53`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TrafficTarget {
    /// An Application Load Balancer listener's default action, or one of its rules, that
    /// forwards to the stable and the canary target group with weights.
    Alb(AlbTarget),
    /// Two Route 53 weighted records of the same name and type.
    Route53(Route53Target),
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// The canary's share of traffic in percent, 1–100.
    #[schemars(range(min = 1, max = 100))]
    pub weight: i64,
    /// Overrides `bake.seconds` for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub bake_seconds: Option<i64>,
    /// Overrides `bake.checkIntervalSeconds` for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub check_interval_seconds: Option<i64>,
    /// Wait for a person's approval before setting this step (timeout and what it does: the
    /// plan's `approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Bake {
    /// How long each step is watched before the next one, in seconds.
    #[schemars(range(min = 1, max = 86400))]
    pub seconds: i64,
    /// How often the checks run during a bake, in seconds. At most `seconds`.
    #[schemars(range(min = 1))]
    pub check_interval_seconds: i64,
}

/// A step with its bake settings resolved, as the state machine runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolvedStep {
    pub weight: u8,
    pub bake_seconds: u32,
    pub check_interval_seconds: u32,
    /// Checks in the bake: `bake_seconds / check_interval_seconds`, at least 1.
    pub checks: u32,
    /// How long the step waits for an approval before it is set; 0: it does not wait.
    pub approval_timeout_seconds: u32,
    /// What running out of that time does.
    pub on_approval_timeout: OnApprovalTimeout,
}

/// One problem with a plan, at a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every problem found with a plan. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanErrors(pub Vec<PlanError>);

impl fmt::Display for PlanErrors {
    /// Every problem up to [`limits::MAX_LISTED_ERRORS`], each cut to a line, then
    /// "… and N more": the message ends up in the execution's cause, which is bounded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.0.iter().map(PlanError::to_string).collect();
        let listed = limits::join_bounded(
            &lines,
            "; ",
            limits::MAX_LISTED_ERRORS,
            limits::MAX_ERROR_MESSAGE_BYTES - 100,
        );
        write!(f, "invalid rollout plan: {listed}")
    }
}

impl std::error::Error for PlanErrors {}

/// A plan that passed [`RolloutPlan::parse`], with its steps resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidPlan {
    pub plan: RolloutPlan,
    pub steps: Vec<ResolvedStep>,
}

impl RolloutPlan {
    /// Deserializes and validates a plan. Errors name fields by JSON path.
    pub fn parse(value: Value) -> Result<ValidPlan, PlanErrors> {
        // serde would also read a struct from a JSON array (fields by position), which makes
        // for baffling messages; a plan is an object.
        // The plan is kept in the execution's state for the whole rollout: its size is
        // capped first, before anything else is said about it (see `limits`).
        let size = serde_json::to_vec(&value).map_or(usize::MAX, |bytes| bytes.len());
        if size > limits::MAX_PLAN_BYTES {
            return Err(PlanErrors(vec![PlanError {
                path: "plan".to_owned(),
                message: format!(
                    "is {size} bytes as compact JSON, more than the limit of {} bytes \
                     (the plan travels in the Step Functions execution state, capped at 256 KiB)",
                    limits::MAX_PLAN_BYTES
                ),
            }]));
        }
        if !value.is_object() {
            return Err(PlanErrors(vec![PlanError {
                path: "plan".to_owned(),
                message: format!("must be a JSON object, got {}", json_type(&value)),
            }]));
        }
        let plan: RolloutPlan = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            PlanErrors(vec![PlanError {
                path: if path == "." { "plan".to_owned() } else { path },
                message: e.into_inner().to_string(),
            }])
        })?;
        let mut errors = Errors::default();
        plan.validate(&mut errors);
        let steps = plan.resolve_steps(&mut errors);
        if errors.0.is_empty() {
            Ok(ValidPlan { plan, steps })
        } else {
            Err(PlanErrors(errors.0))
        }
    }

    fn validate(&self, errors: &mut Errors) {
        if !is_eks_cluster_name(&self.cluster.name) {
            errors.push(
                "cluster.name",
                format!(
                    "`{}` is not an EKS cluster name (1–100 letters, digits, '-' or '_', starting with a letter or digit)",
                    self.cluster.name
                ),
            );
        }
        if let Some(role) = self
            .cluster
            .role_arn
            .as_deref()
            .filter(|r| !arn::is_iam_role_arn(r))
        {
            errors.push(
                "cluster.roleArn",
                format!("`{role}` is not an IAM role ARN such as arn:aws:iam::111122223333:role/cluster-canary"),
            );
        }
        if !arn::is_region(&self.cluster.region) {
            errors.push(
                "cluster.region",
                format!(
                    "`{}` is not an AWS region such as `us-east-1`",
                    self.cluster.region
                ),
            );
        }

        if self.traffic_targets.is_empty() {
            errors.push("trafficTargets", "at least one traffic target is required");
        } else if self.traffic_targets.len() > MAX_TARGETS {
            errors.push(
                "trafficTargets",
                format!(
                    "at most {MAX_TARGETS} traffic targets, got {}",
                    self.traffic_targets.len()
                ),
            );
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, target) in self.traffic_targets.iter().enumerate() {
            match target {
                TrafficTarget::Alb(alb) => {
                    validate_alb(alb, &format!("trafficTargets[{i}].alb"), errors)
                }
                TrafficTarget::Route53(r53) => {
                    validate_route53(r53, &format!("trafficTargets[{i}].route53"), errors)
                }
            }
            if let Some(first) = seen.insert(target.key(), i) {
                errors.push(
                    format!("trafficTargets[{i}]"),
                    format!(
                        "shifts the same traffic as trafficTargets[{first}] ({})",
                        target.key()
                    ),
                );
            }
        }

        if self.steps.is_empty() {
            errors.push(
                "steps",
                "at least one step is required (the last one must be 100)",
            );
        } else if self.steps.len() > MAX_STEPS {
            errors.push(
                "steps",
                format!("at most {MAX_STEPS} steps, got {}", self.steps.len()),
            );
        }
        let mut previous: Option<i64> = None;
        for (i, step) in self.steps.iter().enumerate() {
            if !(1..=100).contains(&step.weight) {
                errors.push(
                    format!("steps[{i}].weight"),
                    format!("must be a percentage from 1 to 100, got {}", step.weight),
                );
            } else if let Some(prev) = previous.filter(|prev| step.weight <= *prev) {
                errors.push(
                    format!("steps[{i}].weight"),
                    format!(
                        "must be greater than the previous step's {prev}, got {}",
                        step.weight
                    ),
                );
            }
            previous = Some(step.weight);
        }
        if let Some(analysis) = &self.analysis {
            analysis.validate(&self.traffic_targets, errors);
        }
        if let Some(argocd) = &self.argocd {
            argocd.validate(errors);
        }
        if let Some(gate) = &self.target_health {
            gate.validate(errors);
        }
        if let Some(hooks) = &self.hooks {
            hooks.validate(errors);
        }
        if let Some(retire) = &self.retire {
            self.validate_retire(retire, errors);
        }
        if let Some(approval) = &self.approval {
            let weights: Vec<i64> = self.steps.iter().map(|s| s.weight).collect();
            approval.validate(&weights, errors);
        }
        if let Some(last) = self.steps.last().filter(|s| s.weight != 100) {
            errors.push(
                format!("steps[{}].weight", self.steps.len() - 1),
                format!(
                    "the last step must move all traffic (100), got {}",
                    last.weight
                ),
            );
        }
    }

    fn validate_retire(&self, retire: &Retire, errors: &mut Errors) {
        if retire.detach_stable_target_groups
            && !self
                .traffic_targets
                .iter()
                .any(|t| matches!(t, TrafficTarget::Alb(_)))
        {
            errors.push(
                "retire.detachStableTargetGroups",
                "the plan has no ALB target to detach a stable target group from",
            );
        }
        if let Some(old) = &retire.old_cluster {
            if !is_eks_cluster_name(&old.name) {
                errors.push(
                    "retire.oldCluster.name",
                    format!("`{}` is not an EKS cluster name", old.name),
                );
            }
            if !arn::is_region(&old.region) {
                errors.push(
                    "retire.oldCluster.region",
                    format!("`{}` is not an AWS region such as `us-east-1`", old.region),
                );
            }
            if old == &self.cluster {
                errors.push(
                    "retire.oldCluster",
                    "is the new cluster itself: name the cluster the rollout replaces",
                );
            }
        }
        match &retire.argocd_secret {
            Some(name) if !crate::argocd::is_dns_subdomain(name) => errors.push(
                "retire.argocdSecret",
                format!("`{name}` is not a Kubernetes Secret name (a DNS subdomain)"),
            ),
            None if retire.even_if_not_ours => errors.push(
                "retire.evenIfNotOurs",
                "needs `argocdSecret`: the Secret it allows to delete",
            ),
            _ => {}
        }
    }

    fn resolve_steps(&self, errors: &mut Errors) -> Vec<ResolvedStep> {
        let bake_ok = check_bake(
            "bake.seconds",
            self.bake.seconds,
            "bake.checkIntervalSeconds",
            self.bake.check_interval_seconds,
            errors,
        );
        let promotion_bake = self.promotion.map(|p| p.bake_seconds);
        if let (Some(_), Some((i, last))) =
            (promotion_bake, self.steps.iter().enumerate().next_back())
        {
            if last.bake_seconds.is_some() {
                errors.push(
                    "promotion.bakeSeconds",
                    format!("steps[{i}] sets its own bakeSeconds: set one of the two"),
                );
            }
        }
        let mut resolved = Vec::with_capacity(self.steps.len());
        let mut total_checks: u64 = 0;
        let approval = self.approval.clone().unwrap_or_default();
        let approval_timeout = u32::try_from(approval.timeout()).ok();
        for (i, step) in self.steps.iter().enumerate() {
            let is_last = i + 1 == self.steps.len();
            let bake = step
                .bake_seconds
                .or(promotion_bake.filter(|_| is_last))
                .unwrap_or(self.bake.seconds);
            let interval = step
                .check_interval_seconds
                .unwrap_or(self.bake.check_interval_seconds);
            let promoted = is_last && step.bake_seconds.is_none() && promotion_bake.is_some();
            let overridden = step.bake_seconds.is_some() || step.check_interval_seconds.is_some();
            let step_ok = !(overridden || promoted)
                || check_bake(
                    &if promoted {
                        "promotion.bakeSeconds".to_owned()
                    } else {
                        format!("steps[{i}].bakeSeconds")
                    },
                    bake,
                    &format!("steps[{i}].checkIntervalSeconds"),
                    interval,
                    errors,
                );
            let values = (
                u8::try_from(step.weight).ok().filter(|w| *w <= 100),
                u32::try_from(bake).ok(),
                u32::try_from(interval).ok(),
            );
            if let (
                true,
                true,
                (Some(weight), Some(bake_seconds), Some(check_interval_seconds)),
                Some(timeout),
            ) = (bake_ok, step_ok, values, approval_timeout)
            {
                let checks = (bake_seconds / check_interval_seconds).max(1);
                // The checks go on while a step waits for its approval: they count too.
                let approval_timeout_seconds =
                    if approval.gates(step.weight, step.approval == Some(true)) {
                        total_checks += u64::from(timeout / check_interval_seconds);
                        timeout
                    } else {
                        0
                    };
                total_checks += u64::from(checks);
                resolved.push(ResolvedStep {
                    weight,
                    bake_seconds,
                    check_interval_seconds,
                    checks,
                    approval_timeout_seconds,
                    on_approval_timeout: approval.on_timeout.unwrap_or_default(),
                });
            }
        }
        if total_checks > MAX_TOTAL_CHECKS {
            errors.push(
                "steps",
                format!(
                    "the rollout would run {total_checks} checks (bake / interval summed over steps, and approval timeout / interval for steps that wait for one), more than {MAX_TOTAL_CHECKS}; \
                     a Step Functions execution is limited to 25,000 history events: use a longer check interval or fewer steps"
                ),
            );
        }
        resolved
    }
}

impl TrafficTarget {
    /// The identity of the traffic this target weights. Two targets with the same key shift
    /// the same traffic: the rule (or the listener's default action), or the Route 53 record
    /// name and type, whatever the set identifiers.
    pub fn key(&self) -> String {
        match self {
            TrafficTarget::Alb(alb) => alb.key(),
            TrafficTarget::Route53(r53) => r53.key(),
        }
    }
}

impl AlbTarget {
    pub fn key(&self) -> String {
        self.rule_arn
            .clone()
            .unwrap_or_else(|| self.listener_arn.clone())
    }

    /// The region the load balancer lives in (from the listener ARN).
    pub fn region(&self) -> Option<&str> {
        self.listener_arn.split(':').nth(3)
    }
}

impl Route53Target {
    pub fn key(&self) -> String {
        format!(
            "route53:{}:{}:{}",
            self.hosted_zone_id,
            self.fqdn(),
            self.record_type.as_str()
        )
    }

    /// The record name as Route 53 lists it: lower case, a trailing dot, and a leading `*`
    /// escaped as `\052`.
    pub fn fqdn(&self) -> String {
        let lower = self.record_name.to_ascii_lowercase();
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
}

#[derive(Default)]
pub(crate) struct Errors(Vec<PlanError>);

impl Errors {
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn paths(&self) -> Vec<&str> {
        self.0.iter().map(|e| e.path.as_str()).collect()
    }

    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(PlanError {
            path: path.into(),
            message: message.into(),
        });
    }
}

fn check_bake(
    bake_path: &str,
    bake: i64,
    interval_path: &str,
    interval: i64,
    errors: &mut Errors,
) -> bool {
    let before = errors.0.len();
    if !(1..=MAX_BAKE_SECONDS).contains(&bake) {
        errors.push(
            bake_path,
            format!("must be from 1 to {MAX_BAKE_SECONDS} seconds, got {bake}"),
        );
    }
    if interval < 1 {
        errors.push(
            interval_path,
            format!("must be at least 1 second, got {interval}"),
        );
    } else if interval > bake && bake >= 1 {
        errors.push(
            interval_path,
            format!("must not be longer than the bake time ({bake} s), got {interval}"),
        );
    }
    errors.0.len() == before
}

fn validate_alb(alb: &AlbTarget, path: &str, errors: &mut Errors) {
    let listener = match parse_elb_arn(&alb.listener_arn, ElbResource::Listener) {
        Ok(l) => Some(l),
        Err(e) => {
            errors.push(format!("{path}.listenerArn"), e);
            None
        }
    };
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
    for (field, arn) in [
        ("stableTargetGroupArn", &alb.stable_target_group_arn),
        ("canaryTargetGroupArn", &alb.canary_target_group_arn),
    ] {
        match parse_elb_arn(arn, ElbResource::TargetGroup) {
            Ok(tg) => {
                if let Some(listener) = &listener {
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
    if alb.stable_target_group_arn == alb.canary_target_group_arn {
        errors.push(
            format!("{path}.canaryTargetGroupArn"),
            "must differ from stableTargetGroupArn",
        );
    }
}

fn validate_route53(r53: &Route53Target, path: &str, errors: &mut Errors) {
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
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_eks_cluster_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
