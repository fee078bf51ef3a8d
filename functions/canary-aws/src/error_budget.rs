//! The plan's SLOs as CloudWatch Application Signals keeps them: their budget reports
//! (`BatchGetServiceLevelObjectiveBudgetReport`, one call per Region for every SLO of it). At
//! Admit the same report says that each exists and what kind it is (its `EvaluationType` and
//! SLI), so `GetServiceLevelObjective` is never needed. The call goes through
//! [`crate::slo_reports`], not the SDK's client, which the packages had no room for.
//!
//! An SLO named by name lives in the new cluster's Region; one named by ARN in its ARN's. Each
//! is read with the function's role, or the plan's `errorBudget.roleArn` (SLOs of another
//! account). A report that cannot be read is kept as unread, with why: it holds the rollout
//! (`canary_core::error_budget`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::SharedCredentialsProvider;
use canary_core::error_budget::{Budget, BudgetStatus, BudgetUnit, SloBudget, SloReading};
use canary_core::plan::{slo_arn_parts, ErrorBudgetSection};

use crate::assumed_role::AssumedRole;
use crate::error::{AwsError, AwsErrorKind};
use crate::freeze::FreezeCheckError;
use crate::http::LazyHttps;
use crate::slo_reports::{self, Report, SloReportsClient};

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
fn explicit_share_refused(section: &ErrorBudgetSection, kind: &SloBudget) -> Option<&'static str> {
    section.rollout_share.filter(|share| *share > 0.0)?;
    if kind.period_based {
        return Some(
            "is period-based: its budget is in seconds, and rolloutShare counts the new cluster's \
             requests; name a request-based SLO, or set rolloutShare to 0",
        );
    }
    (kind.latency && kind.slower_than_seconds.is_none()).then_some(
        "is a latency SLO whose SLI gives no MetricThreshold (with ComparisonOperator LessThan or \
         LessThanOrEqualTo) a good request is under, so the new cluster's slow requests cannot be \
         counted; give it one, or set rolloutShare to 0",
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
        let refused = |message: String, access_denied: bool| FreezeCheckError {
            path: format!("errorBudget.slos[{i}]"),
            message: format!("SLO `{slo}` {message}"),
            access_denied,
        };
        let whose = match &section.role_arn {
            Some(role) => format!("of role {role}'s account"),
            None => "of this account (an SLO of another account is read through \
                     errorBudget.roleArn)"
                .to_owned(),
        };
        match api.budget_reports(&[slo.as_str()], SystemTime::now()).await {
            Ok(readings) => match readings.first() {
                Some(SloReading::Report(report)) => {
                    if let Some(why) = explicit_share_refused(section, report) {
                        return Err(refused(why.to_owned(), false));
                    }
                }
                // The batch names a missing SLO among its errors (`<ErrorCode>: <message>`),
                // not as a failed call: its code is classified as every AWS error's.
                Some(SloReading::Unread { error, .. })
                    if crate::error::classify(error.split(':').next(), 400)
                        == AwsErrorKind::NotFound =>
                {
                    return Err(refused(
                        format!("does not exist in {region} {whose}: {error}"),
                        false,
                    ))
                }
                Some(SloReading::Unread { error, .. }) => {
                    return Err(refused(
                        format!("cannot be read in {region}: {error}"),
                        false,
                    ))
                }
                None => return Err(refused(format!("was not answered for in {region}"), false)),
            },
            Err(e) => {
                let reader = match &section.role_arn {
                    Some(role) => format!("role {role}"),
                    None => "these credentials".to_owned(),
                };
                let why = match e.kind {
                    AwsErrorKind::NotFound => format!("does not exist in {region} {whose}"),
                    AwsErrorKind::AccessDenied => format!(
                        "may not be read by {reader} \
                         (application-signals:BatchGetServiceLevelObjectiveBudgetReport on it)"
                    ),
                    _ => format!("cannot be read in {region}"),
                };
                return Err(refused(
                    format!("{why}: {e}"),
                    e.kind == AwsErrorKind::AccessDenied,
                ));
            }
        }
    }
    Ok(())
}

pub struct SdkSlos {
    config: SdkConfig,
    /// One connector for every Region and role (built on first use).
    http: Arc<LazyHttps>,
}

impl SdkSlos {
    pub fn new(config: &SdkConfig) -> Self {
        SdkSlos {
            config: config.clone(),
            http: Arc::default(),
        }
    }
}

impl SloAccounts for SdkSlos {
    fn slos(&self, region: &str, role_arn: Option<&str>) -> Box<dyn SloApi> {
        let credentials = match role_arn {
            Some(role) => Some(SharedCredentialsProvider::new(AssumedRole::new(
                &self.config,
                role,
                "cluster-canary-error-budget",
            ))),
            None => self.config.credentials_provider(),
        };
        // `AWS_ENDPOINT_URL` (the local harness) as every SDK client takes it.
        let endpoint = self.config.endpoint_url().map_or_else(
            || format!("https://application-signals.{region}.amazonaws.com"),
            str::to_owned,
        );
        Box::new(SdkSloClient {
            client: SloReportsClient {
                endpoint,
                region: region.to_owned(),
                credentials,
                http: self.http.clone(),
            },
        })
    }
}

struct SdkSloClient {
    client: SloReportsClient,
}

/// Whether `report` (its name and ARN) is the one the plan asked for by `reference`.
fn answers(reference: &str, name: &str, arn: &str) -> bool {
    if reference.starts_with("arn:") {
        reference == arn
    } else {
        reference == name
    }
}

fn budget_of(report: &Report) -> SloBudget {
    let requests = report
        .total_budget_requests
        .zip(report.budget_requests_remaining)
        .map(|(total, remaining)| (BudgetUnit::Requests, total, remaining));
    let seconds = report
        .total_budget_seconds
        .zip(report.budget_seconds_remaining)
        .map(|(total, remaining)| (BudgetUnit::Seconds, total, remaining));
    SloBudget {
        latency: report.latency(),
        // As a CloudWatch statistic will carry it (`TC(<seconds>:)`): three significant digits.
        slower_than_seconds: report
            .slower_than_seconds()
            .and_then(canary_core::analysis::compare::derived_threshold),
        period_based: report.evaluation_type.as_deref() == Some("PeriodBased"),
        name: report.name.clone(),
        status: BudgetStatus::parse(&report.budget_status),
        attainment: report.attainment,
        goal: report.goal.as_ref().and_then(|g| g.attainment_goal),
        budget: requests.or(seconds).map(|(unit, total, remaining)| Budget {
            unit,
            total,
            remaining,
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
        let out = self.client.budget_reports(slos, at).await?;
        Ok(slos
            .iter()
            .map(|slo| {
                if let Some(report) = out.reports.iter().find(|r| answers(slo, &r.name, &r.arn)) {
                    return SloReading::Report(budget_of(report));
                }
                let error = match out.errors.iter().find(|e| answers(slo, &e.name, &e.arn)) {
                    Some(e) => format!("{}: {}", e.error_code, e.error_message),
                    None => format!("{} answered nothing for it", slo_reports::OPERATION),
                };
                SloReading::Unread {
                    slo: (*slo).to_owned(),
                    error,
                }
            })
            .collect())
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
        let kind = |period_based: bool, latency: bool| SloBudget {
            name: "payments".to_owned(),
            status: BudgetStatus::Ok,
            attainment: None,
            goal: None,
            budget: None,
            latency,
            slower_than_seconds: None,
            period_based,
        };
        let (periods, latency, available) =
            (kind(true, false), kind(false, true), kind(false, false));
        let latency_with_threshold = SloBudget {
            slower_than_seconds: Some(0.5),
            ..latency.clone()
        };
        // A default share is only not judged there; one the plan sets is refused.
        assert_eq!(explicit_share_refused(&section, &periods), None);
        let set = ErrorBudgetSection {
            rollout_share: Some(5.0),
            ..section.clone()
        };
        assert!(explicit_share_refused(&set, &periods).is_some_and(|w| w.contains("period-based")));
        assert!(explicit_share_refused(&set, &latency)
            .is_some_and(|w| w.contains("latency SLO whose SLI gives no MetricThreshold")));
        assert_eq!(explicit_share_refused(&set, &latency_with_threshold), None);
        assert_eq!(explicit_share_refused(&set, &available), None);
        assert!(!answers(
            "arn:aws:application-signals:eu-west-1:111122223333:slo/payments",
            "payments",
            "arn:other"
        ));
    }

    /// Application Signals answering each SLO by a fixed reading, or failing the whole call.
    struct Answers(Result<SloReading, AwsErrorKind>);

    #[async_trait]
    impl SloApi for Answers {
        async fn budget_reports(
            &self,
            _: &[&str],
            _: SystemTime,
        ) -> Result<Vec<SloReading>, AwsError> {
            match &self.0 {
                Ok(reading) => Ok(vec![reading.clone()]),
                Err(kind) => Err(AwsError::new(*kind, slo_reports::OPERATION, "refused")),
            }
        }
    }

    impl SloAccounts for Answers {
        fn slos(&self, _: &str, _: Option<&str>) -> Box<dyn SloApi> {
            Box::new(Answers(self.0.clone()))
        }
    }

    #[tokio::test]
    async fn admit_refuses_an_slo_missing_unreadable_or_of_the_wrong_kind() {
        let section = ErrorBudgetSection {
            slos: vec!["checkout".to_owned()],
            rollout_share: Some(5.0),
            ..Default::default()
        };
        let unread = |error: &str| {
            Answers(Ok(SloReading::Unread {
                slo: "checkout".to_owned(),
                error: error.to_owned(),
            }))
        };
        let refusal = |answers: Answers| {
            let section = section.clone();
            async move {
                check_slos(&answers, &section, "us-east-1")
                    .await
                    .unwrap_err()
            }
        };
        let missing = refusal(unread("ResourceNotFoundException: Slo checkout not found")).await;
        assert_eq!(missing.path, "errorBudget.slos[0]");
        assert!(
            missing
                .message
                .starts_with("SLO `checkout` does not exist in us-east-1 of this account"),
            "{}",
            missing.message
        );
        // A message that says "NotFound" does not make another code a missing SLO.
        let other = refusal(unread("ValidationException: NotFound in the text")).await;
        assert!(
            other.message.contains("cannot be read in us-east-1"),
            "{}",
            other.message
        );
        let denied = refusal(Answers(Err(AwsErrorKind::AccessDenied))).await;
        assert!(denied.access_denied);
        assert!(
            denied
                .message
                .contains("BatchGetServiceLevelObjectiveBudgetReport on it"),
            "{}",
            denied.message
        );
        let periods = Answers(Ok(SloReading::Report(SloBudget {
            name: "checkout".to_owned(),
            status: BudgetStatus::Ok,
            attainment: None,
            goal: None,
            budget: None,
            latency: false,
            slower_than_seconds: None,
            period_based: true,
        })));
        assert!(refusal(periods).await.message.contains("is period-based"));
    }
}
