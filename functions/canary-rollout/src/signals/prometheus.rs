//! Prometheus and AMP checks (plan `analysis.prometheus`): one instant query per check, at the
//! check's time, its one number judged against the check's `min`/`max`.

use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::{PrometheusApi, QueryError};
use canary_core::analysis::prometheus::{instant_value, judge_prometheus};
use canary_core::analysis::query_template::QueryCheckSpec;
use canary_core::analysis::{CheckOutcome, PrometheusChecks};
use canary_core::error_budget::{remaining_reading, SloReading};
use canary_core::RolloutPlan;

use super::query_checks::{AskError, Number, QueryProvider};
use crate::error::AnalysisError;

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

/// The plan's remaining-budget queries (`errorBudget.prometheus`), each asked of
/// `analysis.prometheus`'s endpoint at `now`: one reading each, in the plan's order (an answer
/// that is not one number, or no answer, is unread: it holds the rollout).
pub async fn remaining_budgets(
    api: &dyn PrometheusApi,
    plan: &RolloutPlan,
    now: SystemTime,
) -> Vec<SloReading> {
    let (Some(section), Some(prometheus)) = (
        &plan.error_budget,
        plan.analysis.as_ref().and_then(|a| a.prometheus.as_ref()),
    ) else {
        return Vec::new();
    };
    let mut readings = Vec::new();
    for budget in &section.prometheus {
        let value = match prometheus.endpoint() {
            Ok(endpoint) => match api.instant_query(&endpoint, &budget.query, now).await {
                Ok(data) => instant_value(&data),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e),
        };
        readings.push(remaining_reading(&budget.name, value));
    }
    readings
}

/// At Admit: a remaining-budget query the provider rejects (it does not parse) is the plan's
/// mistake, naming it; one that cannot be asked now is left to the gate (it holds).
pub async fn check_remaining_budgets(
    api: &dyn PrometheusApi,
    plan: &RolloutPlan,
    now: SystemTime,
) -> Result<(), AnalysisError> {
    let (Some(section), Some(prometheus)) = (
        &plan.error_budget,
        plan.analysis.as_ref().and_then(|a| a.prometheus.as_ref()),
    ) else {
        return Ok(());
    };
    let endpoint = prometheus.endpoint().map_err(AnalysisError::InvalidInput)?;
    for (i, budget) in section.prometheus.iter().enumerate() {
        if let Err(e @ QueryError::QueryRejected { .. }) =
            api.instant_query(&endpoint, &budget.query, now).await
        {
            return Err(AnalysisError::QueryCheck {
                path: format!("errorBudget.prometheus[{i}].query"),
                message: e.to_string(),
            });
        }
    }
    Ok(())
}
