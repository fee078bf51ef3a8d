//! The plan's SLOs as CloudWatch Application Signals keeps them: their budget reports
//! (`BatchGetServiceLevelObjectiveBudgetReport`, one call per Region for every SLO of it) and,
//! at Admit, that each exists (`GetServiceLevelObjective`).
//!
//! An SLO named by name lives in the new cluster's Region; one named by ARN in its ARN's. Each
//! is read with the function's role, or the plan's `errorBudget.roleArn` (SLOs of another
//! account). A report that cannot be read is kept as unread, with why: it holds the rollout
//! (`canary_core::error_budget`).

use std::collections::BTreeMap;
use std::time::SystemTime;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_sdk_applicationsignals as signals;
use canary_core::error_budget::{Budget, BudgetStatus, BudgetUnit, SloBudget, SloReading};
use canary_core::plan::{slo_arn_parts, ErrorBudgetSection};

use crate::assumed_role::AssumedRole;
use crate::error::{AwsError, AwsErrorKind};
use crate::freeze::FreezeCheckError;

/// Application Signals in one Region, as one role.
#[async_trait]
pub trait SloApi: Send + Sync {
    /// The budget reports of `slos` (names or ARNs) at `at`, each matched to the reference it
    /// was asked by; an SLO the answer says nothing of is unread.
    async fn budget_reports(
        &self,
        slos: &[&str],
        at: SystemTime,
    ) -> Result<Vec<SloReading>, AwsError>;
    /// `slo`'s kind, when it exists and may be read.
    async fn slo_kind(&self, slo: &str) -> Result<SloKind, AwsError>;
}

/// What Admit needs to know of an SLO: whether its budget counts requests, and of what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SloKind {
    /// Request-based (else period-based: its budget is in seconds).
    pub request_based: bool,
    /// A latency SLO (else availability).
    pub latency: bool,
}

/// Application Signals in any Region, as the function's role or another.
pub trait SloAccounts: Send + Sync {
    fn slos(&self, region: &str, role_arn: Option<&str>) -> Box<dyn SloApi>;
}

/// The plan's SLOs by the Region each is read in (names: the new cluster's), in the plan's order.
fn by_region<'a>(
    section: &'a ErrorBudgetSection,
    cluster_region: &'a str,
) -> BTreeMap<&'a str, Vec<&'a str>> {
    let mut regions: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for slo in &section.slos {
        let region = slo_arn_parts(slo).map_or(cluster_region, |(region, _)| region);
        regions.entry(region).or_default().push(slo);
    }
    regions
}

/// Every SLO's reading, in the plan's order: one call per Region; a call that fails leaves
/// each of its SLOs unread, with why.
pub async fn read_budgets(
    accounts: &dyn SloAccounts,
    section: &ErrorBudgetSection,
    cluster_region: &str,
    at: SystemTime,
) -> Vec<SloReading> {
    let mut readings = Vec::new();
    for (region, slos) in by_region(section, cluster_region) {
        let api = accounts.slos(region, section.role_arn.as_deref());
        match api.budget_reports(&slos, at).await {
            Ok(found) => readings.extend(found),
            Err(e) => readings.extend(slos.iter().map(|slo| SloReading::Unread {
                slo: (*slo).to_owned(),
                error: e.to_string(),
            })),
        }
    }
    let order = |r: &SloReading| {
        let named = match r {
            SloReading::Report(report) => report.name.as_str(),
            SloReading::Unread { slo, .. } => slo.as_str(),
        };
        section
            .slos
            .iter()
            .position(|s| s == named || s.rsplit('/').next() == Some(named))
            .unwrap_or(usize::MAX)
    };
    readings.sort_by_key(order);
    readings
}

/// Why a plan that sets `rolloutShare` cannot have it judged on an SLO of `kind` (a default
/// share is only not judged there, and `plan check` says so).
fn explicit_share_refused(section: &ErrorBudgetSection, kind: SloKind) -> Option<&'static str> {
    section.rollout_share.filter(|share| *share > 0.0)?;
    if !kind.request_based {
        return Some(
            "is period-based: its budget is in seconds, and rolloutShare counts the new cluster's \
             requests; name a request-based SLO, or set rolloutShare to 0",
        );
    }
    kind.latency.then_some(
        "is a latency SLO: rolloutShare counts the new cluster's 5xx, not its slow requests; \
         name an availability SLO, or set rolloutShare to 0",
    )
}

/// At Admit: every SLO of the plan exists where it is looked for and may be read (a gate's
/// source Admit cannot read, as a calendar: [`FreezeCheckError`]).
pub async fn check_slos(
    accounts: &dyn SloAccounts,
    section: &ErrorBudgetSection,
    cluster_region: &str,
) -> Result<(), FreezeCheckError> {
    for (i, slo) in section.slos.iter().enumerate() {
        let region = slo_arn_parts(slo).map_or(cluster_region, |(region, _)| region);
        let api = accounts.slos(region, section.role_arn.as_deref());
        let e = match api.slo_kind(slo).await {
            Ok(kind) => match explicit_share_refused(section, kind) {
                Some(why) => {
                    return Err(FreezeCheckError {
                        path: format!("errorBudget.slos[{i}]"),
                        message: format!("SLO `{slo}` {why}"),
                        access_denied: false,
                    })
                }
                None => continue,
            },
            Err(e) => e,
        };
        let (whose, reader) = match &section.role_arn {
            Some(role) => (format!("of role {role}'s account"), format!("role {role}")),
            None => (
                "of this account (an SLO of another account is read through errorBudget.roleArn)"
                    .to_owned(),
                "these credentials".to_owned(),
            ),
        };
        let why = match e.kind {
            AwsErrorKind::NotFound => format!("does not exist in {region} {whose}"),
            AwsErrorKind::AccessDenied => format!(
                "may not be read by {reader} (application-signals:GetServiceLevelObjective and \
                 BatchGetServiceLevelObjectiveBudgetReport on it)"
            ),
            _ => format!("cannot be read in {region}"),
        };
        return Err(FreezeCheckError {
            path: format!("errorBudget.slos[{i}]"),
            message: format!("SLO `{slo}` {why}: {e}"),
            access_denied: e.kind == AwsErrorKind::AccessDenied,
        });
    }
    Ok(())
}

pub struct SdkSlos {
    config: SdkConfig,
}

impl SdkSlos {
    pub fn new(config: &SdkConfig) -> Self {
        SdkSlos {
            config: config.clone(),
        }
    }
}

impl SloAccounts for SdkSlos {
    fn slos(&self, region: &str, role_arn: Option<&str>) -> Box<dyn SloApi> {
        let mut builder = signals::config::Builder::from(&self.config)
            .region(signals::config::Region::new(region.to_owned()));
        if let Some(role) = role_arn {
            let provider = AssumedRole::new(&self.config, role, "cluster-canary-error-budget");
            builder = builder.credentials_provider(SharedCredentialsProvider::new(provider));
        }
        Box::new(SdkSloClient {
            client: signals::Client::from_conf(builder.build()),
        })
    }
}

struct SdkSloClient {
    client: signals::Client,
}

/// Whether `report` (its name and ARN) is the one the plan asked for by `reference`.
fn answers(reference: &str, name: &str, arn: &str) -> bool {
    if reference.starts_with("arn:") {
        reference == arn
    } else {
        reference == name
    }
}

/// Whether an SLO's indicator (request-based, or period-based) measures latency.
fn is_latency(
    requests: Option<&signals::types::RequestBasedServiceLevelIndicator>,
    periods: Option<&signals::types::ServiceLevelIndicator>,
) -> bool {
    let metric_type = requests
        .and_then(|sli| sli.request_based_sli_metric())
        .and_then(|metric| metric.metric_type())
        .or_else(|| {
            periods
                .and_then(|sli| sli.sli_metric())
                .and_then(|m| m.metric_type())
        });
    metric_type == Some(&signals::types::ServiceLevelIndicatorMetricType::Latency)
}

fn budget_of(report: &signals::types::ServiceLevelObjectiveBudgetReport) -> SloBudget {
    let requests = report
        .total_budget_requests()
        .zip(report.budget_requests_remaining())
        .map(|(total, remaining)| (BudgetUnit::Requests, total, remaining));
    let seconds = report
        .total_budget_seconds()
        .zip(report.budget_seconds_remaining())
        .map(|(total, remaining)| (BudgetUnit::Seconds, total, remaining));
    SloBudget {
        latency: is_latency(report.request_based_sli(), report.sli()),
        name: report.name().to_owned(),
        status: BudgetStatus::parse(report.budget_status().as_str()),
        attainment: report.attainment(),
        goal: report.goal().and_then(|g| g.attainment_goal()),
        budget: requests.or(seconds).map(|(unit, total, remaining)| Budget {
            unit,
            total: i64::from(total),
            remaining: i64::from(remaining),
        }),
    }
}

#[async_trait]
impl SloApi for SdkSloClient {
    async fn budget_reports(
        &self,
        slos: &[&str],
        at: SystemTime,
    ) -> Result<Vec<SloReading>, AwsError> {
        const OPERATION: &str = "BatchGetServiceLevelObjectiveBudgetReport";
        let out = self
            .client
            .batch_get_service_level_objective_budget_report()
            .set_slo_ids(Some(slos.iter().map(|s| (*s).to_owned()).collect()))
            .timestamp(at.into())
            .send()
            .await
            .map_err(|e| AwsError::from_sdk(OPERATION, e))?;
        Ok(slos
            .iter()
            .map(|slo| {
                if let Some(report) = out
                    .reports()
                    .iter()
                    .find(|r| answers(slo, r.name(), r.arn()))
                {
                    return SloReading::Report(budget_of(report));
                }
                let error = match out
                    .errors()
                    .iter()
                    .find(|e| answers(slo, e.name(), e.arn()))
                {
                    Some(e) => format!("{}: {}", e.error_code(), e.error_message()),
                    None => format!("{OPERATION} answered nothing for it"),
                };
                SloReading::Unread {
                    slo: (*slo).to_owned(),
                    error,
                }
            })
            .collect())
    }

    async fn slo_kind(&self, slo: &str) -> Result<SloKind, AwsError> {
        let out = self
            .client
            .get_service_level_objective()
            .id(slo)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetServiceLevelObjective", e))?;
        let found = out.slo();
        Ok(SloKind {
            request_based: found.and_then(|s| s.evaluation_type())
                != Some(&signals::types::EvaluationType::PeriodBased),
            latency: is_latency(
                found.and_then(|s| s.request_based_sli()),
                found.and_then(|s| s.sli()),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_in_the_clusters_region_arns_in_their_own() {
        let section = ErrorBudgetSection {
            slos: vec![
                "checkout-availability".to_owned(),
                "arn:aws:application-signals:eu-west-1:111122223333:slo/payments".to_owned(),
                "checkout-latency".to_owned(),
            ],
            ..Default::default()
        };
        let regions = by_region(&section, "us-east-1");
        assert_eq!(
            regions.get("us-east-1"),
            Some(&vec!["checkout-availability", "checkout-latency"])
        );
        assert_eq!(
            regions.get("eu-west-1"),
            Some(&vec![
                "arn:aws:application-signals:eu-west-1:111122223333:slo/payments"
            ])
        );
        assert!(answers("payments", "payments", "arn:x"));
        let periods = SloKind {
            request_based: false,
            latency: false,
        };
        let latency = SloKind {
            request_based: true,
            latency: true,
        };
        // A default share is only not judged there; one the plan sets is refused.
        assert_eq!(explicit_share_refused(&section, periods), None);
        let set = ErrorBudgetSection {
            rollout_share: Some(5.0),
            ..section.clone()
        };
        assert!(explicit_share_refused(&set, periods).is_some_and(|w| w.contains("period-based")));
        assert!(explicit_share_refused(&set, latency).is_some_and(|w| w.contains("latency SLO")));
        let available = SloKind {
            request_based: true,
            latency: false,
        };
        assert_eq!(explicit_share_refused(&set, available), None);
        assert!(!answers(
            "arn:aws:application-signals:eu-west-1:111122223333:slo/payments",
            "payments",
            "arn:other"
        ));
    }
}
