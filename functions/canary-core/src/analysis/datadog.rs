//! The plan's `analysis.datadog` checks: Datadog metrics queries through the v2 scalar query
//! API (`POST https://api.<site>/api/v2/query/scalar`), each reduced by Datadog to one number
//! over its lookback and judged against its `min`/`max`. Pure: the site, the request body, what
//! an answer means.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::outcome::CheckOutcome;
use super::query_template::{judge_query, query_check, validate_check_count, validate_query_check};
use crate::cluster::ClusterRef;
use crate::validate::Errors;

/// Most Datadog checks in a plan: each is one API request per check interval, and Datadog
/// rate-limits the query API per organisation.
pub const MAX_DATADOG_CHECKS: usize = 20;
/// The Datadog sites (where the organisation lives), as Datadog's API reference lists them.
pub const SITES: [&str; 9] = [
    "datadoghq.com",
    "us3.datadoghq.com",
    "us5.datadoghq.com",
    "datadoghq.eu",
    "ap1.datadoghq.com",
    "ap2.datadoghq.com",
    "uk1.datadoghq.com",
    "ddog-gov.com",
    "us2.ddog-gov.com",
];

/// Datadog metrics queries, judged at every check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatadogChecks {
    /// The organisation's Datadog site, e.g. `datadoghq.eu`. Default `datadoghq.com`. The API
    /// and application keys are not in the plan: the stack's `DatadogSecretArn` names them.
    #[serde(default = "default_site")]
    pub site: String,
    /// At least one, unless `analysis.compare` queries this site.
    #[serde(default)]
    pub checks: Vec<DatadogCheck>,
}

fn default_site() -> String {
    SITES[0].to_owned()
}

query_check! {
    /// One metrics query and its limits.
    pub struct DatadogCheck {
        /// A Datadog metrics query giving one series, e.g.
        /// `sum:trace.http.request.errors{kube_cluster_name:{{cluster}}}.as_count()`.
        /// `{{cluster}}` and `{{region}}` become the new cluster's name and region.
        query,
        /// How Datadog reduces the series over the lookback to one number. Default `avg`.
        #[serde(default)]
        pub aggregator: DatadogAggregator,
        /// How far back each check looks, seconds: 60 to 86400. Default 300.
        #[serde(default = "default_lookback")]
        pub lookback_seconds: i64,
    }
}

fn default_lookback() -> i64 {
    300
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DatadogAggregator {
    #[default]
    Avg,
    Min,
    Max,
    Sum,
    Last,
}

impl DatadogAggregator {
    fn as_str(self) -> &'static str {
        match self {
            DatadogAggregator::Avg => "avg",
            DatadogAggregator::Min => "min",
            DatadogAggregator::Max => "max",
            DatadogAggregator::Sum => "sum",
            DatadogAggregator::Last => "last",
        }
    }
}

impl DatadogChecks {
    /// The scalar query endpoint of the plan's site.
    pub fn api_url(&self) -> String {
        format!("https://api.{}/api/v2/query/scalar", self.site)
    }

    /// The timeseries query endpoint of the plan's site (the comparison's samples).
    pub fn timeseries_url(&self) -> String {
        format!("https://api.{}/api/v2/query/timeseries", self.site)
    }

    /// `used_by_comparison`: `analysis.compare` queries this site, so `checks` may be empty.
    pub(crate) fn validate(
        &self,
        cluster: &ClusterRef,
        used_by_comparison: bool,
        errors: &mut Errors,
    ) {
        let path = "analysis.datadog";
        if !SITES.contains(&self.site.as_str()) {
            errors.push(
                format!("{path}.site"),
                format!(
                    "{:?} is not a Datadog site: one of {}",
                    self.site,
                    SITES.join(", ")
                ),
            );
        }
        if !(used_by_comparison && self.checks.is_empty()) {
            validate_check_count(
                path,
                self.checks.len(),
                MAX_DATADOG_CHECKS,
                "Datadog",
                errors,
            );
        }
        for (i, check) in self.checks.iter().enumerate() {
            let path = format!("{path}.checks[{i}]");
            validate_query_check(&path, check.spec(), cluster, errors);
            if !(60..=86_400).contains(&check.lookback_seconds) {
                errors.push(
                    format!("{path}.lookbackSeconds"),
                    format!(
                        "must be from 60 to 86400 seconds, got {}",
                        check.lookback_seconds
                    ),
                );
            }
        }
    }
}

/// The body of one check's scalar query, from `now_ms - lookback` to `now_ms`.
pub fn scalar_request(check: &DatadogCheck, query: &str, now_ms: i64) -> Value {
    json!({"data": {"type": "scalar_request", "attributes": {
        "from": now_ms - check.lookback_seconds * 1000,
        "to": now_ms,
        "queries": [{
            "data_source": "metrics",
            "name": "a",
            "query": query,
            "aggregator": check.aggregator.as_str(),
        }],
    }}})
}

/// The one number of a scalar answer (`{"data": {"attributes": {"columns": [...]}}}`):
/// `Ok(None)` when there is none (no series, a null value: no data, never a pass); `Err` for an
/// answer a check cannot judge (several groups).
pub fn scalar_value(answer: &Value) -> Result<Option<f64>, String> {
    let columns = answer["data"]["attributes"]["columns"]
        .as_array()
        .ok_or_else(|| "answered without data.attributes.columns".to_owned())?;
    let numbers: Vec<&Value> = columns.iter().filter(|c| c["type"] == "number").collect();
    let [column] = numbers.as_slice() else {
        return match numbers.len() {
            0 => Ok(None),
            n => Err(format!("answered {n} number columns; a check needs one")),
        };
    };
    let values = column["values"].as_array().cloned().unwrap_or_default();
    match values.as_slice() {
        [] => Ok(None),
        [value] => Ok(value.as_f64().filter(|v| !v.is_nan())),
        several => Err(format!(
            "returned {} values (one per group); drop the `by {{…}}` or aggregate to one series",
            several.len()
        )),
    }
}

/// The body of a timeseries query of `query` from `from_ms` to `to_ms`, one point per
/// `interval_ms` (the comparison's samples of one side).
pub fn timeseries_request(query: &str, from_ms: i64, to_ms: i64, interval_ms: i64) -> Value {
    json!({"data": {"type": "timeseries_request", "attributes": {
        "from": from_ms,
        "to": to_ms,
        "interval": interval_ms,
        "queries": [{"data_source": "metrics", "name": "a", "query": query}],
        "formulas": [{"formula": "a"}],
    }}})
}

/// The points of a timeseries answer (`{"data": {"attributes": {"series", "times", "values"}}}`)
/// as (epoch seconds, value); none for no series, null points left out. `Err` for an answer the
/// comparison cannot use (several series: a `by {…}` query).
pub fn timeseries_samples(answer: &Value) -> Result<Vec<(i64, f64)>, String> {
    let attributes = &answer["data"]["attributes"];
    let times = attributes["times"]
        .as_array()
        .ok_or_else(|| "answered without data.attributes.times".to_owned())?;
    let series = attributes["values"].as_array().cloned().unwrap_or_default();
    let values = match series.as_slice() {
        [] => return Ok(Vec::new()),
        [one] => one.as_array().cloned().unwrap_or_default(),
        several => {
            let count = several.len();
            return Err(format!(
                "returned {count} series (one per group); drop the `by {{…}}` or aggregate to one"
            ));
        }
    };
    Ok(times
        .iter()
        .zip(&values)
        .filter_map(|(at, value)| Some((at.as_i64()? / 1000, value.as_f64()?)))
        .filter(|(_, value)| !value.is_nan())
        .collect())
}

/// A check's outcome from what its query gave.
pub fn judge_datadog(
    check: &DatadogCheck,
    value: Result<Option<f64>, String>,
    stable: Option<Result<Option<f64>, String>>,
) -> CheckOutcome {
    let subject = format!("datadog {}", check.name);
    let no_data = format!("no data in the last {} s", check.lookback_seconds);
    judge_query(&subject, check.spec(), &no_data, value, stable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeseries_answer_gives_its_points_without_nulls() {
        let answer = json!({"data": {"type": "timeseries_response", "attributes": {
            "series": [{"group_tags": [], "query_index": 0}],
            "times": [1_700_000_000_000_i64, 1_700_000_060_000_i64, 1_700_000_120_000_i64],
            "values": [[0.12, null, 0.13]]}}});
        assert_eq!(
            timeseries_samples(&answer),
            Ok(vec![(1_700_000_000, 0.12), (1_700_000_120, 0.13)])
        );
        let two = json!({"data": {"attributes": {"times": [], "values": [[], []]}}});
        assert!(timeseries_samples(&two).is_err_and(|e| e.contains("returned 2 series")));
        let none = json!({"data": {"attributes": {"times": [], "values": []}}});
        assert_eq!(timeseries_samples(&none), Ok(vec![]));
    }

    fn cluster() -> ClusterRef {
        ClusterRef {
            name: "green".into(),
            region: "eu-west-1".into(),
            role_arn: None,
            wait_for_creation: false,
        }
    }

    fn section(site: &str) -> DatadogChecks {
        serde_json::from_value(json!({"site": site, "checks": [{
            "name": "errors", "query": "sum:trace.http.request.errors{kube_cluster_name:{{cluster}}}.as_count()",
            "aggregator": "sum", "max": 10
        }]}))
        .unwrap()
    }

    fn errors_of(section: &DatadogChecks) -> Vec<String> {
        let mut errors = Errors::default();
        section.validate(&cluster(), false, &mut errors);
        errors
            .0
            .iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect()
    }

    #[test]
    fn sites_and_the_request() {
        let eu = section("datadoghq.eu");
        assert!(errors_of(&eu).is_empty());
        assert_eq!(eu.api_url(), "https://api.datadoghq.eu/api/v2/query/scalar");
        let default: DatadogChecks = serde_json::from_value(json!({"checks": eu.checks})).unwrap();
        assert_eq!(default.site, "datadoghq.com");
        assert!(errors_of(&section("datadoghq.co"))[0]
            .starts_with("analysis.datadog.site: \"datadoghq.co\" is not a Datadog site"));
        let body = scalar_request(&eu.checks[0], "sum:x{a:b}.as_count()", 1_000_000);
        assert_eq!(body["data"]["attributes"]["from"], 700_000);
        assert_eq!(body["data"]["attributes"]["to"], 1_000_000);
        assert_eq!(
            body["data"]["attributes"]["queries"][0]["aggregator"],
            "sum"
        );
        assert_eq!(
            body["data"]["attributes"]["queries"][0]["data_source"],
            "metrics"
        );
    }

    #[test]
    fn bad_checks_are_refused_with_their_paths() {
        let mut bad = section("datadoghq.com");
        bad.checks[0].lookback_seconds = 30;
        bad.checks[0].query = "sum:x{cluster:{{name}}}".into();
        let errors = errors_of(&bad);
        assert!(
            errors
                .iter()
                .any(|e| e
                    .starts_with("analysis.datadog.checks[0].lookbackSeconds: must be from 60")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("analysis.datadog.checks[0].query: unknown placeholder")),
            "{errors:?}"
        );
        let unknown: Result<DatadogChecks, _> = serde_json::from_value(
            json!({"checks": [{"name": "x", "query": "q", "aggregator": "p99", "max": 1}]}),
        );
        assert!(unknown.is_err());
    }

    #[test]
    fn answers() {
        let answer = |values: Value| {
            json!({"data": {"id": "0", "type": "scalar_response", "attributes": {"columns": [
                {"name": "a", "type": "number", "values": values, "meta": {"unit": null}}
            ]}}})
        };
        assert_eq!(scalar_value(&answer(json!([12.5]))), Ok(Some(12.5)));
        assert_eq!(scalar_value(&answer(json!([]))), Ok(None));
        assert_eq!(scalar_value(&answer(json!([null]))), Ok(None));
        assert!(scalar_value(&answer(json!([1.0, 2.0])))
            .unwrap_err()
            .starts_with("returned 2 values"));
        assert!(scalar_value(&json!({"data": {}})).is_err());
        let check = &section("datadoghq.com").checks[0];
        assert_eq!(
            judge_datadog(check, Ok(Some(12.0)), None).reason,
            "datadog errors is 12 > max 10"
        );
        assert_eq!(
            judge_datadog(check, Ok(None), None).reason,
            "datadog errors: no data in the last 300 s"
        );
    }
}
