//! AWS Global Accelerator endpoint groups: read an endpoint group's endpoints (weights, health)
//! and traffic dial, replace its endpoint list or set its dial in one `UpdateEndpointGroup`,
//! and wait for the accelerator to read `DEPLOYED` again.
//!
//! Global Accelerator's API lives in us-west-2 whatever the Regions of the endpoint groups: the
//! client is always built for it.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_globalaccelerator as ga;
use ga::operation::update_endpoint_group::UpdateEndpointGroupError;
use ga::types::{AcceleratorStatus, EndpointConfiguration};

use crate::error::{AwsError, NotRetried, GLOBAL_ACCELERATOR_REFUSALS};
use crate::poll::{until_done, PollWait};

/// The one Region Global Accelerator's API answers in.
pub const GLOBAL_ACCELERATOR_API_REGION: &str = "us-west-2";

/// An endpoint as the group holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceleratorEndpoint {
    pub id: String,
    /// 0 to 255; Global Accelerator's default for an endpoint added without one is 128.
    pub weight: u8,
    /// Kept as read on every write: `UpdateEndpointGroup` would otherwise reset it.
    pub client_ip_preservation: Option<bool>,
    /// `INITIAL`, `HEALTHY` or `UNHEALTHY`, as Global Accelerator reports it.
    pub health: Option<String>,
}

/// An endpoint group as read.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointGroup {
    pub region: String,
    /// 0 to 100 (percent).
    pub traffic_dial: f32,
    pub endpoints: Vec<AcceleratorEndpoint>,
}

/// What a check reads of a Global Accelerator target.
#[async_trait]
pub trait GlobalAcceleratorReads: Send + Sync {
    /// `DescribeEndpointGroup`.
    async fn endpoint_group(&self, arn: &str) -> Result<EndpointGroup, AwsError>;
}

/// Everything a rollout does with a Global Accelerator target.
#[async_trait]
pub trait GlobalAcceleratorApi: GlobalAcceleratorReads {
    /// `UpdateEndpointGroup` with the whole endpoint list (it replaces the group's list).
    async fn set_endpoints(
        &self,
        arn: &str,
        endpoints: &[AcceleratorEndpoint],
    ) -> Result<(), AwsError>;
    /// `UpdateEndpointGroup` with the traffic dial only (the endpoints stay).
    async fn set_traffic_dial(&self, arn: &str, percent: f32) -> Result<(), AwsError>;
    /// Polls `DescribeAccelerator` until it reads `DEPLOYED`: false when it still did not
    /// after about `within`.
    async fn wait_deployed(
        &self,
        accelerator_arn: &str,
        within: Duration,
    ) -> Result<bool, AwsError>;
    /// `ListTagsForResource` of the accelerator: who manages it.
    async fn tags(&self, accelerator_arn: &str) -> Result<BTreeMap<String, String>, AwsError>;
}

pub struct SdkGlobalAccelerator {
    client: ga::Client,
    /// How often `wait_deployed` looks.
    poll_every: Duration,
}

impl SdkGlobalAccelerator {
    /// A client for us-west-2. Building one makes no network call.
    pub fn new(config: &SdkConfig, poll_every: Duration) -> Self {
        let conf = ga::config::Builder::from(config)
            .region(ga::config::Region::new(GLOBAL_ACCELERATOR_API_REGION))
            .retry_classifier(NotRetried::<UpdateEndpointGroupError>::new(
                GLOBAL_ACCELERATOR_REFUSALS,
            ))
            .build();
        SdkGlobalAccelerator {
            client: ga::Client::from_conf(conf),
            poll_every,
        }
    }
}

#[async_trait]
impl GlobalAcceleratorReads for SdkGlobalAccelerator {
    async fn endpoint_group(&self, arn: &str) -> Result<EndpointGroup, AwsError> {
        let out = self
            .client
            .describe_endpoint_group()
            .endpoint_group_arn(arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeEndpointGroup", e))?;
        let group = out.endpoint_group();
        Ok(EndpointGroup {
            region: group
                .and_then(|g| g.endpoint_group_region())
                .unwrap_or_default()
                .to_owned(),
            traffic_dial: group
                .and_then(|g| g.traffic_dial_percentage())
                .unwrap_or(100.0),
            endpoints: group
                .map(|g| g.endpoint_descriptions())
                .unwrap_or_default()
                .iter()
                .map(|e| AcceleratorEndpoint {
                    id: e.endpoint_id().unwrap_or_default().to_owned(),
                    weight: e.weight().and_then(|w| u8::try_from(w).ok()).unwrap_or(128),
                    client_ip_preservation: e.client_ip_preservation_enabled(),
                    health: e.health_state().map(|h| h.as_str().to_owned()),
                })
                .collect(),
        })
    }
}

#[async_trait]
impl GlobalAcceleratorApi for SdkGlobalAccelerator {
    async fn set_endpoints(
        &self,
        arn: &str,
        endpoints: &[AcceleratorEndpoint],
    ) -> Result<(), AwsError> {
        let configurations: Vec<EndpointConfiguration> = endpoints
            .iter()
            .map(|e| {
                EndpointConfiguration::builder()
                    .endpoint_id(&e.id)
                    .weight(i32::from(e.weight))
                    .set_client_ip_preservation_enabled(e.client_ip_preservation)
                    .build()
            })
            .collect();
        self.client
            .update_endpoint_group()
            .endpoint_group_arn(arn)
            .set_endpoint_configurations(Some(configurations))
            .send()
            .await
            .map(drop)
            .map_err(|e| AwsError::from_sdk("UpdateEndpointGroup", e))
    }

    async fn set_traffic_dial(&self, arn: &str, percent: f32) -> Result<(), AwsError> {
        self.client
            .update_endpoint_group()
            .endpoint_group_arn(arn)
            .traffic_dial_percentage(percent)
            .send()
            .await
            .map(drop)
            .map_err(|e| AwsError::from_sdk("UpdateEndpointGroup", e))
    }

    async fn wait_deployed(
        &self,
        accelerator_arn: &str,
        within: Duration,
    ) -> Result<bool, AwsError> {
        until_done(PollWait::lasting(self.poll_every, within), || async {
            let out = self
                .client
                .describe_accelerator()
                .accelerator_arn(accelerator_arn)
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("DescribeAccelerator", e))?;
            Ok(out.accelerator().and_then(|a| a.status()) == Some(&AcceleratorStatus::Deployed))
        })
        .await
    }

    async fn tags(&self, accelerator_arn: &str) -> Result<BTreeMap<String, String>, AwsError> {
        let out = self
            .client
            .list_tags_for_resource()
            .resource_arn(accelerator_arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("ListTagsForResource", e))?;
        Ok(out
            .tags()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect())
    }
}
