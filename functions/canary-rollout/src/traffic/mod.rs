//! The traffic-router seam: one [`TrafficRouter`] per kind of traffic target (an ALB listener
//! or rule, a pair of Route 53 weighted records), built in one place ([`routers`]), and the
//! same router over its kind's reads only as a check's [`TargetReader`] ([`readers`]). Prepare,
//! set, verify, restore, detach and the target health gate are written once, against the
//! traits; what differs by kind lives in that kind's module. Adding a kind: see
//! `docs/extending.md`.

mod alb;
mod gitops;
mod global_accelerator;
mod nlb;
mod route53;
mod vpc_lattice;

pub use gitops::poll_interval;
pub use route53::{external_dns_claims, external_dns_claims_any_set};

use std::any::Any;
use std::time::Duration;

use async_trait::async_trait;
use canary_aws::{
    AlbApi, AlbReads, AwsError, AwsErrorKind, ExecutionsApi, GlobalAcceleratorApi,
    GlobalAcceleratorReads, Route53Api, Route53Reads, TestRuleApi, VpcLatticeApi, VpcLatticeReads,
};
use canary_core::limits::{join_bounded, MAX_REASON_BYTES};
use canary_core::ownership::{ControllerOwner, OwnerCheck};
use canary_core::{ForwardTarget, RolloutPlan, TrafficTarget, WeightPair};
use canary_kube::ArgoCdConnect;
use tokio::time::Instant;
use tracing::info;

use crate::error::ShiftError;

/// The AWS APIs the traffic operations use.
#[derive(Clone, Copy)]
pub struct Apis<'a> {
    /// Elastic Load Balancing: ALB and NLB targets.
    pub alb: &'a dyn AlbApi,
    /// An ALB's listener rules, for a test-traffic stage's own rule.
    pub test_rules: &'a dyn TestRuleApi,
    pub global_accelerator: &'a dyn GlobalAcceleratorApi,
    pub vpc_lattice: &'a dyn VpcLatticeApi,
    pub route53: &'a dyn Route53Api,
    pub executions: &'a dyn ExecutionsApi,
    /// Argo CD's namespace of the management cluster, for GitOps targets' writes; `None` where
    /// the caller has no such access (a person's CLI without `MANAGEMENT_ACCESS`).
    pub argocd: Option<&'a dyn ArgoCdConnect>,
}

#[cfg(any(test, feature = "fakes"))]
impl Apis<'static> {
    /// For decision tests: every API unused (`canary_aws::fakes::Unused`: a call is an error
    /// naming it), no other execution running, no management cluster. A test overrides what it
    /// exercises: `Apis { alb: &alb, ..Apis::fake() }`.
    pub fn fake() -> Self {
        use canary_aws::fakes::{NoExecutions, Unused};
        Apis {
            alb: &Unused,
            test_rules: &Unused,
            global_accelerator: &Unused,
            vpc_lattice: &Unused,
            route53: &Unused,
            executions: &NoExecutions,
            argocd: None,
        }
    }
}

impl<'a> Apis<'a> {
    /// The reads a check makes, of the same clients.
    pub fn reads(&self) -> Reads<'a> {
        Reads {
            alb: self.alb,
            global_accelerator: self.global_accelerator,
            vpc_lattice: self.vpc_lattice,
            route53: self.route53,
        }
    }
}

/// The reads a check makes of the targets' weights, one API per kind: see [`readers`].
#[derive(Clone, Copy)]
pub struct Reads<'a> {
    pub alb: &'a dyn AlbReads,
    pub global_accelerator: &'a dyn GlobalAcceleratorReads,
    pub vpc_lattice: &'a dyn VpcLatticeReads,
    pub route53: &'a dyn Route53Reads,
}

/// One plan target with the label its messages use: `trafficTargets[1] (route53:Z1:api.example.com.:A)`.
pub struct Located<'p> {
    pub label: String,
    pub target: &'p TrafficTarget,
}

impl Located<'_> {
    pub fn key(&self) -> String {
        self.target.key()
    }
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

/// A router for each of the plan's targets, in plan order: the one place that chooses a
/// router by kind. A Route 53 target `"via": "argocd"` writes through Argo CD.
pub fn routers<'a>(apis: &Apis<'a>, plan: &'a RolloutPlan) -> Vec<Box<dyn TrafficRouter + 'a>> {
    locate(&plan.traffic_targets)
        .into_iter()
        .map(|located| -> Box<dyn TrafficRouter + 'a> {
            match located.target {
                TrafficTarget::Alb(target) => Box::new(Router {
                    api: apis.alb,
                    target: target as &dyn ForwardTarget,
                    located,
                }),
                TrafficTarget::Nlb(target) => Box::new(Router {
                    api: apis.alb,
                    target: target as &dyn ForwardTarget,
                    located,
                }),
                TrafficTarget::GlobalAccelerator(target) => Box::new(Router {
                    api: apis.global_accelerator,
                    target,
                    located,
                }),
                TrafficTarget::VpcLattice(target) => Box::new(Router {
                    api: apis.vpc_lattice,
                    target,
                    located,
                }),
                TrafficTarget::Route53(target) => {
                    let records = Router {
                        api: apis.route53,
                        target,
                        located,
                    };
                    match target.gitops() {
                        Some(settings) => Box::new(gitops::GitOpsRouter::new(
                            records,
                            settings,
                            apis.argocd,
                            plan,
                        )),
                        None => Box::new(records),
                    }
                }
            }
        })
        .collect()
}

/// A reader for each of the plan's targets, in plan order: what a check needs, and the one
/// place that chooses a reader by kind. Each kind's reader is its router over the reads of its
/// API only, so a function that holds only [`Reads`] (evaluate-alarms) links none of the moves.
pub fn readers<'a>(reads: Reads<'a>, plan: &'a RolloutPlan) -> Vec<Box<dyn TargetReader + 'a>> {
    locate(&plan.traffic_targets)
        .into_iter()
        .map(|located| -> Box<dyn TargetReader + 'a> {
            match located.target {
                TrafficTarget::Alb(target) => Box::new(Router {
                    api: reads.alb,
                    target: target as &dyn ForwardTarget,
                    located,
                }),
                TrafficTarget::Nlb(target) => Box::new(Router {
                    api: reads.alb,
                    target: target as &dyn ForwardTarget,
                    located,
                }),
                TrafficTarget::GlobalAccelerator(target) => Box::new(Router {
                    api: reads.global_accelerator,
                    target,
                    located,
                }),
                TrafficTarget::VpcLattice(target) => Box::new(Router {
                    api: reads.vpc_lattice,
                    target,
                    located,
                }),
                TrafficTarget::Route53(target) => Box::new(Router {
                    api: reads.route53,
                    target,
                    located,
                }),
            }
        })
        .collect()
}

/// What every router holds: the API it calls, the plan's target of its kind, and where the
/// target sits in the plan. Each kind implements [`TrafficRouter`] for its own `Api`/`Target`.
struct Router<'a, Api: ?Sized, Target: ?Sized> {
    api: &'a Api,
    target: &'a Target,
    located: Located<'a>,
}

impl<Api: ?Sized, Target: ?Sized> Router<'_, Api, Target> {
    /// An AWS error met on this target.
    fn aws(&self, e: AwsError) -> ShiftError {
        ShiftError::aws(&self.located.label, e)
    }

    /// The target is not as a write needs it (`observed`): nothing is written over it.
    fn changed_externally(&self, observed: &Observed) -> ShiftError {
        ShiftError::WeightsChangedExternally(format!(
            "{}: {}",
            self.located.label,
            observed.describe()
        ))
    }

    /// Only a promoted target (stable weight 0) is detached.
    fn promoted(&self, expected: WeightPair) -> Result<(), ShiftError> {
        match expected.stable {
            0 => Ok(()),
            _ => Err(ShiftError::InvalidInput(format!(
                "{}: expected {expected}; only a promoted target (stable weight 0) is detached",
                self.located.label
            ))),
        }
    }

    /// A detach found the target elsewhere than promotion left it.
    fn not_detached(&self, found: &Observed, expected: WeightPair) -> ShiftError {
        ShiftError::WeightsChangedExternally(format!(
            "{}: found {}, promotion left {expected}; nothing detached",
            self.located.label,
            found.describe()
        ))
    }
}

/// A controller's claim on a target: what it manages (`the listener`, `record `green` (its
/// TXT registry record …)`) and who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerClaim {
    pub what: String,
    pub owner: ControllerOwner,
}

impl ControllerClaim {
    /// `the listener is managed by the AWS Load Balancer Controller (cluster blue, …)`.
    pub fn describe(&self) -> String {
        format!(
            "{} is managed by {} ({})",
            self.what, self.owner.controller, self.owner.owner
        )
    }
}

/// Every claim, `; `-joined and bounded: a refusal names all owners at once, so the operator
/// fixes them all before the next try.
pub fn describe_claims(claims: &[ControllerClaim]) -> String {
    let lines: Vec<String> = claims.iter().map(ControllerClaim::describe).collect();
    join_bounded(&lines, "; ", MAX_CLAIMS, MAX_REASON_BYTES)
}

/// At most this many claims are named in one message (then "and N more").
const MAX_CLAIMS: usize = 8;

/// Prepare's ownership check: a target a controller claims is refused, nothing written, naming
/// every controller, its owner and the ways out (`shape`) — unless the plan's `owner.ignore`
/// says why to go ahead, which then becomes a note.
async fn refuse_claimed(
    router: &(dyn TrafficRouter + '_),
    shape: &str,
    ignore: Option<&OwnerCheck>,
    notes: &mut Vec<String>,
) -> Result<(), ShiftError> {
    let claims = router.controllers().await?;
    if claims.is_empty() {
        return Ok(());
    }
    let described = describe_claims(&claims);
    if let Some(reason) = ignore.and_then(|o| o.ignore.as_ref()) {
        notes.push(format!("{described}, shifted anyway: {reason}"));
        return Ok(());
    }
    let which = match claims.len() {
        1 => "which puts its own weights back",
        _ => "each of which puts its own weights back",
    };
    Err(ShiftError::TrafficOwnedByController {
        path: router.label().to_owned(),
        message: format!(
            "{described}, {which}, undoing a step or a rollback; nothing was \
             written. {shape}, or set owner.ignore on this target to the reason the controller \
             will not reconcile it"
        ),
    })
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

/// What a read of a target found, and what its router needs to write from it without a second
/// read (compare-and-set): a snapshot of the router's own, opaque to everyone else (an ALB
/// router keeps the forward action as read, so that a write keeps everything but the weights).
pub struct Reading {
    pub observed: Observed,
    snapshot: Option<Box<dyn Any + Send + Sync>>,
}

impl Reading {
    fn of(observed: Observed) -> Self {
        Reading {
            observed,
            snapshot: None,
        }
    }

    fn with_snapshot<T: Any + Send + Sync>(observed: Observed, snapshot: T) -> Self {
        Reading {
            observed,
            snapshot: Some(Box::new(snapshot)),
        }
    }

    /// The snapshot the reading router kept, if it kept one of type `T`.
    fn snapshot<T: Any>(&self) -> Option<&T> {
        self.snapshot.as_ref()?.downcast_ref()
    }
}

/// What Prepare's read-only checks found that is particular to the target's kind.
pub struct Inspection {
    pub reading: Reading,
    /// The canary is not attached yet: Prepare attaches it at weight 0 (its one write).
    pub attach_canary: bool,
    pub kind: &'static str,
    pub sticky: bool,
    pub ttl_seconds: Option<i64>,
    pub notes: Vec<String>,
}

/// Which cluster's side of a target a health look is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The new cluster's, before traffic moves (the target health gate).
    Canary,
    /// The old cluster's, before a gradual rollback's step back sends it more.
    Stable,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Canary => "canary",
            Side::Stable => "stable",
        }
    }
}

/// One look at one side's health (the target health gate; a gradual rollback's step back).
pub enum Health {
    Ready,
    NotReady(String),
    /// Nothing to wait for on this target (a Route 53 record without a health check).
    NotGated(String),
}

/// What detaching the stable side after promotion did.
#[derive(Debug, PartialEq, Eq)]
pub enum Detach {
    /// The stable side is out of the target (now, or by an earlier attempt).
    Detached,
    /// The kind has nothing to detach (a Route 53 stable record stays at weight 0).
    NothingToDetach,
}

/// Whether what was written is in effect (`TrafficRouter::in_effect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InEffect {
    Yes,
    /// Written, not applied yet: the call that said so, and why (the target's words).
    NotYet {
        operation: &'static str,
        why: String,
    },
}

/// A target is in effect when `in_effect` says so within `within`, or fails with `not_yet`.
pub async fn await_in_effect(
    router: &dyn TrafficRouter,
    within: Duration,
    not_yet: impl FnOnce(&'static str, String) -> ShiftError,
) -> Result<(), ShiftError> {
    match router.in_effect(within).await? {
        InEffect::Yes => Ok(()),
        InEffect::NotYet { operation, why } => Err(not_yet(operation, why)),
    }
}

/// How long a restore, or prepare's attach at weight 0, waits for its writes to be in effect
/// (all its targets together) before it fails as transient (the state machine retries it; a
/// restore is not said done before).
pub const WRITE_IN_EFFECT_WAIT: Duration = Duration::from_secs(120);

/// `await_in_effect` for a write that is not a step's, by `deadline` (see
/// `WRITE_IN_EFFECT_WAIT`): not in effect then is an `AwsTransient` the state machine retries.
pub async fn settled(router: &dyn TrafficRouter, deadline: Instant) -> Result<(), ShiftError> {
    let left = deadline.saturating_duration_since(Instant::now());
    await_in_effect(router, left, |operation, why| {
        ShiftError::aws(
            router.label(),
            AwsError::new(AwsErrorKind::Transient, operation, why),
        )
    })
    .await
}

/// A traffic target as a check sees it: which it is, and where its weights are.
#[async_trait]
pub trait TargetReader: Send + Sync {
    /// The plan target it reads.
    fn located(&self) -> &Located<'_>;
    /// `trafficTargets[i] (<key>)`, for messages.
    fn label(&self) -> &str {
        &self.located().label
    }
    /// The target's identity (`TrafficTarget::key`), which the state's weights are keyed by.
    fn key(&self) -> String {
        self.located().key()
    }
    /// Where the target's weights are now.
    async fn read(&self) -> Result<Reading, ShiftError>;
    /// What it means that a check (or a retried set) finds the target elsewhere than this
    /// rollout last set it (`found` says where, naming the target). `None`, for most kinds:
    /// someone else took the target over; the rollout stops, writing nothing
    /// (`WeightsChangedExternally`, naming every such target). A kind whose weights the
    /// rollout's own chain carries gives the error that rolls back instead.
    fn moved(&self, _found: &str) -> Option<ShiftError> {
        None
    }
}

/// The moves a rollout makes on one traffic target. Every method names the target in its
/// errors (`label`); none decides anything about the rollout: compare-and-set, restore and
/// the gates are written once, over this trait.
#[async_trait]
pub trait TrafficRouter: TargetReader {
    /// Refuses weights that would not mean what they say on this kind of target.
    fn refuse_unwritable(&self, _pair: WeightPair) -> Result<(), ShiftError> {
        Ok(())
    }
    /// Writes `pair` from what `reading` found; returns once the target took it (Route 53:
    /// INSYNC). A target that applies it later (a Global Accelerator) says when in `in_effect`,
    /// which the caller waits for. The caller has compared (compare-and-set) and calls
    /// `refuse_unwritable` first.
    async fn write(&self, reading: &Reading, pair: WeightPair) -> Result<(), ShiftError>;
    /// Waits, at most about `within`, for what was written to be in effect, whether this
    /// attempt wrote it or an earlier one did (a retried step finds the weights set and writes
    /// nothing): a Global Accelerator still applying its last change. A step's bake starts
    /// after it; a restore is done only after it.
    async fn in_effect(&self, _within: Duration) -> Result<InEffect, ShiftError> {
        Ok(InEffect::Yes)
    }
    /// A restore's write: traffic at `pair` now. The same as `write`, except for a kind whose
    /// writes go through a reconciler (GitOps), which writes under it as well.
    async fn write_now(&self, reading: &Reading, pair: WeightPair) -> Result<(), ShiftError> {
        self.write(reading, pair).await
    }
    /// After a restore found or put the target at `baseline`: make whatever reconciles it want
    /// the baseline too (GitOps: the Secrets' weight annotations). Runs on every restore, even
    /// of a target already at its baseline, so a retried restore finishes the job.
    async fn keep(&self, _baseline: WeightPair) -> Result<(), ShiftError> {
        Ok(())
    }
    /// How long after a restore its reconciler may still write what it wanted before (a sync
    /// in flight), so the restore holds the baseline, putting it back as often as it moves.
    fn hold_seconds(&self) -> u64 {
        0
    }
    /// Prepare's read-only checks particular to the kind (it exists, has the plan's shape,
    /// stickiness, TTLs shorter than `shortest_bake_seconds`). Writes nothing.
    async fn inspect(&self, shortest_bake_seconds: i64) -> Result<Inspection, ShiftError>;
    /// One look at `side`'s health: its target group's targets, its record's health check.
    async fn health(&self, side: Side, min_healthy_targets: u32) -> Result<Health, ShiftError>;
    /// Every controller that reconciles this target's weights, as far as AWS shows it (the
    /// tags of an ALB rule, its listener and load balancer; ExternalDNS's TXT registry
    /// records): what each manages, and who. Prepare refuses such a target unless the plan
    /// says why; a person's restore warns.
    async fn controllers(&self) -> Result<Vec<ControllerClaim>, ShiftError>;
    /// After promotion: take the stable side out, if the target is still at `expected`.
    async fn detach(&self, expected: WeightPair) -> Result<Detach, ShiftError>;
}

/// Reads the target and keeps only what it found.
pub async fn observe<R: TargetReader + ?Sized>(router: &R) -> Result<Observed, ShiftError> {
    Ok(router.read().await?.observed)
}

/// Why weights are written: a rollout's move (`TrafficRouter::write`), or a restore's
/// (`TrafficRouter::write_now`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Step,
    Restore,
}

/// Writes `pair` after `refuse_unwritable`, and logs it.
pub async fn write(
    router: &dyn TrafficRouter,
    reading: &Reading,
    pair: WeightPair,
    why: Move,
) -> Result<(), ShiftError> {
    router.refuse_unwritable(pair)?;
    match why {
        Move::Step => router.write(reading, pair).await?,
        Move::Restore => router.write_now(reading, pair).await?,
    }
    info!(target_key = %router.key(), stable = pair.stable, canary = pair.canary, ?why, "weights written");
    Ok(())
}
