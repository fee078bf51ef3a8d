//! What the query-language providers' checks (Prometheus, Datadog) share: the placeholders a
//! query may use, its bound, a check's limits (absolute, and relative to the stable cluster),
//! their validation and the judgement.

use super::outcome::{judge_limits, CheckOutcome, CheckVerdict};
use crate::cluster::ClusterRef;
use crate::validate::Errors;

/// A query check as the shared code sees it, whatever its provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryCheckSpec<'a> {
    pub name: &'a str,
    pub query: &'a str,
    /// The same measure for the stable cluster, for `max_vs_stable`.
    pub stable_query: Option<&'a str>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The canary's value may not exceed the stable one's times this (1 or more).
    pub max_vs_stable: Option<f64>,
    /// Canary values at or below this never fail the relative comparison (noise: one error
    /// against a stable cluster's zero).
    pub vs_stable_floor: f64,
}

/// Declares a provider's check: `name`, `query` (which the provider documents), the provider's
/// own fields, then the limits every query check has, and `spec()`, the check as the shared
/// code sees it. The shared fields are written once, so their plan schema, defaults and
/// validation cannot drift between providers. A macro, not a struct flattened into each
/// provider's: serde's `flatten` cannot be combined with `deny_unknown_fields`, and a plan
/// must refuse a misspelt limit.
macro_rules! query_check {
    (
        $(#[$struct_meta:meta])*
        pub struct $name:ident {
            $(#[$query_meta:meta])*
            query,
            $( $(#[$field_meta:meta])* pub $field:ident: $type:ty, )*
        }
    ) => {
        $(#[$struct_meta])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            /// A name for people, used in the check's reason.
            pub name: String,
            $(#[$query_meta])*
            pub query: String,
            $( $(#[$field_meta])* pub $field: $type, )*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub min: Option<f64>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub max: Option<f64>,
            /// The same measure for the stable cluster (same placeholders), compared with `maxVsStable`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub stable_query: Option<String>,
            /// The canary's value may not exceed the stable cluster's times this (1 or more), as the
            /// built-in ALB judge compares them.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub max_vs_stable: Option<f64>,
            /// Canary values at or below this never fail the comparison with the stable cluster (one
            /// error against its zero). Default 0.
            #[serde(default)]
            pub vs_stable_floor: f64,
        }

        impl $name {
            /// The check as the shared query-check code sees it.
            pub fn spec(&self) -> $crate::analysis::query_template::QueryCheckSpec<'_> {
                $crate::analysis::query_template::QueryCheckSpec {
                    name: &self.name,
                    query: &self.query,
                    stable_query: self.stable_query.as_deref(),
                    min: self.min,
                    max: self.max,
                    max_vs_stable: self.max_vs_stable,
                    vs_stable_floor: self.vs_stable_floor,
                }
            }
        }
    };
}
pub(crate) use query_check;

/// Longest query, rendered. The providers take longer ones; a plan travels in the execution's
/// state (the 256 KiB budget, docs/plan.md).
pub const MAX_QUERY_BYTES: usize = 2048;
/// The placeholders a query may use, and what they become.
pub const QUERY_PLACEHOLDERS: [&str; 2] = ["{{cluster}}", "{{region}}"];

/// The query with its placeholders replaced by the cluster's values. Anything else between
/// `{{` and `}}` is refused: a typo would otherwise reach Prometheus as PromQL.
pub fn render_query(template: &str, cluster: &ClusterRef) -> Result<String, String> {
    if template.trim().is_empty() {
        return Err("must be a query".to_owned());
    }
    let rendered = template
        .replace(QUERY_PLACEHOLDERS[0], &cluster.name)
        .replace(QUERY_PLACEHOLDERS[1], &cluster.region);
    if let Some(start) = rendered.find("{{") {
        let unknown: String = rendered[start..].chars().take(40).collect();
        return Err(format!(
            "unknown placeholder at {unknown:?}: a query may use {}",
            QUERY_PLACEHOLDERS.join(" and ")
        ));
    }
    if rendered.len() > MAX_QUERY_BYTES {
        return Err(format!(
            "is {} bytes once rendered; at most {MAX_QUERY_BYTES}",
            rendered.len()
        ));
    }
    Ok(rendered)
}

/// A section's number of checks: at least one, at most `max`.
pub(crate) fn validate_check_count(
    path: &str,
    count: usize,
    max: usize,
    provider: &str,
    errors: &mut Errors,
) {
    if count == 0 {
        errors.push(format!("{path}.checks"), "give at least one check");
    }
    if count > max {
        errors.push(
            format!("{path}.checks"),
            format!("at most {max} {provider} checks, got {count}"),
        );
    }
}

/// One check's name, queries (rendered for `cluster`) and limits.
pub(crate) fn validate_query_check(
    path: &str,
    check: QueryCheckSpec<'_>,
    cluster: &ClusterRef,
    errors: &mut Errors,
) {
    if check.name.is_empty() || check.name.len() > 255 {
        errors.push(format!("{path}.name"), "must be 1 to 255 characters");
    }
    if let Err(message) = render_query(check.query, cluster) {
        errors.push(format!("{path}.query"), message);
    }
    if let Some(Err(message)) = check.stable_query.map(|q| render_query(q, cluster)) {
        errors.push(format!("{path}.stableQuery"), message);
    }
    match (check.stable_query, check.max_vs_stable) {
        (Some(_), None) => errors.push(
            format!("{path}.maxVsStable"),
            "a stableQuery is compared with maxVsStable: give it",
        ),
        (None, Some(_)) => errors.push(
            format!("{path}.stableQuery"),
            "maxVsStable compares with the stable cluster's value: give its stableQuery",
        ),
        _ => {}
    }
    if let Some(factor) = check
        .max_vs_stable
        .filter(|f| !(f.is_finite() && *f >= 1.0))
    {
        errors.push(
            format!("{path}.maxVsStable"),
            format!("must be 1 or more (below 1 would demand the canary be better than stable), got {factor}"),
        );
    }
    if !(check.vs_stable_floor.is_finite() && check.vs_stable_floor >= 0.0) {
        errors.push(
            format!("{path}.vsStableFloor"),
            "must be a non-negative number",
        );
    }
    match (check.min, check.max, check.max_vs_stable) {
        (None, None, None) => errors.push(
            path,
            "give `min`, `max` or `maxVsStable`: a check without a limit cannot fail",
        ),
        (Some(min), Some(max), _) if min > max => errors.push(
            format!("{path}.min"),
            format!("{min} is greater than max {max}"),
        ),
        _ => {}
    }
}

/// A query check's outcome: `subject` ("prometheus 5xx ratio") is `value`, judged against the
/// check's limits and, with a stable query, against `stable` times `max_vs_stable`. No number
/// (`no_data` says why) is inconclusive, never a pass.
pub fn judge_query(
    subject: &str,
    check: QueryCheckSpec<'_>,
    no_data: &str,
    value: Result<Option<f64>, String>,
    stable: Option<Result<Option<f64>, String>>,
) -> CheckOutcome {
    let inconclusive = |why: String| CheckOutcome::new(CheckVerdict::Inconclusive, why);
    let value = match value {
        Ok(Some(value)) => value,
        Ok(None) => return inconclusive(format!("{subject}: {no_data}")),
        Err(why) => return inconclusive(format!("{subject}: {why}")),
    };
    let absolute = (check.min.is_some() || check.max.is_some())
        .then(|| judge_limits(subject, value, check.min, check.max));
    if let Some(failed) = absolute
        .as_ref()
        .filter(|o| o.verdict == CheckVerdict::Fail)
    {
        return failed.clone();
    }
    let (Some(factor), Some(stable)) = (check.max_vs_stable, stable) else {
        return absolute.unwrap_or_else(|| {
            inconclusive(format!(
                "{subject} is {value}; the stable cluster was not asked"
            ))
        });
    };
    let stable = match stable {
        Ok(Some(stable)) => stable,
        Ok(None) => {
            return inconclusive(format!("{subject} is {value}; the stable query: {no_data}"))
        }
        Err(why) => return inconclusive(format!("{subject} is {value}; the stable query: {why}")),
    };
    if value > check.vs_stable_floor && value > stable * factor {
        return CheckOutcome::new(
            CheckVerdict::Fail,
            format!("{subject} is {value} > {factor} x stable {stable}"),
        );
    }
    let reason = match absolute {
        Some(_) => {
            format!("{subject} is {value}, within limits and at most {factor} x stable {stable}")
        }
        None => format!("{subject} is {value}, at most {factor} x stable {stable}"),
    };
    CheckOutcome::new(CheckVerdict::Pass, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> QueryCheckSpec<'static> {
        QueryCheckSpec {
            name: "errors",
            query: "q",
            stable_query: Some("s"),
            min: None,
            max: Some(100.0),
            max_vs_stable: Some(2.0),
            vs_stable_floor: 1.0,
        }
    }

    #[test]
    fn the_canary_against_the_stable_cluster() {
        let judge = |value, stable| {
            judge_query(
                "datadog errors",
                spec(),
                "no data",
                Ok(Some(value)),
                Some(Ok(stable)),
            )
        };
        let fail = judge(21.0, Some(10.0));
        assert_eq!(
            (fail.verdict, fail.reason.as_str()),
            (CheckVerdict::Fail, "datadog errors is 21 > 2 x stable 10")
        );
        let pass = judge(20.0, Some(10.0));
        assert_eq!(pass.verdict, CheckVerdict::Pass);
        assert_eq!(
            pass.reason,
            "datadog errors is 20, within limits and at most 2 x stable 10"
        );
        // The absolute limit still applies; noise never fails the comparison.
        assert_eq!(
            judge(150.0, Some(100.0)).reason,
            "datadog errors is 150 > max 100"
        );
        assert_eq!(judge(1.0, Some(0.0)).verdict, CheckVerdict::Pass);
        assert_eq!(judge(1.5, Some(0.0)).verdict, CheckVerdict::Fail);
        // No stable number: inconclusive, never a pass.
        let none = judge(5.0, None);
        assert_eq!(
            (none.verdict, none.reason.as_str()),
            (
                CheckVerdict::Inconclusive,
                "datadog errors is 5; the stable query: no data"
            )
        );
        let only_relative = QueryCheckSpec {
            max: None,
            ..spec()
        };
        let pass = judge_query(
            "p",
            only_relative,
            "no data",
            Ok(Some(3.0)),
            Some(Ok(Some(2.0))),
        );
        assert_eq!(pass.reason, "p is 3, at most 2 x stable 2");
    }

    #[test]
    fn relative_limits_are_validated() {
        let cluster = ClusterRef {
            name: "green".into(),
            region: "eu-west-1".into(),
            role_arn: None,
            wait_for_creation: false,
        };
        let errors_of = |check| {
            let mut errors = Errors::default();
            validate_query_check("c", check, &cluster, &mut errors);
            errors
                .0
                .iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect::<Vec<_>>()
        };
        assert!(errors_of(spec()).is_empty());
        assert_eq!(
            errors_of(QueryCheckSpec {
                max_vs_stable: None,
                ..spec()
            }),
            ["c.maxVsStable: a stableQuery is compared with maxVsStable: give it"]
        );
        assert_eq!(errors_of(QueryCheckSpec { stable_query: None, max: None, ..spec() }), ["c.stableQuery: maxVsStable compares with the stable cluster's value: give its stableQuery"]);
        assert!(errors_of(QueryCheckSpec {
            max_vs_stable: Some(0.5),
            ..spec()
        })[0]
            .starts_with("c.maxVsStable: must be 1 or more"));
        assert!(errors_of(QueryCheckSpec {
            stable_query: Some("x{{nope}}"),
            ..spec()
        })[0]
            .starts_with("c.stableQuery: unknown placeholder"));
        assert_eq!(
            errors_of(QueryCheckSpec {
                stable_query: None,
                max: None,
                max_vs_stable: None,
                ..spec()
            }),
            ["c: give `min`, `max` or `maxVsStable`: a check without a limit cannot fail"]
        );
    }
}
