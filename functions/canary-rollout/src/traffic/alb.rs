//! A load balancer listener's default action (ALB or NLB) or an ALB listener rule that forwards
//! to the stable and the canary target group: its weights are the forward action's target group
//! weights. One router for both kinds (`ForwardTarget`); what only an NLB has is in `nlb.rs`.

use async_trait::async_trait;
use canary_aws::{
    AlbApi, AlbReads, ForwardAction, ForwardRead, TargetGroupInfo, TargetGroupWeight,
};
use canary_core::arn::load_balancer_arn;
use canary_core::ownership::alb_controller;
use canary_core::target_health::target_group_problem;
use canary_core::{ForwardTarget, WeightPair};
use tracing::info;

use super::{
    nlb, refuse_claimed, ControllerClaim, Detach, Health, Inspection, Located, Observed, Reading,
    Router, Side, TargetReader, TrafficRouter,
};
use crate::error::ShiftError;

/// The router of an ALB or NLB target: over `dyn AlbApi` it moves weights; over
/// `dyn AlbReads` (a check's) it only reads.
type ForwardRouter<'a> = Router<'a, dyn AlbApi + 'a, dyn ForwardTarget + 'a>;

impl<A: AlbReads + ?Sized> Router<'_, A, dyn ForwardTarget + '_> {
    async fn read_forward(&self) -> Result<ForwardRead, ShiftError> {
        self.api
            .read_forward(self.target)
            .await
            .map_err(|e| self.aws(e))
    }

    /// The weights, and the forward action as read for a write to start from.
    fn reading(&self, read: ForwardRead) -> Reading {
        let observed = observed(self.target, &read);
        match read {
            ForwardRead::Forward(forward) => Reading::with_snapshot(observed, forward),
            ForwardRead::NotForward { .. } => Reading::of(observed),
        }
    }
}

impl ForwardRouter<'_> {
    /// Writes `weights` as the forward action's target groups, from `current` as read.
    async fn write_groups(
        &self,
        current: &ForwardAction,
        weights: &[TargetGroupWeight],
    ) -> Result<(), ShiftError> {
        self.api
            .write_forward(self.target, current, weights)
            .await
            .map_err(|e| self.aws(e))
    }
}

#[async_trait]
impl<A: AlbReads + ?Sized> TargetReader for Router<'_, A, dyn ForwardTarget + '_> {
    fn located(&self) -> &Located<'_> {
        &self.located
    }

    async fn read(&self) -> Result<Reading, ShiftError> {
        Ok(self.reading(self.read_forward().await?))
    }
}

#[async_trait]
impl TrafficRouter for ForwardRouter<'_> {
    /// The rule's tags (for a rule target), the listener's, and the load balancer's: a
    /// controller that owns the listener or the load balancer deletes the rules it does not
    /// know and rewrites the default action, whoever made the rule.
    async fn controllers(&self) -> Result<Vec<ControllerClaim>, ShiftError> {
        let listener = self.target.listener_arn();
        let mut marked = Vec::new();
        if let Some(rule) = self.target.rule_arn() {
            marked.push(("the rule".to_owned(), rule.to_owned()));
            marked.push(("its listener".to_owned(), listener.to_owned()));
        } else {
            marked.push(("the listener".to_owned(), listener.to_owned()));
        }
        if let Some(load_balancer) = load_balancer_arn(listener) {
            marked.push(("the load balancer".to_owned(), load_balancer));
        }
        let region = self.target.region().unwrap_or_default();
        let mut claims = Vec::new();
        for (what, arn) in marked {
            let tags = self.api.tags(region, &arn).await.map_err(|e| self.aws(e))?;
            if let Some(owner) = alb_controller(&tags) {
                claims.push(ControllerClaim { what, owner });
            }
        }
        Ok(claims)
    }

    /// One `ModifyListener`/`ModifyRule` built from the forward action read.
    async fn write(&self, reading: &Reading, pair: WeightPair) -> Result<(), ShiftError> {
        // A listener or rule that no longer forwards cannot take weights.
        let Some(current) = reading.snapshot::<ForwardAction>() else {
            return Err(self.changed_externally(&reading.observed));
        };
        let weights = TargetGroupWeight::pair(
            self.target.stable_target_group_arn(),
            self.target.canary_target_group_arn(),
            pair,
        );
        self.write_groups(current, &weights).await
    }

    async fn inspect(&self, shortest_bake_seconds: i64) -> Result<Inspection, ShiftError> {
        let target = self.target;
        let read = self.read_forward().await?;
        let region = target.region().unwrap_or_default();
        let groups: Vec<TargetGroupInfo> = self
            .api
            .target_groups(
                region,
                &[
                    target.stable_target_group_arn().to_owned(),
                    target.canary_target_group_arn().to_owned(),
                ],
            )
            .await
            .map_err(|e| self.aws(e))?;
        let is_nlb = target.name() == "nlb";
        if is_nlb {
            nlb::refuse_mixed_protocols(&self.located.label, &groups)?;
        }
        let mut notes = Vec::new();
        let mut owner_notes = Vec::new();
        let shape = if is_nlb {
            "Shift a listener created outside the clusters, with a TargetGroupBinding in each \
             (docs/traffic/nlb.md)"
        } else {
            "Shift a listener or rule created outside the clusters, with a TargetGroupBinding in \
             each (docs/shapes/shared-alb.md)"
        };
        refuse_claimed(self, shape, target.owner(), &mut owner_notes).await?;
        let group_sticky = match &read {
            ForwardRead::Forward(f) => f.group_stickiness.filter(|s| s.enabled),
            ForwardRead::NotForward { .. } => None,
        };
        if let Some(s) = group_sticky {
            notes.push(format!(
                "target group stickiness is on in the forward action ({} s): clients stay on their target group that long whatever the weights",
                s.duration_seconds.unwrap_or_default()
            ));
        }
        for group in groups.iter().filter(|g| g.stickiness_enabled) {
            notes.push(format!(
                "target group {} has sticky sessions (stickiness.enabled): sticky clients do not follow weight changes",
                group.arn
            ));
        }
        let attach_canary = matches!(&read, ForwardRead::Forward(f) if f.weight_of(target.canary_target_group_arn()).is_none());
        // The notes so far are all about stickiness.
        let sticky = !notes.is_empty();
        notes.extend(owner_notes);
        if is_nlb {
            notes.push(nlb::flow_note(
                target.min_step_seconds(),
                shortest_bake_seconds,
            ));
        }
        Ok(Inspection {
            reading: self.reading(read),
            attach_canary,
            kind: target.name(),
            sticky,
            ttl_seconds: None,
            notes,
        })
    }

    async fn health(&self, side: Side, min_healthy_targets: u32) -> Result<Health, ShiftError> {
        let arn = match side {
            Side::Canary => self.target.canary_target_group_arn(),
            Side::Stable => self.target.stable_target_group_arn(),
        };
        let targets = self.api.target_health(arn).await.map_err(|e| self.aws(e))?;
        // `targetgroup/<name>/<id>`: the name is what a person recognises.
        let name = arn.split('/').nth(1).unwrap_or(arn);
        let group = format!("{} target group {name}", side.name());
        Ok(target_group_problem(&group, &targets, min_healthy_targets)
            .map_or(Health::Ready, Health::NotReady))
    }

    /// Compare-and-set: the listener or rule must still be as promotion left it (`expected`),
    /// or detached already (a retry).
    async fn detach(&self, expected: WeightPair) -> Result<Detach, ShiftError> {
        self.promoted(expected)?;
        let read = self.read_forward().await?;
        let observed = observed(self.target, &read);
        let ForwardRead::Forward(forward) = read else {
            return Err(self.changed_externally(&observed));
        };
        let canary_only = [TargetGroupWeight {
            arn: self.target.canary_target_group_arn().to_owned(),
            weight: expected.canary,
        }];
        match observed {
            Observed::Pair(found) if found == expected => {
                self.write_groups(&forward, &canary_only).await?;
                info!(target_key = %self.key(), "stable target group detached");
            }
            // An earlier attempt detached it already.
            _ if forward.target_groups == canary_only => {}
            other => return Err(self.not_detached(&other, expected)),
        }
        Ok(Detach::Detached)
    }
}

/// The weights of the forward action, or how it no longer has the plan's shape.
fn observed(target: &dyn ForwardTarget, read: &ForwardRead) -> Observed {
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
        .filter(|arn| {
            *arn != target.stable_target_group_arn() && *arn != target.canary_target_group_arn()
        })
        .collect();
    if !foreign.is_empty() {
        return Observed::Reshaped(format!(
            "its forward action also sends traffic to target groups the plan does not name: {}",
            foreign.join(", ")
        ));
    }
    let Some(stable) = forward.weight_of(target.stable_target_group_arn()) else {
        return Observed::Reshaped(format!(
            "its forward action does not include the stable target group {}",
            target.stable_target_group_arn()
        ));
    };
    Observed::Pair(WeightPair {
        stable,
        // A canary target group that is not attached receives nothing: weight 0.
        canary: forward
            .weight_of(target.canary_target_group_arn())
            .unwrap_or(0),
    })
}
