//! Fleet plans too large for a fleet execution's state, stored in S3 and given to the fleet by
//! reference ([`canary_core::fleet::StoredPlan`]): put by `cluster-canary fleet start`, read by
//! every fleet step, by cluster-created and by the CLI's fleet views.

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_s3 as s3;
use canary_core::fleet::{FleetPlan, StoredPlan, ValidFleet, MAX_STORED_FLEET_PLAN_BYTES};
use canary_core::{PlanError, PlanErrors};
use serde_json::Value;

use crate::error::{AwsError, AwsErrorKind};

#[async_trait]
pub trait FleetPlanStore: Send + Sync {
    /// The object's bytes; `NotFound` when the bucket or the key does not exist.
    async fn get_plan(&self, bucket: &str, key: &str) -> Result<Vec<u8>, AwsError>;
}

#[derive(Debug, thiserror::Error)]
pub enum FleetPlanError {
    #[error("invalid fleet plan: {}", .0.listed())]
    Invalid(PlanErrors),
    #[error("{0}")]
    Aws(AwsError),
}

/// The fleet plan a fleet execution's input gives: the plan itself (at most the inline cap), or
/// the stored plan it refers to, which must still be the object the fleet was started with.
pub async fn load_fleet_plan(
    input: Value,
    store: &(impl FleetPlanStore + ?Sized),
) -> Result<ValidFleet, FleetPlanError> {
    let stored = match StoredPlan::from_input(&input) {
        None => return FleetPlan::parse(input).map_err(FleetPlanError::Invalid),
        Some(reference) => reference.map_err(FleetPlanError::Invalid)?,
    };
    let bytes = match store.get_plan(&stored.bucket, &stored.key).await {
        Ok(bytes) => bytes,
        Err(e) if e.kind == AwsErrorKind::NotFound => {
            return Err(FleetPlanError::Invalid(PlanErrors(vec![PlanError {
                path: canary_core::fleet::STORED_PLAN_FIELD.to_owned(),
                message: format!(
                    "there is no fleet plan at {} ({e}): `cluster-canary fleet start` stores it \
                     before it starts the fleet",
                    stored.uri()
                ),
            }])))
        }
        Err(e) => return Err(FleetPlanError::Aws(e)),
    };
    let valid = stored.parse(&bytes).map_err(FleetPlanError::Invalid)?;
    StoredPlan::check_summary(&input, &valid.fleet).map_err(FleetPlanError::Invalid)?;
    Ok(valid)
}

/// [`FleetPlanStore`] on the real S3 client.
pub struct SdkFleetPlans {
    client: s3::Client,
}

impl SdkFleetPlans {
    pub fn new(config: &SdkConfig) -> Self {
        SdkFleetPlans {
            client: s3::Client::new(config),
        }
    }

    /// Stores a plan (compact JSON) where `stored` says. The key holds the plan's digest: putting
    /// the same plan again writes the same bytes.
    pub async fn put_plan(&self, stored: &StoredPlan, bytes: Vec<u8>) -> Result<(), AwsError> {
        self.client
            .put_object()
            .bucket(&stored.bucket)
            .key(&stored.key)
            .content_type("application/json")
            .body(bytes.into())
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("PutObject", e))?;
        Ok(())
    }
}

#[async_trait]
impl FleetPlanStore for SdkFleetPlans {
    async fn get_plan(&self, bucket: &str, key: &str) -> Result<Vec<u8>, AwsError> {
        let out = self
            .client
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetObject", e))?;
        // Checked before reading the body: a plan is read by a 128 MB function.
        let length = out.content_length().unwrap_or(0);
        if usize::try_from(length).map_or(true, |n| n > MAX_STORED_FLEET_PLAN_BYTES) {
            return Err(AwsError::new(
                AwsErrorKind::Rejected,
                "GetObject",
                format!(
                    "s3://{bucket}/{key} is {length} bytes, more than a stored fleet plan's \
                     {MAX_STORED_FLEET_PLAN_BYTES}"
                ),
            ));
        }
        let body = out.body.collect().await.map_err(|e| {
            AwsError::new(
                AwsErrorKind::Transient,
                "GetObject",
                format!("reading s3://{bucket}/{key}: {e}"),
            )
        })?;
        Ok(body.into_bytes().to_vec())
    }
}
