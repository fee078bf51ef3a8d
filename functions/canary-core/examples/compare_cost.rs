//! The comparison check's CPU time per metric, for docs/benchmarks.md: one check's judgement of
//! a window of growing size (the window's medians, the new periods taken in, the evidence).
//! `cargo run --release -p canary-core --example compare_cost`.

use std::time::Instant;

use canary_core::analysis::compare::{judge_metric, CompareChecks, Evidence, Observation, Period};

fn main() {
    let checks: CompareChecks = serde_json::from_value(serde_json::json!({
        "minSamples": 10, "metrics": [{"name": "latency", "alb": "latency"}]
    }))
    .expect("a section");
    println!("| periods in the window | time per metric (median of 9) |");
    println!("| --- | --- |");
    for n in [10i64, 60, 300, 1_000, 2_000] {
        let window: Vec<Period> = (0..n)
            .map(|i| Period {
                at: 60 * i,
                observation: Observation::Value {
                    canary: 0.12 + (i * 7919 % 1000) as f64 * 1e-5,
                    other: 0.1 + (i * 104_729 % 1000) as f64 * 1e-5,
                },
            })
            .collect();
        let mut times: Vec<f64> = (0..9)
            .map(|_| {
                let start = Instant::now();
                let judged = judge_metric(&checks, 0, false, 0.01, &Evidence::default(), &window);
                assert!(judged.is_some());
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!("| {n} | {:.3} ms |", times[4]);
    }
}
