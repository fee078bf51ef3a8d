//! What CloudWatch accepts of a metric query: its statistic, its period and how far back it
//! looks. Every section with CloudWatch queries validates with these.

use crate::validate::Errors;

pub(crate) fn check_stat(path: &str, stat: &str, errors: &mut Errors) {
    const PLAIN: [&str; 5] = ["SampleCount", "Average", "Sum", "Minimum", "Maximum"];
    let percentile = stat
        .strip_prefix('p')
        .and_then(|p| p.parse::<f64>().ok())
        .is_some_and(|p| p > 0.0 && p < 100.0);
    if !PLAIN.contains(&stat) && !percentile {
        errors.push(
            path,
            format!("`{stat}` is not a statistic: use SampleCount, Average, Sum, Minimum, Maximum or a percentile such as p99"),
        );
    }
}

pub(crate) fn check_period_and_lookback(
    path: &str,
    period: i64,
    lookback: i64,
    errors: &mut Errors,
) {
    let period_ok = [1, 5, 10, 20, 30].contains(&period) || (period >= 60 && period % 60 == 0);
    if !period_ok {
        errors.push(
            format!("{path}.periodSeconds"),
            format!(
                "CloudWatch periods are 1, 5, 10, 20, 30 or a multiple of 60 seconds, got {period}"
            ),
        );
    } else if lookback < period {
        errors.push(
            format!("{path}.lookbackSeconds"),
            format!("{lookback} s is shorter than the metric period ({period} s): the check would never see a datapoint"),
        );
    }
    if lookback > 86_400 {
        errors.push(
            format!("{path}.lookbackSeconds"),
            "must be at most one day (86400 s)",
        );
    }
}
