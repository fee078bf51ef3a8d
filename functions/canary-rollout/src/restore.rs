//! Restore: the safety action. A rollback puts every target back to its baseline, whatever it
//! finds: weights someone else changed are overwritten (and reported). After a foreign change
//! stopped the rollout, only the targets still where this rollout left them go back; the ones
//! someone else changed are theirs, left as found (and reported). Either way it goes on to
//! the other targets when one fails, then reports the first failure so the state machine
//! retries; a retry rewrites nothing that is already restored.

use canary_core::limits::MAX_TARGETS;
use canary_core::limits::{join_bounded, MAX_REASON_BYTES};
use canary_core::{RolloutPlan, TargetWeights, WeightPair};
use tracing::{error, info, warn};

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::error::ShiftError;
use crate::metrics;
use crate::outputs::{LookAgainOutput, RestoreOutput, UnexpectedWeights};
use crate::set::per_target;
use crate::traffic::{self, routers, Apis, Move, Observed, TrafficRouter};

/// Why a restore runs, for its metrics: the cause (an error name, or the safety net's) and when
/// the failure happened.
pub struct Rollback {
    pub cause: String,
    pub failed_at: Option<String>,
}

/// A rollback the rollout made (the state machine's Restore, the safety net): the weights read
/// back and the `Rollbacks`/`RollbackSeconds` metrics. A person's restore with the CLI is not
/// one, and records nothing.
pub fn record(plan: &RolloutPlan, restored: &RestoreOutput, why: &Rollback) {
    metrics::weights(plan, &restored.weights);
    metrics::rollback(
        plan,
        &why.cause,
        why.failed_at.as_deref(),
        SystemTime::now(),
    );
}

/// Puts every target back to `baseline` and holds it there as long as a target's reconciler
/// may still write what it wanted before (see [`hold`]).
pub async fn restore(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    baseline: &[TargetWeights],
    expected: Option<&[TargetWeights]>,
    step: Option<WeightPair>,
) -> Result<RestoreOutput, ShiftError> {
    put_back(apis, plan, baseline, Ours::AnyFound(expected, step), true).await
}

/// After a foreign change stopped the rollout (a compare-and-set restore): every target still
/// where this rollout left it (`expected`, what it last set, or `step`, the step it was
/// setting, which an earlier attempt may have written) goes back to `baseline` and is held
/// there; every other target is the foreign writer's, left as found and reported in
/// `unexpected`. Without it, a target nobody else touched would stay at the canary's weight
/// with no check judging the canary.
pub async fn restore_unchanged(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    baseline: &[TargetWeights],
    expected: &[TargetWeights],
    step: Option<WeightPair>,
) -> Result<RestoreOutput, ShiftError> {
    put_back(apis, plan, baseline, Ours::Only(expected, step), true).await
}

/// A foreign change stopped the rollout (its own `RestoreUnchanged`, not the safety net's
/// repeat of it): the weights read back and `ForeignChanges`, which pages a person.
pub fn record_foreign_change(plan: &RolloutPlan, restored: &RestoreOutput) {
    metrics::weights(plan, &restored.weights);
    metrics::foreign_change(plan);
}

/// How long a restore of the plan's targets holds the baseline (the longest of its targets').
pub fn hold_seconds(apis: &Apis<'_>, plan: &RolloutPlan) -> u64 {
    routers(apis, plan)
        .iter()
        .map(|r| r.hold_seconds())
        .max()
        .unwrap_or(0)
}

/// Which weights a restore takes for this rollout's own.
#[derive(Clone, Copy)]
enum Ours<'a> {
    /// A rollback: whatever it finds is put back. A target at neither these weights (what the
    /// rollout last set), the step's (the one it was setting, which may have reached some
    /// targets before another was refused) nor the baseline is reported as overwritten; `None`
    /// reports nothing.
    AnyFound(Option<&'a [TargetWeights]>, Option<WeightPair>),
    /// Only a target at these weights, or at the step's: any other is left as found.
    Only(&'a [TargetWeights], Option<WeightPair>),
}

async fn put_back(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    baseline: &[TargetWeights],
    ours: Ours<'_>,
    hold_after: bool,
) -> Result<RestoreOutput, ShiftError> {
    let routers = routers(apis, plan);
    let baseline = per_target(&routers, baseline, "baseline")?;
    let (expected, step, leave_foreign) = match ours {
        Ours::AnyFound(expected, step) => (expected, step, false),
        Ours::Only(expected, step) => (Some(expected), step, true),
    };
    let expected = expected
        .map(|e| per_target(&routers, e, "expected"))
        .transpose()?;
    for (router, baseline) in routers.iter().zip(&baseline) {
        router.refuse_unwritable(*baseline)?;
    }

    let mut unexpected = Vec::new();
    let mut weights = Vec::with_capacity(routers.len());
    // The targets at the baseline now, which the hold watches (never one left to its writer).
    let mut held = Vec::with_capacity(routers.len());
    let mut first_error = None;
    let settled_by = Instant::now() + traffic::WRITE_IN_EFFECT_WAIT;
    for (i, (router, baseline)) in routers.iter().zip(&baseline).enumerate() {
        let router = router.as_ref();
        let restored = async {
            let reading = router.read().await?;
            let current = reading.observed.clone();
            if current == Observed::Pair(*baseline) {
                info!(target_key = %router.key(), "already at baseline");
                router.keep(*baseline).await?;
                // An earlier attempt's write may still be applying: not restored before then.
                traffic::settled(router, settled_by).await?;
                return Ok(Some(current));
            }
            let known = match &current {
                Observed::Pair(pair) => {
                    expected.as_ref().is_none_or(|e| *pair == e[i]) || Some(*pair) == step
                }
                Observed::Reshaped(_) => false,
            };
            if !known {
                unexpected.push(UnexpectedWeights {
                    target: router.key(),
                    found: current.describe(),
                });
                if leave_foreign {
                    warn!(target_key = %router.key(), found = %current.describe(), "changed outside this rollout; left as found");
                    return Ok(None);
                }
                warn!(target_key = %router.key(), found = %current.describe(), "unexpected weights; restoring the baseline anyway");
            }
            traffic::write(router, &reading, *baseline, Move::Restore).await?;
            router.keep(*baseline).await?;
            traffic::settled(router, settled_by).await?;
            if hold_after && router.hold_seconds() > 0 {
                // Its reconciler may move it back until its sync lands: the hold below reads
                // it back as often, and puts it back as often.
                return Ok(Some(Observed::Pair(*baseline)));
            }
            traffic::observe(router).await.map(Some)
        }
        .await;
        match restored {
            Ok(None) => {}
            Ok(Some(Observed::Pair(pair))) if pair == *baseline => {
                weights.push(TargetWeights::new(router.key(), pair));
                held.push((router, *baseline));
            }
            Ok(Some(other)) => {
                let e = ShiftError::ChangedAfterWrite(format!(
                    "{}: restored {baseline} but read back {}",
                    router.label(),
                    other.describe()
                ));
                error!(target_key = %router.key(), error = %e, "restore did not take");
                first_error.get_or_insert(e);
            }
            Err(e) => {
                error!(target_key = %router.key(), error = %e, "restore failed");
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let reasserted = match hold_after {
        true => hold(&held).await?,
        false => 0,
    };
    Ok(RestoreOutput {
        weights,
        note: foreign_note(&unexpected, leave_foreign),
        unexpected,
        reasserted,
    })
}

/// The restore's hold: for as long as a target's `hold_seconds` (a GitOps sync already in
/// flight may still write the weights it carried), every target the restore left at its
/// baseline that is found away from it is put back (never one left to a foreign writer). Each time is expected, not a foreign change: it is counted and logged.
async fn hold(held: &[(&dyn TrafficRouter, WeightPair)]) -> Result<u32, ShiftError> {
    let longest = held
        .iter()
        .map(|(r, _)| r.hold_seconds())
        .max()
        .unwrap_or(0);
    if longest == 0 {
        return Ok(0);
    }
    let (started, longest) = (Instant::now(), Duration::from_secs(longest));
    let mut reasserted = 0;
    while started.elapsed() < longest {
        tokio::time::sleep(traffic::poll_interval(longest)).await;
        for &(router, ref baseline) in held {
            if started.elapsed() > Duration::from_secs(router.hold_seconds()) {
                continue;
            }
            let reading = router.read().await?;
            if reading.observed != Observed::Pair(*baseline) {
                warn!(target_key = %router.key(), found = %reading.observed.describe(), "moved while the baseline is held; put back");
                traffic::write(router, &reading, *baseline, Move::Restore).await?;
                reasserted += 1;
            }
        }
    }
    info!(
        reasserted,
        held_seconds = longest.as_secs(),
        "the baseline held"
    );
    Ok(reasserted)
}

/// The look after a restore's settle period (`rollback.settleSeconds`): a controller that owns
/// a weight (ExternalDNS, the Load Balancer Controller) may have put the canary's weights back
/// since. Every target away from the baseline is put back again (a restore that expects the
/// baseline, so each is reported) and the `RollbacksReverted` metric raised; the state machine
/// then sends the Rollback Reverted event. No hold: the restore held already, and a GitOps
/// target put back here has its annotations put back too, which its sync then carries.
pub async fn look_again(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    baseline: &[TargetWeights],
) -> Result<LookAgainOutput, ShiftError> {
    let restored = put_back(
        apis,
        plan,
        baseline,
        Ours::AnyFound(Some(baseline), None),
        false,
    )
    .await?;
    if restored.unexpected.is_empty() {
        info!("the baseline held through the settle period");
        return Ok(LookAgainOutput {
            reverted: false,
            found: String::new(),
            weights: restored.weights,
        });
    }
    let found = moved_away(&restored.unexpected);
    error!(%found, "after the rollback, something put weights back; the baseline is re-asserted");
    metrics::weights(plan, &restored.weights);
    metrics::rollback_reverted(plan);
    Ok(LookAgainOutput {
        reverted: true,
        found,
        weights: restored.weights,
    })
}

/// Which targets a look found away from the baseline, and at what. Bounded.
fn moved_away(unexpected: &[UnexpectedWeights]) -> String {
    let lines: Vec<String> = unexpected
        .iter()
        .map(|u| format!("{} was {}", u.target, u.found))
        .collect();
    join_bounded(&lines, "; ", MAX_TARGETS, MAX_REASON_BYTES)
}

/// What the execution's cause says of foreign changes the restore overwrote, or left.
fn foreign_note(unexpected: &[UnexpectedWeights], left: bool) -> String {
    if unexpected.is_empty() {
        return String::new();
    }
    let did = if left { "left as found" } else { "overwrote" };
    format!(
        ". It {did} weights changed outside this rollout: {}",
        moved_away(unexpected)
    )
}

/// Restore against the fakes: it goes on past a target it cannot write, and a retry finishes.
#[cfg(test)]
mod tests {
    use canary_aws::fakes::arns::{BLUE, GREEN, LISTENER_A, LISTENER_B};
    use canary_aws::fakes::FakeAlb;
    use canary_core::{NamedError, RolloutPlan, TargetWeights, WeightPair};
    use serde_json::json;

    use super::{restore, restore_unchanged};
    use crate::traffic::Apis;

    fn baseline() -> Vec<TargetWeights> {
        [LISTENER_A, LISTENER_B]
            .map(|l| {
                TargetWeights::new(
                    l.to_owned(),
                    WeightPair {
                        stable: 100,
                        canary: 0,
                    },
                )
            })
            .to_vec()
    }

    fn plan() -> canary_core::RolloutPlan {
        let target = |listener: &str| json!({"alb": {"listenerArn": listener, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN}});
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [target(LISTENER_A), target(LISTENER_B)],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        }))
        .expect("a valid plan")
        .plan
    }

    #[tokio::test]
    async fn restore_goes_on_past_a_throttled_target_then_a_retry_finishes() {
        let plan = plan();
        let alb = FakeAlb::default()
            .forward(LISTENER_A, (BLUE, 90), (GREEN, 10))
            .forward(LISTENER_B, (BLUE, 90), (GREEN, 10));
        alb.throttle_next_write(LISTENER_A);
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };

        let err = restore(&apis, &plan, &baseline(), None, None)
            .await
            .expect_err("the throttle surfaces");
        assert_eq!(err.name().as_str(), "AwsTransient");
        assert!(err.name().is_retryable());
        assert_eq!(alb.weight(LISTENER_A, GREEN), 10, "not restored yet");
        assert_eq!(
            alb.weight(LISTENER_B, GREEN),
            0,
            "the other was restored anyway"
        );

        let out = restore(&apis, &plan, &baseline(), None, None)
            .await
            .expect("the retry restores the rest");
        assert_eq!(out.weights, baseline());
        assert_eq!(alb.weight(LISTENER_A, GREEN), 0);
    }

    #[tokio::test]
    async fn a_restore_a_controller_undoes_says_it_wrote_and_what_it_read_back() {
        let alb = FakeAlb::default()
            .forward(LISTENER_A, (BLUE, 90), (GREEN, 10))
            .forward(LISTENER_B, (BLUE, 90), (GREEN, 10))
            .reconciled(LISTENER_A);
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let err = restore(&apis, &plan(), &baseline(), None, None)
            .await
            .expect_err("the controller put its weights back");
        assert_eq!(err.name().as_str(), "WeightsChangedExternally");
        let message = err.to_string();
        assert!(message.contains("right after it wrote them"), "{message}");
        assert!(!message.contains("nothing was written"), "{message}");
        assert!(
            message.contains("restored stable 100 / canary 0 but read back stable 90 / canary 10"),
            "{message}"
        );
        assert_eq!(
            alb.weight(LISTENER_B, GREEN),
            0,
            "the other target restored"
        );
    }

    #[tokio::test]
    async fn a_step_refused_half_written_is_the_rollouts_own_not_a_foreign_change() {
        // The 10 % step reached listener A, then listener B refused it; the rollout had set
        // nothing before (its last set is the baseline).
        let restore_half_written = |step: Option<WeightPair>| async move {
            let alb = FakeAlb::default()
                .forward(LISTENER_A, (BLUE, 90), (GREEN, 10))
                .forward(LISTENER_B, (BLUE, 100), (GREEN, 0));
            let apis = Apis {
                alb: &alb,
                ..Apis::fake()
            };
            restore(&apis, &plan(), &baseline(), Some(&baseline()), step)
                .await
                .expect("restores")
        };
        let out = restore_half_written(WeightPair::for_canary_percent(10)).await;
        assert_eq!(out.weights, baseline());
        assert!(out.unexpected.is_empty(), "{:?}", out.unexpected);
        assert_eq!(out.note, "", "nothing blamed on anyone else");
        // Without the step, the same weights would read as someone else's.
        let blamed = restore_half_written(None).await;
        assert_eq!(blamed.unexpected.len(), 1);
    }

    #[tokio::test]
    async fn after_a_foreign_change_only_the_targets_still_where_the_rollout_left_them_go_back() {
        let ten = |l: &str| {
            TargetWeights::new(
                l.to_owned(),
                WeightPair {
                    stable: 90,
                    canary: 10,
                },
            )
        };
        let last_set = vec![ten(LISTENER_A), ten(LISTENER_B)];
        let alb = FakeAlb::default()
            .forward(LISTENER_A, (BLUE, 30), (GREEN, 70))
            .forward(LISTENER_B, (BLUE, 90), (GREEN, 10));
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let out = restore_unchanged(&apis, &plan(), &baseline(), &last_set, None)
            .await
            .expect("restores what is its own");
        assert_eq!(
            alb.weight(LISTENER_A, GREEN),
            70,
            "the foreign writer's, left"
        );
        assert_eq!(
            alb.weight(LISTENER_B, GREEN),
            0,
            "untouched by anyone else: restored"
        );
        assert_eq!(out.weights, baseline()[1..]);
        assert_eq!(out.unexpected.len(), 1);
        assert!(
            out.note
                .contains("left as found weights changed outside this rollout")
                && out.note.contains("stable 30 / canary 70"),
            "{}",
            out.note
        );
        // A target at the step it was setting (an earlier attempt wrote it) is its own too.
        let alb = FakeAlb::default()
            .forward(LISTENER_A, (BLUE, 50), (GREEN, 50))
            .forward(LISTENER_B, (BLUE, 90), (GREEN, 10));
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let step = WeightPair {
            stable: 50,
            canary: 50,
        };
        let out = restore_unchanged(&apis, &plan(), &baseline(), &last_set, Some(step))
            .await
            .expect("restores both");
        assert_eq!(out.weights, baseline());
        assert_eq!((out.unexpected.len(), out.note.as_str()), (0, ""));
    }
}
