//! image-update: byte-preserving GitOps image automation.
