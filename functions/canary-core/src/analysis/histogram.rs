//! Slow requests from a Prometheus histogram (`slowerThan` on a `prometheus` compared metric):
//! per period, each side's requests (`<name>_count`) and those slower than the threshold (the
//! count less the bucket of requests at most that long, `<name>_bucket{le="<threshold>"}`),
//! judged like errors over requests (docs/signals/compare.md).
//!
//! The plan names the histogram by its series selector, without a suffix:
//! `http_request_duration_seconds{cluster="{{cluster}}", service="checkout"}`. The threshold
//! must be one of its bucket bounds: a client library writes an integer bound as `1` (Go) or
//! `1.0` (Python, and Prometheus 3 normalises to it), so both are matched.

/// A metric name as PromQL's lexer takes it.
fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The histogram's name and its label matchers (the text inside the braces, maybe empty), or
/// why the selector is not one.
pub fn parse_selector(selector: &str) -> Result<(&str, &str), String> {
    let selector = selector.trim();
    let (name, rest) = selector.split_once('{').unwrap_or((selector, ""));
    let name = name.trim();
    if !is_metric_name(name) {
        return Err(format!(
            "`{selector}` does not start with a metric name: with slowerThan the query is the \
             histogram's series selector, e.g. http_request_duration_seconds{{cluster=\"{{{{cluster}}}}\"}}"
        ));
    }
    let matchers = match (selector.contains('{'), rest.trim_end().strip_suffix('}')) {
        (false, _) => "",
        (true, Some(matchers)) if !matchers.contains(['{', '}']) => matchers.trim(),
        _ => {
            return Err(format!(
                "`{selector}` is not a histogram's series selector: a name and one {{…}} of label matchers"
            ))
        }
    };
    if let Some(suffix) = ["_bucket", "_count", "_sum"]
        .into_iter()
        .find(|s| name.ends_with(s))
    {
        return Err(format!(
            "name the histogram without `{suffix}`: its _count and _bucket series are read from the name"
        ));
    }
    if matchers
        .split(',')
        .any(|m| m.split(['=', '!']).next().map(str::trim) == Some("le"))
    {
        return Err("leave `le` out: slowerThan chooses the bucket".to_owned());
    }
    Ok((name, matchers))
}

/// The `le` matcher of the bucket of requests at most `threshold` long: its bound as Go and
/// as Python (or Prometheus 3) write it.
fn bucket_matcher(threshold: f64) -> String {
    let short = format!("{threshold}");
    let written = if short.contains(['.', 'e', 'E']) {
        vec![short]
    } else {
        vec![format!("{short}.0"), short]
    };
    let escaped: Vec<String> = written.iter().map(|w| w.replace('.', "\\\\.")).collect();
    format!("le=~\"{}\"", escaped.join("|"))
}

/// One side's queries over one period of `period_seconds`: (requests, slow requests). Each is
/// one series without labels; `selector` has `{{cluster}}` filled in already.
pub fn slow_request_queries(
    selector: &str,
    threshold: f64,
    period_seconds: i64,
) -> Result<(String, String), String> {
    let (name, matchers) = parse_selector(selector)?;
    let joined = |extra: &str| match (matchers.is_empty(), extra.is_empty()) {
        (true, _) => extra.to_owned(),
        (false, true) => matchers.to_owned(),
        (false, false) => format!("{matchers}, {extra}"),
    };
    let requests = format!(
        "sum(increase({name}_count{{{}}}[{period_seconds}s]))",
        joined("")
    );
    let at_most = format!(
        "sum(increase({name}_bucket{{{}}}[{period_seconds}s]))",
        joined(&bucket_matcher(threshold))
    );
    Ok((requests.clone(), format!("{requests} - {at_most}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queries_count_every_request_and_those_past_the_bucket() {
        let (requests, slow) =
            slow_request_queries("http_seconds{cluster=\"green\", app=\"shop\"}", 0.5, 60)
                .expect("a selector");
        assert_eq!(
            requests,
            "sum(increase(http_seconds_count{cluster=\"green\", app=\"shop\"}[60s]))"
        );
        assert_eq!(
            slow,
            "sum(increase(http_seconds_count{cluster=\"green\", app=\"shop\"}[60s])) - \
             sum(increase(http_seconds_bucket{cluster=\"green\", app=\"shop\", le=~\"0\\\\.5\"}[60s]))"
        );
    }

    #[test]
    fn an_integer_bound_matches_as_each_client_writes_it() {
        let (_, slow) = slow_request_queries("http_seconds", 2.0, 30).expect("a selector");
        assert!(
            slow.ends_with("sum(increase(http_seconds_bucket{le=~\"2\\\\.0|2\"}[30s]))"),
            "{slow}"
        );
    }

    #[test]
    fn what_is_not_a_histograms_selector_is_refused_with_what_to_write() {
        for (selector, says) in [
            ("sum(rate(x[1m]))", "does not start with a metric name"),
            ("http_seconds_bucket{a=\"b\"}", "without `_bucket`"),
            ("http_seconds{le=\"0.5\"}", "leave `le` out"),
            ("http_seconds{a=\"b\", le =~ \"1\"}", "leave `le` out"),
            (
                "http_seconds{a=\"b\"} or y{}",
                "not a histogram's series selector",
            ),
            ("", "does not start with a metric name"),
        ] {
            let refused = parse_selector(selector).expect_err(selector);
            assert!(refused.contains(says), "{selector}: {refused}");
        }
        assert_eq!(
            parse_selector(" http_seconds { a=\"b\" } "),
            Ok(("http_seconds", "a=\"b\""))
        );
        assert!(parse_selector("http_seconds{level=\"info\"}").is_ok());
    }
}
