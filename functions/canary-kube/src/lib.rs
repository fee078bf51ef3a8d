//! Argo CD cluster registration through the Kubernetes API of the management cluster.

pub mod token;
