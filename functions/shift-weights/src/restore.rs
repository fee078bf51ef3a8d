//! Restore: the safety action. Puts every target back to its baseline, whatever it finds:
//! weights someone else changed are overwritten (and reported). It goes on to the other
//! targets when one fails, then reports the first failure so the state machine retries;
//! a retry rewrites nothing that is already restored.

use canary_core::{RolloutPlan, TargetWeights};
use serde_json::Value;
use tracing::{error, info, warn};

use crate::error::ShiftError;
use crate::request::{RestoreOutput, UnexpectedWeights};
use crate::set::per_target;
use crate::traffic::{self, locate, Apis, Observed};

pub async fn restore(
    apis: &Apis<'_>,
    plan: Value,
    baseline: &[TargetWeights],
    expected: Option<&[TargetWeights]>,
) -> Result<RestoreOutput, ShiftError> {
    let plan = RolloutPlan::parse(plan)?.plan;
    let located = locate(&plan.traffic_targets);
    let baseline = per_target(&located, baseline, "baseline")?;
    let expected = expected
        .map(|e| per_target(&located, e, "expected"))
        .transpose()?;
    for (target, baseline) in located.iter().zip(&baseline) {
        traffic::check_writable(target, *baseline)?;
    }

    let mut unexpected = Vec::new();
    let mut weights = Vec::with_capacity(located.len());
    let mut first_error = None;
    for (i, (target, baseline)) in located.iter().zip(&baseline).enumerate() {
        let restored = async {
            let current = traffic::observe(apis, target).await?;
            if current == Observed::Pair(*baseline) {
                info!(target_key = %target.target.key(), "already at baseline");
                return Ok(current);
            }
            let known = match (&current, &expected) {
                (Observed::Pair(pair), Some(expected)) => *pair == expected[i],
                (Observed::Pair(_), None) => true,
                (Observed::Reshaped(_), _) => false,
            };
            if !known {
                warn!(target_key = %target.target.key(), found = %current.describe(), "unexpected weights; restoring the baseline anyway");
                unexpected.push(UnexpectedWeights {
                    target: target.target.key(),
                    found: current.describe(),
                });
            }
            traffic::write(apis, target, *baseline).await?;
            traffic::observe(apis, target).await
        }
        .await;
        match restored {
            Ok(Observed::Pair(pair)) if pair == *baseline => {
                weights.push(TargetWeights::new(target.target.key(), pair))
            }
            Ok(other) => {
                let e = ShiftError::WeightsChangedExternally(format!(
                    "{}: restored {baseline} but read back {}",
                    target.label,
                    other.describe()
                ));
                error!(target_key = %target.target.key(), error = %e, "restore did not take");
                first_error.get_or_insert(e);
            }
            Err(e) => {
                error!(target_key = %target.target.key(), error = %e, "restore failed");
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(RestoreOutput {
            weights,
            unexpected,
        }),
    }
}
