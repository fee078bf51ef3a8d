//! The plan's `analysis.prometheus` checks: PromQL instant queries against a Prometheus HTTP
//! API or an Amazon Managed Service for Prometheus (AMP) workspace, each judged against its
//! `min`/`max`. Pure: the endpoint, the rendered queries, what an answer means.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::outcome::CheckOutcome;
use super::query_template::{judge_query, query_check, validate_check_count, validate_query_check};
use crate::cluster::ClusterRef;
use crate::validate::Errors;

/// Most Prometheus checks in a plan: each is one HTTP request per check interval.
pub const MAX_PROMETHEUS_CHECKS: usize = 20;

/// Instant PromQL queries, judged at every check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrometheusChecks {
    /// A Prometheus HTTP API base URL (`http://prometheus.monitoring:9090`): queried
    /// unauthenticated. Exactly one of `url` and `ampWorkspace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// An AMP workspace's query URL,
    /// `https://aps-workspaces.<region>.amazonaws.com/workspaces/<workspace id>`: queried
    /// with SigV4 (service `aps`) as the function's role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amp_workspace: Option<String>,
    /// At least one, unless `analysis.compare` queries this endpoint.
    #[serde(default)]
    pub checks: Vec<PrometheusCheck>,
}

query_check! {
    /// One PromQL query and its limits.
    pub struct PrometheusCheck {
        /// An instant PromQL query giving one number: a scalar, or a vector of one series
        /// (aggregate with `sum(...)` and the like). `{{cluster}}` and `{{region}}` become the
        /// new cluster's name and region.
        query,
    }
}

/// Where the queries go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrometheusEndpoint {
    /// `base` + `/api/v1/query`, unsigned.
    Plain { base: String },
    /// `base` + `/api/v1/query`, SigV4-signed for service `aps` in `region`.
    Amp { base: String, region: String },
}

impl PrometheusEndpoint {
    pub fn query_url(&self) -> String {
        let base = match self {
            PrometheusEndpoint::Plain { base } | PrometheusEndpoint::Amp { base, .. } => base,
        };
        format!("{}/api/v1/query", base.trim_end_matches('/'))
    }
}

impl PrometheusChecks {
    /// The endpoint, once the plan is valid.
    pub fn endpoint(&self) -> Result<PrometheusEndpoint, String> {
        match (&self.url, &self.amp_workspace) {
            (Some(url), None) => plain_url(url).map(|base| PrometheusEndpoint::Plain { base }),
            (None, Some(workspace)) => {
                amp_region(workspace).map(|region| PrometheusEndpoint::Amp {
                    base: workspace.trim_end_matches('/').to_owned(),
                    region,
                })
            }
            _ => Err("give exactly one of `url` and `ampWorkspace`".to_owned()),
        }
    }

    /// `used_by_comparison`: `analysis.compare` queries this endpoint, so `checks` may be empty.
    pub(crate) fn validate(
        &self,
        cluster: &ClusterRef,
        used_by_comparison: bool,
        errors: &mut Errors,
    ) {
        let path = "analysis.prometheus";
        if let Err(message) = self.endpoint() {
            let field = match (&self.url, &self.amp_workspace) {
                (Some(_), None) => ".url",
                (None, Some(_)) => ".ampWorkspace",
                _ => "",
            };
            errors.push(format!("{path}{field}"), message);
        }
        if !(used_by_comparison && self.checks.is_empty()) {
            validate_check_count(
                path,
                self.checks.len(),
                MAX_PROMETHEUS_CHECKS,
                "Prometheus",
                errors,
            );
        }
        for (i, check) in self.checks.iter().enumerate() {
            let path = format!("{path}.checks[{i}]");
            validate_query_check(&path, check.spec(), cluster, errors);
        }
    }
}

/// A plain Prometheus base URL: http(s), a host, no credentials, query or fragment.
fn plain_url(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("{url:?} is not an http:// or https:// URL"))?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(format!("{url:?} names no host"));
    }
    if host.contains('@') {
        return Err(
            "a URL with credentials in it would put them in the execution's state: use a \
             Prometheus the function's network reaches without them, or an AMP workspace"
                .to_owned(),
        );
    }
    if rest.contains(['?', '#', ' ']) {
        return Err(format!(
            "{url:?}: give the API's base URL, without a query, fragment or spaces"
        ));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The region of an AMP workspace query URL.
fn amp_region(url: &str) -> Result<String, String> {
    let shape = || {
        format!(
            "{url:?} is not an AMP workspace URL: \
             https://aps-workspaces.<region>.amazonaws.com/workspaces/<workspace id>"
        )
    };
    let rest = url
        .strip_prefix("https://aps-workspaces.")
        .ok_or_else(shape)?;
    let (region, rest) = rest
        .split_once(".amazonaws.com/workspaces/")
        .ok_or_else(shape)?;
    let id = rest.trim_end_matches('/');
    let region_ok = !region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let id_ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if region_ok && id_ok {
        Ok(region.to_owned())
    } else {
        Err(shape())
    }
}

/// The one number of an instant query's `data` (`{"resultType", "result"}`): `Ok(None)` when
/// there is none (an empty vector, `NaN`: no data, never a pass); `Err` for an answer a check
/// cannot judge (several series, a range vector, a string).
pub fn instant_value(data: &Value) -> Result<Option<f64>, String> {
    let result = &data["result"];
    let sample = match data["resultType"].as_str() {
        Some("scalar") => result,
        Some("vector") => {
            let series = result.as_array().map(Vec::len).unwrap_or_default();
            match series {
                0 => return Ok(None),
                1 => &result[0]["value"],
                n => {
                    return Err(format!(
                        "returned {n} series; aggregate the query to one (sum(...), max(...))"
                    ))
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "returned a {other}; a check needs a scalar or a vector of one series"
            ))
        }
        None => return Err("answered without a resultType".to_owned()),
    };
    // A sample is [<unix time>, "<value>"]; Prometheus writes NaN and ±Inf as strings too.
    let value = sample[1]
        .as_str()
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| "answered a sample that is not [time, \"value\"]".to_owned())?;
    Ok((!value.is_nan()).then_some(value))
}

/// The samples of a subquery's `data` (a range vector: `{"resultType": "matrix", "result":
/// [{"values": [[<unix time>, "<value>"], …]}]}`), as (epoch seconds, value); none for an
/// empty result, NaN samples left out. `Err` for an answer the comparison cannot use (several
/// series, another type).
pub fn range_samples(data: &Value) -> Result<Vec<(i64, f64)>, String> {
    match data["resultType"].as_str() {
        Some("matrix") => {}
        Some(other) => {
            return Err(format!(
                "returned a {other}; the comparison asks for a range of one series"
            ))
        }
        None => return Err("answered without a resultType".to_owned()),
    }
    let series = data["result"].as_array().cloned().unwrap_or_default();
    let values = match series.as_slice() {
        [] => return Ok(Vec::new()),
        [one] => one["values"].as_array().cloned().unwrap_or_default(),
        more => {
            return Err(format!(
                "returned {} series; aggregate the query to one (sum(...), histogram_quantile(0.99, sum by (le) (...)))",
                more.len()
            ))
        }
    };
    let mut samples = Vec::with_capacity(values.len());
    for sample in &values {
        let at = sample[0].as_f64();
        let value = sample[1].as_str().and_then(|v| v.parse::<f64>().ok());
        match (at, value) {
            (Some(at), Some(value)) if !value.is_nan() => samples.push((at as i64, value)),
            (Some(_), Some(_)) => {}
            _ => return Err("answered a sample that is not [time, \"value\"]".to_owned()),
        }
    }
    Ok(samples)
}

/// A check's outcome from what its query gave.
pub fn judge_prometheus(
    check: &PrometheusCheck,
    value: Result<Option<f64>, String>,
    stable: Option<Result<Option<f64>, String>>,
) -> CheckOutcome {
    let subject = format!("prometheus {}", check.name);
    let no_data = "no data (an empty result or NaN)";
    judge_query(&subject, check.spec(), no_data, value, stable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::query_template::{render_query, MAX_QUERY_BYTES};
    use crate::analysis::CheckVerdict;
    use serde_json::json;

    fn cluster() -> ClusterRef {
        ClusterRef {
            name: "green".into(),
            region: "eu-west-1".into(),
            role_arn: None,
            wait_for_creation: false,
        }
    }

    fn checks(url: Option<&str>, amp: Option<&str>) -> PrometheusChecks {
        PrometheusChecks {
            url: url.map(Into::into),
            amp_workspace: amp.map(Into::into),
            checks: vec![PrometheusCheck {
                name: "5xx".into(),
                query: "sum(rate(errors{cluster=\"{{cluster}}\"}[1m]))".into(),
                min: None,
                max: Some(0.05),
                stable_query: None,
                max_vs_stable: None,
                vs_stable_floor: 0.0,
            }],
        }
    }

    fn errors_of(section: &PrometheusChecks) -> Vec<String> {
        let mut errors = Errors::default();
        section.validate(&cluster(), false, &mut errors);
        errors
            .0
            .iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect()
    }

    #[test]
    fn endpoints() {
        let plain = checks(Some("http://prometheus.monitoring:9090/"), None);
        assert_eq!(
            plain.endpoint().unwrap().query_url(),
            "http://prometheus.monitoring:9090/api/v1/query"
        );
        let amp = checks(
            None,
            Some("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1a2b3c"),
        );
        assert_eq!(
            amp.endpoint().unwrap(),
            PrometheusEndpoint::Amp {
                base: "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1a2b3c".into(),
                region: "eu-west-1".into()
            }
        );
        assert!(errors_of(&plain).is_empty());
        assert!(errors_of(&amp).is_empty());
    }

    #[test]
    fn bad_endpoints_are_refused_with_their_path() {
        let cases = [
            (checks(None, None), "analysis.prometheus: give exactly one"),
            (
                checks(Some("http://p:9090"), Some("https://aps-workspaces.x.amazonaws.com/workspaces/ws-1")),
                "analysis.prometheus: give exactly one",
            ),
            (checks(Some("prometheus:9090"), None), "analysis.prometheus.url: \"prometheus:9090\" is not an http"),
            (checks(Some("http://user:pw@p:9090"), None), "analysis.prometheus.url: a URL with credentials"),
            (checks(Some("http://p:9090/?x=1"), None), "analysis.prometheus.url: \"http://p:9090/?x=1\": give the API's base URL"),
            (
                checks(None, Some("https://example.com/workspaces/ws-1")),
                "analysis.prometheus.ampWorkspace: \"https://example.com/workspaces/ws-1\" is not an AMP workspace URL",
            ),
        ];
        for (section, expected) in cases {
            let errors = errors_of(&section);
            assert!(errors.iter().any(|e| e.starts_with(expected)), "{errors:?}");
        }
    }

    #[test]
    fn queries_are_rendered_and_bounded() {
        assert_eq!(
            render_query(
                "up{cluster=\"{{cluster}}\",region=\"{{region}}\"}",
                &cluster()
            )
            .unwrap(),
            "up{cluster=\"green\",region=\"eu-west-1\"}"
        );
        assert!(render_query("up{cluster=\"{{clustr}}\"}", &cluster())
            .unwrap_err()
            .starts_with("unknown placeholder at \"{{clustr}}"));
        assert!(render_query("  ", &cluster()).is_err());
        let at_cap = "x".repeat(MAX_QUERY_BYTES);
        assert!(render_query(&at_cap, &cluster()).is_ok());
        assert!(render_query(&format!("{at_cap}x"), &cluster())
            .unwrap_err()
            .contains("at most 2048"));
    }

    #[test]
    fn checks_need_limits_and_are_bounded() {
        let mut section = checks(Some("http://p:9090"), None);
        section.checks[0].max = None;
        assert!(errors_of(&section)[0].contains("give `min`, `max` or `maxVsStable`"));
        section.checks = vec![section.checks[0].clone(); MAX_PROMETHEUS_CHECKS + 1];
        section.checks.iter_mut().for_each(|c| c.max = Some(1.0));
        assert_eq!(
            errors_of(&section),
            ["analysis.prometheus.checks: at most 20 Prometheus checks, got 21"]
        );
    }

    #[test]
    fn answers() {
        let vector = |result: Value| json!({"resultType": "vector", "result": result});
        let one = vector(json!([{"metric": {}, "value": [1.7e9, "0.25"]}]));
        assert_eq!(instant_value(&one), Ok(Some(0.25)));
        assert_eq!(
            instant_value(&json!({"resultType": "scalar", "result": [1.7e9, "3"]})),
            Ok(Some(3.0))
        );
        assert_eq!(instant_value(&vector(json!([]))), Ok(None));
        let nan = vector(json!([{"metric": {}, "value": [1.7e9, "NaN"]}]));
        assert_eq!(instant_value(&nan), Ok(None));
        let inf = vector(json!([{"metric": {}, "value": [1.7e9, "+Inf"]}]));
        assert_eq!(instant_value(&inf), Ok(Some(f64::INFINITY)));
        let two = vector(json!([
            {"metric": {"a": "1"}, "value": [1.7e9, "1"]},
            {"metric": {"a": "2"}, "value": [1.7e9, "2"]}
        ]));
        assert!(instant_value(&two)
            .unwrap_err()
            .starts_with("returned 2 series"));
        assert!(
            instant_value(&json!({"resultType": "matrix", "result": []}))
                .unwrap_err()
                .starts_with("returned a matrix")
        );
    }

    #[test]
    fn judgements_name_the_provider_the_check_the_value_and_the_limit() {
        let check = &checks(Some("http://p:9090"), None).checks[0];
        let fail = judge_prometheus(check, Ok(Some(0.2)), None);
        assert_eq!(fail.verdict, CheckVerdict::Fail);
        assert_eq!(fail.reason, "prometheus 5xx is 0.2 > max 0.05");
        assert_eq!(
            judge_prometheus(check, Ok(Some(0.01)), None).verdict,
            CheckVerdict::Pass
        );
        let none = judge_prometheus(check, Ok(None), None);
        assert_eq!(none.verdict, CheckVerdict::Inconclusive);
        assert_eq!(
            none.reason,
            "prometheus 5xx: no data (an empty result or NaN)"
        );
        let odd = judge_prometheus(check, Err("returned 2 series".into()), None);
        assert_eq!(odd.verdict, CheckVerdict::Inconclusive);
    }
}

#[cfg(test)]
mod range_tests {
    use serde_json::json;

    use super::range_samples;

    #[test]
    fn a_subquerys_one_series_gives_its_samples_without_nan() {
        let data = json!({"resultType": "matrix", "result": [{"metric": {}, "values": [
            [1700000000, "0.12"], [1700000060, "NaN"], [1700000120.5, "0.13"]]}]});
        assert_eq!(
            range_samples(&data),
            Ok(vec![(1_700_000_000, 0.12), (1_700_000_120, 0.13)])
        );
        assert_eq!(
            range_samples(&json!({"resultType": "matrix", "result": []})),
            Ok(vec![])
        );
    }

    #[test]
    fn several_series_or_another_type_is_refused() {
        let two = json!({"resultType": "matrix", "result": [{"values": []}, {"values": []}]});
        assert!(range_samples(&two).is_err_and(|e| e.contains("returned 2 series")));
        let vector = json!({"resultType": "vector", "result": []});
        assert!(range_samples(&vector).is_err_and(|e| e.contains("returned a vector")));
    }
}
