//! Gates a rollout passes before traffic moves. Today: the load balancer (or Route 53) must
//! see the new cluster's targets as healthy. Argo CD's "Healthy" means the pods are ready; it
//! does not mean the ALB's health checks pass, and a first step sent to a target group with no
//! healthy target is answered with 503s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::Errors;

/// Longest wait for the canary targets to be healthy: one hour.
pub const MAX_TARGET_HEALTH_TIMEOUT_SECONDS: i64 = 3600;
/// Most targets one gate may require per target group (ALB target groups hold up to 1,000).
pub const MAX_MIN_HEALTHY_TARGETS: i64 = 1000;
/// Most looks one gate may take (`timeoutSeconds / intervalSeconds`): each is about eleven
/// execution history events, which must leave room under the 25,000-event limit.
pub const MAX_TARGET_HEALTH_POLLS: i64 = 60;

/// Before the first non-zero weight: every ALB target's canary target group has at least
/// `minHealthyTargets` targets `healthy` and none `unhealthy`, and every Route 53 target's
/// canary record's health check (if it has one) is healthy. Polled until `timeoutSeconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TargetHealthGate {
    /// Healthy targets each canary target group needs. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub min_healthy_targets: Option<i64>,
    /// How long to wait for the targets to become healthy before failing without moving
    /// traffic. Default 300.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: Option<i64>,
    /// How often to look. Default 15 (or `timeoutSeconds / 60` if longer), at most
    /// `timeoutSeconds`, and at most 60 looks in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub interval_seconds: Option<i64>,
}

/// The gate with its defaults filled in, as the state machine polls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedTargetHealth {
    pub min_healthy_targets: u32,
    pub interval_seconds: u32,
    /// Looks after the first one: `timeout / interval`, at least 1.
    pub max_polls: u32,
}

impl TargetHealthGate {
    const DEFAULT_MIN_HEALTHY: i64 = 1;
    const DEFAULT_TIMEOUT_SECONDS: i64 = 300;
    const DEFAULT_INTERVAL_SECONDS: i64 = 15;

    pub(crate) fn validate(&self, errors: &mut Errors) {
        let min = self
            .min_healthy_targets
            .unwrap_or(Self::DEFAULT_MIN_HEALTHY);
        if !(1..=MAX_MIN_HEALTHY_TARGETS).contains(&min) {
            errors.push(
                "targetHealth.minHealthyTargets",
                format!("must be from 1 to {MAX_MIN_HEALTHY_TARGETS}, got {min}"),
            );
        }
        let timeout = self
            .timeout_seconds
            .unwrap_or(Self::DEFAULT_TIMEOUT_SECONDS);
        if !(1..=MAX_TARGET_HEALTH_TIMEOUT_SECONDS).contains(&timeout) {
            errors.push(
                "targetHealth.timeoutSeconds",
                format!(
                    "must be from 1 to {MAX_TARGET_HEALTH_TIMEOUT_SECONDS} seconds, got {timeout}"
                ),
            );
        }
        let interval = self
            .interval_seconds
            .unwrap_or_else(|| Self::default_interval(timeout.max(1)));
        if interval < 1 || interval > timeout.max(1) {
            errors.push(
                "targetHealth.intervalSeconds",
                format!("must be from 1 to timeoutSeconds ({timeout}), got {interval}"),
            );
        } else if timeout / interval > MAX_TARGET_HEALTH_POLLS {
            errors.push(
                "targetHealth.intervalSeconds",
                format!(
                    "{interval} s would look {} times in {timeout} s, more than {MAX_TARGET_HEALTH_POLLS}; \
                     use an interval of at least {} s",
                    timeout / interval,
                    (timeout + MAX_TARGET_HEALTH_POLLS - 1) / MAX_TARGET_HEALTH_POLLS
                ),
            );
        }
    }

    /// 15 s, longer when that would look more than [`MAX_TARGET_HEALTH_POLLS`] times, and
    /// never longer than the timeout.
    fn default_interval(timeout: i64) -> i64 {
        let spread = (timeout + MAX_TARGET_HEALTH_POLLS - 1) / MAX_TARGET_HEALTH_POLLS;
        Self::DEFAULT_INTERVAL_SECONDS.max(spread).min(timeout)
    }

    /// Defaults filled in. Only meaningful for a gate that passed validation.
    pub fn resolve(&self) -> ResolvedTargetHealth {
        let timeout = self
            .timeout_seconds
            .unwrap_or(Self::DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, MAX_TARGET_HEALTH_TIMEOUT_SECONDS);
        let interval = self
            .interval_seconds
            .unwrap_or_else(|| Self::default_interval(timeout))
            .clamp(1, timeout);
        let min = self
            .min_healthy_targets
            .unwrap_or(Self::DEFAULT_MIN_HEALTHY)
            .clamp(1, MAX_MIN_HEALTHY_TARGETS);
        // The clamps keep every value in u32 range.
        ResolvedTargetHealth {
            min_healthy_targets: min as u32,
            interval_seconds: interval as u32,
            max_polls: (timeout / interval).max(1) as u32,
        }
    }
}

/// Longest a step may wait for its approval: one day.
pub const MAX_APPROVAL_TIMEOUT_SECONDS: i64 = 86_400;

/// A person approves before chosen steps. While the execution waits, the checks keep running
/// at the current weights: a failing check during the wait rolls back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalSection {
    /// The weights of the steps that wait for an approval before they are set, e.g. `[100]`.
    /// A step can also ask for one itself (`"approval": true`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_steps: Vec<i64>,
    /// How long to wait for the approval. Default 3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_seconds: Option<i64>,
    /// What a timeout does: `rollback` (default) restores the baseline, `promote` goes on as if
    /// approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnApprovalTimeout>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnApprovalTimeout {
    #[default]
    Rollback,
    Promote,
}

impl ApprovalSection {
    const DEFAULT_TIMEOUT_SECONDS: i64 = 3600;

    pub(crate) fn validate(&self, step_weights: &[i64], errors: &mut Errors) {
        for (i, weight) in self.before_steps.iter().enumerate() {
            if !step_weights.contains(weight) {
                errors.push(
                    format!("approval.beforeSteps[{i}]"),
                    format!("{weight} is not the weight of one of the plan's steps"),
                );
            }
        }
        let timeout = self.timeout();
        if !(1..=MAX_APPROVAL_TIMEOUT_SECONDS).contains(&timeout) {
            errors.push(
                "approval.timeoutSeconds",
                format!("must be from 1 to {MAX_APPROVAL_TIMEOUT_SECONDS} seconds, got {timeout}"),
            );
        }
    }

    pub fn timeout(&self) -> i64 {
        self.timeout_seconds
            .unwrap_or(Self::DEFAULT_TIMEOUT_SECONDS)
    }

    /// Whether the step of `weight` (which may ask itself with `step_asks`) waits.
    pub fn gates(&self, weight: i64, step_asks: bool) -> bool {
        step_asks || self.before_steps.contains(&weight)
    }
}

/// Most hooks at one point: they run one after the other in one invocation of evaluate-alarms.
pub const MAX_HOOKS_PER_POINT: usize = 5;
/// The longest all hooks of one point may take together: evaluate-alarms runs them in one
/// invocation, and its Lambda timeout (template.yaml) is 300 s.
pub const MAX_HOOK_SECONDS_PER_POINT: i64 = 280;

/// Checks of a team's own, as Lambda functions (CodeDeploy's BeforeAllowTraffic /
/// AfterAllowTraffic, Flagger's webhooks). Each is invoked with the JSON documented in the
/// README and answers `{"status": "pass"}` or `{"status": "fail", "reason": "…"}`; an error, a
/// timeout or any other answer fails too.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HooksSection {
    /// Run before the first non-zero weight: a failure ends the rollout with nothing moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_traffic: Vec<String>,
    /// Run after each step's weights are set, before its bake: a failure restores the baseline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_each_step: Vec<String>,
    /// Run after the last bake, before the rollout is promoted: a failure restores the baseline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_promotion: Vec<String>,
    /// How long one hook may take. Default 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 280))]
    pub timeout_seconds: Option<i64>,
}

/// Where in a rollout hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HookPoint {
    BeforeTraffic,
    AfterEachStep,
    AfterPromotion,
}

impl HookPoint {
    pub fn as_str(self) -> &'static str {
        match self {
            HookPoint::BeforeTraffic => "beforeTraffic",
            HookPoint::AfterEachStep => "afterEachStep",
            HookPoint::AfterPromotion => "afterPromotion",
        }
    }
}

impl HooksSection {
    const DEFAULT_TIMEOUT_SECONDS: i64 = 60;

    pub fn timeout(&self) -> i64 {
        self.timeout_seconds
            .unwrap_or(Self::DEFAULT_TIMEOUT_SECONDS)
    }

    pub fn at(&self, point: HookPoint) -> &[String] {
        match point {
            HookPoint::BeforeTraffic => &self.before_traffic,
            HookPoint::AfterEachStep => &self.after_each_step,
            HookPoint::AfterPromotion => &self.after_promotion,
        }
    }

    pub(crate) fn validate(&self, errors: &mut Errors) {
        let timeout = self.timeout();
        if !(1..=MAX_HOOK_SECONDS_PER_POINT).contains(&timeout) {
            errors.push(
                "hooks.timeoutSeconds",
                format!("must be from 1 to {MAX_HOOK_SECONDS_PER_POINT} seconds, got {timeout}"),
            );
        }
        for point in [
            HookPoint::BeforeTraffic,
            HookPoint::AfterEachStep,
            HookPoint::AfterPromotion,
        ] {
            let hooks = self.at(point);
            let path = format!("hooks.{}", point.as_str());
            if hooks.len() > MAX_HOOKS_PER_POINT {
                errors.push(
                    &path,
                    format!("at most {MAX_HOOKS_PER_POINT} hooks, got {}", hooks.len()),
                );
            } else if hooks.len() as i64 * timeout > MAX_HOOK_SECONDS_PER_POINT {
                errors.push(
                    &path,
                    format!(
                        "{} hooks of up to {timeout} s each could take longer than the {MAX_HOOK_SECONDS_PER_POINT} s one invocation may run",
                        hooks.len()
                    ),
                );
            }
            for (i, arn) in hooks.iter().enumerate() {
                if !crate::arn::is_lambda_function_arn(arn) {
                    errors.push(
                        format!("{path}[{i}]"),
                        format!("`{arn}` is not a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>)"),
                    );
                }
            }
        }
    }
}

/// One target of a target group as `DescribeTargetHealth` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetState {
    /// `id:port`, e.g. `10.0.3.17:8080`.
    pub target: String,
    /// `healthy`, `unhealthy`, `initial`, `draining`, `unused`, `unavailable`, ...
    pub state: String,
    /// ELB's reason code, e.g. `Target.FailedHealthChecks`.
    pub reason: Option<String>,
}

/// Why one canary target group is not ready yet, or `None` when it is: at least `min`
/// targets healthy and none unhealthy.
pub fn target_group_problem(group: &str, targets: &[TargetState], min: u32) -> Option<String> {
    let healthy = targets.iter().filter(|t| t.state == "healthy").count();
    let unhealthy: Vec<String> = targets
        .iter()
        .filter(|t| t.state == "unhealthy")
        .map(|t| match &t.reason {
            Some(reason) => format!("{} ({reason})", t.target),
            None => t.target.clone(),
        })
        .collect();
    if !unhealthy.is_empty() {
        return Some(format!(
            "{group}: {healthy} of {} targets healthy, unhealthy: {}",
            targets.len(),
            crate::limits::join_bounded(&unhealthy, ", ", 5, crate::limits::MAX_LINE_BYTES)
        ));
    }
    if healthy < min as usize {
        let others: Vec<String> = targets
            .iter()
            .filter(|t| t.state != "healthy")
            .map(|t| format!("{} {}", t.target, t.state))
            .collect();
        let detail = if others.is_empty() {
            String::new()
        } else {
            format!(
                " (others: {})",
                crate::limits::join_bounded(&others, ", ", 5, crate::limits::MAX_LINE_BYTES)
            )
        };
        return Some(format!(
            "{group}: {healthy} healthy targets, {min} needed{detail}"
        ));
    }
    None
}

/// Route 53 calls an endpoint healthy when more than 18 % of its health checkers see it
/// healthy; a checker's report starts with `Success` or `Failure`. No report at all is not
/// healthy (a health check that was just created has none).
pub fn health_check_problem(health_check_id: &str, reports: &[String]) -> Option<String> {
    let healthy = reports.iter().filter(|r| r.starts_with("Success")).count();
    if !reports.is_empty() && healthy * 100 > reports.len() * 18 {
        return None;
    }
    let first_failure = reports
        .iter()
        .find(|r| !r.starts_with("Success"))
        .map(|r| format!(": {}", crate::limits::truncate(r, 200)))
        .unwrap_or_default();
    Some(format!(
        "health check {health_check_id}: {healthy} of {} checkers report healthy{first_failure}",
        reports.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(id: &str, state: &str, reason: Option<&str>) -> TargetState {
        TargetState {
            target: id.to_owned(),
            state: state.to_owned(),
            reason: reason.map(str::to_owned),
        }
    }

    #[test]
    fn defaults_resolve_to_five_minutes_every_fifteen_seconds() {
        let gate = TargetHealthGate {
            min_healthy_targets: None,
            timeout_seconds: None,
            interval_seconds: None,
        };
        let mut errors = Errors::default();
        gate.validate(&mut errors);
        assert!(errors.is_empty());
        assert_eq!(
            gate.resolve(),
            ResolvedTargetHealth {
                min_healthy_targets: 1,
                interval_seconds: 15,
                max_polls: 20
            }
        );
    }

    #[test]
    fn a_short_timeout_without_an_interval_is_valid() {
        let gate = TargetHealthGate {
            min_healthy_targets: Some(2),
            timeout_seconds: Some(6),
            interval_seconds: None,
        };
        let mut errors = Errors::default();
        gate.validate(&mut errors);
        assert!(errors.is_empty());
        assert_eq!(gate.resolve().interval_seconds, 6);
        assert_eq!(gate.resolve().max_polls, 1);
    }

    #[test]
    fn out_of_range_values_are_named_by_path() {
        let gate = TargetHealthGate {
            min_healthy_targets: Some(0),
            timeout_seconds: Some(7200),
            interval_seconds: Some(0),
        };
        let mut errors = Errors::default();
        gate.validate(&mut errors);
        let paths: Vec<&str> = errors.paths();
        assert_eq!(
            paths,
            [
                "targetHealth.minHealthyTargets",
                "targetHealth.timeoutSeconds",
                "targetHealth.intervalSeconds"
            ]
        );
    }

    #[test]
    fn too_many_looks_are_refused_with_the_interval_that_would_do() {
        let gate = TargetHealthGate {
            min_healthy_targets: None,
            timeout_seconds: Some(3600),
            interval_seconds: Some(10),
        };
        let mut errors = Errors::default();
        gate.validate(&mut errors);
        assert_eq!(errors.paths(), ["targetHealth.intervalSeconds"]);
        let at_the_cap = TargetHealthGate {
            interval_seconds: Some(60),
            ..gate
        };
        let mut errors = Errors::default();
        at_the_cap.validate(&mut errors);
        assert!(errors.is_empty());
        assert_eq!(at_the_cap.resolve().max_polls, 60);
        let defaulted = TargetHealthGate {
            interval_seconds: None,
            ..gate
        };
        assert_eq!(defaulted.resolve().interval_seconds, 60);
    }

    #[test]
    fn a_group_is_ready_with_enough_healthy_and_no_unhealthy_targets() {
        let targets = [
            target("10.0.0.1:80", "healthy", None),
            target("10.0.0.2:80", "initial", Some("Elb.RegistrationInProgress")),
        ];
        assert_eq!(target_group_problem("tg", &targets, 1), None);
        let problem = target_group_problem("tg", &targets, 2).unwrap();
        assert_eq!(
            problem,
            "tg: 1 healthy targets, 2 needed (others: 10.0.0.2:80 initial)"
        );
    }

    #[test]
    fn an_unhealthy_target_blocks_and_is_named_with_its_reason() {
        let targets = [
            target("10.0.0.1:80", "healthy", None),
            target(
                "10.0.0.2:80",
                "unhealthy",
                Some("Target.FailedHealthChecks"),
            ),
        ];
        assert_eq!(
            target_group_problem("tg", &targets, 1).unwrap(),
            "tg: 1 of 2 targets healthy, unhealthy: 10.0.0.2:80 (Target.FailedHealthChecks)"
        );
    }

    #[test]
    fn an_empty_group_is_not_ready() {
        assert_eq!(
            target_group_problem("tg", &[], 1).unwrap(),
            "tg: 0 healthy targets, 1 needed"
        );
    }

    #[test]
    fn many_unhealthy_targets_are_listed_bounded() {
        let targets: Vec<TargetState> = (0..500)
            .map(|i| {
                target(
                    &format!("10.0.{}.{}:8080", i / 250, i % 250),
                    "unhealthy",
                    None,
                )
            })
            .collect();
        let problem = target_group_problem("tg", &targets, 1).unwrap();
        assert!(problem.len() < 400, "{problem}");
        assert!(problem.ends_with("… and 495 more"), "{problem}");
    }

    #[test]
    fn approvals_name_steps_by_weight() {
        let approval = ApprovalSection {
            before_steps: vec![50, 75],
            timeout_seconds: Some(0),
            on_timeout: None,
        };
        let mut errors = Errors::default();
        approval.validate(&[10, 50, 100], &mut errors);
        assert_eq!(
            errors.paths(),
            ["approval.beforeSteps[1]", "approval.timeoutSeconds"]
        );
        assert!(
            approval.gates(50, false) && approval.gates(10, true) && !approval.gates(100, false)
        );
    }

    #[test]
    fn hooks_are_lambda_arns_within_one_invocations_time() {
        let arn = "arn:aws:lambda:us-east-1:123456789012:function:smoke".to_owned();
        let hooks = HooksSection {
            before_traffic: vec![arn.clone(), "smoke".to_owned()],
            after_each_step: vec![arn.clone(); 6],
            after_promotion: vec![arn.clone(); 2],
            timeout_seconds: Some(200),
        };
        let mut errors = Errors::default();
        hooks.validate(&mut errors);
        assert_eq!(
            errors.paths(),
            [
                "hooks.beforeTraffic",
                "hooks.beforeTraffic[1]",
                "hooks.afterEachStep",
                "hooks.afterPromotion"
            ]
        );
    }

    #[test]
    fn route53_health_follows_the_checkers_majority_rule() {
        let ok = "Success: HTTP Status Code 200, OK".to_owned();
        let bad = "Failure: Connection timed out".to_owned();
        assert_eq!(health_check_problem("hc", std::slice::from_ref(&ok)), None);
        assert_eq!(
            health_check_problem("hc", &[ok.clone(), bad.clone(), bad.clone()]),
            None
        );
        let problem = health_check_problem("hc", &vec![bad.clone(); 8]).unwrap();
        assert_eq!(
            problem,
            "health check hc: 0 of 8 checkers report healthy: Failure: Connection timed out"
        );
        assert!(health_check_problem("hc", &[]).is_some());
    }
}
