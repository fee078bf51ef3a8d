//! Detach (plan `retire.detachStableTargetGroups`), after promotion: take the stable target
//! group out of every ALB target's forward action, leaving the canary's alone. Compare-and-set:
//! each listener or rule must still be as promotion left it (`expected`), or detached already
//! (a retry). Route 53 targets keep their stable record at weight 0: there is nothing to detach.
//! A plan that does not ask detaches nothing.

use canary_aws::{ForwardRead, TargetGroupWeight};
use canary_core::{RolloutPlan, TargetWeights, TrafficTarget};
use serde_json::Value;
use tracing::info;

use crate::error::ShiftError;
use crate::request::DetachOutput;
use crate::set::per_target;
use crate::traffic::{alb_observed, locate, Apis, Observed};

pub async fn detach(
    apis: &Apis<'_>,
    plan: Value,
    expected: &[TargetWeights],
) -> Result<DetachOutput, ShiftError> {
    let plan = RolloutPlan::parse(plan)?.plan;
    if !plan
        .retire
        .as_ref()
        .is_some_and(|r| r.detach_stable_target_groups)
    {
        return Ok(DetachOutput {
            detached: Vec::new(),
        });
    }
    let located = locate(&plan.traffic_targets);
    let expected = per_target(&located, expected, "expected")?;
    let mut detached = Vec::new();
    for (target, expected) in located.iter().zip(expected) {
        let TrafficTarget::Alb(alb) = target.target else {
            continue;
        };
        if expected.stable != 0 {
            return Err(ShiftError::InvalidInput(format!(
                "{}: expected {expected}; only a promoted target (stable weight 0) is detached",
                target.label
            )));
        }
        let read = apis
            .alb
            .read_forward(alb)
            .await
            .map_err(|e| ShiftError::aws(&target.label, e))?;
        let observed = alb_observed(alb, &read);
        let ForwardRead::Forward(forward) = read else {
            return Err(ShiftError::WeightsChangedExternally(format!(
                "{}: {}",
                target.label,
                observed.describe()
            )));
        };
        let canary_only = [TargetGroupWeight {
            arn: alb.canary_target_group_arn.clone(),
            weight: expected.canary,
        }];
        match observed {
            Observed::Pair(found) if found == expected => {
                apis.alb
                    .write_forward(alb, &forward, &canary_only)
                    .await
                    .map_err(|e| ShiftError::aws(&target.label, e))?;
                info!(target_key = %target.target.key(), "stable target group detached");
            }
            // An earlier attempt detached it already.
            _ if forward.target_groups == canary_only => {}
            other => {
                return Err(ShiftError::WeightsChangedExternally(format!(
                    "{}: found {}, promotion left {expected}; nothing detached",
                    target.label,
                    other.describe()
                )))
            }
        }
        detached.push(target.target.key());
    }
    Ok(DetachOutput { detached })
}
