//! The comparison's figures for docs/signals/compare.md and docs/benchmarks.md: false
//! rollbacks of healthy rollouts (with their 95 % interval) by plan, world and traffic, and how
//! soon regressions are caught. Every rollout is made of simulated requests and goes through the
//! product's judgement (tests/support/simulation.rs). Deterministic (fixed seeds); several
//! minutes on two cores:
//! `cargo run --release -p canary-core --example compare_simulation [ROLLOUTS] [false|detection|inside]`
//! (default 10,000 rollouts per row, every table; `detection`: both detection tables; `inside`:
//! only the regressions that begin inside a step).

#[path = "../tests/support/simulation.rs"]
mod simulation;

use simulation::{
    docs_plan, error_rate, latency_metrics, per_request_plan, sandbox_plan, slow_requests,
    with_autocorrelation, Noise, Regression, Tally, World, DOCS_P99_SECONDS, DOCS_TRAFFIC,
};

fn percent(rate: f64) -> String {
    format!("{:.2} %", rate * 100.0)
}

fn main() {
    let rollouts: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let only = std::env::args().nth(2).unwrap_or_default();
    let runs = |table: &str| only.is_empty() || only == table;
    if runs("false") {
        false_rollbacks(rollouts);
    }
    if runs("detection") {
        detection(rollouts / 10);
    }
    if runs("detection") || runs("inside") {
        detection_inside_a_step(rollouts / 10);
    }
}

fn false_rollbacks(rollouts: u32) {
    println!("False rollbacks: {rollouts} healthy rollouts per row, 6 steps (1, 5, 10, 25, 50, 100 %), a 600 s bake of 60 s periods per step, the default lookback (600 s), α 1 % (confidence 0.99), no setting beyond the plan's metrics\n");
    println!("| plan | world | traffic | rolled back | 95 % interval | by a failing check |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let plans = [
        ("docs/signals/compare.md's", docs_plan()),
        ("per request (slow requests and 5xx)", per_request_plan()),
        ("the sandbox's `compare`", sandbox_plan()),
        ("5xx rate only", error_rate()),
        ("1 metric", latency_metrics(1)),
        ("3 metrics", latency_metrics(3)),
        ("10 metrics", latency_metrics(10)),
        ("20 metrics", latency_metrics(20)),
    ];
    let noises = [
        Noise::Iid,
        Noise::SharedLoad(0.9),
        Noise::OwnDrift(0.5),
        Noise::OwnDrift(0.9),
        Noise::Bursts,
        Noise::Overdispersed,
        Noise::HeavyTailed,
        Noise::Rounded,
    ];
    let row = |name: &str, world: &World, traffic: &str| {
        let tally = Tally::of(world, rollouts, 1);
        let (low, high) = tally.interval();
        println!(
            "| {name} | {} | {traffic} | {} | {} – {} | {} |",
            world.noise.name(),
            percent(tally.rate()),
            percent(low),
            percent(high),
            tally.failed
        );
    };
    for (name, compare) in &plans {
        for noise in noises {
            row(
                name,
                &World::docs_bake(compare.clone(), 10, noise),
                "the docs'",
            );
        }
        for (traffic, requests) in [
            ("a tenth", DOCS_TRAFFIC / 10.0),
            ("1/100", DOCS_TRAFFIC / 100.0),
        ] {
            let world = World {
                requests_per_period: requests,
                ..World::docs_bake(compare.clone(), 10, Noise::Iid)
            };
            row(name, &world, traffic);
        }
        // The drift said by the plan (`autocorrelation`), as before the estimate.
        row(
            &format!("{name}, `autocorrelation` 0.9"),
            &World::docs_bake(
                with_autocorrelation(compare.clone(), 0.9),
                10,
                Noise::OwnDrift(0.9),
            ),
            "the docs'",
        );
        // A canary 5 % slower, inside a 10 % band: no regression.
        let world = World {
            regression: Regression::Slower(1.05),
            ..World::docs_bake(with_band(compare.clone(), 1.1), 10, Noise::Iid)
        };
        println!(
            "(the next row: every canary request 5 % slower, every metric's allowedIncrease 1.1)"
        );
        row(name, &world, "the docs'");
    }
    for checks in [1, 2, 5] {
        for (name, compare) in &plans[..2] {
            row(
                &format!("{name}, {checks} check(s) per step"),
                &World::docs_bake(compare.clone(), checks, Noise::Iid),
                "the docs'",
            );
        }
    }
}

fn detection(rollouts: u32) {
    println!("\nDetection: one metric (the requests slower than the baseline's p99, 0.4 s; p99 per period; or the 5xx rate), the canary at one share of traffic for 60 one-minute periods checked every period, {rollouts} rollouts per row, the docs' traffic, i.i.d. requests unless the row says otherwise\n");
    println!("| regression | canary's share | caught within 10 periods | within 15 | within 60 | median periods until caught |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (name, compare, regression, noise) in [
        (
            "slower than p99: p99 +15 %",
            slow_requests(DOCS_P99_SECONDS),
            Regression::Slower(1.15),
            Noise::Iid,
        ),
        (
            "slower than p99: p99 +30 %",
            slow_requests(DOCS_P99_SECONDS),
            Regression::Slower(1.3),
            Noise::Iid,
        ),
        (
            "slower than p99: p99 +100 %",
            slow_requests(DOCS_P99_SECONDS),
            Regression::Slower(2.0),
            Noise::Iid,
        ),
        (
            "slower than p99: p99 +30 %, bursts",
            slow_requests(DOCS_P99_SECONDS),
            Regression::Slower(1.3),
            Noise::Bursts,
        ),
        (
            "p99 +10 %",
            latency_metrics(1),
            Regression::Slower(1.1),
            Noise::Iid,
        ),
        (
            "p99 +15 %",
            latency_metrics(1),
            Regression::Slower(1.15),
            Noise::Iid,
        ),
        (
            "p99 +30 %",
            latency_metrics(1),
            Regression::Slower(1.3),
            Noise::Iid,
        ),
        (
            "p99 +50 %",
            latency_metrics(1),
            Regression::Slower(1.5),
            Noise::Iid,
        ),
        (
            "p99 +100 %",
            latency_metrics(1),
            Regression::Slower(2.0),
            Noise::Iid,
        ),
        (
            "5xx ×2",
            error_rate(),
            Regression::MoreErrors(2.0),
            Noise::Iid,
        ),
        (
            "5xx ×5",
            error_rate(),
            Regression::MoreErrors(5.0),
            Noise::Iid,
        ),
        (
            "p99 +50 %, each cluster's own drift ρ 0.5",
            latency_metrics(1),
            Regression::Slower(1.5),
            Noise::OwnDrift(0.5),
        ),
        (
            "5xx ×2, bursts",
            error_rate(),
            Regression::MoreErrors(2.0),
            Noise::Bursts,
        ),
    ] {
        for share in [1u8, 5, 10, 50] {
            let world = held_at(share, compare.clone(), regression, noise);
            let tally = Tally::of(&world, rollouts, 1);
            println!("| {name} | {share} % | {} |", caught(&tally, 60));
        }
    }
}

/// A rollout of one step at `share` for 60 one-minute periods, each checked, with `regression`
/// from the start: the detection tables' world.
fn held_at(share: u8, compare: serde_json::Value, regression: Regression, noise: Noise) -> World {
    World {
        steps: vec![share],
        periods_per_step: 60,
        checks_per_step: 60,
        regression,
        ..World::docs_bake(compare, 60, noise)
    }
}

/// A detection row's columns: caught within 10, 15 and `last` periods, and the median.
fn caught(tally: &Tally, last: u32) -> String {
    let median = tally
        .median_checks()
        .map_or("–".to_owned(), |c| c.to_string());
    format!(
        "{} | {} | {} | {median}",
        percent(tally.caught_within(10)),
        percent(tally.caught_within(15)),
        percent(tally.caught_within(last)),
    )
}

/// Periods of a healthy canary before the regression of [`detection_inside_a_step`] begins.
const HEALTHY_PERIODS: u32 = 10;

/// As [`detection`], the regression beginning after [`HEALTHY_PERIODS`] healthy periods of the
/// same step: the counts' dependence estimate takes the jump for a drift until the periods after
/// it show otherwise (docs/signals/compare.md). Checks are counted from the regression's start;
/// a rollback before it is a false one.
fn detection_inside_a_step(rollouts: u32) {
    println!("\nDetection inside a step: as above, the regression beginning after {HEALTHY_PERIODS} healthy periods of the step, periods counted from its start\n");
    println!("| regression | canary's share | caught within 10 periods | within 15 | within 50 | median periods until caught | rolled back before it began |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (name, compare, regression) in [
        (
            "slower than p99: p99 +30 %",
            slow_requests(DOCS_P99_SECONDS),
            Regression::Slower(1.3),
        ),
        ("5xx ×2", error_rate(), Regression::MoreErrors(2.0)),
        ("5xx ×5", error_rate(), Regression::MoreErrors(5.0)),
        ("5xx ×10", error_rate(), Regression::MoreErrors(10.0)),
    ] {
        for share in [1u8, 10, 50] {
            let world = World {
                regression_from_period: HEALTHY_PERIODS,
                ..held_at(share, compare.clone(), regression, Noise::Iid)
            };
            let tally = Tally::of(&world, rollouts, 1);
            // The rollbacks after the regression began, counted from its start.
            let since = Tally {
                checks_until: tally
                    .checks_until
                    .iter()
                    .filter(|c| **c > HEALTHY_PERIODS)
                    .map(|c| c - HEALTHY_PERIODS)
                    .collect(),
                ..tally
            };
            println!(
                "| {name} | {share} % | {} | {} |",
                caught(&since, 50),
                tally.checks_until.len() - since.checks_until.len()
            );
        }
    }
}

/// `compare` with every value metric's `allowedIncrease` set to `band`.
fn with_band(mut compare: serde_json::Value, band: f64) -> serde_json::Value {
    for metric in compare["metrics"].as_array_mut().into_iter().flatten() {
        if metric["alb"] != "errorRate" {
            metric["allowedIncrease"] = serde_json::json!(band);
        }
    }
    compare
}
