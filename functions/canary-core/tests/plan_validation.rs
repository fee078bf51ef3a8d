//! The table of bad plans: each mutation of a valid example plan must fail with an error
//! that names the offending field by its path and says what is wrong.

use canary_core::RolloutPlan;
use serde_json::{json, Value};

fn base_plan() -> Value {
    let text = include_str!("../../../examples/plans/alb-rule-and-route53.json");
    serde_json::from_str(text).expect("example plan is JSON")
}

fn set(plan: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let parent = plan
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent} in plan"));
    match parent {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        Value::Array(items) => {
            let index: usize = key.parse().expect("array index");
            items[index] = value;
        }
        _ => panic!("{pointer}: parent is not a container"),
    }
}

fn remove(plan: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    plan.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|map| map.remove(key))
        .unwrap_or_else(|| panic!("nothing at {pointer}"));
}

const LISTENER: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/api/8e4497da625e2d8a/d5b6c7e8f9a0b1c2";
const STABLE_TG: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api-v128/0a1b2c3d4e5f6a7b";

const NLB_LISTENER: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/net/tcp/8e4497da625e2d8a/d5b6c7e8f9a0b1c2";

/// A valid NLB target, its fields replaced by `overrides`.
fn nlb(overrides: Value) -> Value {
    let mut target = json!({
        "listenerArn": NLB_LISTENER,
        "stableTargetGroupArn": STABLE_TG,
        "canaryTargetGroupArn": STABLE_TG.replace("api-v128", "api-v129"),
    });
    for (key, value) in overrides.as_object().expect("an object") {
        target[key] = value.clone();
    }
    json!({ "nlb": target })
}

const GA_GROUP: &str = "arn:aws:globalaccelerator::123456789012:accelerator/1234abcd-abcd-1234-abcd-1234abcdefgh/listener/0123vxyz/endpoint-group/098765zyxwvu";
const GA_BLUE: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/blue/8e4497da625e2d8a";

/// A valid Global Accelerator target (endpoint weights), its fields replaced by `overrides`.
fn accelerator(overrides: Value) -> Value {
    let mut target = json!({
        "endpointGroupArn": GA_GROUP,
        "stableEndpointId": GA_BLUE,
        "canaryEndpointId": GA_BLUE.replace("/blue/", "/green/"),
    });
    for (key, value) in overrides.as_object().expect("an object") {
        target[key] = value.clone();
    }
    json!({ "globalAccelerator": target })
}

const LATTICE_SERVICE: &str =
    "arn:aws:vpc-lattice:us-east-1:123456789012:service/svc-0123456789abcdef0";

/// A valid VPC Lattice target (a rule; target groups by ID), its fields replaced by `overrides`.
fn lattice(overrides: Value) -> Value {
    let mut target = json!({
        "serviceIdentifier": "svc-0123456789abcdef0",
        "listenerIdentifier": "listener-0123456789abcdef0",
        "ruleIdentifier": format!("{LATTICE_SERVICE}/listener/listener-0123456789abcdef0/rule/rule-0123456789abcdef0"),
        "stableTargetGroup": "tg-0123456789abcdefa",
        "canaryTargetGroup": "tg-0123456789abcdefb",
    });
    for (key, value) in overrides.as_object().expect("an object") {
        target[key] = value.clone();
    }
    json!({ "vpcLattice": target })
}

type Mutation = Box<dyn Fn(&mut Value)>;

/// A valid metric check with some fields replaced.
fn metric(overrides: Value) -> Value {
    let mut check = json!({
        "name": "checkout p99", "namespace": "Shop", "metricName": "Latency",
        "dimensions": {"Service": "checkout"}, "stat": "p99",
        "periodSeconds": 60, "lookbackSeconds": 300, "reduce": "max", "max": 0.5,
    });
    for (k, v) in overrides.as_object().expect("object") {
        if v.is_null() {
            check.as_object_mut().expect("object").remove(k);
        } else {
            check[k] = v.clone();
        }
    }
    check
}

fn bad_plans() -> Vec<(&'static str, Mutation, &'static str, &'static str)> {
    vec![
        (
            "empty steps",
            Box::new(|p| set(p, "/steps", json!([]))),
            "steps",
            "at least one step",
        ),
        (
            "steps not increasing",
            Box::new(|p| set(p, "/steps/2", json!({"weight": 25}))),
            "steps[2].weight",
            "greater than the previous step's 25",
        ),
        (
            "weight over 100",
            Box::new(|p| set(p, "/steps/3", json!({"weight": 150}))),
            "steps[3].weight",
            "from 1 to 100, got 150",
        ),
        (
            "negative weight",
            Box::new(|p| set(p, "/steps/0", json!({"weight": -5}))),
            "steps[0].weight",
            "from 1 to 100, got -5",
        ),
        (
            "zero weight",
            Box::new(|p| set(p, "/steps/0", json!({"weight": 0}))),
            "steps[0].weight",
            "from 1 to 100, got 0",
        ),
        (
            "fractional weight",
            Box::new(|p| set(p, "/steps/0/weight", json!(2.5))),
            "steps[0].weight",
            "invalid type: floating point",
        ),
        (
            "last step not 100",
            Box::new(|p| set(p, "/steps/3", json!({"weight": 90}))),
            "steps[3].weight",
            "last step must move all traffic (100), got 90",
        ),
        (
            "too many steps",
            Box::new(|p| {
                set(
                    p,
                    "/steps",
                    json!((1..=25)
                        .map(|w| json!({"weight": w * 4}))
                        .collect::<Vec<_>>()),
                )
            }),
            "steps",
            "at most 20 steps",
        ),
        (
            "duplicate ALB target",
            Box::new(|p| {
                let first = p["trafficTargets"][0].clone();
                p["trafficTargets"]
                    .as_array_mut()
                    .expect("array")
                    .push(first);
            }),
            "trafficTargets[2]",
            "same traffic as trafficTargets[0]",
        ),
        (
            "duplicate Route 53 record under other set identifiers",
            Box::new(|p| {
                let mut other = p["trafficTargets"][1].clone();
                other["route53"]["recordName"] = json!("API.example.com.");
                other["route53"]["stableSetIdentifier"] = json!("x");
                other["route53"]["canarySetIdentifier"] = json!("y");
                p["trafficTargets"]
                    .as_array_mut()
                    .expect("array")
                    .push(other);
            }),
            "trafficTargets[2]",
            "same traffic as trafficTargets[1]",
        ),
        (
            "no traffic targets",
            Box::new(|p| set(p, "/trafficTargets", json!([]))),
            "trafficTargets",
            "at least one traffic target",
        ),
        (
            "malformed listener ARN",
            Box::new(|p| {
                set(p, "/trafficTargets/0/alb/listenerArn", json!("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/api/8e4497da625e2d8a"))
            }),
            "trafficTargets[0].alb.listenerArn",
            "it names a `loadbalancer`",
        ),
        (
            "target group ARN given as listener ARN",
            Box::new(|p| set(p, "/trafficTargets/0/alb/listenerArn", json!(STABLE_TG))),
            "trafficTargets[0].alb.listenerArn",
            "not an application load balancer listener ARN",
        ),
        (
            "malformed target group ARN",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/0/alb/canaryTargetGroupArn",
                    json!("api-v129"),
                )
            }),
            "trafficTargets[0].alb.canaryTargetGroupArn",
            "six ':'-separated parts",
        ),
        (
            "rule of another listener",
            Box::new(|p| {
                set(p, "/trafficTargets/0/alb/ruleArn", json!("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/api/8e4497da625e2d8a/ffffffffffffffff/9683b2d02a6cabee"))
            }),
            "trafficTargets[0].alb.ruleArn",
            "does not belong to the listener",
        ),
        (
            "target group in another region",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/0/alb/canaryTargetGroupArn",
                    json!(STABLE_TG.replace("us-east-1", "us-west-2")),
                )
            }),
            "trafficTargets[0].alb.canaryTargetGroupArn",
            "own account and region",
        ),
        (
            "stable and canary target group equal",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/0/alb/canaryTargetGroupArn",
                    json!(STABLE_TG),
                )
            }),
            "trafficTargets[0].alb.canaryTargetGroupArn",
            "must differ from stableTargetGroupArn",
        ),
        (
            "hosted zone id with prefix",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/1/route53/hostedZoneId",
                    json!("/hostedzone/Z0123456789ABCDEFGHIJ"),
                )
            }),
            "trafficTargets[1].route53.hostedZoneId",
            "bare hosted zone id `Z0123456789ABCDEFGHIJ`",
        ),
        (
            "lower-case hosted zone id",
            Box::new(|p| set(p, "/trafficTargets/1/route53/hostedZoneId", json!("z0123"))),
            "trafficTargets[1].route53.hostedZoneId",
            "not a hosted zone id",
        ),
        (
            "record name with empty label",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/1/route53/recordName",
                    json!("api..example.com"),
                )
            }),
            "trafficTargets[1].route53.recordName",
            "not a DNS name",
        ),
        (
            "record type Route 53 cannot weight",
            Box::new(|p| set(p, "/trafficTargets/1/route53/recordType", json!("SOA"))),
            "trafficTargets[1].route53.recordType",
            "unknown variant `SOA`",
        ),
        (
            "same set identifiers",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/1/route53/canarySetIdentifier",
                    json!("api-v128"),
                )
            }),
            "trafficTargets[1].route53.canarySetIdentifier",
            "must differ from stableSetIdentifier",
        ),
        (
            "GitOps mode without its settings",
            Box::new(|p| set(p, "/trafficTargets/1/route53/via", json!("argocd"))),
            "trafficTargets[1].route53.gitops",
            "is required with \"via\": \"argocd\"",
        ),
        (
            "GitOps settings without GitOps mode",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/1/route53/gitops",
                    json!({"stableSecret": "blue"}),
                )
            }),
            "trafficTargets[1].route53.gitops",
            "only has a meaning with \"via\": \"argocd\"",
        ),
        (
            "GitOps stable Secret that is not a Secret name",
            Box::new(|p| {
                set(p, "/trafficTargets/1/route53/via", json!("argocd"));
                set(
                    p,
                    "/trafficTargets/1/route53/gitops",
                    json!({"stableSecret": "Blue_Cluster"}),
                )
            }),
            "trafficTargets[1].route53.gitops.stableSecret",
            "`Blue_Cluster` is not a Kubernetes Secret name",
        ),
        (
            "GitOps weight annotation that is not an annotation key",
            Box::new(|p| {
                set(p, "/trafficTargets/1/route53/via", json!("argocd"));
                set(
                    p,
                    "/trafficTargets/1/route53/gitops",
                    json!({"stableSecret": "blue", "weightAnnotation": "weight of/blue"}),
                )
            }),
            "trafficTargets[1].route53.gitops.weightAnnotation",
            "is not a Kubernetes annotation key",
        ),
        (
            "GitOps sync timeout past one invocation",
            Box::new(|p| {
                set(p, "/trafficTargets/1/route53/via", json!("argocd"));
                set(
                    p,
                    "/trafficTargets/1/route53/gitops",
                    json!({"stableSecret": "blue", "syncTimeoutSeconds": 600}),
                )
            }),
            "trafficTargets[1].route53.gitops.syncTimeoutSeconds",
            "must be 10 to 180",
        ),
        (
            "GitOps mode with owner.ignore",
            Box::new(|p| {
                set(p, "/trafficTargets/1/route53/via", json!("argocd"));
                set(
                    p,
                    "/trafficTargets/1/route53/gitops",
                    json!({"stableSecret": "blue"}),
                );
                set(
                    p,
                    "/trafficTargets/1/route53/owner",
                    json!({"ignore": "because"}),
                )
            }),
            "trafficTargets[1].route53.owner.ignore",
            "has no meaning with \"via\": \"argocd\"",
        ),
        (
            "unknown via",
            Box::new(|p| set(p, "/trafficTargets/1/route53/via", json!("flux"))),
            "trafficTargets[1].route53.via",
            "unknown variant `flux`",
        ),
        (
            "target that is neither alb, nlb nor route53",
            Box::new(|p| set(p, "/trafficTargets/1", json!({"gwlb": {}}))),
            "trafficTargets[1]",
            "unknown variant `gwlb`",
        ),
        (
            "nlb target given an ALB's listener",
            Box::new(|p| set(p, "/trafficTargets/1", nlb(json!({"listenerArn": LISTENER})))),
            "trafficTargets[1].nlb.listenerArn",
            "give it as an `alb` target",
        ),
        (
            "alb target given an NLB's listener",
            Box::new(|p| {
                set(p, "/trafficTargets/0/alb/listenerArn", json!(NLB_LISTENER));
                remove(p, "/trafficTargets/0/alb/ruleArn");
            }),
            "trafficTargets[0].alb.listenerArn",
            "give it as an `nlb` target",
        ),
        (
            "nlb target with a rule (NLB listeners have none)",
            Box::new(|p| set(p, "/trafficTargets/1", nlb(json!({"ruleArn": LISTENER})))),
            "trafficTargets[1].nlb.ruleArn",
            "unknown field `ruleArn`",
        ),
        (
            "globalAccelerator target with a listener's ARN for its endpoint group",
            Box::new(|p| {
                set(p, "/trafficTargets/1", accelerator(json!({"endpointGroupArn": GA_GROUP.split("/endpoint-group/").next().unwrap()})))
            }),
            "trafficTargets[1].globalAccelerator.endpointGroupArn",
            "not a Global Accelerator endpoint group ARN",
        ),
        (
            "globalAccelerator endpoint weights without the canary endpoint",
            Box::new(|p| {
                set(p, "/trafficTargets/1", accelerator(json!({})));
                remove(p, "/trafficTargets/1/globalAccelerator/canaryEndpointId");
            }),
            "trafficTargets[1].globalAccelerator.canaryEndpointId",
            "is required with \"shift\": \"endpointWeights\"",
        ),
        (
            "globalAccelerator endpoints equal",
            Box::new(|p| {
                set(p, "/trafficTargets/1", accelerator(json!({"canaryEndpointId": GA_BLUE})))
            }),
            "trafficTargets[1].globalAccelerator.canaryEndpointId",
            "must differ from stableEndpointId",
        ),
        (
            "globalAccelerator traffic dial naming endpoints",
            Box::new(|p| {
                set(p, "/trafficTargets/1", accelerator(json!({"shift": "trafficDial"})))
            }),
            "trafficTargets[1].globalAccelerator.stableEndpointId",
            "has no meaning with \"shift\": \"trafficDial\"",
        ),
        (
            "globalAccelerator endpoint id too long",
            Box::new(|p| {
                set(p, "/trafficTargets/1", accelerator(json!({"canaryEndpointId": "i-".repeat(200)})))
            }),
            "trafficTargets[1].globalAccelerator.canaryEndpointId",
            "1 to 255 characters",
        ),
        (
            "vpcLattice service that is no Lattice ID",
            Box::new(|p| set(p, "/trafficTargets/1", lattice(json!({"serviceIdentifier": "svc-0123"})))),
            "trafficTargets[1].vpcLattice.serviceIdentifier",
            "is not a VPC Lattice service ID or ARN; expected `svc-0123456789abcdef0`",
        ),
        (
            "vpcLattice listener given a rule's ARN",
            Box::new(|p| {
                set(p, "/trafficTargets/1", lattice(json!({"listenerIdentifier": format!(
                    "{LATTICE_SERVICE}/listener/listener-0123456789abcdef0/rule/rule-0123456789abcdef0")})))
            }),
            "trafficTargets[1].vpcLattice.listenerIdentifier",
            "is not a VPC Lattice listener ARN",
        ),
        (
            "vpcLattice rule of another listener",
            Box::new(|p| {
                set(p, "/trafficTargets/1", lattice(json!({"ruleIdentifier": format!(
                    "{LATTICE_SERVICE}/listener/listener-0123456789abcdefz/rule/rule-0123456789abcdef0")})))
            }),
            "trafficTargets[1].vpcLattice.ruleIdentifier",
            "names another service or listener",
        ),
        (
            "vpcLattice target group of an ELB",
            Box::new(|p| {
                set(p, "/trafficTargets/1", lattice(json!({"canaryTargetGroup": STABLE_TG})))
            }),
            "trafficTargets[1].vpcLattice.canaryTargetGroup",
            "is not a VPC Lattice ARN",
        ),
        (
            "vpcLattice target group in another Region",
            Box::new(|p| {
                set(p, "/trafficTargets/1", lattice(json!({"canaryTargetGroup":
                    "arn:aws:vpc-lattice:eu-west-1:123456789012:targetgroup/tg-0123456789abcdefb"})))
            }),
            "trafficTargets[1].vpcLattice.canaryTargetGroup",
            "a service forwards only to target groups of its own account and Region",
        ),
        (
            "vpcLattice target groups equal (an ID and its ARN)",
            Box::new(|p| {
                set(p, "/trafficTargets/1", lattice(json!({"canaryTargetGroup":
                    "arn:aws:vpc-lattice:us-east-1:123456789012:targetgroup/tg-0123456789abcdefa"})))
            }),
            "trafficTargets[1].vpcLattice.canaryTargetGroup",
            "must differ from stableTargetGroup",
        ),
        (
            "vpcLattice without its canary target group",
            Box::new(|p| {
                set(p, "/trafficTargets/1", lattice(json!({})));
                remove(p, "/trafficTargets/1/vpcLattice/canaryTargetGroup");
            }),
            "trafficTargets[1].vpcLattice",
            "missing field `canaryTargetGroup`",
        ),
        (
            "globalAccelerator unknown shift",
            Box::new(|p| set(p, "/trafficTargets/1", accelerator(json!({"shift": "dns"})))),
            "trafficTargets[1].globalAccelerator.shift",
            "unknown variant `dns`",
        ),
        (
            "nlb target groups equal",
            Box::new(|p| {
                set(p, "/trafficTargets/1", nlb(json!({"canaryTargetGroupArn": STABLE_TG})))
            }),
            "trafficTargets[1].nlb.canaryTargetGroupArn",
            "must differ from stableTargetGroupArn",
        ),
        (
            "nlb target group in another account",
            Box::new(|p| {
                set(
                    p,
                    "/trafficTargets/1",
                    nlb(json!({"canaryTargetGroupArn": STABLE_TG.replace("123456789012", "210987654321")})),
                )
            }),
            "trafficTargets[1].nlb.canaryTargetGroupArn",
            "own account and region",
        ),
        (
            "nlb minStepSeconds out of range",
            Box::new(|p| set(p, "/trafficTargets/1", nlb(json!({"minStepSeconds": 0})))),
            "trafficTargets[1].nlb.minStepSeconds",
            "must be from 1 to 86400 seconds",
        ),
        (
            "a step shorter than an nlb's minStepSeconds",
            Box::new(|p| {
                set(p, "/trafficTargets/1", nlb(json!({"minStepSeconds": 1000})));
            }),
            "steps[0]",
            "bakes 900 s, less than trafficTargets[1].nlb.minStepSeconds (1000 s)",
        ),
        (
            "bake shorter than interval",
            Box::new(|p| {
                set(
                    p,
                    "/bake",
                    json!({"seconds": 20, "checkIntervalSeconds": 30}),
                )
            }),
            "bake.checkIntervalSeconds",
            "not be longer than the bake time (20 s), got 30",
        ),
        (
            "step bake shorter than interval",
            Box::new(|p| set(p, "/steps/0", json!({"weight": 5, "bakeSeconds": 10}))),
            "steps[0].checkIntervalSeconds",
            "not be longer than the bake time (10 s), got 30",
        ),
        (
            "zero interval",
            Box::new(|p| set(p, "/bake/checkIntervalSeconds", json!(0))),
            "bake.checkIntervalSeconds",
            "at least 1 second",
        ),
        (
            "bake longer than a day",
            Box::new(|p| set(p, "/bake/seconds", json!(100_000))),
            "bake.seconds",
            "from 1 to 86400 seconds",
        ),
        (
            "too many checks for the history limit",
            Box::new(|p| {
                set(
                    p,
                    "/bake",
                    json!({"seconds": 86400, "checkIntervalSeconds": 10}),
                )
            }),
            "steps",
            "25,000 history events",
        ),
        (
            "unknown top-level field",
            Box::new(|p| set(p, "/dryRun", json!(true))),
            "dryRun",
            "unknown field `dryRun`",
        ),
        (
            "unknown nested field",
            Box::new(|p| set(p, "/trafficTargets/0/alb/priority", json!(10))),
            "trafficTargets[0].alb.priority",
            "unknown field `priority`",
        ),
        (
            "unknown field in the analysis section",
            Box::new(|p| set(p, "/analysis", json!({"alarm": ["x"]}))),
            "analysis.alarm",
            "unknown field `alarm`",
        ),
        (
            "unknown field in the argocd section",
            Box::new(|p| set(p, "/argocd", json!({"label": {}}))),
            "argocd.label",
            "unknown field `label`",
        ),
        (
            "argocd label that cluster-canary sets itself",
            Box::new(|p| {
                set(
                    p,
                    "/argocd",
                    json!({"labels": {"argocd.argoproj.io/secret-type": "x"}}),
                )
            }),
            "argocd.labels.argocd.argoproj.io/secret-type",
            "is set by cluster-canary itself",
        ),
        (
            "argocd label value with a space",
            Box::new(|p| set(p, "/argocd", json!({"labels": {"tier": "front end"}}))),
            "argocd.labels.tier",
            "not a Kubernetes label value",
        ),
        (
            "argocd role that is not a role ARN",
            Box::new(|p| {
                set(
                    p,
                    "/argocd",
                    json!({"roleArn": "arn:aws:iam::123456789012:user/bob"}),
                )
            }),
            "argocd.roleArn",
            "not an IAM role ARN",
        ),
        (
            "argocd namespace that is not a name",
            Box::new(|p| set(p, "/argocd", json!({"namespace": "Argo CD"}))),
            "argocd.namespace",
            "not a Kubernetes namespace name",
        ),
        (
            "eks-capability mode without its role",
            Box::new(|p| set(p, "/argocd", json!({"mode": "eks-capability"}))),
            "argocd.capabilityRoleArn",
            "is required with mode eks-capability",
        ),
        (
            "a capability role without the mode",
            Box::new(|p| {
                set(
                    p,
                    "/argocd",
                    json!({"capabilityRoleArn": "arn:aws:iam::123456789012:role/c"}),
                )
            }),
            "argocd.capabilityRoleArn",
            "only has a meaning with mode eks-capability",
        ),
        (
            "a deployer role in eks-capability mode",
            Box::new(|p| {
                set(
                    p,
                    "/argocd",
                    json!({"mode": "eks-capability",
                "capabilityRoleArn": "arn:aws:iam::123456789012:role/c", "roleArn": "arn:aws:iam::123456789012:role/d"}),
                )
            }),
            "argocd.roleArn",
            "has no meaning with mode eks-capability",
        ),
        (
            "an access entry with no role to give it to",
            Box::new(|p| set(p, "/argocd", json!({"createAccessEntry": true}))),
            "argocd.createAccessEntry",
            "needs mode self-managed and a roleArn",
        ),
        (
            "an access policy that is not one",
            Box::new(|p| {
                set(
                    p,
                    "/argocd",
                    json!({"mode": "eks-capability",
                "capabilityRoleArn": "arn:aws:iam::123456789012:role/c",
                "accessPolicyArn": "arn:aws:iam::aws:policy/AdministratorAccess"}),
                )
            }),
            "argocd.accessPolicyArn",
            "is not an EKS access policy ARN",
        ),
        (
            "an unknown Argo CD mode",
            Box::new(|p| set(p, "/argocd", json!({"mode": "managed"}))),
            "argocd.mode",
            "unknown variant",
        ),
        (
            "argocd stableChecks zero",
            Box::new(|p| set(p, "/argocd", json!({"stableChecks": 0}))),
            "argocd.stableChecks",
            "from 1 to 10, got 0",
        ),
        (
            "argocd minApps negative",
            Box::new(|p| set(p, "/argocd", json!({"minApps": -1}))),
            "argocd.minApps",
            "from 0 to 1000, got -1",
        ),
        (
            "argocd clusterResources without namespaces",
            Box::new(|p| set(p, "/argocd", json!({"clusterResources": true}))),
            "argocd.clusterResources",
            "together with `namespaces`",
        ),
        (
            "alarms without names or prefixes",
            Box::new(|p| set(p, "/analysis", json!({"alarms": {}}))),
            "analysis.alarms",
            "at least one alarm name or prefix",
        ),
        (
            "insufficient-data policy that does not exist",
            Box::new(|p| {
                set(
                    p,
                    "/analysis",
                    json!({"alarms": {"names": ["a"], "insufficientData": "pass"}}),
                )
            }),
            "analysis.alarms.insufficientData",
            "unknown variant `pass`",
        ),
        (
            "failure limit 0",
            Box::new(|p| set(p, "/analysis", json!({"failureLimit": 0}))),
            "analysis.failureLimit",
            "from 1 to 100, got 0",
        ),
        (
            "unjudged bound under 10 s",
            Box::new(|p| set(p, "/analysis", json!({"maxUnjudgedSeconds": 5}))),
            "analysis.maxUnjudgedSeconds",
            "from 10 to 3600, got 5",
        ),
        (
            "unjudged bound over an hour",
            Box::new(|p| set(p, "/analysis", json!({"maxUnjudgedSeconds": 3601}))),
            "analysis.maxUnjudgedSeconds",
            "from 10 to 3600, got 3601",
        ),
        (
            "metric lookback shorter than its period",
            Box::new(|p| {
                set(
                    p,
                    "/analysis",
                    json!({"metrics": [metric(json!({"periodSeconds": 300, "lookbackSeconds": 60}))]}),
                )
            }),
            "analysis.metrics[0].lookbackSeconds",
            "60 s is shorter than the metric period (300 s)",
        ),
        (
            "metric period CloudWatch does not have",
            Box::new(|p| {
                set(
                    p,
                    "/analysis",
                    json!({"metrics": [metric(json!({"periodSeconds": 90}))]}),
                )
            }),
            "analysis.metrics[0].periodSeconds",
            "multiple of 60 seconds, got 90",
        ),
        (
            "metric statistic that does not exist",
            Box::new(|p| {
                set(
                    p,
                    "/analysis",
                    json!({"metrics": [metric(json!({"stat": "Median"}))]}),
                )
            }),
            "analysis.metrics[0].stat",
            "`Median` is not a statistic",
        ),
        (
            "metric without limits",
            Box::new(|p| {
                set(
                    p,
                    "/analysis",
                    json!({"metrics": [metric(json!({"max": null}))]}),
                )
            }),
            "analysis.metrics[0]",
            "a check without a limit cannot fail",
        ),
        (
            "metric min above max",
            Box::new(|p| {
                set(
                    p,
                    "/analysis",
                    json!({"metrics": [metric(json!({"min": 5, "max": 1}))]}),
                )
            }),
            "analysis.metrics[0].min",
            "5 is greater than max 1",
        ),
        (
            "built-in ALB checks without limits",
            Box::new(|p| set(p, "/analysis", json!({"alb": {}}))),
            "analysis.alb",
            "set at least one of maxErrorRatePercent",
        ),
        (
            "built-in ALB checks on a plan without ALB targets",
            Box::new(|p| {
                p["trafficTargets"].as_array_mut().expect("array").remove(0);
                set(p, "/analysis", json!({"alb": {"maxErrorRatePercent": 1}}));
            }),
            "analysis.alb",
            "need at least one `alb` or `vpcLattice` traffic target",
        ),
        (
            "comparison of target groups on a plan with only a Route 53 record",
            Box::new(|p| {
                p["trafficTargets"].as_array_mut().expect("array").remove(0);
                set(p, "/analysis", json!({"compare": {"metrics": [{"name": "errors", "alb": "errorRate"}]}}));
            }),
            "analysis.compare.metrics[0].alb",
            "compares the target groups of an `alb` or `vpcLattice` traffic target, and the plan has none",
        ),
        (
            "relative factor below 1",
            Box::new(|p| set(p, "/analysis", json!({"alb": {"maxLatencyVsStable": 0.5}}))),
            "analysis.alb.maxLatencyVsStable",
            "a factor below 1 (0.5)",
        ),
        (
            "comparison without metrics",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": []}}))),
            "analysis.compare.metrics",
            "give 1 to 20 metrics, got 0",
        ),
        (
            "comparison metric with two sources",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [{"name": "latency", "alb": "latency",
                "cloudwatch": {"namespace": "Shop", "metricName": "Latency", "sideDimension": "Cluster", "canary": "green", "baseline": "blue"}}]}}))),
            "analysis.compare.metrics[0]",
            "exactly one source: `alb`, `cloudwatch`, `prometheus` or `datadog`",
        ),
        (
            "comparison of a side with itself",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [{"name": "latency",
                "cloudwatch": {"namespace": "Shop", "metricName": "Latency", "sideDimension": "Cluster", "canary": "green", "baseline": "green"}}]}}))),
            "analysis.compare.metrics[0].cloudwatch.baseline",
            "compare a side with itself",
        ),
        (
            "comparison of the ALB on a plan without ALB targets",
            Box::new(|p| {
                p["trafficTargets"].as_array_mut().expect("array").remove(0);
                set(p, "/analysis", json!({"compare": {"metrics": [{"name": "latency", "alb": "latency"}]}}));
            }),
            "analysis.compare.metrics[0].alb",
            "the plan has none",
        ),
        (
            "comparison needing more samples than its window has",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"periodSeconds": 60, "lookbackSeconds": 300, "minSamples": 10,
                "metrics": [{"name": "latency", "alb": "latency"}]}}))),
            "analysis.compare.minSamples",
            "10 exceeds the 5 period(s)",
        ),
        (
            "comparison pooling more ALB samples than a side may have",
            Box::new(|p| {
                let mut second = p["trafficTargets"][0].clone();
                for (field, group) in [("canaryTargetGroupArn", "api-v129b"), ("stableTargetGroupArn", "api-v128b")] {
                    second["alb"][field] = json!(format!(
                        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/{group}/0a1b2c3d4e5f6a7c"
                    ));
                }
                second["alb"]["ruleArn"] = json!("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/api/8e4497da625e2d8a/d5b6c7e8f9a0b1c2/9683b2d02a6cabef");
                p["trafficTargets"].as_array_mut().expect("array").push(second);
                set(p, "/analysis", json!({"compare": {"periodSeconds": 60, "lookbackSeconds": 72_000,
                    "metrics": [{"name": "latency", "alb": "latency"}]}}));
            }),
            "analysis.compare.metrics[0]",
            "1200 periods × 2 target groups on the baseline's side is 2400 samples on one side, over the 2000",
        ),
        (
            "comparison of a sided CloudWatch metric pooling more peers' samples than a side may have",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"periodSeconds": 60, "lookbackSeconds": 43_200,
                "metrics": [{"name": "queue", "cloudwatch": {"namespace": "Shop", "metricName": "QueueTime",
                    "sideDimension": "Cluster", "canary": "green", "baseline": "blue"}}],
                "peers": {"cells": [{"name": "a", "sides": {"queue": "a-green"}}, {"name": "b", "sides": {"queue": "b-green"}},
                                    {"name": "c", "sides": {"queue": "c-green"}}]}}}))),
            "analysis.compare.metrics[0]",
            "720 periods × 3 peers is 2160 samples on one side, over the 2000",
        ),
        (
            "comparison of the ALB pooling more peers' target groups than a side may have",
            Box::new(|p| {
                let peer = |n: usize| json!({"name": format!("cell-{n}"), "alb": [
                    {"listenerArn": format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web{n}/50dc6c495c0c9188/f2f7dc8efc522ab2"),
                     "canaryTargetGroupArn": format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/peer{n}/4b7c9a1e2f3d5a68")}]});
                set(p, "/analysis", json!({"compare": {"periodSeconds": 60, "lookbackSeconds": 36_000,
                    "metrics": [{"name": "latency", "alb": "latency"}],
                    "peers": {"cells": [peer(1), peer(2), peer(3), peer(4)]}}}));
            }),
            "analysis.compare.metrics[0]",
            "600 periods × 4 target groups of the peers is 2400 samples on one side, over the 2000",
        ),
        (
            "comparison of a metric whose autocorrelation is out of range",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "latency", "alb": "latency", "autocorrelation": 0.99}]}}))),
            "analysis.compare.metrics[0].autocorrelation",
            "must be from 0 to 0.95, got 0.99",
        ),
        (
            "comparison of slow requests on a Prometheus query that is not a histogram's selector",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "slowerThan": 0.5, "prometheus": {"query": "sum(up{cluster=\"{{cluster}}\"})", "baseline": "blue"}}]},
                "prometheus": {"url": "http://prometheus.example:9090"}}))),
            "analysis.compare.metrics[0].prometheus.query",
            "does not start with a metric name: with slowerThan the query is the histogram's series selector",
        ),
        (
            "comparison of slow requests on a Prometheus histogram's bucket series",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "slowerThan": 0.5, "prometheus": {"query": "http_seconds_bucket{cluster=\"{{cluster}}\"}", "baseline": "blue"}}]},
                "prometheus": {"url": "http://prometheus.example:9090"}}))),
            "analysis.compare.metrics[0].prometheus.query",
            "name the histogram without `_bucket`",
        ),
        (
            "comparison of slow requests on a Datadog query",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "slowerThan": 0.5, "datadog": {"query": "avg:latency{kube_cluster_name:{{cluster}}}", "baseline": "blue"}}]},
                "datadog": {"site": "datadoghq.com"}}))),
            "analysis.compare.metrics[0].slowerThan",
            "counts requests slower than it with CloudWatch's trimmed count or a Prometheus histogram's buckets",
        ),
        (
            "comparison of slow requests below zero",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": -0.5}]}}))),
            "analysis.compare.metrics[0].slowerThan",
            "must be above 0 and at most 86400, got -0.5",
        ),
        (
            "comparison of slow requests slower than a day",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": 1e300}]}}))),
            "analysis.compare.metrics[0].slowerThan",
            "must be above 0 and at most 86400, got 1000000",
        ),
        (
            "comparison of slow requests with a statistic",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": 0.5, "stat": "p99"}]}}))),
            "analysis.compare.metrics[0].stat",
            "counts requests (TC against SampleCount, or a histogram's buckets): leave `stat` out",
        ),
        (
            "comparison of slow requests beyond a percentile of the baseline that is none",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": {"baseline": "p100"}}]}}))),
            "analysis.compare.metrics[0].slowerThan.baseline",
            "a percentile of the baseline's latency, `p50` to `p99.9`, got \"p100\"",
        ),
        (
            "comparison of slow requests beyond a baseline's average",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": {"baseline": "Average"}}]}}))),
            "analysis.compare.metrics[0].slowerThan.baseline",
            "a percentile of the baseline's latency, `p50` to `p99.9`, got \"Average\"",
        ),
        (
            "comparison of slow requests derived from a baseline's metric that is not ALB latency",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "queue", "slowerThan": {"baseline": "p99"}, "cloudwatch": {"namespace": "Shop",
                 "metricName": "QueueTime", "sideDimension": "Cluster", "canary": "green", "baseline": "blue"}}]}}))),
            "analysis.compare.metrics[0].slowerThan",
            "is derived from the baseline's ALB latency: give `{\"baseline\": \"p99\"}` on an `alb: latency` metric",
        ),
        (
            "comparison of slow requests beyond a threshold of another shape",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": {"baseline": "p99", "times": 2}}]}}))),
            "analysis.compare.metrics[0].slowerThan",
            "seconds (a number), or a percentile of the baseline such as {\"baseline\": \"p99\"}",
        ),
        (
            "comparison of fewer slow requests",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": 0.5, "direction": "decrease"}]}}))),
            "analysis.compare.metrics[0].direction",
            "only more of them is a regression",
        ),
        (
            "a bake extension past a day",
            Box::new(|p| set(p, "/analysis", json!({"extendBakeSeconds": 90_000,
                "compare": {"metrics": [{"name": "latency", "alb": "latency"}]}}))),
            "analysis.extendBakeSeconds",
            "must be from 0 to 86400, got 90000",
        ),
        (
            "a first step that can never gather minSamples periods",
            Box::new(|p| {
                set(p, "/steps/0/bakeSeconds", json!(240));
                set(p, "/analysis", json!({"extendBakeSeconds": 0, "compare": {
                    "metrics": [{"name": "latency", "alb": "latency"}]}}));
            }),
            "steps[0]",
            "bakes 240 s, 0 s more at most for want of data (analysis.extendBakeSeconds), within a lookback of 600 s: 4 period(s) of 60 s, fewer than analysis.compare.minSamples (10)",
        ),
        (
            "freeze calendar that is not a name",
            Box::new(|p| set(p, "/freeze", json!({"calendars": ["release freeze"]}))),
            "freeze.calendars[0]",
            "is not a Change Calendar name",
        ),
        (
            "freeze calendar named twice",
            Box::new(|p| set(p, "/freeze", json!({"calendars": ["release-freeze", "release-freeze"]}))),
            "freeze.calendars[1]",
            "`release-freeze` is named twice",
        ),
        (
            "too many freeze calendars",
            Box::new(|p| set(p, "/freeze", json!({"calendars": ["c-1", "c-2", "c-3", "c-4", "c-5", "c-6"]}))),
            "freeze.calendars",
            "at most 5 Change Calendars, got 6",
        ),
        (
            "gradual rollback that does not end at the baseline",
            Box::new(|p| set(p, "/rollback", json!({"gradual": {"steps": [50, 25]}}))),
            "rollback.gradual.steps[1]",
            "the last step back must be 0, the baseline",
        ),
        (
            "gradual rollback stepping up",
            Box::new(|p| set(p, "/rollback", json!({"gradual": {"steps": [30, 60, 0]}}))),
            "rollback.gradual.steps[1]",
            "must be less than the previous step's 30, got 60",
        ),
        (
            "gradual rollback keeping all of the canary's share",
            Box::new(|p| set(p, "/rollback", json!({"gradual": {"steps": [100, 0]}}))),
            "rollback.gradual.steps[0]",
            "must be from 0 to 99 percent of the canary's share, got 100",
        ),
        (
            "gradual rollback with too many steps",
            Box::new(|p| set(p, "/rollback", json!({"gradual": {"steps": [90, 70, 50, 30, 10, 0], "holdSeconds": 5}}))),
            "rollback.gradual.steps",
            "give 2 to 5 steps back",
        ),
        (
            "gradual rollback holding past the bound",
            Box::new(|p| set(p, "/rollback", json!({"gradual": {"steps": [80, 60, 40, 20, 0], "holdSeconds": 300}}))),
            "rollback.gradual.holdSeconds",
            "the holds of 4 steps back add 1200 s to the way to the baseline; at most 900 s",
        ),
        (
            "critical alarm the plan does not watch",
            Box::new(|p| set(p, "/analysis", json!({"alarms": {"names": ["api-5xx"], "prefixes": ["green-"], "critical": ["blue-5xx"]}}))),
            "analysis.alarms.critical[0]",
            "`blue-5xx` is not one of analysis.alarms.names nor matched by its prefixes",
        ),
        (
            "error budget naming nothing",
            Box::new(|p| set(p, "/errorBudget", json!({}))),
            "errorBudget.slos",
            "name at least one SLO (or a remaining budget in errorBudget.prometheus or .cloudwatch)",
        ),
        (
            "error budget naming an SLO by a path",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["team/checkout"]}))),
            "errorBudget.slos[0]",
            "`team/checkout` is not an SLO name",
        ),
        (
            "error budget naming an SLO twice",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["checkout", "checkout"]}))),
            "errorBudget.slos[1]",
            "`checkout` is named twice",
        ),
        (
            "too many error budgets",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": (0..11).map(|i| format!("slo-{i}")).collect::<Vec<_>>()}))),
            "errorBudget.slos",
            "at most 10 SLOs and remaining-budget queries together, got 11",
        ),
        (
            "error budget minimum of all of it",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["checkout"], "minRemainingPercent": 100}))),
            "errorBudget.minRemainingPercent",
            "must be from 0 to under 100",
        ),
        (
            "rollout share over the whole budget",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["checkout"], "rolloutShare": 150}))),
            "errorBudget.rolloutShare",
            "must be from 0 (off) to 100",
        ),
        (
            "fast burn windows out of range",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["checkout"], "fastBurn": {"longWindowSeconds": 100}}))),
            "errorBudget.fastBurn.longWindowSeconds",
            "must be from 300 to 86400 seconds, got 100",
        ),
        (
            "fast burn short window past the long one",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["checkout"], "fastBurn": {"longWindowSeconds": 600, "shortWindowSeconds": 900}}))),
            "errorBudget.fastBurn.shortWindowSeconds",
            "must be from 60 to the long window's 600 seconds, got 900",
        ),
        (
            "error budget role that is not a role",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["checkout"], "roleArn": "arn:aws:iam::111122223333:user/x"}))),
            "errorBudget.roleArn",
            "is not an IAM role ARN",
        ),
        (
            "a remaining budget from Prometheus without analysis.prometheus",
            Box::new(|p| set(p, "/errorBudget", json!({"prometheus": [{"name": "checkout", "query": "slo:remaining"}]}))),
            "errorBudget.prometheus",
            "is asked of the Prometheus or AMP workspace of analysis.prometheus",
        ),
        (
            "a remaining budget metric with no statistic CloudWatch knows",
            Box::new(|p| set(p, "/errorBudget", json!({"cloudwatch": [{"name": "checkout", "namespace": "Shop", "metricName": "Left", "stat": "Median"}]}))),
            "errorBudget.cloudwatch[0].stat",
            "`Median` is not a statistic",
        ),
        (
            "a remaining budget metric without its namespace",
            Box::new(|p| set(p, "/errorBudget", json!({"cloudwatch": [{"name": "checkout", "namespace": "", "metricName": "Left"}]}))),
            "errorBudget.cloudwatch[0]",
            "give its namespace and metricName",
        ),
        (
            "a remaining budget query that is empty",
            Box::new(|p| set(p, "/errorBudget", json!({"slos": ["checkout"], "prometheus": [{"name": "checkout", "query": " "}]}))),
            "errorBudget.prometheus[0].query",
            "must be a PromQL query of 1 to 2048 bytes",
        ),
        (
            "freeze bound under a minute",
            Box::new(|p| set(p, "/freeze", json!({"maxFrozenSeconds": 30}))),
            "freeze.maxFrozenSeconds",
            "must be from 60 to 604800 seconds",
        ),
        (
            "comparison allowing a decrease above the baseline",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [{"name": "throughput", "alb": "errorRate", "allowedDecrease": 1.5}]}}))),
            "analysis.compare.metrics[0].allowedDecrease",
            "at most 1 (a ratio of the baseline), got 1.5",
        ),
        (
            "comparison with marginal above pass",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"passScore": 70, "marginalScore": 80, "metrics": [{"name": "latency", "alb": "latency"}]}}))),
            "analysis.compare.marginalScore",
            "above passScore 70",
        ),
        (
            "comparison with a bad statistic and confidence",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"confidence": 1.0, "metrics": [{"name": "latency", "alb": "latency", "stat": "median"}]}}))),
            "analysis.compare.metrics[0].stat",
            "`median` is not a statistic",
        ),
        (
            "Prometheus comparison without Prometheus's endpoint",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [{"name": "p99",
                "prometheus": {"query": "max(latency{cluster=\"{{cluster}}\"})", "baseline": "blue"}}]}}))),
            "analysis.compare.metrics[0].prometheus",
            "the plan gives none",
        ),
        (
            "Prometheus comparison without the side's placeholder",
            Box::new(|p| set(p, "/analysis", json!({"prometheus": {"url": "http://prometheus:9090"},
                "compare": {"metrics": [{"name": "p99", "prometheus": {"query": "max(latency)", "baseline": "blue"}}]}}))),
            "analysis.compare.metrics[0].prometheus.query",
            "name the side with `{{cluster}}`",
        ),
        (
            "Prometheus comparison with a statistic",
            Box::new(|p| set(p, "/analysis", json!({"prometheus": {"url": "http://prometheus:9090"},
                "compare": {"metrics": [{"name": "p99", "stat": "p99",
                    "prometheus": {"query": "max(latency{cluster=\"{{cluster}}\"})", "baseline": "blue"}}]}}))),
            "analysis.compare.metrics[0].stat",
            "leave `stat` out",
        ),
        (
            "Prometheus comparison of the cluster with itself",
            Box::new(|p| {
                let cluster = p["cluster"]["name"].clone();
                set(p, "/analysis", json!({"prometheus": {"url": "http://prometheus:9090"},
                    "compare": {"metrics": [{"name": "p99",
                        "prometheus": {"query": "max(latency{cluster=\"{{cluster}}\"})", "baseline": cluster}}]}}));
            }),
            "analysis.compare.metrics[0].prometheus.baseline",
            "compare a side with itself",
        ),
        (
            "Datadog comparison without Datadog's site",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [{"name": "p99",
                "datadog": {"query": "avg:latency{kube_cluster_name:{{cluster}}}", "baseline": "blue"}}]}}))),
            "analysis.compare.metrics[0].datadog",
            "queries where `analysis.datadog` (its `site`; the stack's keys) says, and the plan gives none",
        ),
        (
            "comparison metrics of the same name",
            Box::new(|p| set(p, "/analysis", json!({"compare": {"metrics": [{"name": "latency", "alb": "latency"}, {"name": "latency", "alb": "errorRate"}]}}))),
            "analysis.compare.metrics[1].name",
            "the name of an earlier metric",
        ),
        (
            "missing bake",
            Box::new(|p| remove(p, "/bake")),
            "plan",
            "missing field `bake`",
        ),
        (
            "missing canary target group",
            Box::new(|p| remove(p, "/trafficTargets/0/alb/canaryTargetGroupArn")),
            "trafficTargets[0].alb",
            "missing field `canaryTargetGroupArn`",
        ),
        (
            "bad cluster name",
            Box::new(|p| set(p, "/cluster/name", json!("-green"))),
            "cluster.name",
            "not an EKS cluster name",
        ),
        (
            "bad region",
            Box::new(|p| set(p, "/cluster/region", json!("Virginia"))),
            "cluster.region",
            "not an AWS region",
        ),
        (
            "target health gate with too many looks",
            Box::new(|p| {
                set(
                    p,
                    "/targetHealth",
                    json!({"timeoutSeconds": 600, "intervalSeconds": 1}),
                )
            }),
            "targetHealth.intervalSeconds",
            "use an interval of at least 10 s",
        ),
        (
            "target health gate needing no target",
            Box::new(|p| set(p, "/targetHealth", json!({"minHealthyTargets": 0}))),
            "targetHealth.minHealthyTargets",
            "must be from 1 to 1000, got 0",
        ),
        (
            "unknown target health field",
            Box::new(|p| set(p, "/targetHealth", json!({"healthy": 2}))),
            "targetHealth.healthy",
            "unknown field `healthy`",
        ),
        (
            "approval before a step the plan does not have",
            Box::new(|p| set(p, "/approval", json!({"beforeSteps": [30]}))),
            "approval.beforeSteps[0]",
            "30 is not the weight of one of the plan's steps",
        ),
        (
            "approval timeout over a day",
            Box::new(|p| {
                set(
                    p,
                    "/approval",
                    json!({"beforeSteps": [100], "timeoutSeconds": 90000}),
                )
            }),
            "approval.timeoutSeconds",
            "must be from 1 to 86400 seconds, got 90000",
        ),
        (
            "approval timeout that is not a choice",
            Box::new(|p| set(p, "/approval", json!({"onTimeout": "continue"}))),
            "approval.onTimeout",
            "unknown variant `continue`, expected `rollback` or `promote`",
        ),
        (
            "approval waits that would run too many checks",
            Box::new(|p| {
                set(
                    p,
                    "/approval",
                    json!({"beforeSteps": [25, 50, 100], "timeoutSeconds": 86400}),
                )
            }),
            "steps",
            "approval timeout / interval for steps that wait for one",
        ),
        (
            "promotion bake over a day",
            Box::new(|p| set(p, "/promotion", json!({"bakeSeconds": 90000}))),
            "promotion.bakeSeconds",
            "must be from 1 to 86400 seconds, got 90000",
        ),
        (
            "promotion bake and the last step's own bake",
            Box::new(|p| {
                set(p, "/promotion", json!({"bakeSeconds": 1800}));
                set(p, "/steps/3", json!({"weight": 100, "bakeSeconds": 600}));
            }),
            "promotion.bakeSeconds",
            "steps[3] sets its own bakeSeconds: set one of the two",
        ),
        (
            "a settle period longer than the safety net can wait",
            Box::new(|p| set(p, "/rollback", json!({"settleSeconds": 300}))),
            "rollback.settleSeconds",
            "must be from 0 to 240 seconds (the safety net waits it inside one Lambda invocation), got 300",
        ),
        (
            "a negative settle period",
            Box::new(|p| set(p, "/rollback", json!({"settleSeconds": -1}))),
            "rollback.settleSeconds",
            "must be from 0 to 240 seconds",
        ),
        (
            "retiring the new cluster itself",
            Box::new(|p| {
                set(
                    p,
                    "/retire",
                    json!({"oldCluster": {"name": "api-v129", "region": "us-east-1"}}),
                )
            }),
            "retire.oldCluster",
            "is the new cluster itself",
        ),
        (
            "retiring a Secret with a bad name",
            Box::new(|p| set(p, "/retire", json!({"argocdSecret": "Blue_Cluster"}))),
            "retire.argocdSecret",
            "`Blue_Cluster` is not a Kubernetes Secret name",
        ),
        (
            "evenIfNotOurs without a Secret",
            Box::new(|p| set(p, "/retire", json!({"evenIfNotOurs": true}))),
            "retire.evenIfNotOurs",
            "needs `argocdSecret`",
        ),
        (
            "detaching without an ALB target",
            Box::new(|p| {
                p["trafficTargets"].as_array_mut().unwrap().remove(0);
                set(p, "/retire", json!({"detachStableTargetGroups": true}));
            }),
            "retire.detachStableTargetGroups",
            "no ALB target",
        ),
        (
            "plan is not an object",
            Box::new(|p| *p = json!([1, 2, 3])),
            "plan",
            "must be a JSON object, got an array",
        ),
    ]
}

#[test]
fn the_base_plan_is_valid() {
    let valid = RolloutPlan::parse(base_plan()).expect("base plan is valid");
    let weights: Vec<u8> = valid.steps.iter().map(|s| s.weight).collect();
    assert_eq!(weights, [5, 25, 50, 100]);
    assert_eq!(valid.steps[0].bake_seconds, 900, "a step override wins");
    assert_eq!(valid.steps[1].bake_seconds, 600, "the default applies");
    assert_eq!(valid.steps[1].check_interval_seconds, 30);
    assert_eq!((valid.steps[0].checks, valid.steps[1].checks), (30, 20));
}

#[test]
fn a_vpc_lattice_target_by_ids_or_arns_is_valid_and_keyed_by_ids() {
    for target in [
        lattice(json!({})),
        lattice(json!({
            "serviceIdentifier": LATTICE_SERVICE,
            "listenerIdentifier": format!("{LATTICE_SERVICE}/listener/listener-0123456789abcdef0"),
            "ruleIdentifier": "rule-0123456789abcdef0",
            "canaryTargetGroup": "arn:aws:vpc-lattice:us-east-1:123456789012:targetgroup/tg-0123456789abcdefb",
        })),
    ] {
        let mut plan = base_plan();
        set(&mut plan, "/trafficTargets/1", target);
        let valid = RolloutPlan::parse(plan).expect("valid");
        let lattice = &valid.plan.traffic_targets[1];
        assert_eq!(
            lattice.key(),
            "vpcLattice:svc-0123456789abcdef0/listener-0123456789abcdef0/rule-0123456789abcdef0"
        );
        assert_eq!(lattice.kind().region(), Some("us-east-1"));
    }
}

#[test]
fn a_vpc_lattice_targets_groups_are_judged_by_the_built_in_checks_and_the_comparison() {
    let mut plan = base_plan();
    set(&mut plan, "/trafficTargets", json!([lattice(json!({}))]));
    set(
        &mut plan,
        "/analysis",
        json!({"alb": {"maxErrorRatePercent": 1, "maxLatencySeconds": 0.5},
               "compare": {"metrics": [{"name": "errors", "alb": "errorRate"},
                                       {"name": "latency", "alb": "latency"}]}}),
    );
    let valid = RolloutPlan::parse(plan).expect("valid");
    assert_eq!(
        valid.plan.traffic_targets[0].judged_target_groups(),
        Some(("tg-0123456789abcdefb", "tg-0123456789abcdefa"))
    );
}

#[test]
fn the_promotion_bake_is_the_last_steps_bake() {
    let mut plan = base_plan();
    set(&mut plan, "/promotion", json!({"bakeSeconds": 1800}));
    let valid = RolloutPlan::parse(plan).expect("valid");
    let last = valid.steps[3];
    assert_eq!(
        (last.weight, last.bake_seconds, last.checks),
        (100, 1800, 60)
    );
    assert_eq!(
        valid.steps[2].bake_seconds, 600,
        "other steps keep bake.seconds"
    );
}

/// Each resolved step's weight and how long it waits for an approval (0: it does not).
fn approval_waits(valid: &canary_core::plan::ValidPlan) -> Vec<(u8, u32)> {
    valid
        .steps
        .iter()
        .map(|s| (s.weight, s.approval_timeout_seconds))
        .collect()
}

#[test]
fn a_steps_own_approval_false_wins_over_before_steps() {
    let mut plan = base_plan();
    set(
        &mut plan,
        "/approval",
        json!({"beforeSteps": [50, 100], "timeoutSeconds": 600}),
    );
    set(
        &mut plan,
        "/steps/3",
        json!({"weight": 100, "approval": false}),
    );
    let valid = RolloutPlan::parse(plan).expect("valid");
    let waits = approval_waits(&valid);
    assert_eq!(waits, [(5, 0), (25, 0), (50, 600), (100, 0)]);
}

#[test]
fn approvals_resolve_into_the_steps_that_wait() {
    let mut plan = base_plan();
    set(
        &mut plan,
        "/approval",
        json!({"beforeSteps": [100], "timeoutSeconds": 600, "onTimeout": "promote"}),
    );
    set(
        &mut plan,
        "/steps/1",
        json!({"weight": 25, "approval": true}),
    );
    let valid = RolloutPlan::parse(plan).expect("valid");
    let waits = approval_waits(&valid);
    assert_eq!(waits, [(5, 0), (25, 600), (50, 0), (100, 600)]);
    let resolved = serde_json::to_value(valid.steps[3]).expect("serializes");
    assert_eq!(resolved["onApprovalTimeout"], "promote");

    let mut by_default = base_plan();
    set(
        &mut by_default,
        "/steps/3",
        json!({"weight": 100, "approval": true}),
    );
    let valid = RolloutPlan::parse(by_default).expect("valid");
    let last = serde_json::to_value(valid.steps[3]).expect("serializes");
    assert_eq!(
        (
            last["approvalTimeoutSeconds"].as_u64(),
            last["onApprovalTimeout"].as_str()
        ),
        (Some(3600), Some("rollback"))
    );
}

#[test]
fn every_bad_plan_names_its_field_and_problem() {
    let mut failures = Vec::new();
    for (case, mutate, path, fragment) in bad_plans() {
        let mut plan = base_plan();
        mutate(&mut plan);
        match RolloutPlan::parse(plan) {
            Ok(_) => failures.push(format!("{case}: plan was accepted")),
            Err(errors)
                if !errors
                    .0
                    .iter()
                    .any(|e| e.path == path && e.message.contains(fragment)) =>
            {
                failures.push(format!(
                    "{case}: expected an error at `{path}` containing `{fragment}`, got: {errors}"
                ))
            }
            Err(errors) => assert!(
                errors.to_string().starts_with("invalid rollout plan: "),
                "{case}"
            ),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_step_out_of_range_is_said_once_not_again_as_the_next_steps() {
    for (pointer, value, said, not_said) in [
        (
            "/steps",
            json!([{"weight": 10}, {"weight": 150}, {"weight": 100}]),
            "steps[1].weight",
            "steps[2].weight",
        ),
        (
            "/rollback",
            json!({"gradual": {"steps": [50, -1, 0]}}),
            "rollback.gradual.steps[1]",
            "rollback.gradual.steps[2]",
        ),
    ] {
        let mut plan = base_plan();
        set(&mut plan, pointer, value);
        let errors = RolloutPlan::parse(plan).expect_err("invalid");
        let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&said), "{errors}");
        assert!(!paths.contains(&not_said), "{errors}");
    }
}

#[test]
fn all_problems_are_reported_at_once() {
    let mut plan = base_plan();
    set(&mut plan, "/cluster/region", json!("nowhere"));
    set(&mut plan, "/steps/3", json!({"weight": 90}));
    set(
        &mut plan,
        "/trafficTargets/0/alb/listenerArn",
        json!(LISTENER.replace("listener/", "listener-x/")),
    );
    let errors = RolloutPlan::parse(plan).expect_err("invalid");
    let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
    assert!(paths.contains(&"cluster.region"), "{paths:?}");
    assert!(paths.contains(&"steps[3].weight"), "{paths:?}");
    assert!(
        paths.contains(&"trafficTargets[0].alb.listenerArn"),
        "{paths:?}"
    );
}

#[test]
fn record_names_normalise_like_route53_lists_them() {
    let mut plan = base_plan();
    set(
        &mut plan,
        "/trafficTargets/1/route53/recordName",
        json!("*.Example.COM"),
    );
    let valid = RolloutPlan::parse(plan).expect("valid");
    match &valid.plan.traffic_targets[1] {
        canary_core::TrafficTarget::Route53(r53) => assert_eq!(r53.fqdn(), "\\052.example.com."),
        other => panic!("unexpected target {other:?}"),
    }
}

#[test]
fn a_plan_over_the_size_limit_is_refused_before_anything_else() {
    use canary_core::limits::MAX_PLAN_BYTES;
    let mut plan = base_plan();
    // Padding in a field that is also invalid, and bad steps: the size is reported, alone.
    plan["steps"] = json!([{"weight": 50}, {"weight": 10}]);
    plan["argocd"] = json!({"labels": {"padding": ""}});
    let size_now = serde_json::to_vec(&plan).unwrap().len();
    plan["argocd"]["labels"]["padding"] = json!("x".repeat(MAX_PLAN_BYTES - size_now + 1));
    let size = serde_json::to_vec(&plan).unwrap().len();
    assert_eq!(size, MAX_PLAN_BYTES + 1);
    let err = RolloutPlan::parse(plan).expect_err("too large");
    assert_eq!(err.0.len(), 1, "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "invalid rollout plan: plan: is {size} bytes as compact JSON, more than the limit of {MAX_PLAN_BYTES} bytes \
             (the plan travels in the Step Functions execution state, capped at 256 KiB)"
        )
    );
}

#[test]
fn a_plan_at_the_size_limit_is_parsed() {
    use canary_core::limits::MAX_PLAN_BYTES;
    let mut plan = base_plan();
    plan["argocd"] = json!({"labels": {}});
    let size = |plan: &Value| serde_json::to_vec(plan).unwrap().len();
    // Valid labels (63-character values at most) until the plan is exactly at the cap: empty
    // ones while there is room for one more, then the last bytes in their values.
    let mut keys = Vec::new();
    while MAX_PLAN_BYTES - size(&plan) >= 40 {
        let key = format!("pad-{:05}", keys.len());
        plan["argocd"]["labels"][&key] = json!("");
        keys.push(key);
    }
    for key in keys.iter().rev() {
        let room = MAX_PLAN_BYTES - size(&plan);
        plan["argocd"]["labels"][key] = json!("v".repeat(room.min(63)));
    }
    assert_eq!(size(&plan), MAX_PLAN_BYTES);
    RolloutPlan::parse(plan.clone()).expect("a valid plan at the cap");
    plan["argocd"]["labels"]["one-more"] = json!("");
    let err = RolloutPlan::parse(plan).expect_err("one label over the cap");
    assert_eq!(err.0[0].path, "plan", "{err}");
}

#[test]
fn an_invalid_plan_message_lists_ten_problems_and_counts_the_rest() {
    let mut plan = base_plan();
    plan["steps"] = json!((0..15).map(|_| json!({"weight": 0})).collect::<Vec<_>>());
    let err = RolloutPlan::parse(plan).expect_err("many problems");
    assert!(err.0.len() > 12, "{}", err.0.len());
    let text = err.to_string();
    assert!(
        text.contains("steps[0].weight: must be a percentage from 1 to 100, got 0"),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("; … and {} more", err.0.len() - 10)),
        "{text}"
    );
    assert!(text.len() <= canary_core::limits::MAX_ERROR_MESSAGE_BYTES);
}
