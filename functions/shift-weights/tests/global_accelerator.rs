//! shift-weights over the wire on a Global Accelerator endpoint group (`globalAccelerator`
//! targets), against the moto harness's Global Accelerator (tests/moto/global_accelerator.py:
//! the API in us-west-2, UpdateEndpointGroup replacing the list, IN_PROGRESS then DEPLOYED).

mod common;

use aws_sdk_globalaccelerator as ga;
use canary_core::NamedError;
use common::Env;
use ga::types::{EndpointConfiguration, PortRange, Protocol, Tag};
use serde_json::{json, Value};

/// An accelerator with a TCP listener and an endpoint group in us-east-1 holding `blue` (the
/// world's ALB) at weight 100, beside `other` at 0: (client, endpoint group, blue, green, other).
struct Accelerator {
    client: ga::Client,
    accelerator: String,
    group: String,
    blue: String,
    green: String,
    other: String,
}

async fn accelerator(env: &Env) -> Accelerator {
    let elbv2 = env.observer.elbv2();
    let web = elbv2
        .describe_load_balancers()
        .names("web")
        .send()
        .await
        .expect("the world's ALB");
    let web = &web.load_balancers()[0];
    let blue = web.load_balancer_arn().expect("its ARN").to_owned();
    let subnets: Vec<String> = web
        .availability_zones()
        .iter()
        .filter_map(|z| z.subnet_id().map(str::to_owned))
        .collect();
    let mut balancers = Vec::new();
    for name in ["green", "other"] {
        let created = elbv2
            .create_load_balancer()
            .name(format!("web-{name}"))
            .set_subnets(Some(subnets.clone()))
            .send()
            .await
            .expect("a load balancer");
        balancers.push(
            created.load_balancers()[0]
                .load_balancer_arn()
                .expect("its ARN")
                .to_owned(),
        );
    }
    let (green, other) = (balancers[0].clone(), balancers[1].clone());
    let conf = ga::config::Builder::from(&env.config)
        .region(ga::config::Region::new("us-west-2"))
        .build();
    let client = ga::Client::from_conf(conf);
    let accelerator = client
        .create_accelerator()
        .name("edge")
        .idempotency_token("1")
        .send()
        .await
        .expect("an accelerator")
        .accelerator()
        .and_then(|a| a.accelerator_arn())
        .expect("its ARN")
        .to_owned();
    let listener = client
        .create_listener()
        .accelerator_arn(&accelerator)
        .port_ranges(PortRange::builder().from_port(443).to_port(443).build())
        .protocol(Protocol::Tcp)
        .idempotency_token("2")
        .send()
        .await
        .expect("a listener")
        .listener()
        .and_then(|l| l.listener_arn())
        .expect("its ARN")
        .to_owned();
    let endpoint = |id: &str, weight: i32| {
        EndpointConfiguration::builder()
            .endpoint_id(id)
            .weight(weight)
            .build()
    };
    let group = client
        .create_endpoint_group()
        .listener_arn(listener)
        .endpoint_group_region("us-east-1")
        .idempotency_token("3")
        .endpoint_configurations(endpoint(&blue, 100))
        .endpoint_configurations(endpoint(&other, 0))
        .send()
        .await
        .expect("an endpoint group")
        .endpoint_group()
        .and_then(|g| g.endpoint_group_arn())
        .expect("its ARN")
        .to_owned();
    Accelerator {
        client,
        accelerator,
        group,
        blue,
        green,
        other,
    }
}

impl Accelerator {
    /// `(endpoint, weight)` of the group, as the harness holds it.
    async fn weights(&self) -> Vec<(String, i32)> {
        self.client
            .describe_endpoint_group()
            .endpoint_group_arn(&self.group)
            .send()
            .await
            .expect("describe the group")
            .endpoint_group()
            .expect("a group")
            .endpoint_descriptions()
            .iter()
            .map(|e| {
                let id = e.endpoint_id().unwrap_or_default();
                let name = [
                    ("blue", &self.blue),
                    ("green", &self.green),
                    ("other", &self.other),
                ]
                .iter()
                .find(|(_, arn)| arn.as_str() == id)
                .map_or(id, |(name, _)| name);
                (name.to_owned(), e.weight().unwrap_or(-1))
            })
            .collect()
    }

    fn plan(&self, owner: Option<Value>) -> Value {
        let mut target = json!({
            "endpointGroupArn": self.group,
            "stableEndpointId": self.blue,
            "canaryEndpointId": self.green,
        });
        if let Some(owner) = owner {
            target["owner"] = owner;
        }
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"globalAccelerator": target}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        })
    }
}

fn named(pairs: &[(&str, i32)]) -> Vec<(String, i32)> {
    pairs.iter().map(|(n, w)| ((*n).to_owned(), *w)).collect()
}

#[tokio::test]
async fn endpoint_weights_are_stepped_promoted_and_restored_with_the_whole_list_kept() {
    let env = Env::start().await;
    let ga = accelerator(&env).await;
    let plan = ga.plan(None);

    let prepared = env.prepare(&plan).await.expect("prepare");
    let target = &prepared["targets"][0];
    assert_eq!(target["kind"], "globalAccelerator");
    assert_eq!(target["canaryAttached"], true);
    let baseline = prepared["baseline"].clone();
    assert_eq!(
        ga.weights().await,
        named(&[("blue", 100), ("other", 0), ("green", 0)])
    );

    let at_10 = env.set(&plan, 10, &baseline).await.expect("set 10")["weights"].clone();
    assert_eq!(
        ga.weights().await,
        named(&[("blue", 90), ("other", 0), ("green", 10)]),
        "the whole list written back, the other endpoint kept"
    );
    let status = ga
        .client
        .describe_accelerator()
        .accelerator_arn(&ga.accelerator)
        .send()
        .await
        .expect("describe")
        .accelerator()
        .and_then(|a| a.status().cloned());
    assert_eq!(
        status,
        Some(ga::types::AcceleratorStatus::Deployed),
        "set returns once the accelerator deployed the step"
    );
    let at_100 = env.set(&plan, 100, &at_10).await.expect("set 100")["weights"].clone();
    assert_eq!(
        ga.weights().await,
        named(&[("blue", 0), ("other", 0), ("green", 100)])
    );

    let restored = env
        .call(
            json!({"operation": "restore", "plan": plan, "baseline": baseline, "expected": at_100}),
        )
        .await
        .expect("restore");
    assert!(restored.get("unexpected").is_none(), "{restored}");
    assert_eq!(
        ga.weights().await,
        named(&[("blue", 100), ("other", 0), ("green", 0)])
    );
}

#[tokio::test]
async fn an_accelerator_the_load_balancer_controller_manages_is_refused_and_nothing_is_written() {
    let env = Env::start().await;
    let ga = accelerator(&env).await;
    ga.client
        .tag_resource()
        .resource_arn(&ga.accelerator)
        .tags(
            Tag::builder()
                .key("elbv2.k8s.aws/cluster")
                .value("blue")
                .build()
                .expect("a tag"),
        )
        .send()
        .await
        .expect("tag the accelerator");
    let err = env
        .prepare(&ga.plan(None))
        .await
        .expect_err("a controller's accelerator");
    assert_eq!(err.name().as_str(), "TrafficOwnedByController");
    assert!(
        err.to_string().contains(
            "the accelerator is managed by the AWS Load Balancer Controller (cluster blue)"
        ),
        "{err}"
    );
    assert_eq!(
        ga.weights().await,
        named(&[("blue", 100), ("other", 0)]),
        "nothing written"
    );
}

#[tokio::test]
async fn a_missing_endpoint_group_is_target_not_found() {
    let env = Env::start().await;
    let ga = accelerator(&env).await;
    let mut plan = ga.plan(None);
    plan["trafficTargets"][0]["globalAccelerator"]["endpointGroupArn"] =
        json!(ga.group.replace("/endpoint-group/", "/endpoint-group/0"));
    let err = env.prepare(&plan).await.expect_err("no such group");
    assert_eq!(err.name().as_str(), "TargetNotFound", "{err}");
}

#[tokio::test]
async fn a_traffic_dial_is_stepped_and_restored_leaving_the_endpoints_as_they_were() {
    let env = Env::start().await;
    let ga = accelerator(&env).await;
    ga.client
        .update_endpoint_group()
        .endpoint_group_arn(&ga.group)
        .traffic_dial_percentage(0.0)
        .send()
        .await
        .expect("dial the new Region's group to 0");
    let dial = || async {
        ga.client
            .describe_endpoint_group()
            .endpoint_group_arn(&ga.group)
            .send()
            .await
            .expect("describe the group")
            .endpoint_group()
            .and_then(|g| g.traffic_dial_percentage())
    };
    let plan = json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": [{"globalAccelerator": {"endpointGroupArn": ga.group, "shift": "trafficDial"}}],
        "steps": [{"weight": 10}, {"weight": 100}],
        "bake": {"seconds": 60, "checkIntervalSeconds": 10},
    });
    let prepared = env.prepare(&plan).await.expect("prepare");
    assert!(
        prepared["targets"][0]["notes"]
            .to_string()
            .contains("ignores it on failover"),
        "{prepared}"
    );
    let baseline = prepared["baseline"].clone();
    assert_eq!(baseline[0]["stable"], 100);
    let at_10 = env.set(&plan, 10, &baseline).await.expect("set 10")["weights"].clone();
    assert_eq!(dial().await, Some(10.0));
    let restored = env
        .call(
            json!({"operation": "restore", "plan": plan, "baseline": baseline, "expected": at_10}),
        )
        .await
        .expect("restore");
    assert!(restored.get("unexpected").is_none(), "{restored}");
    assert_eq!(dial().await, Some(0.0));
    assert_eq!(
        ga.weights().await,
        named(&[("blue", 100), ("other", 0)]),
        "the endpoints untouched"
    );
}
