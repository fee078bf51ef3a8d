//! Stable error names. They are what a failed Lambda invocation reports as its `errorType`
//! and therefore what the state machine's `Retry`/`Catch` `ErrorEquals` lists match on.
//! Renaming one is a breaking change for deployed state machines.

use std::fmt;

use strum::{EnumMessage, IntoStaticStr, VariantArray};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, IntoStaticStr, VariantArray, EnumMessage)]
pub enum ErrorName {
    /// The Lambda input itself is malformed (unknown operation, missing field).
    InvalidInput,
    /// The rollout plan is invalid; the message names every offending field by path.
    InvalidPlan,
    /// A listener, rule, target group, hosted zone or record named by the plan does not exist.
    TargetNotFound,
    /// The target exists but cannot be shifted as planned (foreign target groups in the
    /// forward action, no forward action, record TTL longer than the bake time, ...).
    TargetMisconfigured,
    /// Another running execution of the same state machine already shifts one of the targets.
    ConcurrentRollout,
    /// A controller (the AWS Load Balancer Controller, ACK) manages the listener or rule and
    /// would put its own weights back; nothing was written. The message names the controller,
    /// its owner and the ways out.
    TrafficOwnedByController,
    /// The weights are no longer what this rollout last set: someone else changed them. Found
    /// before a write, nothing was written; found by the read-back after one, the message says
    /// so (another writer, or a controller putting its own weights back).
    WeightsChangedExternally,
    /// AWS throttled, timed out or failed on its side; retrying may succeed.
    AwsTransient,
    /// The function's role may not perform a call.
    AwsAccessDenied,
    /// AWS rejected a call for a reason retrying will not fix (a quota: `LimitExceededException`,
    /// which the SDK's standard retry would take for a throttle, is this, at the first answer).
    AwsRequestFailed,
    /// A Route 53 change did not reach INSYNC within the bound; the weights are written.
    ChangeNotInSync,
    /// GitOps mode: a step's weights, written on the Argo CD cluster Secrets, did not reach
    /// Route 53 within the target's `syncTimeoutSeconds` (Argo CD did not sync the Ingress, or
    /// ExternalDNS did not write it). The step is not set; the rollout rolls back.
    WeightsNotSynced,
    /// A step's weights are written but the target did not apply them within the plan's
    /// unjudged bound (`analysis.maxUnjudgedSeconds`, at most 3 minutes): a Global Accelerator
    /// still `IN_PROGRESS`. Traffic may already be split, unjudged: the rollout rolls back.
    StepNotInEffect,
    /// A CloudWatch alarm the plan names (or an alarm prefix) matches no alarm.
    AlarmNotFound,
    /// The new EKS cluster is not ACTIVE yet (CREATING, UPDATING): retry later.
    ClusterNotReady,
    /// The new EKS cluster does not exist.
    ClusterNotFound,
    /// The new EKS cluster FAILED or is being deleted.
    ClusterFailed,
    /// A Secret of the same name exists and cluster-canary did not create it (or it is for
    /// another cluster): it is left untouched.
    SecretNotOwned,
    /// Another Argo CD cluster Secret already has the same `server`; Argo CD would pick one
    /// of the two at random.
    DuplicateClusterServer,
    /// The Kubernetes API refused for lack of permission (401/403).
    KubePermissionDenied,
    /// The Kubernetes API answered 404 where an object was needed.
    KubeNotFound,
    /// The Kubernetes API answered 409 (another field manager owns the fields).
    KubeConflict,
    /// The Kubernetes API failed on its side or could not be reached; retrying may succeed.
    KubeTransient,
    /// The Kubernetes API refused the request for another reason.
    KubeRequestFailed,
    /// The TLS connection to the Kubernetes API failed: its certificate is not signed by the
    /// configured CA, does not cover the server's name, or the CA data is not a certificate.
    /// Retrying cannot fix the connection settings.
    KubeTlsFailed,
    /// The EventBridge event is not a usable EKS CloudTrail event.
    InvalidEvent,
    /// The cluster's profile tag names a profile that is not configured.
    ProfileNotFound,
    /// A hook of the plan answered `fail`, failed, timed out or answered something else.
    HookFailed,
    /// The test-traffic stage failed: a Synthetics canary's run failed, or none came within
    /// the stage, or an alarm of the stage went to ALARM. No user request reached the new
    /// cluster; the test rule is removed and the rollout ends.
    TestTrafficFailed,
    /// A metrics provider the plan queries (Prometheus, AMP) could not be reached, or failed
    /// or throttled on its side; retrying may succeed.
    MetricsProviderUnavailable,
    /// A metrics provider refused the function's credentials (401/403), or answered with
    /// something that is not its API (a wrong URL, a proxy's page): retrying cannot fix it.
    MetricsProviderRefused,
    /// The stack's SafetyNet rule is disabled or deleted: a rollout stopped, timed out or
    /// failed without its own rollback would keep its traffic where it stopped until the sweep
    /// (or a person) restored it. Nothing started; enable the rule and start again.
    SafetyNetDisabled,
}

/// An error that knows its stable name: what every function's error type implements.
pub trait NamedError: std::error::Error {
    fn name(&self) -> ErrorName;
}

impl ErrorName {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The error called `name`, if it is one of the product's.
    pub fn named(name: &str) -> Option<ErrorName> {
        ErrorName::VARIANTS
            .iter()
            .copied()
            .find(|n| n.as_str() == name)
    }

    /// The doc comment of the variant: what the error means (docs/errors.md is made of them).
    pub fn meaning(self) -> &'static str {
        self.get_documentation().unwrap_or_default()
    }

    /// Whether the state machine should retry a task that failed with this error.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorName::AwsTransient
                | ErrorName::MetricsProviderUnavailable
                | ErrorName::ChangeNotInSync
                | ErrorName::KubeTransient
                | ErrorName::ClusterNotReady
        )
    }
}

impl fmt::Display for ErrorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_pascal_case() {
        let names: HashSet<_> = ErrorName::VARIANTS.iter().map(|n| n.as_str()).collect();
        assert_eq!(names.len(), ErrorName::VARIANTS.len());
        for name in names {
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric()), "{name}");
            assert!(name.starts_with(|c: char| c.is_ascii_uppercase()), "{name}");
        }
    }

    #[test]
    fn every_name_says_what_it_means() {
        for name in ErrorName::VARIANTS {
            assert!(!name.meaning().is_empty(), "{name} has no doc comment");
        }
        assert!(ErrorName::HookFailed
            .meaning()
            .starts_with("A hook of the plan"));
    }

    #[test]
    fn only_transient_errors_are_retryable() {
        let retryable: Vec<_> = ErrorName::VARIANTS
            .iter()
            .copied()
            .filter(|n| n.is_retryable())
            .collect();
        assert_eq!(
            retryable,
            [
                ErrorName::AwsTransient,
                ErrorName::ChangeNotInSync,
                ErrorName::ClusterNotReady,
                ErrorName::KubeTransient,
                ErrorName::MetricsProviderUnavailable
            ]
        );
    }
}
