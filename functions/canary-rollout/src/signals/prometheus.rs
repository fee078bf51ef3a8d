//! Prometheus and AMP checks (plan `analysis.prometheus`): one instant query per check, at the
//! check's time, its one number judged against the check's `min`/`max`.

use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::{PrometheusApi, PrometheusError};
use canary_core::analysis::prometheus::{instant_value, judge_prometheus, render_query};
use canary_core::analysis::{CheckOutcome, CheckVerdict, PrometheusChecks, PrometheusEndpoint};
use canary_core::metrics::Point;
use canary_core::plan::ClusterRef;

use super::{Collected, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) struct Prometheus<'a> {
    pub api: &'a dyn PrometheusApi,
    pub section: &'a PrometheusChecks,
    pub cluster: &'a ClusterRef,
}

impl Prometheus<'_> {
    fn endpoint(&self) -> Result<PrometheusEndpoint, AnalysisError> {
        self.section
            .endpoint()
            .map_err(|message| AnalysisError::PrometheusQuery {
                path: "analysis.prometheus".to_owned(),
                message,
            })
    }

    /// Each check's path, rendered query and what the provider answered.
    async fn query_all(
        &self,
        endpoint: &PrometheusEndpoint,
        now: SystemTime,
    ) -> Result<Vec<(String, Result<serde_json::Value, PrometheusError>)>, AnalysisError> {
        let mut answers = Vec::with_capacity(self.section.checks.len());
        for (i, check) in self.section.checks.iter().enumerate() {
            let path = format!("analysis.prometheus.checks[{i}].query");
            let query = render_query(&check.query, self.cluster).map_err(|message| {
                AnalysisError::PrometheusQuery {
                    path: path.clone(),
                    message,
                }
            })?;
            let answer = self.api.instant_query(endpoint, &query, now).await;
            answers.push((path, answer));
        }
        Ok(answers)
    }
}

#[async_trait]
impl SignalSource for Prometheus<'_> {
    /// Runs every query once: a provider that cannot be reached or refuses, a query it
    /// rejects, and a query that gives no number now are refused before traffic moves.
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError> {
        let endpoint = self.endpoint()?;
        let mut current = Vec::new();
        let answers = self.query_all(&endpoint, now).await?;
        for (check, (path, answer)) in self.section.checks.iter().zip(answers) {
            let data = answer.map_err(|source| match source.is_about_the_query() {
                true => AnalysisError::PrometheusQuery {
                    path: path.clone(),
                    message: source.to_string(),
                },
                false => AnalysisError::Prometheus {
                    path: path.clone(),
                    source,
                },
            })?;
            match instant_value(&data) {
                Ok(Some(value)) => current.push(judge_prometheus(check, Ok(Some(value))).reason),
                Ok(None) => {
                    return Err(AnalysisError::PrometheusQuery {
                        path,
                        message: "gives no data now (an empty result or NaN): a check that \
                                  never has data can never pass; query what exists before \
                                  traffic moves (e.g. `or vector(0)` for a count)"
                            .to_owned(),
                    })
                }
                Err(why) => return Err(AnalysisError::PrometheusQuery { path, message: why }),
            }
        }
        Ok(Validated {
            alarms: Vec::new(),
            metric_queries: self.section.checks.len(),
            current,
        })
    }

    /// A provider that cannot be reached or refuses is an error (retried, then a rollback);
    /// an answer about the query itself is that check's inconclusive outcome.
    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError> {
        let endpoint = self.endpoint()?;
        let mut collected = Collected::default();
        let answers = self.query_all(&endpoint, now).await?;
        for (check, (path, answer)) in self.section.checks.iter().zip(answers) {
            let outcome = match answer {
                Ok(data) => {
                    let value = instant_value(&data);
                    // CloudWatch takes finite values only; ±Inf is still judged.
                    if let Ok(Some(value)) = value.clone().map(|v| v.filter(|v| v.is_finite())) {
                        collected
                            .points
                            .push(Point::metric_value(cluster, &check.name, value));
                    }
                    judge_prometheus(check, value)
                }
                Err(source) if source.is_about_the_query() => CheckOutcome::new(
                    CheckVerdict::Inconclusive,
                    format!("prometheus {}: {source}", check.name),
                ),
                Err(source) => return Err(AnalysisError::Prometheus { path, source }),
            };
            collected.outcomes.push(outcome);
        }
        Ok(collected)
    }
}
