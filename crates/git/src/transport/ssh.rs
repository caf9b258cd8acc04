//! Git over SSH with russh: the `ssh://` and scp-like `user@host:path` remotes.
//!
//! Over SSH, a git service is a command the server runs: `git-upload-pack '<path>'` to fetch,
//! `git-receive-pack '<path>'` to push. Its stdout and stdin are the protocol, its stderr says
//! why it failed. libgit2 registers this transport as stateful: it asks for the advertisement
//! (`UploadPackLs`, `ReceivePackLs`) and then keeps talking on the same stream, so each such
//! action execs one command on a new session channel, and the stream carries that one
//! conversation to its end.
//!
//! How it is put together:
//!
//! * libgit2 calls the stream's `Read` and `Write` synchronously, so the transport owns a
//!   current-thread tokio runtime and blocks on it inside each call; russh's connection task
//!   runs only then, which is enough, since git alternates between writing and reading;
//! * the first action of a transport connects: TCP and the SSH handshake each within the
//!   connect timeout, the server's host key checked against the session's `known_hosts` during
//!   the handshake (before any credential is sent), then one authentication attempt, with no
//!   retry loop, so that wrong credentials fail at once;
//! * an RSA key signs with `rsa-sha2-512` or `rsa-sha2-256` (whichever the server announces),
//!   never SHA-1, which OpenSSH 9 refuses;
//! * while git writes (a pack, during a push) the stream keeps taking what the server sends, so
//!   russh's per-channel queue never fills and stalls the connection that must carry the window
//!   adjustments the write waits for;
//! * every wait (a read, or a write waiting for the flow-control window) gives up after the read
//!   timeout; when the command ends without having said anything, or with a non-zero exit
//!   status, the error quotes (sanitised, shortened) what it wrote to stderr.
//!
//! Failures are recorded in the [`Session`] before they reach libgit2 as an error message, so
//! the caller reports a refused host key or key as such, not as a generic network error.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::io::{Read, Write};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream};
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};
use russh::{ChannelMsg, ChannelReadHalf, ChannelWriteHalf, client};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWrite;

use super::{Failure, Session, io_error};
use crate::known_hosts::{HostKeyCheck, presented_key};
use crate::remote::Auth;

/// The port of `ssh://host/...` and of every scp-like URL.
const DEFAULT_PORT: u16 = 22;

/// The user when neither the URL nor the credentials name one (GitHub's, GitLab's, Gitea's).
const DEFAULT_USER: &str = "git";

/// How much of a command's stderr is kept.
const STDERR_CAP: usize = 16 * 1024;

/// How many characters of stderr an error message quotes.
const EXCERPT_CHARS: usize = 1000;

/// How long closing a channel or the connection may take (a courtesy to the server).
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(1);

/// Why authentication failed, for [`Failure::Authentication`].
const KEY_UNUSABLE: &str =
    "the SSH key could not be loaded (wrong passphrase or unsupported format)";
const KEY_REFUSED: &str = "the server refused the SSH key";
const NO_CREDENTIALS: &str = "the server asks for credentials and none are configured";
const PASSWORD_OVER_SSH: &str =
    "a user name and password are configured but the server asks for an SSH key";
const TOKEN_OVER_SSH: &str = "a bearer token is configured but the server asks for an SSH key";

/// The SSH subtransport of one libgit2 transport: one SSH connection, made on the first
/// action, with a session channel per git command.
pub(crate) struct Subtransport {
    session: Arc<Session>,
    connection: Mutex<Option<Arc<Connection>>>,
}

impl Subtransport {
    pub(crate) fn new(session: Arc<Session>) -> Self {
        Self {
            session,
            connection: Mutex::new(None),
        }
    }

    /// The transport's connection, made (and authenticated) on first use.
    fn connection(&self) -> std::io::Result<Arc<Connection>> {
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(connection) = slot.as_ref() {
            return Ok(Arc::clone(connection));
        }
        let connection = Arc::new(Connection::open(&self.session)?);
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }
}

impl SmartSubtransport for Subtransport {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let (service, _) = super::service(action);
        let Some(path) = repository_path(url) else {
            return Err(git_error(&self.session.fail(
                Failure::Status,
                format!("`{url}` names no repository path"),
            )));
        };
        let command = format!("{service} {}", shell_quote(path));
        let connection = self.connection().map_err(|e| git_error(&e))?;
        let stream = Stream::open(Arc::clone(&self.session), connection, command)
            .map_err(|e| git_error(&e))?;
        Ok(Box::new(stream))
    }

    fn close(&self) -> Result<(), git2::Error> {
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(connection) = connection {
            connection.disconnect();
        }
        Ok(())
    }
}

/// An I/O error as the error libgit2 passes on.
fn git_error(error: &std::io::Error) -> git2::Error {
    git2::Error::new(
        git2::ErrorCode::GenericError,
        git2::ErrorClass::Ssh,
        error.to_string(),
    )
}

/// An authenticated SSH connection and the runtime its task runs on.
struct Connection {
    /// russh's handle (behind a lock only so that the connection can be shared by streams).
    handle: Mutex<client::Handle<Client>>,
    /// `Some` until dropped; shut down without waiting for anything (a stuck name lookup).
    runtime: Option<tokio::runtime::Runtime>,
    /// `host:port`, for messages.
    target: String,
}

impl Connection {
    /// Connects, checks the host key and authenticates.
    fn open(session: &Arc<Session>) -> std::io::Result<Self> {
        let host = session.remote.url.host.clone();
        let port = session.remote.url.port.unwrap_or(DEFAULT_PORT);
        let target = authority(&host, port);
        // A key that cannot be used fails before anything is sent to the server.
        let key = load_key(session)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| {
                session.fail(
                    Failure::Network,
                    format!("starting the SSH client for {target}: {e}"),
                )
            })?;
        let refusal = Arc::new(Mutex::new(None));
        let client = Client {
            session: Arc::clone(session),
            target: target.clone(),
            refusal: Arc::clone(&refusal),
        };
        let handle =
            runtime.block_on(handshake(session, &host, port, &target, client, &refusal))?;
        let connection = Self {
            handle: Mutex::new(handle),
            runtime: Some(runtime),
            target,
        };
        connection.authenticate(session, key)?;
        Ok(connection)
    }

    /// Runs `future` on the connection's runtime for at most `limit`: `None` when it took
    /// longer. (The timer is made inside the runtime, which it needs.)
    fn run_for<F: Future>(&self, limit: Duration, future: F) -> std::io::Result<Option<F::Output>> {
        match &self.runtime {
            Some(runtime) => {
                Ok(runtime.block_on(async { tokio::time::timeout(limit, future).await.ok() }))
            }
            None => Err(io_error(format!(
                "the SSH connection to {} is closed",
                self.target
            ))),
        }
    }

    /// One authentication attempt with the configured credentials.
    fn authenticate(&self, session: &Session, key: Option<Arc<PrivateKey>>) -> std::io::Result<()> {
        let user = user_name(session);
        let mut handle = self.handle.lock().unwrap_or_else(PoisonError::into_inner);
        let attempt = async {
            match key {
                Some(key) => {
                    let hash = if key.algorithm().is_rsa() {
                        rsa_hash(handle.best_supported_rsa_hash().await)
                    } else {
                        None
                    };
                    let key = PrivateKeyWithHashAlg::new(key, hash);
                    handle.authenticate_publickey(user.clone(), key).await
                }
                None => handle.authenticate_none(user.clone()).await,
            }
        };
        let limit = session.connect_timeout;
        let outcome = self.run_for(limit, attempt)?;
        let accepted = match outcome {
            Some(Ok(result)) => result.success(),
            Some(Err(e)) => {
                return Err(session.fail(
                    Failure::Network,
                    format!("authenticating to {} failed: {e}", self.target),
                ));
            }
            None => {
                return Err(session.fail(
                    Failure::Network,
                    format!(
                        "{} did not answer the authentication within {limit:?} (the connect \
                         timeout)",
                        self.target
                    ),
                ));
            }
        };
        if accepted {
            tracing::debug!(target = %self.target, user = %user, "SSH authentication succeeded");
            return Ok(());
        }
        let reason = match &session.remote.auth {
            Auth::SshKey { .. } => KEY_REFUSED,
            Auth::None => NO_CREDENTIALS,
            Auth::Basic { .. } => PASSWORD_OVER_SSH,
            Auth::Bearer { .. } => TOKEN_OVER_SSH,
        };
        Err(session.fail(
            Failure::Authentication(reason),
            format!("{} refused user `{user}`: {reason}", self.target),
        ))
    }

    /// Says goodbye to the server and waits (briefly) for the connection task to end.
    fn disconnect(&self) {
        let mut handle = self.handle.lock().unwrap_or_else(PoisonError::into_inner);
        let goodbye = async {
            if handle
                .disconnect(russh::Disconnect::ByApplication, "", "en")
                .await
                .is_ok()
            {
                let _ = (&mut *handle).await;
            }
        };
        let _ = self.run_for(GOODBYE_TIMEOUT, goodbye);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// TCP connect and SSH handshake, each within the connect timeout.
async fn handshake(
    session: &Session,
    host: &str,
    port: u16,
    target: &str,
    client: Client,
    refusal: &Mutex<Option<String>>,
) -> std::io::Result<client::Handle<Client>> {
    let limit = session.connect_timeout;
    let tcp = match tokio::time::timeout(limit, tokio::net::TcpStream::connect((host, port))).await
    {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => {
            return Err(session.fail(Failure::Network, format!("connecting to {target}: {e}")));
        }
        Err(_) => {
            return Err(session.fail(
                Failure::Network,
                format!("connecting to {target} timed out after {limit:?}"),
            ));
        }
    };
    // git's protocol is a conversation of small messages; do not let Nagle delay them.
    let _ = tcp.set_nodelay(true);
    let config = Arc::new(client::Config {
        client_id: russh::SshId::Standard(
            concat!("SSH-2.0-image-update_", env!("CARGO_PKG_VERSION")).to_owned(),
        ),
        inactivity_timeout: None,
        keepalive_interval: None,
        ..client::Config::default()
    });
    match tokio::time::timeout(limit, client::connect_stream(config, tcp, client)).await {
        Ok(Ok(handle)) => Ok(handle),
        Ok(Err(e)) => {
            // A refused host key was recorded by the handler; russh only says "unknown key".
            let refused = refusal
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            Err(match refused {
                Some(message) => io_error(message),
                None => session.fail(
                    Failure::Network,
                    format!("the SSH handshake with {target} failed: {e}"),
                ),
            })
        }
        Err(_) => Err(session.fail(
            Failure::Network,
            format!("the SSH handshake with {target} timed out after {limit:?}"),
        )),
    }
}

/// russh's callbacks: only the host key check.
struct Client {
    session: Arc<Session>,
    target: String,
    /// The message of a refused host key, for the error the handshake returns.
    refusal: Arc<Mutex<Option<String>>>,
}

impl Client {
    /// Whether the presented host key is acceptable; a refusal is recorded in the session.
    fn accept(&self, key: &PublicKey) -> bool {
        let Ok(blob) = key.to_bytes() else {
            self.refuse(self.session.fail(
                Failure::Network,
                format!(
                    "{} presented a host key that cannot be encoded",
                    self.target
                ),
            ));
            return false;
        };
        let digest: [u8; 32] = Sha256::digest(&blob).into();
        let known_hosts = match &self.session.remote.host_key_check {
            HostKeyCheck::AcceptAny => return true,
            HostKeyCheck::KnownHosts(known_hosts) => known_hosts,
        };
        let url = &self.session.remote.url;
        match known_hosts.check(&url.host, url.port, &digest) {
            Ok(()) => true,
            Err(problem) => {
                let presented = presented_key(key.algorithm().as_str(), &digest);
                let message = format!(
                    "the SSH host key of {} ({presented}) is not accepted: {problem}",
                    self.target
                );
                self.refuse(
                    self.session
                        .fail(Failure::HostKey(Some(presented), problem), message),
                );
                false
            }
        }
    }

    fn refuse(&self, error: std::io::Error) {
        *self.refusal.lock().unwrap_or_else(PoisonError::into_inner) = Some(error.to_string());
    }
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKey) -> Result<bool, Self::Error> {
        Ok(self.accept(key))
    }
}

/// The configured private key, decoded; `None` when no key is configured.
fn load_key(session: &Session) -> std::io::Result<Option<Arc<PrivateKey>>> {
    let Auth::SshKey {
        private_key,
        passphrase,
        ..
    } = &session.remote.auth
    else {
        return Ok(None);
    };
    let passphrase = passphrase
        .as_ref()
        .map(|secret| secret.expose())
        .filter(|passphrase| !passphrase.is_empty());
    // The decoder's error is not quoted: nothing about the key may reach a message.
    match russh::keys::decode_secret_key(private_key.expose(), passphrase) {
        Ok(key) => Ok(Some(Arc::new(key))),
        Err(_) => Err(session.fail(Failure::Authentication(KEY_UNUSABLE), KEY_UNUSABLE)),
    }
}

/// The hash an RSA key signs with: the best the server announces, SHA-256 when it announces
/// nothing, SHA-1 (`ssh-rsa`) only for a server that announces no `rsa-sha2-*`.
fn rsa_hash(announced: Result<Option<Option<HashAlg>>, russh::Error>) -> Option<HashAlg> {
    match announced {
        Ok(Some(best)) => best,
        Ok(None) | Err(_) => Some(HashAlg::Sha256),
    }
}

/// The user to log in as: the URL's, the credentials', or `git`.
fn user_name(session: &Session) -> String {
    let configured = match &session.remote.auth {
        Auth::SshKey { username, .. } => username.as_deref(),
        _ => None,
    };
    session
        .remote
        .url
        .username
        .as_deref()
        .or(configured)
        .filter(|user| !user.is_empty())
        .unwrap_or(DEFAULT_USER)
        .to_owned()
}

/// `host:port`, with an IPv6 host in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// One git command on a session channel: what libgit2 reads is the command's stdout, what it
/// writes is its stdin.
struct Stream {
    session: Arc<Session>,
    /// The command as sent (`git-upload-pack '/srv/app.git'`), for messages.
    command: String,
    reader: ChannelReadHalf,
    writer: ChannelWriteHalf<client::Msg>,
    inbound: Inbound,
    /// Last, so the channel halves are dropped before the connection may be.
    connection: Arc<Connection>,
}

/// What the server sent on the channel and git has not read yet, and how the command ended.
#[derive(Default)]
struct Inbound {
    /// stdout not yet read.
    pending: VecDeque<u8>,
    /// Whether any stdout arrived.
    saw_data: bool,
    /// The first [`STDERR_CAP`] bytes of stderr.
    stderr: Vec<u8>,
    /// The server sent EOF: no more stdout.
    eof: bool,
    /// The channel is over (closed by the server, or the connection is gone).
    closed: bool,
    /// The channel ended without the server closing it: the connection broke.
    dropped: bool,
    /// The server refused to run the command.
    refused: bool,
    exit_status: Option<u32>,
    exit_signal: Option<String>,
}

impl Inbound {
    fn absorb(&mut self, message: Option<ChannelMsg>) {
        match message {
            Some(ChannelMsg::Data { data }) => {
                self.saw_data |= !data.is_empty();
                self.pending.extend(data.iter());
            }
            Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                let room = STDERR_CAP.saturating_sub(self.stderr.len());
                self.stderr
                    .extend_from_slice(data.get(..room.min(data.len())).unwrap_or_default());
            }
            Some(ChannelMsg::Eof) => self.eof = true,
            Some(ChannelMsg::ExitStatus { exit_status }) => self.exit_status = Some(exit_status),
            Some(ChannelMsg::ExitSignal { signal_name, .. }) => {
                self.exit_signal = Some(format!("{signal_name:?}"));
            }
            Some(ChannelMsg::Failure) => self.refused = true,
            Some(ChannelMsg::Close) => {
                self.eof = true;
                self.closed = true;
            }
            None => {
                self.dropped = !self.closed;
                self.eof = true;
                self.closed = true;
            }
            Some(_) => {}
        }
    }

    /// Takes every message already queued on the channel, registering `cx` for the next one.
    fn drain(&mut self, reader: &mut ChannelReadHalf, cx: &mut Context<'_>) {
        while !self.closed {
            let next = pin!(reader.wait());
            match next.poll(cx) {
                Poll::Ready(message) => self.absorb(message),
                Poll::Pending => break,
            }
        }
    }
}

impl Stream {
    /// Opens a session channel and starts `command` on it.
    fn open(
        session: Arc<Session>,
        connection: Arc<Connection>,
        command: String,
    ) -> std::io::Result<Self> {
        let limit = session.read_timeout;
        let channel = {
            let handle = connection
                .handle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let start = async {
                let channel = handle.channel_open_session().await?;
                channel.exec(true, command.as_bytes()).await?;
                Ok::<_, russh::Error>(channel)
            };
            connection.run_for(limit, start)?
        };
        let target = &connection.target;
        let channel = match channel {
            Some(Ok(channel)) => channel,
            Some(Err(russh::Error::ChannelOpenFailure(reason))) => {
                return Err(session.fail(
                    Failure::Status,
                    format!("{target} refused to open an SSH session channel: {reason:?}"),
                ));
            }
            Some(Err(e)) => {
                return Err(session.fail(
                    Failure::Network,
                    format!("starting {command} on {target}: {e}"),
                ));
            }
            None => {
                return Err(session.fail(
                    Failure::Network,
                    format!("{target} did not start {command} within {limit:?} (the read timeout)"),
                ));
            }
        };
        tracing::debug!(target = %target, command = %command, "SSH command started");
        let (reader, writer) = channel.split();
        Ok(Self {
            session,
            command,
            reader,
            writer,
            inbound: Inbound::default(),
            connection,
        })
    }

    /// How the command ended, once its output is consumed: `Ok(0)` (end of stream) after a
    /// normal end, else the recorded failure.
    fn finish(&self) -> std::io::Result<usize> {
        let inbound = &self.inbound;
        let (command, target) = (&self.command, &self.connection.target);
        if inbound.refused {
            return Err(self.session.fail(
                Failure::Status,
                format!("{target} refused to run {command}"),
            ));
        }
        if inbound.dropped && inbound.exit_status.is_none() && inbound.exit_signal.is_none() {
            return Err(self.session.fail(
                Failure::Network,
                format!("the SSH connection to {target} broke while {command} was running"),
            ));
        }
        let reason = match (inbound.exit_status, &inbound.exit_signal) {
            (_, Some(signal)) => format!("killed by signal {signal}"),
            (Some(status), None) if status != 0 => format!("exit status {status}"),
            _ if !inbound.saw_data => "it ended without output".to_owned(),
            _ => return Ok(0),
        };
        let stderr = excerpt(&inbound.stderr);
        let message = if stderr.is_empty() {
            format!("{command} failed on {target} ({reason})")
        } else {
            format!("{command} failed: {stderr}")
        };
        Err(self.session.fail(Failure::Status, message))
    }

    /// The error for a write after the command ended. After a normal end it is not recorded
    /// as the operation's failure: libgit2 says goodbye with a last write it does not check.
    fn ended(&self) -> std::io::Error {
        match self.finish() {
            Err(error) => error,
            Ok(_) => io_error(format!(
                "{} on {} had already ended when git wrote to it",
                self.command, self.connection.target
            )),
        }
    }

    fn timed_out(&self, waiting_for: &str) -> std::io::Error {
        self.session.fail(
            Failure::Network,
            format!(
                "{} sent no {waiting_for} within {:?} (the read timeout) while running {}",
                self.connection.target, self.session.read_timeout, self.command
            ),
        )
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.inbound.pending.is_empty() {
                return self.inbound.pending.read(buf);
            }
            if self.inbound.closed || self.inbound.refused {
                return self.finish();
            }
            let limit = self.session.read_timeout;
            let next = self.connection.run_for(limit, self.reader.wait())?;
            match next {
                Some(message) => self.inbound.absorb(message),
                // After EOF only the exit status and the close are missing; a server that
                // never sends them has still said everything.
                None if self.inbound.eof => return self.finish(),
                None => return Err(self.timed_out("data")),
            }
        }
    }
}

impl Write for Stream {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        if self.inbound.closed {
            return Err(self.ended());
        }
        let mut tx = self.writer.make_writer();
        let (reader, inbound) = (&mut self.reader, &mut self.inbound);
        // Sends as much as the window allows (at least one byte), taking in whatever the
        // server sends meanwhile.
        let send = poll_fn(|cx| {
            inbound.drain(reader, cx);
            if inbound.closed {
                return Poll::Ready(None);
            }
            Pin::new(&mut tx).poll_write(cx, data).map(Some)
        });
        let limit = self.session.read_timeout;
        let sent = self.connection.run_for(limit, send)?;
        match sent {
            Some(Some(Ok(written))) => Ok(written),
            Some(Some(Err(e))) => Err(self.session.fail(
                Failure::Network,
                format!(
                    "sending to {} on {}: {e}",
                    self.command, self.connection.target
                ),
            )),
            Some(None) => Err(self.ended()),
            None => Err(self.timed_out("window for more data")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.inbound.closed {
            return;
        }
        // Tell the server this conversation is over, so the command ends now rather than at
        // disconnect; the connection may already be gone, which is fine.
        let writer = &self.writer;
        let goodbye = async {
            let _ = writer.eof().await;
            let _ = writer.close().await;
        };
        let _ = self.connection.run_for(GOODBYE_TIMEOUT, goodbye);
    }
}

/// The repository path in a remote URL, as the server's shell should see it: the path of
/// `ssh://[user@]host[:port]/path` (`/~user/repo` becomes `~user/repo`, as git does), or what
/// follows the host's colon in the scp-like `[user@]host:path`.
fn repository_path(url: &str) -> Option<&str> {
    let path = match url.split_once("://") {
        Some((_, rest)) => {
            let path = &rest[rest.find('/')?..];
            path.strip_prefix('/')
                .filter(|after| after.starts_with('~'))
                .unwrap_or(path)
        }
        None => {
            // A bracketed host (`[::1]:repo`) holds colons of its own.
            let host_end = match url.find('[') {
                Some(open) if !url[..open].contains(':') => open + url[open..].find(']')?,
                _ => 0,
            };
            let colon = host_end + url[host_end..].find(':')?;
            &url[colon + 1..]
        }
    };
    (!path.is_empty()).then_some(path)
}

/// `value` quoted for a POSIX shell the way git quotes it: in single quotes, with `'` and `!`
/// stepping out of them (`'\''`, `'\!'`).
fn shell_quote(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('\'');
    for c in value.chars() {
        match c {
            '\'' | '!' => {
                quoted.push_str("'\\");
                quoted.push(c);
                quoted.push('\'');
            }
            _ => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

/// A command's stderr for an error message: its non-empty lines joined with `; `, control
/// characters replaced, cut at [`EXCERPT_CHARS`] characters.
fn excerpt(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<String> = text
        .split(['\n', '\r'])
        .map(|line| {
            line.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect::<String>()
                .trim()
                .to_owned()
        })
        .filter(|line| !line.is_empty())
        .collect();
    let joined = lines.join("; ");
    match joined.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &joined[..cut]),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::{EXCERPT_CHARS, authority, excerpt, repository_path, shell_quote};

    #[test]
    fn paths_of_ssh_urls() {
        assert_eq!(
            repository_path("ssh://git@127.0.0.1:2222/srv/app.git"),
            Some("/srv/app.git")
        );
        assert_eq!(
            repository_path("ssh://github.com/org/repo.git"),
            Some("/org/repo.git")
        );
        assert_eq!(
            repository_path("ssh://host/~user/repo.git"),
            Some("~user/repo.git")
        );
        assert_eq!(
            repository_path("ssh://[::1]:22/srv/x.git"),
            Some("/srv/x.git")
        );
        assert_eq!(repository_path("ssh://host"), None);
    }

    #[test]
    fn paths_of_scp_like_urls() {
        assert_eq!(
            repository_path("git@github.com:org/repo.git"),
            Some("org/repo.git")
        );
        assert_eq!(repository_path("host:/srv/app.git"), Some("/srv/app.git"));
        assert_eq!(repository_path("me@host:~/repo"), Some("~/repo"));
        assert_eq!(repository_path("git@[::1]:repo.git"), Some("repo.git"));
        assert_eq!(repository_path("[fe80::1]:a:b"), Some("a:b"));
        assert_eq!(repository_path("host:"), None);
    }

    #[test]
    fn quoting_like_git() {
        assert_eq!(shell_quote("/srv/app.git"), "'/srv/app.git'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("wow!"), "'wow'\\!''");
        assert_eq!(shell_quote("$(rm -rf ~) `x`"), "'$(rm -rf ~) `x`'");
    }

    #[test]
    fn stderr_excerpts_are_one_clean_line() {
        assert_eq!(
            excerpt(b"fatal: '/srv/x.git' does not appear to be a git repository\n"),
            "fatal: '/srv/x.git' does not appear to be a git repository"
        );
        assert_eq!(
            excerpt(b"\x1b[31merror\x1b[0m: a\r\n\n\tsecond\0line\n"),
            "[31merror [0m: a; second line"
        );
        assert_eq!(excerpt(b"\xff oops"), "\u{fffd} oops");
        let long = excerpt("é".repeat(EXCERPT_CHARS + 5).as_bytes());
        assert_eq!(long.chars().count(), EXCERPT_CHARS + 3);
        assert!(long.ends_with("..."));
        assert_eq!(excerpt(b""), "");
    }

    #[test]
    fn authorities() {
        assert_eq!(authority("github.com", 22), "github.com:22");
        assert_eq!(authority("::1", 2222), "[::1]:2222");
    }
}
