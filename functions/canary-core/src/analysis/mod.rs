//! Analysis: what one signal says ([`outcome`]), the query checks' shared judgement
//! ([`query_template`]), the Prometheus and Datadog checks ([`prometheus`], [`datadog`]), the
//! plan's `analysis` section ([`section`]), the built-in ALB judge ([`alb_judge`]) and the
//! verdict of a check ([`verdict`]). Each module uses only those before it in this list: no
//! circle.

pub mod alb_judge;
pub mod datadog;
pub mod outcome;
pub mod prometheus;
pub mod query_template;
pub mod section;
pub mod statistics;
pub mod verdict;

pub use alb_judge::{judge_alb, TargetGroupTraffic};
pub use datadog::{DatadogCheck, DatadogChecks};
pub use outcome::*;
pub use prometheus::{PrometheusCheck, PrometheusChecks, PrometheusEndpoint};
pub use section::*;
pub use verdict::*;
