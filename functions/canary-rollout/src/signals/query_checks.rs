//! What the query-language providers (Prometheus, Datadog) share as signal sources: every
//! check's query (and its stable query, when it compares with the stable cluster) rendered for
//! the cluster and asked once per check, and once at Prepare, where anything but a number is
//! refused, naming the query's path; each number judged against the check's limits. A provider
//! says only how to ask and how to judge ([`QueryProvider`]).

use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::QueryError;
use canary_core::analysis::query_template::{render_query, QueryCheckSpec};
use canary_core::analysis::CheckOutcome;
use canary_core::limits::{join_bounded, MAX_REASON_BYTES};
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

impl From<QueryError> for AskError {
    fn from(error: QueryError) -> Self {
        if error.is_about_the_query() {
            AskError::Query(error.to_string())
        } else {
            AskError::Provider(error.error_name(), error.to_string())
        }
    }
}

/// A query's answer: a number, none (`Ok(None)`), or an answer a check cannot judge (`Err`).
pub(super) type Number = Result<Option<f64>, String>;

/// One provider's checks, as [`QueryChecks`] asks and judges them.
#[async_trait]
pub(super) trait QueryProvider: Send + Sync {
    /// The plan section's path, `analysis.<provider>`.
    fn path(&self) -> &'static str;
    /// The checks, in plan order.
    fn checks(&self) -> Vec<QueryCheckSpec<'_>>;
    /// The number check `index`'s rendered `query` (its own or its stable one) gives at `now`.
    async fn ask(&self, index: usize, query: &str, now: SystemTime) -> Result<Number, AskError>;
    /// Check `index`'s outcome from its number and, with a stable query, the stable one's.
    fn judge(&self, index: usize, value: Number, stable: Option<Number>) -> CheckOutcome;
    /// What to write instead when a query has no data at Prepare.
    fn no_data_hint(&self) -> &'static str;
}

pub(super) struct QueryChecks<'a, P> {
    pub provider: P,
    pub cluster: &'a ClusterRef,
}

/// One query of a check, asked: its plan path and what the provider answered.
struct Asked {
    path: String,
    answer: Result<Number, AskError>,
}

impl<P: QueryProvider> QueryChecks<'_, P> {
    /// A template that does not render is the query's own fault, as a query the provider
    /// rejects is.
    async fn ask(&self, index: usize, field: &str, template: &str, now: SystemTime) -> Asked {
        let path = format!("{}.checks[{index}].{field}", self.provider.path());
        let answer = match render_query(template, self.cluster) {
            Ok(query) => self.provider.ask(index, &query, now).await,
            Err(message) => Err(AskError::Query(message)),
        };
        Asked { path, answer }
    }

    /// Every check's query and, when it has one, its stable query, asked.
    async fn ask_all(&self, now: SystemTime) -> Vec<(Asked, Option<Asked>)> {
        let mut asked = Vec::new();
        for (index, check) in self.provider.checks().into_iter().enumerate() {
            let canary = self.ask(index, "query", check.query, now).await;
            let stable = match check.stable_query {
                Some(template) => Some(self.ask(index, "stableQuery", template, now).await),
                None => None,
            };
            asked.push((canary, stable));
        }
        asked
    }

    /// At Prepare: the number a query gives now, or why the rollout cannot start.
    fn number_now(&self, asked: Asked) -> Result<f64, AnalysisError> {
        let refused = |message: String| AnalysisError::QueryCheck {
            path: asked.path.clone(),
            message,
        };
        match asked.answer {
            Ok(Ok(Some(value))) => Ok(value),
            Ok(Ok(None)) => Err(refused(format!(
                "gives no data now: a check that never has data can never pass; {}",
                self.provider.no_data_hint()
            ))),
            Ok(Err(why)) | Err(AskError::Query(why)) => Err(refused(why)),
            Err(AskError::Provider(name, message)) => {
                Err(provider_error(asked.path, name, message))
            }
        }
    }
}

/// At most this many bad queries are named in one refusal (then "and N more").
const MAX_QUERIES_NAMED: usize = 10;

/// Prepare's refusal of every query that cannot be used, all named at once, so the plan is
/// fixed in one go. A provider error (unreachable, refusing) comes first: it is retried, and
/// says nothing about the queries.
fn refuse_queries(section: &str, errors: Vec<AnalysisError>) -> Result<(), AnalysisError> {
    let (provider, queries): (Vec<_>, Vec<_>) = errors
        .into_iter()
        .partition(|e| matches!(e, AnalysisError::MetricsProvider { .. }));
    if let Some(first) = provider.into_iter().next() {
        return Err(first);
    }
    if queries.len() <= 1 {
        return queries.into_iter().next().map_or(Ok(()), Err);
    }
    let lines: Vec<String> = queries.iter().map(ToString::to_string).collect();
    Err(AnalysisError::QueryCheck {
        path: section.to_owned(),
        message: format!(
            "{} queries cannot be used: {}",
            queries.len(),
            join_bounded(&lines, "; ", MAX_QUERIES_NAMED, MAX_REASON_BYTES)
        ),
    })
}

/// At a check: a query's number, the query's own fault as the number's `Err` (the check is
/// inconclusive), the provider's as the check's error.
fn number_at_check(asked: Asked) -> Result<Number, AnalysisError> {
    match asked.answer {
        Ok(number) => Ok(number),
        Err(AskError::Query(why)) => Ok(Err(why)),
        Err(AskError::Provider(name, message)) => Err(provider_error(asked.path, name, message)),
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
        let mut validated = Validated::default();
        let mut errors = Vec::new();
        for (index, (canary, stable)) in self.ask_all(now).await.into_iter().enumerate() {
            let value = self.number_now(canary);
            let stable = stable.map(|stable| self.number_now(stable));
            let (value, stable) = match (value, stable) {
                (Ok(value), None) => (value, None),
                (Ok(value), Some(Ok(stable))) => (value, Some(Ok(Some(stable)))),
                (value, stable) => {
                    errors.extend(value.err());
                    errors.extend(stable.and_then(Result::err));
                    continue;
                }
            };
            validated.metric_queries += 1 + usize::from(stable.is_some());
            let now = self.provider.judge(index, Ok(Some(value)), stable);
            validated.current.push(now.reason);
        }
        refuse_queries(self.provider.path(), errors)?;
        Ok(validated)
    }

    /// A provider that cannot be reached or refuses is an error (retried, then a rollback);
    /// an answer about the query itself makes that check inconclusive.
    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError> {
        let checks = self.provider.checks();
        let mut collected = Collected::default();
        for (index, (canary, stable)) in self.ask_all(now).await.into_iter().enumerate() {
            let value = number_at_check(canary)?;
            let stable = stable.map(number_at_check).transpose()?;
            // CloudWatch takes finite values only; ±Inf is still judged.
            if let Ok(Some(v)) = &value {
                if v.is_finite() {
                    let name = checks[index].name;
                    collected
                        .points
                        .push(Point::metric_value(cluster, name, *v));
                }
            }
            collected
                .outcomes
                .push(self.provider.judge(index, value, stable));
        }
        Ok(collected)
    }
}
