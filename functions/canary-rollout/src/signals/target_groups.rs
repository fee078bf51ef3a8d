//! The target groups the built-in checks read in CloudWatch: an `alb` target's (namespace
//! `AWS/ApplicationELB`, dimensions `LoadBalancer` and `TargetGroup`, latency in seconds) and a
//! `vpcLattice` target's (namespace `AWS/VpcLattice`, dimension `TargetGroup` = the group's ID,
//! latency in milliseconds). Every reader of a target group's requests, 5xx or latency (the ALB
//! judge, the comparison, the error budget's spend, the outlook) builds its queries here, so a
//! group's metric names, dimensions and unit are said once.

use std::collections::BTreeMap;

use canary_aws::MetricQuery;
use canary_core::arn::{parse_elb_arn, ElbResource};
use canary_core::TrafficTarget;

/// What a query reads of a target group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupMetric {
    Requests,
    Errors5xx,
    Latency,
}

/// Who publishes a target group's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    Alb,
    VpcLattice,
}

impl Publisher {
    fn namespace(self) -> &'static str {
        match self {
            Publisher::Alb => "AWS/ApplicationELB",
            Publisher::VpcLattice => "AWS/VpcLattice",
        }
    }

    fn metric_name(self, metric: GroupMetric) -> &'static str {
        match (self, metric) {
            (Publisher::Alb, GroupMetric::Requests) => "RequestCount",
            (Publisher::Alb, GroupMetric::Errors5xx) => "HTTPCode_Target_5XX_Count",
            (Publisher::Alb, GroupMetric::Latency) => "TargetResponseTime",
            (Publisher::VpcLattice, GroupMetric::Requests) => "TotalRequestCount",
            (Publisher::VpcLattice, GroupMetric::Errors5xx) => "HTTPCode_5XX_Count",
            (Publisher::VpcLattice, GroupMetric::Latency) => "RequestTime",
        }
    }

    /// Seconds in one unit of the latency metric: ALB's `TargetResponseTime` is in seconds,
    /// Lattice's `RequestTime` in milliseconds.
    fn seconds_per_latency_unit(self) -> f64 {
        match self {
            Publisher::Alb => 1.0,
            Publisher::VpcLattice => 0.001,
        }
    }
}

/// One target group as CloudWatch knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredGroup {
    pub publisher: Publisher,
    pub dimensions: BTreeMap<String, String>,
}

impl MeasuredGroup {
    /// An ALB target group behind the load balancer of `listener_arn`.
    pub fn alb(listener_arn: &str, target_group_arn: &str) -> Option<MeasuredGroup> {
        Some(MeasuredGroup {
            publisher: Publisher::Alb,
            dimensions: BTreeMap::from([
                (
                    "LoadBalancer".to_owned(),
                    load_balancer_dimension(listener_arn)?,
                ),
                (
                    "TargetGroup".to_owned(),
                    target_group_dimension(target_group_arn)?,
                ),
            ]),
        })
    }

    /// A VPC Lattice target group, by its ID (`tg-…`).
    pub fn vpc_lattice(target_group_id: &str) -> MeasuredGroup {
        MeasuredGroup {
            publisher: Publisher::VpcLattice,
            dimensions: BTreeMap::from([("TargetGroup".to_owned(), target_group_id.to_owned())]),
        }
    }

    /// The query of `metric` at `stat`; `id` and the period are the caller's. A latency
    /// statistic that counts requests slower than a threshold (`TC(<seconds>:)`) is given in
    /// seconds and asked in the publisher's unit: use [`MeasuredGroup::slower_than`].
    pub fn query(&self, id: String, metric: GroupMetric, stat: String, period: i32) -> MetricQuery {
        MetricQuery {
            id,
            namespace: self.publisher.namespace().to_owned(),
            metric_name: self.publisher.metric_name(metric).to_owned(),
            dimensions: self.dimensions.clone(),
            stat,
            period_seconds: period,
        }
    }

    /// The trimmed count of the requests slower than `seconds`, in the publisher's unit.
    pub fn slower_than(&self, seconds: f64) -> String {
        format!(
            "TC({}:)",
            seconds / self.publisher.seconds_per_latency_unit()
        )
    }

    /// A latency datapoint at `stat`, in seconds (a `SampleCount` counts requests: no unit).
    pub fn latency_seconds(&self, stat: &str, value: f64) -> f64 {
        match stat {
            "SampleCount" => value,
            _ => value * self.publisher.seconds_per_latency_unit(),
        }
    }

    /// The `TargetGroup` dimension's value, for reasons.
    fn target_group(&self) -> &str {
        self.dimensions
            .get("TargetGroup")
            .map_or("", String::as_str)
    }
}

/// A traffic target's canary and stable target groups, with a label for reasons.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetGroupPair {
    pub label: String,
    pub canary: MeasuredGroup,
    pub stable: MeasuredGroup,
}

/// The `LoadBalancer` dimension of a listener's load balancer: `app/<name>/<id>`.
fn load_balancer_dimension(listener_arn: &str) -> Option<String> {
    let listener = parse_elb_arn(listener_arn, ElbResource::Listener).ok()?;
    // `app/<name>/<id>/<listener id>` → `app/<name>/<id>`
    Some(listener.path.rsplit_once('/')?.0.to_owned())
}

/// The `TargetGroup` dimension of an ALB target group: `targetgroup/<name>/<id>`.
fn target_group_dimension(arn: &str) -> Option<String> {
    let group = parse_elb_arn(arn, ElbResource::TargetGroup).ok()?;
    Some(format!("targetgroup/{}", group.path))
}

/// A target's pair: the dimensions are an ALB's ARNs' resource parts, or Lattice's IDs.
fn pair_of(target: &TrafficTarget) -> Option<TargetGroupPair> {
    let (canary, stable) = match target {
        TrafficTarget::Alb(alb) => (
            MeasuredGroup::alb(&alb.listener_arn, &alb.canary_target_group_arn)?,
            MeasuredGroup::alb(&alb.listener_arn, &alb.stable_target_group_arn)?,
        ),
        TrafficTarget::VpcLattice(lattice) => (
            MeasuredGroup::vpc_lattice(lattice.canary_target_group_id()),
            MeasuredGroup::vpc_lattice(lattice.stable_target_group_id()),
        ),
        _ => return None,
    };
    // `targetgroup/<name>/<id>`: the name is what a person recognises; a Lattice group's ID.
    let group = canary.target_group();
    let label = match canary.publisher {
        Publisher::Alb => group.split('/').nth(1).unwrap_or(group),
        Publisher::VpcLattice => group,
    };
    Some(TargetGroupPair {
        label: label.to_owned(),
        canary,
        stable,
    })
}

/// The distinct target group pairs of the plan's `alb` and `vpcLattice` targets (a listener
/// and its rule often share them).
pub fn target_group_pairs(targets: &[TrafficTarget]) -> Vec<TargetGroupPair> {
    let mut pairs: Vec<TargetGroupPair> = Vec::new();
    for pair in targets.iter().filter_map(pair_of) {
        if !pairs.contains(&pair) {
            pairs.push(pair);
        }
    }
    pairs
}

/// An `alb` target of blue's and green's groups behind the load balancer `web`, for tests.
#[cfg(test)]
pub(super) fn alb_target() -> TrafficTarget {
    alb_target_with_rule(None)
}

#[cfg(test)]
fn alb_target_with_rule(rule: Option<&str>) -> TrafficTarget {
    TrafficTarget::Alb(canary_core::AlbTarget {
        listener_arn: "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2".into(),
        rule_arn: rule.map(str::to_owned),
        stable_target_group_arn: "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067".into(),
        canary_target_group_arn: "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/4b7c9a1e2f3d5a68".into(),
        owner: None,
    })
}

/// A `vpcLattice` target of a service's listener, its canary group `tg-…abcdefb`, for tests.
#[cfg(test)]
pub(super) fn lattice_target() -> TrafficTarget {
    lattice_target_with_canary("tg-0123456789abcdefb")
}

#[cfg(test)]
fn lattice_target_with_canary(canary: &str) -> TrafficTarget {
    TrafficTarget::VpcLattice(canary_core::VpcLatticeTarget {
        service_identifier: "svc-0123456789abcdef0".into(),
        listener_identifier: "listener-0123456789abcdef0".into(),
        rule_identifier: None,
        stable_target_group: "tg-0123456789abcdefa".into(),
        canary_target_group: canary.into(),
        owner: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alb_dimensions_come_from_the_arns_and_pairs_are_deduplicated() {
        let pairs = target_group_pairs(&[alb_target(), alb_target_with_rule(Some("rule"))]);
        let group = |name: &str| MeasuredGroup {
            publisher: Publisher::Alb,
            dimensions: BTreeMap::from([
                ("LoadBalancer".into(), "app/web/50dc6c495c0c9188".into()),
                ("TargetGroup".into(), format!("targetgroup/{name}")),
            ]),
        };
        assert_eq!(
            pairs,
            [TargetGroupPair {
                label: "green".into(),
                canary: group("green/4b7c9a1e2f3d5a68"),
                stable: group("blue/73e2d6bc24d8a067"),
            }]
        );
    }

    #[test]
    fn a_lattice_groups_dimension_is_its_id_whether_the_plan_gives_the_id_or_the_arn() {
        let arn = "arn:aws:vpc-lattice:us-east-1:123456789012:targetgroup/tg-0123456789abcdefb";
        let pairs = target_group_pairs(&[lattice_target(), lattice_target_with_canary(arn)]);
        assert_eq!(pairs.len(), 1, "an ID and its ARN are one group: {pairs:?}");
        assert_eq!(pairs[0].label, "tg-0123456789abcdefb");
        let query = pairs[0]
            .canary
            .query("q".into(), GroupMetric::Errors5xx, "Sum".into(), 60);
        assert_eq!(
            (query.namespace.as_str(), query.metric_name.as_str()),
            ("AWS/VpcLattice", "HTTPCode_5XX_Count")
        );
        assert_eq!(
            query.dimensions,
            BTreeMap::from([("TargetGroup".into(), "tg-0123456789abcdefb".into())])
        );
        assert_eq!(
            pairs[0].stable.dimensions["TargetGroup"],
            "tg-0123456789abcdefa"
        );
    }

    #[test]
    fn lattice_latency_is_asked_and_read_in_milliseconds_alb_in_seconds() {
        let lattice = MeasuredGroup::vpc_lattice("tg-0123456789abcdefb");
        let alb = &target_group_pairs(&[alb_target()])[0].canary;
        assert_eq!(lattice.slower_than(0.5), "TC(500:)");
        assert_eq!(alb.slower_than(0.5), "TC(0.5:)");
        assert_eq!(lattice.latency_seconds("p99", 250.0), 0.25);
        assert_eq!(alb.latency_seconds("p99", 0.25), 0.25);
        assert_eq!(
            lattice.latency_seconds("SampleCount", 40.0),
            40.0,
            "a count has no unit"
        );
        let query = lattice.query("q".into(), GroupMetric::Latency, "p99".into(), 60);
        assert_eq!(query.metric_name, "RequestTime");
        let requests = lattice.query("q".into(), GroupMetric::Requests, "Sum".into(), 60);
        assert_eq!(requests.metric_name, "TotalRequestCount");
    }

    #[test]
    fn other_kinds_have_no_target_groups_to_judge() {
        let route53 = serde_json::from_value::<TrafficTarget>(serde_json::json!({"route53": {
            "hostedZoneId": "Z0123456789ABCDEFGHIJ", "recordName": "app.example.com", "recordType": "A",
            "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}));
        let route53 = route53.expect("a route53 target");
        assert!(target_group_pairs(&[route53]).is_empty());
    }
}
