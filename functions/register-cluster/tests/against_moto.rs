//! register-cluster over the wire: EKS and Secrets Manager in moto, Argo CD's namespace in the
//! Kubernetes API test server (HTTPS with its own CA, bearer tokens), reached through the
//! function's real kube client.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_config::SdkConfig;
use canary_aws::{AwsError, ClusterInfo, EksApi, SdkEks, SdkSecrets};
use canary_core::{ErrorName, NamedError};
use canary_kube::argocd::{ArgoCdApi, ClusterSecrets};
use canary_kube::{AccessDeps, ManagementAccess};
use cluster_canary_tests::{create_cluster, KubeServer, Moto, ADMIN_TOKEN, LIMITED_TOKEN};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use register_cluster::{handle, Deps, RegisterError};
use serde_json::{json, Value};

const ROLE: &str = "arn:aws:iam::123456789012:role/argocd-deployer";

struct Env {
    moto: Moto,
    kube: KubeServer,
    config: SdkConfig,
    eks: SdkEks,
    secrets: SdkSecrets,
    green: ClusterInfo,
    /// The Secret's name for `green`, from its ARN.
    green_secret: String,
}

impl Env {
    async fn start(kube_args: &[&str]) -> Env {
        let moto = Moto::start();
        let config = moto.sdk_config().await;
        let kube = KubeServer::start(kube_args);
        create_cluster(&config, "green", "us-east-1").await;
        let eks = SdkEks::new(&config);
        let green = eks.describe_cluster(None, "green").await.expect("describe");
        let env = Env {
            green_secret: canary_core::argocd::secret_name(&green.arn, "green"),
            moto,
            secrets: SdkSecrets::new(&config),
            eks,
            green,
            config,
            kube,
        };
        env.connection_secret("argocd-hub", ADMIN_TOKEN).await;
        env
    }

    /// The Secrets Manager secret the function reads in `secret` mode.
    async fn connection_secret(&self, id: &str, token: &str) {
        aws_sdk_secretsmanager::Client::new(&self.config)
            .create_secret()
            .name(id)
            .secret_string(
                json!({"server": self.kube.server, "caData": self.kube.ca_data, "token": token})
                    .to_string(),
            )
            .send()
            .await
            .expect("create secret");
    }

    async fn call_with(
        &self,
        eks: &dyn EksApi,
        secret_id: &str,
        input: Value,
    ) -> Result<Value, RegisterError> {
        let access = ManagementAccess::Secret {
            secret_id: secret_id.to_owned(),
        };
        let credentials = self.config.credentials_provider().expect("credentials");
        let deps = Deps {
            access: &access,
            aws: AccessDeps {
                eks,
                secrets: &self.secrets,
                credentials: &credentials,
                region: "us-east-1",
            },
            cluster_accounts: &self.eks,
            access_entries: &self.eks,
            cluster_health: &self.eks,
        };
        handle(&deps, input).await
    }

    async fn call(&self, operation: &str, plan: &Value) -> Result<Value, RegisterError> {
        self.call_with(
            &self.eks,
            "argocd-hub",
            json!({"operation": operation, "plan": plan}),
        )
        .await
    }

    /// `appsStatus` with the previous poll's `stablePolls`.
    async fn apps(&self, argocd: Value, stable_polls: u32) -> Value {
        self.call_with(
            &self.eks,
            "argocd-hub",
            json!({"operation": "appsStatus", "plan": plan(argocd), "stablePolls": stable_polls}),
        )
        .await
        .expect("apps status")
    }

    async fn application_sets(&self) -> Api<kube::api::DynamicObject> {
        let client = self.kube.admin_client().await;
        Api::namespaced_with(
            client,
            "argocd",
            &canary_kube::argocd::argo_resource("ApplicationSet"),
        )
    }

    async fn create_application_set(&self, name: &str, annotations: Value, generators: Value) {
        let set: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"generators": generators, "template": {"metadata": {"name": "{{name}}"}, "spec": {}}},
        }))
        .expect("an ApplicationSet");
        self.application_sets()
            .await
            .create(&PostParams::default(), &set)
            .await
            .expect("create ApplicationSet");
    }

    /// The Argo CD namespace as an administrator sees it.
    async fn secrets_api(&self) -> Api<Secret> {
        self.kube.argocd_secrets().await
    }

    async fn applications(&self) -> Api<kube::api::DynamicObject> {
        let client = self.kube.admin_client().await;
        Api::namespaced_with(
            client,
            "argocd",
            &canary_kube::argocd::argo_resource("Application"),
        )
    }
}

fn plan(argocd: Value) -> Value {
    let tg = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup";
    json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": [{"alb": {
            "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2",
            "stableTargetGroupArn": format!("{tg}/blue/73e2d6bc24d8a067"),
            "canaryTargetGroupArn": format!("{tg}/green/4b7c9a1e2f3d5a68"),
        }}],
        "steps": [{"weight": 50}, {"weight": 100}],
        "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        "argocd": argocd,
    })
}

/// Someone else (field manager `kubectl`) applies `metadata` fields to the Secret `name`;
/// `force` takes them over from whoever owns them.
async fn kubectl_applies(secrets: &Api<Secret>, name: &str, metadata: Value, force: bool) {
    let mut metadata = metadata;
    metadata["name"] = json!(name);
    let params = PatchParams::apply("kubectl");
    let params = if force { params.force() } else { params };
    let theirs = json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata});
    secrets
        .patch(name, &params, &Patch::Apply(&theirs))
        .await
        .expect("their apply");
}

fn decoded(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8(v.0).expect("utf-8")))
        .collect()
}

#[tokio::test]
async fn register_writes_exactly_the_secret_argo_cd_expects_and_is_idempotent() {
    let env = Env::start(&[]).await;
    let plan = plan(json!({
        "labels": {"env": "prod", "example.com/fleet": "web"},
        "roleArn": ROLE, "project": "platform", "namespaces": ["apps", "web"], "clusterResources": true,
    }));
    let out = env.call("register", &plan).await.expect("register");
    let endpoint = env.green.endpoint.clone().unwrap();
    let server = endpoint.trim_end_matches('/').to_owned();
    assert_eq!(
        out,
        json!({"namespace": "argocd", "secretName": env.green_secret.as_str(), "server": server, "outcome": "created",
               "appsWait": {"intervalSeconds": 30, "maxPolls": 60}})
    );

    let secrets = env.secrets_api().await;
    let secret = secrets
        .get(env.green_secret.as_str())
        .await
        .expect("the Secret exists");
    assert_eq!(
        secret.metadata.labels.clone().unwrap(),
        BTreeMap::from([
            (
                "argocd.argoproj.io/secret-type".to_owned(),
                "cluster".to_owned()
            ),
            (
                "app.kubernetes.io/managed-by".to_owned(),
                "cluster-canary".to_owned()
            ),
            ("env".to_owned(), "prod".to_owned()),
            ("example.com/fleet".to_owned(), "web".to_owned()),
        ])
    );
    let data = decoded(&secret);
    assert_eq!(
        data.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "clusterResources",
            "config",
            "name",
            "namespaces",
            "project",
            "server"
        ]
    );
    assert_eq!(data["name"], "green");
    assert_eq!(data["server"], server);
    assert!(!data["server"].ends_with('/'));
    assert_eq!(data["project"], "platform");
    assert_eq!(data["namespaces"], "apps,web");
    assert_eq!(data["clusterResources"], "true");
    let config: Value = serde_json::from_str(&data["config"]).expect("config is JSON");
    assert_eq!(
        config,
        json!({
            "awsAuthConfig": {"clusterName": "green", "roleARN": ROLE},
            "tlsClientConfig": {"insecure": false, "caData": env.green.ca_data.clone().unwrap()},
        })
    );
    let managers: Vec<_> = secret
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["cluster-canary"]);

    let version = secret.metadata.resource_version;
    let again = env.call("register", &plan).await.expect("register again");
    assert_eq!(again["outcome"], "unchanged");
    assert_eq!(
        secrets
            .get(env.green_secret.as_str())
            .await
            .unwrap()
            .metadata
            .resource_version,
        version
    );

    // A label someone else adds (Argo CD labels the clusters it knows) is not ours: a
    // re-register is still unchanged and writes nothing.
    let patch = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": env.green_secret, "labels": {"argocd.argoproj.io/auto-label-cluster-info": "true"}}});
    secrets
        .patch(
            env.green_secret.as_str(),
            &kube::api::PatchParams::apply("argocd-application-controller"),
            &kube::api::Patch::Apply(&patch),
        )
        .await
        .expect("someone else labels the Secret");
    let version = secrets
        .get(env.green_secret.as_str())
        .await
        .unwrap()
        .metadata
        .resource_version;
    let again = env.call("register", &plan).await.expect("register again");
    assert_eq!(again["outcome"], "unchanged");
    assert_eq!(
        secrets
            .get(env.green_secret.as_str())
            .await
            .unwrap()
            .metadata
            .resource_version,
        version
    );

    // A changed label is an update of the same Secret, by the same field manager.
    let mut relabelled = plan.clone();
    relabelled["argocd"]["labels"]["env"] = json!("staging");
    assert_eq!(
        env.call("register", &relabelled).await.expect("update")["outcome"],
        "updated"
    );
    let labels = secrets
        .get(env.green_secret.as_str())
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap();
    assert_eq!(labels["env"], "staging");
}

#[tokio::test]
async fn a_minimal_plan_registers_without_role_and_optional_keys() {
    let env = Env::start(&[]).await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    let data = decoded(
        &env.secrets_api()
            .await
            .get(env.green_secret.as_str())
            .await
            .unwrap(),
    );
    assert_eq!(
        data.keys().map(String::as_str).collect::<Vec<_>>(),
        ["config", "name", "server"]
    );
    let config: Value = serde_json::from_str(&data["config"]).unwrap();
    assert_eq!(config["awsAuthConfig"], json!({"clusterName": "green"}));
}

#[tokio::test]
async fn a_secret_this_project_did_not_create_is_refused_and_untouched() {
    let env = Env::start(&[]).await;
    let secrets = env.secrets_api().await;
    let foreign: Secret = serde_json::from_value(json!({
        "metadata": {"name": env.green_secret.as_str(), "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": "green", "server": "https://hand-made.example.com"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &foreign)
        .await
        .expect("create foreign Secret");
    let before = secrets.get(env.green_secret.as_str()).await.unwrap();

    let err = env
        .call("register", &plan(json!({})))
        .await
        .expect_err("must refuse");
    assert_eq!(err.name().as_str(), "SecretNotOwned");
    assert_eq!(
        err.to_string(),
        format!(
            "Secret argocd/{} exists and was not created by cluster-canary \
             (no app.kubernetes.io/managed-by=cluster-canary label); it was left untouched",
            env.green_secret
        )
    );
    let err = env
        .call("deregister", &plan(json!({})))
        .await
        .expect_err("must refuse");
    assert_eq!(err.name().as_str(), "SecretNotOwned");
    assert_eq!(
        secrets.get(env.green_secret.as_str()).await.unwrap(),
        before
    );
}

#[tokio::test]
async fn a_second_secret_for_the_same_server_is_refused() {
    let env = Env::start(&[]).await;
    let secrets = env.secrets_api().await;
    let server = env.green.endpoint.clone().unwrap();
    let other: Secret = serde_json::from_value(json!({
        "metadata": {"name": "green-by-hand", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": "green", "server": format!("{server}/")},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &other)
        .await
        .expect("create");
    let err = env
        .call("register", &plan(json!({})))
        .await
        .expect_err("must refuse");
    assert_eq!(err.name().as_str(), "DuplicateClusterServer");
    assert!(
        err.to_string()
            .starts_with("Secret argocd/green-by-hand already registers server https://"),
        "{err}"
    );
    assert!(
        secrets
            .get_opt(env.green_secret.as_str())
            .await
            .unwrap()
            .is_none(),
        "nothing was written"
    );
}

#[tokio::test]
async fn fields_another_manager_owns_are_a_conflict() {
    let env = Env::start(&[]).await;
    env.call("register", &plan(json!({"labels": {"env": "prod"}})))
        .await
        .expect("register");
    // Someone applies the same label with another value under their own field manager.
    let secrets = env.secrets_api().await;
    kubectl_applies(
        &secrets,
        &env.green_secret,
        json!({"labels": {"env": "qa"}}),
        true,
    )
    .await;
    let err = env
        .call("register", &plan(json!({"labels": {"env": "prod"}})))
        .await
        .expect_err("conflict");
    assert_eq!(err.name().as_str(), "KubeConflict");
    assert!(
        err.to_string().contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\": .metadata.labels.env"
        ),
        "{err}"
    );
}

/// The GitOps weight annotation as the Kubernetes API (its real field manager) treats it: a
/// step's write over a value other than the one it expects is refused naming who set it, and
/// nothing is written; over the value it expects it takes the annotation over from whoever set
/// it; a write since its read is a 409 (the apply's resourceVersion precondition); a rollback's
/// forces.
#[tokio::test]
async fn a_weight_annotation_is_taken_over_only_while_it_reads_what_the_step_expects() {
    use canary_kube::AnnotationWrite;
    const WEIGHT: &str = "cluster-canary.io/weight";
    let env = Env::start(&[]).await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    let secrets = env.secrets_api().await;
    kubectl_applies(
        &secrets,
        &env.green_secret,
        json!({"annotations": {WEIGHT: "70"}}),
        false,
    )
    .await;
    let managers = |secret: &Secret| -> Vec<String> {
        secret
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|m| m.manager.clone())
            .collect()
    };
    let argocd = canary_kube::argocd::KubeArgoCd::new(env.kube.admin_client().await, "argocd");
    let err = argocd
        .annotate_secret(
            &env.green_secret,
            WEIGHT,
            "10",
            AnnotationWrite::IfUnchanged { expected: "0" },
        )
        .await
        .expect_err("a step never overwrites a value it did not expect");
    assert_eq!(err.error_name().as_str(), "KubeConflict", "{err}");
    assert!(
        err.to_string().contains(
            "the annotation reads \"70\" (set by \"kubectl\" (Apply)), not \"0\" as this rollout left it"
        ),
        "{err}"
    );
    let before = secrets.get(env.green_secret.as_str()).await.expect("get");
    assert_eq!(
        before.metadata.annotations.clone().unwrap_or_default()[WEIGHT],
        "70"
    );

    argocd
        .annotate_secret(
            &env.green_secret,
            WEIGHT,
            "10",
            AnnotationWrite::IfUnchanged { expected: "70" },
        )
        .await
        .expect("the value it expects is taken over");
    let now = secrets.get(env.green_secret.as_str()).await.expect("get");
    assert_eq!(
        now.metadata.annotations.clone().unwrap_or_default()[WEIGHT],
        "10"
    );
    assert!(
        !managers(&now).contains(&"kubectl".to_owned()),
        "{:?}",
        managers(&now)
    );

    // A stale read: an apply whose resourceVersion is not the current one is refused.
    let stale = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": env.green_secret.as_str(), "annotations": {WEIGHT: "20"},
        "resourceVersion": before.metadata.resource_version}});
    let refused = secrets
        .patch(
            env.green_secret.as_str(),
            &PatchParams::apply("cluster-canary-weights").force(),
            &Patch::Apply(&stale),
        )
        .await
        .expect_err("a precondition on an older version");
    assert!(
        refused.to_string().contains("the object has been modified"),
        "{refused}"
    );

    argocd
        .annotate_secret(&env.green_secret, WEIGHT, "0", AnnotationWrite::Force)
        .await
        .expect("a rollback forces");
    let now = secrets.get(env.green_secret.as_str()).await.expect("get");
    assert_eq!(
        now.metadata.annotations.clone().unwrap_or_default()[WEIGHT],
        "0"
    );
    assert!(
        managers(&now).contains(&"cluster-canary-weights".to_owned()),
        "{:?}",
        managers(&now)
    );

    // Anyone's value is repeated cut, as the message travels in the rollout's cause.
    let long = "7".repeat(5000);
    kubectl_applies(
        &secrets,
        &env.green_secret,
        json!({"annotations": {WEIGHT: long}}),
        true,
    )
    .await;
    let err = argocd
        .annotate_secret(
            &env.green_secret,
            WEIGHT,
            "10",
            AnnotationWrite::IfUnchanged { expected: "0" },
        )
        .await
        .expect_err("not the value it expects");
    let message = err.to_string();
    assert!(
        message.contains(&format!("reads \"{}…\"", "7".repeat(61))),
        "{message}"
    );
    assert!(message.len() < 400, "{message}");
}

#[tokio::test]
async fn apps_are_ready_once_enough_of_them_are_synced_and_healthy() {
    let env = Env::start(&["--argocd-sim", "healthy", "--apps-per-cluster", "2"]).await;
    let status = env
        .call("appsStatus", &plan(json!({})))
        .await
        .expect("apps status");
    assert_eq!(
        (status["ready"].as_bool(), status["reason"].as_str()),
        (
            Some(false),
            Some("0 of at least 1 Applications target the cluster")
        )
    );

    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    // Ready takes `stableChecks` (default 2) looks in a row.
    let status = env.apps(json!({}), 0).await;
    assert_eq!(status["ready"], false, "{status}");
    assert_eq!(status["stablePolls"], 1);
    assert!(
        status["reason"]
            .as_str()
            .is_some_and(|r| r.ends_with("; 1 of 2 looks in a row")),
        "{status}"
    );
    let status = env.apps(json!({}), 1).await;
    assert_eq!(status["ready"], true, "{status}");
    assert_eq!(status["stablePolls"], 2);
    assert_eq!(status["apps"].as_array().unwrap().len(), 2);
    assert_eq!(status["appCount"], 2);
    assert_eq!(
        status["apps"][0],
        json!({"name": format!("guestbook-{}", env.green_secret), "sync": "Synced", "health": "Healthy"})
    );

    let status = env.apps(json!({"minApps": 3}), 5).await;
    assert_eq!(
        (status["ready"].as_bool(), status["reason"].as_str()),
        (
            Some(false),
            Some("2 of at least 3 Applications target the cluster")
        )
    );
    assert_eq!(
        status["stablePolls"], 0,
        "a poll not ready starts the count again"
    );

    // An app that targets the cluster by name counts too, and holds readiness while Degraded.
    let by_name: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "billing"},
        "spec": {"destination": {"name": "green", "namespace": "billing"}},
        "status": {"sync": {"status": "Synced"}, "health": {"status": "Degraded"}},
    }))
    .unwrap();
    env.applications()
        .await
        .create(&PostParams::default(), &by_name)
        .await
        .expect("create app");
    let status = env
        .call("appsStatus", &plan(json!({"minApps": 3})))
        .await
        .expect("apps status");
    assert_eq!(
        (status["ready"].as_bool(), status["reason"].as_str()),
        (Some(false), Some("not ready: billing is Synced/Degraded"))
    );
}

#[tokio::test]
async fn every_application_set_that_selects_the_cluster_must_have_generated_its_apps() {
    let env = Env::start(&["--argocd-sim", "healthy", "--healthy-after", "0"]).await;
    let web = json!({"fleet": "web"});
    env.create_application_set(
        "web",
        json!({}),
        json!([{"clusters": {"selector": {"matchLabels": web}}}]),
    )
    .await;
    env.create_application_set(
        "per-team",
        json!({}),
        json!([{"matrix": {"generators": [
            {"list": {"elements": [{"app": "ledger"}, {"app": "search"}]}},
            {"clusters": {"selector": {"matchExpressions": [
                {"key": "fleet", "operator": "In", "values": ["web", "api"]},
                {"key": "canary", "operator": "DoesNotExist"}]}}}
        ]}}]),
    )
    .await;
    env.create_application_set(
        "api-only",
        json!({}),
        json!([{"clusters": {"selector": {"matchLabels": {"fleet": "api"}}}}]),
    )
    .await;
    env.create_application_set(
        "stuck",
        json!({"kube-api-test-server/generate": "false"}),
        json!([{"clusters": {"selector": {"matchExpressions": [{"key": "fleet", "operator": "Exists"}]}}}]),
    )
    .await;
    let argocd = json!({"labels": web, "minApps": 1, "stableChecks": 1});
    env.call("register", &plan(argocd.clone()))
        .await
        .expect("register");

    let status = env.apps(argocd.clone(), 0).await;
    assert_eq!(status["ready"], false, "{status}");
    assert_eq!(
        status["applicationSets"],
        json!(["per-team", "stuck", "web"]),
        "api-only does not select the cluster"
    );
    assert_eq!(status["appCount"], 3, "web, and per-team's two: {status}");
    assert_eq!(
        status["reason"],
        "no Application for the cluster yet from ApplicationSet stuck"
    );

    env.application_sets()
        .await
        .delete("stuck", &Default::default())
        .await
        .expect("delete stuck");
    let status = env.apps(argocd.clone(), 0).await;
    assert_eq!(status["ready"], true, "{status}");
    assert_eq!(
        status["reason"],
        "all 3 Applications are Synced and Healthy (from ApplicationSets per-team, web)"
    );

    // A selector Argo CD cannot use (an operator the CRD accepts, Argo CD refuses): Argo CD
    // generates nothing from that set, for any cluster, so it cannot hold this one back. It is
    // named in the reason, and not waited for.
    env.create_application_set(
        "broken",
        json!({}),
        json!([{"clusters": {"selector": {"matchExpressions": [{"key": "fleet", "operator": "Equals", "values": ["web"]}]}}}]),
    )
    .await;
    let status = env.apps(argocd.clone(), 0).await;
    assert_eq!(status["ready"], true, "{status}");
    assert_eq!(
        status["reason"],
        "all 3 Applications are Synced and Healthy (from ApplicationSets per-team, web) (ignored, Argo CD \
         generates nothing from it: ApplicationSet broken: matchExpressions[0]: unknown operator `Equals` \
         (In, NotIn, Exists, DoesNotExist))"
    );

    // A set whose post-selector (the generator's own `selector`) drops the cluster generates
    // nothing for it, and is not waited for; one that keeps it is.
    for (name, cluster, waited) in [
        ("post-dropped", "blue", false),
        ("post-kept", "green", true),
    ] {
        env.create_application_set(
            name,
            json!({}),
            json!([{"clusters": {}, "selector": {"matchLabels": {"name": cluster}}}]),
        )
        .await;
        let status = env.apps(argocd.clone(), 0).await;
        let sets: Vec<&str> = status["applicationSets"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(sets.contains(&name), waited, "{status}");
    }
}

#[tokio::test]
async fn without_the_application_set_resource_min_apps_decides_and_the_reason_says_so() {
    let env = Env::start(&[
        "--argocd-sim",
        "healthy",
        "--healthy-after",
        "0",
        "--without-applicationsets",
    ])
    .await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    let status = env.apps(json!({"stableChecks": 1}), 0).await;
    assert_eq!(status["ready"], true, "{status}");
    assert!(
        status["reason"].as_str().is_some_and(|r| r
            .starts_with("all 2 Applications are Synced and Healthy (ApplicationSets not read: ")
            && r.ends_with("; only minApps counts)")),
        "{status}"
    );
}

#[tokio::test]
async fn stale_apps_are_asked_to_refresh_only_when_the_plan_says_so() {
    let env = Env::start(&["--argocd-sim", "degraded", "--healthy-after", "0"]).await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    let refresh = |app: &kube::api::DynamicObject| {
        app.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("argocd.argoproj.io/refresh").cloned())
    };
    env.apps(json!({}), 0).await;
    let apps = env
        .applications()
        .await
        .list(&Default::default())
        .await
        .expect("list");
    assert!(apps.items.iter().all(|app| refresh(app).is_none()));

    let status = env.apps(json!({"refreshStaleApps": true}), 0).await;
    assert_eq!(status["ready"], false);
    let apps = env
        .applications()
        .await
        .list(&Default::default())
        .await
        .expect("list");
    assert!(!apps.items.is_empty());
    assert!(
        apps.items
            .iter()
            .all(|app| refresh(app).as_deref() == Some("normal")),
        "every Degraded app was asked to refresh"
    );
}

#[tokio::test]
async fn degraded_apps_are_never_ready() {
    let env = Env::start(&["--argocd-sim", "degraded"]).await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    let status = env
        .call("appsStatus", &plan(json!({})))
        .await
        .expect("apps status");
    assert_eq!(status["ready"], false);
    assert!(
        status["reason"].as_str().unwrap().contains(&format!(
            "guestbook-{} is Synced/Degraded",
            env.green_secret
        )),
        "{status}"
    );
}

#[tokio::test]
async fn deregister_deletes_our_secret_and_already_gone_is_success() {
    let env = Env::start(&["--argocd-sim", "healthy"]).await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    assert_eq!(
        env.call("deregister", &plan(json!({})))
            .await
            .expect("deregister")["outcome"],
        "deleted"
    );
    assert!(env
        .secrets_api()
        .await
        .get_opt(env.green_secret.as_str())
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        env.call("deregister", &plan(json!({})))
            .await
            .expect("again")["outcome"],
        "absent"
    );
}

#[tokio::test]
async fn every_kubernetes_request_says_who_acts_in_the_audit_log() {
    let audit = std::env::temp_dir().join(format!(
        "cluster-canary-audit-{}-{}.jsonl",
        std::process::id(),
        line!()
    ));
    let _ = std::fs::remove_file(&audit);
    let env = Env::start(&[
        "--argocd-sim",
        "healthy",
        "--audit-log",
        audit.to_str().unwrap(),
    ])
    .await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    env.call("deregister", &plan(json!({})))
        .await
        .expect("deregister");
    let ours: Vec<Value> = std::fs::read_to_string(&audit)
        .expect("the audit log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    assert!(ours.iter().any(|r| r["verb"] == "DELETE"), "{ours:?}");
    for request in &ours {
        assert_eq!(
            request["userAgent"],
            format!("cluster-canary/{}", env!("CARGO_PKG_VERSION")),
            "{request}"
        );
    }
    let _ = std::fs::remove_file(&audit);
}

#[tokio::test]
async fn a_secret_re_created_between_the_read_and_the_delete_is_never_deleted() {
    let env = Env::start(&["--argocd-sim", "healthy"]).await;
    env.call("register", &plan(json!({})))
        .await
        .expect("register");
    let argocd = canary_kube::argocd::KubeArgoCd::new(env.kube.admin_client().await, "argocd");
    let read = argocd
        .get_secret(&env.green_secret)
        .await
        .expect("get")
        .expect("it exists");
    // Someone deletes it and registers the cluster again, in between.
    let secrets = env.secrets_api().await;
    secrets
        .delete(env.green_secret.as_str(), &Default::default())
        .await
        .expect("deleted by someone else");
    env.call("register", &plan(json!({})))
        .await
        .expect("register again");
    let error = argocd
        .delete_secret(&read.name, read.uid.as_deref())
        .await
        .expect_err("the uid read is not the Secret's now");
    assert_eq!(error.error_name().as_str(), "KubeConflict", "{error}");
    assert!(error.to_string().contains("Precondition failed"), "{error}");
    assert!(secrets
        .get_opt(env.green_secret.as_str())
        .await
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn kubernetes_permission_errors_are_named_and_carry_the_api_message() {
    let env = Env::start(&[]).await;
    env.connection_secret("wrong-token", "not-a-token").await;
    env.connection_secret("limited", LIMITED_TOKEN).await;
    let input = json!({"operation": "register", "plan": plan(json!({}))});
    let err = env
        .call_with(&env.eks, "wrong-token", input.clone())
        .await
        .expect_err("401");
    assert_eq!(err.name().as_str(), "KubePermissionDenied");
    assert!(
        err.to_string().contains("Unauthorized (401 Unauthorized)"),
        "{err}"
    );
    let err = env
        .call_with(&env.eks, "limited", input)
        .await
        .expect_err("403");
    assert_eq!(err.name().as_str(), "KubePermissionDenied");
    assert!(
        err.to_string()
            .contains("secrets is forbidden: User \"limited\" cannot get resource \"secrets\""),
        "{err}"
    );
    assert!(
        !err.to_string().contains(LIMITED_TOKEN),
        "a token never appears in an error"
    );
}

#[tokio::test]
async fn bad_inputs_are_named_errors() {
    let env = Env::start(&[]).await;
    let mut missing = plan(json!({}));
    missing["cluster"]["name"] = json!("purple");
    let cases = [
        (
            json!({"operation": "register", "plan": missing}),
            "ClusterNotFound",
            "no EKS cluster named purple in us-east-1",
        ),
        (
            json!({"operation": "register", "plan": {"cluster": {}}}),
            "InvalidPlan",
            "cluster: missing field `name`",
        ),
        (
            json!({"operation": "enroll", "plan": plan(json!({}))}),
            "InvalidInput",
            "unknown variant `enroll`",
        ),
        (
            json!({"operation": "register", "plan": plan(json!({"labels": {"argocd.argoproj.io/secret-type": "x"}}))}),
            "InvalidPlan",
            "is set by cluster-canary itself",
        ),
    ];
    for (input, name, fragment) in cases {
        let err = env
            .call_with(&env.eks, "argocd-hub", input.clone())
            .await
            .expect_err("must fail");
        assert_eq!(err.name().as_str(), name, "{input}: {err}");
        assert!(err.to_string().contains(fragment), "{err}");
    }
    let err = env
        .call_with(
            &env.eks,
            "no-such-secret",
            json!({"operation": "register", "plan": plan(json!({}))}),
        )
        .await
        .expect_err("no secret");
    assert_eq!(err.name().as_str(), "KubeRequestFailed", "{err}");
    assert!(
        err.to_string()
            .contains("GetSecretValue failed: ResourceNotFoundException"),
        "{err}"
    );
    assert!(env
        .secrets_api()
        .await
        .get_opt(env.green_secret.as_str())
        .await
        .unwrap()
        .is_none());
}

/// An EKS API that reports the management cluster `hub` at the test server and a new cluster
/// in a chosen state; anything else comes from moto.
struct HubAndState<'a> {
    moto: &'a SdkEks,
    kube: &'a KubeServer,
    green_status: &'a str,
}

#[async_trait]
impl EksApi for HubAndState<'_> {
    async fn describe_cluster(
        &self,
        region: Option<&str>,
        name: &str,
    ) -> Result<ClusterInfo, AwsError> {
        let mut cluster = self
            .moto
            .describe_cluster(region, if name == "hub" { "green" } else { name })
            .await?;
        if name == "hub" {
            cluster.name = "hub".into();
            cluster.endpoint = Some(self.kube.server.clone());
            cluster.ca_data = Some(self.kube.ca_data.clone());
        } else {
            cluster.status = self.green_status.to_owned();
        }
        Ok(cluster)
    }
}

#[tokio::test]
async fn eks_mode_reaches_the_management_cluster_with_a_minted_token() {
    let env = Env::start(&["--accept-eks-tokens"]).await;
    let eks = HubAndState {
        moto: &env.eks,
        kube: &env.kube,
        green_status: "ACTIVE",
    };
    let access = ManagementAccess::Eks {
        cluster_name: "hub".into(),
    };
    let credentials = env.config.credentials_provider().expect("credentials");
    let deps = Deps {
        access: &access,
        aws: AccessDeps {
            eks: &eks,
            secrets: &env.secrets,
            credentials: &credentials,
            region: "us-east-1",
        },
        cluster_accounts: &env.eks,
        access_entries: &env.eks,
        cluster_health: &env.eks,
    };
    let out = handle(
        &deps,
        json!({"operation": "register", "plan": plan(json!({}))}),
    )
    .await
    .expect("register");
    assert_eq!(out["outcome"], "created");
}

#[tokio::test]
async fn a_cluster_that_is_not_active_yet_is_retryable_and_a_failed_one_is_not() {
    let env = Env::start(&[]).await;
    for (status, name, retryable) in [
        ("CREATING", "ClusterNotReady", true),
        ("FAILED", "ClusterFailed", false),
    ] {
        let eks = HubAndState {
            moto: &env.eks,
            kube: &env.kube,
            green_status: status,
        };
        let err = env
            .call_with(
                &eks,
                "argocd-hub",
                json!({"operation": "register", "plan": plan(json!({}))}),
            )
            .await
            .expect_err(status);
        assert_eq!(
            (err.name().as_str(), err.name().is_retryable()),
            (name, retryable),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains(&format!("EKS cluster green is {status}")),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_malformed_connection_secret_is_named_and_never_echoed() {
    let env = Env::start(&[]).await;
    let content = "server=https://hub token=do-not-print-me";
    aws_sdk_secretsmanager::Client::new(&env.config)
        .create_secret()
        .name("not-json")
        .secret_string(content)
        .send()
        .await
        .expect("create secret");
    let err = env
        .call_with(
            &env.eks,
            "not-json",
            json!({"operation": "register", "plan": plan(json!({}))}),
        )
        .await
        .expect_err("unusable secret");
    assert_eq!(err.name().as_str(), "KubeRequestFailed", "{err}");
    assert!(
        err.to_string().contains(
            "secret not-json must be a JSON object with string fields server, caData and token"
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("do-not-print-me"), "{err}");
}

fn plan_for(name: &str, region: &str) -> Value {
    let mut plan = plan(json!({}));
    plan["cluster"] = json!({"name": name, "region": region});
    plan
}

/// Creates an EKS cluster in `region` (moto gives each its own endpoint and CA); its ARN.

#[tokio::test]
async fn a_cluster_in_another_account_is_described_and_registered_through_the_plan_s_role() {
    const ROLE: &str = "arn:aws:iam::111122223333:role/cluster-canary-access";
    let env = Env::start(&["--argocd-sim", "healthy", "--healthy-after", "0"]).await;
    // The other account creates `teal`: in moto, an assumed role's credentials act in the
    // role's account, as STS credentials do in AWS.
    let provider = aws_config::sts::AssumeRoleProvider::builder(ROLE)
        .session_name("platform-team")
        .configure(&env.config)
        .build()
        .await;
    let there = env
        .config
        .to_builder()
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(provider),
        )
        .build();
    let teal_arn = create_cluster(&there, "teal", "us-east-1").await;
    assert!(
        teal_arn.contains(":111122223333:cluster/teal"),
        "{teal_arn}"
    );

    let mut teal = plan(json!({}));
    teal["cluster"] = json!({"name": "teal", "region": "us-east-1", "roleArn": ROLE});
    let input = |operation: &str, plan: &Value| json!({"operation": operation, "plan": plan, "executionName": "teal-by-hand"});
    let described = env
        .call_with(&env.eks, "argocd-hub", input("describe", &teal))
        .await
        .expect("describe through the role");
    assert_eq!(described["arn"], teal_arn.as_str());

    let mut here = teal.clone();
    here["cluster"]
        .as_object_mut()
        .expect("cluster")
        .remove("roleArn");
    let error = env
        .call_with(&env.eks, "argocd-hub", input("describe", &here))
        .await
        .expect_err("not in this account");
    assert_eq!(error.name(), ErrorName::ClusterNotFound);

    let registered = env
        .call_with(&env.eks, "argocd-hub", input("register", &teal))
        .await
        .expect("register");
    let secret = canary_core::argocd::secret_name(&teal_arn, "teal");
    assert_eq!(registered["secretName"], secret.as_str());
    let stored = env
        .secrets_api()
        .await
        .get(&secret)
        .await
        .expect("the Secret");
    assert_eq!(
        stored.metadata.annotations.unwrap_or_default()["cluster-canary/cluster-arn"],
        teal_arn,
        "the cluster is its ARN, account included"
    );
}

const CAPABILITY_ROLE: &str = "arn:aws:iam::123456789012:role/argocd-capability";

/// The access policies `principal`'s entry on `green` has, or `None` without an entry.
async fn access_policies(env: &Env, principal: &str) -> Option<Vec<String>> {
    let eks = aws_sdk_eks::Client::new(&env.config);
    let listed = eks
        .list_associated_access_policies()
        .cluster_name("green")
        .principal_arn(principal)
        .send()
        .await
        .ok()?;
    Some(
        listed
            .associated_access_policies()
            .iter()
            .filter_map(|p| p.policy_arn().map(str::to_owned))
            .collect(),
    )
}

#[tokio::test]
async fn the_eks_capability_gets_its_secret_shape_and_an_access_entry_registration_owns() {
    let env = Env::start(&["--argocd-sim", "healthy", "--healthy-after", "0"]).await;
    let argocd =
        json!({"mode": "eks-capability", "capabilityRoleArn": CAPABILITY_ROLE, "stableChecks": 1});
    let registered = env
        .call("register", &plan(argocd.clone()))
        .await
        .expect("register");
    assert_eq!(registered["accessEntry"], "created", "{registered}");
    let secret = env
        .secrets_api()
        .await
        .get(&env.green_secret)
        .await
        .expect("the Secret");
    let data: BTreeMap<String, String> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect();
    assert_eq!(
        data["server"], env.green.arn,
        "the cluster's ARN, not its endpoint"
    );
    assert!(!data.contains_key("config"), "no config: {data:?}");
    assert_eq!(
        access_policies(&env, CAPABILITY_ROLE).await,
        Some(vec![
            "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy".to_owned()
        ])
    );

    // Applications name the cluster by its ARN there.
    let status = env.apps(argocd.clone(), 0).await;
    assert_eq!(status["ready"], true, "{status}");
    assert_eq!(status["appCount"], 2);

    let again = env
        .call("register", &plan(argocd.clone()))
        .await
        .expect("register again");
    assert_eq!(again["accessEntry"], "ours");

    env.call("deregister", &plan(argocd))
        .await
        .expect("deregister");
    assert_eq!(
        access_policies(&env, CAPABILITY_ROLE).await,
        None,
        "our entry is gone"
    );
}

#[tokio::test]
async fn an_access_entry_someone_else_made_is_left_alone() {
    let env = Env::start(&[]).await;
    let deployer = "arn:aws:iam::123456789012:role/argocd-deployer";
    aws_sdk_eks::Client::new(&env.config)
        .create_access_entry()
        .cluster_name("green")
        .principal_arn(deployer)
        .send()
        .await
        .expect("an entry made by hand");
    let argocd = json!({"roleArn": deployer, "createAccessEntry": true});
    let registered = env
        .call("register", &plan(argocd.clone()))
        .await
        .expect("register");
    assert_eq!(registered["accessEntry"], "foreign");
    assert_eq!(
        access_policies(&env, deployer).await,
        Some(vec![]),
        "no policy associated to someone else's entry"
    );
    env.call("deregister", &plan(argocd))
        .await
        .expect("deregister");
    assert_eq!(
        access_policies(&env, deployer).await,
        Some(vec![]),
        "still there"
    );
}

#[tokio::test]
async fn same_named_clusters_in_two_regions_keep_two_secrets_and_deregister_touches_only_its_own() {
    let env = Env::start(&[]).await;
    let eu_arn = create_cluster(&env.config, "green", "eu-west-1").await;
    assert_ne!(eu_arn, env.green.arn);

    let described = env
        .call("describe", &plan_for("green", "eu-west-1"))
        .await
        .expect("describe in the plan's region");
    assert_eq!(described, json!({"status": "ACTIVE", "arn": eu_arn}));

    let us = env
        .call("register", &plan_for("green", "us-east-1"))
        .await
        .expect("us");
    let eu = env
        .call("register", &plan_for("green", "eu-west-1"))
        .await
        .expect("eu");
    assert_ne!(us["secretName"], eu["secretName"]);
    assert_ne!(us["server"], eu["server"]);
    let secrets = env.secrets_api().await;
    for (out, arn) in [(&us, &env.green.arn), (&eu, &eu_arn)] {
        let name = out["secretName"].as_str().unwrap();
        let secret = secrets.get(name).await.expect("registered");
        assert_eq!(
            secret.metadata.annotations.as_ref().unwrap()["cluster-canary/cluster-arn"],
            *arn
        );
        assert_eq!(decoded(&secret)["server"], out["server"].as_str().unwrap());
    }
    // Registering again changes nothing of the other region's Secret.
    let again = env
        .call("register", &plan_for("green", "eu-west-1"))
        .await
        .expect("eu");
    assert_eq!(again["outcome"], "unchanged");

    let gone = env
        .call("deregister", &plan_for("green", "eu-west-1"))
        .await
        .expect("deregister eu");
    assert_eq!(gone["outcome"], "deleted");
    assert!(secrets
        .get_opt(eu["secretName"].as_str().unwrap())
        .await
        .unwrap()
        .is_none());
    assert!(
        secrets
            .get_opt(us["secretName"].as_str().unwrap())
            .await
            .unwrap()
            .is_some(),
        "the us-east-1 green keeps its Secret"
    );

    // A cluster that is gone cannot be described: its ARN comes with the request.
    let gone = "arn:aws:eks:eu-west-1:123456789012:cluster/deleted";
    let out = env
        .call_with(
            &env.eks,
            "argocd-hub",
            json!({"operation": "deregister", "plan": plan_for("deleted", "eu-west-1"), "clusterArn": gone}),
        )
        .await
        .expect("deregister by ARN, without DescribeCluster");
    assert_eq!(out["outcome"], "absent");
    let err = env
        .call("deregister", &plan_for("deleted", "eu-west-1"))
        .await
        .expect_err("without an ARN the cluster must be described");
    assert_eq!(err.name().as_str(), "ClusterNotFound");
}

#[tokio::test]
async fn an_eks_name_ending_in_an_underscore_gets_a_secret_name_the_api_server_accepts() {
    let env = Env::start(&[]).await;
    create_cluster(&env.config, "Blue_Green_", "us-east-1").await;
    let out = env
        .call("register", &plan_for("Blue_Green_", "us-east-1"))
        .await
        .expect("registered");
    let name = out["secretName"].as_str().unwrap();
    assert!(name.starts_with("cluster-canary-blue-green-"), "{name}");
    assert!(env
        .secrets_api()
        .await
        .get_opt(name)
        .await
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn a_cluster_with_the_longest_name_eks_allows_registers() {
    // 100 characters: the harness once answered CreateCluster with HTTP 500 over 51.
    let name = format!("g{}", "0123456789".repeat(10))[..100].to_owned();
    let env = Env::start(&[]).await;
    create_cluster(&env.config, &name, "us-east-1").await;
    let out = env
        .call("register", &plan_for(&name, "us-east-1"))
        .await
        .expect("registered");
    let secret = out["secretName"].as_str().unwrap();
    assert!(secret.len() <= 253, "{secret}");
    assert!(env
        .secrets_api()
        .await
        .get_opt(secret)
        .await
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn the_test_server_refuses_names_and_labels_a_real_api_server_refuses() {
    let env = Env::start(&[]).await;
    let secrets = env.secrets_api().await;
    for (metadata, field) in [
        (json!({"name": "cluster-canary-green_"}), "metadata.name"),
        (json!({"name": "Cluster-Canary"}), "metadata.name"),
        (
            json!({"name": "ok", "labels": {"bad key!": "x"}}),
            "metadata.labels",
        ),
        (
            json!({"name": "ok", "labels": {"env": "-prod"}}),
            "metadata.labels",
        ),
        (
            json!({"name": "ok", "annotations": {"a/b/c": "x"}}),
            "metadata.annotations",
        ),
    ] {
        let secret: Secret = serde_json::from_value(json!({"metadata": metadata})).unwrap();
        match secrets.create(&PostParams::default(), &secret).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(
                    (status.code, status.reason.as_str()),
                    (422, "Invalid"),
                    "{metadata}"
                );
                assert!(
                    status.message.contains(field),
                    "{metadata}: {}",
                    status.message
                );
            }
            other => panic!("{metadata}: expected 422 Invalid, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn describe_names_the_region_of_a_cluster_that_is_not_there() {
    let env = Env::start(&[]).await;
    let err = env
        .call("describe", &plan_for("green", "eu-west-1"))
        .await
        .expect_err("no green in eu-west-1");
    assert_eq!(err.name().as_str(), "ClusterNotFound");
    assert_eq!(err.to_string(), "no EKS cluster named green in eu-west-1");
}

#[tokio::test]
async fn a_plan_that_waits_for_its_cluster_is_told_it_is_not_created_yet() {
    let env = Env::start(&[]).await;
    let mut waiting = plan_for("green", "eu-west-1");
    waiting["cluster"]["waitForCreation"] = json!(true);
    let out = env
        .call("describe", &waiting)
        .await
        .expect("not refused: waited for");
    assert_eq!(out, json!({"status": "NOT CREATED", "arn": null}));
    create_cluster(&env.config, "green", "eu-west-1").await;
    let out = env.call("describe", &waiting).await.expect("described");
    assert_eq!(out["status"], "ACTIVE");
    assert_eq!(
        out["arn"],
        "arn:aws:eks:eu-west-1:123456789012:cluster/green"
    );
}

/// `clusterReadiness` of `green` with the plan's gate `gate`.
async fn readiness(env: &Env, gate: Value) -> Value {
    let mut plan = plan(json!({}));
    plan["clusterReadiness"] = gate;
    env.call("clusterReadiness", &plan)
        .await
        .expect("cluster readiness")
}

#[tokio::test]
async fn the_readiness_gate_holds_on_insights_in_error_or_warning_and_on_add_ons_not_active() {
    let env = Env::start(&[]).await;
    let ready = readiness(&env, json!({})).await;
    assert_eq!(
        ready,
        json!({"ready": true, "reason": "no cluster insight holds the rollout and every add-on is ACTIVE",
               "intervalSeconds": 15, "maxPolls": 40})
    );

    // EKS's own check of deprecated APIs: the insight's name, why, and what to do.
    let insights = "123456789012/us-east-1/clusters/green/insights";
    env.moto.set_eks(insights, &json!({
        "id": "8a1e7a42-0000-0000-0000-000000000001", "name": "Deprecated APIs removed in Kubernetes v1.32",
        "category": "UPGRADE_READINESS",
        "insightStatus": {"status": "ERROR", "reason": "Deprecated API usage detected within last 30 days"},
        "recommendation": "Update manifests and API clients to use newer Kubernetes APIs"}));
    let held = readiness(&env, json!({})).await;
    assert_eq!(held["ready"], false);
    assert_eq!(
        held["reason"],
        "insight \"Deprecated APIs removed in Kubernetes v1.32\" (UPGRADE_READINESS) is ERROR: \
         Deprecated API usage detected within last 30 days: Update manifests and API clients to \
         use newer Kubernetes APIs"
    );
    // Fixed: a warning holds unless the plan allows warnings.
    env.moto.set_eks(insights, &json!({
        "id": "8a1e7a42-0000-0000-0000-000000000001", "name": "Deprecated APIs removed in Kubernetes v1.32",
        "category": "UPGRADE_READINESS", "insightStatus": {"status": "WARNING", "reason": "seen 20 days ago"}}));
    assert_eq!(readiness(&env, json!({})).await["ready"], false);
    assert_eq!(
        readiness(&env, json!({"allowInsightWarnings": true})).await["ready"],
        true
    );

    // Add-ons: every one the cluster has, or those the plan names.
    let eks = aws_sdk_eks::Client::new(&env.config);
    eks.create_addon()
        .cluster_name("green")
        .addon_name("coredns")
        .send()
        .await
        .expect("create add-on");
    let gate = json!({"allowInsightWarnings": true});
    assert_eq!(
        readiness(&env, gate.clone()).await["reason"],
        "add-on coredns is CREATING"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(readiness(&env, gate.clone()).await["ready"], true);
    env.moto.set_eks(
        "123456789012/us-east-1/clusters/green/addons/coredns/health",
        &json!({"status": "DEGRADED", "issues": [{"code": "InsufficientNumberOfReplicas",
                "message": "The add-on is unhealthy because it doesn't have the desired number of replicas.",
                "resourceIds": ["kube-system/coredns"]}]}),
    );
    assert_eq!(
        readiness(&env, gate).await["reason"],
        "add-on coredns is DEGRADED: InsufficientNumberOfReplicas (The add-on is unhealthy because \
         it doesn't have the desired number of replicas.; kube-system/coredns)"
    );
    let named = readiness(
        &env,
        json!({"allowInsightWarnings": true, "addons": ["aws-ebs-csi-driver"]}),
    )
    .await;
    assert_eq!(
        named["reason"],
        "add-on aws-ebs-csi-driver is not installed on the cluster (clusterReadiness.addons names it)"
    );

    // A plan without the gate, and a cluster that does not exist.
    let err = env
        .call("clusterReadiness", &plan(json!({})))
        .await
        .expect_err("no gate");
    assert_eq!(err.name(), ErrorName::InvalidInput, "{err}");
    let mut absent = plan_for("absent", "us-east-1");
    absent["clusterReadiness"] = json!({});
    let err = env
        .call("clusterReadiness", &absent)
        .await
        .expect_err("no cluster");
    assert!(
        err.to_string().contains("no EKS cluster named absent"),
        "{err}"
    );
}
