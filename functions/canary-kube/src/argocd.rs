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

/// The field manager every apply uses, so repeated applies own the same fields.
pub const FIELD_MANAGER: &str = "cluster-canary";

/// The field manager of the GitOps weight annotations: its own, so that it owns that one
/// annotation (on a Secret registration did not create, nothing else) and registration's
/// applies, which leave the annotation out, never remove it.
pub const WEIGHTS_FIELD_MANAGER: &str = "cluster-canary-weights";

/// Whether a server-side apply takes fields another field manager owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Force {
    /// Another manager's field is a 409 Conflict: a step never overwrites someone else's
    /// weight.
    No,
    /// The field is taken over (`force=true`): a rollback outranks whoever set it.
    Yes,
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
    /// exists: a Secret that is not there is `NotFound`, never created. Without `force`, an
    /// annotation another manager owns is a `Conflict` (409); with it (a rollback's write),
    /// the annotation is taken over from whoever set it.
    async fn annotate_secret(
        &self,
        name: &str,
        key: &str,
        value: &str,
        force: Force,
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

fn decoded(secret: Secret) -> ClusterSecret {
    ClusterSecret {
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
        force: Force,
    ) -> Result<(), KubeError> {
        let action = self.action("annotate Secret", name);
        // An apply creates what is missing: look first, so a Secret deleted in between (the
        // stable cluster's, say) is reported rather than re-created empty.
        if self.get_secret(name).await?.is_none() {
            return Err(KubeError::new(
                KubeErrorKind::NotFound,
                action,
                format!("Secret {name} does not exist"),
            ));
        }
        let body = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": self.namespace, "annotations": {key: value}},
        });
        let params = match force {
            Force::No => PatchParams::apply(WEIGHTS_FIELD_MANAGER),
            Force::Yes => PatchParams::apply(WEIGHTS_FIELD_MANAGER).force(),
        };
        self.secrets
            .patch(name, &params, &Patch::Apply(&body))
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
