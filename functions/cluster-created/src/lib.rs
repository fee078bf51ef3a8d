//! The `cluster-created` Lambda: EventBridge intake of EKS `CreateCluster` and
//! `DeleteCluster` calls recorded by CloudTrail.
//!
//! - CreateCluster of a cluster tagged `cluster-canary/profile`: build the rollout plan from
//!   that profile and the cluster's tags, validate it like a hand-written plan, and start the
//!   state machine under a name derived from the cluster and the CloudTrail event id.
//! - EventBridge delivers at least once: the first delivery of such an event is recorded
//!   ([`DeliveryLedger`], keyed by CloudTrail's `eventID`), and a repeated one is answered
//!   `duplicate` without acting or saying anything again. Were the record not writable, the
//!   execution's name still keeps a repeated delivery from starting a second rollout.
//! - A failed call, or a cluster without the tag: skipped, with the reason in the result and log.
//! - A cluster that is a cell of a fleet: skipped. A running fleet starts its rollout in its
//!   wave (docs/fleets.md), and a rollout of its own would move the cell's traffic out of turn;
//!   after the fleet ended, the profile's rollout would move other traffic than the cell's.
//! - DeleteCluster: remove the cluster's Argo CD Secret, if cluster-canary created it.
//! - An opted-in cluster whose rollout could not be started (a profile that does not exist, an
//!   invalid plan, a refused `StartExecution`): the `Rollout Not Started` event names the cluster
//!   and why, once, and the function fails; Lambda does not try the event again (the template's
//!   `MaximumRetryAttempts: 0`) but leaves it in the stack's ClusterIntakeDeadLetterQueue at once,
//!   whose alarm pages a person. Only what can pass on a retry (AWS throttling or failing on
//!   its side, the Kubernetes API unreachable) is tried again, here, within the invocation
//!   ([`TRANSIENT_RETRY_DELAYS`]): a refusal is said once, not three times.

pub mod event;

use std::collections::BTreeMap;

use canary_aws::{
    load_fleet_plan, AwsError, Delivery, DeliveryLedger, EventPublisher, ExecutionListing,
    ExecutionStarter, FleetPlanError, FleetPlanStore, Started,
};
use canary_core::arn::account_of;
use canary_core::input::parse_input;
use canary_core::limits::{truncate, MAX_ERROR_MESSAGE_BYTES};
use canary_core::profile::{plan_from_profile, Origin, PROFILE_TAG};
use canary_core::{ErrorName, NamedError, PlanErrors};
use canary_kube::{
    connect, deregister, AccessDeps, KubeArgoCd, KubeError, ManagementAccess, RegistrationError,
};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;

use tracing::{error, info, warn};

use event::{EksCall, EksEvent};

#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("invalid event: {0}")]
    InvalidEvent(String),
    #[error("cluster {cluster} asks for profile `{profile}`, which is not configured (profiles: {known})")]
    ProfileNotFound {
        cluster: String,
        profile: String,
        known: String,
    },
    #[error("the plan built from profile `{profile}` and the tags of cluster {cluster} is invalid: {errors}")]
    InvalidPlan {
        cluster: String,
        profile: String,
        errors: PlanErrors,
    },
    #[error("{0}")]
    Aws(#[from] AwsError),
    #[error("{0}")]
    Registration(#[from] RegistrationError),
    #[error("{0}")]
    Kube(#[from] KubeError),
}

impl NamedError for IntakeError {
    fn name(&self) -> ErrorName {
        match self {
            IntakeError::InvalidEvent(_) => ErrorName::InvalidEvent,
            IntakeError::ProfileNotFound { .. } => ErrorName::ProfileNotFound,
            IntakeError::InvalidPlan { .. } => ErrorName::InvalidPlan,
            IntakeError::Aws(e) => e.error_name(),
            IntakeError::Registration(e) => e.name(),
            IntakeError::Kube(e) => e.error_name(),
        }
    }
}

/// Deployment configuration of the function.
#[derive(Debug, Clone)]
pub struct IntakeConfig {
    pub state_machine_arn: String,
    /// Named plan templates (plans without `cluster`).
    pub profiles: BTreeMap<String, Value>,
    /// Where DeleteCluster looks for the cluster's Secret (a delete event carries no tags).
    pub argocd_namespace: String,
    /// The fleet state machine: a cluster that is a cell of one of its running fleets gets no
    /// rollout of its own.
    pub fleet_state_machine_arn: Option<String>,
    /// The bucket of the record of the events handled (`intake-events/` in the stack's bucket).
    pub deliveries_bucket: String,
}

impl IntakeConfig {
    /// From `STATE_MACHINE_ARN`, `PROFILES` (a JSON object of profiles), `ARGOCD_NAMESPACE`
    /// (default `argocd`), `FLEET_STATE_MACHINE_ARN` (optional) and `INTAKE_EVENTS_BUCKET`.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let state_machine_arn = get("STATE_MACHINE_ARN")
            .filter(|v| !v.is_empty())
            .ok_or("STATE_MACHINE_ARN is not set")?;
        let profiles = match get("PROFILES").filter(|v| !v.trim().is_empty()) {
            Some(text) => parse_input(
                serde_json::from_str(&text).map_err(|e| format!("PROFILES is not JSON: {e}"))?,
            )
            .map_err(|e| format!("PROFILES must be a JSON object of profiles: {e}"))?,
            None => BTreeMap::new(),
        };
        Ok(IntakeConfig {
            state_machine_arn,
            profiles,
            argocd_namespace: get("ARGOCD_NAMESPACE").unwrap_or_else(|| "argocd".to_owned()),
            fleet_state_machine_arn: get("FLEET_STATE_MACHINE_ARN").filter(|v| !v.is_empty()),
            deliveries_bucket: get("INTAKE_EVENTS_BUCKET")
                .filter(|v| !v.is_empty())
                .ok_or("INTAKE_EVENTS_BUCKET is not set")?,
        })
    }
}

pub struct Deps<'a> {
    pub executions: &'a dyn ExecutionStarter,
    /// The running fleets and their plans.
    pub fleets: &'a dyn ExecutionListing,
    /// Where large fleets' plans are stored (a fleet's input is then a reference).
    pub plans: &'a dyn FleetPlanStore,
    pub access: &'a ManagementAccess,
    pub aws: AccessDeps<'a>,
    /// Where `Rollout Not Started` goes.
    pub events: &'a dyn EventPublisher,
    /// The events handled before.
    pub deliveries: &'a dyn DeliveryLedger,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Started,
    AlreadyStarted,
    /// A repeated delivery of an event handled before: nothing done, nothing said.
    Duplicate,
    Skipped,
    Deregistered,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IntakeResult {
    pub action: Action,
    pub cluster: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_arn: Option<String>,
}

pub async fn handle(
    deps: &Deps<'_>,
    config: &IntakeConfig,
    input: Value,
) -> Result<Value, IntakeError> {
    let event = event::parse(&input).map_err(IntakeError::InvalidEvent)?;
    if let Some(duplicate) = repeated_delivery(deps, &event).await {
        info!(cluster = %event.cluster_arn, event_id = %event.event_id, reason = %duplicate.reason, "event handled");
        return serde_json::to_value(duplicate)
            .map_err(|e| IntakeError::InvalidEvent(format!("result not serializable: {e}")));
    }
    let result = with_retries(&TRANSIENT_RETRY_DELAYS, || act_on(deps, config, &event)).await;
    let result = match result {
        Ok(result) => result,
        Err(failure) => {
            if event.call == EksCall::CreateCluster {
                say_not_started(deps, &event, &failure).await;
            }
            return Err(failure);
        }
    };
    info!(cluster = %result.cluster, action = ?result.action, reason = %result.reason, "event handled");
    serde_json::to_value(result)
        .map_err(|e| IntakeError::InvalidEvent(format!("result not serializable: {e}")))
}

/// A repeated delivery of the creation of an opted-in cluster, answered; `None` for its first
/// delivery. Only those are recorded: any other event is acted on again without harm (skipped
/// again; a Secret deregistered before is found gone). The record is written before the event is
/// acted on, so a repeated delivery that comes while the first is still being handled does
/// nothing either. A record that cannot be written is logged and the event handled: the
/// execution's name still keeps a second delivery from starting a second rollout.
async fn repeated_delivery(deps: &Deps<'_>, event: &EksEvent) -> Option<IntakeResult> {
    if event.call != EksCall::CreateCluster
        || event.error.is_some()
        || !event.tags.contains_key(PROFILE_TAG)
    {
        return None;
    }
    let body = json!({"eventId": event.event_id, "clusterArn": event.cluster_arn}).to_string();
    let recorded = with_retries(&TRANSIENT_RETRY_DELAYS, || async {
        Ok(deps
            .deliveries
            .record(&event.event_id, body.as_bytes())
            .await?)
    })
    .await;
    match recorded {
        Ok(Delivery::First) => None,
        Ok(Delivery::Repeated { record }) => Some(IntakeResult {
            action: Action::Duplicate,
            cluster: event.cluster.clone(),
            reason: format!(
                "CloudTrail event {} was delivered before ({record}) and handled then; not \
                 acted on or said again",
                event.event_id
            ),
            execution_arn: None,
        }),
        Err(e) => {
            warn!(error = e.name().as_str(), cause = %e, "the event's delivery could not be recorded: a repeated delivery of it would be handled again");
            None
        }
    }
}

/// The waits before the intake's second and third tries of an event that failed with an error
/// that can pass on a retry (`ErrorName::is_retryable`); with the SDK's own retries under each
/// try, well within the function's 60 s. Any other failure is final at once.
pub const TRANSIENT_RETRY_DELAYS: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(8)];

/// Runs `attempt` again after each delay while it fails with a retryable error.
pub async fn with_retries<T, F, Fut>(delays: &[Duration], mut attempt: F) -> Result<T, IntakeError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, IntakeError>>,
{
    let mut delays = delays.iter();
    loop {
        match attempt().await {
            Err(e) if e.name().is_retryable() => {
                let Some(delay) = delays.next() else {
                    return Err(e);
                };
                warn!(error = e.name().as_str(), cause = %e, retry_in_seconds = delay.as_secs(), "the intake failed on what may pass on a retry");
                tokio::time::sleep(*delay).await;
            }
            other => return other,
        }
    }
}

async fn act_on(
    deps: &Deps<'_>,
    config: &IntakeConfig,
    event: &EksEvent,
) -> Result<IntakeResult, IntakeError> {
    Ok(match (&event.call, &event.error) {
        // A call that failed changed nothing to act on.
        (EksCall::CreateCluster, Some(error)) => skipped(
            event,
            format!("CreateCluster failed ({error}); no cluster to roll out"),
        ),
        (EksCall::DeleteCluster, Some(error)) => skipped(
            event,
            format!("DeleteCluster failed ({error}); the cluster still exists"),
        ),
        (EksCall::CreateCluster, None) => on_create(deps, config, event).await?,
        (EksCall::DeleteCluster, None) => on_delete(deps, config, event).await?,
    })
}

/// The detail-type of the event an opted-in cluster that got no rollout is named in.
pub const NOT_STARTED: &str = "Rollout Not Started";

/// Puts `Rollout Not Started` for the new cluster, once per delivery of the CloudTrail event
/// (`eventId`, CloudTrail's): after the intake's own retries, never at each. An event that cannot
/// be put is logged: the dead-letter queue and its alarm still hold the cluster.
async fn say_not_started(deps: &Deps<'_>, event: &EksEvent, failure: &IntakeError) {
    let detail = json!({
        "cluster": {"name": event.cluster, "region": event.region},
        "clusterArn": event.cluster_arn,
        "profile": event.tags.get(PROFILE_TAG),
        "eventId": event.event_id,
        "error": failure.name().as_str(),
        "cause": truncate(&failure.to_string(), MAX_ERROR_MESSAGE_BYTES),
    });
    error!(cluster = %event.cluster_arn, error = failure.name().as_str(), cause = %failure, "no rollout started for the new cluster");
    deps.events.put_or_log(NOT_STARTED, &detail).await;
}

fn skipped(event: &EksEvent, reason: String) -> IntakeResult {
    IntakeResult {
        action: Action::Skipped,
        cluster: event.cluster.clone(),
        reason,
        execution_arn: None,
    }
}

async fn on_create(
    deps: &Deps<'_>,
    config: &IntakeConfig,
    event: &EksEvent,
) -> Result<IntakeResult, IntakeError> {
    let Some(profile_name) = event.tags.get(PROFILE_TAG) else {
        return Ok(skipped(
            event,
            format!("cluster is not opted in (no {PROFILE_TAG} tag)"),
        ));
    };
    if let Some(reason) = fleet_cell(deps, config, event).await? {
        return Ok(skipped(event, reason));
    }
    let profile =
        config
            .profiles
            .get(profile_name)
            .ok_or_else(|| IntakeError::ProfileNotFound {
                cluster: event.cluster.clone(),
                profile: profile_name.clone(),
                known: config
                    .profiles
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
    let origin = Origin {
        cluster: &event.cluster,
        region: &event.region,
        cluster_arn: &event.cluster_arn,
        // The state machine is this stack's, in the account cluster-canary runs in.
        own_account: account_of(&config.state_machine_arn).unwrap_or_default(),
    };
    let valid = plan_from_profile(profile, &origin, &event.tags).map_err(|errors| {
        IntakeError::InvalidPlan {
            cluster: event.cluster.clone(),
            profile: profile_name.clone(),
            errors,
        }
    })?;
    let input =
        serde_json::to_string(&valid.plan).map_err(|e| IntakeError::InvalidEvent(e.to_string()))?;
    let name = execution_name(&event.cluster, &event.event_id);
    let (action, execution_arn, reason) = match deps
        .executions
        .start_execution(&config.state_machine_arn, &name, &input)
        .await?
    {
        Started::New { execution_arn } => (
            Action::Started,
            execution_arn,
            format!("rollout started with profile `{profile_name}`"),
        ),
        Started::AlreadyExists { execution_arn } => (
            Action::AlreadyStarted,
            execution_arn,
            "this event was already handled (duplicate delivery)".to_owned(),
        ),
    };
    Ok(IntakeResult {
        action,
        cluster: event.cluster.clone(),
        reason,
        execution_arn: Some(execution_arn),
    })
}

/// How many of the fleet state machine's newest executions are looked through for a cell.
const FLEETS_LOOKED_AT: usize = 100;

/// Why the new cluster gets no rollout of its own: it is a cell of a fleet (same account,
/// region and name). A running fleet starts the cell's rollout in its wave; after a fleet
/// ended, a rollout of the profile would move other traffic than the cell's.
async fn fleet_cell(
    deps: &Deps<'_>,
    config: &IntakeConfig,
    event: &EksEvent,
) -> Result<Option<String>, IntakeError> {
    let Some(machine) = &config.fleet_state_machine_arn else {
        return Ok(None);
    };
    let own_account = account_of(&config.state_machine_arn).unwrap_or_default();
    let event_account = account_of(&event.cluster_arn).unwrap_or(own_account);
    for listed in deps.fleets.newest(machine, FLEETS_LOOKED_AT).await? {
        let fleet = listed.arn;
        let Some(input) = deps.fleets.execution_input(&fleet).await? else {
            continue;
        };
        // A fleet that started did so with a valid plan; one that is not valid has no cells. A
        // stored plan that cannot be read fails the intake (and it is retried): skipping it
        // could start a rollout of a running fleet's cell.
        let Ok(input) = serde_json::from_str(&input) else {
            continue;
        };
        let valid = match load_fleet_plan(input, deps.plans).await {
            Ok(valid) => valid,
            Err(FleetPlanError::Invalid(_)) => continue,
            Err(FleetPlanError::Aws(e)) => return Err(e.into()),
        };
        for (cell, plan) in valid.fleet.cells.iter().zip(&valid.plans) {
            let cluster = &plan.plan.cluster;
            let account = cluster
                .role_arn
                .as_deref()
                .and_then(account_of)
                .unwrap_or(own_account);
            if cluster.name == event.cluster
                && cluster.region == event.region
                && account == event_account
            {
                let what = if listed.status == "RUNNING" {
                    format!("running as {fleet}: the fleet starts its rollout in its wave")
                } else {
                    format!(
                        "which ran as {fleet} ({}): the cell rolls out its own traffic, not the \
                         profile's; start it by hand with the cell's plan \
                         (`cluster-canary fleet validate` shows it)",
                        listed.status
                    )
                };
                return Ok(Some(format!(
                    "cluster {} ({}) is cell `{}` of fleet `{}`, {what}",
                    event.cluster, event.region, cell.name, valid.fleet.name
                )));
            }
        }
    }
    Ok(None)
}

async fn on_delete(
    deps: &Deps<'_>,
    config: &IntakeConfig,
    event: &EksEvent,
) -> Result<IntakeResult, IntakeError> {
    let client = connect(deps.access, &deps.aws).await?;
    let api = KubeArgoCd::new(client, &config.argocd_namespace);
    let registration = deregister(
        &api,
        &config.argocd_namespace,
        &event.cluster_arn,
        &event.cluster,
    )
    .await?;
    Ok(IntakeResult {
        action: Action::Deregistered,
        cluster: event.cluster.clone(),
        reason: format!(
            "Argo CD Secret {}/{}: {}",
            registration.namespace,
            registration.secret_name,
            registration.outcome.as_str()
        ),
        execution_arn: None,
    })
}

/// `<cluster>-<12 hex of sha256(event id)>`: Step Functions execution names are at most 80
/// characters of letters, digits, `-` and `_`, which EKS cluster names already are.
pub fn execution_name(cluster: &str, event_id: &str) -> String {
    let digest = Sha256::digest(event_id.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let cluster: String = cluster.chars().take(60).collect();
    format!("{cluster}-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn failing(name: ErrorName) -> IntakeError {
        IntakeError::Aws(AwsError::new(
            match name {
                ErrorName::AwsTransient => canary_aws::AwsErrorKind::Transient,
                _ => canary_aws::AwsErrorKind::AccessDenied,
            },
            "StartExecution",
            "refused",
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn what_can_pass_on_a_retry_is_tried_again_and_a_refusal_is_final_at_once() {
        let tries = AtomicUsize::new(0);
        let passes_on_the_third = with_retries(&TRANSIENT_RETRY_DELAYS, || async {
            match tries.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(failing(ErrorName::AwsTransient)),
                _ => Ok("started"),
            }
        })
        .await;
        assert_eq!(passes_on_the_third.expect("passed"), "started");
        assert_eq!(tries.load(Ordering::SeqCst), 3);

        tries.store(0, Ordering::SeqCst);
        let transient_throughout = with_retries(&TRANSIENT_RETRY_DELAYS, || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(failing(ErrorName::AwsTransient))
        })
        .await;
        assert_eq!(
            transient_throughout.unwrap_err().name(),
            ErrorName::AwsTransient
        );
        assert_eq!(tries.load(Ordering::SeqCst), 3, "one try and two retries");

        tries.store(0, Ordering::SeqCst);
        let refused = with_retries(&TRANSIENT_RETRY_DELAYS, || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(failing(ErrorName::AwsAccessDenied))
        })
        .await;
        assert_eq!(refused.unwrap_err().name(), ErrorName::AwsAccessDenied);
        assert_eq!(
            tries.load(Ordering::SeqCst),
            1,
            "a refusal is not tried again"
        );
    }

    #[test]
    fn execution_names_are_deterministic_and_valid() {
        let a = execution_name("green", "5d3c0b44-6e0f-4a1e-9f7e-1a2b3c4d5e6f");
        assert_eq!(
            a,
            execution_name("green", "5d3c0b44-6e0f-4a1e-9f7e-1a2b3c4d5e6f")
        );
        assert_ne!(a, execution_name("green", "another-event"));
        let long = execution_name(&"x".repeat(100), "e");
        assert!(long.len() <= 80, "{long}");
        assert!(long
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }

    #[test]
    fn config_from_env() {
        let env = |k: &str| match k {
            "STATE_MACHINE_ARN" => {
                Some("arn:aws:states:us-east-1:123456789012:stateMachine:rollout".to_owned())
            }
            "PROFILES" => Some(r#"{"web": {"steps": []}}"#.to_owned()),
            "INTAKE_EVENTS_BUCKET" => Some("cc-bucket".to_owned()),
            _ => None,
        };
        let config = IntakeConfig::from_env(env).expect("config");
        assert_eq!(config.profiles.keys().collect::<Vec<_>>(), ["web"]);
        assert_eq!(config.argocd_namespace, "argocd");
        assert_eq!(config.deliveries_bucket, "cc-bucket");
        let unrecorded = |k: &str| (k != "INTAKE_EVENTS_BUCKET").then(|| env(k)).flatten();
        assert_eq!(
            IntakeConfig::from_env(unrecorded).unwrap_err(),
            "INTAKE_EVENTS_BUCKET is not set"
        );
        let bad = |k: &str| {
            (k == "STATE_MACHINE_ARN")
                .then(|| "x".to_owned())
                .or((k == "PROFILES").then(|| "[1]".to_owned()))
                .or((k == "INTAKE_EVENTS_BUCKET").then(|| "b".to_owned()))
        };
        assert!(IntakeConfig::from_env(bad)
            .unwrap_err()
            .starts_with("PROFILES must be a JSON object"));
    }
}
