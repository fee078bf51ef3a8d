//! Set: move every target to a step's weight with compare-and-set. All targets are read and
//! checked before the first write, so a foreign change anywhere means nothing is written.

use canary_core::plan::ValidPlan;
use canary_core::weights::{compare_and_set_check, CasCheck};
use canary_core::{RolloutPlan, TargetWeights, WeightPair};
use serde_json::Value;
use tracing::info;

use crate::error::ShiftError;
use crate::request::SetOutput;
use crate::traffic::{self, locate, Apis, Observed};

pub async fn set(
    apis: &Apis<'_>,
    plan: Value,
    canary_weight: i64,
    expected: &[TargetWeights],
) -> Result<SetOutput, ShiftError> {
    let ValidPlan { plan, steps } = RolloutPlan::parse(plan)?;
    let step_weight = steps
        .iter()
        .map(|s| s.weight)
        .find(|w| i64::from(*w) == canary_weight)
        .ok_or_else(|| {
            ShiftError::InvalidInput(format!(
                "canaryWeight {canary_weight} is not one of the plan's steps"
            ))
        })?;
    let desired = WeightPair::for_canary_percent(step_weight).ok_or_else(|| {
        ShiftError::InvalidInput(format!("canaryWeight {step_weight} is over 100"))
    })?;
    let located = locate(&plan.traffic_targets);
    let expected = per_target(&located, expected, "expected")?;

    let mut to_write = Vec::new();
    let mut changed = Vec::new();
    for (target, expected) in located.iter().zip(expected) {
        match traffic::observe(apis, target).await? {
            Observed::Pair(current) => match compare_and_set_check(current, expected, desired) {
                CasCheck::AsExpected => to_write.push(target),
                CasCheck::AlreadyDesired => {
                    info!(target_key = %target.target.key(), "already at the step's weights")
                }
                CasCheck::ChangedExternally => changed.push(format!(
                    "{}: found {current}, this rollout last set {expected}",
                    target.label
                )),
            },
            Observed::Reshaped(why) => changed.push(format!("{}: {why}", target.label)),
        }
    }
    if !changed.is_empty() {
        return Err(ShiftError::WeightsChangedExternally(changed.join("; ")));
    }

    for target in to_write {
        traffic::write(apis, target, desired).await?;
    }

    let mut weights = Vec::with_capacity(located.len());
    for target in &located {
        match traffic::observe(apis, target).await? {
            Observed::Pair(read_back) if read_back == desired => {
                weights.push(TargetWeights::new(target.target.key(), read_back))
            }
            other => {
                return Err(ShiftError::WeightsChangedExternally(format!(
                    "{}: wrote {desired} but read back {}",
                    target.label,
                    other.describe()
                )))
            }
        }
    }
    Ok(SetOutput {
        canary_weight: step_weight,
        weights,
    })
}

/// The weights given for each target, in plan order. Each target needs exactly one entry.
pub fn per_target(
    located: &[traffic::Located<'_>],
    given: &[TargetWeights],
    field: &str,
) -> Result<Vec<WeightPair>, ShiftError> {
    if given.len() != located.len() {
        return Err(ShiftError::InvalidInput(format!(
            "{field} has {} entries, the plan has {} traffic targets",
            given.len(),
            located.len()
        )));
    }
    located
        .iter()
        .map(|target| {
            let key = target.target.key();
            given
                .iter()
                .find(|w| w.target == key)
                .map(TargetWeights::pair)
                .ok_or_else(|| {
                    ShiftError::InvalidInput(format!("{field} has no entry for target {key}"))
                })
        })
        .collect()
}
