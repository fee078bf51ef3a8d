//! A VPC Lattice service's listener default action, or one of its rules, that forwards to the
//! stable and the canary cluster's target group: its weights are the forward action's target
//! group weights (0-999), written with `UpdateListener`/`UpdateRule`, which replace the action
//! whole. A write starts from the action as read (compare-and-set): other target groups at
//! weight 0 are written back as found; one with a weight makes the target `Reshaped` (the
//! weights would not be the shares they say), never overwritten.

use async_trait::async_trait;
use canary_aws::alb::TargetGroupWeight;
use canary_aws::{LatticeAction, LatticeRead, VpcLatticeApi, VpcLatticeReads};
use canary_core::ownership::lattice_controller;
use canary_core::target_health::target_group_problem;
use canary_core::{VpcLatticeTarget, WeightPair};
use tracing::info;

use super::{
    refuse_claimed, ControllerClaim, Detach, Health, Inspection, Located, Observed, Reading,
    Router, Side, TargetReader, TrafficRouter,
};
use crate::error::ShiftError;

type LatticeRouter<'a> = Router<'a, dyn VpcLatticeApi + 'a, VpcLatticeTarget>;

impl<A: VpcLatticeReads + ?Sized> Router<'_, A, VpcLatticeTarget> {
    async fn read_action(&self) -> Result<LatticeRead, ShiftError> {
        self.api
            .read_action(self.target)
            .await
            .map_err(|e| self.aws(e))
    }

    /// The weights, and the target groups as read for a write to start from.
    fn reading(&self, read: LatticeRead) -> Reading {
        let observed = observed(self.target, &read.action);
        match read.action {
            LatticeAction::Forward(groups) => Reading::with_snapshot(observed, groups),
            LatticeAction::NotForward(_) => Reading::of(observed),
        }
    }
}

impl LatticeRouter<'_> {
    async fn write_groups(&self, weights: &[TargetGroupWeight]) -> Result<(), ShiftError> {
        self.api
            .write_forward(self.target, weights)
            .await
            .map_err(|e| self.aws(e))
    }
}

#[async_trait]
impl<A: VpcLatticeReads + ?Sized> TargetReader for Router<'_, A, VpcLatticeTarget> {
    fn located(&self) -> &Located<'_> {
        &self.located
    }

    async fn read(&self) -> Result<Reading, ShiftError> {
        Ok(self.reading(self.read_action().await?))
    }
}

#[async_trait]
impl TrafficRouter for LatticeRouter<'_> {
    /// One `UpdateRule`/`UpdateListener`: the target groups as read, the two weights changed
    /// (the canary's added if it was not there). A listener or rule that no longer forwards,
    /// or forwards elsewhere too, is not written.
    async fn write(&self, reading: &Reading, pair: WeightPair) -> Result<(), ShiftError> {
        let (Observed::Pair(_), Some(groups)) = (
            &reading.observed,
            reading.snapshot::<Vec<TargetGroupWeight>>(),
        ) else {
            return Err(self.changed_externally(&reading.observed));
        };
        let mut weights = groups.clone();
        for wanted in TargetGroupWeight::pair(
            self.target.stable_target_group_id(),
            self.target.canary_target_group_id(),
            pair,
        ) {
            match weights.iter_mut().find(|g| g.arn == wanted.arn) {
                Some(found) => found.weight = wanted.weight,
                None => weights.push(wanted),
            }
        }
        self.write_groups(&weights).await
    }

    async fn inspect(&self, _shortest_bake_seconds: i64) -> Result<Inspection, ShiftError> {
        let read = self.read_action().await?;
        let mut notes = Vec::new();
        refuse_claimed(
            self,
            "Shift a service whose listener or rule is made outside the clusters (Terraform, \
             CloudFormation), each cluster's target group beside it (docs/traffic/vpc-lattice.md)",
            self.target.owner.as_ref(),
            &mut notes,
        )
        .await?;
        let attach_canary = matches!(&read.action, LatticeAction::Forward(groups)
            if !groups.iter().any(|g| g.arn == self.target.canary_target_group_id()));
        Ok(Inspection {
            reading: self.reading(read),
            attach_canary,
            kind: "vpcLattice",
            sticky: false,
            ttl_seconds: None,
            notes,
        })
    }

    async fn health(&self, side: Side, min_healthy_targets: u32) -> Result<Health, ShiftError> {
        let group = match side {
            Side::Canary => self.target.canary_target_group_id(),
            Side::Stable => self.target.stable_target_group_id(),
        };
        let targets = self
            .api
            .target_health(self.target, group)
            .await
            .map_err(|e| self.aws(e))?;
        let name = format!("{} target group {group}", side.name());
        Ok(target_group_problem(&name, &targets, min_healthy_targets)
            .map_or(Health::Ready, Health::NotReady))
    }

    /// The tags of the service, the listener and (for a rule target) the rule: the AWS Gateway
    /// API Controller tags all three from the HTTPRoute it reconciles.
    async fn controllers(&self) -> Result<Vec<ControllerClaim>, ShiftError> {
        let read = self.read_action().await?;
        let listener = read.arn.split("/rule/").next().unwrap_or(&read.arn);
        let service = listener.split("/listener/").next().unwrap_or(listener);
        let mut marked = vec![("the service", service)];
        match self.target.rule_identifier {
            Some(_) => {
                marked.push(("its listener", listener));
                marked.push(("the rule", read.arn.as_str()));
            }
            None => marked.push(("the listener", listener)),
        }
        let mut claims = Vec::new();
        for (what, arn) in marked {
            let tags = self
                .api
                .tags(self.target, arn)
                .await
                .map_err(|e| self.aws(e))?;
            if let Some(owner) = lattice_controller(&tags) {
                claims.push(ControllerClaim {
                    what: what.to_owned(),
                    owner,
                });
            }
        }
        Ok(claims)
    }

    /// Compare-and-set: the listener or rule must still be as promotion left it (`expected`),
    /// or detached already (a retry).
    async fn detach(&self, expected: WeightPair) -> Result<Detach, ShiftError> {
        self.promoted(expected)?;
        let read = self.read_action().await?;
        let stable = self.target.stable_target_group_id();
        match (observed(self.target, &read.action), &read.action) {
            (Observed::Pair(found), LatticeAction::Forward(groups)) if found == expected => {
                // Every target group but the stable one, as found.
                let kept: Vec<TargetGroupWeight> =
                    groups.iter().filter(|g| g.arn != stable).cloned().collect();
                self.write_groups(&kept).await?;
                info!(target_key = %self.key(), "stable target group detached");
            }
            // An earlier attempt detached it already.
            (_, LatticeAction::Forward(groups))
                if !groups.iter().any(|g| g.arn == stable)
                    && groups.iter().any(|g| {
                        g.arn == self.target.canary_target_group_id() && g.weight == expected.canary
                    }) => {}
            (other, _) => return Err(self.not_detached(&other, expected)),
        }
        Ok(Detach::Detached)
    }
}

/// The weights of the forward action, or how it no longer has the plan's shape.
fn observed(target: &VpcLatticeTarget, action: &LatticeAction) -> Observed {
    let groups = match action {
        LatticeAction::Forward(groups) => groups,
        LatticeAction::NotForward(what) => {
            return Observed::Reshaped(format!(
                "it does not forward to target groups (it answers {what})"
            ))
        }
    };
    let (stable, canary) = (
        target.stable_target_group_id(),
        target.canary_target_group_id(),
    );
    // Other target groups at weight 0 receive nothing: they are kept, and do not count.
    let foreign: Vec<&str> = groups
        .iter()
        .filter(|g| g.arn != stable && g.arn != canary && g.weight > 0)
        .map(|g| g.arn.as_str())
        .collect();
    if !foreign.is_empty() {
        return Observed::Reshaped(format!(
            "its forward action also sends traffic to target groups the plan does not name: {}",
            foreign.join(", ")
        ));
    }
    let weight_of = |id: &str| groups.iter().find(|g| g.arn == id).map(|g| g.weight);
    let Some(stable_weight) = weight_of(stable) else {
        return Observed::Reshaped(format!(
            "its forward action does not include the stable target group {stable}"
        ));
    };
    Observed::Pair(WeightPair {
        stable: stable_weight,
        // A canary target group that is not in the action receives nothing: weight 0.
        canary: weight_of(canary).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::FakeLattice;
    use canary_core::plan::ValidPlan;
    use canary_core::{NamedError, RolloutPlan, TargetWeights};
    use serde_json::json;

    use super::*;
    use crate::set::move_to;
    use crate::traffic::{routers, Apis};

    const SERVICE: &str =
        "arn:aws:vpc-lattice:us-east-1:111122223333:service/svc-0123456789abcdef0";
    const LISTENER: &str = "arn:aws:vpc-lattice:us-east-1:111122223333:service/svc-0123456789abcdef0/listener/listener-0123456789abcdef0";
    const RULE: &str = "arn:aws:vpc-lattice:us-east-1:111122223333:service/svc-0123456789abcdef0/listener/listener-0123456789abcdef0/rule/rule-0123456789abcdef0";
    const BLUE: &str = "tg-0000000000000blue";
    const GREEN: &str = "tg-000000000000green";
    const RED: &str = "tg-00000000000000red";
    const KEY: &str = "vpcLattice:svc-0123456789abcdef0/listener-0123456789abcdef0";

    /// A plan shifting the listener's default action (or its rule), the canary's target group
    /// named by ARN, the others by ID.
    fn plan(rule: bool) -> ValidPlan {
        let mut target = json!({
            "serviceIdentifier": "svc-0123456789abcdef0",
            "listenerIdentifier": "listener-0123456789abcdef0",
            "stableTargetGroup": BLUE,
            "canaryTargetGroup": format!("arn:aws:vpc-lattice:us-east-1:111122223333:targetgroup/{GREEN}"),
        });
        if rule {
            target["ruleIdentifier"] = json!(RULE);
        }
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"vpcLattice": target}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        }))
        .expect("a valid plan")
    }

    fn pair(stable: u16, canary: u16) -> WeightPair {
        WeightPair { stable, canary }
    }

    fn groups(weights: &[(&str, u16)]) -> LatticeAction {
        LatticeAction::Forward(
            weights
                .iter()
                .map(|(id, weight)| TargetGroupWeight {
                    arn: (*id).to_owned(),
                    weight: *weight,
                })
                .collect(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_writes_both_target_groups_by_id_keeping_others_after_a_throttle() {
        let lattice = FakeLattice::default()
            .forwarding(RULE, &[(BLUE, 100), (RED, 0)])
            .throttle(1);
        let valid = plan(true);
        let apis = Apis {
            vpc_lattice: &lattice,
            ..Apis::fake()
        };
        let key = format!("{KEY}/rule-0123456789abcdef0");
        let before = [TargetWeights::new(&key, pair(100, 0))];
        // A throttle the SDK's own retries did not outlast: the state machine retries the step.
        let throttled = move_to(&apis, &valid, pair(90, 10), &before)
            .await
            .expect_err("throttled");
        assert_eq!(throttled.name().as_str(), "AwsTransient", "{throttled}");
        assert!(lattice.writes.lock().expect("writes").is_empty());
        let moved = move_to(&apis, &valid, pair(90, 10), &before)
            .await
            .expect("moved");
        assert_eq!(moved, [TargetWeights::new(&key, pair(90, 10))]);
        assert_eq!(
            lattice.now().action,
            groups(&[(BLUE, 90), (RED, 0), (GREEN, 10)]),
            "the target group at 0 kept as found, the canary's added"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn weights_changed_under_the_rollout_stop_it_and_nothing_is_written() {
        let lattice = FakeLattice::default().forwarding(LISTENER, &[(BLUE, 70), (GREEN, 30)]);
        let apis = Apis {
            vpc_lattice: &lattice,
            ..Apis::fake()
        };
        let refused = move_to(
            &apis,
            &plan(false),
            pair(90, 10),
            &[TargetWeights::new(KEY, pair(100, 0))],
        )
        .await
        .expect_err("changed under us");
        assert_eq!(
            refused.name().as_str(),
            "WeightsChangedExternally",
            "{refused}"
        );
        assert!(lattice.writes.lock().expect("writes").is_empty());
    }

    #[tokio::test]
    async fn a_target_reshaped_under_us_is_never_written() {
        for (lattice, said) in [
            (
                FakeLattice::default().forwarding(LISTENER, &[(BLUE, 90), (GREEN, 10), (RED, 5)]),
                "target groups the plan does not name: tg-00000000000000red",
            ),
            (
                FakeLattice::default().not_forwarding(LISTENER, "a fixed response 404"),
                "it answers a fixed response 404",
            ),
            (
                FakeLattice::default().forwarding(LISTENER, &[(GREEN, 10)]),
                "does not include the stable target group tg-0000000000000blue",
            ),
        ] {
            let valid = plan(false);
            let apis = Apis {
                vpc_lattice: &lattice,
                ..Apis::fake()
            };
            let routers = routers(&apis, &valid.plan);
            let reading = routers[0].read().await.expect("read");
            assert!(
                reading.observed.describe().contains(said),
                "{}",
                reading.observed.describe()
            );
            let refused = routers[0]
                .write(&reading, pair(50, 50))
                .await
                .expect_err("refused");
            assert!(
                matches!(refused, ShiftError::WeightsChangedExternally(_)),
                "{refused:?}"
            );
            assert!(lattice.writes.lock().expect("writes").is_empty());
        }
    }

    #[tokio::test]
    async fn the_gateway_api_controller_s_routes_are_refused_naming_what_it_manages() {
        let lattice = FakeLattice::default()
            .forwarding(RULE, &[(BLUE, 100)])
            .tag(
                SERVICE,
                "application-networking.k8s.aws/ManagedBy",
                "111122223333/blue/vpc-1",
            )
            .tag(RULE, "application-networking.k8s.aws/RouteName", "web");
        let valid = plan(true);
        let apis = Apis {
            vpc_lattice: &lattice,
            ..Apis::fake()
        };
        let routers = routers(&apis, &valid.plan);
        let claims = routers[0].controllers().await.expect("claims");
        let said: Vec<String> = claims.iter().map(ControllerClaim::describe).collect();
        assert_eq!(
            said,
            [
                "the service is managed by the AWS Gateway API Controller (managed by 111122223333/blue/vpc-1)",
                "the rule is managed by the AWS Gateway API Controller (route web)",
            ]
        );
        let refused = routers[0].inspect(60).await.err().expect("refused");
        assert_eq!(
            refused.name().as_str(),
            "TrafficOwnedByController",
            "{refused}"
        );
        assert!(
            refused.to_string().contains("nothing was written"),
            "{refused}"
        );
        assert!(lattice.writes.lock().expect("writes").is_empty());
    }

    #[tokio::test]
    async fn prepare_attaches_a_missing_canary_and_the_gate_reads_its_targets() {
        let lattice = FakeLattice::default()
            .forwarding(LISTENER, &[(BLUE, 100)])
            .target(GREEN, "10.0.1.7:8080", "initial")
            .target(BLUE, "10.0.0.7:8080", "healthy");
        let valid = plan(false);
        let apis = Apis {
            vpc_lattice: &lattice,
            ..Apis::fake()
        };
        let routers = routers(&apis, &valid.plan);
        let inspection = routers[0].inspect(60).await.expect("inspected");
        assert!(inspection.attach_canary);
        assert_eq!(inspection.reading.observed, Observed::Pair(pair(100, 0)));
        match routers[0].health(Side::Canary, 1).await.expect("health") {
            Health::NotReady(why) => assert_eq!(
                why,
                "canary target group tg-000000000000green: 0 healthy targets, 1 needed (others: 10.0.1.7:8080 initial)"
            ),
            _ => panic!("the canary has no healthy target"),
        }
        assert!(matches!(
            routers[0].health(Side::Stable, 1).await.expect("health"),
            Health::Ready
        ));
    }

    #[tokio::test]
    async fn detach_leaves_the_canary_alone_once_promoted() {
        let lattice =
            FakeLattice::default().forwarding(LISTENER, &[(BLUE, 0), (GREEN, 100), (RED, 0)]);
        let valid = plan(false);
        let apis = Apis {
            vpc_lattice: &lattice,
            ..Apis::fake()
        };
        let routers = routers(&apis, &valid.plan);
        assert_eq!(
            routers[0].detach(pair(0, 100)).await.expect("detached"),
            Detach::Detached
        );
        assert_eq!(lattice.now().action, groups(&[(GREEN, 100), (RED, 0)]));
        // A retry finds it detached and writes nothing more.
        assert_eq!(
            routers[0].detach(pair(0, 100)).await.expect("detached"),
            Detach::Detached
        );
        assert_eq!(lattice.writes.lock().expect("writes").len(), 1);
        assert!(routers[0].detach(pair(10, 90)).await.is_err());
    }
}
