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
