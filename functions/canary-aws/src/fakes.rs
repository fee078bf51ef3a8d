//! In-memory stand-ins for the traffic APIs, for the decision tests of every crate (feature
//! `fakes`, enabled by dev-dependencies only): one of each, here, instead of a copy per test
//! file.
//!
//! - [`Unused`]: any traffic or signal API a test does not exercise; every call is an error
//!   saying so.
//! - [`NoExecutions`]: Step Functions with no other execution running.
//! - [`FakeCloudWatch`]: alarms by name in the states a test sets; no metric data.
//! - [`MetricAnswers`]: no alarms; metric data as a test's function answers it.
//! - [`FakeAlb`]: listeners forwarding to target groups at weights, with a throttle to inject
//!   and a controller that puts a listener's weights back after every write.
//! - [`FakeRoute53`]: one stable/canary pair of weighted records (`blue`/`green`), with a change
//!   that may stay PENDING and a canary health check.
//! - [`FakeAccelerator`]: one Global Accelerator endpoint group, with writes refused as busy
//!   and an accelerator that never deploys.
//! - [`FakeLattice`]: one VPC Lattice listener or rule forwarding to target groups at weights,
//!   with tags on its service, listener and rule, and its target groups' targets.
//!
//! What they do not model: regions and accounts (every ARN answers), ELBv2, Route 53, Global
//! Accelerator and VPC Lattice validation of the values written (weights' ranges, the
//! 10-endpoint and 10-target-group limits: the over-the-wire tests against moto and its harness
//! do), ExternalDNS registry records (none), controllers' tags beyond the accelerator's and the
//! Lattice target's, pagination, composite alarms' rules, and
//! CloudWatch metrics.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use canary_core::target_health::TargetState;
use canary_core::{ForwardTarget, Route53Target, VpcLatticeTarget};

use crate::alb::{
    AlbApi, AlbReads, ForwardAction, ForwardRead, TargetGroupInfo, TargetGroupWeight,
};
use crate::cloudwatch::{AlarmState, AlarmStateValue, CloudWatchApi, MetricQuery, MetricSeries};
use crate::eks::AddonHealth;
use crate::error::{AwsError, AwsErrorKind};
use crate::executions::{ExecutionHistory, ExecutionListing, ExecutionsApi, Listed};
use crate::global_accelerator::{
    AcceleratorEndpoint, EndpointGroup, GlobalAcceleratorApi, GlobalAcceleratorReads,
};
use crate::query_error::QueryError;
use crate::route53::{NewWeightedRecord, Route53Api, Route53Reads, TxtRecord, WeightedRecord};
use crate::vpc_lattice::{LatticeAction, LatticeRead, VpcLatticeApi, VpcLatticeReads};

/// A test's fake is poisoned only after a panic in another of its assertions: go on with it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unused(operation: &'static str) -> AwsError {
    AwsError::new(
        AwsErrorKind::Rejected,
        operation,
        "this test gives no fake for it (canary_aws::fakes::Unused)",
    )
}

/// A throttle, as ELBv2 and Route 53 answer one.
pub fn throttled(operation: &'static str) -> AwsError {
    AwsError {
        kind: AwsErrorKind::Transient,
        operation,
        code: Some("Throttling".into()),
        message: "Rate exceeded".into(),
    }
}

/// Stands in for every traffic or signal API a test does not use: each call fails, naming it.
pub struct Unused;

#[async_trait]
impl AlbReads for Unused {
    async fn read_forward(&self, _: &dyn ForwardTarget) -> Result<ForwardRead, AwsError> {
        Err(unused("DescribeListeners"))
    }
}

#[async_trait]
impl crate::TestRuleApi for Unused {
    async fn rules(&self, _: &str) -> Result<Vec<crate::ListenerRule>, AwsError> {
        Err(unused("DescribeRules"))
    }
    async fn address(&self, _: &str) -> Result<crate::ListenerAddress, AwsError> {
        Err(unused("DescribeListeners"))
    }
    async fn create_rule(
        &self,
        _: &str,
        _: i64,
        _: &canary_core::test_traffic::TestConditions,
        _: &str,
        _: &BTreeMap<String, String>,
    ) -> Result<String, AwsError> {
        Err(unused("CreateRule"))
    }
    async fn delete_rule(&self, _: &str) -> Result<(), AwsError> {
        Err(unused("DeleteRule"))
    }
    async fn rule_tags(
        &self,
        _: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AwsError> {
        Err(unused("DescribeTags"))
    }
}

#[async_trait]
impl AlbApi for Unused {
    async fn write_forward(
        &self,
        _: &dyn ForwardTarget,
        _: &ForwardAction,
        _: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        Err(unused("ModifyListener"))
    }
    async fn target_groups(&self, _: &str, _: &[String]) -> Result<Vec<TargetGroupInfo>, AwsError> {
        Err(unused("DescribeTargetGroups"))
    }
    async fn target_health(&self, _: &str) -> Result<Vec<TargetState>, AwsError> {
        Err(unused("DescribeTargetHealth"))
    }
    async fn tags(&self, _: &str, _: &str) -> Result<BTreeMap<String, String>, AwsError> {
        Err(unused("DescribeTags"))
    }
}

#[async_trait]
impl GlobalAcceleratorReads for Unused {
    async fn endpoint_group(&self, _: &str) -> Result<EndpointGroup, AwsError> {
        Err(unused("DescribeEndpointGroup"))
    }
}

#[async_trait]
impl GlobalAcceleratorApi for Unused {
    async fn set_endpoints(&self, _: &str, _: &[AcceleratorEndpoint]) -> Result<(), AwsError> {
        Err(unused("UpdateEndpointGroup"))
    }
    async fn set_traffic_dial(&self, _: &str, _: f32) -> Result<(), AwsError> {
        Err(unused("UpdateEndpointGroup"))
    }
    async fn wait_deployed(&self, _: &str, _: Duration) -> Result<bool, AwsError> {
        Err(unused("DescribeAccelerator"))
    }
    async fn tags(&self, _: &str) -> Result<BTreeMap<String, String>, AwsError> {
        Err(unused("ListTagsForResource"))
    }
}

/// One Global Accelerator endpoint group (`group`), in `us-east-1`, deployed at once unless
/// `never_deploys`; `busy(n)` makes its next `n` writes answer TransactionInProgressException.
#[derive(Default)]
pub struct FakeAccelerator {
    group: Mutex<Option<EndpointGroup>>,
    busy: Mutex<usize>,
    never_deploys: bool,
    tags: BTreeMap<String, String>,
    /// Every write, in order: `endpoints` or `dial`.
    pub writes: Mutex<Vec<&'static str>>,
    /// How long each wait for `DEPLOYED` was allowed, in order.
    pub waits: Mutex<Vec<Duration>>,
}

impl FakeAccelerator {
    /// The group holds these `(endpoint, weight)` and dials `dial` %.
    pub fn group(self, endpoints: &[(&str, u8)], dial: f32) -> Self {
        *lock(&self.group) = Some(EndpointGroup {
            region: "us-east-1".to_owned(),
            traffic_dial: dial,
            endpoints: endpoints
                .iter()
                .map(|(id, weight)| AcceleratorEndpoint {
                    id: (*id).to_owned(),
                    weight: *weight,
                    client_ip_preservation: Some(true),
                    health: Some("HEALTHY".to_owned()),
                })
                .collect(),
        });
        self
    }

    /// The next `writes` writes answer TransactionInProgressException.
    pub fn busy(self, writes: usize) -> Self {
        *lock(&self.busy) = writes;
        self
    }

    /// The accelerator stays IN_PROGRESS.
    pub fn never_deploys(mut self) -> Self {
        self.never_deploys = true;
        self
    }

    /// The accelerator carries `key`=`value`.
    pub fn tag(mut self, key: &str, value: &str) -> Self {
        self.tags.insert(key.to_owned(), value.to_owned());
        self
    }

    /// The group as it is now.
    pub fn now(&self) -> EndpointGroup {
        lock(&self.group).clone().expect("the fake has a group")
    }

    fn write(&self, change: impl FnOnce(&mut EndpointGroup)) -> Result<(), AwsError> {
        let mut busy = lock(&self.busy);
        if *busy > 0 {
            *busy -= 1;
            return Err(AwsError {
                kind: AwsErrorKind::Transient,
                operation: "UpdateEndpointGroup",
                code: Some("TransactionInProgressException".into()),
                message: "There's already a transaction in progress.".into(),
            });
        }
        let mut group = lock(&self.group);
        change(group.as_mut().expect("the fake has a group"));
        Ok(())
    }
}

#[async_trait]
impl GlobalAcceleratorReads for FakeAccelerator {
    async fn endpoint_group(&self, _: &str) -> Result<EndpointGroup, AwsError> {
        Ok(self.now())
    }
}

#[async_trait]
impl GlobalAcceleratorApi for FakeAccelerator {
    async fn set_endpoints(
        &self,
        _: &str,
        endpoints: &[AcceleratorEndpoint],
    ) -> Result<(), AwsError> {
        self.write(|g| g.endpoints = endpoints.to_vec())?;
        lock(&self.writes).push("endpoints");
        Ok(())
    }
    async fn set_traffic_dial(&self, _: &str, percent: f32) -> Result<(), AwsError> {
        self.write(|g| g.traffic_dial = percent)?;
        lock(&self.writes).push("dial");
        Ok(())
    }
    async fn wait_deployed(&self, _: &str, within: Duration) -> Result<bool, AwsError> {
        lock(&self.waits).push(within);
        Ok(!self.never_deploys)
    }
    async fn tags(&self, _: &str) -> Result<BTreeMap<String, String>, AwsError> {
        Ok(self.tags.clone())
    }
}

#[async_trait]
impl VpcLatticeReads for Unused {
    async fn read_action(&self, _: &VpcLatticeTarget) -> Result<LatticeRead, AwsError> {
        Err(unused("GetRule"))
    }
}

#[async_trait]
impl VpcLatticeApi for Unused {
    async fn write_forward(
        &self,
        _: &VpcLatticeTarget,
        _: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        Err(unused("UpdateRule"))
    }
    async fn target_health(
        &self,
        _: &VpcLatticeTarget,
        _: &str,
    ) -> Result<Vec<TargetState>, AwsError> {
        Err(unused("ListTargets"))
    }
    async fn tags(
        &self,
        _: &VpcLatticeTarget,
        _: &str,
    ) -> Result<BTreeMap<String, String>, AwsError> {
        Err(unused("ListTagsForResource"))
    }
}

/// One VPC Lattice listener or rule (ARN `arn`) and what it does; the tags of ARNs; each target
/// group's targets (`(target, status)`). A throttle for the next `n` reads or writes.
#[derive(Default)]
pub struct FakeLattice {
    read: Mutex<Option<LatticeRead>>,
    tags: BTreeMap<String, BTreeMap<String, String>>,
    targets: BTreeMap<String, Vec<TargetState>>,
    throttles: Mutex<usize>,
    /// Every write, in order: the weights written.
    pub writes: Mutex<Vec<Vec<TargetGroupWeight>>>,
}

impl FakeLattice {
    /// The action at `arn` forwards to these `(target group ID, weight)`.
    pub fn forwarding(self, arn: &str, groups: &[(&str, u16)]) -> Self {
        *lock(&self.read) = Some(LatticeRead {
            arn: arn.to_owned(),
            action: LatticeAction::Forward(
                groups
                    .iter()
                    .map(|(id, weight)| TargetGroupWeight {
                        arn: (*id).to_owned(),
                        weight: *weight,
                    })
                    .collect(),
            ),
        });
        self
    }

    /// The action at `arn` does not forward (`what` it does instead).
    pub fn not_forwarding(self, arn: &str, what: &str) -> Self {
        *lock(&self.read) = Some(LatticeRead {
            arn: arn.to_owned(),
            action: LatticeAction::NotForward(what.to_owned()),
        });
        self
    }

    /// `arn` carries `key`=`value`.
    pub fn tag(mut self, arn: &str, key: &str, value: &str) -> Self {
        self.tags
            .entry(arn.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        self
    }

    /// Target group `group` holds `target` in `status` (`healthy`, `unhealthy`, ...).
    pub fn target(mut self, group: &str, target: &str, status: &str) -> Self {
        self.targets
            .entry(group.to_owned())
            .or_default()
            .push(TargetState {
                target: target.to_owned(),
                state: status.to_owned(),
                reason: None,
            });
        self
    }

    /// The next `calls` reads or writes are throttled.
    pub fn throttle(self, calls: usize) -> Self {
        *lock(&self.throttles) = calls;
        self
    }

    /// The action as it is now.
    pub fn now(&self) -> LatticeRead {
        lock(&self.read).clone().expect("the fake has an action")
    }

    fn throttled(&self, operation: &'static str) -> Result<(), AwsError> {
        let mut throttles = lock(&self.throttles);
        if *throttles > 0 {
            *throttles -= 1;
            return Err(throttled(operation));
        }
        Ok(())
    }
}

#[async_trait]
impl VpcLatticeReads for FakeLattice {
    async fn read_action(&self, _: &VpcLatticeTarget) -> Result<LatticeRead, AwsError> {
        self.throttled("GetRule")?;
        Ok(self.now())
    }
}

#[async_trait]
impl VpcLatticeApi for FakeLattice {
    async fn write_forward(
        &self,
        _: &VpcLatticeTarget,
        weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        self.throttled("UpdateRule")?;
        let mut read = lock(&self.read);
        let current = read.as_mut().expect("the fake has an action");
        current.action = LatticeAction::Forward(weights.to_vec());
        lock(&self.writes).push(weights.to_vec());
        Ok(())
    }
    async fn target_health(
        &self,
        _: &VpcLatticeTarget,
        group: &str,
    ) -> Result<Vec<TargetState>, AwsError> {
        Ok(self.targets.get(group).cloned().unwrap_or_default())
    }
    async fn tags(
        &self,
        _: &VpcLatticeTarget,
        arn: &str,
    ) -> Result<BTreeMap<String, String>, AwsError> {
        Ok(self.tags.get(arn).cloned().unwrap_or_default())
    }
}

#[async_trait]
impl Route53Reads for Unused {
    async fn records(&self, _: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError> {
        Err(unused("ListResourceRecordSets"))
    }
}

#[async_trait]
impl Route53Api for Unused {
    async fn write_weights(&self, _: &Route53Target, _: u16, _: u16) -> Result<String, AwsError> {
        Err(unused("ChangeResourceRecordSets"))
    }
    async fn wait_in_sync(&self, _: &str) -> Result<bool, AwsError> {
        Err(unused("GetChange"))
    }
    async fn health_check_reports(&self, _: &str) -> Result<Vec<String>, AwsError> {
        Err(unused("GetHealthCheckStatus"))
    }
    async fn txt_records(&self, _: &str, _: &str) -> Result<Vec<TxtRecord>, AwsError> {
        Err(unused("ListResourceRecordSets"))
    }
    async fn named_records(
        &self,
        _: &str,
        _: &str,
        _: &str,
    ) -> Result<Vec<WeightedRecord>, AwsError> {
        Err(unused("ListResourceRecordSets"))
    }
    async fn create_weighted(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &[NewWeightedRecord],
    ) -> Result<String, AwsError> {
        Err(unused("ChangeResourceRecordSets"))
    }
}

#[async_trait]
impl ExecutionListing for Unused {
    async fn execution_input(&self, _: &str) -> Result<Option<String>, AwsError> {
        Err(unused("DescribeExecution"))
    }
    async fn newest(&self, _: &str, _: usize) -> Result<Vec<Listed>, AwsError> {
        Err(unused("ListExecutions"))
    }
}

#[async_trait]
impl ExecutionsApi for Unused {
    async fn running_executions(&self, _: &str) -> Result<Vec<String>, AwsError> {
        Err(unused("ListExecutions"))
    }
    async fn history(&self, _: &str) -> Result<ExecutionHistory, AwsError> {
        Err(unused("GetExecutionHistory"))
    }
    async fn started_after(&self, _: &str, _: usize) -> Result<Vec<Listed>, AwsError> {
        Err(unused("ListExecutions"))
    }
}

#[async_trait]
impl AddonHealth for Unused {
    async fn addon_names(&self, _: &str, _: &str) -> Result<Vec<String>, AwsError> {
        Err(unused("ListAddons"))
    }
    async fn addon(
        &self,
        _: &str,
        _: &str,
        _: &str,
    ) -> Result<Option<canary_core::cluster_readiness::Addon>, AwsError> {
        Err(unused("DescribeAddon"))
    }
}

#[async_trait]
impl CloudWatchApi for Unused {
    async fn alarms_by_names(&self, _: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        Err(unused("DescribeAlarms"))
    }
    async fn alarms_by_prefix(&self, _: &str) -> Result<Vec<AlarmState>, AwsError> {
        Err(unused("DescribeAlarms"))
    }
    async fn metric_data(
        &self,
        _: &[MetricQuery],
        _: SystemTime,
        _: SystemTime,
    ) -> Result<BTreeMap<String, MetricSeries>, AwsError> {
        Err(unused("GetMetricData"))
    }
}

/// What [`Unused`] answers for a query provider (each provider's client module implements its
/// trait for `Unused` with it, so a new provider touches no file here).
pub fn unused_query(url: &str) -> QueryError {
    QueryError::Unreachable {
        url: url.to_owned(),
        message: "this test gives no fake for it (canary_aws::fakes::Unused)".to_owned(),
    }
}

/// CloudWatch alarms by name, in the states a test sets (`set`); every alarm set exists, no
/// other does. Metric data is always empty.
#[derive(Default)]
pub struct FakeCloudWatch {
    alarms: Mutex<Vec<(String, AlarmStateValue)>>,
}

impl FakeCloudWatch {
    pub fn with(self, name: &str, state: AlarmStateValue) -> Self {
        self.set(name, state);
        self
    }

    pub fn set(&self, name: &str, state: AlarmStateValue) {
        let mut alarms = lock(&self.alarms);
        alarms.retain(|(n, _)| n != name);
        alarms.push((name.to_owned(), state));
    }

    fn matching(&self, wanted: impl Fn(&str) -> bool) -> Vec<AlarmState> {
        lock(&self.alarms)
            .iter()
            .filter(|(name, _)| wanted(name))
            .map(|(name, state)| AlarmState {
                name: name.clone(),
                composite: false,
                state: *state,
                reason: "Threshold Crossed".to_owned(),
                since: Some("2026-11-23T20:04:00Z".to_owned()),
            })
            .collect()
    }
}

#[async_trait]
impl CloudWatchApi for FakeCloudWatch {
    async fn alarms_by_names(&self, names: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        Ok(self.matching(|n| names.iter().any(|w| w == n)))
    }
    async fn alarms_by_prefix(&self, prefix: &str) -> Result<Vec<AlarmState>, AwsError> {
        Ok(self.matching(|n| n.starts_with(prefix)))
    }
    async fn metric_data(
        &self,
        _: &[MetricQuery],
        _: SystemTime,
        _: SystemTime,
    ) -> Result<BTreeMap<String, MetricSeries>, AwsError> {
        Ok(BTreeMap::new())
    }
}

/// CloudWatch without alarms whose metric data a test's function answers, given the queries
/// and the call's window: a comparison's or an outlook's world, or a refusal.
pub struct MetricAnswers<F>(F);

/// What a [`MetricAnswers`] function returns for one GetMetricData call.
pub type MetricDataAnswer = Result<BTreeMap<String, MetricSeries>, AwsError>;

impl<F> MetricAnswers<F>
where
    F: Fn(&[MetricQuery], SystemTime, SystemTime) -> MetricDataAnswer + Send + Sync,
{
    pub fn new(answer: F) -> Self {
        MetricAnswers(answer)
    }
}

#[async_trait]
impl<F> CloudWatchApi for MetricAnswers<F>
where
    F: Fn(&[MetricQuery], SystemTime, SystemTime) -> MetricDataAnswer + Send + Sync,
{
    async fn alarms_by_names(&self, _: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        Ok(Vec::new())
    }
    async fn alarms_by_prefix(&self, _: &str) -> Result<Vec<AlarmState>, AwsError> {
        Ok(Vec::new())
    }
    async fn metric_data(
        &self,
        queries: &[MetricQuery],
        start: SystemTime,
        end: SystemTime,
    ) -> MetricDataAnswer {
        (self.0)(queries, start, end)
    }
}

/// Step Functions with no other execution: Prepare's concurrency check passes, a history is
/// empty.
pub struct NoExecutions;

#[async_trait]
impl ExecutionListing for NoExecutions {
    async fn execution_input(&self, _: &str) -> Result<Option<String>, AwsError> {
        Ok(None)
    }
    async fn newest(&self, _: &str, _: usize) -> Result<Vec<Listed>, AwsError> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl ExecutionsApi for NoExecutions {
    async fn running_executions(&self, _: &str) -> Result<Vec<String>, AwsError> {
        Ok(Vec::new())
    }
    async fn history(&self, _: &str) -> Result<ExecutionHistory, AwsError> {
        Ok(ExecutionHistory::default())
    }
    async fn started_after(&self, _: &str, _: usize) -> Result<Vec<Listed>, AwsError> {
        Ok(Vec::new())
    }
}

/// ALB and NLB listeners, each forwarding to its target groups at weights (`forward`); every
/// target group exists, is not sticky and has the protocol `protocol` gave it (none said:
/// `HTTP`); no tags.
#[derive(Default)]
pub struct FakeAlb {
    forwards: Mutex<HashMap<String, Vec<TargetGroupWeight>>>,
    /// Listener ARNs whose next write fails with a throttle.
    throttle_next_write: Mutex<Vec<String>>,
    /// Listeners a controller puts back to its own weights right after every write.
    reconciled: HashMap<String, Vec<TargetGroupWeight>>,
    /// `DescribeTargetHealth` answers by target group (none registered when absent).
    health: HashMap<String, Vec<TargetState>>,
    /// Target groups' protocols, where not `HTTP`.
    protocols: HashMap<String, String>,
}

impl FakeAlb {
    /// Listener `listener` forwards to `stable` and `canary` at these weights.
    pub fn forward(self, listener: &str, stable: (&str, u16), canary: (&str, u16)) -> Self {
        let groups = [stable, canary].map(|(arn, weight)| TargetGroupWeight {
            arn: arn.to_owned(),
            weight,
        });
        lock(&self.forwards).insert(listener.to_owned(), groups.to_vec());
        self
    }

    /// `DescribeTargetHealth` of `target_group` answers `targets`.
    pub fn health(mut self, target_group: &str, targets: Vec<TargetState>) -> Self {
        self.health.insert(target_group.to_owned(), targets);
        self
    }

    /// `target_group`'s protocol is `protocol` (`TCP`, `UDP`…).
    pub fn protocol(mut self, target_group: &str, protocol: &str) -> Self {
        self.protocols
            .insert(target_group.to_owned(), protocol.to_owned());
        self
    }

    /// A controller owns `listener`: right after every write it puts back the weights the
    /// listener has now (a write succeeds; the read-back finds the controller's).
    pub fn reconciled(mut self, listener: &str) -> Self {
        self.reconciled
            .insert(listener.to_owned(), self.forwards_to(listener));
        self
    }

    /// The next write on `listener` fails with a throttle (`AwsTransient`).
    pub fn throttle_next_write(&self, listener: &str) {
        lock(&self.throttle_next_write).push(listener.to_owned());
    }

    /// The target groups `listener` forwards to now, with their weights.
    pub fn forwards_to(&self, listener: &str) -> Vec<TargetGroupWeight> {
        lock(&self.forwards)
            .get(listener)
            .cloned()
            .unwrap_or_default()
    }

    /// The weight `listener` forwards to `target_group` with (0 when it does not).
    pub fn weight(&self, listener: &str, target_group: &str) -> u16 {
        lock(&self.forwards)
            .get(listener)
            .and_then(|groups| groups.iter().find(|g| g.arn == target_group))
            .map_or(0, |g| g.weight)
    }
}

#[async_trait]
impl AlbReads for FakeAlb {
    async fn read_forward(&self, target: &dyn ForwardTarget) -> Result<ForwardRead, AwsError> {
        let forwards = lock(&self.forwards);
        let groups = forwards.get(target.listener_arn()).ok_or_else(|| {
            AwsError::new(
                AwsErrorKind::NotFound,
                "DescribeListeners",
                format!("no listener {}", target.listener_arn()),
            )
        })?;
        Ok(ForwardRead::Forward(ForwardAction {
            target_groups: groups.clone(),
            group_stickiness: None,
            actions: Default::default(),
        }))
    }
}

#[async_trait]
impl AlbApi for FakeAlb {
    async fn write_forward(
        &self,
        target: &dyn ForwardTarget,
        _current: &ForwardAction,
        weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        let mut throttled_arns = lock(&self.throttle_next_write);
        if let Some(i) = throttled_arns
            .iter()
            .position(|a| *a == target.listener_arn())
        {
            throttled_arns.remove(i);
            return Err(throttled("ModifyListener"));
        }
        let written = match self.reconciled.get(target.listener_arn()) {
            Some(controllers) => controllers.clone(),
            None => weights.to_vec(),
        };
        lock(&self.forwards).insert(target.listener_arn().to_owned(), written);
        Ok(())
    }

    async fn target_groups(
        &self,
        _region: &str,
        arns: &[String],
    ) -> Result<Vec<TargetGroupInfo>, AwsError> {
        Ok(arns
            .iter()
            .map(|arn| TargetGroupInfo {
                arn: arn.clone(),
                protocol: Some(
                    self.protocols
                        .get(arn)
                        .map_or("HTTP", String::as_str)
                        .to_owned(),
                ),
                stickiness_enabled: false,
            })
            .collect())
    }

    async fn target_health(&self, target_group_arn: &str) -> Result<Vec<TargetState>, AwsError> {
        Ok(self
            .health
            .get(target_group_arn)
            .cloned()
            .unwrap_or_default())
    }

    async fn tags(&self, _region: &str, _arn: &str) -> Result<BTreeMap<String, String>, AwsError> {
        Ok(BTreeMap::new())
    }
}

/// The set identifiers of [`FakeRoute53`]'s two records.
pub const STABLE_SET: &str = "blue";
pub const CANARY_SET: &str = "green";

/// One stable/canary pair of weighted records (set identifiers `blue` and `green`, TTL 30),
/// answered for any target; no ExternalDNS registry records, no other records of the name.
pub struct FakeRoute53 {
    weights: Mutex<(u16, u16)>,
    in_sync: bool,
    /// The canary record's health check reports; `None`: the record has no health check.
    canary_health: Option<Vec<String>>,
    /// The same for the stable record (health check `hc-blue`).
    stable_health: Option<Vec<String>>,
}

impl FakeRoute53 {
    /// The records at `stable`/`canary`; every change reaches INSYNC.
    pub fn at(stable: u16, canary: u16) -> Self {
        FakeRoute53 {
            weights: Mutex::new((stable, canary)),
            in_sync: true,
            canary_health: None,
            stable_health: None,
        }
    }

    /// Every change stays PENDING past the wait.
    pub fn never_in_sync(mut self) -> Self {
        self.in_sync = false;
        self
    }

    /// The canary record has health check `hc-green`, which reports `reports`.
    pub fn canary_health(mut self, reports: Vec<String>) -> Self {
        self.canary_health = Some(reports);
        self
    }

    /// The stable record has health check `hc-blue`, which reports `reports`.
    pub fn stable_health(mut self, reports: Vec<String>) -> Self {
        self.stable_health = Some(reports);
        self
    }

    /// The records' weights now: (stable, canary).
    pub fn weights(&self) -> (u16, u16) {
        *lock(&self.weights)
    }
}

#[async_trait]
impl Route53Reads for FakeRoute53 {
    async fn records(&self, _target: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError> {
        let (stable, canary) = self.weights();
        let record = |id: &str, weight| WeightedRecord {
            set_identifier: Some(id.to_owned()),
            weight: Some(weight),
            ttl: Some(30),
            alias_target: None,
            health_check_id: match id {
                CANARY_SET => self.canary_health.as_ref().map(|_| "hc-green".to_owned()),
                _ => self.stable_health.as_ref().map(|_| "hc-blue".to_owned()),
            },
        };
        Ok(vec![record(STABLE_SET, stable), record(CANARY_SET, canary)])
    }
}

#[async_trait]
impl Route53Api for FakeRoute53 {
    async fn write_weights(
        &self,
        _target: &Route53Target,
        stable: u16,
        canary: u16,
    ) -> Result<String, AwsError> {
        *lock(&self.weights) = (stable, canary);
        Ok("C123".into())
    }

    async fn wait_in_sync(&self, _change_id: &str) -> Result<bool, AwsError> {
        Ok(self.in_sync)
    }

    async fn health_check_reports(&self, health_check_id: &str) -> Result<Vec<String>, AwsError> {
        let reports = match health_check_id {
            "hc-blue" => &self.stable_health,
            _ => &self.canary_health,
        };
        Ok(reports.clone().unwrap_or_default())
    }

    async fn txt_records(&self, _zone_id: &str, _name: &str) -> Result<Vec<TxtRecord>, AwsError> {
        Ok(Vec::new())
    }

    async fn named_records(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
    ) -> Result<Vec<WeightedRecord>, AwsError> {
        Err(unused("ListResourceRecordSets"))
    }

    async fn create_weighted(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
        _records: &[NewWeightedRecord],
    ) -> Result<String, AwsError> {
        Err(unused("ChangeResourceRecordSets"))
    }
}

/// The ARNs the decision tests use: two listeners of one load balancer, the stable (`blue`) and
/// the canary (`green`) target group.
pub mod arns {
    pub const LISTENER_A: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
    pub const LISTENER_B: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/0000000000000002";
    pub const BLUE: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067";
    pub const GREEN: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/4b7c9a1e2f3d5a68";
}
