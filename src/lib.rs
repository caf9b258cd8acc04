//! image-update: byte-preserving GitOps image automation.
//!
//! Two halves, joined by one operation:
//!
//! ```text
//!                     ┌────────────── operation::run ───────────────┐
//! front ends          │                                             │
//!  cli (update,       │  policies ──> PolicyTable <── reflector      │
//!  policy), krm  ──>  │  (values, ImagePolicy      (definitions ──>  │ ──> Outcome
//!  UpdateConfig       │   status, scope)            registry ──>     │     (report, changes,
//!                     │                             selection)       │      diagnostics,
//!                     │  updater: source ─> scan ─> plan ─> rewrite  │      written files)
//!                     │           ─> report ─> sink                  │
//!                     └─────────────────────────────────────────────┘
//! ```
//!
//! * [`operation`]: [`operation::UpdateConfig`] in, [`operation::Outcome`]
//!   out; the one orchestration every front end shares.
//! * [`updater`]: finds `$imagepolicy` markers and splices new values into
//!   the original bytes; [`updater::plan`] is its pure core.
//! * [`reflector`]: computes policy results from registries (the registry
//!   client itself is the `image-update-registry` crate).
//! * [`policies`]: policy results, their scope and the table markers are
//!   looked up in. [`automation`]: Flux ImageUpdateAutomation objects.
//! * [`diagnostic`] and [`error`]: what the user is told.
//! * Front ends: [`cli`] (and its `fn` subcommand over [`krm`]).
//!
//! `docs/architecture.md` has the file map.

pub mod argocd;
pub mod automation;
pub mod cli;
pub mod diagnostic;
pub mod error;
pub mod input;
#[cfg(feature = "job")]
pub mod job;
pub mod krm;
pub mod message;
pub mod operation;
pub mod policies;
pub mod pool;
pub mod progress;
pub mod reflector;
pub mod text;
pub mod updater;
pub mod yaml;
