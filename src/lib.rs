//! image-update: byte-preserving GitOps image automation.
//!
//! Two halves, joined by one operation whose one outcome every output is
//! rendered from:
//!
//! ```text
//!  cli (update, fn, action,   ┌──────────── operation::run ────────────┐
//!  job, message, policy)      │ policies ──> PolicyTable <── reflector │
//!  krm, job  ── UpdateConfig ─>│ updater: source ─> scan ─> plan ─>     │──> Outcome ──> render
//!                             │          rewrite ─> sink (atomic)      │    (changes,    (terminal,
//!                             └────────────────────────────────────────┘     diagnostics)  github, kpt,
//!                                                                                          status, report,
//!                                                                                          message)
//! ```
//!
//! The modules, lowest layer first (no module imports from a layer above its
//! own; `tests/architecture.rs` checks it, `docs/architecture.md` has the file
//! map and says which function renders each line of output):
//!
//! 0. The leaf vocabulary and infrastructure: [`text`] (line and column),
//!    [`object`] (object identity), [`setter`] (what a marker names),
//!    [`diagnostic`] (findings) and [`error`] (what stops a run), [`failure`]
//!    (the kinds of failure and their exit statuses), [`limits`] (what one
//!    object may list), [`argo_image`] (image references as Argo CD Image
//!    Updater reads them), [`escape`] (values
//!    from the input made safe to show), [`same_object`] (one object read
//!    from two places), [`input`]
//!    (reading with a cap), [`yaml`] (the one YAML layer: documents as
//!    values with positions, the span tree, the one syntax error and the one
//!    rule for plain scalars; [`yaml::edit`], every edit of YAML text: a
//!    scalar's new value, the Argo CD write-back's editor, a ResourceList's
//!    items and results), [`pool`]
//!    (the worker pool), [`walk`] (the directory walk), [`sink`] (atomic,
//!    all-or-nothing writes), [`teardown`] (what a one-shot process leaves
//!    to its exit).
//! 1. The domain: [`policies`] (policy results, scope, the table markers are
//!    looked up in), [`automation`] (Flux ImageUpdateAutomation, and the one
//!    reader of its git section), [`git_repository`] (the Flux GitRepository
//!    an automation updates), [`kubesphere`] (a KubeSphere ImageUpdater, read
//!    once for the automation, the reflector and the Argo CD write-back),
//!    [`automation_file`] (the automation a file names, of either kind), [`create`]
//!    (the objects `create` writes), [`updater`] (find markers and plan
//!    their new values; [`updater::plan`] is its pure core), [`reflector`] (policy
//!    results from registries; the client is the `image-update-registry`
//!    crate), [`argocd`] (Argo CD Applications, Argo CD Image Updater's
//!    settings and their write-back), [`provenance`] (where each changed
//!    image was built from: sources, links, signer), [`outcome`] (what a run
//!    found and did).
//! 2. The views the operation writes: [`render`]'s report and commit message,
//!    and the Job's status.
//! 3. [`operation`]: the one orchestration every front end shares; [`deploy`]:
//!    automations into the workloads that run them.
//! 4. [`job`]: clone, run the operation, commit, push.
//! 5. [`krm`] (the KRM function) and [`render`]'s renderers for each audience.
//! 6. [`cli`] (the command line; only it prints or exits) and [`api`] (the
//!    facade for the fuzz targets, benches and tests).

// The crate's documentation is written for its developers and built with
// --document-private-items: the map above links private modules.
#![allow(rustdoc::private_intra_doc_links)]
// The library writes nothing to the terminal and never ends the process:
// only the command line (src/cli, through cli/stdio.rs) and src/main.rs
// do; clippy.toml's disallowed-methods list holds the standard streams and
// the process's end for every other module.
#![deny(clippy::print_stdout, clippy::print_stderr)]
#![warn(unreachable_pub)]

pub mod api;
pub(crate) mod argo_image;
pub(crate) mod argocd;
pub(crate) mod automation;
pub(crate) mod automation_file;
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub(crate) mod create;
pub(crate) mod deploy;
pub(crate) mod diagnostic;
pub(crate) mod error;
pub(crate) mod escape;
pub(crate) mod failure;
pub(crate) mod git_repository;
pub(crate) mod input;
#[cfg(feature = "job")]
pub(crate) mod job;
pub(crate) mod krm;
pub(crate) mod kubesphere;
pub(crate) mod limits;
pub(crate) mod object;
pub(crate) mod operation;
pub(crate) mod outcome;
pub(crate) mod policies;
pub(crate) mod pool;
pub(crate) mod provenance;
pub(crate) mod reflector;
pub(crate) mod render;
pub(crate) mod same_object;
pub(crate) mod setter;
pub(crate) mod sink;
pub(crate) mod teardown;
pub(crate) mod text;
pub(crate) mod updater;
pub(crate) mod walk;
pub(crate) mod yaml;
