//! What the query-language providers' checks (Prometheus, Datadog) share: the placeholders a
//! query may use, its bound, and the validation of a check's name, query and limits.

use crate::plan::ClusterRef;
use crate::validate::Errors;

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

/// One check's name, query (rendered for `cluster`) and limits.
pub(crate) fn validate_query_check(
    path: &str,
    name: &str,
    query: &str,
    min: Option<f64>,
    max: Option<f64>,
    cluster: &ClusterRef,
    errors: &mut Errors,
) {
    if name.is_empty() || name.len() > 255 {
        errors.push(format!("{path}.name"), "must be 1 to 255 characters");
    }
    if let Err(message) = render_query(query, cluster) {
        errors.push(format!("{path}.query"), message);
    }
    match (min, max) {
        (None, None) => errors.push(
            path,
            "give `min`, `max` or both: a check without a limit cannot fail",
        ),
        (Some(min), Some(max)) if min > max => errors.push(
            format!("{path}.min"),
            format!("{min} is greater than max {max}"),
        ),
        _ => {}
    }
}
