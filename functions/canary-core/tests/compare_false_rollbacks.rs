//! The comparison's promise, checked in CI on a smaller simulation than the figures of
//! docs/signals/compare.md (`cargo run --release -p canary-core --example compare_simulation`):
//! healthy rollouts, simulated request by request, roll back at most α of the time, with no
//! setting beyond the plan's metrics, whatever the world (bursts, each cluster's own drift, a
//! canary more variable than the baseline, low traffic, the last step where the baseline serves
//! nothing), and a clear regression is caught.

// Shared with examples/compare_simulation.rs, which uses the rest of it.
#[allow(dead_code)]
#[path = "support/simulation.rs"]
mod simulation;

use simulation::{
    docs_plan, error_rate, latency_metrics, per_request_plan, with_autocorrelation, Noise,
    Regression, Tally, World, DOCS_TRAFFIC,
};

/// α plus three standard errors of a rate of α over `rollouts`: above it, the promise is broken
/// (a healthy simulation exceeds it about once in a thousand runs; the seeds are fixed, so it
/// does not flake).
fn ceiling(alpha: f64, rollouts: u32) -> f64 {
    alpha + 3.0 * (alpha * (1.0 - alpha) / f64::from(rollouts)).sqrt()
}

fn assert_at_most_alpha(name: &str, world: &World, rollouts: u32) {
    let tally = Tally::of(world, rollouts, 1);
    assert!(
        tally.rate() <= ceiling(0.01, rollouts),
        "{name}: {} of {rollouts} healthy rollouts rolled back ({} by a failing comparison, the rest at a bake's end without a pass)",
        tally.rolled_back,
        tally.failed
    );
}

#[test]
fn healthy_rollouts_roll_back_at_most_alpha_of_the_time() {
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
    ] {
        assert_at_most_alpha(name, &World::docs_bake(compare, 10, noise), 1_000);
    }
}

#[test]
fn bursts_and_a_more_variable_canary_are_not_regressions() {
    for (name, compare, noise) in [
        ("the docs' plan, bursts", docs_plan(), Noise::Bursts),
        ("a 5xx rate alone, bursts", error_rate(), Noise::Bursts),
        (
            "the docs' plan, the canary 3× as variable",
            docs_plan(),
            Noise::Overdispersed,
        ),
    ] {
        assert_at_most_alpha(name, &World::docs_bake(compare, 10, noise), 1_000);
    }
}

#[test]
fn each_cluster_drifting_on_its_own_is_not_a_regression() {
    // With nothing set, as far as docs/signals/compare.md promises (ρ 0.5 per period), for
    // values and for counts, whose drift weighs more at each larger share...
    for (name, compare) in [
        ("the docs' plan", docs_plan()),
        ("per request", per_request_plan()),
        ("a 5xx rate alone", error_rate()),
    ] {
        assert_at_most_alpha(
            &format!("{name}, each cluster's own drift ρ 0.5"),
            &World::docs_bake(compare, 10, Noise::OwnDrift(0.5)),
            1_000,
        );
    }
    // ...and beyond it with the plan's `autocorrelation`, which overrides the estimate.
    assert_at_most_alpha(
        "the docs' plan, each cluster's own drift ρ 0.9, `autocorrelation` 0.9",
        &World::docs_bake(
            with_autocorrelation(docs_plan(), 0.9),
            10,
            Noise::OwnDrift(0.9),
        ),
        1_000,
    );
}

#[test]
fn low_traffic_and_the_last_step_do_not_end_without_evidence() {
    // The docs' bake has 100 % as its last step: the baseline serves nothing there.
    let world = World {
        requests_per_period: DOCS_TRAFFIC / 10.0,
        ..World::docs_bake(docs_plan(), 10, Noise::Iid)
    };
    assert_at_most_alpha("the docs' plan at a tenth of its traffic", &world, 500);
    // A hundredth (one request a second): the 1 % step sees a request in fewer than half its
    // periods, and needs its bake extended three times its length.
    let mut quiet = docs_plan();
    quiet["extendBakeSeconds"] = serde_json::json!(1800);
    let world = World {
        requests_per_period: DOCS_TRAFFIC / 100.0,
        ..World::docs_bake(quiet, 10, Noise::Iid)
    };
    assert_at_most_alpha(
        "the docs' plan at a hundredth of its traffic, extendBakeSeconds 1800",
        &world,
        500,
    );
}

#[test]
fn a_regression_that_begins_at_a_later_step_is_caught() {
    for (name, compare, regression) in [
        (
            "slow requests +30 %",
            per_request_plan(),
            Regression::Slower(1.3),
        ),
        ("5xx ×3", docs_plan(), Regression::MoreErrors(3.0)),
    ] {
        let world = World {
            regression,
            regression_from_step: 3,
            ..World::docs_bake(compare, 10, Noise::Iid)
        };
        let tally = Tally::of(&world, 200, 7);
        assert!(
            tally.rolled_back >= 170,
            "{name} from the 25 % step: rolled back in {} of 200 rollouts",
            tally.rolled_back
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
            tally.rolled_back >= 190,
            "{name}: rolled back in {} of 200 rollouts ({} by a failing check)",
            tally.rolled_back,
            tally.failed
        );
    }
}
