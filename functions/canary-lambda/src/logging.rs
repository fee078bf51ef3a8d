//! Structured JSON logs for every function: one JSON object per line, which CloudWatch Logs
//! Insights can query by field. The level comes from `AWS_LAMBDA_LOG_LEVEL` (Lambda's
//! advanced logging controls), then `RUST_LOG`, then `info`.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned())
        .to_lowercase();
    let mut filter = EnvFilter::try_new(&level).unwrap_or_else(|_| EnvFilter::new("info"));
    // lambda_runtime logs every handler error a second time, as `Diagnostic { .. }` in Rust
    // debug syntax; `serve` already logged it once with its error name. (Panics abort,
    // see the release profile, and the panic hook prints them.)
    if let Ok(quiet) = "lambda_runtime::layers::panic=off".parse() {
        filter = filter.add_directive(quiet);
    }
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .with_target(false)
        .init();
}
