//! Argo CD cluster registration through the Kubernetes API of the management cluster.

pub mod access;
pub mod appsets;
pub mod argocd;
pub mod error;
pub mod registration;
pub mod token;
mod transport;

pub use access::{
    connect, AccessDeps, ArgoCdConnect, ManagementAccess, OwnedManagement, SdkAccess,
};
pub use argocd::{
    may_take_over, AnnotationWrite, ArgoCdApi, ClusterSecret, ClusterSecrets, KubeArgoCd,
};
pub use error::{KubeError, KubeErrorKind};
pub use registration::{
    apps_status, argocd_server, deregister, desired_secret, register, retire_secret, secret_labels,
    AppsQuery, RegistrationError,
};
