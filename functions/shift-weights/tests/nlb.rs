//! shift-weights over the wire on a Network Load Balancer's listener (`nlb` targets), against
//! moto with the harness's NLB checks (patch 22: `net/` ARNs, weights 0-999, one protocol).

mod common;

use aws_sdk_elasticloadbalancingv2::types::Tag;
use canary_core::NamedError;
use common::Env;
use serde_json::{json, Value};

fn nlb_plan(env: &Env, canary: &str, owner: Option<Value>) -> Value {
    let mut target = json!({
        "listenerArn": env.world.nlb_listener,
        "stableTargetGroupArn": env.world.tcp_blue,
        "canaryTargetGroupArn": canary,
        "minStepSeconds": 60,
    });
    if let Some(owner) = owner {
        target["owner"] = owner;
    }
    json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": [{"nlb": target}],
        "steps": [{"weight": 10}, {"weight": 50}, {"weight": 100}],
        "bake": {"seconds": 60, "checkIntervalSeconds": 10},
    })
}

/// `(stable, canary)` weights of the NLB listener's forward action, as moto holds them.
async fn weights(env: &Env) -> Vec<(String, i32)> {
    let w = &env.world;
    env.observer
        .listener_weights(&w.nlb_listener)
        .await
        .into_iter()
        .map(|(arn, weight)| {
            let name = if arn == w.tcp_blue {
                "blue"
            } else if arn == w.tcp_green {
                "green"
            } else {
                "other"
            };
            (name.to_owned(), weight)
        })
        .collect()
}

fn pairs(stable: i32, canary: i32) -> Vec<(String, i32)> {
    vec![("blue".to_owned(), stable), ("green".to_owned(), canary)]
}

#[tokio::test]
async fn an_nlb_listener_is_stepped_promoted_and_restored_through_modify_listener() {
    let env = Env::start().await;
    let plan = nlb_plan(&env, &env.world.tcp_green, None);
    let prepared = env.prepare(&plan).await.expect("prepare");
    let target = &prepared["targets"][0];
    assert_eq!(target["kind"], "nlb");
    assert_eq!(target["canaryAttached"], true);
    assert!(
        target["notes"]
            .to_string()
            .contains("moves new connections only"),
        "{target}"
    );
    let baseline = prepared["baseline"].clone();
    assert_eq!(weights(&env).await, pairs(100, 0));

    let at_10 = env.set(&plan, 10, &baseline).await.expect("set 10")["weights"].clone();
    assert_eq!(weights(&env).await, pairs(90, 10));
    let at_100 = env.set(&plan, 100, &at_10).await.expect("set 100")["weights"].clone();
    assert_eq!(weights(&env).await, pairs(0, 100));

    let restored = env
        .call(
            json!({"operation": "restore", "plan": plan, "baseline": baseline, "expected": at_100}),
        )
        .await
        .expect("restore");
    assert!(restored.get("unexpected").is_none(), "{restored}");
    assert_eq!(weights(&env).await, pairs(100, 0));
}

#[tokio::test]
async fn a_canary_target_group_of_another_protocol_is_refused_before_anything_is_written() {
    let env = Env::start().await;
    let before = env.observer.snapshot(&env.world).await;
    let err = env
        .prepare(&nlb_plan(&env, &env.world.udp_group, None))
        .await
        .expect_err("a UDP canary beside a TCP stable target group");
    assert_eq!(err.name().as_str(), "TargetMisconfigured");
    let text = err.to_string();
    assert!(
        text.contains("one protocol") && text.contains(&format!("{} is UDP", env.world.udp_group)),
        "{text}"
    );
    assert_eq!(
        env.observer.snapshot(&env.world).await,
        before,
        "nothing written"
    );
}

/// The AWS Load Balancer Controller manages an NLB for a Service of type LoadBalancer and tags
/// it `service.k8s.aws/*`: it would put its own weights back.
#[tokio::test]
async fn an_nlb_the_load_balancer_controller_manages_is_refused_unless_the_plan_says_why() {
    let env = Env::start().await;
    let balancer = env
        .observer
        .elbv2()
        .describe_listeners()
        .listener_arns(&env.world.nlb_listener)
        .send()
        .await
        .expect("describe the listener")
        .listeners()[0]
        .load_balancer_arn()
        .expect("its load balancer")
        .to_owned();
    let tag = |key: &str, value: &str| Tag::builder().key(key).value(value).build();
    env.observer
        .elbv2()
        .add_tags()
        .resource_arns(&balancer)
        .tags(tag("elbv2.k8s.aws/cluster", "blue"))
        .tags(tag("service.k8s.aws/stack", "edge/gateway"))
        .send()
        .await
        .expect("tag the load balancer");

    let before = env.observer.snapshot(&env.world).await;
    let err = env
        .prepare(&nlb_plan(&env, &env.world.tcp_green, None))
        .await
        .expect_err("a controller's NLB");
    assert_eq!(err.name().as_str(), "TrafficOwnedByController");
    let text = err.to_string();
    assert!(
        text.contains("the load balancer is managed by the AWS Load Balancer Controller (cluster blue, stack edge/gateway)")
            && text.contains("docs/traffic/nlb.md"),
        "{text}"
    );
    assert_eq!(
        env.observer.snapshot(&env.world).await,
        before,
        "nothing written"
    );

    let ignored = nlb_plan(
        &env,
        &env.world.tcp_green,
        Some(json!({"ignore": "the Service sets no weights; its annotation is removed"})),
    );
    let prepared = env.prepare(&ignored).await.expect("prepare, told why");
    assert!(
        prepared["targets"][0]["notes"]
            .to_string()
            .contains("shifted anyway: the Service sets no weights"),
        "{prepared}"
    );
}
