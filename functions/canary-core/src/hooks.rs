//! The plan's `hooks` section: a team's own checks, as Lambda functions, at three points.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::Errors;

/// Most hooks at one point: they run one after the other in one invocation of evaluate-alarms.
pub const MAX_HOOKS_PER_POINT: usize = 5;
/// The longest all hooks of one point may take together: evaluate-alarms runs them in one
/// invocation, and its Lambda timeout (template.yaml) is 300 s.
pub const MAX_HOOK_SECONDS_PER_POINT: i64 = 280;

/// Checks of a team's own, as Lambda functions (CodeDeploy's BeforeAllowTraffic /
/// AfterAllowTraffic, Flagger's webhooks). Each is invoked with the JSON documented in
/// docs/plan.md and answers `{"status": "pass"}` or `{"status": "fail", "reason": "…"}`; an error, a
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
    /// Run once the test-traffic stage's rules are in place (the plan's `testTraffic`), with its
    /// test addresses: a failure fails the stage, with no user request sent to the new cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_traffic: Vec<String>,
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
    TestTraffic,
}

impl HookPoint {
    pub fn as_str(self) -> &'static str {
        match self {
            HookPoint::BeforeTraffic => "beforeTraffic",
            HookPoint::AfterEachStep => "afterEachStep",
            HookPoint::AfterPromotion => "afterPromotion",
            HookPoint::TestTraffic => "testTraffic",
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
            HookPoint::TestTraffic => &self.test_traffic,
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
            HookPoint::TestTraffic,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_lambda_arns_within_one_invocations_time() {
        let arn = "arn:aws:lambda:us-east-1:123456789012:function:smoke".to_owned();
        let hooks = HooksSection {
            before_traffic: vec![arn.clone(), "smoke".to_owned()],
            after_each_step: vec![arn.clone(); 6],
            after_promotion: vec![arn.clone(); 2],
            test_traffic: vec!["arn:aws:lambda:us-east-1:123456789012:layer:x".to_owned()],
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
                "hooks.afterPromotion",
                "hooks.testTraffic[0]"
            ]
        );
    }
}
