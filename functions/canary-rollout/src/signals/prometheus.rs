//! Prometheus and AMP checks (plan `analysis.prometheus`): one instant query per check, at the
//! check's time, its one number judged against the check's `min`/`max`.

use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::PrometheusApi;
use canary_core::analysis::prometheus::{instant_value, judge_prometheus};
use canary_core::analysis::query_template::QueryCheckSpec;
use canary_core::analysis::{CheckOutcome, PrometheusChecks};

use super::query_checks::{AskError, Number, QueryProvider};

pub(super) struct Prometheus<'a> {
    pub api: &'a dyn PrometheusApi,
    pub section: &'a PrometheusChecks,
}

#[async_trait]
impl QueryProvider for Prometheus<'_> {
    fn path(&self) -> &'static str {
        "analysis.prometheus"
    }

    fn checks(&self) -> Vec<QueryCheckSpec<'_>> {
        self.section.checks.iter().map(|c| c.spec()).collect()
    }

    async fn ask(&self, _index: usize, query: &str, now: SystemTime) -> Result<Number, AskError> {
        let endpoint = self.section.endpoint().map_err(AskError::Query)?;
        let data = self.api.instant_query(&endpoint, query, now).await?;
        Ok(instant_value(&data))
    }

    fn judge(&self, index: usize, value: Number, stable: Option<Number>) -> CheckOutcome {
        judge_prometheus(&self.section.checks[index], value, stable)
    }

    fn no_data_hint(&self) -> &'static str {
        "an empty result or NaN; query what exists before traffic moves (e.g. `or vector(0)` for a count)"
    }
}
