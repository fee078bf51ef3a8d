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
