//! Reading and writing the weights of one traffic target, whatever its kind. The three
//! operations (prepare, set, restore) are built from these two moves.

use canary_aws::{
    AlbApi, ExecutionsApi, ForwardAction, ForwardRead, Route53Api, TargetGroupWeight,
    WeightedRecord,
};
use canary_core::{AlbTarget, Route53Target, TrafficTarget, WeightPair};
use tracing::info;

use crate::error::ShiftError;

/// The AWS APIs the function uses.
pub struct Apis<'a> {
    pub alb: &'a dyn AlbApi,
    pub route53: &'a dyn Route53Api,
    pub executions: &'a dyn ExecutionsApi,
}

/// One plan target with the label its messages use: `trafficTargets[1] (route53:Z1:api.example.com.:A)`.
pub struct Located<'p> {
    pub label: String,
    pub target: &'p TrafficTarget,
}

pub fn locate(targets: &[TrafficTarget]) -> Vec<Located<'_>> {
    targets
        .iter()
        .enumerate()
        .map(|(i, target)| Located {
            label: format!("trafficTargets[{i}] ({})", target.key()),
            target,
        })
        .collect()
}

/// A target's weights as found in AWS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// The stable and canary weights.
    Pair(WeightPair),
    /// The target no longer has the shape the plan describes; the text says how.
    Reshaped(String),
}

impl Observed {
    pub fn describe(&self) -> String {
        match self {
            Observed::Pair(pair) => pair.to_string(),
            Observed::Reshaped(why) => why.clone(),
        }
    }
}

/// What a read of a target found, and for an ALB target the forward action as read: a write
/// that follows (compare-and-set) keeps everything but the weights from it, without a second
/// read of the listener or rule.
pub struct Reading {
    pub observed: Observed,
    forward: Option<ForwardAction>,
}

impl Reading {
    pub fn alb(alb: &AlbTarget, read: ForwardRead) -> Self {
        let observed = alb_observed(alb, &read);
        let forward = match read {
            ForwardRead::Forward(forward) => Some(forward),
            ForwardRead::NotForward { .. } => None,
        };
        Reading { observed, forward }
    }

    pub fn route53(observed: Observed) -> Self {
        Reading {
            observed,
            forward: None,
        }
    }
}

pub async fn read(apis: &Apis<'_>, located: &Located<'_>) -> Result<Reading, ShiftError> {
    match located.target {
        TrafficTarget::Alb(alb) => {
            let read = apis
                .alb
                .read_forward(alb)
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
            Ok(Reading::alb(alb, read))
        }
        TrafficTarget::Route53(r53) => {
            let records = apis
                .route53
                .records(r53)
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
            Ok(Reading::route53(route53_observed(located, r53, &records)?))
        }
    }
}

pub async fn observe(apis: &Apis<'_>, located: &Located<'_>) -> Result<Observed, ShiftError> {
    Ok(read(apis, located).await?.observed)
}

pub fn alb_observed(alb: &AlbTarget, read: &ForwardRead) -> Observed {
    let forward: &ForwardAction = match read {
        ForwardRead::Forward(forward) => forward,
        ForwardRead::NotForward { action_types } => {
            return Observed::Reshaped(format!(
                "it does not forward to target groups (its actions are: {})",
                action_types.join(", ")
            ))
        }
    };
    let foreign: Vec<&str> = forward
        .target_groups
        .iter()
        .map(|tg| tg.arn.as_str())
        .filter(|arn| *arn != alb.stable_target_group_arn && *arn != alb.canary_target_group_arn)
        .collect();
    if !foreign.is_empty() {
        return Observed::Reshaped(format!(
            "its forward action also sends traffic to target groups the plan does not name: {}",
            foreign.join(", ")
        ));
    }
    let Some(stable) = forward.weight_of(&alb.stable_target_group_arn) else {
        return Observed::Reshaped(format!(
            "its forward action does not include the stable target group {}",
            alb.stable_target_group_arn
        ));
    };
    Observed::Pair(WeightPair {
        stable,
        // A canary target group that is not attached receives nothing: weight 0.
        canary: forward.weight_of(&alb.canary_target_group_arn).unwrap_or(0),
    })
}

/// The record with set identifier `id`, or `TargetNotFound`.
pub fn route53_record<'r>(
    located: &Located<'_>,
    r53: &Route53Target,
    records: &'r [WeightedRecord],
    id: &str,
) -> Result<&'r WeightedRecord, ShiftError> {
    records
        .iter()
        .find(|r| r.set_identifier.as_deref() == Some(id))
        .ok_or_else(|| ShiftError::TargetNotFound {
            path: located.label.clone(),
            message: format!(
                "hosted zone {} has no {} record {} with set identifier `{id}`",
                r53.hosted_zone_id,
                r53.record_type.as_str(),
                r53.fqdn()
            ),
        })
}

/// `TargetNotFound` when one of the plan's two records does not exist.
pub fn route53_observed(
    located: &Located<'_>,
    r53: &Route53Target,
    records: &[WeightedRecord],
) -> Result<Observed, ShiftError> {
    let (stable, canary) = (
        route53_record(located, r53, records, &r53.stable_set_identifier)?,
        route53_record(located, r53, records, &r53.canary_set_identifier)?,
    );
    let others: Vec<&str> = records
        .iter()
        .filter_map(|r| r.set_identifier.as_deref())
        .filter(|id| *id != r53.stable_set_identifier && *id != r53.canary_set_identifier)
        .collect();
    if !others.is_empty() {
        return Ok(Observed::Reshaped(format!(
            "other records of the same name and type also take traffic (set identifiers: {})",
            others.join(", ")
        )));
    }
    match (stable.weight, canary.weight) {
        (Some(stable), Some(canary)) => Ok(Observed::Pair(WeightPair { stable, canary })),
        _ => Ok(Observed::Reshaped(
            "its records do not use weighted routing".to_owned(),
        )),
    }
}

/// Refuses weights that would not mean what they say: Route 53 splits traffic evenly between
/// weighted records that are all 0, so "stable 0 / canary 0" would send the canary half.
pub fn check_writable(located: &Located<'_>, pair: WeightPair) -> Result<(), ShiftError> {
    if matches!(located.target, TrafficTarget::Route53(_)) && pair.both_zero() {
        return Err(ShiftError::InvalidInput(format!(
            "{}: refusing to write weight 0 to both records (Route 53 would split traffic evenly)",
            located.label
        )));
    }
    Ok(())
}

/// Writes `pair` to the target, as `reading` found it: one `ModifyListener`/`ModifyRule`
/// built from the forward action read, or one Route 53 change batch followed by a bounded wait
/// for `INSYNC`.
pub async fn write(
    apis: &Apis<'_>,
    located: &Located<'_>,
    reading: &Reading,
    pair: WeightPair,
) -> Result<(), ShiftError> {
    match located.target {
        TrafficTarget::Alb(alb) => {
            // A listener or rule that no longer forwards cannot take weights.
            let Some(current) = &reading.forward else {
                return Err(ShiftError::WeightsChangedExternally(format!(
                    "{}: {}",
                    located.label,
                    reading.observed.describe()
                )));
            };
            let weights = [
                TargetGroupWeight {
                    arn: alb.stable_target_group_arn.clone(),
                    weight: pair.stable,
                },
                TargetGroupWeight {
                    arn: alb.canary_target_group_arn.clone(),
                    weight: pair.canary,
                },
            ];
            apis.alb
                .write_forward(alb, current, &weights)
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
        }
        TrafficTarget::Route53(r53) => {
            check_writable(located, pair)?;
            let change_id = apis
                .route53
                .write_weights(r53, pair.stable, pair.canary)
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
            let in_sync = apis
                .route53
                .wait_in_sync(&change_id)
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
            if !in_sync {
                return Err(ShiftError::ChangeNotInSync {
                    path: located.label.clone(),
                    change_id,
                });
            }
        }
    }
    info!(target_key = %located.target.key(), stable = pair.stable, canary = pair.canary, "weights written");
    Ok(())
}
