//! Analysis: what one signal says ([`outcome`]), what CloudWatch accepts of a query
//! ([`metric_query`]), the query checks' shared judgement ([`query_template`]), the Prometheus
//! and Datadog checks ([`prometheus`], [`datadog`]), the comparison's statistics
//! ([`statistics`]) and check ([`compare`]), the plan's `analysis` section ([`section`]), the
//! built-in ALB judge ([`alb_judge`]) and the verdict of a check ([`verdict`]). Each module
//! uses only those before it in this list: no circle.

pub mod alb_judge;
pub mod compare;
pub mod datadog;
pub mod dependence;
pub mod histogram;
pub mod metric_query;
pub mod outcome;
pub mod prometheus;
pub mod query_template;
pub mod section;
pub mod statistics;
pub mod verdict;

pub use alb_judge::{judge_alb, TargetGroupTraffic};
pub use compare::{CompareChecks, ComparedMetric};
pub use datadog::{DatadogCheck, DatadogChecks};
pub use outcome::*;
pub use prometheus::{PrometheusCheck, PrometheusChecks, PrometheusEndpoint};
pub use section::*;
pub use verdict::*;

/// A fixed pseudo-random sequence of uniforms in (0, 1) for the analysis' unit tests (a linear
/// congruential generator: the same numbers on every machine, no dependency).
#[cfg(test)]
pub(crate) fn test_uniforms(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}
