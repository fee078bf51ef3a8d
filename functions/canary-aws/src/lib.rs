//! Small traits over the AWS APIs cluster-canary touches, with model types of our own so the
//! decision logic that uses them stays free of SDK types and testable without a network,
//! and their implementations on the real `aws-sdk-*` clients.

pub mod alb;
pub mod assumed_role;
pub mod cloudwatch;
pub mod config;
pub mod datadog;
pub mod eks;
pub mod error;
pub mod error_budget;
pub mod events;
pub mod executions;
#[cfg(feature = "fakes")]
pub mod fakes;
#[cfg(feature = "fleet-plans")]
pub mod fleet_plans;
pub mod freeze;
pub mod functions;
pub mod global_accelerator;
pub mod http;
#[cfg(feature = "fleet-plans")]
pub mod intake_deliveries;
pub mod poll;
pub mod prometheus;
pub mod query_error;
pub mod rest_json;
pub mod route53;
pub mod secrets;
pub mod slo_reports;
pub mod synthetics;
pub mod test_rules;
pub mod utc;
pub mod vpc_lattice;
pub mod watches;

pub use alb::{
    AlbApi, AlbReads, ForwardAction, ForwardRead, GroupStickiness, ListenerActions, SdkAlb,
    TargetGroupInfo, TargetGroupWeight,
};
pub use aws_config::SdkConfig;
pub use cloudwatch::{
    AlarmState, AlarmStateValue, CloudWatchApi, MetricQuery, MetricSeries, SdkCloudWatch,
    WentToAlarm,
};
pub use config::{load_sdk_config, sdk_config_loader};
pub use datadog::{DatadogApi, HttpDatadog};
pub use eks::{
    read_addons, read_cluster_health, AccessEntries, AddonHealth, ClusterAccounts, ClusterEksApi,
    ClusterHealth, ClusterInfo, ClusterInsights, ClusterReadiness, EksApi, SdkEks,
};
pub use error::{AwsError, AwsErrorKind};
pub use error_budget::{check_slos, read_budgets, SdkSlos, SloAccounts, SloApi};
pub use events::{EventPublisher, RuleState, RuleStates, SdkEvents, EVENT_SOURCE};
pub use executions::{
    state_machine_of, EndedExecutions, ExecutionHistory, ExecutionListing, ExecutionStarter,
    ExecutionsApi, Listed, SdkExecutions, Started, StateEvent,
};
#[cfg(feature = "fleet-plans")]
pub use fleet_plans::{load_fleet_plan, FleetPlanError, FleetPlanStore, SdkFleetPlans};
pub use freeze::{
    health_region_path, CalendarReading, CalendarState, FreezeApi, FreezeCheckError,
    FreezeSwitchWriter, Freezes, HealthRecords, SdkFreeze, StackFreeze,
};
pub use functions::{FunctionInvoker, Invocation, SdkFunctions};
pub use global_accelerator::{
    AcceleratorEndpoint, EndpointGroup, GlobalAcceleratorApi, GlobalAcceleratorReads,
    SdkGlobalAccelerator,
};
#[cfg(feature = "fleet-plans")]
pub use intake_deliveries::{Delivery, DeliveryLedger, SdkDeliveryLedger};
pub use poll::PollWait;
pub use prometheus::{HttpPrometheus, PrometheusApi};
pub use query_error::QueryError;
pub use route53::{
    NewWeightedRecord, Route53Api, Route53Reads, SdkRoute53, TxtRecord, WeightedRecord,
};
pub use secrets::{SdkSecrets, SecretsApi};
pub use synthetics::{CanaryRun, SdkSynthetics, SyntheticsApi};
pub use test_rules::{ListenerAddress, ListenerRule, TestRuleApi};
pub use utc::{http_date, utc_time};
pub use vpc_lattice::{LatticeAction, LatticeRead, SdkVpcLattice, VpcLatticeApi, VpcLatticeReads};
pub use watches::{AlarmWatchStore, SdkAlarmWatches, TaskFailer};
