//! Analysis: the plan's `analysis` section ([`section`]), the verdict of a check
//! ([`verdict`]), the built-in ALB judge ([`alb_judge`]) and the Prometheus and Datadog
//! checks ([`prometheus`], [`datadog`]).

pub mod alb_judge;
pub mod datadog;
pub mod prometheus;
pub mod query_template;
pub mod section;
pub mod verdict;

pub use alb_judge::{judge_alb, TargetGroupTraffic};
pub use datadog::{DatadogCheck, DatadogChecks};
pub use prometheus::{PrometheusCheck, PrometheusChecks, PrometheusEndpoint};
pub use section::*;
pub use verdict::*;
