//! Analysis: the plan's `analysis` section ([`section`]), the verdict of a check
//! ([`verdict`]), the built-in ALB judge ([`alb_judge`]) and the Prometheus checks
//! ([`prometheus`]).

pub mod alb_judge;
pub mod prometheus;
pub mod section;
pub mod verdict;

pub use alb_judge::{judge_alb, TargetGroupTraffic};
pub use prometheus::{PrometheusCheck, PrometheusChecks, PrometheusEndpoint};
pub use section::*;
pub use verdict::*;
