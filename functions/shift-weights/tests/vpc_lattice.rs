//! shift-weights over the wire on a VPC Lattice service's listener and rule (`vpcLattice`
//! targets), against the moto harness's VPC Lattice (tests/moto/vpc_lattice.py: GetRule,
//! UpdateRule and UpdateListener as the API reference documents them, Lattice's identifiers).

mod common;

use aws_sdk_vpclattice as lattice;
use canary_core::NamedError;
use common::Env;
use lattice::types::{
    ForwardAction, HttpMatch, ListenerProtocol, RuleAction, RuleMatch, TargetGroupConfig,
    TargetGroupProtocol, TargetGroupType, WeightedTargetGroup,
};
use serde_json::{json, Value};

/// A service with an HTTP listener whose default action forwards to `blue` alone and whose rule
/// `api` to `blue` and `other` at weight 0; `green` is the new cluster's target group.
struct Service {
    client: lattice::Client,
    service: String,
    listener: String,
    rule: String,
    rule_arn: String,
    blue: String,
    green: String,
    other: String,
}

fn forward(groups: &[(&str, i32)]) -> RuleAction {
    RuleAction::Forward(
        ForwardAction::builder()
            .set_target_groups(Some(
                groups
                    .iter()
                    .map(|(id, weight)| {
                        WeightedTargetGroup::builder()
                            .target_group_identifier(*id)
                            .weight(*weight)
                            .build()
                            .expect("a weighted target group")
                    })
                    .collect(),
            ))
            .build()
            .expect("a forward action"),
    )
}

async fn service(env: &Env) -> Service {
    let client = lattice::Client::new(&env.config);
    let mut groups = Vec::new();
    for name in ["blue", "green", "other"] {
        let group = client
            .create_target_group()
            .name(name)
            .r#type(TargetGroupType::Ip)
            .config(
                TargetGroupConfig::builder()
                    .port(80)
                    .protocol(TargetGroupProtocol::Http)
                    .vpc_identifier("vpc-0123456789abcdef0")
                    .build(),
            )
            .send()
            .await
            .expect("a target group");
        groups.push(group.id().expect("its ID").to_owned());
    }
    let (blue, green, other) = (groups[0].clone(), groups[1].clone(), groups[2].clone());
    let service = client
        .create_service()
        .name("web")
        .send()
        .await
        .expect("a service")
        .id()
        .expect("its ID")
        .to_owned();
    let listener = client
        .create_listener()
        .service_identifier(&service)
        .name("http")
        .protocol(ListenerProtocol::Http)
        .default_action(forward(&[(&blue, 100)]))
        .send()
        .await
        .expect("a listener")
        .id()
        .expect("its ID")
        .to_owned();
    let rule = client
        .create_rule()
        .service_identifier(&service)
        .listener_identifier(&listener)
        .name("api")
        .priority(10)
        .r#match(RuleMatch::HttpMatch(
            HttpMatch::builder().method("GET").build(),
        ))
        .action(forward(&[(&blue, 100), (&other, 0)]))
        .send()
        .await
        .expect("a rule");
    Service {
        client,
        service,
        listener,
        rule: rule.id().expect("its ID").to_owned(),
        rule_arn: rule.arn().expect("its ARN").to_owned(),
        blue,
        green,
        other,
    }
}

impl Service {
    /// `(target group, weight)` of the rule (or the listener's default action), by name.
    async fn weights(&self, rule: bool) -> Vec<(String, i32)> {
        let action = match rule {
            true => self
                .client
                .get_rule()
                .service_identifier(&self.service)
                .listener_identifier(&self.listener)
                .rule_identifier(&self.rule)
                .send()
                .await
                .expect("get the rule")
                .action()
                .cloned(),
            false => self
                .client
                .get_listener()
                .service_identifier(&self.service)
                .listener_identifier(&self.listener)
                .send()
                .await
                .expect("get the listener")
                .default_action()
                .cloned(),
        };
        let Some(RuleAction::Forward(forward)) = action else {
            return Vec::new();
        };
        forward
            .target_groups()
            .iter()
            .map(|g| {
                let id = g.target_group_identifier();
                let name = [
                    ("blue", &self.blue),
                    ("green", &self.green),
                    ("other", &self.other),
                ]
                .iter()
                .find(|(_, known)| known.as_str() == id)
                .map_or(id, |(name, _)| name);
                (name.to_owned(), g.weight().unwrap_or(-1))
            })
            .collect()
    }

    /// A plan shifting the rule (or the listener's default action), the rule by ARN, the
    /// canary's target group by ID.
    fn plan(&self, rule: bool) -> Value {
        let mut target = json!({
            "serviceIdentifier": self.service,
            "listenerIdentifier": self.listener,
            "stableTargetGroup": self.blue,
            "canaryTargetGroup": self.green,
        });
        if rule {
            target["ruleIdentifier"] = json!(self.rule_arn);
        }
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"vpcLattice": target}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        })
    }
}

fn named(pairs: &[(&str, i32)]) -> Vec<(String, i32)> {
    pairs.iter().map(|(n, w)| ((*n).to_owned(), *w)).collect()
}

#[tokio::test]
async fn a_rule_is_stepped_promoted_and_restored_and_the_listener_left_alone() {
    let env = Env::start().await;
    let svc = service(&env).await;
    let plan = svc.plan(true);
    let alb = env.observer.listener_weights(&env.world.listener).await;

    let prepared = env.prepare(&plan).await.expect("prepare");
    let target = &prepared["targets"][0];
    assert_eq!(target["kind"], "vpcLattice");
    assert_eq!(target["canaryAttached"], true);
    let baseline = prepared["baseline"].clone();
    assert_eq!(
        svc.weights(true).await,
        named(&[("blue", 100), ("other", 0), ("green", 0)])
    );

    let at_10 = env.set(&plan, 10, &baseline).await.expect("set 10")["weights"].clone();
    assert_eq!(
        svc.weights(true).await,
        named(&[("blue", 90), ("other", 0), ("green", 10)])
    );
    let at_100 = env.set(&plan, 100, &at_10).await.expect("set 100")["weights"].clone();
    assert_eq!(
        svc.weights(true).await,
        named(&[("blue", 0), ("other", 0), ("green", 100)])
    );
    assert_eq!(
        svc.weights(false).await,
        named(&[("blue", 100)]),
        "the listener's default action is another target's"
    );

    let restored = env
        .call(
            json!({"operation": "restore", "plan": plan, "baseline": baseline, "expected": at_100}),
        )
        .await
        .expect("restore");
    assert!(restored.get("unexpected").is_none(), "{restored}");
    assert_eq!(
        svc.weights(true).await,
        named(&[("blue", 100), ("other", 0), ("green", 0)])
    );
    assert_eq!(
        env.observer.listener_weights(&env.world.listener).await,
        alb,
        "the world's ALB is not this rollout's"
    );
}

#[tokio::test]
async fn a_listener_weight_changed_under_the_rollout_stops_it_and_is_not_overwritten() {
    let env = Env::start().await;
    let svc = service(&env).await;
    let plan = svc.plan(false);
    let baseline = env.prepare(&plan).await.expect("prepare")["baseline"].clone();
    let at_10 = env.set(&plan, 10, &baseline).await.expect("set 10")["weights"].clone();
    svc.client
        .update_listener()
        .service_identifier(&svc.service)
        .listener_identifier(&svc.listener)
        .default_action(forward(&[(&svc.blue, 70), (&svc.green, 30)]))
        .send()
        .await
        .expect("someone else's write");
    let err = env
        .set(&plan, 100, &at_10)
        .await
        .expect_err("changed under us");
    assert_eq!(err.name().as_str(), "WeightsChangedExternally", "{err}");
    assert_eq!(
        svc.weights(false).await,
        named(&[("blue", 70), ("green", 30)])
    );
}

#[tokio::test]
async fn a_route_of_the_gateway_api_controller_or_a_foreign_target_group_is_refused_untouched() {
    let env = Env::start().await;
    let svc = service(&env).await;
    svc.client
        .update_rule()
        .service_identifier(&svc.service)
        .listener_identifier(&svc.listener)
        .rule_identifier(&svc.rule)
        .action(forward(&[(&svc.blue, 90), (&svc.other, 10)]))
        .send()
        .await
        .expect("a third target group in the rule");
    let err = env.prepare(&svc.plan(true)).await.expect_err("reshaped");
    assert!(
        err.to_string().contains(&format!(
            "target groups the plan does not name: {}",
            svc.other
        )),
        "{err}"
    );
    assert_eq!(
        svc.weights(true).await,
        named(&[("blue", 90), ("other", 10)])
    );

    svc.client
        .tag_resource()
        .resource_arn(&svc.rule_arn)
        .tags(
            "application-networking.k8s.aws/ManagedBy",
            "123456789012/blue/vpc-0123",
        )
        .send()
        .await
        .expect("tag the rule");
    let err = env
        .prepare(&svc.plan(true))
        .await
        .expect_err("the controller's");
    assert_eq!(err.name().as_str(), "TrafficOwnedByController", "{err}");
    assert!(
        err.to_string().contains(
            "the rule is managed by the AWS Gateway API Controller (managed by 123456789012/blue/vpc-0123)"
        ),
        "{err}"
    );
    assert_eq!(
        svc.weights(true).await,
        named(&[("blue", 90), ("other", 10)])
    );
}

#[tokio::test]
async fn a_missing_rule_is_target_not_found() {
    let env = Env::start().await;
    let svc = service(&env).await;
    let mut plan = svc.plan(false);
    plan["trafficTargets"][0]["vpcLattice"]["ruleIdentifier"] = json!("rule-0000000000000000a");
    let err = env.prepare(&plan).await.expect_err("no such rule");
    assert_eq!(err.name().as_str(), "TargetNotFound", "{err}");
}
