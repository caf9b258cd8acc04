//! Argo CD users: Applications, Argo CD Image Updater's annotations and `ImageUpdater` CRD, and
//! KubeSphere's `kind: argocd`, written back to git byte-exactly.

pub mod annotations;
pub mod application;
pub mod catalog;
pub mod config;
pub mod crd;
pub mod edit;
pub mod image;
pub mod kubesphere;
pub mod plan;
pub mod settings;
pub mod spans;
pub mod spec_update;
pub mod target;
pub mod writers;
