//! Analysis: the plan's `analysis` section ([`section`]), the verdict of a check
//! ([`verdict`]) and the built-in ALB judge ([`alb_judge`]).

pub mod alb_judge;
pub mod section;
pub mod verdict;

pub use alb_judge::{judge_alb, TargetGroupTraffic};
pub use section::*;
pub use verdict::*;
