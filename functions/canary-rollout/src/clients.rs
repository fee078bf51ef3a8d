//! The one wiring: every AWS (and management-cluster) client the functions and the operator
//! CLI call, built once from the SDK configuration and the environment, with no network
//! call. The operations take borrowed views of them ([`Apis`], [`Reads`], [`SignalApis`]);
//! decision tests build those views over `canary_aws::fakes` instead, and the over-the-wire
//! tests build these clients against the emulator, as the functions do.
//!
//! A new kind of traffic target or signal provider adds its client here and to its view, and
//! nowhere else: `main.rs`, the CLI and the tests pick it up.

use canary_aws::{
    HttpDatadog, HttpPrometheus, PollWait, SdkAlb, SdkCloudWatch, SdkConfig, SdkEks, SdkExecutions,
    SdkGlobalAccelerator, SdkRoute53, SdkSynthetics, SdkVpcLattice,
};
use canary_kube::{ArgoCdConnect, ManagementAccess, OwnedManagement};

use crate::signals::SignalApis;
use crate::traffic::{Apis, Reads};

/// The environment the clients are configured from: `std::env::var` in a function, a map in
/// a test.
pub type Env<'e> = &'e dyn Fn(&str) -> Option<String>;

/// The process environment, as a Lambda function or a person's shell gives it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What the rollout moves traffic with (shift-weights; the CLI's `restore` and reads).
pub struct TrafficClients {
    alb: SdkAlb,
    global_accelerator: SdkGlobalAccelerator,
    vpc_lattice: SdkVpcLattice,
    route53: SdkRoute53,
    executions: SdkExecutions,
    /// The management cluster, for GitOps targets (`"via": "argocd"`): with `MANAGEMENT_ACCESS`
    /// (and `MANAGEMENT_CLUSTER_NAME` or `MANAGEMENT_SECRET_ID`) set, as the template gives
    /// them to shift-weights. Without it such a target is refused with a message saying so.
    management: Option<OwnedManagement>,
}

impl TrafficClients {
    /// Fails only on a `MANAGEMENT_*` environment that names no usable access, saying which.
    pub fn from_config(config: &SdkConfig, env: Env<'_>) -> Result<Self, String> {
        let management = match env("MANAGEMENT_ACCESS") {
            Some(_) => Some(OwnedManagement::new(
                ManagementAccess::from_env(env)?,
                config,
            )?),
            None => None,
        };
        Ok(TrafficClients {
            alb: SdkAlb::new(config),
            global_accelerator: SdkGlobalAccelerator::new(config, PollWait::ACCELERATOR_POLL_EVERY),
            vpc_lattice: SdkVpcLattice::new(config),
            route53: SdkRoute53::new(config, PollWait::ROUTE53_IN_SYNC),
            executions: SdkExecutions::new(config),
            management,
        })
    }

    pub fn apis(&self) -> Apis<'_> {
        Apis {
            alb: &self.alb,
            test_rules: &self.alb,
            global_accelerator: &self.global_accelerator,
            vpc_lattice: &self.vpc_lattice,
            route53: &self.route53,
            executions: &self.executions,
            argocd: self.management.as_ref().map(|m| m as &dyn ArgoCdConnect),
        }
    }

    /// Route 53 beyond the targets' records (the CLI reads a zone's TXT records, creates the
    /// apex records).
    pub fn route53(&self) -> &SdkRoute53 {
        &self.route53
    }
}

/// What a check reads and judges with: the targets' weights (reads only: see
/// [`crate::traffic::readers`]) and every signal provider (evaluate-alarms; the CLI's
/// `plan check`).
pub struct CheckClients {
    alb: SdkAlb,
    global_accelerator: SdkGlobalAccelerator,
    vpc_lattice: SdkVpcLattice,
    route53: SdkRoute53,
    cloudwatch: SdkCloudWatch,
    prometheus: HttpPrometheus,
    datadog: HttpDatadog,
    eks: SdkEks,
    synthetics: SdkSynthetics,
}

impl CheckClients {
    /// Datadog's keys come from the secret `DATADOG_SECRET_ARN` names (the template's
    /// `DatadogSecretArn`); `DATADOG_API_URL` replaces `https://api.<site>` (a test server, a
    /// proxy). Unset or empty: none.
    pub fn from_config(config: &SdkConfig, env: Env<'_>) -> Self {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        CheckClients {
            alb: SdkAlb::new(config),
            global_accelerator: SdkGlobalAccelerator::new(config, PollWait::ACCELERATOR_POLL_EVERY),
            vpc_lattice: SdkVpcLattice::new(config),
            route53: SdkRoute53::new(config, PollWait::ROUTE53_IN_SYNC),
            cloudwatch: SdkCloudWatch::new(config),
            prometheus: HttpPrometheus::new(config),
            datadog: HttpDatadog::new(config, var("DATADOG_SECRET_ARN"), var("DATADOG_API_URL")),
            eks: SdkEks::new(config),
            synthetics: SdkSynthetics::new(config),
        }
    }

    pub fn reads(&self) -> Reads<'_> {
        Reads {
            alb: &self.alb,
            global_accelerator: &self.global_accelerator,
            vpc_lattice: &self.vpc_lattice,
            route53: &self.route53,
        }
    }

    /// The Synthetics canaries a test-traffic stage is judged by.
    pub fn synthetics(&self) -> &SdkSynthetics {
        &self.synthetics
    }

    pub fn signals(&self) -> SignalApis<'_> {
        SignalApis {
            cloudwatch: &self.cloudwatch,
            prometheus: &self.prometheus,
            datadog: &self.datadog,
            addons: &self.eks,
            health: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_credential_types::provider::SharedCredentialsProvider;
    use aws_credential_types::Credentials;
    use canary_aws::SdkConfig;

    use super::TrafficClients;

    fn config() -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "test", "test", None, None, "tests",
            )))
            .build()
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn the_management_cluster_only_with_management_access_and_a_bad_one_is_named() {
        let without = TrafficClients::from_config(&config(), &env(&[])).expect("no access");
        assert!(without.apis().argocd.is_none());

        let with = TrafficClients::from_config(
            &config(),
            &env(&[
                ("MANAGEMENT_ACCESS", "secret"),
                ("MANAGEMENT_SECRET_ID", "hub"),
            ]),
        )
        .expect("secret access");
        assert!(with.apis().argocd.is_some());

        let refused =
            TrafficClients::from_config(&config(), &env(&[("MANAGEMENT_ACCESS", "kubeconfig")]))
                .err()
                .expect("an unknown mode");
        assert_eq!(
            refused,
            "MANAGEMENT_ACCESS must be `eks` or `secret`, got `kubeconfig`"
        );
        let incomplete =
            TrafficClients::from_config(&config(), &env(&[("MANAGEMENT_ACCESS", "eks")]))
                .err()
                .expect("no cluster name");
        assert_eq!(incomplete, "MANAGEMENT_CLUSTER_NAME is not set");
    }
}
