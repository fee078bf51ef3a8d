//! The comparison's figures for docs/signals/compare.md and docs/benchmarks.md: false
//! rollbacks of healthy rollouts (with their 95 % interval) by plan, checks per step and noise,
//! and how soon regressions are caught. Every rollout goes through the product's judgement
//! (tests/support/simulation.rs). Deterministic (fixed seeds); a few minutes on two cores:
//! `cargo run --release -p canary-core --example compare_simulation [ROLLOUTS]` (default 10,000).

#[path = "../tests/support/simulation.rs"]
mod simulation;

use simulation::{
    docs_plan, latency_metrics, sandbox_plan, with_autocorrelation, Noise, Regression, Tally, World,
};

fn percent(rate: f64) -> String {
    format!("{:.2} %", rate * 100.0)
}

fn main() {
    let rollouts: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    println!("False rollbacks: {rollouts} healthy rollouts per row, 6 steps (1, 5, 10, 25, 50, 100 %), a 600 s bake of 60 s periods per step, α 1 % (confidence 0.99)\n");
    println!(
        "| plan | checks per step | samples | rolled back | 95 % interval | by a failing check |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let plans = [
        ("docs/signals/compare.md's", docs_plan()),
        ("the sandbox's `compare`", sandbox_plan()),
        ("1 metric", latency_metrics(1)),
        ("3 metrics", latency_metrics(3)),
        ("10 metrics", latency_metrics(10)),
        ("20 metrics", latency_metrics(20)),
    ];
    let noises = [
        Noise::Iid,
        Noise::SharedLoad(0.5),
        Noise::SharedLoad(0.9),
        Noise::OwnDrift(0.5),
        Noise::OwnDrift(0.9),
        Noise::HeavyTailed,
        Noise::Rounded,
    ];
    let row = |name: &str, compare: &serde_json::Value, checks: u32, noise: Noise| {
        let tally = Tally::of(
            &World::docs_bake(compare.clone(), checks, noise),
            rollouts,
            1,
        );
        let (low, high) = tally.interval();
        println!(
            "| {name} | {checks} | {} | {} | {} – {} | {} |",
            noise.name(),
            percent(tally.rate()),
            percent(low),
            percent(high),
            tally.failed
        );
    };
    for (name, compare) in &plans {
        for noise in noises {
            row(name, compare, 10, noise);
        }
        // The same drift, the plan saying how much of it carries over (`autocorrelation`).
        for rho in [0.5, 0.9] {
            let named = format!("{name}, `autocorrelation` {rho}");
            row(
                &named,
                &with_autocorrelation(compare.clone(), rho),
                10,
                Noise::OwnDrift(rho),
            );
        }
    }
    for checks in [1, 2, 5] {
        for (name, compare) in &plans[..2] {
            row(name, compare, checks, Noise::Iid);
        }
    }

    println!("\nDetection: one metric (p99, or the 5xx rate at 1 %), the canary at one share of traffic for 60 periods checked every period, 1,000 rollouts per row; i.i.d. samples unless the row says otherwise\n");
    println!("| regression | canary's share | caught | median checks until caught |");
    println!("| --- | --- | --- | --- |");
    let errors = || serde_json::json!({"metrics": [{"name": "5xx", "alb": "errorRate"}]});
    for (name, compare, regression, noise) in [
        (
            "p99 +10 %",
            latency_metrics(1),
            Regression::Slower(1.1),
            Noise::Iid,
        ),
        (
            "p99 +20 %",
            latency_metrics(1),
            Regression::Slower(1.2),
            Noise::Iid,
        ),
        (
            "p99 +50 %",
            latency_metrics(1),
            Regression::Slower(1.5),
            Noise::Iid,
        ),
        ("5xx ×2", errors(), Regression::MoreErrors(2.0), Noise::Iid),
        ("5xx ×5", errors(), Regression::MoreErrors(5.0), Noise::Iid),
        (
            "p99 +20 %, each cluster's own AR(1) ρ 0.5, `autocorrelation` 0.5",
            with_autocorrelation(latency_metrics(1), 0.5),
            Regression::Slower(1.2),
            Noise::OwnDrift(0.5),
        ),
        (
            "p99 +50 %, each cluster's own AR(1) ρ 0.9, `autocorrelation` 0.9",
            with_autocorrelation(latency_metrics(1), 0.9),
            Regression::Slower(1.5),
            Noise::OwnDrift(0.9),
        ),
    ] {
        for share in [1u8, 5, 50] {
            let world = World {
                steps: vec![share],
                periods_per_step: 60,
                checks_per_step: 60,
                regression,
                ..World::docs_bake(compare.clone(), 60, noise)
            };
            let tally = Tally::of(&world, 1_000, 1);
            println!(
                "| {name} | {share} % | {} | {} |",
                percent(f64::from(tally.failed) / 1_000.0),
                tally
                    .median_checks()
                    .map_or("–".to_owned(), |c| c.to_string())
            );
        }
    }
}
