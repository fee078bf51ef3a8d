//! The traffic APIs with only their reads: what evaluate-alarms gets to look at where traffic is
//! at every check (the routers' `read`: `read_forward`, `records`), and no executions API.
//!
//! Why a wrapper: the routers hold the APIs as trait objects, whose vtables link every method
//! of the client behind them — every ELBv2 and Route 53 operation the rollout makes, with their
//! serializers and error types (about 0.4 MB zipped). Through these wrappers only the reads are
//! linked into evaluate-alarms. A write through them is refused (`AccessDenied`, as IAM would:
//! the function's role may not write either).

use std::collections::BTreeMap;

use async_trait::async_trait;
use canary_core::target_health::TargetState;
use canary_core::{AlbTarget, Route53Target};

use crate::alb::{AlbApi, ForwardAction, ForwardRead, TargetGroupInfo, TargetGroupWeight};
use crate::error::{AwsError, AwsErrorKind};
use crate::executions::{ExecutionHistory, ExecutionsApi};
use crate::route53::{NewWeightedRecord, Route53Api, TxtRecord, WeightedRecord};

fn refused(operation: &'static str) -> AwsError {
    AwsError::new(
        AwsErrorKind::AccessDenied,
        operation,
        "this function only reads traffic targets",
    )
}

/// An [`AlbApi`] that reads the forward action only.
pub struct ReadOnlyAlb<A>(pub A);

#[async_trait]
impl<A: AlbApi> AlbApi for ReadOnlyAlb<A> {
    async fn read_forward(&self, target: &AlbTarget) -> Result<ForwardRead, AwsError> {
        self.0.read_forward(target).await
    }

    async fn write_forward(
        &self,
        _target: &AlbTarget,
        _current: &ForwardAction,
        _weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        Err(refused("ModifyListener"))
    }

    async fn target_groups(
        &self,
        _region: &str,
        _arns: &[String],
    ) -> Result<Vec<TargetGroupInfo>, AwsError> {
        Err(refused("DescribeTargetGroups"))
    }

    async fn target_health(&self, _target_group_arn: &str) -> Result<Vec<TargetState>, AwsError> {
        Err(refused("DescribeTargetHealth"))
    }

    async fn tags(&self, _region: &str, _arn: &str) -> Result<BTreeMap<String, String>, AwsError> {
        Err(refused("DescribeTags"))
    }
}

/// A [`Route53Api`] that reads a target's records only.
pub struct ReadOnlyRoute53<R>(pub R);

#[async_trait]
impl<R: Route53Api> Route53Api for ReadOnlyRoute53<R> {
    async fn records(&self, target: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError> {
        self.0.records(target).await
    }

    async fn write_weights(
        &self,
        _target: &Route53Target,
        _stable: u16,
        _canary: u16,
    ) -> Result<String, AwsError> {
        Err(refused("ChangeResourceRecordSets"))
    }

    async fn wait_in_sync(&self, _change_id: &str) -> Result<bool, AwsError> {
        Err(refused("GetChange"))
    }

    async fn health_check_reports(&self, _health_check_id: &str) -> Result<Vec<String>, AwsError> {
        Err(refused("GetHealthCheckStatus"))
    }

    async fn txt_records(&self, _zone_id: &str, _name: &str) -> Result<Vec<TxtRecord>, AwsError> {
        Err(refused("ListResourceRecordSets"))
    }

    async fn named_records(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
    ) -> Result<Vec<WeightedRecord>, AwsError> {
        Err(refused("ListResourceRecordSets"))
    }

    async fn create_weighted(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
        _records: &[NewWeightedRecord],
    ) -> Result<String, AwsError> {
        Err(refused("ChangeResourceRecordSets"))
    }
}

/// An [`ExecutionsApi`] that reads nothing: a check's look at the targets never asks about
/// other executions.
pub struct NoExecutions;

#[async_trait]
impl ExecutionsApi for NoExecutions {
    async fn running_executions(&self, _state_machine_arn: &str) -> Result<Vec<String>, AwsError> {
        Err(refused("ListExecutions"))
    }

    async fn execution_input(&self, _execution_arn: &str) -> Result<Option<String>, AwsError> {
        Err(refused("DescribeExecution"))
    }

    async fn history(&self, _execution_arn: &str) -> Result<ExecutionHistory, AwsError> {
        Err(refused("GetExecutionHistory"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers the read; a write reaching it would be the wrapper's bug (it panics).
    struct Records;

    #[async_trait]
    impl Route53Api for Records {
        async fn records(&self, _: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError> {
            Ok(Vec::new())
        }
        async fn write_weights(
            &self,
            _: &Route53Target,
            _: u16,
            _: u16,
        ) -> Result<String, AwsError> {
            panic!("a write went through")
        }
        async fn wait_in_sync(&self, _: &str) -> Result<bool, AwsError> {
            panic!("a write went through")
        }
        async fn health_check_reports(&self, _: &str) -> Result<Vec<String>, AwsError> {
            panic!("an unused read went through")
        }
        async fn txt_records(&self, _: &str, _: &str) -> Result<Vec<TxtRecord>, AwsError> {
            panic!("an unused read went through")
        }
        async fn named_records(
            &self,
            _: &str,
            _: &str,
            _: &str,
        ) -> Result<Vec<WeightedRecord>, AwsError> {
            panic!("an unused read went through")
        }
        async fn create_weighted(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: &[NewWeightedRecord],
        ) -> Result<String, AwsError> {
            panic!("a write went through")
        }
    }

    #[tokio::test]
    async fn reads_go_through_and_writes_are_refused_as_iam_would() {
        let target: Route53Target = serde_json::from_value(serde_json::json!({
            "hostedZoneId": "Z1", "recordName": "app.example.com", "recordType": "A",
            "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
        }))
        .expect("a target");
        let route53 = ReadOnlyRoute53(Records);
        assert_eq!(route53.records(&target).await, Ok(Vec::new()));
        let refused = route53.write_weights(&target, 100, 0).await.unwrap_err();
        assert_eq!(refused.kind, AwsErrorKind::AccessDenied);
        assert_eq!(refused.operation, "ChangeResourceRecordSets");
        assert!(route53.create_weighted("Z1", "x.", "A", &[]).await.is_err());
        assert!(route53.txt_records("Z1", "x.").await.is_err());
        assert!(NoExecutions.history("arn").await.is_err());
    }
}
