//! Argo CD's side of the management cluster: cluster Secrets and Applications in Argo CD's
//! namespace, behind a small trait so the registration logic is tested without a network.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions};
use kube::core::ApiResource;
use serde_json::{json, Value};

use crate::error::{KubeError, KubeErrorKind};
use canary_core::argocd::SECRET_TYPE_LABEL;
use canary_core::limits::truncate;

/// The field manager every apply uses, so repeated applies own the same fields.
pub const FIELD_MANAGER: &str = "cluster-canary";

/// The field manager of the GitOps weight annotations: its own, so that it owns that one
/// annotation (on a Secret registration did not create, nothing else) and registration's
/// applies, which leave the annotation out, never remove it.
pub const WEIGHTS_FIELD_MANAGER: &str = "cluster-canary-weights";

/// Most bytes of someone else's annotation value a message repeats.
pub const MAX_ANNOTATION_SHOWN: usize = 64;

/// How a weight annotation is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnotationWrite<'a> {
    /// A step's write: the annotation is taken over (a forced apply, whoever set it: a
    /// `kubectl create`, `apply` or `annotate` makes its own manager the owner) only while it
    /// still reads `expected` (or is missing, or already reads the new value), with the
    /// `resourceVersion` just read as the apply's precondition, so that a write in between is a
    /// 409 and never overwritten. Any other value is a `Conflict`: someone else set the weight.
    IfUnchanged { expected: &'a str },
    /// A rollback's write: taken over whatever it reads (`force=true`); a rollback must not
    /// depend on a write someone can refuse.
    Force,
}

/// Whether a step may take over a weight annotation that reads `current`: yes when it reads
/// what the rollout expects, the value being written (an earlier attempt wrote it), or
/// nothing; otherwise what it reads.
pub fn may_take_over<'c>(
    current: Option<&'c str>,
    expected: &str,
    value: &str,
) -> Result<(), &'c str> {
    match current {
        None => Ok(()),
        Some(found) if found == expected || found == value => Ok(()),
        Some(found) => Err(found),
    }
}

/// A Secret as registration sees it: labels and data values decoded to text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterSecret {
    pub name: String,
    /// The object's uid as read (none for a Secret still to be written): a delete names it
    /// as a precondition, so a Secret re-created in between is never deleted.
    pub uid: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub data: BTreeMap<String, String>,
    /// Who owns each annotation, from `managedFields`: `"kubectl-create" (Update)`.
    pub annotation_owners: BTreeMap<String, Vec<String>>,
}

impl ClusterSecret {
    /// The field managers that own annotation `key`, or "no field manager".
    pub fn describe_owners(&self, key: &str) -> String {
        owners_text(self.annotation_owners.get(key))
    }
}

fn owners_text(owners: Option<&Vec<String>>) -> String {
    match owners {
        Some(owners) if !owners.is_empty() => owners.join(", "),
        _ => "no field manager".to_owned(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppStatus {
    pub name: String,
    pub destination_server: Option<String>,
    pub destination_name: Option<String>,
    pub sync: Option<String>,
    pub health: Option<String>,
    /// The ApplicationSet that generated it (its owner reference), if one did.
    pub application_set: Option<String>,
}

/// An ApplicationSet: its name and `spec` (generators are read from it).
#[derive(Debug, Clone, PartialEq)]
pub struct ApplicationSet {
    pub name: String,
    pub spec: Value,
}

/// Argo CD's refresh annotation: `normal` asks the controller to compare the app with Git
/// again now, instead of at its next periodic refresh.
pub const REFRESH_ANNOTATION: &str = "argocd.argoproj.io/refresh";

/// The cluster Secrets as GitOps traffic targets use them: read, and one annotation written.
/// (A trait of its own, so shift-weights links nothing that deletes a Secret or reads an
/// Application.)
#[async_trait]
pub trait ClusterSecrets: Send + Sync {
    async fn get_secret(&self, name: &str) -> Result<Option<ClusterSecret>, KubeError>;
    /// Every Secret labelled as an Argo CD cluster.
    async fn cluster_secrets(&self) -> Result<Vec<ClusterSecret>, KubeError>;
    /// Server-side apply of one annotation with [`WEIGHTS_FIELD_MANAGER`] on a Secret that
    /// exists: a Secret that is not there is `NotFound`, never created; see [`AnnotationWrite`]
    /// for when the annotation is taken over and when it is a `Conflict`.
    async fn annotate_secret(
        &self,
        name: &str,
        key: &str,
        value: &str,
        write: AnnotationWrite<'_>,
    ) -> Result<(), KubeError>;
}

#[async_trait]
pub trait ArgoCdApi: ClusterSecrets {
    /// Server-side apply with [`FIELD_MANAGER`], without force: fields another manager owns
    /// are a conflict, not overwritten.
    async fn apply_secret(&self, secret: &ClusterSecret) -> Result<(), KubeError>;
    /// `false` when there was nothing to delete.
    async fn delete_secret(&self, name: &str, uid: Option<&str>) -> Result<bool, KubeError>;
    async fn applications(&self) -> Result<Vec<AppStatus>, KubeError>;
    async fn application_sets(&self) -> Result<Vec<ApplicationSet>, KubeError>;
    /// Sets [`REFRESH_ANNOTATION`] on an Application (a merge patch; Argo CD removes it when
    /// it has refreshed).
    async fn request_refresh(&self, application: &str) -> Result<(), KubeError>;
}

pub struct KubeArgoCd {
    namespace: String,
    secrets: Api<Secret>,
    applications: Api<DynamicObject>,
    application_sets: Api<DynamicObject>,
}

impl KubeArgoCd {
    pub fn new(client: kube::Client, namespace: &str) -> Self {
        KubeArgoCd {
            namespace: namespace.to_owned(),
            secrets: Api::namespaced(client.clone(), namespace),
            applications: Api::namespaced_with(
                client.clone(),
                namespace,
                &argo_resource("Application"),
            ),
            application_sets: Api::namespaced_with(
                client,
                namespace,
                &argo_resource("ApplicationSet"),
            ),
        }
    }

    fn action(&self, verb: &str, what: &str) -> String {
        format!("{verb} {what} in namespace {}", self.namespace)
    }
}

/// An Argo CD custom resource (argoproj.io/v1alpha1: `Application`, `ApplicationSet`), for
/// dynamic access.
pub fn argo_resource(kind: &str) -> ApiResource {
    ApiResource {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        api_version: "argoproj.io/v1alpha1".into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_ascii_lowercase()),
    }
}

/// Each annotation's owners, from `managedFields` (FieldsV1: `f:metadata` → `f:annotations` →
/// `f:<key>`).
fn annotation_owners(secret: &Secret) -> BTreeMap<String, Vec<String>> {
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entry in secret.metadata.managed_fields.iter().flatten() {
        let Some(fields) = &entry.fields_v1 else {
            continue;
        };
        let annotations = fields
            .0
            .pointer("/f:metadata/f:annotations")
            .and_then(Value::as_object);
        for key in annotations.into_iter().flat_map(|a| a.keys()) {
            if let Some(key) = key.strip_prefix("f:") {
                owners.entry(key.to_owned()).or_default().push(format!(
                    "\"{}\" ({})",
                    entry.manager.as_deref().unwrap_or(""),
                    entry.operation.as_deref().unwrap_or("")
                ));
            }
        }
    }
    owners
}

fn decoded(secret: Secret) -> ClusterSecret {
    let annotation_owners = annotation_owners(&secret);
    ClusterSecret {
        annotation_owners,
        name: secret.metadata.name.unwrap_or_default(),
        uid: secret.metadata.uid,
        labels: secret.metadata.labels.unwrap_or_default(),
        annotations: secret.metadata.annotations.unwrap_or_default(),
        data: secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
            .collect(),
    }
}

fn text(object: &DynamicObject, pointer: &str) -> Option<String> {
    object
        .data
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[async_trait]
impl ClusterSecrets for KubeArgoCd {
    async fn get_secret(&self, name: &str) -> Result<Option<ClusterSecret>, KubeError> {
        self.secrets
            .get_opt(name)
            .await
            .map(|s| s.map(decoded))
            .map_err(|e| KubeError::from_kube(self.action("get Secret", name), e))
    }

    async fn cluster_secrets(&self) -> Result<Vec<ClusterSecret>, KubeError> {
        let params = ListParams::default().labels(&format!("{SECRET_TYPE_LABEL}=cluster"));
        self.secrets
            .list(&params)
            .await
            .map(|list| list.items.into_iter().map(decoded).collect())
            .map_err(|e| KubeError::from_kube(self.action("list", "cluster Secrets"), e))
    }

    async fn annotate_secret(
        &self,
        name: &str,
        key: &str,
        value: &str,
        write: AnnotationWrite<'_>,
    ) -> Result<(), KubeError> {
        let action = self.action("annotate Secret", name);
        // An apply creates what is missing: look first, so a Secret deleted in between (the
        // stable cluster's, say) is reported rather than re-created empty.
        let Some(current) = self
            .secrets
            .get_opt(name)
            .await
            .map_err(|e| KubeError::from_kube(self.action("get Secret", name), e))?
        else {
            return Err(KubeError::new(
                KubeErrorKind::NotFound,
                action,
                format!("Secret {name} does not exist"),
            ));
        };
        let mut metadata =
            json!({"name": name, "namespace": self.namespace, "annotations": {key: value}});
        if let AnnotationWrite::IfUnchanged { expected } = write {
            let found = current
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key));
            if let Err(found) = may_take_over(found.map(String::as_str), expected, value) {
                return Err(KubeError::new(
                    KubeErrorKind::Conflict,
                    action,
                    format!(
                        "the annotation reads \"{}\" (set by {}), not \"{expected}\" as this rollout left it",
                        // Anyone's value: cut, as it travels in the rollout's cause.
                        truncate(found, MAX_ANNOTATION_SHOWN),
                        owners_text(annotation_owners(&current).get(key))
                    ),
                ));
            }
            // The version just read is the apply's precondition: a write since is a 409.
            metadata["resourceVersion"] = json!(current.metadata.resource_version);
        }
        let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata});
        self.secrets
            .patch(
                name,
                &PatchParams::apply(WEIGHTS_FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
            .map(drop)
            .map_err(|e| KubeError::from_kube(action, e))
    }
}

#[async_trait]
impl ArgoCdApi for KubeArgoCd {
    async fn apply_secret(&self, secret: &ClusterSecret) -> Result<(), KubeError> {
        let data: BTreeMap<&String, ByteString> = secret
            .data
            .iter()
            .map(|(k, v)| (k, ByteString(v.as_bytes().to_vec())))
            .collect();
        let body = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": secret.name, "namespace": self.namespace,
                "labels": secret.labels, "annotations": secret.annotations,
            },
            "type": "Opaque",
            "data": data,
        });
        self.secrets
            .patch(
                &secret.name,
                &PatchParams::apply(FIELD_MANAGER),
                &Patch::Apply(&body),
            )
            .await
            .map(drop)
            .map_err(|e| KubeError::from_kube(self.action("apply Secret", &secret.name), e))
    }

    async fn delete_secret(&self, name: &str, uid: Option<&str>) -> Result<bool, KubeError> {
        let params = DeleteParams {
            preconditions: uid.map(|uid| Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.secrets.delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(e) => Err(KubeError::from_kube(self.action("delete Secret", name), e)),
        }
    }

    async fn applications(&self) -> Result<Vec<AppStatus>, KubeError> {
        let list = self
            .applications
            .list(&ListParams::default())
            .await
            .map_err(|e| KubeError::from_kube(self.action("list", "Applications"), e))?;
        Ok(list
            .items
            .iter()
            .map(|app| AppStatus {
                name: app.metadata.name.clone().unwrap_or_default(),
                destination_server: text(app, "/spec/destination/server"),
                destination_name: text(app, "/spec/destination/name"),
                sync: text(app, "/status/sync/status"),
                health: text(app, "/status/health/status"),
                application_set: app
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|owner| owner.kind == "ApplicationSet")
                    .map(|owner| owner.name.clone()),
            })
            .collect())
    }

    async fn application_sets(&self) -> Result<Vec<ApplicationSet>, KubeError> {
        let list = self
            .application_sets
            .list(&ListParams::default())
            .await
            .map_err(|e| KubeError::from_kube(self.action("list", "ApplicationSets"), e))?;
        Ok(list
            .items
            .into_iter()
            .map(|set| ApplicationSet {
                name: set.metadata.name.unwrap_or_default(),
                spec: set.data.get("spec").cloned().unwrap_or(Value::Null),
            })
            .collect())
    }

    async fn request_refresh(&self, application: &str) -> Result<(), KubeError> {
        let patch = json!({"metadata": {"annotations": {REFRESH_ANNOTATION: "normal"}}});
        self.applications
            .patch(application, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(drop)
            .map_err(|e| KubeError::from_kube(self.action("refresh Application", application), e))
    }
}

#[cfg(test)]
mod tests {
    use super::may_take_over;

    #[test]
    fn a_step_takes_over_only_the_value_it_expects() {
        assert_eq!(
            may_take_over(Some("100"), "100", "90"),
            Ok(()),
            "the baseline"
        );
        assert_eq!(may_take_over(None, "0", "10"), Ok(()), "nobody set it");
        assert_eq!(
            may_take_over(Some("90"), "100", "90"),
            Ok(()),
            "an earlier attempt of this step wrote it"
        );
        assert_eq!(
            may_take_over(Some("70"), "100", "90"),
            Err("70"),
            "someone else's value"
        );
        assert_eq!(may_take_over(Some(""), "0", "10"), Err(""));
    }
}
