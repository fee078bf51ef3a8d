//! `cluster-canary report`: one self-contained HTML page for a rollout's post-mortem — the
//! canary's share of traffic over time with each step, what held it and why (a gate before
//! traffic, a change freeze, an AWS Health issue), every check's verdict, and each compared
//! metric's canary and baseline series — as inline SVG: no script, no stylesheet or
//! font from the network, so it opens anywhere, offline, and can be attached to an incident.
//! Pure: the history's updates and the series in, the page out.

use std::fmt::Write;

use canary_core::TargetWeights;
use canary_rollout::signals::ComparedSeries;

use crate::history::HistoryEvent;
use crate::progress::{Tracker, Update};

/// What the page shows of one execution.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Timeline {
    pub execution_arn: String,
    pub cluster: String,
    /// Epoch seconds.
    pub started: f64,
    pub ended: Option<f64>,
    pub status: String,
    /// (epoch seconds, the canary's share in percent, what set it).
    pub shares: Vec<(f64, f64, String)>,
    pub checks: Vec<Check>,
    /// What held the rollout, look by look alike in one.
    pub holds: Vec<Hold>,
    /// The end's error and cause, when it failed.
    pub error: Option<String>,
    pub cause: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub at: f64,
    /// "step 2/3 check 1/3".
    pub label: String,
    pub verdict: String,
    pub reasons: Vec<String>,
}

/// Looks that held the rollout for one reason, one after another.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    pub from: f64,
    pub to: f64,
    pub looks: u32,
    /// "the cluster readiness gate", "a change freeze at step 1/2".
    pub what: String,
    pub reason: String,
}

impl Timeline {
    /// One more look that held: the last hold's if it held for the same reason.
    fn held(&mut self, at: f64, what: String, reason: String) {
        match self.holds.last_mut() {
            Some(last) if last.what == what && last.reason == reason => {
                last.to = at;
                last.looks += 1;
            }
            _ => self.holds.push(Hold {
                from: at,
                to: at,
                looks: 1,
                what,
                reason,
            }),
        }
    }
}

/// The timeline of an execution from its history (the same reading as `watch`'s).
pub fn timeline(execution_arn: &str, events: &[HistoryEvent], status: &str) -> Timeline {
    let mut tracker = Tracker::new(execution_arn);
    let mut timeline = Timeline {
        execution_arn: execution_arn.to_owned(),
        status: status.to_owned(),
        ..Timeline::default()
    };
    let mut step = String::new();
    for event in events {
        let at = event.timestamp;
        let Some(update) = tracker.feed(event) else {
            continue;
        };
        match update {
            Update::Started { cluster, .. } => {
                timeline.cluster = cluster;
                timeline.started = at;
                timeline.shares.push((at, 0.0, "start".to_owned()));
            }
            Update::Step {
                step: s, weights, ..
            } => {
                step = format!("step {}/{}", s.number, s.count);
                timeline
                    .shares
                    .push((at, share(&weights), format!("{step}: {}%", s.weight)));
            }
            Update::Check {
                number,
                of,
                verdict,
                summary,
                frozen,
                ..
            } => {
                if let Some(reason) = frozen {
                    let holder = crate::history::holder(&reason);
                    timeline.held(at, format!("{holder} at {step}"), reason);
                }
                timeline.checks.push(Check {
                    at,
                    label: match of {
                        0 => format!("{step} check {number} (approval wait)"),
                        _ => format!("{step} check {number}/{of}"),
                    },
                    verdict,
                    reasons: summary.split("; ").map(str::to_owned).collect(),
                })
            }
            Update::TargetHealth {
                ready: false,
                reason,
            } => timeline.held(at, "the target health gate".to_owned(), reason),
            Update::ClusterReadiness {
                ready: false,
                reason,
            } => timeline.held(at, "the cluster readiness gate".to_owned(), reason),
            // The stage's looks before it passed hold the rollout as a gate's do; the look that
            // passed it is a check of its own.
            Update::TestTrafficLook {
                passed: false,
                summary,
            } => timeline.held(at, "the test-traffic stage".to_owned(), summary),
            Update::TestTrafficLook {
                passed: true,
                summary,
            } => timeline.checks.push(Check {
                at,
                label: "test traffic".to_owned(),
                verdict: "pass".to_owned(),
                reasons: vec![summary],
            }),
            Update::Frozen { reason } => timeline.held(
                at,
                format!("{} before traffic", crate::history::holder(&reason)),
                reason,
            ),
            Update::Restored { weights } => {
                timeline
                    .shares
                    .push((at, share(&weights), "baseline restored".to_owned()));
            }
            Update::StepBack {
                stepped_back: true,
                weights,
                ..
            } => {
                timeline
                    .shares
                    .push((at, share(&weights), "stepped back".to_owned()));
            }
            Update::Ended {
                status,
                error,
                cause,
            } => {
                timeline.status = status;
                timeline.ended = Some(at);
                timeline.error = error;
                timeline.cause = cause;
            }
            _ => {}
        }
    }
    timeline
}

/// The canary's share of traffic, the largest over the targets.
fn share(weights: &[TargetWeights]) -> f64 {
    weights
        .iter()
        .map(|w| w.pair().canary_share_percent())
        .fold(0.0, f64::max)
}

/// The page.
pub fn render(timeline: &Timeline, compared: &[ComparedSeries]) -> String {
    let start = timeline.started;
    let end = timeline
        .ended
        .or_else(|| timeline.checks.last().map(|c| c.at))
        .unwrap_or(start)
        .max(start + 1.0);
    let mut page = String::new();
    let title = format!(
        "Rollout of {} — {}",
        timeline.cluster,
        match &timeline.error {
            Some(error) => format!("{} ({error})", timeline.status),
            None => timeline.status.clone(),
        }
    );
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<p class=\"meta\">{} · {} s</p>\n",
        escape(&title),
        escape(&title),
        escape(&timeline.execution_arn),
        (end - start).round(),
    );
    if let Some(cause) = &timeline.cause {
        let _ = writeln!(page, "<p class=\"cause\">{}</p>", escape(cause));
    }
    page.push_str("<h2>The canary's share of traffic</h2>\n");
    page.push_str(&share_chart(timeline, start, end));
    if !compared.is_empty() {
        page.push_str("<h2>Compared metrics (analysis.compare)</h2>\n");
        let mut metrics: Vec<&str> = compared.iter().map(|s| s.metric.as_str()).collect();
        metrics.dedup();
        for metric in metrics {
            let series: Vec<&ComparedSeries> =
                compared.iter().filter(|s| s.metric == metric).collect();
            let _ = writeln!(page, "<h3>{}</h3>", escape(metric));
            page.push_str(&series_chart(timeline, &series, start, end));
        }
    }
    if !timeline.holds.is_empty() {
        page.push_str("<h2>Held</h2>\n<table><tr><th>at</th><th>by</th><th>why</th></tr>\n");
        for hold in &timeline.holds {
            let _ = writeln!(
                page,
                "<tr><td>+{} s{}</td><td>{}</td><td>{}</td></tr>",
                (hold.from - start).round(),
                match hold.looks {
                    1 => String::new(),
                    n => format!(" to +{} s ({n} looks)", (hold.to - start).round()),
                },
                escape(&hold.what),
                escape(&hold.reason),
            );
        }
        page.push_str("</table>\n");
    }
    page.push_str(
        "<h2>Checks</h2>\n<table><tr><th>at</th><th>check</th><th>verdict</th><th>why</th></tr>\n",
    );
    for check in &timeline.checks {
        let _ = writeln!(
            page,
            "<tr class=\"{}\"><td>+{} s</td><td>{}</td><td>{}</td><td><ul>{}</ul></td></tr>",
            verdict_class(&check.verdict),
            (check.at - start).round(),
            escape(&check.label),
            escape(&check.verdict),
            check
                .reasons
                .iter()
                .map(|r| format!("<li>{}</li>", escape(r)))
                .collect::<String>(),
        );
    }
    page.push_str("</table>\n<p class=\"meta\">cluster-canary report</p>\n</body></html>\n");
    page
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em}.meta{color:#666}\
.cause{background:#fff3f3;border-left:4px solid #c62828;padding:.5em 1em}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:4px 8px;vertical-align:top;text-align:left}\
ul{margin:0;padding-left:1.2em}tr.fail td:nth-child(3){color:#c62828;font-weight:bold}\
tr.pass td:nth-child(3){color:#2e7d32}tr.inconclusive td:nth-child(3){color:#ef6c00}\
svg text{font:11px system-ui,sans-serif;fill:#555}";

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

/// Maps a time and a value into the plot.
struct Frame {
    start: f64,
    end: f64,
    low: f64,
    high: f64,
}

impl Frame {
    fn x(&self, at: f64) -> f64 {
        LEFT + (at - self.start) / (self.end - self.start) * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, value: f64) -> f64 {
        let span = (self.high - self.low).max(f64::MIN_POSITIVE);
        TOP + (1.0 - (value - self.low) / span) * (HEIGHT - TOP - BOTTOM)
    }

    /// The axes: the value at the bottom, middle and top, time in seconds from the start.
    fn axes(&self, unit: &str) -> String {
        let mut svg = String::new();
        for value in [self.low, (self.low + self.high) / 2.0, self.high] {
            let y = self.y(value);
            let _ = write!(
                svg,
                "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}{unit}</text>",
                WIDTH - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                short(value)
            );
        }
        let span = self.end - self.start;
        for i in 0..=5 {
            let at = self.start + span * f64::from(i) / 5.0;
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">+{} s</text>",
                self.x(at),
                HEIGHT - 8.0,
                (at - self.start).round()
            );
        }
        svg
    }

    /// A vertical mark at each weight change, so the metrics line up with the steps.
    fn step_marks(&self, timeline: &Timeline) -> String {
        timeline
            .shares
            .iter()
            .skip(1)
            .map(|(at, _, _)| {
                let x = self.x(*at);
                format!(
                    "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#bbb\" stroke-dasharray=\"3,3\"/>",
                    HEIGHT - BOTTOM
                )
            })
            .collect()
    }
}

fn share_chart(timeline: &Timeline, start: f64, end: f64) -> String {
    let frame = Frame {
        start,
        end,
        low: 0.0,
        high: 100.0,
    };
    let mut path = String::new();
    let mut last = 0.0;
    for (at, share, _) in &timeline.shares {
        let (x, y_last, y) = (frame.x(*at), frame.y(last), frame.y(*share));
        let _ = write!(
            path,
            "{}{x:.1},{y_last:.1} L{x:.1},{y:.1} ",
            if path.is_empty() { "M" } else { "L" }
        );
        last = *share;
    }
    let _ = write!(path, "L{:.1},{:.1}", frame.x(end), frame.y(last));
    let mut svg = chart_open("canary share of traffic, percent");
    svg.push_str(&frame.axes("%"));
    svg.push_str(&frame.step_marks(timeline));
    let _ = write!(
        svg,
        "<path d=\"{path}\" fill=\"none\" stroke=\"#ef6c00\" stroke-width=\"2\"/>"
    );
    for (at, share, what) in timeline.shares.iter().skip(1) {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            frame.x(*at) + 4.0,
            frame.y(*share).max(TOP + 10.0) + if *share > 90.0 { 12.0 } else { -4.0 },
            escape(what)
        );
    }
    for check in &timeline.checks {
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{}\" r=\"4\" fill=\"{}\"><title>{}: {}</title></circle>",
            frame.x(check.at),
            HEIGHT - BOTTOM - 6.0,
            verdict_color(&check.verdict),
            escape(&check.label),
            escape(&check.verdict)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn series_chart(timeline: &Timeline, series: &[&ComparedSeries], start: f64, end: f64) -> String {
    let values = series.iter().flat_map(|s| s.points.iter().map(|(_, v)| *v));
    let high = values.fold(0.0, f64::max);
    let frame = Frame {
        start,
        end,
        low: 0.0,
        high: if high > 0.0 { high * 1.1 } else { 1.0 },
    };
    let mut svg = chart_open("compared metric: canary against baseline");
    svg.push_str(&frame.axes(""));
    svg.push_str(&frame.step_marks(timeline));
    let mut legend = String::new();
    for (i, side) in series.iter().enumerate() {
        let color = side_color(&side.side, i);
        let points: Vec<String> = side
            .points
            .iter()
            .filter(|(at, _)| (*at as f64) >= start && (*at as f64) <= end)
            .map(|(at, v)| format!("{:.1},{:.1}", frame.x(*at as f64), frame.y(*v)))
            .collect();
        if !points.is_empty() {
            let _ = write!(
                svg,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"/>",
                points.join(" ")
            );
        }
        let _ = write!(
            legend,
            "<text x=\"{}\" y=\"{}\" fill=\"{color}\" style=\"fill:{color}\">■ {} ({} samples)</text>",
            LEFT + 10.0 + 170.0 * i as f64,
            TOP + 10.0,
            escape(&side.side),
            side.points.len()
        );
    }
    svg.push_str(&legend);
    svg.push_str("</svg>\n");
    svg
}

fn chart_open(label: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"{}\">",
        escape(label)
    )
}

fn side_color(side: &str, index: usize) -> &'static str {
    match side {
        "canary" => "#ef6c00",
        "baseline" => "#1565c0",
        _ => ["#757575", "#9e9e9e", "#616161", "#bdbdbd"][index % 4],
    }
}

fn verdict_color(verdict: &str) -> &'static str {
    match verdict {
        "pass" => "#2e7d32",
        "fail" => "#c62828",
        _ => "#ef6c00",
    }
}

fn verdict_class(verdict: &str) -> &'static str {
    match verdict {
        "pass" => "pass",
        "fail" => "fail",
        _ => "inconclusive",
    }
}

/// A value for an axis: up to three significant digits.
fn short(value: f64) -> String {
    format!("{}", format!("{value:.2e}").parse::<f64>().unwrap_or(value))
}

/// Text for HTML and SVG: every reason and cause comes from the plan, AWS or a metrics
/// provider, so none is markup.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline() -> Timeline {
        Timeline {
            execution_arn: "arn:aws:states:us-east-1:123456789012:execution:cc:green".to_owned(),
            cluster: "us-east-1/green".to_owned(),
            started: 1000.0,
            ended: Some(1060.0),
            status: "FAILED".to_owned(),
            shares: vec![
                (1000.0, 0.0, "start".to_owned()),
                (1020.0, 10.0, "step 1/3: 10%".to_owned()),
                (1050.0, 0.0, "baseline restored".to_owned()),
            ],
            checks: vec![Check {
                at: 1045.0,
                label: "step 1/3 check 1/3".to_owned(),
                verdict: "fail".to_owned(),
                reasons: vec!["compare p99 latency: High <script>alert(1)</script>".to_owned()],
            }],
            holds: Vec::new(),
            error: Some("CheckFailed".to_owned()),
            cause: Some("Canary check failed & rolled back".to_owned()),
        }
    }

    #[test]
    fn the_page_shows_steps_checks_and_series_and_escapes_what_it_is_given() {
        let compared = [
            ComparedSeries {
                metric: "p99 latency".to_owned(),
                side: "canary".to_owned(),
                points: vec![(1010, 0.15), (1011, 0.16)],
            },
            ComparedSeries {
                metric: "p99 latency".to_owned(),
                side: "baseline".to_owned(),
                points: vec![(1010, 0.10), (1011, 0.11)],
            },
        ];
        let page = render(&timeline(), &compared);
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<title>Rollout of us-east-1/green — FAILED (CheckFailed)</title>"));
        assert!(page.contains("Canary check failed &amp; rolled back"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!page.contains("<script"), "no script, nothing to run");
        assert!(page.contains("step 1/3: 10%"));
        assert!(page.contains("<h3>p99 latency</h3>"));
        assert!(page.contains("■ canary (2 samples)") && page.contains("■ baseline (2 samples)"));
        assert_eq!(
            page.matches("<svg").count(),
            2,
            "the share and one compared metric"
        );
        // Self-contained: the only URL is SVG's namespace.
        let urls = page.matches("http").count();
        assert_eq!(
            urls,
            page.matches("http://www.w3.org/2000/svg").count(),
            "{page}"
        );
    }

    #[test]
    fn a_page_without_a_comparison_has_no_metrics_section() {
        let page = render(&timeline(), &[]);
        assert!(!page.contains("Compared metrics"));
        assert_eq!(page.matches("<svg").count(), 1);
        assert!(!page.contains("<h2>Held</h2>"), "nothing held it");
    }

    #[test]
    fn the_page_says_what_held_the_rollout_looks_alike_in_one_row() {
        let mut held = timeline();
        let insight =
            "insight \"Deprecated APIs removed in Kubernetes v1.35\" (UPGRADE_READINESS) is ERROR";
        for at in [1002.0, 1004.0, 1006.0] {
            held.held(
                at,
                "the cluster readiness gate".to_owned(),
                insight.to_owned(),
            );
        }
        held.held(
            1008.0,
            "a change freeze before traffic".to_owned(),
            "AWS Health: an open EKS issue in us-east-1".to_owned(),
        );
        let page = render(&held, &[]);
        assert!(page.contains(
            "<tr><td>+2 s to +6 s (3 looks)</td><td>the cluster readiness gate</td><td>insight \
             &quot;Deprecated APIs removed in Kubernetes v1.35&quot; (UPGRADE_READINESS) is ERROR</td></tr>"
        ));
        assert!(page.contains(
            "<tr><td>+8 s</td><td>a change freeze before traffic</td><td>AWS Health: an open EKS \
             issue in us-east-1</td></tr>"
        ));
    }
}
