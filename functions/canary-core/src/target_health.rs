//! The target health gate (plan `targetHealth`), passed before traffic moves: the load
//! balancer (or Route 53) must see the new cluster's targets as healthy. Argo CD's "Healthy"
//! means the pods are ready; it does not mean the ALB's health checks pass, and a first step
//! sent to a target group with no healthy target is answered with 503s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gate_timing::GateTiming;
use crate::validate::Errors;

/// Most targets one gate may require per target group (ALB target groups hold up to 1,000).
pub const MAX_MIN_HEALTHY_TARGETS: i64 = 1000;

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

    fn timing(&self) -> GateTiming<'static> {
        GateTiming {
            section: "targetHealth",
            timeout_seconds: self.timeout_seconds,
            interval_seconds: self.interval_seconds,
            default_timeout_seconds: Self::DEFAULT_TIMEOUT_SECONDS,
        }
    }

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
        self.timing().validate(errors);
    }

    /// Defaults filled in. Only meaningful for a gate that passed validation.
    pub fn resolve(&self) -> ResolvedTargetHealth {
        let timing = self.timing().resolve();
        let min = self
            .min_healthy_targets
            .unwrap_or(Self::DEFAULT_MIN_HEALTHY)
            .clamp(1, MAX_MIN_HEALTHY_TARGETS);
        ResolvedTargetHealth {
            // The clamp keeps it in u32 range.
            min_healthy_targets: min as u32,
            interval_seconds: timing.interval_seconds,
            max_polls: timing.max_polls,
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
