//! The git layer of image-update's Job mode, in-process with libgit2 (no `git` binary).
//!
//! The Job replaces Flux's image-automation-controller with a Kubernetes Job: clone a repository
//! at a ref, run the update over the work tree, commit only when something changed, sign, push,
//! and survive push races. It runs in a `FROM scratch` image as uid 65534 or root, so every git
//! operation happens in this process:
//!
//! * [`Remote`]: a URL with its [`Auth`], extra [`HttpHeader`]s and [`HostKeyCheck`]. HTTPS, SSH,
//!   and plain HTTP to loopback (elsewhere only with `allow_plain_http`); `file://` and paths only
//!   with `allow_local`. [`Remote::resolve`] and [`Remote::ls_remote`] read a remote ref's tip
//!   without cloning.
//! * [`Checkout::clone`]: a shallow (by default) clone at a [`CheckoutRef`]; then
//!   [`Checkout::observed_source_revision`], [`Checkout::commit`] (signed by a [`Signer`] when
//!   given), [`Checkout::push`], and [`push_with_retry`] for the whole race-proof push.
//!
//! Credentials are held in [`Secret`]s, which never print; no error, log line or `Debug` output
//! of this crate contains one. [`HttpHeader::from_git_config`] reads the `http.extraHeader`
//! entries (GitHub's checkout token).
//!
//! # Transports
//!
//! libgit2 does the git protocol; the bytes travel through this crate's transports
//! (`transport/`): smart HTTP over ureq and rustls (trusting the bundled Mozilla roots, the
//! system's store and [`RemoteSettings::ca_certificates`]), and SSH over russh (host keys checked
//! against [`KnownHosts`]). No OpenSSL or libssh2 is linked. A connect (TCP, TLS or SSH
//! handshake) gives up after 30 s and a read that receives nothing after 120 s by default
//! ([`set_timeouts`]).
//!
//! # libgit2's process-wide options
//!
//! Set once, before the first operation (`global.rs` and `transport/mod.rs`, the workspace's
//! uses of `unsafe`): the transports are registered, and no user or system git configuration is
//! read.
//!
//! # Repository ownership
//!
//! libgit2 refuses to open a repository owned by another user; that check stays on. The Job is
//! not affected: it clones into a directory its own user made, and never reopens a repository
//! by path.

mod checkout;
mod error;
mod global;
mod known_hosts;
mod reference;
mod remote;
mod retry;
mod sign;
mod transport;
mod url;

pub use checkout::{
    Author, Checkout, CloneOptions, CommitSettings, ForcePush, PushRequest, Pushed, Timestamp,
};
pub use error::{Error, ErrorKind, KeyKind};
pub use git2::Oid;
pub use global::{CONNECT_TIMEOUT, READ_TIMEOUT, set_timeouts};
pub use image_update_secret::Secret;
pub use known_hosts::{HostKeyCheck, HostKeyProblem, KnownHosts, PresentedKey};
pub use reference::{CheckoutRef, Revision};
pub use remote::{Auth, HttpHeader, Remote, RemoteRef, RemoteSettings};
pub use retry::{PushOutcome, RetryError, RetryPolicy, push_with_retry};
pub use sign::Signer;
pub use url::Transport;
