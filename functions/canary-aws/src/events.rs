//! Putting cluster-canary's own events on the account's default EventBridge bus, from a
//! function (the state machines put theirs with their `events:putEvents` tasks).

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_eventbridge as eventbridge;
use serde_json::Value;

use crate::error::{AwsError, AwsErrorKind};

/// The `source` of every cluster-canary event.
pub const EVENT_SOURCE: &str = "cluster-canary";

#[async_trait]
pub trait EventPublisher: Send + Sync {
    /// Puts one event (source `cluster-canary`) with `detail_type` and `detail`.
    async fn put_event(&self, detail_type: &str, detail: &Value) -> Result<(), AwsError>;

    /// Puts the event, or logs it with why it could not be put: a function's events never hold
    /// up or fail what the function does (as the state machines' `putEvents` tasks never do).
    async fn put_or_log(&self, detail_type: &str, detail: &Value) {
        if let Err(e) = self.put_event(detail_type, detail).await {
            tracing::warn!(detail_type, %detail, error = %e, "could not put the event");
        }
    }
}

/// `EventPublisher` on the real EventBridge client, the default bus.
pub struct SdkEvents {
    client: eventbridge::Client,
}

impl SdkEvents {
    pub fn new(config: &SdkConfig) -> Self {
        SdkEvents {
            client: eventbridge::Client::new(config),
        }
    }
}

#[async_trait]
impl EventPublisher for SdkEvents {
    async fn put_event(&self, detail_type: &str, detail: &Value) -> Result<(), AwsError> {
        let entry = eventbridge::types::PutEventsRequestEntry::builder()
            .source(EVENT_SOURCE)
            .detail_type(detail_type)
            .detail(detail.to_string())
            .build();
        let out = self
            .client
            .put_events()
            .entries(entry)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("PutEvents", e))?;
        // PutEvents answers 200 with the refused entries counted and explained in the body.
        match out.entries().first() {
            Some(refused) if out.failed_entry_count() > 0 => Err(AwsError::new(
                AwsErrorKind::Rejected,
                "PutEvents",
                format!(
                    "{}: {}",
                    refused.error_code().unwrap_or("refused"),
                    refused.error_message().unwrap_or("the event was not put")
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// Whether an EventBridge rule delivers: Admit refuses to start a rollout while the stack's
/// SafetyNet rule does not (a stopped rollout would keep its traffic where it stopped), and
/// the sweep and the CLI say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleState {
    Enabled,
    Disabled,
    /// No rule of that name (deleted).
    Missing,
}

impl RuleState {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleState::Enabled => "ENABLED",
            RuleState::Disabled => "DISABLED",
            RuleState::Missing => "MISSING",
        }
    }
}

#[async_trait]
pub trait RuleStates: Send + Sync {
    /// The state of the rule `name` on the default bus.
    async fn rule_state(&self, name: &str) -> Result<RuleState, AwsError>;
}

fn rule_state_of(state: Option<&eventbridge::types::RuleState>) -> RuleState {
    match state {
        Some(eventbridge::types::RuleState::Disabled) => RuleState::Disabled,
        _ => RuleState::Enabled,
    }
}

#[async_trait]
impl RuleStates for SdkEvents {
    async fn rule_state(&self, name: &str) -> Result<RuleState, AwsError> {
        match self.client.describe_rule().name(name).send().await {
            Ok(rule) => Ok(rule_state_of(rule.state())),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                Ok(RuleState::Missing)
            }
            Err(e) => Err(AwsError::from_sdk("DescribeRule", e)),
        }
    }
}

impl SdkEvents {
    /// The default bus's rules that send `state_machine_arn`'s ends (`aws.states` events whose
    /// pattern names it) somewhere, with their states: the safety net's, for a person's CLI
    /// (which knows the state machine, not the stack's rule names).
    pub async fn rules_for_ends_of(
        &self,
        state_machine_arn: &str,
    ) -> Result<Vec<(String, RuleState)>, AwsError> {
        // Quoted: another stack's state machine may start with this one's ARN.
        let named = format!("\"{state_machine_arn}\"");
        let mut found = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .client
                .list_rules()
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("ListRules", e))?;
            for rule in page.rules() {
                let pattern = rule.event_pattern().unwrap_or_default();
                if pattern.contains("\"aws.states\"") && pattern.contains(&named) {
                    let name = rule.name().unwrap_or_default().to_owned();
                    found.push((name, rule_state_of(rule.state())));
                }
            }
            token = page.next_token().map(str::to_owned);
            if token.is_none() {
                return Ok(found);
            }
        }
    }
}
