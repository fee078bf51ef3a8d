//! A Route 53 target in GitOps mode (`"via": "argocd"`): ExternalDNS owns its two weighted
//! records and puts back any weight its Ingress does not ask for, so the weights go where
//! ExternalDNS reads them. Each is written as an annotation on the cluster's Argo CD cluster
//! Secret (server-side apply, field manager `cluster-canary-weights`); the user's
//! ApplicationSet (cluster generator) templates it into the Ingress's `aws-weight`; Argo CD
//! syncs; ExternalDNS writes Route 53 (docs/shapes/gitops.md).
//!
//! - A step is set once Route 53 reads back its weights, within `syncTimeoutSeconds`; past
//!   that it is `WeightsNotSynced`, which rolls the rollout back.
//! - A restore writes Route 53 directly (traffic returns at once), then the annotations, then
//!   holds the baseline for `syncTimeoutSeconds`: a sync already in flight may still write the
//!   step's weights, and each time it does the baseline is put back.
//!
//! Reads, health and ownership are the records', as for a plain Route 53 target.

use std::time::Duration;

use async_trait::async_trait;
use canary_core::argocd::{
    CLUSTER_ARN_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE, SECRET_TYPE_LABEL,
};
use canary_core::arn::account_of;
use canary_core::limits::truncate;
use canary_core::plan::ClusterRef;
use canary_core::targets::GitOpsWeights;
use canary_core::{RolloutPlan, WeightPair};
use canary_kube::argocd::{MAX_ANNOTATION_SHOWN, WEIGHTS_FIELD_MANAGER};
use canary_kube::{
    AnnotationWrite, ArgoCdConnect, ClusterSecret, ClusterSecrets, KubeError, KubeErrorKind,
};
use tokio::time::Instant;
use tracing::{info, warn};

use super::route53::Route53Router;
use super::{
    ControllerClaim, Detach, Health, Inspection, Located, Observed, Reading, Side, TargetReader,
    TrafficRouter,
};
use crate::error::ShiftError;

pub(super) struct GitOpsRouter<'a> {
    records: Route53Router<'a>,
    settings: &'a GitOpsWeights,
    argocd: Option<&'a dyn ArgoCdConnect>,
    namespace: String,
    cluster: &'a ClusterRef,
}

/// The two Secrets the weights are written on.
struct Secrets {
    api: Box<dyn ClusterSecrets>,
    stable: String,
    /// The stable's Secret as read.
    stable_found: ClusterSecret,
    /// `None` when the new cluster has no Secret (yet, or any more): only a restore goes on
    /// without it, since then its apps are not deployed and its ExternalDNS writes nothing.
    canary: Option<String>,
}

impl<'a> GitOpsRouter<'a> {
    pub(super) fn new(
        records: Route53Router<'a>,
        settings: &'a GitOpsWeights,
        argocd: Option<&'a dyn ArgoCdConnect>,
        plan: &'a RolloutPlan,
    ) -> Self {
        let section = plan.argocd.clone().unwrap_or_default();
        GitOpsRouter {
            records,
            settings,
            argocd,
            namespace: section.namespace().to_owned(),
            cluster: &plan.cluster,
        }
    }

    fn kube(&self, source: KubeError) -> ShiftError {
        ShiftError::Kube {
            path: self.records.located.label.clone(),
            source,
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.settings.sync_timeout_seconds().unsigned_abs())
    }

    /// The ARN registration wrote on the new cluster's Secret: from the plan for a cluster in
    /// another account (its `roleArn` gives partition and account), from EKS for one in this
    /// account. `None`: no such cluster (any more).
    async fn canary_arn(&self, argocd: &dyn ArgoCdConnect) -> Result<Option<String>, ShiftError> {
        let (region, name) = (&self.cluster.region, &self.cluster.name);
        match self.cluster.role_arn.as_deref() {
            Some(role) => {
                let partition = role.split(':').nth(1).unwrap_or("aws");
                let account = account_of(role).unwrap_or_default();
                Ok(Some(format!(
                    "arn:{partition}:eks:{region}:{account}:cluster/{name}"
                )))
            }
            None => argocd
                .cluster_arn(region, name)
                .await
                .map_err(|e| ShiftError::aws(&self.records.located.label, e)),
        }
    }

    async fn secrets(&self, argocd: &dyn ArgoCdConnect) -> Result<Secrets, ShiftError> {
        let api = argocd
            .argocd(&self.namespace)
            .await
            .map_err(|e| self.kube(e))?;
        let stable = self.settings.stable_secret.clone();
        let Some(found) = api.get_secret(&stable).await.map_err(|e| self.kube(e))? else {
            return Err(ShiftError::TargetNotFound {
                path: self.records.located.label.clone(),
                message: format!(
                    "gitops.stableSecret: there is no Secret {stable} in namespace {}",
                    self.namespace
                ),
            });
        };
        let expected = &self.records.target.stable_set_identifier;
        refuse_stable_secret(&found, expected).map_err(|message| {
            ShiftError::TargetMisconfigured {
                path: self.records.located.label.clone(),
                message: format!("gitops.stableSecret: {message}; nothing was written"),
            }
        })?;
        let secrets = api.cluster_secrets().await.map_err(|e| self.kube(e))?;
        let arn = self.canary_arn(argocd).await?;
        let canary = canary_secret(&secrets, arn.as_deref()).map_err(|message| {
            ShiftError::TargetMisconfigured {
                path: self.records.located.label.clone(),
                message,
            }
        })?;
        Ok(Secrets {
            api,
            stable,
            stable_found: found,
            canary,
        })
    }

    /// Writes `pair` on the Secrets' weight annotations. A step's write (`Annotation::Step`)
    /// needs both Secrets and takes each annotation over only while it reads what this rollout
    /// expects there (`expected`: the baseline before the first step, what it last set after),
    /// whoever set it: any other value, or a write between the read and the apply, is a change
    /// outside this rollout, which then rolls back. A restore's (`Annotation::Keep`) goes on
    /// without the canary's Secret, writes the canary's first (what moves traffic away from
    /// it), and forces: a rollback must not depend on a write someone can refuse.
    async fn annotate(&self, pair: WeightPair, why: Annotation) -> Result<(), ShiftError> {
        let key = self.settings.weight_annotation();
        let Some(argocd) = self.argocd else {
            return Err(ShiftError::InvalidInput(format!(
                "{}: its weights go through Argo CD (\"via\": \"argocd\"), and this caller cannot \
                 reach the management cluster; set the `{key}` annotation to \"{}\" on Secret {} \
                 and to \"{}\" on the new cluster's Secret (namespace {}), or ExternalDNS puts the \
                 weights back",
                self.records.located.label,
                pair.stable,
                self.settings.stable_secret,
                pair.canary,
                self.namespace
            )));
        };
        let secrets = self.secrets(argocd).await?;
        let canary = match (&secrets.canary, why) {
            (Some(name), _) => Some(name),
            (None, Annotation::Keep) => None,
            (None, Annotation::Step { .. }) => {
                return Err(ShiftError::TargetNotFound {
                    path: self.records.located.label.clone(),
                    message: format!(
                        "no Argo CD cluster Secret registered by cluster-canary for cluster {} in {} (namespace {})",
                        self.cluster.name, self.cluster.region, self.namespace
                    ),
                })
            }
        };
        let writes = match why {
            Annotation::Step { expected } => [
                (Some(&secrets.stable), pair.stable, Some(expected.stable)),
                (canary, pair.canary, Some(expected.canary)),
            ],
            Annotation::Keep => [
                (canary, pair.canary, None),
                (Some(&secrets.stable), pair.stable, None),
            ],
        };
        for (name, weight, expected) in writes {
            let Some(name) = name else { continue };
            let expected = expected.map(|w| w.to_string());
            let write = match &expected {
                Some(expected) => AnnotationWrite::IfUnchanged { expected },
                None => AnnotationWrite::Force,
            };
            secrets
                .api
                .annotate_secret(name, key, &weight.to_string(), write)
                .await
                .map_err(|e| match e.kind {
                    KubeErrorKind::Conflict => self.changed_outside(name, e),
                    _ => self.kube(e),
                })?;
            info!(target_key = %self.key(), secret = %name, weight, ?write, "weight annotation written");
        }
        if canary.is_none() {
            warn!(target_key = %self.key(), "the new cluster has no Argo CD cluster Secret; only the stable's annotation was written");
        }
        Ok(())
    }

    /// A step found the weight annotation changed outside this rollout (a person's `kubectl
    /// annotate`, another GitOps tool), or changed between its read and its write: someone
    /// else is setting this weight, so the chain no longer carries the rollout's steps. It
    /// rolls back (the restore takes the annotation over).
    fn changed_outside(&self, secret: &str, source: KubeError) -> ShiftError {
        ShiftError::WeightsNotSynced {
            path: self.records.located.label.clone(),
            message: format!(
                "the `{}` annotation on Secret {secret} changed outside this rollout; nothing \
                 was overwritten, and the rollout rolls back ({source})",
                self.settings.weight_annotation()
            ),
        }
    }

    /// Reads the records until they are at `pair`, within the sync timeout.
    async fn await_route53(&self, pair: WeightPair) -> Result<(), ShiftError> {
        let timeout = self.timeout();
        let started = Instant::now();
        loop {
            let observed = self.records.read().await?.observed;
            if observed == Observed::Pair(pair) {
                info!(target_key = %self.key(), waited_ms = started.elapsed().as_millis() as u64, "Route 53 reads the step's weights");
                return Ok(());
            }
            if started.elapsed() >= timeout {
                return Err(ShiftError::WeightsNotSynced {
                    path: self.records.located.label.clone(),
                    message: format!(
                        "wrote {pair} on the Argo CD cluster Secrets' `{}` annotation, but after {} s Route 53 still reads {}: \
                         Argo CD has not synced the Ingresses, or ExternalDNS has not written them (gitops.syncTimeoutSeconds)",
                        self.settings.weight_annotation(),
                        timeout.as_secs(),
                        observed.describe()
                    ),
                });
            }
            tokio::time::sleep(poll_interval(timeout)).await;
        }
    }
}

/// Which write of the weight annotations: a step's from the weights it expects, or a
/// restore's (see `annotate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Annotation {
    Step { expected: WeightPair },
    Keep,
}

/// How often a wait reads Route 53: about 20 reads over the timeout, 1 to 5 s apart.
pub fn poll_interval(timeout: Duration) -> Duration {
    (timeout / 20).clamp(Duration::from_secs(1), Duration::from_secs(5))
}

/// The plan's stable Secret must be the Argo CD cluster Secret of the stable cluster: the
/// ApplicationSet renders the stable's Ingress from it, and its cluster `name` is the record's
/// set identifier. Anything else would annotate a Secret no Ingress follows (a step that never
/// syncs), or change a third cluster's Ingress.
fn refuse_stable_secret(secret: &ClusterSecret, stable_set_identifier: &str) -> Result<(), String> {
    if secret.labels.get(SECRET_TYPE_LABEL).map(String::as_str) != Some("cluster") {
        return Err(format!(
            "Secret {} is not an Argo CD cluster Secret (it has no label `{SECRET_TYPE_LABEL}: cluster`)",
            secret.name
        ));
    }
    match secret.data.get("name").map(String::as_str) {
        Some(name) if name == stable_set_identifier => Ok(()),
        found => Err(format!(
            "Secret {} registers cluster {}, not the stable cluster `{stable_set_identifier}` \
             (stableSetIdentifier: an Argo CD cluster's `name` is the set identifier its \
             Ingress gives ExternalDNS)",
            secret.name,
            found.map_or("(no name)".to_owned(), |n| format!("`{n}`"))
        )),
    }
}

/// The Secret registration created for the cluster `arn`: labelled as cluster-canary's, its
/// cluster-ARN annotation that ARN (account, region and name, never the name alone). More than
/// one is an error a person must settle.
fn canary_secret(secrets: &[ClusterSecret], arn: Option<&str>) -> Result<Option<String>, String> {
    let Some(arn) = arn else {
        return Ok(None);
    };
    let matches: Vec<&str> = secrets
        .iter()
        .filter(|s| s.labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE))
        .filter(|s| {
            s.annotations
                .get(CLUSTER_ARN_ANNOTATION)
                .map(String::as_str)
                == Some(arn)
        })
        .map(|s| s.name.as_str())
        .collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).to_owned())),
        several => Err(format!(
            "several Argo CD cluster Secrets register cluster {arn} ({}): remove the stale one",
            several.join(", ")
        )),
    }
}

#[async_trait]
impl TargetReader for GitOpsRouter<'_> {
    fn located(&self) -> &Located<'_> {
        &self.records.located
    }

    /// The records' reads, which know the GitOps mode from the target.
    async fn read(&self) -> Result<Reading, ShiftError> {
        self.records.read().await
    }

    fn moved(&self, found: &str) -> Option<ShiftError> {
        self.records.moved(found)
    }
}

#[async_trait]
impl TrafficRouter for GitOpsRouter<'_> {
    fn refuse_unwritable(&self, pair: WeightPair) -> Result<(), ShiftError> {
        self.records.refuse_unwritable(pair)
    }

    /// The annotations, then the wait for Route 53. The records read what this rollout last
    /// set (compare-and-set's compare passed): the annotations are expected there too.
    async fn write(&self, reading: &Reading, pair: WeightPair) -> Result<(), ShiftError> {
        let Observed::Pair(expected) = &reading.observed else {
            return Err(self
                .records
                .moved(&reading.observed.describe())
                .unwrap_or_else(|| self.records.changed_externally(&reading.observed)));
        };
        let expected = *expected;
        self.annotate(pair, Annotation::Step { expected }).await?;
        self.await_route53(pair).await
    }

    /// Route 53 directly: ExternalDNS would take a sync and an interval.
    async fn write_now(&self, _reading: &Reading, pair: WeightPair) -> Result<(), ShiftError> {
        self.records.write_records(pair).await
    }

    async fn keep(&self, baseline: WeightPair) -> Result<(), ShiftError> {
        self.annotate(baseline, Annotation::Keep).await
    }

    fn hold_seconds(&self) -> u64 {
        self.timeout().as_secs()
    }

    /// The records' checks, and that the Secrets are there to write on (the canary's comes
    /// with registration, after Prepare).
    async fn inspect(&self, shortest_bake_seconds: i64) -> Result<Inspection, ShiftError> {
        let mut inspection = self.records.inspect_records(shortest_bake_seconds).await?;
        inspection.kind = "route53 via argocd";
        let key = self.settings.weight_annotation();
        let secrets = match self.argocd {
            Some(argocd) => {
                let secrets = self.secrets(argocd).await?;
                let stable = &secrets.stable_found;
                inspection.notes.push(match stable.annotations.get(key) {
                    Some(value) => format!(
                        "Secret {} has `{key}: \"{}\"`, owned by {}: the first step takes it \
                         over (field manager {WEIGHTS_FIELD_MANAGER}), only while it still reads the \
                         baseline's weight",
                        stable.name,
                        truncate(value, MAX_ANNOTATION_SHOWN),
                        stable.describe_owners(key)
                    ),
                    None => format!(
                        "Secret {} has no `{key}` annotation yet: its Ingress renders weight 0 until \
                         the first step writes it",
                        stable.name
                    ),
                });
                let canary = secrets.canary.unwrap_or("the new cluster's, once registered".into());
                format!("Secrets {} and {canary}", secrets.stable)
            }
            // `cluster-canary plan check` from a person's machine: Prepare looks at them.
            None => format!(
                "Secrets {} and the new cluster's (not looked at from here: no access to the management cluster)",
                self.settings.stable_secret
            ),
        };
        inspection.notes.push(format!(
            "weights go through Argo CD: annotation `{key}` on {secrets}, read back from Route 53 within {} s",
            self.timeout().as_secs()
        ));
        Ok(inspection)
    }

    async fn health(&self, side: Side, min_healthy_targets: u32) -> Result<Health, ShiftError> {
        self.records.health(side, min_healthy_targets).await
    }

    async fn controllers(&self) -> Result<Vec<ControllerClaim>, ShiftError> {
        self.records.controllers().await
    }

    async fn detach(&self, expected: WeightPair) -> Result<Detach, ShiftError> {
        self.records.detach(expected).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn secret(name: &str, arn: Option<&str>, ours: bool) -> ClusterSecret {
        ClusterSecret {
            name: name.to_owned(),
            labels: if ours {
                BTreeMap::from([(MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned())])
            } else {
                BTreeMap::new()
            },
            annotations: arn
                .map(|arn| BTreeMap::from([(CLUSTER_ARN_ANNOTATION.to_owned(), arn.to_owned())]))
                .unwrap_or_default(),
            ..ClusterSecret::default()
        }
    }

    const HERE: &str = "arn:aws:eks:eu-west-1:111111111111:cluster/green";
    const THERE: &str = "arn:aws:eks:eu-west-1:222222222222:cluster/green";

    #[test]
    fn the_canary_secret_is_the_one_registration_made_for_the_cluster_arn() {
        let secrets = [
            secret("blue", None, false),
            secret("foreign-green", Some(HERE), false),
            secret("green-elsewhere", Some(THERE), true),
            secret(
                "green-us",
                Some("arn:aws:eks:us-east-1:111111111111:cluster/green"),
                true,
            ),
            secret("cluster-canary-green", Some(HERE), true),
        ];
        assert_eq!(
            canary_secret(&secrets, Some(HERE)),
            Ok(Some("cluster-canary-green".to_owned()))
        );
        assert_eq!(
            canary_secret(&secrets[..4], Some(HERE)),
            Ok(None),
            "same name and region, other account"
        );
        assert_eq!(canary_secret(&secrets, None), Ok(None), "no such cluster");
        let twice = [secret("a", Some(HERE), true), secret("b", Some(HERE), true)];
        let error = canary_secret(&twice, Some(HERE)).expect_err("ambiguous");
        assert!(
            error.contains(&format!(
                "several Argo CD cluster Secrets register cluster {HERE} (a, b)"
            )),
            "{error}"
        );
    }

    #[test]
    fn the_stable_secret_is_the_stable_clusters_argo_cd_cluster_secret() {
        let cluster_secret = |name: Option<&str>| {
            let mut s = secret("cluster-blue", None, false);
            s.labels
                .insert(SECRET_TYPE_LABEL.to_owned(), "cluster".to_owned());
            if let Some(name) = name {
                s.data.insert("name".to_owned(), name.to_owned());
            }
            s
        };
        assert_eq!(
            refuse_stable_secret(&cluster_secret(Some("blue")), "blue"),
            Ok(())
        );
        let error = refuse_stable_secret(&secret("cluster-blue", None, false), "blue")
            .expect_err("not a cluster Secret");
        assert!(
            error.contains("Secret cluster-blue is not an Argo CD cluster Secret (it has no label `argocd.argoproj.io/secret-type: cluster`)"),
            "{error}"
        );
        let error = refuse_stable_secret(&cluster_secret(Some("purple")), "blue")
            .expect_err("a third cluster");
        assert!(
            error.contains(
                "Secret cluster-blue registers cluster `purple`, not the stable cluster `blue`"
            ),
            "{error}"
        );
        let error = refuse_stable_secret(&cluster_secret(None), "blue")
            .expect_err("a cluster with no name");
        assert!(error.contains("registers cluster (no name)"), "{error}");
    }

    #[test]
    fn waits_read_about_twenty_times_one_to_five_seconds_apart() {
        assert_eq!(
            poll_interval(Duration::from_secs(10)),
            Duration::from_secs(1)
        );
        assert_eq!(
            poll_interval(Duration::from_secs(60)),
            Duration::from_secs(3)
        );
        assert_eq!(
            poll_interval(Duration::from_secs(180)),
            Duration::from_secs(5)
        );
    }
}
