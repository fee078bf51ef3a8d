//! The rollout's CloudWatch metrics, in the Embedded Metric Format: a function prints one JSON
//! line per data point to its log, and CloudWatch Logs turns it into a metric (no API call,
//! no extra permission). Namespace [`NAMESPACE`]. Dimensions are bounded: the cluster
//! (`<region>/<name>`), the traffic target, the side of an ALB pair, a threshold check's
//! name, a rollback's cause (an error name); never an execution name, which would make a new
//! metric stream per rollout.
//!
//! Every metric is one [`Metric`]; `template.yaml`'s dashboard plots only these (a test
//! checks), and a point can only be built with the dimensions its metric declares.

use serde_json::{json, Map, Value};
use strum::{IntoStaticStr, VariantArray};

use crate::weights::TargetWeights;

pub const NAMESPACE: &str = "ClusterCanary";

/// The gates before traffic a `GateHolds` point names (the plan's sections): a bounded
/// dimension.
pub const GATES: [&str; 3] = ["targetHealth", "clusterReadiness", "testTraffic"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr, VariantArray)]
pub enum Metric {
    /// The canary's share of a target's weights after a change, read back (0–100).
    CanaryWeight,
    /// 1 for the verdict a check had, 0 for the other two: a check is one of each series.
    ChecksPassed,
    ChecksFailed,
    ChecksInconclusive,
    /// An ALB target group's 5xx rate over the check's lookback, canary and stable side by side.
    ErrorRatePercent,
    /// An ALB target group's latency statistic, canary and stable side by side.
    LatencySeconds,
    /// The reduced value of a plan's metric threshold check.
    MetricValue,
    /// A compared metric's median over the comparison's window (`analysis.compare`), canary and
    /// baseline side by side (`Check`: the metric's name).
    ComparedMedian,
    /// 1 per rollback, by its cause (`CheckFailed`, an error name, or the safety net's).
    Rollbacks,
    /// From the failing check (or failed step) to every target read back at the baseline.
    RollbackSeconds,
    /// 1 when the look after a rollback's settle period found a target moved away from the
    /// baseline again (a controller put weights back) and re-asserted it. Also emitted without
    /// dimensions, for the template's `RollbackRevertedAlarm`.
    RollbacksReverted,
    /// 1 when a foreign change stopped a rollout (the targets changed left as found, the others
    /// put back): someone else moves this traffic, and a person should look. Also emitted
    /// without dimensions, for the template's `ForeignChangeAlarm`.
    ForeignChanges,
    /// 1 for each attempt of a rollback's restore that failed (a write refused, a target
    /// unreachable): traffic is not back at the baseline while the state machine retries. Also
    /// emitted without dimensions, for the template's `RestoreFailingAlarm`, which pages at the
    /// first failure rather than when the retries are spent.
    RestoreFailures,
    /// 1 when the safety net's sweep restored a rollout that ended ABORTED, FAILED or TIMED_OUT
    /// with traffic still where it left it: the SafetyNet rule is disabled or its delivery was
    /// lost. Also emitted without dimensions, for the template's `SafetyNetSweptAlarm`.
    SafetyNetSweeps,
    /// 1 the first time in a rollout that its alarm watch could not be registered: instant
    /// rollback is off, and only the polling checks roll back. Also emitted without dimensions,
    /// for the template's `AlarmWatchUnavailableAlarm`.
    AlarmWatchUnavailable,
    /// 1 for each check or look of a rollout a change freeze holds where it is (a Change
    /// Calendar CLOSED, the stack's freeze switch on).
    FrozenChecks,
    /// 1 for each look of a gate before traffic that held the rollout (`Gate`: [`GATES`]):
    /// the canary's targets not healthy yet, EKS saying the new cluster is not ready, the
    /// test-traffic stage not over yet.
    GateHolds,
    /// A fleet's cells promoted in a wave (`Fleet`: the fleet plan's name).
    CellsPromoted,
    /// A fleet's cells that ended without promotion in a wave (failed, or never started).
    CellsFailed,
    /// 1 for each event a rule delivered that is not what its source sends (`Source`: the
    /// event's source, e.g. `aws.health`): answered as handled, so that Lambda does not try it
    /// again, and counted here.
    EventsRefused,
}

impl Metric {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The CloudWatch unit (one of the names CloudWatch accepts).
    pub fn unit(self) -> &'static str {
        match self {
            Metric::CanaryWeight | Metric::ErrorRatePercent => "Percent",
            Metric::ChecksPassed
            | Metric::ChecksFailed
            | Metric::ChecksInconclusive
            | Metric::Rollbacks
            | Metric::RollbacksReverted
            | Metric::ForeignChanges
            | Metric::RestoreFailures
            | Metric::SafetyNetSweeps
            | Metric::AlarmWatchUnavailable
            | Metric::FrozenChecks
            | Metric::GateHolds
            | Metric::CellsPromoted
            | Metric::CellsFailed
            | Metric::EventsRefused => "Count",
            Metric::LatencySeconds | Metric::RollbackSeconds => "Seconds",
            Metric::MetricValue | Metric::ComparedMedian => "None",
        }
    }

    pub fn dimensions(self) -> &'static [&'static str] {
        match self {
            Metric::CanaryWeight => &["Cluster", "Target"],
            Metric::ChecksPassed | Metric::ChecksFailed | Metric::ChecksInconclusive => {
                &["Cluster"]
            }
            Metric::ErrorRatePercent | Metric::LatencySeconds => &["Cluster", "Target", "Side"],
            Metric::MetricValue => &["Cluster", "Check"],
            Metric::GateHolds => &["Cluster", "Gate"],
            Metric::ComparedMedian => &["Cluster", "Check", "Side"],
            Metric::Rollbacks => &["Cluster", "Cause"],
            Metric::RollbackSeconds
            | Metric::RollbacksReverted
            | Metric::ForeignChanges
            | Metric::RestoreFailures
            | Metric::SafetyNetSweeps
            | Metric::AlarmWatchUnavailable
            | Metric::FrozenChecks => &["Cluster"],
            Metric::CellsPromoted | Metric::CellsFailed => &["Fleet"],
            Metric::EventsRefused => &["Source"],
        }
    }

    /// Metrics an alarm of the template watches across every cluster: emitted with an empty
    /// dimension set too (an alarm cannot SEARCH).
    fn also_stack_wide(self) -> bool {
        matches!(
            self,
            Metric::RollbacksReverted
                | Metric::ForeignChanges
                | Metric::RestoreFailures
                | Metric::SafetyNetSweeps
                | Metric::AlarmWatchUnavailable
        )
    }
}

/// One data point of one metric, with a value for each of its dimensions.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    metric: Metric,
    dimension_values: Vec<String>,
    value: f64,
}

/// The `Cluster` dimension: a cluster is its region and name (the metrics live in the stack's
/// account).
pub fn cluster_dimension(region: &str, name: &str) -> String {
    format!("{region}/{name}")
}

/// The `Target` dimension of a traffic target key: an ELB listener or rule ARN's resource
/// (`listener/app/web/…`, `listener/net/…`), a Global Accelerator endpoint group's
/// (`accelerator/…/endpoint-group/…`), or the Route 53 key as it is
/// (`route53:<zone>:<name>:<type>`).
pub fn target_dimension(target_key: &str) -> String {
    match target_key.strip_prefix("arn:") {
        Some(_) => target_key
            .splitn(6, ':')
            .nth(5)
            .unwrap_or(target_key)
            .to_owned(),
        None => target_key.to_owned(),
    }
}

impl Point {
    fn new(metric: Metric, dimension_values: Vec<String>, value: f64) -> Self {
        Point {
            metric,
            dimension_values,
            value,
        }
    }

    pub fn canary_weight(cluster: &str, weights: &TargetWeights) -> Self {
        let values = vec![cluster.to_owned(), target_dimension(&weights.target)];
        let percent = weights.pair().canary_share_percent();
        Point::new(Metric::CanaryWeight, values, percent)
    }

    /// The three check series for one check whose verdict is `passed`, `failed`, or neither.
    pub fn check_result(cluster: &str, passed: bool, failed: bool) -> [Self; 3] {
        let one = |metric, on: bool| {
            Point::new(metric, vec![cluster.to_owned()], if on { 1.0 } else { 0.0 })
        };
        [
            one(Metric::ChecksPassed, passed),
            one(Metric::ChecksFailed, failed),
            one(Metric::ChecksInconclusive, !passed && !failed),
        ]
    }

    /// An ALB pair's 5xx rate; `side` is `canary` or `stable`, `target` the canary target
    /// group's name.
    pub fn error_rate(cluster: &str, target: &str, side: &str, percent: f64) -> Self {
        let values = vec![cluster.to_owned(), target.to_owned(), side.to_owned()];
        Point::new(Metric::ErrorRatePercent, values, percent)
    }

    /// An ALB pair's latency statistic, like [`Point::error_rate`].
    pub fn latency(cluster: &str, target: &str, side: &str, seconds: f64) -> Self {
        let values = vec![cluster.to_owned(), target.to_owned(), side.to_owned()];
        Point::new(Metric::LatencySeconds, values, seconds)
    }

    pub fn metric_value(cluster: &str, check: &str, value: f64) -> Self {
        let values = vec![cluster.to_owned(), check.to_owned()];
        Point::new(Metric::MetricValue, values, value)
    }

    /// A compared metric's median; `side` is `canary` or `baseline`.
    pub fn compared_median(cluster: &str, check: &str, side: &str, median: f64) -> Self {
        let values = vec![cluster.to_owned(), check.to_owned(), side.to_owned()];
        Point::new(Metric::ComparedMedian, values, median)
    }

    pub fn rollback(cluster: &str, cause: &str) -> Self {
        let values = vec![cluster.to_owned(), cause.to_owned()];
        Point::new(Metric::Rollbacks, values, 1.0)
    }

    pub fn rollback_reverted(cluster: &str) -> Self {
        Point::new(Metric::RollbacksReverted, vec![cluster.to_owned()], 1.0)
    }

    /// An event from `source` refused as malformed.
    pub fn event_refused(source: &'static str) -> Self {
        Point::new(Metric::EventsRefused, vec![source.to_owned()], 1.0)
    }

    pub fn frozen_check(cluster: &str) -> Self {
        Point::new(Metric::FrozenChecks, vec![cluster.to_owned()], 1.0)
    }

    /// A look of `gate` (one of [`GATES`]) that held the rollout.
    pub fn gate_hold(cluster: &str, gate: &'static str) -> Self {
        debug_assert!(GATES.contains(&gate), "{gate}");
        Point::new(
            Metric::GateHolds,
            vec![cluster.to_owned(), gate.to_owned()],
            1.0,
        )
    }

    pub fn foreign_change(cluster: &str) -> Self {
        Point::new(Metric::ForeignChanges, vec![cluster.to_owned()], 1.0)
    }

    pub fn restore_failure(cluster: &str) -> Self {
        Point::new(Metric::RestoreFailures, vec![cluster.to_owned()], 1.0)
    }

    pub fn safety_net_sweep(cluster: &str) -> Self {
        Point::new(Metric::SafetyNetSweeps, vec![cluster.to_owned()], 1.0)
    }

    pub fn alarm_watch_unavailable(cluster: &str) -> Self {
        Point::new(Metric::AlarmWatchUnavailable, vec![cluster.to_owned()], 1.0)
    }

    /// What one wave of `fleet` did: its cells promoted and failed.
    pub fn wave_cells(fleet: &str, promoted: u32, failed: u32) -> [Self; 2] {
        [
            Point::new(
                Metric::CellsPromoted,
                vec![fleet.to_owned()],
                f64::from(promoted),
            ),
            Point::new(
                Metric::CellsFailed,
                vec![fleet.to_owned()],
                f64::from(failed),
            ),
        ]
    }

    pub fn rollback_seconds(cluster: &str, seconds: f64) -> Self {
        Point::new(Metric::RollbackSeconds, vec![cluster.to_owned()], seconds)
    }

    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The EMF document: `_aws` metadata naming the namespace, the dimension set and the
    /// metric with its unit, then each dimension and the metric as top-level members.
    pub fn to_emf(&self, timestamp_ms: u64) -> Value {
        let metric = self.metric;
        let dimension_sets = if metric.also_stack_wide() {
            json!([metric.dimensions(), []])
        } else {
            json!([metric.dimensions()])
        };
        let mut document = Map::new();
        document.insert(
            "_aws".to_owned(),
            json!({
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE,
                    "Dimensions": dimension_sets,
                    "Metrics": [{"Name": metric.name(), "Unit": metric.unit()}],
                }],
            }),
        );
        for (name, value) in metric.dimensions().iter().zip(&self.dimension_values) {
            document.insert((*name).to_owned(), Value::String(value.clone()));
        }
        document.insert(metric.name().to_owned(), json!(self.value));
        Value::Object(document)
    }
}

/// Prints metric points as Embedded Metric Format lines on stdout, where Lambda's log capture
/// hands them to CloudWatch Logs, which extracts the metrics. One line per point.
pub fn emit(points: impl IntoIterator<Item = Point>) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    for point in points {
        // `println!` (not a raw stdout handle) so that tests capture the lines like any output.
        println!("{}", point.to_emf(now_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(target: &str, stable: u16, canary: u16) -> TargetWeights {
        TargetWeights {
            target: target.to_owned(),
            stable,
            canary,
        }
    }

    #[test]
    fn a_point_is_the_exact_document_cloudwatch_expects() {
        let point = Point::canary_weight(
            "eu-west-1/green",
            &weights(
                "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2",
                75,
                25,
            ),
        );
        assert_eq!(
            point.to_emf(1_795_000_000_000),
            json!({
                "_aws": {
                    "Timestamp": 1_795_000_000_000u64,
                    "CloudWatchMetrics": [{
                        "Namespace": "ClusterCanary",
                        "Dimensions": [["Cluster", "Target"]],
                        "Metrics": [{"Name": "CanaryWeight", "Unit": "Percent"}],
                    }],
                },
                "Cluster": "eu-west-1/green",
                "Target": "listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2",
                "CanaryWeight": 25.0,
            })
        );
    }

    #[test]
    fn every_point_carries_each_dimension_its_metric_declares() {
        let points = [
            Point::canary_weight("r/c", &weights("route53:Z1:app.example.com.:A", 0, 0)),
            Point::error_rate("r/c", "green", "canary", 3.2),
            Point::latency("r/c", "green", "stable", 0.2),
            Point::metric_value("r/c", "checkout p99", 0.4),
            Point::rollback("r/c", "CheckFailed"),
            Point::rollback_seconds("r/c", 1.5),
            Point::rollback_reverted("r/c"),
            Point::foreign_change("r/c"),
            Point::restore_failure("r/c"),
            Point::safety_net_sweep("r/c"),
            Point::alarm_watch_unavailable("r/c"),
            Point::frozen_check("r/c"),
            Point::event_refused("aws.health"),
            Point::gate_hold("r/c", "clusterReadiness"),
            Point::compared_median("r/c", "p99 latency", "canary", 0.15),
        ]
        .into_iter()
        .chain(Point::check_result("r/c", false, true))
        .chain(Point::wave_cells("web-fleet", 2, 1));
        let mut seen = Vec::new();
        for point in points {
            let document = point.to_emf(0);
            let metric = point.metric();
            let declared = &document["_aws"]["CloudWatchMetrics"][0];
            assert_eq!(declared["Dimensions"][0], json!(metric.dimensions()));
            for dimension in metric.dimensions() {
                assert!(document[*dimension].is_string(), "{document}");
            }
            assert!(document[metric.name()].is_number(), "{document}");
            // An alarm watches the stack-wide series: it has no dimension at all.
            let stack_wide = matches!(
                metric,
                Metric::RollbacksReverted
                    | Metric::ForeignChanges
                    | Metric::RestoreFailures
                    | Metric::SafetyNetSweeps
                    | Metric::AlarmWatchUnavailable
            );
            assert_eq!(
                declared["Dimensions"].get(1) == Some(&json!([])),
                stack_wide
            );
            let units = ["Percent", "Count", "Seconds", "None"];
            assert!(units.contains(&declared["Metrics"][0]["Unit"].as_str().unwrap()));
            seen.push(metric);
        }
        assert_eq!(
            seen.len(),
            Metric::VARIANTS.len(),
            "every metric has a point here"
        );
        for metric in Metric::VARIANTS {
            assert!(seen.contains(metric), "{metric:?}");
        }
    }

    #[test]
    fn a_check_is_one_of_three_series() {
        let values = |passed, failed| {
            Point::check_result("r/c", passed, failed)
                .map(|p| p.to_emf(0)[p.metric().name()].clone())
        };
        assert_eq!(values(true, false), [json!(1.0), json!(0.0), json!(0.0)]);
        assert_eq!(values(false, true), [json!(0.0), json!(1.0), json!(0.0)]);
        assert_eq!(values(false, false), [json!(0.0), json!(0.0), json!(1.0)]);
    }

    #[test]
    fn target_dimensions_are_short_and_stable() {
        assert_eq!(
            target_dimension("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/web/50dc/f2f7/9683"),
            "listener-rule/app/web/50dc/f2f7/9683"
        );
        assert_eq!(
            target_dimension("arn:aws:globalaccelerator::123456789012:accelerator/f19d/listener/4ac0/endpoint-group/0604"),
            "accelerator/f19d/listener/4ac0/endpoint-group/0604"
        );
        assert_eq!(
            target_dimension("route53:Z1:app.example.com.:A"),
            "route53:Z1:app.example.com.:A"
        );
        let share = |stable, canary| {
            Point::canary_weight("r/c", &weights("x", stable, canary)).to_emf(0)["CanaryWeight"]
                .clone()
        };
        assert_eq!(share(0, 100), 100.0);
        // Route 53 splits all-zero weights evenly (WeightPair::canary_share_percent).
        assert_eq!(share(0, 0), 50.0);
    }
}
