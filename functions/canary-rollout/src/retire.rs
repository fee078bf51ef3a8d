//! Detach (plan `retire.detachStableTargetGroups`), after promotion: take the stable side out
//! of every target whose kind has one to take out (an ALB forward action's stable target
//! group; see `TrafficRouter::detach`), leaving the canary's alone. Compare-and-set: each
//! target must still be as promotion left it (`expected`), or detached already (a retry).
//! A plan that does not ask detaches nothing.

use canary_core::{RolloutPlan, TargetWeights};

use crate::error::ShiftError;
use crate::outputs::DetachOutput;
use crate::set::per_target;
use crate::traffic::{routers, Apis, Detach};

pub async fn detach(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    expected: &[TargetWeights],
) -> Result<DetachOutput, ShiftError> {
    if !plan
        .retire
        .as_ref()
        .is_some_and(|r| r.detach_stable_target_groups)
    {
        return Ok(DetachOutput {
            detached: Vec::new(),
        });
    }
    let routers = routers(apis, plan);
    let expected = per_target(&routers, expected, "expected")?;
    let mut detached = Vec::new();
    for (router, expected) in routers.iter().zip(expected) {
        if router.detach(expected).await? == Detach::Detached {
            detached.push(router.key());
        }
    }
    Ok(DetachOutput { detached })
}
