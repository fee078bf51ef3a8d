//! The comparison's promise, checked in CI on a smaller simulation than the figures of
//! docs/signals/compare.md (`cargo run --release -p canary-core --example compare_simulation`):
//! healthy rollouts (canary and baseline from the same distribution) roll back at most α of
//! the time, however many metrics and checks, and a clear regression is caught.

// Shared with examples/compare_simulation.rs, which uses the rest of it.
#[allow(dead_code)]
#[path = "support/simulation.rs"]
mod simulation;

use simulation::{
    docs_plan, latency_metrics, with_autocorrelation, Noise, Regression, Tally, World,
};

/// α plus three standard errors of a rate of α over `rollouts`: above it, the promise is broken
/// (a healthy simulation exceeds it about once in a thousand runs; the seeds are fixed, so it
/// does not flake).
fn ceiling(alpha: f64, rollouts: u32) -> f64 {
    alpha + 3.0 * (alpha * (1.0 - alpha) / f64::from(rollouts)).sqrt()
}

#[test]
fn healthy_rollouts_roll_back_at_most_alpha_of_the_time() {
    let rollouts = 1_500;
    for (name, compare, noise) in [
        ("the docs' plan", docs_plan(), Noise::Iid),
        (
            "the docs' plan under a shared load",
            docs_plan(),
            Noise::SharedLoad(0.9),
        ),
        ("10 metrics, ties", latency_metrics(10), Noise::Rounded),
        (
            "3 metrics, heavy tails",
            latency_metrics(3),
            Noise::HeavyTailed,
        ),
        (
            "the docs' plan, each cluster drifting on its own, its autocorrelation said",
            with_autocorrelation(docs_plan(), 0.5),
            Noise::OwnDrift(0.5),
        ),
    ] {
        let tally = Tally::of(&World::docs_bake(compare, 10, noise), rollouts, 1);
        let alpha = 0.01;
        assert!(
            tally.rate() <= ceiling(alpha, rollouts),
            "{name}: {} of {rollouts} healthy rollouts rolled back ({} by a failing comparison)",
            tally.rolled_back,
            tally.failed
        );
    }
}

#[test]
fn a_clear_regression_is_caught() {
    for (name, regression) in [
        ("p99 +50 %", Regression::Slower(1.5)),
        ("5xx ×5", Regression::MoreErrors(5.0)),
    ] {
        let world = World {
            regression,
            ..World::docs_bake(docs_plan(), 10, Noise::Iid)
        };
        let tally = Tally::of(&world, 200, 7);
        assert!(
            tally.failed >= 190,
            "{name}: caught in {} of 200 rollouts",
            tally.failed
        );
    }
}
