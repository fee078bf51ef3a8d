//! An AWS Global Accelerator endpoint group: the weights of its stable and canary endpoints
//! (the two clusters' load balancers in one Region), or its traffic dial (the new cluster's
//! Region's group, stepped 0 to 100 %).
//!
//! `UpdateEndpointGroup` replaces the whole endpoint list, so a weight write is the list as
//! read with two weights changed (compare-and-set: the caller compared what was read). A write
//! the accelerator refuses as busy (`TransactionInProgressException`, while its last change is
//! applied) is asked again. A write is in effect once the accelerator reads `DEPLOYED` again:
//! a step's bake starts then, and a restore is said done only then (`in_effect`, which the
//! caller bounds: a step by the plan's unjudged bound, a restore by its own retries).

use std::time::Duration;

use async_trait::async_trait;
use canary_aws::{
    AcceleratorEndpoint, AwsError, EndpointGroup, GlobalAcceleratorApi, GlobalAcceleratorReads,
};
use canary_core::ownership::alb_controller;
use canary_core::{GlobalAcceleratorTarget, WeightPair};
use tracing::info;

use super::{
    refuse_claimed, ControllerClaim, Detach, Health, InEffect, Inspection, Located, Observed,
    Reading, Router, Side, TargetReader, TrafficRouter,
};
use crate::error::ShiftError;

type AcceleratorRouter<'a> = Router<'a, dyn GlobalAcceleratorApi + 'a, GlobalAcceleratorTarget>;

/// How often, and after how long first, a write refused as busy is asked again (doubling):
/// 1 + 2 + 4 + 8 s, well inside shift-weights' timeout.
const BUSY_RETRIES: u32 = 4;
const BUSY_FIRST_DELAY: Duration = Duration::from_secs(1);

impl<A: GlobalAcceleratorReads + ?Sized> Router<'_, A, GlobalAcceleratorTarget> {
    async fn group(&self) -> Result<EndpointGroup, ShiftError> {
        self.api
            .endpoint_group(&self.target.endpoint_group_arn)
            .await
            .map_err(|e| self.aws(e))
    }
}

impl AcceleratorRouter<'_> {
    /// `write`, asked again while the accelerator answers that a transaction is in progress.
    async fn unless_busy<F, Fut>(&self, write: F) -> Result<(), ShiftError>
    where
        F: Fn() -> Fut + Send + Sync,
        Fut: std::future::Future<Output = Result<(), AwsError>> + Send,
    {
        let mut delay = BUSY_FIRST_DELAY;
        let mut retries = 0;
        loop {
            match write().await {
                Err(e) if e.is_busy() && retries < BUSY_RETRIES => {
                    retries += 1;
                    info!(target_key = %self.key(), retries, "accelerator busy; asking again");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                other => return other.map_err(|e| self.aws(e)),
            }
        }
    }
}

#[async_trait]
impl<A: GlobalAcceleratorReads + ?Sized> TargetReader for Router<'_, A, GlobalAcceleratorTarget> {
    fn located(&self) -> &Located<'_> {
        &self.located
    }

    async fn read(&self) -> Result<Reading, ShiftError> {
        let group = self.group().await?;
        Ok(Reading::with_snapshot(observed(self.target, &group), group))
    }
}

#[async_trait]
impl TrafficRouter for AcceleratorRouter<'_> {
    /// One `UpdateEndpointGroup`: the list as read with the two weights changed (the canary
    /// added if it was not there), or the dial. The caller waits for `DEPLOYED` (`in_effect`).
    async fn write(&self, reading: &Reading, pair: WeightPair) -> Result<(), ShiftError> {
        let Some(group) = reading.snapshot::<EndpointGroup>() else {
            return Err(self.changed_externally(&reading.observed));
        };
        let arn = self.target.endpoint_group_arn.as_str();
        match self.target.endpoints() {
            None => {
                let percent = f32::from(pair.canary);
                self.unless_busy(|| self.api.set_traffic_dial(arn, percent))
                    .await
            }
            Some((stable, canary)) => {
                let endpoints = with_weights(&group.endpoints, stable, canary, pair)?;
                self.unless_busy(|| self.api.set_endpoints(arn, &endpoints))
                    .await
            }
        }
    }

    /// The accelerator reads `DEPLOYED` within `within`.
    async fn in_effect(&self, within: Duration) -> Result<InEffect, ShiftError> {
        let accelerator = self.target.accelerator_arn();
        let deployed = self
            .api
            .wait_deployed(accelerator, within)
            .await
            .map_err(|e| self.aws(e))?;
        Ok(match deployed {
            true => InEffect::Yes,
            false => InEffect::NotYet {
                operation: "DescribeAccelerator",
                why: format!(
                    "accelerator {accelerator} still reads IN_PROGRESS after {} s: the change is written, not in effect",
                    within.as_secs()
                ),
            },
        })
    }

    /// The accelerator's tags.
    async fn controllers(&self) -> Result<Vec<ControllerClaim>, ShiftError> {
        let tags = self
            .api
            .tags(self.target.accelerator_arn())
            .await
            .map_err(|e| self.aws(e))?;
        Ok(alb_controller(&tags)
            .map(|owner| ControllerClaim {
                what: "the accelerator".to_owned(),
                owner,
            })
            .into_iter()
            .collect())
    }

    async fn inspect(&self, _shortest_bake_seconds: i64) -> Result<Inspection, ShiftError> {
        let group = self.group().await?;
        let mut notes = Vec::new();
        refuse_claimed(
            self,
            "Shift an accelerator created outside the clusters (docs/traffic/global-accelerator.md)",
            self.target.owner.as_ref(),
            &mut notes,
        )
        .await?;
        let attach_canary = match self.target.endpoints() {
            Some((_, canary)) => {
                let preserving: Vec<&str> = group
                    .endpoints
                    .iter()
                    .filter(|e| e.client_ip_preservation == Some(true))
                    .map(|e| e.id.as_str())
                    .collect();
                if !preserving.is_empty() {
                    notes.push(format!(
                        "client IP preservation is on for {}: Global Accelerator may keep a client on the endpoint it used whatever the weights",
                        preserving.join(", ")
                    ));
                }
                !group.endpoints.iter().any(|e| e.id == canary)
            }
            None => {
                notes.push(format!(
                    "the traffic dial of the endpoint group in {} acts on new connections only, and Global Accelerator ignores it on failover (when the other Regions' endpoints are unhealthy, their traffic comes here whatever the dial)",
                    group.region
                ));
                false
            }
        };
        Ok(Inspection {
            reading: Reading::with_snapshot(observed(self.target, &group), group),
            attach_canary,
            kind: "globalAccelerator",
            sticky: false,
            ttl_seconds: None,
            notes,
        })
    }

    /// The side's endpoint's health (endpoint weights), or every endpoint of the new Region's
    /// group (traffic dial: the stable side is the accelerator's other Regions).
    async fn health(&self, side: Side, min_healthy_targets: u32) -> Result<Health, ShiftError> {
        let group = self.group().await?;
        let endpoints: Vec<&AcceleratorEndpoint> = match (self.target.endpoints(), side) {
            (Some((_, canary)), Side::Canary) => {
                group.endpoints.iter().filter(|e| e.id == canary).collect()
            }
            (Some((stable, _)), Side::Stable) => {
                group.endpoints.iter().filter(|e| e.id == stable).collect()
            }
            (None, Side::Canary) => group.endpoints.iter().collect(),
            (None, Side::Stable) => {
                return Ok(Health::NotGated(
                    "the stable side of a traffic dial is the accelerator's other Regions"
                        .to_owned(),
                ))
            }
        };
        let healthy = endpoints
            .iter()
            .filter(|e| e.health.as_deref() == Some("HEALTHY"))
            .count();
        let not_healthy: Vec<String> = endpoints
            .iter()
            .filter(|e| e.health.as_deref() != Some("HEALTHY"))
            .map(|e| {
                format!(
                    "{} is {}",
                    e.id,
                    e.health.as_deref().unwrap_or("of unknown health")
                )
            })
            .collect();
        let wanted = usize::try_from(min_healthy_targets.max(1)).unwrap_or(usize::MAX);
        if endpoints.is_empty() {
            return Ok(Health::NotReady(format!(
                "the {} side has no endpoint in the endpoint group",
                side.name()
            )));
        }
        if not_healthy.is_empty() && healthy >= wanted.min(endpoints.len()) {
            Ok(Health::Ready)
        } else {
            Ok(Health::NotReady(format!(
                "{} endpoint(s): {}",
                side.name(),
                not_healthy.join(", ")
            )))
        }
    }

    /// The stable endpoint stays at weight 0 (the dial at 100): nothing to detach.
    async fn detach(&self, _expected: WeightPair) -> Result<Detach, ShiftError> {
        Ok(Detach::NothingToDetach)
    }
}

/// The group's list with the stable and the canary endpoint at `pair` (the canary appended if
/// missing, its client IP preservation left to Global Accelerator's default); everything else as
/// read. Global Accelerator's weights are 0 to 255.
fn with_weights(
    endpoints: &[AcceleratorEndpoint],
    stable: &str,
    canary: &str,
    pair: WeightPair,
) -> Result<Vec<AcceleratorEndpoint>, ShiftError> {
    let weight = |w: u16| {
        u8::try_from(w).map_err(|_| {
            ShiftError::InvalidInput(format!("weight {w} is beyond Global Accelerator's 0-255"))
        })
    };
    let (stable_weight, canary_weight) = (weight(pair.stable)?, weight(pair.canary)?);
    let mut written: Vec<AcceleratorEndpoint> = endpoints.to_vec();
    if !written.iter().any(|e| e.id == canary) {
        written.push(AcceleratorEndpoint {
            id: canary.to_owned(),
            weight: 0,
            client_ip_preservation: None,
            health: None,
        });
    }
    for endpoint in &mut written {
        if endpoint.id == stable {
            endpoint.weight = stable_weight;
        } else if endpoint.id == canary {
            endpoint.weight = canary_weight;
        }
    }
    Ok(written)
}

/// The weights (or dial), or how the group no longer has the plan's shape.
fn observed(target: &GlobalAcceleratorTarget, group: &EndpointGroup) -> Observed {
    let Some((stable, canary)) = target.endpoints() else {
        // The dial is a float in the API; the rollout only ever writes whole percents.
        let dial = group.traffic_dial.clamp(0.0, 100.0).round() as u16;
        return Observed::Pair(WeightPair {
            stable: 100 - dial,
            canary: dial,
        });
    };
    let weight_of = |id: &str| {
        group
            .endpoints
            .iter()
            .find(|e| e.id == id)
            .map(|e| u16::from(e.weight))
    };
    let foreign: Vec<String> = group
        .endpoints
        .iter()
        .filter(|e| e.id != stable && e.id != canary && e.weight > 0)
        .map(|e| format!("{} (weight {})", e.id, e.weight))
        .collect();
    if !foreign.is_empty() {
        return Observed::Reshaped(format!(
            "the endpoint group also sends traffic to endpoints the plan does not name: {}",
            foreign.join(", ")
        ));
    }
    let Some(stable_weight) = weight_of(stable) else {
        return Observed::Reshaped(format!(
            "the endpoint group does not hold the stable endpoint {stable}"
        ));
    };
    Observed::Pair(WeightPair {
        stable: stable_weight,
        canary: weight_of(canary).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use canary_aws::fakes::FakeAccelerator;
    use canary_core::plan::ValidPlan;
    use canary_core::{NamedError, RolloutPlan, TargetWeights, WeightPair};
    use serde_json::json;

    use crate::error::ShiftError;
    use crate::prepare::check_targets;
    use crate::set::move_to;
    use crate::traffic::Apis;

    const GROUP: &str = "arn:aws:globalaccelerator::123456789012:accelerator/abcd-1234/listener/0123abcd/endpoint-group/098765zyxwvu";
    const BLUE: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/blue/50dc6c495c0c9188";
    const GREEN: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/green/50dc6c495c0c9189";
    const OTHER: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/other/50dc6c495c0c9180";

    fn plan(target: serde_json::Value) -> ValidPlan {
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"globalAccelerator": target}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        }))
        .expect("a valid plan")
    }

    fn weights_plan() -> ValidPlan {
        plan(
            json!({"endpointGroupArn": GROUP, "stableEndpointId": BLUE, "canaryEndpointId": GREEN}),
        )
    }

    fn at(stable: u16, canary: u16) -> Vec<TargetWeights> {
        vec![TargetWeights::new(GROUP, WeightPair { stable, canary })]
    }

    /// The step from the baseline (100 / 0) to 10 %, on `ga`.
    async fn step_to_10(
        ga: &FakeAccelerator,
        valid: &ValidPlan,
    ) -> Result<Vec<TargetWeights>, ShiftError> {
        let apis = Apis {
            global_accelerator: ga,
            ..Apis::fake()
        };
        let desired = WeightPair {
            stable: 90,
            canary: 10,
        };
        move_to(&apis, valid, desired, &at(100, 0)).await
    }

    fn weights(ga: &FakeAccelerator) -> Vec<(&'static str, u8)> {
        let name = |id: &str| {
            [BLUE, GREEN, OTHER]
                .into_iter()
                .find(|k| *k == id)
                .unwrap_or("?")
        };
        ga.now()
            .endpoints
            .iter()
            .map(|e| (name(&e.id), e.weight))
            .collect()
    }

    fn nothing_written(ga: &FakeAccelerator) -> bool {
        ga.writes.lock().map(|w| w.is_empty()).unwrap_or(false)
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_rewrites_the_whole_list_keeping_other_endpoints_and_asks_again_while_busy() {
        let ga = FakeAccelerator::default()
            .group(&[(BLUE, 100), (GREEN, 0), (OTHER, 0)], 100.0)
            .busy(2);
        let moved = step_to_10(&ga, &weights_plan())
            .await
            .expect("moved after two busy answers");
        assert_eq!(moved, at(90, 10));
        assert_eq!(weights(&ga), [(BLUE, 90), (GREEN, 10), (OTHER, 0)]);
        assert_eq!(*ga.writes.lock().unwrap(), ["endpoints"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_accelerator_busy_past_the_retries_is_a_retryable_error_and_nothing_changed() {
        let ga = FakeAccelerator::default()
            .group(&[(BLUE, 100), (GREEN, 0)], 100.0)
            .busy(9);
        let err = step_to_10(&ga, &weights_plan())
            .await
            .expect_err("still busy");
        assert_eq!(err.name().as_str(), "AwsTransient", "{err}");
        assert!(
            err.to_string().contains("TransactionInProgressException"),
            "{err}"
        );
        assert_eq!(weights(&ga), [(BLUE, 100), (GREEN, 0)]);
        assert!(nothing_written(&ga));
    }

    // Paused: the waits are read from one deadline, exactly.
    #[tokio::test(start_paused = true)]
    async fn a_step_not_deployed_within_the_unjudged_bound_rolls_back_even_when_a_retry_finds_it_written(
    ) {
        // An earlier attempt wrote 90/10; the accelerator still applies it.
        let ga = FakeAccelerator::default()
            .group(&[(BLUE, 90), (GREEN, 10)], 100.0)
            .never_deploys();
        let err = step_to_10(&ga, &weights_plan())
            .await
            .expect_err("not deployed");
        assert_eq!(err.name().as_str(), "StepNotInEffect", "{err}");
        assert!(
            !err.name().is_retryable(),
            "a retry would wait again, unjudged"
        );
        let said = err.to_string();
        assert!(said.contains("IN_PROGRESS after 30 s"), "{said}");
        assert!(
            said.contains("step stable 90 / canary 10 not in effect"),
            "{said}"
        );
        assert!(said.contains("rolling back"), "{said}");
        assert!(nothing_written(&ga), "nothing written again");
        assert_eq!(
            *ga.waits.lock().unwrap(),
            [Duration::from_secs(30)],
            "the default unjudged bound: three 10 s check intervals"
        );
    }

    // Paused: the waits are read from one deadline, exactly.
    #[tokio::test(start_paused = true)]
    async fn a_steps_wait_is_the_plans_unjudged_bound_capped_at_three_minutes() {
        for (max_unjudged, waited) in [(45, 45), (900, 180)] {
            let ga = FakeAccelerator::default().group(&[(BLUE, 100), (GREEN, 0)], 100.0);
            let mut valid = weights_plan();
            valid.plan.analysis = Some(
                serde_json::from_value(json!({"maxUnjudgedSeconds": max_unjudged}))
                    .expect("an analysis section"),
            );
            step_to_10(&ga, &valid).await.expect("stepped");
            assert_eq!(*ga.waits.lock().unwrap(), [Duration::from_secs(waited)]);
        }
    }

    // Paused: the waits are read from one deadline, exactly.
    #[tokio::test(start_paused = true)]
    async fn a_restore_is_not_done_while_the_accelerator_still_applies_it() {
        // An earlier attempt wrote the baseline back; the accelerator still applies it.
        let ga = FakeAccelerator::default()
            .group(&[(BLUE, 100), (GREEN, 0)], 100.0)
            .never_deploys();
        let apis = Apis {
            global_accelerator: &ga,
            ..Apis::fake()
        };
        let valid = weights_plan();
        let err = crate::restore::restore(&apis, &valid.plan, &at(100, 0), Some(&at(90, 10)), None)
            .await
            .expect_err("not in effect yet");
        assert_eq!(err.name().as_str(), "AwsTransient", "retried: {err}");
        assert!(err.to_string().contains("IN_PROGRESS"), "{err}");
        assert!(nothing_written(&ga));
        assert_eq!(
            *ga.waits.lock().unwrap(),
            [crate::traffic::WRITE_IN_EFFECT_WAIT]
        );
    }

    #[tokio::test]
    async fn a_traffic_dial_is_stepped_and_read_as_the_canarys_share() {
        let ga = FakeAccelerator::default().group(&[(GREEN, 128)], 0.0);
        let dial = plan(json!({"endpointGroupArn": GROUP, "shift": "trafficDial"}));
        let apis = Apis {
            global_accelerator: &ga,
            ..Apis::fake()
        };
        let checked = check_targets(&apis, &dial).await.expect("checked");
        assert!(
            checked[0]
                .report
                .notes
                .iter()
                .any(|n| n.contains("ignores it on failover")),
            "{:?}",
            checked[0].report.notes
        );
        assert_eq!(step_to_10(&ga, &dial).await.expect("dialled"), at(90, 10));
        assert_eq!(ga.now().traffic_dial, 10.0);
        assert_eq!(weights(&ga), [(GREEN, 128)], "the endpoints untouched");
    }

    #[tokio::test]
    async fn another_endpoint_taking_traffic_stops_the_step_and_nothing_is_written() {
        let ga = FakeAccelerator::default().group(&[(BLUE, 100), (GREEN, 0), (OTHER, 5)], 100.0);
        let err = step_to_10(&ga, &weights_plan())
            .await
            .expect_err("reshaped");
        let ShiftError::WeightsChangedExternally(why) = &err else {
            panic!("{err:?}")
        };
        assert!(why.contains(&format!("{OTHER} (weight 5)")), "{why}");
        assert!(nothing_written(&ga));
    }

    #[test]
    fn a_weight_beyond_global_accelerators_255_is_refused_before_any_write() {
        let endpoints = FakeAccelerator::default()
            .group(&[(BLUE, 100)], 100.0)
            .now()
            .endpoints;
        let pair = WeightPair {
            stable: 300,
            canary: 0,
        };
        let Err(ShiftError::InvalidInput(why)) = super::with_weights(&endpoints, BLUE, GREEN, pair)
        else {
            panic!("weight 300 was accepted")
        };
        assert!(
            why.contains("weight 300 is beyond Global Accelerator's 0-255"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn an_accelerator_the_load_balancer_controller_manages_is_refused_naming_it() {
        let ga = FakeAccelerator::default()
            .group(&[(BLUE, 100)], 100.0)
            .tag("elbv2.k8s.aws/cluster", "blue");
        let apis = Apis {
            global_accelerator: &ga,
            ..Apis::fake()
        };
        let Err(err) = check_targets(&apis, &weights_plan()).await else {
            panic!("a controller's accelerator was accepted")
        };
        let ShiftError::TrafficOwnedByController { message, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(
            message.contains(
                "the accelerator is managed by the AWS Load Balancer Controller (cluster blue)"
            ),
            "{message}"
        );
        assert!(nothing_written(&ga));
    }
}
