//! Datadog checks (plan `analysis.datadog`): one scalar query per check over its lookback,
//! ending at the check's time, its one number judged against the check's `min`/`max`.

use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use canary_aws::DatadogApi;
use canary_core::analysis::datadog::{judge_datadog, scalar_request, scalar_value};
use canary_core::analysis::query_template::QueryCheckSpec;
use canary_core::analysis::{CheckOutcome, DatadogChecks};

use super::query_checks::{AskError, Number, QueryProvider};

pub(super) struct Datadog<'a> {
    pub api: &'a dyn DatadogApi,
    pub section: &'a DatadogChecks,
}

#[async_trait]
impl QueryProvider for Datadog<'_> {
    fn path(&self) -> &'static str {
        "analysis.datadog"
    }

    fn checks(&self) -> Vec<QueryCheckSpec<'_>> {
        self.section.checks.iter().map(|c| c.spec()).collect()
    }

    async fn ask(&self, index: usize, query: &str, now: SystemTime) -> Result<Number, AskError> {
        let now_ms = now
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or_default();
        let body = scalar_request(&self.section.checks[index], query, now_ms);
        let answer = self.api.query(&self.section.api_url(), &body).await?;
        Ok(scalar_value(&answer))
    }

    fn judge(&self, index: usize, value: Number, stable: Option<Number>) -> CheckOutcome {
        judge_datadog(&self.section.checks[index], value, stable)
    }

    fn no_data_hint(&self) -> &'static str {
        "no series in the lookback; check the metric and tags, or use `.fill(zero)` for a count that may not exist yet"
    }
}
