//! Structured JSON logs for every function: one JSON object per line, which CloudWatch Logs
//! Insights can query by field. The level comes from `AWS_LAMBDA_LOG_LEVEL` (Lambda's
//! advanced logging controls), then `RUST_LOG`, then `info`.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::{fmt, prelude::*};

pub fn init() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned())
        .to_lowercase();
    // `Targets` takes `RUST_LOG`'s `level` and `target=level` forms without `EnvFilter`'s regex
    // engine (docs/size-and-startup.md).
    let filter = level
        .parse::<Targets>()
        .unwrap_or_else(|_| Targets::new().with_default(LevelFilter::INFO))
        // lambda_runtime logs every handler error a second time, as `Diagnostic { .. }` in Rust
        // debug syntax; `serve` already logged it once with its error name. (Panics abort,
        // see the release profile, and the panic hook prints them.)
        .with_target("lambda_runtime::layers::panic", LevelFilter::OFF);
    tracing_subscriber::registry()
        .with(
            fmt::layer()
                .json()
                .with_current_span(false)
                .with_target(false),
        )
        .with(filter)
        .init();
}
