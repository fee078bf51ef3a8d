//! GitOps traffic targets (`"via": "argocd"`): `set`, `verify` and `restore` called directly
//! against in-memory fakes of the Argo CD cluster Secrets and of a Route 53 whose records follow
//! the annotations as ExternalDNS would (or not, or late). Time is paused: the waits and holds
//! run in virtual seconds. Over the wire, with the Kubernetes test server and the ExternalDNS
//! stand-in: tests/e2e/test_gitops_weights.py.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use canary_aws::{AwsError, Route53Api, Route53Reads, TxtRecord, WeightedRecord};
use canary_core::argocd::{
    CLUSTER_ARN_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE, SECRET_TYPE_LABEL,
};
use canary_core::{NamedError, Route53Target};
use canary_core::{RolloutPlan, TargetWeights};
use canary_kube::{
    may_take_over, AnnotationWrite, ArgoCdConnect, ClusterSecret, ClusterSecrets, KubeError,
    KubeErrorKind,
};
use canary_rollout::{restore, set, Apis, ShiftError};
use serde_json::{json, Value};

const KEY: &str = "route53:Z1:app.example.com.:A";
const CANARY_SECRET: &str = "cluster-canary-green-0123456789";
const WEIGHT: &str = "cluster-canary.io/weight";

/// What happened, in order: direct Route 53 writes and annotations.
type Log = Arc<Mutex<Vec<String>>>;

/// Route 53 with ExternalDNS on top: each read first lets ExternalDNS write what the Ingresses
/// ask for (the Secrets' annotations, if `carries`), after `stale_reads` reads that still see
/// the previous annotations (a sync in flight).
struct Records {
    weights: Mutex<(u16, u16)>,
    canary_exists: bool,
    carries: bool,
    /// The weights ExternalDNS writes while the sync is in flight, and for how many reads.
    stale: Mutex<Option<((u16, u16), u32)>>,
    secrets: Arc<Mutex<BTreeMap<String, ClusterSecret>>>,
    log: Log,
}

impl Records {
    fn external_dns(&self) {
        let mut stale = self.stale.lock().unwrap();
        if let Some((weights, reads)) = stale.as_mut() {
            if *reads > 0 {
                *reads -= 1;
                *self.weights.lock().unwrap() = *weights;
                return;
            }
        }
        *stale = None;
        if !self.carries {
            return;
        }
        let secrets = self.secrets.lock().unwrap();
        let weight = |name: &str| {
            secrets
                .get(name)
                .and_then(|s| s.annotations.get(WEIGHT))
                .and_then(|w| w.parse().ok())
        };
        if let (Some(stable), Some(canary)) = (weight("cluster-blue"), weight(CANARY_SECRET)) {
            *self.weights.lock().unwrap() = (stable, canary);
        }
    }
}

#[async_trait]
impl Route53Reads for Records {
    async fn records(&self, _target: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError> {
        self.external_dns();
        let (stable, canary) = *self.weights.lock().unwrap();
        let record = |id: &str, weight| WeightedRecord {
            set_identifier: Some(id.to_owned()),
            weight: Some(weight),
            ttl: Some(30),
            alias_target: None,
            health_check_id: None,
        };
        let mut records = vec![record("blue", stable)];
        if self.canary_exists {
            records.push(record("green", canary));
        }
        Ok(records)
    }
}

#[async_trait]
impl Route53Api for Records {
    async fn named_records(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
    ) -> Result<Vec<WeightedRecord>, AwsError> {
        unreachable!("the rollout reads its targets' records only")
    }

    async fn create_weighted(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
        _records: &[canary_aws::NewWeightedRecord],
    ) -> Result<String, AwsError> {
        unreachable!("the rollout creates no record")
    }

    async fn write_weights(
        &self,
        _target: &Route53Target,
        stable: u16,
        canary: u16,
    ) -> Result<String, AwsError> {
        *self.weights.lock().unwrap() = (stable, canary);
        self.log
            .lock()
            .unwrap()
            .push(format!("route53 {stable}/{canary}"));
        Ok("C1".into())
    }

    async fn wait_in_sync(&self, _change_id: &str) -> Result<bool, AwsError> {
        Ok(true)
    }

    async fn health_check_reports(&self, _health_check_id: &str) -> Result<Vec<String>, AwsError> {
        Ok(Vec::new())
    }

    async fn txt_records(&self, _zone_id: &str, _name: &str) -> Result<Vec<TxtRecord>, AwsError> {
        Ok(Vec::new())
    }
}

/// Writes that land between a step's read and its apply (Secret → the value written).
type Racing = Arc<Mutex<BTreeMap<String, String>>>;

/// Argo CD's namespace: the cluster Secrets, and the annotations written on them, as
/// `KubeArgoCd::annotate_secret` writes them against kube-apiserver: a step's write takes an
/// annotation over only while it reads what the step expects, and a write in between (one of
/// `racing`) is a 409 as the apply's resourceVersion precondition answers; a restore's forces.
/// Over the wire, against the Kubernetes test server's real field manager:
/// tests/e2e/test_gitops_weights.py and register-cluster's against_moto.rs.
struct ArgoCd {
    secrets: Arc<Mutex<BTreeMap<String, ClusterSecret>>>,
    racing: Racing,
    log: Log,
}

#[async_trait]
impl ClusterSecrets for ArgoCd {
    async fn get_secret(&self, name: &str) -> Result<Option<ClusterSecret>, KubeError> {
        Ok(self.secrets.lock().unwrap().get(name).cloned())
    }

    async fn cluster_secrets(&self) -> Result<Vec<ClusterSecret>, KubeError> {
        Ok(self.secrets.lock().unwrap().values().cloned().collect())
    }

    async fn annotate_secret(
        &self,
        name: &str,
        key: &str,
        value: &str,
        write: AnnotationWrite<'_>,
    ) -> Result<(), KubeError> {
        let mut secrets = self.secrets.lock().unwrap();
        let action = format!("annotate Secret {name}");
        let Some(secret) = secrets.get_mut(name) else {
            return Err(KubeError::new(KubeErrorKind::NotFound, action, "gone"));
        };
        if let AnnotationWrite::IfUnchanged { expected } = write {
            let found = secret.annotations.get(key).cloned();
            if let Err(found) = may_take_over(found.as_deref(), expected, value) {
                return Err(KubeError::new(
                    KubeErrorKind::Conflict,
                    action,
                    format!("the annotation reads \"{found}\" (set by \"kubectl-annotate\" (Update)), not \"{expected}\" as this rollout left it"),
                ));
            }
            if let Some(theirs) = self.racing.lock().unwrap().remove(name) {
                secret.annotations.insert(key.to_owned(), theirs);
                return Err(KubeError::new(
                    KubeErrorKind::Conflict,
                    action,
                    format!("Operation cannot be fulfilled on secrets \"{name}\": the object has been modified; please apply your changes to the latest version and try again (409 Conflict)"),
                ));
            }
        }
        secret.annotations.insert(key.to_owned(), value.to_owned());
        let forced = if write == AnnotationWrite::Force {
            " forced"
        } else {
            ""
        };
        self.log
            .lock()
            .unwrap()
            .push(format!("annotate {name} {value}{forced}"));
        Ok(())
    }
}

struct Connect {
    secrets: Arc<Mutex<BTreeMap<String, ClusterSecret>>>,
    racing: Racing,
    log: Log,
}

#[async_trait]
impl ArgoCdConnect for Connect {
    async fn argocd(&self, namespace: &str) -> Result<Box<dyn ClusterSecrets>, KubeError> {
        assert_eq!(namespace, "argocd");
        Ok(Box::new(ArgoCd {
            secrets: self.secrets.clone(),
            racing: self.racing.clone(),
            log: self.log.clone(),
        }))
    }

    async fn cluster_arn(&self, region: &str, name: &str) -> Result<Option<String>, AwsError> {
        Ok(Some(format!(
            "arn:aws:eks:{region}:123456789012:cluster/{name}"
        )))
    }
}

/// An Argo CD cluster Secret: blue's (`cluster-blue`) or one registration made for green.
fn secret(name: &str, weight: Option<&str>, ours: bool) -> ClusterSecret {
    let cluster = if ours { "green" } else { "blue" };
    let mut secret = ClusterSecret {
        name: name.to_owned(),
        labels: BTreeMap::from([(SECRET_TYPE_LABEL.to_owned(), "cluster".to_owned())]),
        data: BTreeMap::from([("name".to_owned(), cluster.to_owned())]),
        ..ClusterSecret::default()
    };
    if ours {
        secret
            .labels
            .insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned());
        secret.annotations.insert(
            CLUSTER_ARN_ANNOTATION.to_owned(),
            "arn:aws:eks:us-east-1:123456789012:cluster/green".to_owned(),
        );
    }
    if let Some(weight) = weight {
        secret
            .annotations
            .insert(WEIGHT.to_owned(), weight.to_owned());
    }
    secret
}

/// The world: blue's Secret, green's (unless `registered` is false), the records at `at`.
struct World {
    records: Records,
    connect: Connect,
    secrets: Arc<Mutex<BTreeMap<String, ClusterSecret>>>,
    racing: Racing,
    log: Log,
}

impl World {
    fn new(at: (u16, u16), registered: bool, carries: bool) -> Self {
        let log = Log::default();
        let mut secrets = BTreeMap::from([(
            "cluster-blue".to_owned(),
            secret("cluster-blue", Some(&at.0.to_string()), false),
        )]);
        if registered {
            secrets.insert(
                CANARY_SECRET.to_owned(),
                secret(CANARY_SECRET, Some(&at.1.to_string()), true),
            );
        }
        let secrets = Arc::new(Mutex::new(secrets));
        let racing = Racing::default();
        World {
            records: Records {
                weights: Mutex::new(at),
                canary_exists: true,
                carries,
                stale: Mutex::new(None),
                secrets: secrets.clone(),
                log: log.clone(),
            },
            connect: Connect {
                secrets: secrets.clone(),
                racing: racing.clone(),
                log: log.clone(),
            },
            secrets,
            racing,
            log,
        }
    }

    /// One operation, as the state machine would ask it (`input` in shift-weights' request
    /// form), run by calling canary-rollout's function for it; the output as JSON.
    async fn call(&self, argocd: bool, input: Value) -> Result<Value, ShiftError> {
        let apis = Apis {
            route53: &self.records,
            argocd: argocd.then_some(&self.connect as &dyn ArgoCdConnect),
            ..Apis::fake()
        };
        let plan = RolloutPlan::parse(input["plan"].clone())?;
        let weights = |field: &str| -> Vec<TargetWeights> {
            serde_json::from_value(input[field].clone()).expect("the test's weights")
        };
        let output = match input["operation"].as_str() {
            Some("set") => {
                let weight = input["canaryWeight"].as_i64().expect("the test's weight");
                to_json(set::set(&apis, &plan, weight, &weights("expected")).await?)
            }
            Some("verify") => {
                to_json(set::verify(apis.reads(), &plan, &weights("expected")).await?)
            }
            Some("restore") => {
                let expected = weights("expected");
                to_json(
                    restore::restore(
                        &apis,
                        &plan.plan,
                        &weights("baseline"),
                        Some(&expected),
                        None,
                    )
                    .await?,
                )
            }
            other => panic!("no such operation in these tests: {other:?}"),
        };
        Ok(output)
    }

    /// Someone (a person, another tool) sets the weight annotation of `secret`.
    fn set_annotation(&self, secret: &str, value: &str) {
        self.secrets
            .lock()
            .unwrap()
            .get_mut(secret)
            .unwrap()
            .annotations
            .insert(WEIGHT.into(), value.into());
    }

    fn annotation(&self, secret: &str) -> Option<String> {
        self.secrets.lock().unwrap()[secret]
            .annotations
            .get(WEIGHT)
            .cloned()
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

fn to_json(output: impl serde::Serialize) -> Value {
    serde_json::to_value(output).expect("outputs serialize")
}

fn plan() -> Value {
    json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": [{"route53": {
            "hostedZoneId": "Z1", "recordName": "app.example.com", "recordType": "A",
            "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
            "via": "argocd", "gitops": {"stableSecret": "cluster-blue", "syncTimeoutSeconds": 30},
        }}],
        "steps": [{"weight": 10}, {"weight": 100}],
        "bake": {"seconds": 60, "checkIntervalSeconds": 10},
    })
}

fn weights(stable: u16, canary: u16) -> Value {
    json!([{"target": KEY, "stable": stable, "canary": canary}])
}

fn set_to_10() -> Value {
    json!({"operation": "set", "plan": plan(), "canaryWeight": 10, "expected": weights(100, 0)})
}

fn restore_from(stable: u16, canary: u16) -> Value {
    json!({"operation": "restore", "plan": plan(), "baseline": weights(100, 0),
           "expected": weights(stable, canary)})
}

#[tokio::test(start_paused = true)]
async fn a_step_is_written_on_the_secrets_and_set_once_route53_reads_it() {
    let world = World::new((100, 0), true, true);
    let out = world.call(true, set_to_10()).await.expect("set");
    assert_eq!(out["weights"], weights(90, 10));
    assert_eq!(
        world.log(),
        [
            "annotate cluster-blue 90",
            &format!("annotate {CANARY_SECRET} 10")
        ],
        "nothing written to Route 53 around ExternalDNS"
    );
    assert_eq!(*world.records.weights.lock().unwrap(), (90, 10));
}

#[tokio::test(start_paused = true)]
async fn a_step_route53_never_reads_is_weights_not_synced_after_the_timeout() {
    let world = World::new((100, 0), true, false);
    let started = tokio::time::Instant::now();
    let err = world
        .call(true, set_to_10())
        .await
        .expect_err("never synced");
    assert_eq!(err.name().as_str(), "WeightsNotSynced");
    assert!(!err.name().is_retryable(), "a timeout rolls back");
    assert!(
        err.to_string().contains(
            "wrote stable 90 / canary 10 on the Argo CD cluster Secrets' `cluster-canary.io/weight` annotation, \
             but after 30 s Route 53 still reads stable 100 / canary 0"
        ),
        "{err}"
    );
    let waited = started.elapsed().as_secs();
    assert!(
        (30..=32).contains(&waited),
        "bounded by syncTimeoutSeconds: {waited} s"
    );
}

#[tokio::test(start_paused = true)]
async fn a_restore_writes_route53_at_once_then_the_annotations_and_holds_through_the_flaps() {
    let world = World::new((50, 50), true, true);
    // Argo CD's sync of the baseline lands after 3 reads: until then ExternalDNS writes 50/50.
    *world.records.stale.lock().unwrap() = Some(((50, 50), 3));
    let out = world
        .call(true, restore_from(50, 50))
        .await
        .expect("restore");
    assert_eq!(out["weights"], weights(100, 0));
    assert!(out["reasserted"].as_u64() >= Some(1), "{out}");
    let log = world.log();
    assert_eq!(
        log[..3],
        [
            "route53 100/0".to_owned(),
            format!("annotate {CANARY_SECRET} 0 forced"),
            "annotate cluster-blue 100 forced".to_owned(),
        ],
        "traffic first, then the annotations, the canary's first: {log:?}"
    );
    assert!(log[3..].iter().all(|l| l == "route53 100/0"), "{log:?}");
    assert_eq!(*world.records.weights.lock().unwrap(), (100, 0));
    assert_eq!(world.annotation("cluster-blue").as_deref(), Some("100"));
}

#[tokio::test(start_paused = true)]
async fn a_retried_restore_of_a_target_at_its_baseline_still_writes_the_annotations() {
    let world = World::new((100, 0), true, true);
    for name in ["cluster-blue", CANARY_SECRET] {
        world.set_annotation(name, "50");
    }
    *world.records.stale.lock().unwrap() = Some(((100, 0), 1));
    world
        .call(true, restore_from(50, 50))
        .await
        .expect("restore");
    assert_eq!(world.annotation("cluster-blue").as_deref(), Some("100"));
    assert_eq!(world.annotation(CANARY_SECRET).as_deref(), Some("0"));
    assert!(
        !world.log().iter().any(|l| l.starts_with("route53")),
        "{:?}",
        world.log()
    );
}

#[tokio::test(start_paused = true)]
async fn a_missing_stable_secret_or_unregistered_canary_refuses_the_step_and_writes_nothing() {
    let world = World::new((100, 0), true, true);
    world.secrets.lock().unwrap().remove("cluster-blue");
    let err = world
        .call(true, set_to_10())
        .await
        .expect_err("no stable Secret");
    assert_eq!(err.name().as_str(), "TargetNotFound");
    assert!(
        err.to_string()
            .contains("gitops.stableSecret: there is no Secret cluster-blue in namespace argocd"),
        "{err}"
    );

    let world = World::new((100, 0), false, true);
    let err = world
        .call(true, set_to_10())
        .await
        .expect_err("no canary Secret");
    assert_eq!(err.name().as_str(), "TargetNotFound");
    assert!(
        err.to_string().contains(
            "no Argo CD cluster Secret registered by cluster-canary for cluster green in us-east-1"
        ),
        "{err}"
    );
    assert_eq!(world.log(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn without_access_to_the_management_cluster_a_step_is_refused_before_anything_moves() {
    let world = World::new((100, 0), true, true);
    let err = world.call(false, set_to_10()).await.expect_err("no access");
    assert_eq!(err.name().as_str(), "InvalidInput");
    assert!(
        err.to_string()
            .contains("its weights go through Argo CD (\"via\": \"argocd\"), and this caller cannot reach the management cluster"),
        "{err}"
    );
    assert_eq!(world.log(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn a_canary_record_not_created_yet_reads_as_weight_zero() {
    let mut world = World::new((100, 0), false, true);
    world.records.canary_exists = false;
    let out = world
        .call(
            true,
            json!({"operation": "verify", "plan": plan(), "expected": weights(100, 0)}),
        )
        .await
        .expect("the canary takes no traffic yet");
    assert_eq!(out["weights"], weights(100, 0));
}

#[tokio::test(start_paused = true)]
async fn a_check_that_finds_route53_moved_fails_the_rollout_so_it_rolls_back() {
    let world = World::new((100, 0), true, true);
    world.call(true, set_to_10()).await.expect("set");
    // Someone edits the stable's annotation; Argo CD and ExternalDNS carry it.
    world.set_annotation("cluster-blue", "100");
    let err = world
        .call(
            false,
            json!({"operation": "verify", "plan": plan(), "expected": weights(90, 10)}),
        )
        .await
        .expect_err("moved");
    assert_eq!(err.name().as_str(), "WeightsNotSynced", "{err}");
    assert!(
        err.to_string().contains(
            "Route 53 does not read what this rollout set through Argo CD (trafficTargets[0] (route53:Z1:app.example.com.:A): \
             found stable 100 / canary 10, this rollout last set stable 90 / canary 10)"
        ),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_retried_on_a_half_synced_chain_rolls_back_rather_than_stops() {
    // The stable's ExternalDNS has written the step, the canary's not yet, when the step is
    // tried again (its first attempt failed on something transient).
    let world = World::new((90, 0), true, false);
    let err = world
        .call(true, set_to_10())
        .await
        .expect_err("half synced");
    assert_eq!(err.name().as_str(), "WeightsNotSynced", "{err}");
    assert!(
        err.to_string()
            .contains("found stable 90 / canary 0, this rollout last set stable 100 / canary 0"),
        "{err}"
    );
    assert_eq!(world.log(), Vec::<String>::new(), "nothing written");
}

#[tokio::test(start_paused = true)]
async fn the_canary_secret_is_found_by_the_clusters_arn_never_its_name_alone() {
    let world = World::new((100, 0), true, true);
    let mut elsewhere = secret("cluster-canary-green-elsewhere", Some("0"), true);
    elsewhere.annotations.insert(
        CLUSTER_ARN_ANNOTATION.to_owned(),
        "arn:aws:eks:us-east-1:222222222222:cluster/green".to_owned(),
    );
    world
        .secrets
        .lock()
        .unwrap()
        .insert(elsewhere.name.clone(), elsewhere);
    world.call(true, set_to_10()).await.expect("set");
    assert_eq!(
        world
            .annotation("cluster-canary-green-elsewhere")
            .as_deref(),
        Some("0"),
        "the same name and region in another account is another cluster"
    );
    assert_eq!(world.annotation(CANARY_SECRET).as_deref(), Some("10"));

    // A plan for the cluster in account 222222222222 (its roleArn): that account's Secret.
    let world = World::new((100, 0), true, true);
    {
        let mut secrets = world.secrets.lock().unwrap();
        let here = secret("cluster-canary-green-here", Some("0"), true);
        secrets.insert(here.name.clone(), here);
        secrets.get_mut(CANARY_SECRET).unwrap().annotations.insert(
            CLUSTER_ARN_ANNOTATION.to_owned(),
            "arn:aws:eks:us-east-1:222222222222:cluster/green".to_owned(),
        );
    }
    let mut other = plan();
    other["cluster"]["roleArn"] = json!("arn:aws:iam::222222222222:role/cluster-canary");
    let input =
        json!({"operation": "set", "plan": other, "canaryWeight": 10, "expected": weights(100, 0)});
    world.call(true, input).await.expect("set");
    assert_eq!(world.annotation(CANARY_SECRET).as_deref(), Some("10"));
    assert_eq!(
        world.annotation("cluster-canary-green-here").as_deref(),
        Some("0")
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_takes_over_an_annotation_that_still_reads_the_baseline_whoever_set_it() {
    // blue's "100" was set by `kubectl create` (another field manager): it is the baseline, so
    // the first step takes it over.
    let world = World::new((100, 0), true, true);
    world.call(true, set_to_10()).await.expect("set");
    assert_eq!(
        world.log(),
        [
            "annotate cluster-blue 90".to_owned(),
            format!("annotate {CANARY_SECRET} 10")
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_over_an_annotation_changed_outside_the_rollout_rolls_back_overwriting_nothing() {
    // Someone annotated blue with 70; ExternalDNS has not carried it to Route 53 yet.
    let world = World::new((100, 0), true, false);
    world.set_annotation("cluster-blue", "70");
    let err = world
        .call(true, set_to_10())
        .await
        .expect_err("another value");
    assert_eq!(err.name().as_str(), "WeightsNotSynced", "rolls back: {err}");
    assert!(
        err.to_string().contains(
            "the `cluster-canary.io/weight` annotation on Secret cluster-blue changed outside this \
             rollout; nothing was overwritten, and the rollout rolls back"
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("the annotation reads \"70\""),
        "{err}"
    );
    assert_eq!(world.log(), Vec::<String>::new(), "nothing written");
    assert_eq!(world.annotation("cluster-blue").as_deref(), Some("70"));
}

#[tokio::test(start_paused = true)]
async fn a_write_between_the_steps_read_and_its_apply_is_not_overwritten() {
    let world = World::new((100, 0), true, false);
    world
        .racing
        .lock()
        .unwrap()
        .insert("cluster-blue".into(), "60".into());
    let err = world
        .call(true, set_to_10())
        .await
        .expect_err("a write in between");
    assert_eq!(err.name().as_str(), "WeightsNotSynced", "rolls back: {err}");
    assert!(
        err.to_string().contains("the object has been modified"),
        "{err}"
    );
    assert_eq!(world.log(), Vec::<String>::new(), "nothing written");
    assert_eq!(world.annotation("cluster-blue").as_deref(), Some("60"));
}

#[tokio::test(start_paused = true)]
async fn a_restore_takes_over_an_annotation_another_manager_set_the_canarys_first() {
    // Mid-bake at 90/10, someone applies 70 on the stable's annotation with their own field
    // manager; ExternalDNS carries it.
    let world = World::new((90, 10), true, true);
    world.set_annotation(CANARY_SECRET, "50");
    world.set_annotation("cluster-blue", "70");
    let out = world
        .call(true, restore_from(90, 10))
        .await
        .expect("a rollback is not refused by another manager");
    assert_eq!(out["weights"], weights(100, 0));
    let log = world.log();
    assert_eq!(
        log[..3],
        [
            "route53 100/0".to_owned(),
            format!("annotate {CANARY_SECRET} 0 forced"),
            "annotate cluster-blue 100 forced".to_owned(),
        ],
        "{log:?}"
    );
    assert_eq!(world.annotation("cluster-blue").as_deref(), Some("100"));
    assert_eq!(world.annotation(CANARY_SECRET).as_deref(), Some("0"));
    assert_eq!(*world.records.weights.lock().unwrap(), (100, 0));
}

#[tokio::test(start_paused = true)]
async fn a_stable_secret_that_is_not_the_stable_clusters_is_refused_before_anything_moves() {
    // Prepare and `plan check` make the same look (inspect): tests/e2e/test_gitops_weights.py.
    for (change, expected) in [
        (
            "label",
            "gitops.stableSecret: Secret cluster-blue is not an Argo CD cluster Secret",
        ),
        (
            "name",
            "gitops.stableSecret: Secret cluster-blue registers cluster `purple`, not the stable cluster `blue`",
        ),
    ] {
        let world = World::new((100, 0), true, true);
        {
            let mut secrets = world.secrets.lock().unwrap();
            let blue = secrets.get_mut("cluster-blue").unwrap();
            match change {
                "label" => drop(blue.labels.remove(SECRET_TYPE_LABEL)),
                _ => drop(blue.data.insert("name".into(), "purple".into())),
            }
        }
        let err = world.call(true, set_to_10()).await.expect_err(change);
        assert_eq!(err.name().as_str(), "TargetMisconfigured", "{err}");
        assert!(err.to_string().contains(expected), "{err}");
        assert!(err.to_string().contains("nothing was written"), "{err}");
        assert_eq!(world.log(), Vec::<String>::new(), "{change}: nothing written");
    }
}
