//! The CloudTrail events cluster-created has handled, one small S3 object each, so an event
//! EventBridge delivers twice (it delivers at least once) is acted on and said once.
//!
//! The record is a conditional `PutObject` (`If-None-Match: *`): S3 writes it only when no
//! object has the key, atomically, and answers `412 PreconditionFailed` when one does (and
//! `409 ConditionalRequestConflict` while another conditional write of the key is in flight:
//! another delivery is handling the event). S3 rather than a DynamoDB table: cluster-created
//! already links the S3 client for stored fleet plans, and its package is near its size budget.

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_s3 as s3;
use sha2::{Digest, Sha256};

use crate::error::{AwsError, AwsErrorKind};

/// Where the records are, in the stack's bucket; a lifecycle rule expires them after two days
/// (EventBridge retries a delivery for at most a day).
pub const DELIVERIES_PREFIX: &str = "intake-events/";

/// Whether this delivery of an event is its first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    First,
    /// Recorded before: `record` is where (`s3://bucket/key`).
    Repeated {
        record: String,
    },
}

#[async_trait]
pub trait DeliveryLedger: Send + Sync {
    /// Records CloudTrail event `event_id` unless it was recorded before. `body` is what the
    /// record says (for a person who looks).
    async fn record(&self, event_id: &str, body: &[u8]) -> Result<Delivery, AwsError>;
}

/// The record's key: the event id is the sender's text, so the key holds its digest.
pub fn delivery_key(event_id: &str) -> String {
    let digest = Sha256::digest(event_id.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{DELIVERIES_PREFIX}{hex}")
}

/// [`DeliveryLedger`] in an S3 bucket, on the real client.
pub struct SdkDeliveryLedger {
    client: s3::Client,
    bucket: String,
}

impl SdkDeliveryLedger {
    pub fn new(config: &SdkConfig, bucket: impl Into<String>) -> Self {
        SdkDeliveryLedger {
            client: s3::Client::new(config),
            bucket: bucket.into(),
        }
    }
}

/// S3's answers to a conditional write of a key that exists or is being written.
const ALREADY_WRITTEN: [&str; 2] = ["PreconditionFailed", "ConditionalRequestConflict"];

#[async_trait]
impl DeliveryLedger for SdkDeliveryLedger {
    async fn record(&self, event_id: &str, body: &[u8]) -> Result<Delivery, AwsError> {
        let key = delivery_key(event_id);
        let written = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .if_none_match("*")
            .content_type("application/json")
            .body(body.to_vec().into())
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("PutObject", e));
        match written {
            Ok(_) => Ok(Delivery::First),
            Err(e)
                if e.kind == AwsErrorKind::Rejected
                    && e.code
                        .as_deref()
                        .is_some_and(|c| ALREADY_WRITTEN.contains(&c)) =>
            {
                Ok(Delivery::Repeated {
                    record: format!("s3://{}/{key}", self.bucket),
                })
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_digests_under_the_prefix() {
        let key = delivery_key("5d3c0b44-6e0f-4a1e-9f7e-1a2b3c4d5e6f");
        assert!(key.starts_with("intake-events/"), "{key}");
        assert_eq!(key.len(), DELIVERIES_PREFIX.len() + 64);
        assert_eq!(key, delivery_key("5d3c0b44-6e0f-4a1e-9f7e-1a2b3c4d5e6f"));
        assert_ne!(key, delivery_key("../other"));
    }
}
