//! The comparison check's CPU time per metric, for docs/benchmarks.md: the Mann–Whitney test
//! and the Hodges–Lehmann shift (every pairwise difference, sorted) at growing sample counts.
//! `cargo run --release -p canary-core --example compare_cost`.

use std::time::Instant;

use canary_core::analysis::statistics::compare;

fn main() {
    println!("| samples per side | time per metric (median of 9) |");
    println!("| --- | --- |");
    for n in [10usize, 60, 300, 1_000, 2_000] {
        let baseline: Vec<f64> = (0..n)
            .map(|i| 0.1 + (i * 7919 % 1000) as f64 * 1e-5)
            .collect();
        let canary: Vec<f64> = baseline.iter().map(|v| v * 1.2).collect();
        let mut times: Vec<f64> = (0..9)
            .map(|_| {
                let start = Instant::now();
                let result = compare(&canary, &baseline, 0.95);
                assert!(result.is_some());
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!("| {n} | {:.3} ms |", times[4]);
    }
}
