//! cluster-created over the wire: sample EventBridge events (tests/events/) in, executions
//! started in moto's Step Functions, Argo CD Secrets removed in the Kubernetes API test server.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use aws_config::SdkConfig;
use canary_aws::intake_deliveries::delivery_key;
use canary_aws::{
    AwsError, EventPublisher, SdkDeliveryLedger, SdkEks, SdkExecutions, SdkFleetPlans, SdkSecrets,
};
use canary_core::fleet::StoredPlan;
use canary_core::profile::plan_from_profile;
use canary_core::NamedError;
use canary_kube::{AccessDeps, ManagementAccess};
use cluster_canary_tests::{repo_root, KubeServer, Moto, World, ADMIN_TOKEN};
use cluster_created::{handle, Deps, IntakeConfig, IntakeError};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

fn event(name: &str) -> Value {
    let text =
        std::fs::read_to_string(repo_root().join("tests/events").join(name)).expect("sample event");
    serde_json::from_str(&text).expect("sample event is JSON")
}

fn profiles() -> BTreeMap<String, Value> {
    serde_json::from_value(event("profiles.json")).expect("profiles")
}

/// The events the function put, in order (the e2e tests put them on moto's bus).
#[derive(Default)]
struct RecordedEvents(Mutex<Vec<(String, Value)>>);

#[async_trait]
impl EventPublisher for RecordedEvents {
    async fn put_event(&self, detail_type: &str, detail: &Value) -> Result<(), AwsError> {
        self.0
            .lock()
            .expect("events")
            .push((detail_type.to_owned(), detail.clone()));
        Ok(())
    }
}

impl RecordedEvents {
    fn take(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut *self.0.lock().expect("events"))
    }
}

/// The stack's bucket, where the intake records the events it handled.
const INTAKE_EVENTS: &str = "cc-intake-events";

struct Env {
    _moto: Moto,
    kube: KubeServer,
    world: World,
    config: SdkConfig,
    sfn: aws_sdk_sfn::Client,
    /// The stack's fleet state machine, once a test made one.
    fleets: Option<String>,
    events: RecordedEvents,
}

impl Env {
    async fn start() -> Env {
        let moto = Moto::start();
        let world = moto.seed();
        let config = moto.sdk_config().await;
        let kube = KubeServer::start(&[]);
        aws_sdk_secretsmanager::Client::new(&config)
            .create_secret()
            .name("argocd-hub")
            .secret_string(
                json!({"server": kube.server, "caData": kube.ca_data, "token": ADMIN_TOKEN})
                    .to_string(),
            )
            .send()
            .await
            .expect("connection secret");
        aws_sdk_s3::Client::new(&config)
            .create_bucket()
            .bucket(INTAKE_EVENTS)
            .send()
            .await
            .expect("the intake's bucket");
        Env {
            sfn: aws_sdk_sfn::Client::new(&config),
            _moto: moto,
            kube,
            world,
            config,
            fleets: None,
            events: RecordedEvents::default(),
        }
    }

    async fn deliver(&self, event: Value) -> Result<Value, IntakeError> {
        self.deliver_with(&profiles(), event).await
    }

    async fn deliver_with(
        &self,
        profiles: &BTreeMap<String, Value>,
        event: Value,
    ) -> Result<Value, IntakeError> {
        let intake = IntakeConfig {
            state_machine_arn: self.world.state_machine.clone(),
            profiles: profiles.clone(),
            argocd_namespace: "argocd".into(),
            fleet_state_machine_arn: self.fleets.clone(),
            deliveries_bucket: INTAKE_EVENTS.into(),
        };
        let deliveries = SdkDeliveryLedger::new(&self.config, INTAKE_EVENTS);
        let (executions, eks, secrets, plans) = (
            SdkExecutions::new(&self.config),
            SdkEks::new(&self.config),
            SdkSecrets::new(&self.config),
            SdkFleetPlans::new(&self.config),
        );
        let access = ManagementAccess::Secret {
            secret_id: "argocd-hub".into(),
        };
        let credentials = self.config.credentials_provider().expect("credentials");
        let deps = Deps {
            executions: &executions,
            fleets: &executions,
            plans: &plans,
            access: &access,
            aws: AccessDeps {
                eks: &eks,
                secrets: &secrets,
                credentials: &credentials,
                region: "us-east-1",
            },
            events: &self.events,
            deliveries: &deliveries,
        };
        handle(&deps, &intake, event).await
    }

    async fn executions(&self) -> Vec<aws_sdk_sfn::types::ExecutionListItem> {
        self.sfn
            .list_executions()
            .state_machine_arn(&self.world.state_machine)
            .send()
            .await
            .expect("list executions")
            .executions()
            .to_vec()
    }

    /// The plan an execution was started with.
    async fn execution_input(&self, arn: &str) -> Value {
        let input = self
            .sfn
            .describe_execution()
            .execution_arn(arn)
            .send()
            .await
            .expect("describe execution")
            .input()
            .map(str::to_owned)
            .unwrap_or_default();
        serde_json::from_str(&input).expect("input is JSON")
    }

    /// Deletes the intake's record of `event` (as its expiry would).
    async fn forget(&self, event: &Value) {
        let event_id = event["detail"]["eventID"].as_str().unwrap_or_default();
        aws_sdk_s3::Client::new(&self.config)
            .delete_object()
            .bucket(INTAKE_EVENTS)
            .key(delivery_key(event_id))
            .send()
            .await
            .expect("delete the record");
    }

    async fn secrets(&self) -> Api<Secret> {
        self.kube.argocd_secrets().await
    }
}

/// The sample CreateCluster event as another account forwards it to this bus.
fn from_account(account: &str) -> Value {
    let mut forwarded = event("eks-create-cluster.json");
    forwarded["account"] = json!(account);
    forwarded["detail"]["recipientAccountId"] = json!(account);
    forwarded["detail"]["eventID"] = json!(format!("call-in-{account}"));
    let cluster = &mut forwarded["detail"]["responseElements"]["cluster"];
    let arn = cluster["arn"]
        .as_str()
        .expect("an ARN")
        .replace(":123456789012:", &format!(":{account}:"));
    cluster["arn"] = json!(arn);
    forwarded
}

#[tokio::test]
async fn a_cluster_from_another_account_rolls_out_through_the_profile_s_role_or_is_refused() {
    let env = Env::start().await;
    let mut with_role = profiles();
    with_role
        .get_mut("web")
        .expect("web")
        .as_object_mut()
        .expect("object")
        .insert("clusterRoleName".into(), json!("cluster-canary-access"));
    let out = env
        .deliver_with(&with_role, from_account("111122223333"))
        .await
        .expect("started");
    let arn = out["executionArn"]
        .as_str()
        .expect("an execution")
        .to_owned();
    let plan = env.execution_input(&arn).await;
    assert_eq!(
        plan["cluster"]["roleArn"],
        "arn:aws:iam::111122223333:role/cluster-canary-access"
    );
    assert!(
        plan.get("clusterRoleName").is_none(),
        "a profile-only field"
    );

    let error = env
        .deliver(from_account("444455556666"))
        .await
        .expect_err("no role to reach that account");
    assert!(
        error.to_string().contains("profile.clusterRoleName")
            && error.to_string().contains("account 444455556666"),
        "{error}"
    );
    assert_eq!(env.executions().await.len(), 1, "nothing else started");
}

#[tokio::test]
async fn an_opted_in_cluster_starts_one_rollout_with_the_right_plan() {
    let env = Env::start().await;
    let out = env
        .deliver(event("eks-create-cluster.json"))
        .await
        .expect("started");
    assert_eq!(out["action"], "started", "{out}");
    let arn = out["executionArn"].as_str().unwrap().to_owned();
    assert!(
        arn.ends_with(":web-green-"[..].trim_end_matches('-'))
            || arn.contains(":execution:rollout:web-green-"),
        "{arn}"
    );

    let plan = env.execution_input(&arn).await;
    let tags: BTreeMap<String, String> = serde_json::from_value(
        event("eks-create-cluster.json")["detail"]["responseElements"]["cluster"]["tags"].clone(),
    )
    .unwrap();
    let origin = canary_core::profile::Origin {
        cluster: "web-green",
        region: "us-east-1",
        cluster_arn: "arn:aws:eks:us-east-1:123456789012:cluster/web-green",
        own_account: "123456789012",
    };
    let expected = plan_from_profile(&profiles()["web"], &origin, &tags).expect("valid");
    assert_eq!(plan, serde_json::to_value(&expected.plan).unwrap());
    assert_eq!(
        plan["cluster"],
        json!({"name": "web-green", "region": "us-east-1"})
    );
    assert_eq!(
        plan["trafficTargets"][0]["alb"]["canaryTargetGroupArn"],
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web-green/4b7c9a1e2f3d5a68"
    );
    assert_eq!(
        plan["argocd"]["labels"],
        json!({"env": "prod", "fleet": "web"})
    );

    // EventBridge delivers at least once: the same event again does nothing and is no error.
    let again = env
        .deliver(event("eks-create-cluster.json"))
        .await
        .expect("duplicate");
    assert_eq!(again["action"], "duplicate", "{again}");
    assert_eq!(env.executions().await.len(), 1);

    // Without the record (expired, or not writable), the execution's name still starts nothing.
    env.forget(&event("eks-create-cluster.json")).await;
    let unrecorded = env
        .deliver(event("eks-create-cluster.json"))
        .await
        .expect("duplicate");
    assert_eq!(unrecorded["action"], "alreadyStarted", "{unrecorded}");
    assert_eq!(unrecorded["executionArn"], arn.as_str());
    assert_eq!(env.executions().await.len(), 1);
}

#[tokio::test]
async fn a_refusal_delivered_twice_is_said_and_failed_once() {
    let env = Env::start().await;
    let mut refused = event("eks-create-cluster.json");
    refused["detail"]["responseElements"]["cluster"]["tags"]["cluster-canary/profile"] =
        json!("mobile");
    let err = env.deliver(refused.clone()).await.expect_err("refused");
    assert_eq!(err.name().as_str(), "ProfileNotFound", "{err}");
    assert_eq!(env.events.take().len(), 1, "`Rollout Not Started` once");

    // The second delivery (EventBridge's own duplicate) is answered without a word or a failure:
    // the first is in the dead-letter queue and has paged.
    let again = env.deliver(refused.clone()).await.expect("a duplicate");
    assert_eq!(again["action"], "duplicate", "{again}");
    let event_id = refused["detail"]["eventID"].as_str().unwrap_or_default();
    let record = format!("s3://{INTAKE_EVENTS}/{}", delivery_key(event_id));
    assert_eq!(
        again["reason"],
        format!(
            "CloudTrail event {event_id} was delivered before ({record}) and handled then; not \
             acted on or said again"
        )
    );
    assert_eq!(env.events.take(), []);
    assert!(env.executions().await.is_empty());

    // What the record says, for a person who looks.
    let body = aws_sdk_s3::Client::new(&env.config)
        .get_object()
        .bucket(INTAKE_EVENTS)
        .key(delivery_key(event_id))
        .send()
        .await
        .expect("the record")
        .body
        .collect()
        .await
        .expect("its body")
        .into_bytes();
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        body,
        json!({"eventId": event_id, "clusterArn": WEB_GREEN_US})
    );

    // Another event of the same cluster (a CreateCluster after a delete) is its own.
    refused["detail"]["eventID"] = json!("another-event");
    let err = env.deliver(refused).await.expect_err("refused");
    assert_eq!(err.name().as_str(), "ProfileNotFound", "{err}");
    assert_eq!(env.events.take().len(), 1);
}

#[tokio::test]
async fn failed_calls_and_clusters_not_opted_in_are_skipped() {
    let env = Env::start().await;
    let failed = env
        .deliver(event("eks-create-cluster-failed.json"))
        .await
        .expect("skip");
    assert_eq!(failed["action"], "skipped");
    assert_eq!(
        failed["reason"],
        "CreateCluster failed (ResourceInUseException: Cluster already exists with name: web-green); no cluster to roll out"
    );
    let other = env
        .deliver(event("eks-create-cluster-not-opted-in.json"))
        .await
        .expect("skip");
    assert_eq!(
        (other["action"].as_str(), other["reason"].as_str()),
        (
            Some("skipped"),
            Some("cluster is not opted in (no cluster-canary/profile tag)")
        )
    );
    assert!(env.executions().await.is_empty());
}

#[tokio::test]
async fn bad_events_are_named_errors_and_start_nothing() {
    let env = Env::start().await;
    let base = event("eks-create-cluster.json");
    let with = |pointer: &str, value: Value| {
        let mut e = base.clone();
        *e.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}")) = value;
        e
    };
    let without = |field: &str| {
        let mut e = base.clone();
        e.as_object_mut().unwrap().remove(field);
        e
    };
    let mut no_name = base.clone();
    no_name["detail"]["requestParameters"]
        .as_object_mut()
        .unwrap()
        .remove("name");
    no_name["detail"]["responseElements"]["cluster"]
        .as_object_mut()
        .unwrap()
        .remove("name");
    let tag = |key: &str, value: &str| {
        let mut e = base.clone();
        e["detail"]["responseElements"]["cluster"]["tags"][key] = json!(value);
        e
    };
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("not an object", json!(["CreateCluster"]), "InvalidEvent", "invalid event: the event is not a JSON object"),
        ("no detail", without("detail"), "InvalidEvent", "the event has no `detail` object"),
        ("no source", without("source"), "InvalidEvent", "the event is not an EventBridge event: missing field `source`"),
        ("another detail-type", with("/detail-type", json!("EKS Cluster State Change")), "InvalidEvent", "detail-type is `EKS Cluster State Change`"),
        ("another service", with("/detail/eventSource", json!("ec2.amazonaws.com")), "InvalidEvent", "detail.eventSource is `ec2.amazonaws.com`"),
        ("another API call", with("/detail/eventName", json!("CreateNodegroup")), "InvalidEvent", "detail.eventName is `CreateNodegroup`; only CreateCluster and DeleteCluster are handled"),
        ("no API call", with("/detail/eventName", json!(null)), "InvalidEvent", "the event has no detail.eventName"),
        ("no cluster name", no_name, "InvalidEvent", "the event names no cluster"),
        ("a profile that does not exist", tag("cluster-canary/profile", "mobile"), "ProfileNotFound", "asks for profile `mobile`, which is not configured (profiles: web)"),
        (
            "tags that make an invalid plan",
            tag("cluster-canary/canary-target-group", "web-green"),
            "InvalidPlan",
            "the plan built from profile `web` and the tags of cluster web-green is invalid: invalid rollout plan: trafficTargets[0].alb.canaryTargetGroupArn",
        ),
        (
            "an Argo CD label tag that is not a label",
            tag("cluster-canary/argocd-label/env", "prod east"),
            "InvalidPlan",
            "argocd.labels.env: `prod east` is not a Kubernetes label value",
        ),
    ];
    for (case, mut input, name, fragment) in cases {
        // Each case is its own CloudTrail event: a repeated one would be answered `duplicate`.
        if let Some(detail) = input.get_mut("detail").and_then(Value::as_object_mut) {
            detail.insert("eventID".into(), json!(case));
        }
        let err = env.deliver(input).await.expect_err(case);
        assert_eq!(err.name().as_str(), name, "{case}: {err}");
        assert!(
            err.to_string().contains(fragment),
            "{case}: `{err}` lacks `{fragment}`"
        );
        let events = env.events.take();
        if name == "InvalidEvent" {
            // No cluster to name: the dead-letter queue keeps the event itself.
            assert_eq!(events, [], "{case}");
            continue;
        }
        // An opted-in cluster that got no rollout is named, with why.
        let [(detail_type, detail)] = &events[..] else {
            panic!("{case}: one `Rollout Not Started` event, got {events:?}");
        };
        assert_eq!(detail_type, "Rollout Not Started", "{case}");
        assert_eq!(
            detail["cluster"],
            json!({"name": "web-green", "region": "us-east-1"})
        );
        assert_eq!(detail["clusterArn"], WEB_GREEN_US);
        assert_eq!(detail["error"], name, "{case}");
        assert_eq!(detail["eventId"], case, "{case}");
        assert!(
            detail["cause"]
                .as_str()
                .unwrap_or_default()
                .contains(fragment),
            "{case}: {detail}"
        );
    }
    assert!(env.executions().await.is_empty());
}

const WEB_GREEN_US: &str = "arn:aws:eks:us-east-1:123456789012:cluster/web-green";
const WEB_GREEN_EU: &str = "arn:aws:eks:eu-west-1:123456789012:cluster/web-green";

/// A cluster Secret as register-cluster writes it for `cluster_arn`.
fn registered_secret(cluster_arn: &str, server: &str) -> Secret {
    serde_json::from_value(json!({
        "metadata": {
            "name": canary_core::argocd::secret_name(cluster_arn, "web-green"),
            "labels": {"argocd.argoproj.io/secret-type": "cluster", "app.kubernetes.io/managed-by": "cluster-canary"},
            "annotations": {"cluster-canary/cluster-arn": cluster_arn},
        },
        "stringData": {"name": "web-green", "server": server},
    }))
    .unwrap()
}

#[tokio::test]
async fn delete_cluster_removes_only_a_secret_this_project_created_for_that_cluster() {
    let env = Env::start().await;
    let secrets = env.secrets().await;
    let ours = registered_secret(WEB_GREEN_US, "https://web-green.us.example.com");
    let ours_name = ours.metadata.name.clone().unwrap();
    // The same-named cluster in another region keeps its Secret.
    let other_region = registered_secret(WEB_GREEN_EU, "https://web-green.eu.example.com");
    let other_name = other_region.metadata.name.clone().unwrap();
    assert_ne!(ours_name, other_name);
    for secret in [&ours, &other_region] {
        secrets
            .create(&PostParams::default(), secret)
            .await
            .expect("create");
    }
    let out = env
        .deliver(event("eks-delete-cluster.json"))
        .await
        .expect("deregister");
    assert_eq!(out["action"], "deregistered");
    assert_eq!(
        out["reason"],
        format!("Argo CD Secret argocd/{ours_name}: deleted")
    );
    assert!(secrets.get_opt(&ours_name).await.unwrap().is_none());
    assert!(
        secrets.get_opt(&other_name).await.unwrap().is_some(),
        "the eu-west-1 web-green keeps its Secret"
    );
    let again = env
        .deliver(event("eks-delete-cluster.json"))
        .await
        .expect("already gone");
    assert_eq!(
        again["reason"],
        format!("Argo CD Secret argocd/{ours_name}: absent")
    );

    // A Secret of that name without our label, or for another ARN, is not ours.
    let mut foreign = ours.clone();
    foreign
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .remove("app.kubernetes.io/managed-by");
    let mut other_arn = ours.clone();
    other_arn.metadata.annotations = Some(BTreeMap::from([(
        "cluster-canary/cluster-arn".to_owned(),
        WEB_GREEN_EU.to_owned(),
    )]));
    for not_ours in [foreign, other_arn] {
        secrets
            .create(&PostParams::default(), &not_ours)
            .await
            .expect("create");
        let err = env
            .deliver(event("eks-delete-cluster.json"))
            .await
            .expect_err("not ours");
        assert_eq!(err.name().as_str(), "SecretNotOwned");
        assert!(
            secrets.get_opt(&ours_name).await.unwrap().is_some(),
            "left untouched"
        );
        secrets
            .delete(&ours_name, &Default::default())
            .await
            .expect("clean up");
    }
}

#[tokio::test]
async fn a_cell_of_a_running_fleet_gets_no_rollout_of_its_own() {
    let mut env = Env::start().await;
    // A fleet state machine whose executions wait (the fleet's cells are not run here).
    let fleets = env
        .sfn
        .create_state_machine()
        .name("cluster-canary-fleet")
        .role_arn("arn:aws:iam::123456789012:role/states")
        .definition(r#"{"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": true}}}"#)
        .send()
        .await
        .expect("fleet state machine")
        .state_machine_arn()
        .to_owned();
    env.fleets = Some(fleets.clone());
    let mut fleet: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("examples/fleets/web-fleet.json"))
            .expect("example"),
    )
    .expect("JSON");
    fleet["cells"][2]["values"]["cluster"] = json!({"name": "web-green", "region": "us-east-1"});
    // Started as a large fleet is: its plan stored in S3, its input the reference.
    aws_sdk_s3::Client::new(&env.config)
        .create_bucket()
        .bucket("cc-fleet-plans")
        .send()
        .await
        .expect("bucket");
    let bytes = serde_json::to_vec(&fleet).expect("JSON");
    let stored = StoredPlan::of("cc-fleet-plans", "web-eks-1-34", &bytes);
    SdkFleetPlans::new(&env.config)
        .put_plan(&stored, bytes)
        .await
        .expect("plan stored");
    let running = env
        .sfn
        .start_execution()
        .state_machine_arn(&fleets)
        .name("web-1-34")
        .input(json!({ "storedPlan": stored }).to_string())
        .send()
        .await
        .expect("fleet started")
        .execution_arn()
        .to_owned();

    let out = env
        .deliver(event("eks-create-cluster.json"))
        .await
        .expect("handled");
    assert_eq!(out["action"], "skipped", "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains("is cell `use1-c` of fleet `web-eks-1-34`") && reason.contains(&running),
        "{reason}"
    );
    assert!(env.executions().await.is_empty(), "no rollout started");

    // The same cluster in another region is not that cell.
    let mut elsewhere = event("eks-create-cluster.json");
    elsewhere["detail"]["awsRegion"] = json!("eu-west-1");
    elsewhere["region"] = json!("eu-west-1");
    elsewhere["detail"]["eventID"] = json!("another-call");
    let arn = elsewhere["detail"]["responseElements"]["cluster"]["arn"]
        .as_str()
        .unwrap()
        .replace("us-east-1", "eu-west-1");
    elsewhere["detail"]["responseElements"]["cluster"]["arn"] = json!(arn);
    let reason = env
        .deliver(elsewhere)
        .await
        .map(|out| out["reason"].clone());
    assert!(
        !format!("{reason:?}").contains("of fleet"),
        "another region's cluster is no cell: {reason:?}"
    );
    // A fleet that ended still names the cell: the profile's rollout would move other
    // traffic than the cell's.
    env.sfn
        .stop_execution()
        .execution_arn(&running)
        .send()
        .await
        .expect("stopped");
    let before = env.executions().await.len();
    let mut again = event("eks-create-cluster.json");
    again["detail"]["eventID"] = json!("after-the-fleet");
    let out = env.deliver(again).await.expect("handled");
    assert_eq!(out["action"], "skipped", "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains("is cell `use1-c` of fleet `web-eks-1-34`, which ran as")
            && reason.contains("(ABORTED): the cell rolls out its own traffic, not the profile's"),
        "{reason}"
    );
    assert_eq!(env.executions().await.len(), before, "no rollout started");
}
