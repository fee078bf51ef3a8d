//! [`FleetApis`] over the AWS SDK: Step Functions for the cells, CloudWatch for the soak and the
//! cells' remaining budgets (Prometheus's too, over HTTPS),
//! EventBridge for the events the fleet's function puts itself, S3 for stored plans.

use async_trait::async_trait;
use canary_aws::executions::Execution;
use canary_aws::{
    AlarmState, AwsError, CloudWatchApi, EventPublisher, FleetPlanStore, HttpPrometheus, Listed,
    PrometheusApi, SdkCloudWatch, SdkConfig, SdkEvents, SdkExecutions, SdkFleetPlans, SdkFreeze,
    SdkSlos, SloAccounts, WentToAlarm,
};
use canary_aws::{CalendarReading, FreezeApi};
use canary_core::freeze::FreezeSwitch;
use canary_core::health::HealthEvent;
use serde_json::Value;
use std::time::SystemTime;

use crate::FleetApis;

pub struct SdkFleetApis {
    executions: SdkExecutions,
    cloudwatch: SdkCloudWatch,
    events: SdkEvents,
    plans: SdkFleetPlans,
    freeze: SdkFreeze,
    slos: SdkSlos,
    prometheus: HttpPrometheus,
}

impl SdkFleetApis {
    pub fn new(config: &SdkConfig) -> Self {
        SdkFleetApis {
            executions: SdkExecutions::new(config),
            cloudwatch: SdkCloudWatch::new(config),
            events: SdkEvents::new(config),
            plans: SdkFleetPlans::new(config),
            freeze: SdkFreeze::new(config),
            slos: SdkSlos::new(config),
            prometheus: HttpPrometheus::new(config),
        }
    }
}

#[async_trait]
impl FreezeApi for SdkFleetApis {
    async fn calendar_state(&self, calendar: &str) -> Result<CalendarReading, AwsError> {
        self.freeze.calendar_state(calendar).await
    }

    async fn switch(&self, parameter: &str) -> Result<FreezeSwitch, AwsError> {
        self.freeze.switch(parameter).await
    }

    async fn health_records(&self, path: &str) -> Result<Vec<HealthEvent>, AwsError> {
        self.freeze.health_records(path).await
    }
}

#[async_trait]
impl FleetApis for SdkFleetApis {
    async fn started_since(
        &self,
        state_machine_arn: &str,
        since: f64,
        status: Option<&str>,
    ) -> Result<Vec<Listed>, AwsError> {
        self.executions
            .started_since(state_machine_arn, since, status)
            .await
    }

    async fn describe(&self, execution_arn: &str) -> Result<Execution, AwsError> {
        self.executions.describe(execution_arn).await
    }

    async fn stop(&self, execution_arn: &str, error: &str, cause: &str) -> Result<(), AwsError> {
        self.executions.stop_as(execution_arn, error, cause).await
    }

    async fn alarms(&self, names: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        self.cloudwatch.alarms_by_names(names).await
    }

    async fn went_to_alarm(
        &self,
        names: &[String],
        since: SystemTime,
    ) -> Result<Vec<WentToAlarm>, AwsError> {
        let mut found = Vec::new();
        for name in names {
            found.extend(self.cloudwatch.went_to_alarm(name, since).await?);
        }
        Ok(found)
    }

    fn slos(&self) -> &dyn SloAccounts {
        &self.slos
    }

    fn prometheus(&self) -> &dyn PrometheusApi {
        &self.prometheus
    }

    fn metrics(&self) -> &dyn CloudWatchApi {
        &self.cloudwatch
    }
}

#[async_trait]
impl EventPublisher for SdkFleetApis {
    async fn put_event(&self, detail_type: &str, detail: &Value) -> Result<(), AwsError> {
        self.events.put_event(detail_type, detail).await
    }
}

#[async_trait]
impl FleetPlanStore for SdkFleetApis {
    async fn get_plan(&self, bucket: &str, key: &str) -> Result<Vec<u8>, AwsError> {
        self.plans.get_plan(bucket, key).await
    }
}
