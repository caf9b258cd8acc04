//! image-update: byte-preserving GitOps image automation.
pub mod registry;
