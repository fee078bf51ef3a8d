//! Simulated rollouts judged by the comparison exactly as the state machine runs it: each
//! check reads a window of periods, judges every metric (`judge_metric`, with the evidence the
//! state carries), the check (`judge_comparison`) and the bake (`decide_asking`, with the
//! `BakeProgress` of the step), and stops at the first rollback. Used by
//! `tests/compare_false_rollbacks.rs` (a few thousand rollouts, in CI) and
//! `examples/compare_simulation.rs` (the figures of docs/benchmarks.md and
//! docs/signals/compare.md).

use canary_core::analysis::compare::{
    judge_comparison, judge_metric, AlbSignal, Evidence, Observation, Period,
};
use canary_core::analysis::{decide_asking, AnalysisSection, BakeProgress};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// How each period's values vary when nothing regressed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Independent log-normal noise per side and period.
    Iid,
    /// A load that hits both clusters at once, autocorrelated with ρ (AR(1)), on top of
    /// independent noise.
    SharedLoad(f64),
    /// Each cluster's own noise autocorrelated with ρ (AR(1)): a cluster stays slower than the
    /// other for a while, with no regression.
    OwnDrift(f64),
    /// Heavy tails: Pareto (shape 1.5) spikes on each side.
    HeavyTailed,
    /// Values rounded to 10 ms, as many are: ties.
    Rounded,
}

impl Noise {
    pub fn name(self) -> String {
        match self {
            Noise::Iid => "i.i.d.".to_owned(),
            Noise::SharedLoad(rho) => format!("shared load AR(1) ρ {rho}"),
            Noise::OwnDrift(rho) => format!("each cluster's own AR(1) ρ {rho}"),
            Noise::HeavyTailed => "heavy-tailed".to_owned(),
            Noise::Rounded => "rounded (ties)".to_owned(),
        }
    }
}

/// What is wrong with the canary, if anything.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Regression {
    None,
    /// Every value metric's canary this many times the baseline.
    Slower(f64),
    /// Every error-rate metric's canary rate this many times the baseline's.
    MoreErrors(f64),
}

/// One simulated world: the plan's comparison, its steps, and the noise.
#[derive(Debug, Clone)]
pub struct World {
    pub analysis: AnalysisSection,
    /// The canary's share of traffic at each step, percent.
    pub steps: Vec<u8>,
    /// Periods in each step's bake (the docs': 600 s of 60 s periods), and how many checks look
    /// at them (evenly spread: the last at the bake's end).
    pub periods_per_step: u32,
    pub checks_per_step: u32,
    /// Over how many runs of checks α is shared (`ValidPlan::comparison_runs`).
    pub runs: u32,
    pub noise: Noise,
    pub regression: Regression,
}

impl World {
    /// A healthy rollout of `compare` through the docs' bake: 6 steps (1 to 100 %) of 10
    /// one-minute periods, looked at `checks_per_step` times a step, α not shared with waits.
    pub fn docs_bake(compare: serde_json::Value, checks_per_step: u32, noise: Noise) -> World {
        World {
            analysis: analysis(compare),
            steps: vec![1, 5, 10, 25, 50, 100],
            periods_per_step: 10,
            checks_per_step,
            runs: 1,
            noise,
            regression: Regression::None,
        }
    }
}

/// How one rollout ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Promoted,
    /// Rolled back at this check of the rollout (1-based, counted over every step), by a failing
    /// comparison (`true`) or for no evidence at a bake's end (`false`).
    RolledBack {
        check: u32,
        failed: bool,
    },
}

/// Requests per period on both clusters together, and the baseline's error rate.
const REQUESTS_PER_PERIOD: f64 = 6_000.0;
const ERROR_RATE: f64 = 0.01;
/// Latency of both clusters, seconds.
const LATENCY: f64 = 0.1;

struct Side {
    drift: f64,
}

/// Runs one rollout of `world` with the random stream `seed`.
pub fn rollout(world: &World, seed: u64) -> Ending {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let Some(checks) = world.analysis.compare.as_ref() else {
        return Ending::Promoted;
    };
    let window_periods = (checks.lookback_seconds / checks.period_seconds.max(1)).max(1) as usize;
    let mut windows: Vec<Vec<Period>> = vec![Vec::new(); checks.metrics.len()];
    let mut sides: Vec<[Side; 2]> = (0..checks.metrics.len())
        .map(|_| [Side { drift: 0.0 }, Side { drift: 0.0 }])
        .collect();
    let mut load = 0.0;
    let mut evidence = Evidence::default();
    let mut at = 0_i64;
    let mut check_number = 0;
    let steps = u32::try_from(world.steps.len()).unwrap_or(u32::MAX);
    for (step, weight) in world.steps.iter().enumerate() {
        let share = f64::from(*weight) / 100.0;
        let mut progress = BakeProgress {
            check: 1,
            checks: world.checks_per_step,
            step: u32::try_from(step).unwrap_or(0) + 1,
            steps,
            check_interval_seconds: 60,
            ..BakeProgress::default()
        };
        loop {
            check_number += 1;
            for _ in 0..(world.periods_per_step / world.checks_per_step.max(1)).max(1) {
                at += checks.period_seconds;
                load = match world.noise {
                    Noise::SharedLoad(rho) => {
                        rho * load + (1.0 - rho * rho).sqrt() * 0.3 * normal(&mut rng)
                    }
                    _ => 0.0,
                };
                for (index, metric) in checks.metrics.iter().enumerate() {
                    let observation = if metric.alb == Some(AlbSignal::ErrorRate) {
                        counts(&mut rng, world, share, load)
                    } else {
                        value(&mut rng, world, share, load, &mut sides[index])
                    };
                    let window = &mut windows[index];
                    window.push(Period { at, observation });
                    if window.len() > window_periods {
                        window.remove(0);
                    }
                }
            }
            let mut judgements = Vec::new();
            let mut taken = Vec::new();
            for (index, window) in windows.iter().enumerate() {
                let alpha = checks.alpha(index, world.runs);
                if let Some(judged) = judge_metric(checks, index, false, alpha, &evidence, window) {
                    taken.push(judged.evidence.clone());
                    judgements.push(judged);
                }
            }
            evidence = Evidence(taken);
            let verdict = judge_comparison(checks, &judgements);
            let decision = decide_asking(
                Some(&world.analysis),
                &verdict.outcomes,
                progress,
                verdict.asks,
            );
            if decision.rollback {
                let failed = decision.verdict == canary_core::analysis::CheckVerdict::Fail;
                return Ending::RolledBack {
                    check: check_number,
                    failed,
                };
            }
            if progress.last_check() {
                break;
            }
            progress = BakeProgress {
                check: progress.check + 1,
                consecutive_failures: decision.consecutive_failures,
                passes: decision.passes,
                ..progress
            };
        }
    }
    Ending::Promoted
}

/// One period of a value metric: each side's statistic, noisier on the side with fewer
/// requests (a p99 of fewer requests varies more), log-normal around the same median.
fn value(
    rng: &mut Xoshiro256PlusPlus,
    world: &World,
    share: f64,
    load: f64,
    sides: &mut [Side; 2],
) -> Observation {
    let mut draw = |side: &mut Side, requests: f64| {
        let spread = 0.05 + 0.5 / requests.max(1.0).sqrt();
        let noise = match world.noise {
            Noise::OwnDrift(rho) => {
                side.drift = rho * side.drift + (1.0 - rho * rho).sqrt() * normal(rng);
                side.drift
            }
            _ => normal(rng),
        };
        let mut v = LATENCY * (load + spread * noise).exp();
        if world.noise == Noise::HeavyTailed {
            v += LATENCY * 0.2 * (uniform(rng).powf(-1.0 / 1.5) - 1.0);
        }
        if world.noise == Noise::Rounded {
            v = (v * 100.0).round() / 100.0;
        }
        v
    };
    let [canary_side, baseline_side] = sides;
    let mut canary = draw(canary_side, REQUESTS_PER_PERIOD * share);
    let other = draw(baseline_side, REQUESTS_PER_PERIOD * (1.0 - share));
    if let Regression::Slower(times) = world.regression {
        canary *= times;
    }
    Observation::Value { canary, other }
}

/// One period of the 5xx rate: each side's requests and its errors, Poisson, the load
/// raising both sides' rate alike.
fn counts(rng: &mut Xoshiro256PlusPlus, world: &World, share: f64, load: f64) -> Observation {
    let rate = ERROR_RATE * load.exp();
    let canary_rate = match world.regression {
        Regression::MoreErrors(times) => rate * times,
        _ => rate,
    };
    let (canary_requests, other_requests) = (
        (REQUESTS_PER_PERIOD * share).round(),
        (REQUESTS_PER_PERIOD * (1.0 - share)).round(),
    );
    Observation::Counts {
        canary_errors: poisson(rng, canary_rate * canary_requests),
        canary_requests,
        other_errors: poisson(rng, rate * other_requests),
        other_requests,
    }
}

fn uniform(rng: &mut Xoshiro256PlusPlus) -> f64 {
    // (0, 1]: never 0, so logs and negative powers stay finite.
    1.0 - rng.random::<f64>()
}

/// A standard normal variate (Box–Muller).
fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let (u, v) = (uniform(rng), uniform(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A Poisson variate: Knuth's product of uniforms below 30, the normal approximation above.
fn poisson(rng: &mut Xoshiro256PlusPlus, mean: f64) -> f64 {
    if mean <= 0.0 {
        return 0.0;
    }
    if mean > 30.0 {
        return (mean + mean.sqrt() * normal(rng)).round().max(0.0);
    }
    let (limit, mut product, mut count) = ((-mean).exp(), uniform(rng), 0.0);
    while product > limit {
        product *= uniform(rng);
        count += 1.0;
    }
    count
}

/// The share of `rollouts` rollouts (seeds `first_seed`…) that roll back, with its 95 %
/// interval (Wilson's), and the checks until each rollback.
pub struct Tally {
    pub rollouts: u32,
    pub rolled_back: u32,
    /// Of those, by a failing comparison (the rest: no evidence at a bake's end).
    pub failed: u32,
    pub checks_until: Vec<u32>,
}

impl Tally {
    pub fn of(world: &World, rollouts: u32, first_seed: u64) -> Self {
        let mut tally = Tally {
            rollouts,
            rolled_back: 0,
            failed: 0,
            checks_until: Vec::new(),
        };
        for n in 0..rollouts {
            if let Ending::RolledBack { check, failed } = rollout(world, first_seed + u64::from(n))
            {
                tally.rolled_back += 1;
                tally.failed += u32::from(failed);
                tally.checks_until.push(check);
            }
        }
        tally
    }

    pub fn rate(&self) -> f64 {
        f64::from(self.rolled_back) / f64::from(self.rollouts.max(1))
    }

    /// Wilson's 95 % interval of the rate.
    pub fn interval(&self) -> (f64, f64) {
        let (n, p, z) = (f64::from(self.rollouts.max(1)), self.rate(), 1.96);
        let center = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
        ((center - half).max(0.0), (center + half).min(1.0))
    }

    pub fn median_checks(&self) -> Option<u32> {
        let mut sorted = self.checks_until.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied()
    }
}

/// The analysis section of a plan whose comparison is `compare` (JSON), the docs' bake
/// settings: one period a minute, 20 minutes back.
pub fn analysis(compare: serde_json::Value) -> AnalysisSection {
    let mut section = serde_json::json!({"periodSeconds": 60, "lookbackSeconds": 1200});
    if let (Some(section), Some(compare)) = (section.as_object_mut(), compare.as_object()) {
        section.extend(compare.clone());
    }
    serde_json::from_value(serde_json::json!({"compare": section})).expect("an analysis section")
}

/// `count` latency metrics with the defaults.
pub fn latency_metrics(count: usize) -> serde_json::Value {
    let metrics: Vec<serde_json::Value> = (0..count)
        .map(|i| serde_json::json!({"name": format!("latency {i}"), "alb": "latency"}))
        .collect();
    serde_json::json!({ "metrics": metrics })
}

/// The plan of docs/signals/compare.md: p99 with an allowed increase of 10 %, a critical 5xx
/// rate, a queue time of weight 2, a Prometheus p99 (the last two simulated as values).
pub fn docs_plan() -> serde_json::Value {
    serde_json::json!({"minSamples": 10, "metrics": [
        {"name": "p99 latency", "alb": "latency", "stat": "p99", "allowedIncrease": 1.1},
        {"name": "5xx rate", "alb": "errorRate", "critical": true},
        {"name": "queue time", "alb": "latency", "direction": "increase", "weight": 2},
        {"name": "checkout p99", "alb": "latency"},
    ]})
}

/// The sandbox's `compare` scenario's plan shape: p99 with an allowed increase of 20 % and a
/// default metric.
pub fn sandbox_plan() -> serde_json::Value {
    serde_json::json!({"metrics": [
        {"name": "p99", "alb": "latency", "allowedIncrease": 1.2},
        {"name": "p50", "alb": "latency", "stat": "p50"},
    ]})
}

/// `compare` with every value metric's `autocorrelation` set to `rho`.
pub fn with_autocorrelation(mut compare: serde_json::Value, rho: f64) -> serde_json::Value {
    for metric in compare["metrics"].as_array_mut().into_iter().flatten() {
        if metric["alb"] != "errorRate" {
            metric["autocorrelation"] = serde_json::json!(rho);
        }
    }
    compare
}
