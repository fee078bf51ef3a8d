//! shift-weights over the wire: the function's real aws-sdk paths against a moto server
//! each test starts for itself (see `tests/src/lib.rs`), asserting on moto's state.

mod common;

use canary_core::NamedError;
use cluster_canary_tests::World;
use common::Env;
use serde_json::{json, Value};

impl Env {
    fn listener_target(&self) -> Value {
        json!({"alb": {
            "listenerArn": self.world.listener,
            "stableTargetGroupArn": self.world.blue,
            "canaryTargetGroupArn": self.world.green,
        }})
    }

    fn rule_target(&self) -> Value {
        json!({"alb": {
            "listenerArn": self.world.listener,
            "ruleArn": self.world.rule,
            "stableTargetGroupArn": self.world.blue,
            "canaryTargetGroupArn": self.world.green,
        }})
    }

    fn record_target(&self, name: &str, rr_type: &str) -> Value {
        json!({"route53": {
            "hostedZoneId": self.world.zone_id,
            "recordName": name,
            "recordType": rr_type,
            "stableSetIdentifier": "blue",
            "canarySetIdentifier": "green",
        }})
    }

    fn all_targets(&self) -> Vec<Value> {
        vec![
            self.listener_target(),
            self.rule_target(),
            self.record_target("www.example.com", "CNAME"),
            self.record_target("app.example.com", "A"),
        ]
    }

    /// Weights of every target of `all_targets`, as moto holds them.
    async fn weights(&self) -> Vec<Vec<(String, i64)>> {
        let w = &self.world;
        let named = |pairs: Vec<(String, i32)>| {
            pairs
                .into_iter()
                .map(|(arn, weight)| (tg_name(w, &arn), i64::from(weight)))
                .collect::<Vec<_>>()
        };
        vec![
            named(self.observer.listener_weights(&w.listener).await),
            named(self.observer.rule_weights(&w.rule).await),
            self.observer
                .record_weights(&w.zone_id, "www.example.com.", "CNAME")
                .await,
            self.observer
                .record_weights(&w.zone_id, "app.example.com.", "A")
                .await,
        ]
    }
}

impl Env {
    /// Someone else (a person, the AWS Load Balancer Controller) sets the rule's weights.
    async fn foreign_rule_weights(&self, blue: i32, green: i32) {
        use aws_sdk_elasticloadbalancingv2::types::{
            Action, ActionTypeEnum, ForwardActionConfig, TargetGroupTuple,
        };
        let w = &self.world;
        let tuples = [(w.blue.as_str(), blue), (w.green.as_str(), green)]
            .map(|(arn, weight)| {
                TargetGroupTuple::builder()
                    .target_group_arn(arn)
                    .weight(weight)
                    .build()
            })
            .to_vec();
        let forward = ForwardActionConfig::builder()
            .set_target_groups(Some(tuples))
            .build();
        self.observer
            .elbv2()
            .modify_rule()
            .rule_arn(&w.rule)
            .actions(
                Action::builder()
                    .r#type(ActionTypeEnum::Forward)
                    .forward_config(forward)
                    .build(),
            )
            .send()
            .await
            .expect("foreign change");
    }
}

fn tg_name(world: &World, arn: &str) -> String {
    [
        ("blue", &world.blue),
        ("green", &world.green),
        ("other", &world.other),
    ]
    .iter()
    .find(|(_, a)| a.as_str() == arn)
    .map_or_else(|| arn.to_owned(), |(name, _)| (*name).to_owned())
}

fn plan(targets: Vec<Value>) -> Value {
    json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": targets,
        "steps": [{"weight": 10}, {"weight": 25}, {"weight": 50}, {"weight": 100}],
        "bake": {"seconds": 120, "checkIntervalSeconds": 10},
    })
}

fn at(stable: i64, canary: i64) -> Vec<Vec<(String, i64)>> {
    let pair = vec![("blue".to_owned(), stable), ("green".to_owned(), canary)];
    vec![pair.clone(), pair.clone(), pair.clone(), pair]
}

#[tokio::test]
async fn a_whole_rollout_over_listener_rule_and_both_kinds_of_record() {
    let env = Env::start().await;
    let plan = plan(env.all_targets());

    let prepared = env.prepare(&plan).await.expect("prepare");
    let baseline = prepared["baseline"].clone();
    assert_eq!(
        baseline
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["stable"].as_i64(), w["canary"].as_i64()))
            .collect::<Vec<_>>(),
        vec![(Some(100), Some(0)); 4]
    );
    let targets = &prepared["targets"];
    assert_eq!(
        targets[0]["canaryAttached"], true,
        "green was not in the listener's forward action"
    );
    assert!(
        targets[1].get("canaryAttached").is_none(),
        "the rule already had green"
    );
    assert_eq!(
        targets[1]["sticky"], true,
        "the rule has group stickiness on"
    );
    assert_eq!(targets[2]["ttlSeconds"], 60);
    assert!(
        targets[3]["notes"][0].as_str().unwrap().contains("alias"),
        "{targets}"
    );
    assert_eq!(
        prepared["steps"][0],
        json!({"weight": 10, "bakeSeconds": 120, "checkIntervalSeconds": 10, "checks": 12,
               "approvalTimeoutSeconds": 0, "onApprovalTimeout": "rollback", "askTimeoutSeconds": 0})
    );
    assert_eq!(
        env.weights().await,
        at(100, 0),
        "prepare attached green at 0 and changed nothing else"
    );

    let mut expected = baseline.clone();
    for (canary, stable) in [(10, 90), (25, 75), (50, 50), (100, 0)] {
        let out = env.set(&plan, canary, &expected).await.expect("set");
        assert_eq!(out["canaryWeight"], canary);
        assert_eq!(
            env.weights().await,
            at(stable, canary),
            "after set {canary}"
        );
        expected = out["weights"].clone();
        assert_eq!(
            expected[2],
            json!({"target": format!("route53:{}:www.example.com.:CNAME", env.world.zone_id), "stable": stable, "canary": canary})
        );
    }

    // Before promotion: every target is where the last set left it; verify writes nothing.
    let snapshot = env.observer.snapshot(&env.world).await;
    let verified = env
        .call(json!({"operation": "verify", "plan": plan, "expected": expected}))
        .await
        .expect("verify");
    assert_eq!(verified["weights"], expected);
    assert_eq!(env.observer.snapshot(&env.world).await, snapshot);

    let restored = env
        .call(json!({"operation": "restore", "plan": plan, "baseline": baseline, "expected": expected}))
        .await
        .expect("restore");
    assert!(restored.get("unexpected").is_none(), "{restored}");
    assert_eq!(env.weights().await, at(100, 0));

    // The rule kept its group stickiness and the alias records their alias targets.
    let rules = env
        .observer
        .elbv2()
        .describe_rules()
        .rule_arns(&env.world.rule)
        .send()
        .await
        .unwrap();
    let stickiness = rules.rules()[0].actions()[0]
        .forward_config()
        .and_then(|f| f.target_group_stickiness_config())
        .cloned()
        .expect("stickiness kept");
    assert_eq!(
        (stickiness.enabled(), stickiness.duration_seconds()),
        (Some(true), Some(300))
    );
    let records = env.observer.records(&env.world.zone_id).await;
    for record in records.iter().filter(|r| r.name() == "app.example.com.") {
        assert_eq!(
            record.alias_target().map(|a| a.dns_name()),
            Some(env.world.lb_dns_name.as_str())
        );
    }
    for record in records.iter().filter(|r| r.name() == "www.example.com.") {
        assert_eq!(record.ttl(), Some(60));
        let value = format!("{}.example.net", record.set_identifier().unwrap());
        assert_eq!(record.resource_records()[0].value(), value);
    }
}

#[tokio::test]
async fn set_twice_with_the_same_input_is_a_no_op_the_second_time() {
    let env = Env::start().await;
    let plan = plan(env.all_targets());
    let baseline = env.prepare(&plan).await.expect("prepare")["baseline"].clone();
    let first = env.set(&plan, 25, &baseline).await.expect("first set");
    let before = env.observer.snapshot(&env.world).await;
    let second = env.set(&plan, 25, &baseline).await.expect("retried set");
    assert_eq!(first, second);
    assert_eq!(env.observer.snapshot(&env.world).await, before);
}

#[tokio::test]
async fn a_foreign_weight_change_stops_set_and_nothing_is_written() {
    let env = Env::start().await;
    let plan = plan(env.all_targets());
    let baseline = env.prepare(&plan).await.expect("prepare")["baseline"].clone();
    let after_10 = env.set(&plan, 10, &baseline).await.expect("set 10")["weights"].clone();

    // Someone else (a person, the AWS Load Balancer Controller) moves the rule to 70/30.
    let w = &env.world;
    env.foreign_rule_weights(70, 30).await;
    let before = env.observer.snapshot(&env.world).await;

    let err = env
        .set(&plan, 25, &after_10)
        .await
        .expect_err("must refuse");
    assert_eq!(err.name().as_str(), "WeightsChangedExternally");
    let message = err.to_string();
    assert!(
        message.contains(&format!("trafficTargets[1] ({})", w.rule)),
        "{message}"
    );
    assert!(
        message
            .contains("found stable 70 / canary 30, this rollout last set stable 90 / canary 10"),
        "{message}"
    );
    assert_eq!(
        env.observer.snapshot(&env.world).await,
        before,
        "no target was written, not even the unchanged ones"
    );

    // Verify (before promotion) reads the same change and writes nothing either.
    let err = env
        .call(json!({"operation": "verify", "plan": plan, "expected": after_10}))
        .await
        .expect_err("verify must refuse");
    assert_eq!(err.name().as_str(), "WeightsChangedExternally");
    assert_eq!(err.to_string(), message);
    assert_eq!(env.observer.snapshot(&env.world).await, before);

    // Restore still puts everything back, and says what it found, for the execution's cause.
    let restored = env
        .call(json!({"operation": "restore", "plan": plan, "baseline": baseline, "expected": after_10}))
        .await
        .expect("restore");
    assert_eq!(restored["unexpected"][0]["target"], w.rule.as_str());
    assert_eq!(restored["unexpected"][0]["found"], "stable 70 / canary 30");
    assert_eq!(
        restored["note"],
        format!(
            ". It overwrote weights changed outside this rollout: {} was stable 70 / canary 30",
            w.rule
        )
    );
    assert_eq!(env.weights().await, at(100, 0));
}

/// A baseline in which the canary already has traffic (an earlier rollout left it, or a
/// person): rolling back to it would leave that traffic on the new cluster. Prepare refuses
/// it, naming the target, and writes nothing; the plan may say it is meant.
#[tokio::test]
async fn a_baseline_where_the_canary_already_has_traffic_is_refused_unless_the_plan_says_so() {
    let env = Env::start().await;
    let mut plan = plan(vec![env.listener_target(), env.rule_target()]);
    env.foreign_rule_weights(50, 50).await;
    let before = env.observer.snapshot(&env.world).await;
    let err = env.prepare(&plan).await.expect_err("refused");
    assert_eq!(err.name().as_str(), "TargetMisconfigured");
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "the canary already receives traffic (trafficTargets[1] ({}): stable 50 / canary 50)",
            env.world.rule
        )),
        "{message}"
    );
    assert!(
        message.contains("rollback.allowCanaryInBaseline"),
        "{message}"
    );
    assert!(message.contains("nothing was written"), "{message}");
    assert_eq!(env.observer.snapshot(&env.world).await, before);

    plan["rollback"] = json!({"allowCanaryInBaseline": true});
    let prepared = env.prepare(&plan).await.expect("meant");
    assert_eq!(prepared["baseline"][1]["canary"], 50);
}

#[tokio::test]
async fn restore_is_idempotent_and_works_without_expected_weights() {
    let env = Env::start().await;
    let plan = plan(env.all_targets());
    let baseline = env.prepare(&plan).await.expect("prepare")["baseline"].clone();
    env.set(&plan, 50, &baseline).await.expect("set 50");
    let restore = json!({"operation": "restore", "plan": plan, "baseline": baseline});
    let first = env.call(restore.clone()).await.expect("restore");
    assert_eq!(first["note"], "", "nothing foreign was overwritten");
    let snapshot = env.observer.snapshot(&env.world).await;
    let second = env.call(restore).await.expect("restore again");
    assert_eq!(first, second);
    assert_eq!(env.observer.snapshot(&env.world).await, snapshot);
    assert_eq!(env.weights().await, at(100, 0));
}

/// After a rollback, a controller puts the canary's weights back: the look after the settle
/// period finds it, puts the baseline back, and says which target was where; a second look
/// finds nothing and writes nothing.
#[tokio::test]
async fn the_look_after_a_rollback_re_asserts_a_baseline_a_controller_undid() {
    let env = Env::start().await;
    let mut plan = plan(env.all_targets());
    plan["rollback"] = json!({"settleSeconds": 5});
    let prepared = env.prepare(&plan).await.expect("prepare");
    assert_eq!(prepared["settleSeconds"], 5);
    let baseline = prepared["baseline"].clone();
    let at_50 = env.set(&plan, 50, &baseline).await.expect("set 50")["weights"].clone();
    env.call(
        json!({"operation": "restore", "plan": plan, "baseline": baseline, "expected": at_50}),
    )
    .await
    .expect("restore");
    env.foreign_rule_weights(50, 50).await;

    let look = json!({"operation": "lookAgain", "plan": plan, "baseline": baseline});
    let looked = env.call(look.clone()).await.expect("look again");
    assert_eq!(looked["reverted"], true, "{looked}");
    assert_eq!(
        looked["found"],
        format!("{} was stable 50 / canary 50", env.world.rule)
    );
    assert_eq!(looked["weights"], baseline);
    assert_eq!(env.weights().await, at(100, 0));

    let snapshot = env.observer.snapshot(&env.world).await;
    let again = env.call(look).await.expect("look again, nothing moved");
    assert_eq!(again["reverted"], false, "{again}");
    assert_eq!(again["found"], "");
    assert_eq!(env.observer.snapshot(&env.world).await, snapshot);

    let mut default = plan.clone();
    default.as_object_mut().unwrap().remove("rollback");
    let prepared = env.prepare(&default).await.expect("prepare");
    assert_eq!(prepared["settleSeconds"], 120, "two ExternalDNS intervals");
}

#[tokio::test]
async fn a_second_rollout_on_the_same_traffic_is_refused() {
    let env = Env::start().await;
    let sfn = aws_sdk_sfn::Client::new(&env.config);
    // moto (not in execute mode) keeps started executions RUNNING: an ongoing rollout.
    let other_plan = plan(vec![env.record_target("WWW.example.com.", "CNAME")]);
    let running = sfn
        .start_execution()
        .state_machine_arn(&env.world.state_machine)
        .name("green-rollout")
        .input(other_plan.to_string())
        .send()
        .await
        .expect("start execution")
        .execution_arn()
        .to_owned();
    let unrelated = plan(vec![env.record_target("app.example.com", "A")]);
    sfn.start_execution()
        .state_machine_arn(&env.world.state_machine)
        .name("unrelated")
        .input(unrelated.to_string())
        .send()
        .await
        .expect("start execution");

    let before = env.observer.snapshot(&env.world).await;
    let ours = plan(vec![
        env.listener_target(),
        env.record_target("www.example.com", "CNAME"),
    ]);
    let err = env.prepare(&ours).await.expect_err("must refuse");
    assert_eq!(err.name().as_str(), "ConcurrentRollout");
    assert!(err.to_string().contains(&running), "{err}");
    assert!(err.to_string().contains("www.example.com."), "{err}");
    assert_eq!(
        env.observer.snapshot(&env.world).await,
        before,
        "green was not attached"
    );

    // A plan on other traffic is fine while the unrelated rollout runs, and an execution
    // never conflicts with itself.
    env.prepare(&plan(vec![env.listener_target()]))
        .await
        .expect("other traffic");
    let own = env
        .call(json!({"operation": "prepare", "plan": unrelated, "execution": {
            "executionArn": format!("{}:unrelated", env.world.state_machine.replace(":stateMachine:", ":execution:")),
            "stateMachineArn": env.world.state_machine,
        }}))
        .await;
    assert!(own.is_ok(), "{own:?}");
}

/// A listener or rule the AWS Load Balancer Controller (or ACK) manages would have its weights
/// put back: refused before anything moves, unless the plan says why to go ahead.
#[tokio::test]
async fn a_listener_or_rule_a_controller_manages_is_refused_unless_the_plan_says_why() {
    use aws_sdk_elasticloadbalancingv2::types::Tag;
    let env = Env::start().await;
    let elbv2 = env.observer.elbv2();
    let tag = |key: &str, value: &str| Tag::builder().key(key).value(value).build();
    elbv2
        .add_tags()
        .resource_arns(&env.world.rule)
        .tags(tag("elbv2.k8s.aws/cluster", "blue"))
        .tags(tag("ingress.k8s.aws/stack", "shop/web"))
        .tags(tag("ingress.k8s.aws/resource", "80:1"))
        .send()
        .await
        .expect("tag the rule");
    elbv2
        .add_tags()
        .resource_arns(&env.world.listener)
        .tags(tag("services.k8s.aws/namespace", "infra"))
        .send()
        .await
        .expect("tag the listener");

    let before = env.observer.snapshot(&env.world).await;
    let err = env
        .prepare(&plan(vec![env.rule_target()]))
        .await
        .expect_err("a controller's rule");
    assert_eq!(err.name().as_str(), "TrafficOwnedByController");
    let text = err.to_string();
    assert!(text.starts_with("trafficTargets[0] ("), "{text}");
    assert!(
        text.contains("the rule is managed by the AWS Load Balancer Controller (cluster blue, stack shop/web, resource 80:1)"),
        "{text}"
    );
    assert!(
        text.contains("TargetGroupBinding") && text.contains("owner.ignore"),
        "{text}"
    );
    let err = env
        .prepare(&plan(vec![env.listener_target()]))
        .await
        .expect_err("an ACK listener");
    assert!(
        err.to_string()
            .contains("the listener is managed by ACK's ELBv2 controller (namespace infra)"),
        "{err}"
    );
    assert_eq!(
        env.observer.snapshot(&env.world).await,
        before,
        "nothing moved"
    );

    // Said why: it goes ahead, and the reason is in the target's notes.
    let mut target = env.rule_target();
    target["alb"]["owner"] =
        json!({"ignore": "the Ingress group is gone; nothing reconciles this rule"});
    let prepared = env
        .prepare(&plan(vec![target]))
        .await
        .expect("owner ignored");
    let notes = prepared["targets"][0]["notes"].to_string();
    assert!(
        notes.contains("managed by the AWS Load Balancer Controller"),
        "{notes}"
    );
    assert!(
        notes.contains("shifted anyway: the Ingress group is gone"),
        "{notes}"
    );
}

/// Weighted records ExternalDNS owns (its TXT registry record beside them, with the same set
/// identifier) would have their weights put back: refused, unless the plan says why.
#[tokio::test]
async fn records_external_dns_owns_are_refused_unless_the_plan_says_why() {
    use aws_sdk_route53::types::{
        Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType,
    };
    let env = Env::start().await;
    let registry = |name: &str, set: &str, owner: &str| {
        let value = format!("\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=ingress/shop/web\"");
        Change::builder()
            .action(ChangeAction::Create)
            .resource_record_set(
                ResourceRecordSet::builder()
                    .name(name)
                    .r#type(RrType::Txt)
                    .ttl(300)
                    .set_identifier(set)
                    .weight(0)
                    .resource_records(ResourceRecord::builder().value(value).build().unwrap())
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    };
    env.observer
        .route53()
        .change_resource_record_sets()
        .hosted_zone_id(&env.world.zone_id)
        .change_batch(
            ChangeBatch::builder()
                // The green cluster's ExternalDNS owns www's green record; app's registry entry
                // is another set identifier's, and p-a-app only counts with that prefix.
                .changes(registry("cname-www.example.com.", "green", "green-cluster"))
                .changes(registry("a-app.example.com.", "purple", "purple-cluster"))
                .changes(registry("p-a-app.example.com.", "blue", "blue-cluster"))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("TXT registry records");

    let before = env.observer.snapshot(&env.world).await;
    let www = env.record_target("www.example.com", "CNAME");
    let err = env
        .prepare(&plan(vec![www.clone()]))
        .await
        .expect_err("ExternalDNS's record");
    assert_eq!(err.name().as_str(), "TrafficOwnedByController");
    let text = err.to_string();
    assert!(
        text.contains("record `green` (its TXT registry record cname-www.example.com.) is managed by ExternalDNS (owner green-cluster, resource ingress/shop/web)"),
        "{text}"
    );
    assert!(text.contains("owner.ignore"), "{text}");
    env.prepare(&plan(vec![env.record_target("app.example.com", "A")]))
        .await
        .expect("another set identifier's registry entry");
    let mut prefixed = env.record_target("app.example.com", "A");
    prefixed["route53"]["owner"] = json!({"txtPrefix": "p-"});
    let err = env
        .prepare(&plan(vec![prefixed]))
        .await
        .expect_err("found with the prefix");
    assert!(
        err.to_string().contains(
            "registry record p-a-app.example.com.) is managed by ExternalDNS (owner blue-cluster"
        ),
        "{err}"
    );
    assert_eq!(
        env.observer.snapshot(&env.world).await,
        before,
        "nothing moved"
    );

    let mut ignored = www;
    ignored["route53"]["owner"] =
        json!({"ignore": "ExternalDNS runs with --policy create-only here"});
    let prepared = env
        .prepare(&plan(vec![ignored]))
        .await
        .expect("owner ignored");
    let notes = prepared["targets"][0]["notes"].to_string();
    assert!(
        notes.contains("shifted anyway: ExternalDNS runs with --policy create-only here"),
        "{notes}"
    );
}

/// Every bad input: the error name, the message, and moto exactly as before.
#[tokio::test]
async fn bad_inputs_fail_with_a_named_error_and_change_nothing() {
    let env = Env::start().await;
    let w = env.world.clone();
    let missing_listener = w
        .listener
        .replace(&w.listener[w.listener.len() - 16..], "0000000000000000");
    let missing_rule = w
        .rule
        .replace(&w.rule[w.rule.len() - 16..], "0000000000000000");
    let missing_tg = w.green.replace("green/", "ghost/");
    let good = plan(env.all_targets());
    let with_target = |index: usize, target: Value| {
        let mut p = good.clone();
        p["trafficTargets"][index] = target;
        p
    };
    let alb = |listener: &str, rule: Option<&str>, stable: &str, canary: &str| {
        let mut t = json!({"alb": {"listenerArn": listener, "stableTargetGroupArn": stable, "canaryTargetGroupArn": canary}});
        if let Some(rule) = rule {
            t["alb"]["ruleArn"] = json!(rule);
        }
        t
    };
    let prepare = |plan: Value| json!({"operation": "prepare", "plan": plan, "execution": env.execution("self")});
    let baseline: Vec<Value> = env
        .all_targets()
        .iter()
        .map(|t| {
            let key = match (&t["alb"], &t["route53"]) {
                (Value::Object(a), _) => a
                    .get("ruleArn")
                    .unwrap_or(&a["listenerArn"])
                    .as_str()
                    .unwrap()
                    .to_owned(),
                (_, r) => format!(
                    "route53:{}:{}.:{}",
                    r["hostedZoneId"].as_str().unwrap(),
                    r["recordName"].as_str().unwrap(),
                    r["recordType"].as_str().unwrap()
                ),
            };
            json!({"target": key, "stable": 100, "canary": 0})
        })
        .collect();
    let mut zero_baseline = baseline.clone();
    zero_baseline[2] = json!({"target": zero_baseline[2]["target"], "stable": 0, "canary": 0});

    let foreign_message = format!("target groups the plan does not name: {}", w.other);
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "plan with steps not increasing",
            prepare({
                let mut p = good.clone();
                p["steps"] = json!([{"weight": 50}, {"weight": 25}, {"weight": 100}]);
                p
            }),
            "InvalidPlan",
            "steps[1].weight: must be greater than the previous step's 50",
        ),
        (
            "plan with an unknown field",
            prepare({
                let mut p = good.clone();
                p["trafficTargets"][0]["alb"]["weight"] = json!(5);
                p
            }),
            "InvalidPlan",
            "trafficTargets[0].alb.weight: unknown field `weight`",
        ),
        (
            "listener that does not exist",
            prepare(with_target(0, alb(&missing_listener, None, &w.blue, &w.green))),
            "TargetNotFound",
            "ListenerNotFound",
        ),
        (
            "rule that does not exist",
            prepare(with_target(1, alb(&w.listener, Some(&missing_rule), &w.blue, &w.green))),
            "TargetNotFound",
            "RuleNotFound",
        ),
        (
            "canary target group that does not exist (the listener would otherwise get it attached)",
            prepare(with_target(0, alb(&w.listener, None, &w.blue, &missing_tg))),
            "TargetNotFound",
            "TargetGroupNotFound",
        ),
        (
            "listener that answers with a fixed response",
            prepare(with_target(0, alb(&w.fixed_listener, None, &w.blue, &w.green))),
            "TargetMisconfigured",
            "does not forward to target groups (its actions are: fixed-response)",
        ),
        (
            "listener that also forwards to a target group the plan does not name",
            prepare(with_target(0, alb(&w.foreign_listener, None, &w.blue, &w.green))),
            "TargetMisconfigured",
            &foreign_message,
        ),
        (
            "listener whose forward action lacks the stable target group",
            prepare(with_target(0, alb(&w.listener, None, &w.other, &w.blue))),
            "TargetMisconfigured",
            "does not include the stable target group",
        ),
        (
            "hosted zone that does not exist",
            prepare(with_target(2, {
                let mut t = env.record_target("www.example.com", "CNAME");
                t["route53"]["hostedZoneId"] = json!("Z0000000000000NOZONE");
                t
            })),
            "TargetNotFound",
            "NoSuchHostedZone",
        ),
        (
            "record set identifier that does not exist",
            prepare(with_target(2, {
                let mut t = env.record_target("www.example.com", "CNAME");
                t["route53"]["canarySetIdentifier"] = json!("purple");
                t
            })),
            "TargetNotFound",
            "has no CNAME record www.example.com. with set identifier `purple`",
        ),
        (
            "record of the wrong type",
            prepare(with_target(2, env.record_target("www.example.com", "A"))),
            "TargetNotFound",
            "has no A record www.example.com.",
        ),
        (
            "record TTL longer than the bake",
            prepare(with_target(2, env.record_target("slow.example.com", "CNAME"))),
            "TargetMisconfigured",
            "TTL is 3600 s, longer than the shortest bake (120 s)",
        ),
        (
            "input without an operation",
            json!({"plan": good}),
            "InvalidInput",
            "missing field `operation`",
        ),
        (
            "unknown operation",
            json!({"operation": "promote", "plan": good}),
            "InvalidInput",
            "unknown variant `promote`",
        ),
        (
            "prepare without the execution context",
            json!({"operation": "prepare", "plan": good}),
            "InvalidInput",
            "missing field `execution`",
        ),
        (
            "set to a weight that is not a step",
            json!({"operation": "set", "plan": good, "canaryWeight": 30, "expected": baseline}),
            "InvalidInput",
            "canaryWeight 30 is not one of the plan's steps",
        ),
        (
            "set with expected weights missing a target",
            json!({"operation": "set", "plan": good, "canaryWeight": 10, "expected": &baseline[..3]}),
            "InvalidInput",
            "expected has 3 entries, the plan has 4 traffic targets",
        ),
        (
            "set with a malformed plan",
            json!({"operation": "set", "plan": {"cluster": "green"}, "canaryWeight": 10, "expected": baseline}),
            "InvalidPlan",
            "cluster: invalid type",
        ),
        (
            "restoreUnchanged to a weight over 100",
            json!({"operation": "restoreUnchanged", "plan": good, "baseline": baseline, "expected": baseline, "canaryWeight": 150}),
            "InvalidInput",
            "canaryWeight 150 is over 100",
        ),
        (
            "restoreUnchanged with expected weights missing a target",
            json!({"operation": "restoreUnchanged", "plan": good, "baseline": baseline, "expected": &baseline[..3]}),
            "InvalidInput",
            "expected has 3 entries, the plan has 4 traffic targets",
        ),
        (
            "restore to both Route 53 weights 0",
            json!({"operation": "restore", "plan": good, "baseline": zero_baseline}),
            "InvalidInput",
            "refusing to write weight 0 to both records",
        ),
    ];

    for (case, input, name, fragment) in cases {
        let before = env.observer.snapshot(&w).await;
        let err = match env.call(input).await {
            Ok(out) => panic!("{case}: accepted: {out}"),
            Err(e) => e,
        };
        assert_eq!(err.name().as_str(), name, "{case}: {err}");
        assert!(
            err.to_string().contains(fragment),
            "{case}: `{err}` lacks `{fragment}`"
        );
        assert_eq!(
            env.observer.snapshot(&w).await,
            before,
            "{case}: moto changed"
        );
    }
    // The listener never had green attached by a refused prepare.
    assert_eq!(
        env.observer.listener_weights(&w.listener).await,
        vec![(w.blue.clone(), 100)]
    );
}

#[tokio::test]
async fn the_safety_net_leaves_traffic_alone_when_prepare_never_finished() {
    let env = Env::start().await;
    // moto, not in execute mode, keeps the execution RUNNING with no PrepareTraffic in its history.
    let arn = aws_sdk_sfn::Client::new(&env.config)
        .start_execution()
        .state_machine_arn(&env.world.state_machine)
        .name("stopped-early")
        .input(plan(env.all_targets()).to_string())
        .send()
        .await
        .expect("start execution")
        .execution_arn()
        .to_owned();
    let before = env.observer.snapshot(&env.world).await;
    let out = env
        .call(json!({"operation": "safetyNet", "executionArn": arn, "status": "ABORTED"}))
        .await
        .expect("safety net");
    assert_eq!(out["restored"], false);
    assert_eq!(
        out["reason"],
        "the execution ended before Prepare finished: no traffic had moved"
    );
    assert_eq!(env.observer.snapshot(&env.world).await, before);

    let err = env
        .call(json!({"operation": "safetyNet", "executionArn": format!("{arn}-missing")}))
        .await
        .expect_err("no such execution");
    assert_eq!(err.name().as_str(), "TargetNotFound", "{err}");
}
