//! What the query-language providers (Prometheus, Datadog) share as signal sources: every
//! check's query rendered for the cluster and asked once per check (and once at Prepare, where
//! anything but a number is refused, naming the check), each number judged against its
//! limits. A provider says only how to ask and how to judge ([`QueryProvider`]).

use std::time::SystemTime;

use async_trait::async_trait;
use canary_core::analysis::query_template::render_query;
use canary_core::analysis::{CheckOutcome, CheckVerdict};
use canary_core::metrics::Point;
use canary_core::plan::ClusterRef;
use canary_core::ErrorName;

use super::{Collected, SignalSource, Validated};
use crate::error::AnalysisError;

/// What asking a provider met, other than an answer.
pub(super) enum AskError {
    /// The query's own fault (rejected, over the provider's limits): `InvalidPlan` at Prepare,
    /// the check's inconclusive outcome at a check.
    Query(String),
    /// The provider's: unreachable, failing, refusing. An error at Prepare and at a check.
    Provider(ErrorName, String),
}

/// One provider's checks, as [`QueryChecks`] asks and judges them.
#[async_trait]
pub(super) trait QueryProvider: Send + Sync {
    /// The plan section's path, `analysis.<provider>`.
    fn path(&self) -> &'static str;
    /// The checks' names and query templates, in plan order.
    fn checks(&self) -> Vec<(&str, &str)>;
    /// Check `index`'s number for the rendered `query` at `now`: `Ok(None)` for no data, an
    /// inner `Err` for an answer a check cannot judge (several series).
    async fn ask(
        &self,
        index: usize,
        query: &str,
        now: SystemTime,
    ) -> Result<Result<Option<f64>, String>, AskError>;
    /// Check `index`'s outcome from its number.
    fn judge(&self, index: usize, value: Result<Option<f64>, String>) -> CheckOutcome;
    /// What to write instead when a query has no data at Prepare.
    fn no_data_hint(&self) -> &'static str;
}

pub(super) struct QueryChecks<'a, P> {
    pub provider: P,
    pub cluster: &'a ClusterRef,
}

impl<P: QueryProvider> QueryChecks<'_, P> {
    /// Each check's path and what the provider answered to its rendered query.
    async fn ask_all(
        &self,
        now: SystemTime,
    ) -> Result<Vec<(String, Result<Result<Option<f64>, String>, AskError>)>, AnalysisError> {
        let mut answers = Vec::new();
        for (index, (_, template)) in self.provider.checks().into_iter().enumerate() {
            let path = format!("{}.checks[{index}].query", self.provider.path());
            let query = render_query(template, self.cluster).map_err(|message| {
                AnalysisError::QueryCheck {
                    path: path.clone(),
                    message,
                }
            })?;
            answers.push((path, self.provider.ask(index, &query, now).await));
        }
        Ok(answers)
    }
}

fn provider_error(path: String, name: ErrorName, message: String) -> AnalysisError {
    AnalysisError::MetricsProvider {
        path,
        name,
        message,
    }
}

#[async_trait]
impl<P: QueryProvider> SignalSource for QueryChecks<'_, P> {
    /// Runs every query once: a provider that cannot be reached or refuses, a query it
    /// rejects, and a query that gives no number now are refused before traffic moves.
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError> {
        let mut current = Vec::new();
        for (index, (path, answer)) in self.ask_all(now).await?.into_iter().enumerate() {
            let refused = |message: String| AnalysisError::QueryCheck {
                path: path.clone(),
                message,
            };
            match answer {
                Ok(Ok(Some(value))) => {
                    current.push(self.provider.judge(index, Ok(Some(value))).reason)
                }
                Ok(Ok(None)) => {
                    return Err(refused(format!(
                        "gives no data now: a check that never has data can never pass; {}",
                        self.provider.no_data_hint()
                    )))
                }
                Ok(Err(why)) | Err(AskError::Query(why)) => return Err(refused(why)),
                Err(AskError::Provider(name, message)) => {
                    return Err(provider_error(path, name, message))
                }
            }
        }
        Ok(Validated {
            metric_queries: current.len(),
            current,
            ..Validated::default()
        })
    }

    /// A provider that cannot be reached or refuses is an error (retried, then a rollback);
    /// an answer about the query itself is that check's inconclusive outcome.
    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError> {
        let names: Vec<String> = self
            .provider
            .checks()
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect();
        let mut collected = Collected::default();
        for (index, (path, answer)) in self.ask_all(now).await?.into_iter().enumerate() {
            let outcome = match answer {
                Ok(value) => {
                    // CloudWatch takes finite values only; ±Inf is still judged.
                    if let Ok(Some(v)) = &value {
                        if v.is_finite() {
                            collected
                                .points
                                .push(Point::metric_value(cluster, &names[index], *v));
                        }
                    }
                    self.provider.judge(index, value)
                }
                Err(AskError::Query(why)) => {
                    let mut outcome = self.provider.judge(index, Err(why));
                    outcome.verdict = CheckVerdict::Inconclusive;
                    outcome
                }
                Err(AskError::Provider(name, message)) => {
                    return Err(provider_error(path, name, message))
                }
            };
            collected.outcomes.push(outcome);
        }
        Ok(collected)
    }
}
