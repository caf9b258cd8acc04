//! The network transports: smart HTTP(S) over ureq and rustls, and SSH over russh, plugged into
//! libgit2 as its `http`, `https` and `ssh` subtransports.
//!
//! libgit2's own transports need OpenSSL and libssh2, two C libraries the static binary would
//! otherwise carry next to rustls, which the registry client already uses. libgit2 still does
//! everything git-specific (the protocol's pkt-lines, negotiation, packs, shallow fetches); a
//! subtransport only moves bytes: for each git service it opens a request or an SSH channel and
//! hands libgit2 a stream.
//!
//! libgit2 makes a transport through a process-wide factory that cannot carry per-operation
//! settings, so each network operation activates its [`Session`] (URL, credentials, headers,
//! host key policy, extra CA certificates, timeouts) in a thread-local for its duration:
//! libgit2 runs the transport on the calling thread. A transport records why it failed in the
//! session ([`Failure`]), and the caller turns that into the crate's [`crate::Error`]: libgit2
//! only passes a message through.

pub(crate) mod http;
pub(crate) mod ssh;

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::known_hosts::{HostKeyProblem, PresentedKey};
use crate::remote::Remote;

/// Why a transport failed, in the terms of [`crate::Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server refused the credentials, or wants credentials that were not configured.
    Authentication(&'static str),
    /// The SSH host key was not accepted.
    HostKey(Option<PresentedKey>, HostKeyProblem),
    /// The TLS certificate was not trusted.
    Certificate,
    /// Connecting, a timeout, or a broken connection; may succeed later.
    Network,
    /// The server answered, but not as a git server does (an unexpected HTTP status or content
    /// type, a command that exited with an error).
    Status,
}

/// The settings of one network operation, shared with the transport libgit2 makes for it.
pub(crate) struct Session {
    /// The remote: URL, credentials, extra headers, host key policy, extra CA certificates.
    pub(crate) remote: Remote,
    /// How long a connect (TCP, TLS or SSH handshake) may take.
    pub(crate) connect_timeout: Duration,
    /// How long a read may wait for data.
    pub(crate) read_timeout: Duration,
    /// The first failure a transport recorded.
    failure: Mutex<Option<Failure>>,
}

impl Session {
    pub(crate) fn new(remote: &Remote) -> Self {
        let (connect_timeout, read_timeout) = crate::global::timeouts();
        Self {
            remote: remote.clone(),
            connect_timeout,
            read_timeout,
            failure: Mutex::new(None),
        }
    }

    /// Records why the operation failed (the first record wins: later ones are consequences)
    /// and returns an I/O error with `message` for libgit2 to pass on. `message` must not hold
    /// a secret.
    pub(crate) fn fail(&self, failure: Failure, message: impl Into<String>) -> std::io::Error {
        let mut slot = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(failure);
        }
        io_error(message)
    }

    /// The recorded failure, if any.
    pub(crate) fn failure(&self) -> Option<Failure> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The git command of a service, and whether the action asks for its ref advertisement.
pub(crate) fn service(action: git2::transport::Service) -> (&'static str, bool) {
    use git2::transport::Service;
    match action {
        Service::UploadPackLs => ("git-upload-pack", true),
        Service::UploadPack => ("git-upload-pack", false),
        Service::ReceivePackLs => ("git-receive-pack", true),
        Service::ReceivePack => ("git-receive-pack", false),
    }
}

/// An I/O error carrying `message` (libgit2 shows it as the operation's error message).
pub(crate) fn io_error(message: impl Into<String>) -> std::io::Error {
    std::io::Error::other(message.into())
}

thread_local! {
    /// The session of the network operation running on this thread.
    static ACTIVE: RefCell<Option<Arc<Session>>> = const { RefCell::new(None) };
}

/// Makes a session the active one on this thread until dropped.
pub(crate) struct Activation {
    session: Arc<Session>,
    previous: Option<Arc<Session>>,
}

impl Activation {
    pub(crate) fn new(session: Session) -> Self {
        let session = Arc::new(session);
        let previous = ACTIVE.with(|active| active.borrow_mut().replace(Arc::clone(&session)));
        Self { session, previous }
    }

    /// The active session.
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }
}

impl Drop for Activation {
    fn drop(&mut self) {
        let previous = self.previous.take();
        ACTIVE.with(|active| *active.borrow_mut() = previous);
    }
}

/// The session of the operation running on this thread.
fn active() -> Result<Arc<Session>, git2::Error> {
    ACTIVE
        .with(|active| active.borrow().clone())
        .ok_or_else(|| git2::Error::from_str("no remote settings are active on this thread"))
}

/// Registers the transports with libgit2, for `http://`, `https://`, `ssh://` and the
/// scp-like `user@host:path` (which libgit2 hands to the `ssh://` transport).
///
/// # Safety
///
/// `git2::transport::register` changes libgit2's global transport table without locking: call
/// this once, before any other libgit2 operation (`global::init` does).
#[allow(unsafe_code)]
pub(crate) unsafe fn register() -> Result<(), git2::Error> {
    // libgit2 appends `://` to the scheme, and looks registered schemes up before its own.
    for scheme in ["http", "https"] {
        // SAFETY: see the function's contract.
        unsafe {
            git2::transport::register(scheme, |remote| {
                let session = active()?;
                git2::transport::Transport::smart(remote, true, http::Subtransport::new(session))
            })?;
        }
    }
    // SAFETY: see the function's contract.
    unsafe {
        git2::transport::register("ssh", |remote| {
            let session = active()?;
            git2::transport::Transport::smart(remote, false, ssh::Subtransport::new(session))
        })
    }
}
