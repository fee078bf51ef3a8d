//! Simulated rollouts judged by the comparison exactly as the state machine runs it: each
//! check reads a window of periods, judges every metric (`judge_metric`, with the evidence the
//! state carries; `judge_metric_without_baseline` at a step where the baseline serves nothing),
//! the check (`judge_comparison`) and the bake (`decide_asking`, with the `BakeProgress` of the
//! step, the bake going on past its end as the state machine's `Decision.check` says), and
//! stops at the first rollback. Used by `tests/compare_false_rollbacks.rs` (a few thousand
//! rollouts, in CI) and `examples/compare_simulation.rs` (the figures of docs/benchmarks.md and
//! docs/signals/compare.md).
//!
//! The world is made of requests, not of the statistics the comparison reads: each period,
//! each cluster serves a Poisson number of requests (its share of the traffic, no request at
//! all at 0 %), each request with a log-normal latency around the cluster's level of the
//! period and an error with the cluster's error rate of the period; a latency metric's value is
//! the quantile (`p99`, `p50`…) of the requests that cluster served — drawn exactly, as the
//! k-th order statistic of that many requests (a Beta variate through the latency's quantile
//! function) — and a period without requests has no value, as ALB publishes none. What varies
//! is the world ([`Noise`]): a load both clusters share, each cluster's own drift, bursts of
//! errors and slowness on one cluster at a time, a canary whose error rate varies more from
//! period to period than the baseline's with the same mean, ties, heavy tails, and how much
//! traffic there is.

use canary_core::analysis::compare::{
    baseline_serves, judge_comparison, judge_metric, judge_metric_without_baseline, AlbSignal,
    ComparedMetric, Evidence, Observation, Period,
};
use canary_core::analysis::{decide_asking, AnalysisSection, BakeProgress, ComparisonSays};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

/// How the world varies when nothing regressed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Requests independent from period to period, both clusters alike.
    Iid,
    /// A load that hits both clusters at once (latency level and error rate), autocorrelated
    /// with ρ from period to period (AR(1)): a daily swing, a spike.
    SharedLoad(f64),
    /// Each cluster's own latency level and error rate drifting with ρ (AR(1)), nothing shared:
    /// a cluster stays slower than the other for a while, with no regression.
    OwnDrift(f64),
    /// Each cluster, in 5 % of periods on its own, throws a burst: a fifth of its requests fail
    /// and its latency triples (a pod restarting, an upstream timing out).
    Bursts,
    /// The canary's error rate and latency level vary from period to period three times as much
    /// as the baseline's, with the same mean.
    Overdispersed,
    /// Heavy-tailed requests: log-normal latencies twice as spread.
    HeavyTailed,
    /// Values rounded to 10 ms, as many are: ties.
    Rounded,
}

impl Noise {
    pub fn name(self) -> String {
        match self {
            Noise::Iid => "i.i.d. requests".to_owned(),
            Noise::SharedLoad(rho) => format!("a load both share, AR(1) ρ {rho}"),
            Noise::OwnDrift(rho) => format!("each cluster's own drift, AR(1) ρ {rho}"),
            Noise::Bursts => "bursts on one cluster at a time".to_owned(),
            Noise::Overdispersed => "the canary 3× as variable".to_owned(),
            Noise::HeavyTailed => "heavy-tailed requests".to_owned(),
            Noise::Rounded => "rounded (ties)".to_owned(),
        }
    }
}

/// What is wrong with the canary, if anything.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Regression {
    None,
    /// Every canary request this many times slower.
    Slower(f64),
    /// The canary's error rate this many times the baseline's.
    MoreErrors(f64),
}

/// One simulated world: the plan's comparison, its steps, the traffic and the noise.
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
    /// Requests per period, both clusters together.
    pub requests_per_period: f64,
    pub noise: Noise,
    pub regression: Regression,
    /// The step (0-based) the regression begins at: a canary that breaks only under more load.
    pub regression_from_step: usize,
    /// The period (0-based, counted over the rollout) the regression begins at, if later than
    /// its step's start: a regression that begins inside a step.
    pub regression_from_period: u32,
}

/// Requests per period of the docs' service (both clusters), its error rate and the median
/// latency of a request, seconds.
pub const DOCS_TRAFFIC: f64 = 6_000.0;
const ERROR_RATE: f64 = 0.01;
const LATENCY: f64 = 0.1;
/// The spread (σ of the log) of one request's latency, and of a cluster's level from period to
/// period where the world varies it.
const REQUEST_SPREAD: f64 = 0.6;
const LEVEL_SPREAD: f64 = 0.1;

impl World {
    /// A healthy rollout of `compare` through the docs' bake: 6 steps (1 to 100 %) of 10
    /// one-minute periods, looked at `checks_per_step` times a step, α not shared with waits,
    /// the docs' traffic.
    pub fn docs_bake(compare: serde_json::Value, checks_per_step: u32, noise: Noise) -> World {
        World {
            analysis: analysis(compare),
            steps: vec![1, 5, 10, 25, 50, 100],
            periods_per_step: 10,
            checks_per_step,
            runs: 1,
            requests_per_period: DOCS_TRAFFIC,
            noise,
            regression: Regression::None,
            regression_from_step: 0,
            regression_from_period: 0,
        }
    }
}

/// How one rollout ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Promoted,
    /// Rolled back at this check of the rollout (1-based, counted over every step), by a failing
    /// comparison (`true`) or at a bake's end without a pass (`false`).
    RolledBack {
        check: u32,
        failed: bool,
    },
}

/// One cluster's state in the world: its own drift, and its level and error rate this period.
#[derive(Debug, Clone, Copy, Default)]
struct Cluster {
    drift: f64,
    level: f64,
    error_rate: f64,
    /// How many times its requests' share slower than a threshold is this period's (a mean
    /// of 1: what varies is the period, not the cluster).
    slow_multiplier: f64,
}

/// Runs one rollout of `world` with the random stream `seed`.
pub fn rollout(world: &World, seed: u64) -> Ending {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let Some(checks) = world.analysis.compare.as_ref() else {
        return Ending::Promoted;
    };
    let window_periods = (checks.lookback_seconds / checks.period_seconds.max(1)).max(1) as usize;
    let mut windows: Vec<Vec<Period>> = vec![Vec::new(); checks.metrics.len()];
    // Each metric sees its own requests' statistic, but the clusters are the same for all.
    let mut clusters = [Cluster::default(); 2];
    let mut load = 0.0;
    let mut evidence = Evidence::default();
    let mut at = 0_i64;
    let mut check_number = 0;
    let mut period = 0_u32;
    let steps = u32::try_from(world.steps.len()).unwrap_or(u32::MAX);
    let per_check = (world.periods_per_step / world.checks_per_step.max(1)).max(1);
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
        evidence.begin_bake(progress.step);
        loop {
            check_number += 1;
            for _ in 0..per_check {
                at += checks.period_seconds;
                load = match world.noise {
                    Noise::SharedLoad(rho) => {
                        rho * load + (1.0 - rho * rho).sqrt() * 0.3 * normal(&mut rng)
                    }
                    _ => 0.0,
                };
                for (side, cluster) in clusters.iter_mut().enumerate() {
                    cluster.advance(&mut rng, world.noise, load, side == 0);
                }
                // The period's requests, the same for every metric of the service.
                let requests = [
                    poisson(&mut rng, world.requests_per_period * share),
                    poisson(&mut rng, world.requests_per_period * (1.0 - share)),
                ];
                let begun =
                    step >= world.regression_from_step && period >= world.regression_from_period;
                period += 1;
                let regression = match begun {
                    true => world.regression,
                    false => Regression::None,
                };
                for (index, metric) in checks.metrics.iter().enumerate() {
                    let observation =
                        observe(&mut rng, world, regression, metric, requests, &clusters);
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
                let judged = match baseline_serves(*weight) {
                    true => judge_metric(checks, index, false, alpha, &evidence, window),
                    false => judge_metric_without_baseline(checks, index, alpha, &evidence),
                };
                if let Some(judged) = judged {
                    taken.push(judged.evidence.clone());
                    judgements.push(judged);
                }
            }
            evidence = Evidence(taken);
            let verdict = judge_comparison(checks, &judgements);
            let comparison = ComparisonSays {
                asks: verdict.asks,
                regression_shown: evidence.shows_a_regression(),
                leaning: evidence.leans_to_a_regression(),
            };
            let decision = decide_asking(
                Some(&world.analysis),
                &verdict.outcomes,
                progress,
                comparison,
            );
            if decision.rollback {
                let failed = decision.verdict == canary_core::analysis::CheckVerdict::Fail;
                return Ending::RolledBack {
                    check: check_number,
                    failed,
                };
            }
            // The state machine's next check is the decision's + 1; past the bake's checks the
            // bake ends (BakePassed, or BakeAsks: a person would be asked).
            let next = decision.check + 1;
            if next > progress.checks {
                break;
            }
            progress = BakeProgress {
                check: next,
                consecutive_failures: decision.consecutive_failures,
                passes: decision.passes,
                extra_checks: decision.extra_checks,
                ..progress
            };
        }
    }
    Ending::Promoted
}

impl Cluster {
    /// The cluster's latency level (log) and error rate this period.
    fn advance(&mut self, rng: &mut Xoshiro256PlusPlus, noise: Noise, load: f64, canary: bool) {
        let (mut level, mut rate) = (load, ERROR_RATE * load.exp());
        self.slow_multiplier = 1.0;
        match noise {
            Noise::OwnDrift(rho) => {
                self.drift = rho * self.drift + (1.0 - rho * rho).sqrt() * normal(rng);
                level += LEVEL_SPREAD * self.drift;
                rate *= (0.3 * self.drift - 0.045).exp();
            }
            Noise::Bursts if uniform(rng) < 0.05 => {
                level += 3.0_f64.ln();
                rate = 0.2;
            }
            Noise::Overdispersed => {
                // The latency's level three times as spread on the canary (a p99 per period
                // varies more); the error rate and the share of slow requests by log-normal
                // multipliers of mean 1, σ 0.9 on the canary, 0.3 on the baseline (they vary
                // more, and are no worse on average).
                let sigma: f64 = if canary { 0.9 } else { 0.3 };
                level += LEVEL_SPREAD * 3.0_f64.powi(i32::from(canary)) * normal(rng);
                rate *= (sigma * normal(rng) - sigma * sigma / 2.0).exp();
                self.slow_multiplier = (sigma * normal(rng) - sigma * sigma / 2.0).exp();
            }
            _ => {}
        }
        self.level = level;
        self.error_rate = rate.min(1.0);
    }
}

/// One period of one metric: the statistic it reads of each cluster's requests (the canary's,
/// the baseline's).
fn observe(
    rng: &mut Xoshiro256PlusPlus,
    world: &World,
    regression: Regression,
    metric: &ComparedMetric,
    [canary_requests, other_requests]: [f64; 2],
    clusters: &[Cluster; 2],
) -> Observation {
    let [canary, baseline] = clusters;
    if metric.alb == Some(AlbSignal::ErrorRate) {
        let canary_rate = match regression {
            Regression::MoreErrors(times) => (canary.error_rate * times).min(1.0),
            _ => canary.error_rate,
        };
        return Observation::Counts {
            canary_errors: poisson(rng, canary_rate * canary_requests).min(canary_requests),
            canary_requests,
            other_errors: poisson(rng, baseline.error_rate * other_requests).min(other_requests),
            other_requests,
        };
    }
    let slower = match regression {
        Regression::Slower(times) => times.ln(),
        _ => 0.0,
    };
    if let Some(threshold) = metric.slower_than_seconds(None) {
        // Each request slower than the threshold with the latency's tail probability there.
        let slow = |cluster: &Cluster, slower: f64, requests: f64, rng: &mut Xoshiro256PlusPlus| {
            // In Overdispersed the level varies for the p99 only; the slow share by its multiplier.
            let level = match world.noise {
                Noise::Overdispersed => slower,
                _ => cluster.level + slower,
            };
            let z = ((threshold / LATENCY).ln() - level) / spread(world.noise);
            let share = ((1.0 - Normal::standard().cdf(z)) * cluster.slow_multiplier).min(1.0);
            poisson(rng, requests * share).min(requests)
        };
        return Observation::Counts {
            canary_errors: slow(canary, slower, canary_requests, rng),
            canary_requests,
            other_errors: slow(baseline, 0.0, other_requests, rng),
            other_requests,
        };
    }
    let quantile = quantile_of(metric.stat());
    Observation::Value {
        canary: statistic(
            rng,
            world.noise,
            canary.level + slower,
            canary_requests,
            quantile,
        ),
        other: statistic(rng, world.noise, baseline.level, other_requests, quantile),
    }
}

/// `p99` → 0.99; any other statistic is simulated as the median.
fn quantile_of(stat: &str) -> f64 {
    stat.strip_prefix('p')
        .and_then(|p| p.parse::<f64>().ok())
        .map_or(0.5, |p| p / 100.0)
}

/// The `quantile` of `requests` requests' latencies around the level (log) `level`: the k-th
/// smallest of them (nearest rank), drawn as the k-th order statistic of that many uniforms
/// (Beta(k, n − k + 1)) through the latency's quantile function. No request, no value.
fn statistic(
    rng: &mut Xoshiro256PlusPlus,
    noise: Noise,
    level: f64,
    requests: f64,
    quantile: f64,
) -> f64 {
    if requests < 1.0 {
        return f64::NAN;
    }
    let k = (quantile * requests).ceil().clamp(1.0, requests);
    let rank = beta(rng, k, requests - k + 1.0).clamp(1e-12, 1.0 - 1e-12);
    let z = Normal::standard().inverse_cdf(rank);
    let value = LATENCY * (level + spread(noise) * z).exp();
    match noise {
        Noise::Rounded => (value * 100.0).round() / 100.0,
        _ => value,
    }
}

/// The spread (σ of the log) of one request's latency.
fn spread(noise: Noise) -> f64 {
    match noise {
        Noise::HeavyTailed => 2.0 * REQUEST_SPREAD,
        _ => REQUEST_SPREAD,
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

/// A Gamma(shape, 1) variate (Marsaglia and Tsang; below shape 1 through shape + 1).
fn gamma(rng: &mut Xoshiro256PlusPlus, shape: f64) -> f64 {
    if shape < 1.0 {
        return gamma(rng, shape + 1.0) * uniform(rng).powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v > 0.0 && uniform(rng).ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A Beta(a, b) variate.
fn beta(rng: &mut Xoshiro256PlusPlus, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    x / (x + gamma(rng, b))
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
    /// Of those, by a failing comparison (the rest: a bake's end without a pass).
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

    /// Caught within `checks` checks: the share of rollouts.
    pub fn caught_within(&self, checks: u32) -> f64 {
        let caught = self.checks_until.iter().filter(|c| **c <= checks).count();
        caught as f64 / f64::from(self.rollouts.max(1))
    }

    pub fn median_checks(&self) -> Option<u32> {
        let mut sorted = self.checks_until.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied()
    }
}

/// The analysis section of a plan whose comparison is `compare` (JSON), the docs' bake
/// settings: one period a minute, 10 minutes back (the default lookback).
/// An `extendBakeSeconds` in `compare` is the analysis section's.
pub fn analysis(compare: serde_json::Value) -> AnalysisSection {
    let mut section = serde_json::json!({"periodSeconds": 60, "lookbackSeconds": 600});
    let mut analysis = serde_json::json!({});
    if let (Some(section), Some(compare)) = (section.as_object_mut(), compare.as_object()) {
        section.extend(compare.clone());
        if let Some(extend) = section.remove("extendBakeSeconds") {
            analysis["extendBakeSeconds"] = extend;
        }
    }
    analysis["compare"] = section;
    serde_json::from_value(analysis).expect("an analysis section")
}

/// `count` latency metrics with the defaults.
pub fn latency_metrics(count: usize) -> serde_json::Value {
    let metrics: Vec<serde_json::Value> = (0..count)
        .map(|i| serde_json::json!({"name": format!("latency {i}"), "alb": "latency"}))
        .collect();
    serde_json::json!({ "metrics": metrics })
}

/// The docs' service's p99 latency: a request's latency above it one time in a hundred.
pub const DOCS_P99_SECONDS: f64 = 0.4;

/// One metric of the requests slower than `threshold` seconds (`slowerThan`).
pub fn slow_requests(threshold: f64) -> serde_json::Value {
    serde_json::json!({"metrics": [{"name": "slow requests", "alb": "latency", "slowerThan": threshold}]})
}

/// One error-rate metric.
pub fn error_rate() -> serde_json::Value {
    serde_json::json!({"metrics": [{"name": "5xx", "alb": "errorRate"}]})
}

/// The plan of docs/signals/compare.md: p99 with an allowed increase of 10 %, a critical 5xx
/// rate, a queue time p90 of weight 2, a Prometheus p99 (the last two simulated as ALB
/// latencies of their statistic).
pub fn docs_plan() -> serde_json::Value {
    serde_json::json!({"minSamples": 10, "metrics": [
        {"name": "p99 latency", "alb": "latency", "stat": "p99", "allowedIncrease": 1.1},
        {"name": "5xx rate", "alb": "errorRate", "critical": true},
        {"name": "queue time", "alb": "latency", "stat": "p90", "direction": "increase", "weight": 2},
        {"name": "checkout p99", "alb": "latency"},
    ]})
}

/// The docs' plan judged per request: the requests slower than the service's p99 (critical),
/// and the 5xx rate.
pub fn per_request_plan() -> serde_json::Value {
    serde_json::json!({"metrics": [
        {"name": "slow requests", "alb": "latency", "slowerThan": DOCS_P99_SECONDS, "critical": true},
        {"name": "5xx rate", "alb": "errorRate", "critical": true},
    ]})
}

/// The sandbox's `compare` scenario's plan shape: p99 with an allowed increase of 20 % and a
/// p50.
pub fn sandbox_plan() -> serde_json::Value {
    serde_json::json!({"metrics": [
        {"name": "p99", "alb": "latency", "allowedIncrease": 1.2},
        {"name": "p50", "alb": "latency", "stat": "p50"},
    ]})
}

/// `compare` with every metric's `autocorrelation` set to `rho`.
pub fn with_autocorrelation(mut compare: serde_json::Value, rho: f64) -> serde_json::Value {
    for metric in compare["metrics"].as_array_mut().into_iter().flatten() {
        metric["autocorrelation"] = serde_json::json!(rho);
    }
    compare
}
