//! The rollout plan: the JSON document a person passes to a manual execution and that the
//! cluster-created function builds from a profile. [`RolloutPlan::parse`] is the only way in:
//! it rejects unknown fields and checks every rule below, naming each offending field by its
//! JSON path (`trafficTargets[1].alb.canaryTargetGroupArn`), all at once. Each section's
//! types and rules live in its own module.

mod error_budget;
pub mod forecast;
mod freeze;
mod retire;
mod rollback;
mod steps;

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::analysis::AnalysisSection;
use crate::approval::ApprovalSection;
use crate::argocd::ArgoCdSection;
use crate::arn;
use crate::cluster_readiness::ClusterReadinessGate;
use crate::health::GLOBAL_REGION;
use crate::hooks::HooksSection;
use crate::limits::{self, MAX_STEPS, MAX_TARGETS};
use crate::target_health::TargetHealthGate;
use crate::targets::TrafficTarget;
use crate::test_traffic::TestTrafficSection;
use crate::validate::{Errors, PlanError, PlanErrors};

pub use crate::cluster::ClusterRef;
pub use error_budget::{
    is_slo_reference, slo_arn_parts, BurnWindows, ErrorBudgetSection, FastBurn, OnInsufficientData,
    RemainingBudgetMetric, RemainingBudgetQuery, DEFAULT_BURN_RATE, DEFAULT_ROLLOUT_SHARE,
    MAX_SLOS,
};
pub use freeze::{
    frozen_bound_seconds, is_calendar_reference, AwsHealthSection, FreezeSection, OnOpenIssue,
    DEFAULT_MAX_FROZEN_SECONDS, MAX_FREEZE_CALENDARS,
};
pub use retire::Retire;
pub use rollback::{
    allows_canary_in_baseline, gradual, settle_seconds, GradualRollback, RollbackSection,
    DEFAULT_SETTLE_SECONDS, MAX_SETTLE_SECONDS,
};
pub use steps::{least_seconds, Bake, Promotion, ResolvedStep, Step};

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
    /// Wait, before any traffic moves, until EKS's cluster insights and the add-ons of the new
    /// cluster say it is ready; during the bake, every check reads the add-ons again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_readiness: Option<ClusterReadinessGate>,
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
    /// After a rollback: when to look again for a controller that put the canary's weights back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackSection>,
    /// Change Calendars that freeze the rollout while CLOSED, and how long one freeze may hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freeze: Option<FreezeSection>,
    /// What an open AWS Health issue in the rollout's Regions does: hold it (the default), or
    /// roll it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_health: Option<AwsHealthSection>,
    /// Application Signals SLOs whose spent error budget holds the rollout (no start, no step
    /// after the first) as a change freeze does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_budget: Option<ErrorBudgetSection>,
    /// A stage before the first step in which only test requests (a header, a host name, a
    /// query string) reach the new cluster, judged by Synthetics canaries and alarms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_traffic: Option<TestTrafficSection>,
}

/// A plan that passed [`RolloutPlan::parse`], with its steps resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidPlan {
    pub plan: RolloutPlan,
    pub steps: Vec<ResolvedStep>,
}

impl ValidPlan {
    /// How long one change freeze may hold this rollout (see [`frozen_bound_seconds`]).
    pub fn frozen_bound_seconds(&self) -> u32 {
        frozen_bound_seconds(
            self.plan.freeze.as_ref(),
            &self.steps,
            self.plan.gate_interval_seconds(),
            steps::checks_of(&self.steps),
        )
    }

    /// Over how many runs of checks the comparison's α is shared: the bakes (one evidence,
    /// carried from step to step) and each wait for a person that may come (the checks go on
    /// while a step waits; what they see is not carried on). See
    /// [`crate::analysis::compare::CompareChecks::alpha`].
    pub fn comparison_runs(&self) -> u32 {
        let waits = self
            .steps
            .iter()
            .filter(|s| s.approval_timeout_seconds > 0 || s.ask_timeout_seconds > 0)
            .count();
        1 + u32::try_from(waits).unwrap_or(u32::MAX - 1)
    }
}

impl RolloutPlan {
    /// The Regions the rollout runs in: the new cluster's and its load balancers', and
    /// [`GLOBAL_REGION`] (Route 53, and every record, is global).
    pub fn regions(&self) -> Vec<String> {
        let mut regions = vec![self.cluster.region.clone(), GLOBAL_REGION.to_owned()];
        for target in &self.traffic_targets {
            regions.extend(target.kind().region().map(str::to_owned));
        }
        regions.sort();
        regions.dedup();
        regions
    }

    /// Whether an open AWS Health issue rolls the rollout back (else it holds it).
    pub fn rolls_back_on_health_issues(&self) -> bool {
        self.aws_health
            .is_some_and(|h| h.on_open_issue == OnOpenIssue::RollBack)
    }

    /// How often a rollout held by a freeze before its first step looks again: the plan's
    /// check interval.
    pub fn gate_interval_seconds(&self) -> u32 {
        u32::try_from(self.bake.check_interval_seconds)
            .unwrap_or(u32::MAX)
            .max(1)
    }

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
        plan.check_min_step_seconds(&steps, &mut errors);
        plan.check_comparison_periods(&steps, &mut errors);
        if let Some(freeze) = &plan.freeze {
            freeze.validate(
                &steps,
                plan.gate_interval_seconds(),
                steps::checks_of(&steps),
                &mut errors,
            );
        }
        if let Some(budget) = &plan.error_budget {
            budget.validate(&mut errors);
            let prometheus = plan.analysis.as_ref().and_then(|a| a.prometheus.as_ref());
            if !budget.prometheus.is_empty() && prometheus.is_none() {
                errors.push(
                    "errorBudget.prometheus",
                    "is asked of the Prometheus or AMP workspace of analysis.prometheus: give that section",
                );
            }
        }
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
            let kind = target.kind();
            kind.validate(&format!("trafficTargets[{i}].{}", kind.name()), errors);
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
            } else {
                if let Some(prev) = previous.filter(|prev| step.weight <= *prev) {
                    errors.push(
                        format!("steps[{i}].weight"),
                        format!(
                            "must be greater than the previous step's {prev}, got {}",
                            step.weight
                        ),
                    );
                }
                // Only a weight in range is compared with: one out of range is said once, not
                // again as the next step's.
                previous = Some(step.weight);
            }
        }
        if let Some(analysis) = &self.analysis {
            analysis.validate(&self.cluster, &self.traffic_targets, errors);
        }
        if let Some(argocd) = &self.argocd {
            argocd.validate(errors);
        }
        if let Some(gate) = &self.target_health {
            gate.validate(errors);
        }
        if let Some(gate) = &self.cluster_readiness {
            gate.validate(errors);
        }
        if let Some(hooks) = &self.hooks {
            hooks.validate(errors);
        }
        if let Some(stage) = &self.test_traffic {
            stage.validate(&self.traffic_targets, errors);
        }
        let test_hooks = self
            .hooks
            .as_ref()
            .is_some_and(|h| !h.test_traffic.is_empty());
        if test_hooks && self.test_traffic.is_none() {
            errors.push(
                "hooks.testTraffic",
                "run in the test-traffic stage: give the plan a testTraffic section, or move them to beforeTraffic",
            );
        }
        if let Some(retire) = &self.retire {
            self.validate_retire(retire, errors);
        }
        if let Some(rollback) = &self.rollback {
            rollback.validate(errors);
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

pub(crate) fn is_eks_cluster_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
