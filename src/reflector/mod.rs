//! The reflector: image-update does the image-reflector-controller's job.
//!
//! ```text
//! YAML documents ─> definitions (ImageRepository + ImagePolicy, ImageUpdater,
//!                   dockerconfigjson Secrets) ─> fetch (list tags per
//!                   repository concurrently through the registry client,
//!                   select with `selection`, digests) ─> Resolved
//!               ─> PolicyTable entries (markers) and --emit-policies
//! ```
//!
//! `definitions` and `selection` are pure; `fetch` is the only part that
//! talks to registries (through the `image-update-registry` crate). Errors are collected for every policy and returned together:
//! one failing policy fails the whole run before any file is written
//! (docs/fetch.md).

pub(crate) mod definitions;
pub(crate) mod emit;
pub(crate) mod fetch;
pub(crate) mod gate;
pub(crate) mod kubesphere;
pub(crate) mod selection;
pub(crate) mod verdicts;

pub(crate) use definitions::{Definition, collect, may_define, may_define_item};
pub(crate) use fetch::{Resolved, resolve};
