//! The plan's `errorBudget` section: CloudWatch Application Signals SLOs whose error budget
//! gates the rollout (`crate::error_budget` says what a spent budget does).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::arn;
use crate::validate::Errors;

/// Most SLOs a plan names: all of them are read in one `BatchGetServiceLevelObjectiveBudgetReport`
/// call (which takes 50) at the gate and at every step's end, and each can add one line to the
/// hold's reason.
pub const MAX_SLOS: usize = 10;

/// What an SLO whose budget report says INSUFFICIENT_DATA does to the rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnInsufficientData {
    /// Hold it, as a spent budget does: nobody can tell how much budget is left.
    #[default]
    Hold,
    /// Go on, as with budget left (a new service whose SLO has no data yet).
    Go,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorBudgetSection {
    /// Application Signals SLOs, by name (in the new cluster's Region and account, or the
    /// role's) or ARN. While one is BREACHED (or has less than `minRemainingPercent` of its
    /// budget left) no rollout starts and no step after the first is set: the rollout holds
    /// as under a change freeze, within `freeze.maxFrozenSeconds`.
    pub slos: Vec<String>,
    /// Hold while less than this percent of an SLO's budget is left (0 to 100). Default: 0,
    /// hold only while it is BREACHED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_remaining_percent: Option<f64>,
    /// `hold` (the default) or `go` while an SLO's report says INSUFFICIENT_DATA.
    #[serde(default)]
    pub on_insufficient_data: OnInsufficientData,
    /// A role in the SLOs' account to read them through (SLOs of another account). Default: the
    /// function's own role, in the stack's account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
}

/// An SLO reference as Application Signals takes it: a name (`[0-9A-Za-z][-._0-9A-Za-z
/// ]{0,126}[0-9A-Za-z]`) or an SLO ARN (`arn:aws:application-signals:<region>:<account>:slo/<name>`).
pub fn is_slo_reference(reference: &str) -> bool {
    match slo_arn_parts(reference) {
        Some(_) => true,
        None => !reference.starts_with("arn:") && is_slo_name(reference),
    }
}

/// The Region and account of an SLO ARN; `None` for a name or anything else.
pub fn slo_arn_parts(reference: &str) -> Option<(&str, &str)> {
    let rest = reference.strip_prefix("arn:")?;
    let parts: Vec<&str> = rest.splitn(5, ':').collect();
    match parts.as_slice() {
        [partition, "application-signals", region, account, resource]
            if partition.starts_with("aws")
                && arn::is_region(region)
                && account.len() == 12
                && account.chars().all(|c| c.is_ascii_digit())
                && resource.strip_prefix("slo/").is_some_and(is_slo_name) =>
        {
            Some((region, account))
        }
        _ => None,
    }
}

fn is_slo_name(name: &str) -> bool {
    let inner_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ' ');
    let bytes = name.as_bytes();
    (2..=128).contains(&name.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && name.chars().all(inner_ok)
}

impl ErrorBudgetSection {
    /// The percent of an SLO's budget under which the rollout holds.
    pub fn min_remaining_percent(&self) -> f64 {
        self.min_remaining_percent.unwrap_or(0.0)
    }

    pub(crate) fn validate(&self, errors: &mut Errors) {
        if self.slos.is_empty() {
            errors.push("errorBudget.slos", "name at least one SLO");
        } else if self.slos.len() > MAX_SLOS {
            errors.push(
                "errorBudget.slos",
                format!("at most {MAX_SLOS} SLOs, got {}", self.slos.len()),
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, slo) in self.slos.iter().enumerate() {
            if !is_slo_reference(slo) {
                errors.push(
                    format!("errorBudget.slos[{i}]"),
                    format!(
                        "`{slo}` is not an SLO name (2–128 letters, digits, '-', '.', '_' or spaces, \
                         starting and ending with a letter or digit) nor an SLO ARN such as \
                         arn:aws:application-signals:us-east-1:111122223333:slo/checkout-availability"
                    ),
                );
            } else if !seen.insert(slo.as_str()) {
                errors.push(
                    format!("errorBudget.slos[{i}]"),
                    format!("`{slo}` is named twice"),
                );
            }
        }
        if let Some(percent) = self.min_remaining_percent {
            if !(0.0..100.0).contains(&percent) {
                errors.push(
                    "errorBudget.minRemainingPercent",
                    format!(
                        "must be from 0 to under 100 (percent of the SLO's budget), got {percent}"
                    ),
                );
            }
        }
        if let Some(role) = self
            .role_arn
            .as_deref()
            .filter(|r| !arn::is_iam_role_arn(r))
        {
            errors.push(
                "errorBudget.roleArn",
                format!("`{role}` is not an IAM role ARN such as arn:aws:iam::111122223333:role/slo-reader"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_references() {
        for good in [
            "checkout-availability",
            "Checkout latency p99",
            "a1",
            "arn:aws:application-signals:us-east-1:111122223333:slo/checkout-availability",
        ] {
            assert!(is_slo_reference(good), "{good}");
        }
        for bad in [
            "a",
            "-leading",
            "trailing ",
            "has/slash",
            "arn:aws:application-signals:us-east-1:111122223333:service/x1",
            "arn:aws:application-signals:nowhere:111122223333:slo/x1",
            "arn:aws:cloudwatch:us-east-1:111122223333:slo/x1",
        ] {
            assert!(!is_slo_reference(bad), "{bad}");
        }
        assert_eq!(
            slo_arn_parts("arn:aws:application-signals:eu-west-1:111122223333:slo/x1"),
            Some(("eu-west-1", "111122223333"))
        );
        assert_eq!(slo_arn_parts("x1"), None);
    }
}
