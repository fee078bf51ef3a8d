//! `plan validate` (offline) and `plan check` (a read-only dry run against AWS).

use std::path::Path;
use std::time::SystemTime;

use aws_config::SdkConfig;
use canary_aws::{
    check_slos, read_budgets, read_cluster_health, AwsErrorKind, ClusterAccounts, ClusterEksApi,
    ClusterReadiness, SdkEks, SdkSlos, SyntheticsApi,
};
use canary_core::cluster_readiness::{readiness_problems, readiness_reason};
use canary_core::error_budget::{not_judged, rollout_budgets, SloReading};
use canary_core::ownership::{self, external_dns_txt_names};
use canary_core::plan::{least_seconds, ErrorBudgetSection, ResolvedStep, ValidPlan};
use canary_core::{ErrorName, NamedError, RolloutPlan, TrafficTarget, WeightPair};
use canary_rollout::clients::{process_env, CheckClients};
use canary_rollout::prepare::{alarm_overlaps, check_targets, refuse_concurrent, running_plans};
use canary_rollout::signals::{
    comparison_outlook, remaining_budget_metrics, remaining_budgets, ComparisonOutlook,
    OUTLOOK_SECONDS,
};
use canary_rollout::{analysis, target_health, test_traffic};
use serde_json::{json, Value};

use crate::args::StateMachineArgs;
use crate::error::CliError;
use crate::locate;
use crate::printer::Printer;
use crate::traffic::Traffic;
use crate::view::target_label;

/// A plan file's JSON, or a message naming the file and the line.
pub fn read_plan(path: &Path) -> Result<Value, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Invalid(format!("{}: cannot read: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::Invalid(format!("{}: not JSON: {e}", path.display())))
}

/// The plan as written and as Prepare validates it; every problem with its field path.
pub fn validated(path: &Path) -> Result<(Value, ValidPlan), CliError> {
    let raw = read_plan(path)?;
    let valid = RolloutPlan::parse(raw.clone()).map_err(|errors| {
        let lines: Vec<String> = errors.0.iter().map(|e| format!("  {e}")).collect();
        CliError::Invalid(format!(
            "{}: invalid plan ({} problem{}):\n{}",
            path.display(),
            lines.len(),
            if lines.len() == 1 { "" } else { "s" },
            lines.join("\n")
        ))
    })?;
    Ok((raw, valid))
}

pub fn duration_text(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s.div_ceil(60)),
        s => format!("{:.1} h", s as f64 / 3600.0),
    }
}

fn summary(valid: &ValidPlan) -> String {
    format!(
        "{} steps ({}), at least {} of bakes",
        valid.steps.len(),
        valid
            .steps
            .iter()
            .map(|s| format!("{}%", s.weight))
            .collect::<Vec<_>>()
            .join(", "),
        duration_text(least_seconds(&valid.steps))
    )
}

/// `plan validate`: true when every file is a valid plan.
pub fn validate(files: &[std::path::PathBuf], printer: &mut Printer) -> bool {
    let mut all_valid = true;
    for file in files {
        match validated(file) {
            Ok((_, valid)) => printer.say(
                &format!("{}: valid: {}", file.display(), summary(&valid)),
                json!({"file": file, "valid": true, "steps": valid.steps.len()}),
            ),
            Err(error) => {
                all_valid = false;
                let errors = match RolloutPlan::parse(read_plan(file).unwrap_or(Value::Null)) {
                    Err(errors) => errors
                        .0
                        .iter()
                        .map(|e| json!({"path": e.path, "message": e.message}))
                        .collect(),
                    Ok(_) => Vec::new(),
                };
                printer.say(
                    &error.to_string(),
                    json!({"file": file, "valid": false, "error": error.to_string(), "errors": errors}),
                );
            }
        }
    }
    all_valid
}

/// A check that would stop the rollout: `✗ check: ErrorName: message`.
fn refuse(printer: &mut Printer, ok: &mut bool, check: &str, error: &str, message: String) {
    *ok = false;
    printer.say(
        &format!("✗ {check}: {error}: {message}"),
        json!({"check": check, "ok": false, "error": error, "message": message}),
    );
}

fn refuse_with(printer: &mut Printer, ok: &mut bool, check: &str, error: &dyn NamedError) {
    refuse(printer, ok, check, error.name().as_str(), error.to_string());
}

/// The test-traffic stage as `openTestTraffic` will make it, made of nothing: each ALB target's
/// rule (its priority and conditions, or why it is refused), each target's test address, and
/// that the stage's Synthetics canaries exist.
async fn check_test_traffic(
    apis: &canary_rollout::Apis<'_>,
    checks: &CheckClients,
    plan: &RolloutPlan,
    printer: &mut Printer,
    ok: &mut bool,
) {
    let Some(stage) = &plan.test_traffic else {
        return;
    };
    match test_traffic::preview(apis, plan, "(plan check)").await {
        Ok(preview) => {
            let conditions = stage
                .conditions
                .as_ref()
                .map(|c| {
                    c.as_rule_conditions()
                        .iter()
                        .map(|c| match &c.header_name {
                            Some(name) => format!("{} {name}: {}", c.field, c.values.join(" | ")),
                            None => format!("{} {}", c.field, c.values.join(" | ")),
                        })
                        .collect::<Vec<_>>()
                        .join(" and ")
                })
                .unwrap_or_default();
            for rule in &preview.rules {
                printer.say(
                    &format!(
                        "✓ test traffic on {}: a rule at priority {} sends requests with {conditions} \
                         to the canary target group alone",
                        rule.label,
                        rule.planned.priority()
                    ),
                    json!({"check": "testTraffic", "ok": true, "target": rule.key,
                           "priority": rule.planned.priority(), "conditions": conditions}),
                );
            }
            for address in &preview.addresses {
                printer.say(
                    &format!("  test address: {}", address.described()),
                    json!({"check": "testTrafficAddress", "ok": true, "address": address}),
                );
            }
        }
        Err(error) => refuse_with(printer, ok, "test traffic", &error),
    }
    let region = plan.cluster.region.as_str();
    for name in &stage.synthetics_canaries {
        match checks.synthetics().canary_state(region, name).await {
            Ok(state) => printer.say(
                &format!("✓ Synthetics canary {name} ({region}): {state}"),
                json!({"check": "syntheticsCanary", "ok": true, "canary": name, "state": state}),
            ),
            Err(error) => refuse(
                printer,
                ok,
                "Synthetics canary",
                error.error_name().as_str(),
                format!("testTraffic.syntheticsCanaries: {name} ({region}): {error}"),
            ),
        }
    }
}

/// At most this many record sets of a zone are listed for [`registry_warnings`].
const ZONE_LISTING_LIMIT: usize = 5_000;

/// What `plan check` cannot see of ExternalDNS's claims on the plan's Route 53 targets
/// (`canary_core::ownership::registry_warnings`): registry records at names the plan does not
/// look at, and registry values it cannot read. Warnings: they refuse nothing.
async fn registry_warnings(traffic: &Traffic, plan: &RolloutPlan) -> Vec<String> {
    let mut warnings = Vec::new();
    for (i, target) in plan.traffic_targets.iter().enumerate() {
        let TrafficTarget::Route53(r53) = target else {
            continue;
        };
        let owner = r53.owner.as_ref();
        let (prefix, suffix) = (
            owner.and_then(|o| o.txt_prefix.as_deref()),
            owner.and_then(|o| o.txt_suffix.as_deref()),
        );
        let looked_at =
            external_dns_txt_names(&r53.fqdn(), r53.record_type.as_str(), prefix, suffix);
        let label = format!("trafficTargets[{i}] ({})", target.key());
        match traffic
            .route53()
            .zone_txt_records(&r53.hosted_zone_id, ZONE_LISTING_LIMIT)
            .await
        {
            Ok(zone) => warnings.extend(
                ownership::registry_warnings(
                    &r53.fqdn(),
                    &[&r53.stable_set_identifier, &r53.canary_set_identifier],
                    &looked_at,
                    prefix.is_some() || suffix.is_some(),
                    &zone,
                )
                .into_iter()
                .map(|w| format!("{label}: {w}")),
            ),
            Err(e) => warnings.push(format!(
                "{label}: the zone's TXT records could not be listed ({e}): ExternalDNS registry records elsewhere were not looked for"
            )),
        }
    }
    warnings
}

/// `plan check`: true when nothing stands in the way of the rollout.
pub async fn check(
    config: &SdkConfig,
    file: &Path,
    machine: &StateMachineArgs,
    printer: &mut Printer,
) -> Result<bool, CliError> {
    let (_, valid) = validated(file)?;
    printer.say(
        &format!("{}: valid: {}", file.display(), summary(&valid)),
        json!({"check": "plan", "ok": true}),
    );
    check_plan(config, &valid, machine, printer).await
}

/// Everything `plan check` checks of a valid plan (a fleet's cell too), read-only.
pub async fn check_plan(
    config: &SdkConfig,
    valid: &ValidPlan,
    machine: &StateMachineArgs,
    printer: &mut Printer,
) -> Result<bool, CliError> {
    let plan = &valid.plan;
    let mut ok = true;

    // As evaluate-alarms reads them: the Datadog keys' secret, and a replacement API URL.
    let checks = CheckClients::from_config(config, &process_env);
    match analysis::validate(&checks.signals(), plan).await {
        Ok(found) => {
            let text = format!(
                "✓ analysis: {} alarm{} watched{}; {} metric quer{} per check{}",
                found.alarms.len(),
                if found.alarms.len() == 1 { "" } else { "s" },
                if found.alarms.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", found.alarms.join(", "))
                },
                found.metric_queries,
                if found.metric_queries == 1 {
                    "y"
                } else {
                    "ies"
                },
                found
                    .current
                    .iter()
                    .map(|now| format!("\n  now: {now}"))
                    .collect::<String>(),
            );
            printer.say(
                &text,
                json!({"check": "analysis", "ok": true, "alarms": found.alarms, "metricQueries": found.metric_queries, "current": found.current}),
            )
        }
        Err(error) => refuse_with(printer, &mut ok, "analysis", &error),
    }

    let traffic = Traffic::new(config)?;
    let apis = traffic.apis();
    let mut baselines = Vec::new();
    match check_targets(&apis, valid).await {
        Ok(checked) => {
            for check in &checked {
                let mut line = format!(
                    "✓ {} ({}): now stable {} / canary {}",
                    target_label(&check.report.target),
                    check.report.kind,
                    check.baseline.stable,
                    check.baseline.canary
                );
                if check.attach_canary {
                    line.push_str("; the canary target group will be attached at weight 0");
                }
                if let Some(ttl) = check.report.ttl_seconds {
                    line.push_str(&format!("; TTL {ttl} s"));
                }
                for note in &check.report.notes {
                    line.push_str(&format!("\n    note: {note}"));
                }
                printer.say(
                    &line,
                    json!({"check": "target", "ok": true, "target": check.report.target,
                           "baseline": check.baseline, "attachCanary": check.attach_canary,
                           "notes": check.report.notes}),
                );
                baselines.push((check.report.target.clone(), check.baseline));
            }
        }
        Err(error) => refuse_with(printer, &mut ok, "targets", &error),
    }
    if plan.test_traffic.is_some() {
        check_test_traffic(&apis, &checks, plan, printer, &mut ok).await;
    }
    for warning in registry_warnings(&traffic, &valid.plan).await {
        printer.say(
            &format!("! {warning}"),
            json!({"check": "externalDnsRegistry", "ok": true, "warning": warning}),
        );
    }

    match locate::state_machine(config, machine).await {
        Ok(arn) => {
            let sm_traffic = Traffic::for_region(config, locate::region_of(&arn))?;
            let running = running_plans(&sm_traffic.apis(), &arn, None).await;
            for overlap in running.iter().flat_map(|r| alarm_overlaps(plan, r)) {
                printer.say(
                    &format!("! {overlap}"),
                    json!({"check": "alarmOverlap", "ok": true, "warning": overlap}),
                );
            }
            match running.and_then(|running| refuse_concurrent(plan, &running)) {
                Ok(()) => printer.say(
                    &format!("✓ no other rollout shifts these targets ({arn})"),
                    json!({"check": "concurrentRollouts", "ok": true, "stateMachineArn": arn}),
                ),
                Err(error) => refuse_with(printer, &mut ok, "concurrent rollouts", &error),
            }
        }
        Err(error) => printer.say(
            &format!("? concurrent rollouts not checked: {error}"),
            json!({"check": "concurrentRollouts", "ok": null, "message": error.to_string()}),
        ),
    }

    // As the state machine's DescribeCluster judges it: missing, FAILED or DELETING ends the
    // rollout before traffic; anything but ACTIVE is waited for (40 looks, 30 s apart).
    // A cluster in another account is described through the plan's role, as register-cluster does.
    let here = SdkEks::new(config);
    let eks: Box<dyn ClusterEksApi> = match &plan.cluster.role_arn {
        Some(role) => here.eks_as(role, "cluster-canary-plan-check").await,
        None => Box::new(here),
    };
    let cluster = &plan.cluster;
    match eks.describe_cluster(Some(&cluster.region), &cluster.name).await {
        Ok(found) if found.readiness() == ClusterReadiness::Active => printer.say(
            &format!("✓ cluster {} ({}) is ACTIVE", found.name, cluster.region),
            json!({"check": "cluster", "ok": true, "status": found.status}),
        ),
        Ok(found) if found.readiness() == ClusterReadiness::Failed => refuse(printer, &mut ok, "cluster",
            "ClusterFailed",
            format!("cluster {} ({}) is {}", found.name, cluster.region, found.status),
        ),
        Ok(found) => printer.say(
            &format!(
                "? cluster {} ({}) is {}: the rollout waits up to 20 minutes for it to be ACTIVE",
                found.name, cluster.region, found.status
            ),
            json!({"check": "cluster", "ok": null, "status": found.status}),
        ),
        Err(error) if error.kind == AwsErrorKind::NotFound && cluster.wait_for_creation => printer.say(
            &format!(
                "? there is no EKS cluster {} in {} yet: the rollout waits up to 20 minutes for it \
                 to be created and ACTIVE (cluster.waitForCreation)",
                cluster.name, cluster.region
            ),
            json!({"check": "cluster", "ok": null, "status": null}),
        ),
        Err(error) if error.kind == AwsErrorKind::NotFound => refuse(printer, &mut ok, "cluster",
            "ClusterNotFound",
            format!(
                "there is no EKS cluster {} in {}: create it first (the rollout would end FailedBeforeTraffic)",
                cluster.name, cluster.region
            ),
        ),
        Err(error) => refuse(printer, &mut ok, "cluster", error.error_name().as_str(), error.to_string()),
    }

    if plan.target_health.is_some() {
        match target_health::target_health(&apis, plan).await {
            Ok(health) => printer.say(
                &format!(
                    "{} canary targets now: {}",
                    if health.ready { "✓" } else { "?" },
                    health.reason
                ),
                json!({"check": "targetHealth", "ok": health.ready, "reason": health.reason}),
            ),
            Err(error) => refuse_with(printer, &mut ok, "target health", &error),
        }
    }

    // The cluster readiness gate's look, as register-cluster takes it: what would hold traffic.
    if let Some(gate) = &plan.cluster_readiness {
        match read_cluster_health(eks.as_ref(), &cluster.region, &cluster.name, gate).await {
            Ok(reading) => {
                let problems = readiness_problems(gate, &reading);
                let addons: Vec<&str> = reading.addons.iter().map(|(n, _)| n.as_str()).collect();
                printer.say(
                    &format!(
                        "{} cluster readiness now ({} insights, add-ons: {}): {}",
                        if problems.is_empty() { "✓" } else { "?" },
                        reading.insights.len(),
                        if addons.is_empty() { "none".to_owned() } else { addons.join(", ") },
                        readiness_reason(&problems)
                    ),
                    json!({"check": "clusterReadiness", "ok": problems.is_empty(),
                           "insights": reading.insights.len(), "addons": addons, "problems": problems}),
                )
            }
            Err(error) => refuse(
                printer,
                &mut ok,
                "cluster readiness",
                error.error_name().as_str(),
                error.to_string(),
            ),
        }
    }

    if let Some(section) = &plan.error_budget {
        check_error_budget(config, &checks, valid, section, printer, &mut ok).await;
    }

    if !baselines.is_empty() {
        print_step_table(&valid.steps, &baselines, printer);
    }
    // Not a refusal: traffic changes, and the plan may be checked at a quiet hour.
    match comparison_outlook(
        checks.signals().cloudwatch,
        valid,
        std::time::SystemTime::now(),
    )
    .await
    {
        Ok(Some(outlook)) => print_outlook(&outlook, printer),
        Ok(None) => {}
        Err(error) => printer.say(
            &format!("? the comparison's traffic not read: {error}"),
            json!({"check": "comparisonOutlook", "ok": null, "message": error.to_string()}),
        ),
    }
    Ok(ok)
}

/// The plan's SLOs as Admit checks them (a missing one is refused), then each one's budget
/// now: whether it would hold the rollout at its start (`canary_core::error_budget`).
async fn check_error_budget(
    config: &SdkConfig,
    checks: &CheckClients,
    valid: &ValidPlan,
    section: &ErrorBudgetSection,
    printer: &mut Printer,
    ok: &mut bool,
) {
    let plan = &valid.plan;
    let slos = SdkSlos::new(config);
    if let Err(error) = check_slos(&slos, section, &plan.cluster.region).await {
        let name = if error.access_denied {
            ErrorName::AwsAccessDenied
        } else {
            ErrorName::InvalidPlan
        };
        return refuse(
            printer,
            ok,
            "error budget",
            name.as_str(),
            error.to_string(),
        );
    }
    let now = SystemTime::now();
    let mut readings = read_budgets(&slos, section, &plan.cluster.region, now).await;
    readings.extend(remaining_budgets(checks.signals().prometheus, plan, now).await);
    readings.extend(remaining_budget_metrics(checks.signals().cloudwatch, plan, now).await);
    for reading in &readings {
        let holds = reading.holds(section);
        let line = reading.line();
        printer.say(
            &match &holds {
                None => format!("✓ {line}"),
                Some(why) => format!("? {line}: the rollout would wait ({why})"),
            },
            json!({"check": "errorBudget", "ok": holds.is_none(), "slo": line, "holds": holds}),
        );
    }
    if !section.judges_the_canary() {
        return;
    }
    // The fast burn's default long window is no longer than the rollout's whole bake.
    let bake_seconds = least_seconds(&valid.steps);
    let has_groups = (plan.traffic_targets.iter()).any(|t| t.judged_target_groups().is_some());
    let spend = match (&plan.analysis, has_groups) {
        (None, _) => Err("the plan has no `analysis`: its steps pass on time alone"),
        (_, false) => Err(
            "no `alb` or `vpcLattice` target: the new cluster's requests are counted from its target groups",
        ),
        _ => Ok(()),
    };
    for reading in &readings {
        let slo = match reading {
            SloReading::Report(report) => report.name.as_str(),
            SloReading::Unread { slo, .. } => slo.as_str(),
        };
        let why = spend.err().or_else(|| not_judged(reading));
        let text = match (
            why,
            rollout_budgets(section, std::slice::from_ref(reading)).first(),
        ) {
            (None, Some(budget)) => {
                let bad = budget.bad_requests();
                let share = budget
                    .allowed
                    .map_or("no share (rolloutShare 0)".to_owned(), |a| {
                        format!(
                            "a share of {a} {bad} ({} % of its budget now)",
                            section.rollout_share()
                        )
                    });
                let burn =
                    section
                        .burn_windows(bake_seconds)
                        .map_or("no fast burn".to_owned(), |w| {
                            format!(
                                "a fast burn of {}× over {} s and {} s",
                                w.rate, w.long_seconds, w.short_seconds
                            )
                        });
                format!(
                    "  SLO {slo}: the new cluster's {bad} are judged against {share} and {burn}"
                )
            }
            (why, _) => format!(
                "  SLO {slo}: the new cluster's own spending is not judged: {}",
                why.unwrap_or("its report gives no budget")
            ),
        };
        printer.say(
            &text,
            json!({"check": "errorBudgetSpend", "ok": true, "message": text.trim()}),
        );
    }
}

/// What the last hour's traffic promises each step's comparison (canary_core::plan::forecast).
fn print_outlook(outlook: &ComparisonOutlook, printer: &mut Printer) {
    let short = outlook.steps.iter().any(|s| s.short());
    let mut text = format!(
        "{} comparison outlook from the last {} min of traffic: a median {} s period had {:.0} \
         request(s); periods with requests on both sides at each step's last check:",
        if short { "?" } else { "✓" },
        OUTLOOK_SECONDS / 60,
        outlook.period_seconds,
        outlook.median_requests
    );
    for step in &outlook.steps {
        let line = if !step.compared {
            "not compared (the baseline serves nothing); the evidence of the steps before stands"
                .to_owned()
        } else if step.short() {
            format!(
                "{:.1} expected, minSamples {}; the chance of enough is {:.0} %: it may extend its \
                 bake and end \"no evidence\" on a healthy canary. Bake it longer, extend it \
                 (analysis.extendBakeSeconds), start at a larger share or lower minSamples",
                step.expected_periods,
                step.needed,
                100.0 * step.chance_enough
            )
        } else {
            format!(
                "{:.1} expected, minSamples {}",
                step.expected_periods, step.needed
            )
        };
        text.push_str(&format!(
            "\n    step {} ({} %): {line}",
            step.step, step.weight
        ));
    }
    let steps: Vec<Value> = outlook
        .steps
        .iter()
        .map(|s| {
            json!({"step": s.step, "canaryPercent": s.weight, "compared": s.compared,
                   "expectedPeriods": s.expected_periods, "minSamples": s.needed,
                   "chanceEnough": s.chance_enough, "short": s.short()})
        })
        .collect();
    printer.say(
        &text,
        json!({"check": "comparisonOutlook", "ok": if short { Value::Null } else { Value::Bool(true) },
               "medianRequests": outlook.median_requests,
               "periodSeconds": outlook.period_seconds, "steps": steps}),
    );
}

fn print_step_table(
    steps: &[ResolvedStep],
    baselines: &[(String, WeightPair)],
    printer: &mut Printer,
) {
    let mut header = vec!["step".to_owned(), "canary".to_owned()];
    header.extend(baselines.iter().map(|(key, _)| target_label(key)));
    header.extend([
        "bake".to_owned(),
        "checks".to_owned(),
        "approval".to_owned(),
    ]);
    let mut rows = vec![header];
    for (i, step) in steps.iter().enumerate() {
        let pair = WeightPair::for_canary_percent(step.weight).unwrap_or(WeightPair {
            stable: 0,
            canary: 0,
        });
        let mut row = vec![
            format!("{}/{}", i + 1, steps.len()),
            format!("{}%", step.weight),
        ];
        row.extend(
            baselines
                .iter()
                .map(|_| format!("{} / {}", pair.stable, pair.canary)),
        );
        row.push(duration_text(u64::from(step.bake_seconds)));
        row.push(format!(
            "{} every {} s",
            step.checks, step.check_interval_seconds
        ));
        row.push(if step.approval_timeout_seconds > 0 {
            format!(
                "waits up to {}",
                duration_text(u64::from(step.approval_timeout_seconds))
            )
        } else {
            "-".to_owned()
        });
        printer.json(
            json!({"step": i + 1, "canaryPercent": step.weight, "weights": pair,
                            "bakeSeconds": step.bake_seconds, "checks": step.checks,
                            "approvalTimeoutSeconds": step.approval_timeout_seconds}),
        );
        rows.push(row);
    }
    printer.text(&table(&rows));
    printer.say(
        &format!(
            "rollback restores: {}",
            baselines
                .iter()
                .map(|(key, pair)| format!("{} stable {} / canary {}", target_label(key), pair.stable, pair.canary))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        json!({"baseline": baselines.iter().map(|(k, p)| json!({"target": k, "stable": p.stable, "canary": p.canary})).collect::<Vec<_>>()}),
    );
    printer.say(
        &format!(
            "at least {} once traffic moves (approvals and the waits for the cluster, its apps and healthy targets come on top)",
            duration_text(least_seconds(steps))
        ),
        json!({"leastSeconds": least_seconds(steps)}),
    );
}

/// Columns padded to their widest cell.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            row.iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
