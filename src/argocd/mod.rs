//! Argo CD users: Applications, Argo CD Image Updater's annotations and `ImageUpdater` CRD, and
//! KubeSphere's `kind: argocd`, written back to git byte-exactly.

pub mod edit;
pub mod image;
pub mod settings;
pub mod spans;
