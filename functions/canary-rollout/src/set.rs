//! Set: move every target to a step's weight with compare-and-set. All targets are read and
//! checked before the first write, so a foreign change anywhere means nothing is written.

use std::time::Duration;

use canary_core::analysis::AnalysisSection;
use canary_core::plan::ValidPlan;
use canary_core::weights::{compare_and_set_check, CasCheck};
use canary_core::{TargetWeights, WeightPair};
use tokio::time::Instant;
use tracing::{info, warn};

use crate::error::ShiftError;
use crate::metrics;
use crate::outputs::{SetOutput, VerifyOutput};
use crate::traffic::{self, readers, routers, Apis, Move, Observed, Reading, Reads, TargetReader};

pub async fn set(
    apis: &Apis<'_>,
    valid: &ValidPlan,
    canary_weight: i64,
    expected: &[TargetWeights],
) -> Result<SetOutput, ShiftError> {
    let step_weight = plan_step(valid, canary_weight, "canaryWeight")?;
    let desired = WeightPair::for_canary_percent(step_weight).ok_or_else(|| {
        ShiftError::InvalidInput(format!("canaryWeight {step_weight} is over 100"))
    })?;
    let weights = move_to(apis, valid, desired, expected).await?;
    Ok(SetOutput {
        canary_weight: step_weight,
        weights,
    })
}

/// `weight` as one of the plan's steps (`field` names it in the refusal): a state machine's
/// input must not set, or step back from, a share the plan does not have.
pub(crate) fn plan_step(valid: &ValidPlan, weight: i64, field: &str) -> Result<u8, ShiftError> {
    valid
        .steps
        .iter()
        .map(|s| s.weight)
        .find(|w| i64::from(*w) == weight)
        .ok_or_else(|| {
            ShiftError::InvalidInput(format!("{field} {weight} is not one of the plan's steps"))
        })
}

/// The longest a written step may wait to be in effect within one shift-weights invocation
/// (its Lambda timeout is 300 s), whatever the plan's unjudged bound.
const MAX_STEP_IN_EFFECT_WAIT: Duration = Duration::from_secs(180);

/// How long the step of `desired` may stay written and not in effect: traffic may already be
/// split, and no check judges it yet, so the plan's unjudged bound for that step
/// (`analysis.maxUnjudgedSeconds`, its default from the step's check interval).
fn in_effect_bound(valid: &ValidPlan, desired: WeightPair) -> Duration {
    let interval = valid
        .steps
        .iter()
        .find(|s| u16::from(s.weight) == desired.canary)
        .map_or(60, |s| s.check_interval_seconds);
    let seconds = match &valid.plan.analysis {
        Some(analysis) => analysis.max_unjudged_seconds(interval),
        None => AnalysisSection::default().max_unjudged_seconds(interval),
    };
    Duration::from_secs(seconds).min(MAX_STEP_IN_EFFECT_WAIT)
}

/// Moves every target from `expected` to `desired` (compare-and-set: all read and compared
/// before the first write), waits for each to be in effect (bounded: `in_effect_bound`, then
/// `StepNotInEffect`, not retried: the rollout rolls back) and reads each back; the weights
/// read back.
pub(crate) async fn move_to(
    apis: &Apis<'_>,
    valid: &ValidPlan,
    desired: WeightPair,
    expected: &[TargetWeights],
) -> Result<Vec<TargetWeights>, ShiftError> {
    let plan = &valid.plan;
    let routers = routers(apis, plan);
    let expected = per_target(&routers, expected, "expected")?;
    let to_write = compare(&routers, &expected, desired).await?;

    for (router, reading) in &to_write {
        traffic::write(*router, reading, desired, Move::Step).await?;
    }
    // One deadline for every target: they apply their writes together, not one after another.
    let within = in_effect_bound(valid, desired);
    let deadline = Instant::now() + within;
    for router in &routers {
        let left = deadline.saturating_duration_since(Instant::now());
        traffic::await_in_effect(router.as_ref(), left, |_, why| {
            warn!(target_key = %router.key(), %why, "the step is written, not in effect");
            ShiftError::StepNotInEffect(format!(
                "{}: step {desired} not in effect within {} s (analysis.maxUnjudgedSeconds, at most {} s): {why}",
                router.label(),
                within.as_secs(),
                MAX_STEP_IN_EFFECT_WAIT.as_secs()
            ))
        })
        .await?;
    }

    let mut weights = Vec::with_capacity(routers.len());
    for router in &routers {
        match traffic::observe(router.as_ref()).await? {
            Observed::Pair(read_back) if read_back == desired => {
                weights.push(TargetWeights::new(router.key(), read_back))
            }
            other => {
                return Err(ShiftError::ChangedAfterWrite(format!(
                    "{}: wrote {desired} but read back {}",
                    router.label(),
                    other.describe()
                )))
            }
        }
    }
    metrics::weights(plan, &weights);
    Ok(weights)
}

/// Verify: every target is still where this rollout last set it (before promotion, so a
/// change made during the last bake is not promoted over; at every check). Reads only, through
/// the targets' readers.
pub async fn verify(
    reads: Reads<'_>,
    valid: &ValidPlan,
    expected: &[TargetWeights],
) -> Result<VerifyOutput, ShiftError> {
    let routers = readers(reads, &valid.plan);
    let pairs = per_target(&routers, expected, "expected")?;
    let mut changed = Vec::new();
    for (router, expected) in routers.iter().zip(pairs) {
        // Compare-and-set's compare with nothing to set: `expected` is also the desired state.
        if let Err(e) = compare(std::slice::from_ref(router), &[expected], expected).await {
            match e {
                ShiftError::WeightsChangedExternally(why) => changed.push(why),
                other => return Err(other),
            }
        }
    }
    if !changed.is_empty() {
        return Err(ShiftError::WeightsChangedExternally(changed.join("; ")));
    }
    Ok(VerifyOutput {
        weights: expected.to_vec(),
    })
}

/// Compare-and-set's compare: reads every target; returns those still at `expected` with
/// what was read (to be written from), or `WeightsChangedExternally` naming every target found
/// elsewhere. A target already at `desired` (an earlier attempt wrote it) needs no write.
/// A target whose router gives an error of its own for a move (`TargetReader::moved`: GitOps,
/// where the rollout's own chain carries the weights) fails with it instead.
async fn compare<'r, R: TargetReader + ?Sized>(
    routers: &'r [Box<R>],
    expected: &[WeightPair],
    desired: WeightPair,
) -> Result<Vec<(&'r R, Reading)>, ShiftError> {
    let mut to_write = Vec::new();
    let mut changed = Vec::new();
    for (router, expected) in routers.iter().zip(expected.iter().copied()) {
        let reading = router.read().await?;
        match &reading.observed {
            Observed::Pair(current) => match compare_and_set_check(*current, expected, desired) {
                CasCheck::AsExpected => to_write.push((router.as_ref(), reading)),
                CasCheck::AlreadyDesired => {
                    info!(target_key = %router.key(), "already at the step's weights")
                }
                CasCheck::ChangedExternally => {
                    let why = format!(
                        "{}: found {current}, this rollout last set {expected}",
                        router.label()
                    );
                    if let Some(fails) = router.moved(&why) {
                        return Err(fails);
                    }
                    changed.push(why)
                }
            },
            Observed::Reshaped(why) => changed.push(format!("{}: {why}", router.label())),
        }
    }
    if !changed.is_empty() {
        return Err(ShiftError::WeightsChangedExternally(changed.join("; ")));
    }
    Ok(to_write)
}

/// The weights given for each target, in plan order. Each target needs exactly one entry.
pub fn per_target<R: TargetReader + ?Sized>(
    routers: &[Box<R>],
    given: &[TargetWeights],
    field: &str,
) -> Result<Vec<WeightPair>, ShiftError> {
    if given.len() != routers.len() {
        return Err(ShiftError::InvalidInput(format!(
            "{field} has {} entries, the plan has {} traffic targets",
            given.len(),
            routers.len()
        )));
    }
    routers
        .iter()
        .map(|router| {
            let key = router.key();
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

/// Compare-and-set against the fakes: what the Lambda crate's JSON handler cannot show alone.
#[cfg(test)]
mod tests {
    use canary_aws::fakes::arns::{BLUE, GREEN, LISTENER_A, LISTENER_B};
    use canary_aws::fakes::FakeAlb;
    use canary_core::{NamedError, RolloutPlan, TargetWeights, WeightPair};
    use serde_json::json;

    use super::{set, verify};
    use crate::traffic::Apis;

    fn plan() -> canary_core::plan::ValidPlan {
        let target = |listener: &str| json!({"alb": {"listenerArn": listener, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN}});
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [target(LISTENER_A), target(LISTENER_B)],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        }))
        .expect("a valid plan")
    }

    fn alb(a: (u16, u16), b: (u16, u16)) -> FakeAlb {
        FakeAlb::default()
            .forward(LISTENER_A, (BLUE, a.0), (GREEN, a.1))
            .forward(LISTENER_B, (BLUE, b.0), (GREEN, b.1))
    }

    fn at(stable: u16, canary: u16) -> Vec<TargetWeights> {
        [LISTENER_A, LISTENER_B]
            .map(|l| TargetWeights::new(l.to_owned(), WeightPair { stable, canary }))
            .to_vec()
    }

    fn weights(alb: &FakeAlb, listener: &str) -> (u16, u16) {
        (alb.weight(listener, BLUE), alb.weight(listener, GREEN))
    }

    #[tokio::test]
    async fn a_foreign_change_on_any_target_means_nothing_is_written() {
        let alb = alb((100, 0), (70, 30));
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let err = set(&apis, &plan(), 10, &at(100, 0))
            .await
            .expect_err("B moved");
        assert_eq!(err.name().as_str(), "WeightsChangedExternally");
        assert!(
            err.to_string().contains("found stable 70 / canary 30"),
            "{err}"
        );
        assert_eq!(
            weights(&alb, LISTENER_A),
            (100, 0),
            "A read first, never written"
        );
        assert_eq!(weights(&alb, LISTENER_B), (70, 30));
    }

    #[tokio::test]
    async fn a_set_interrupted_half_way_completes_on_retry() {
        let alb = alb((100, 0), (100, 0));
        alb.throttle_next_write(LISTENER_B);
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let err = set(&apis, &plan(), 10, &at(100, 0))
            .await
            .expect_err("throttled");
        assert_eq!(err.name().as_str(), "AwsTransient");
        assert_eq!(weights(&alb, LISTENER_A), (90, 10));
        assert_eq!(weights(&alb, LISTENER_B), (100, 0));

        // The same input again, as Step Functions' Retry sends it: A is there already.
        let out = set(&apis, &plan(), 10, &at(100, 0)).await.expect("retry");
        assert_eq!(out.weights, at(90, 10));
    }

    #[tokio::test]
    async fn verify_reads_only_and_names_every_moved_target() {
        let alb = alb((60, 40), (70, 30));
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let err = verify(apis.reads(), &plan(), &at(90, 10))
            .await
            .expect_err("both moved");
        let text = err.to_string();
        assert!(
            text.contains(LISTENER_A) && text.contains(LISTENER_B),
            "{text}"
        );
        assert_eq!(weights(&alb, LISTENER_A), (60, 40));
    }
}
