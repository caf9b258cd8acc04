//! libgit2's process-wide options, set once before the first operation.
//!
//! git2 exposes these only as `unsafe fn`: they change libgit2's global
//! state without synchronisation. They matter to the Job, so this is the
//! one place in the workspace that allows `unsafe` code:
//!
//! * **timeouts**: without them a TCP connect is bounded only by the kernel
//!   and a stalled read not at all, and a Job could hang until Kubernetes
//!   kills it. Here a connect gives up after [`CONNECT_TIMEOUT`] and a read
//!   that receives nothing after [`READ_TIMEOUT`] (libgit2 also uses it as
//!   libssh2's session timeout);
//! * **a CA bundle**: libgit2's OpenSSL needs a file. When neither
//!   `SSL_CERT_FILE` nor a system bundle exists (a `scratch` image without
//!   one), the Mozilla roots compiled into the binary are written to a
//!   private temporary file and used;
//! * **no user or system git configuration**: the Job must behave the same
//!   wherever it runs, whatever `~/.gitconfig` or `/etc/gitconfig` say
//!   (`url.*.insteadOf`, proxies, credential helpers).

use std::io::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

/// How long a connect may take, by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a read may wait for data, by default.
pub const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// The timeouts the options will be set to, when changed before the first
/// operation.
static TIMEOUTS: std::sync::Mutex<(Duration, Duration)> =
    std::sync::Mutex::new((CONNECT_TIMEOUT, READ_TIMEOUT));

/// Use these connect and read timeouts. Only calls made before the first
/// git operation of the process count (the options are set once);
/// returns whether this one did.
pub fn set_timeouts(connect: Duration, read: Duration) -> bool {
    if INIT.get().is_some() {
        return false;
    }
    *TIMEOUTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = (connect, read);
    true
}

/// Well-known CA bundle locations (Debian, Fedora, Alpine, distroless).
const BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
];

/// The outcome of setting the options (an error message when one failed;
/// operations go on with libgit2's defaults then, and the message is
/// logged once).
static INIT: OnceLock<Result<(), String>> = OnceLock::new();

/// Set the options, once per process, before any libgit2 operation of this
/// crate (every entry point calls it).
pub(crate) fn init() {
    let result = INIT.get_or_init(configure);
    if let Err(e) = result {
        tracing::debug!("libgit2 options not set: {e}");
    }
}

/// Where the CA bundle is, when there is one libgit2's OpenSSL finds
/// itself.
fn system_bundle() -> bool {
    std::env::var_os("SSL_CERT_FILE").is_some_and(|p| std::path::Path::new(&p).is_file())
        || BUNDLES.iter().any(|p| std::path::Path::new(p).is_file())
}

/// The compiled-in Mozilla roots as a PEM file in the temporary directory,
/// kept for the life of the process.
fn bundled_roots() -> Result<std::path::PathBuf, String> {
    use base64::Engine as _;
    let mut file = tempfile::Builder::new()
        .prefix(".image-update-roots-")
        .suffix(".pem")
        .tempfile()
        .map_err(|e| format!("cannot write the bundled CA roots: {e}"))?;
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(chunk));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
        file.write_all(pem.as_bytes())
            .map_err(|e| format!("cannot write the bundled CA roots: {e}"))?;
    }
    let (_, path) = file
        .keep()
        .map_err(|e| format!("cannot keep the bundled CA roots: {e}"))?;
    Ok(path)
}

#[allow(unsafe_code)]
fn configure() -> Result<(), String> {
    let millis = |d: Duration| i32::try_from(d.as_millis()).unwrap_or(i32::MAX).max(1);
    let (connect, read) = *TIMEOUTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let roots = if system_bundle() {
        None
    } else {
        Some(bundled_roots()?)
    };
    // SAFETY: these functions write libgit2's global options without
    // locking. They run exactly once (`OnceLock`), and before this crate
    // makes any other libgit2 call: every entry point of the crate calls
    // `init` first, and no other crate of the workspace uses libgit2, so no
    // libgit2 operation can run concurrently with them.
    unsafe {
        for level in [
            git2::ConfigLevel::System,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::Global,
        ] {
            git2::opts::set_search_path(level, "").map_err(|e| e.to_string())?;
        }
        git2::opts::set_server_connect_timeout_in_milliseconds(millis(connect))
            .map_err(|e| e.to_string())?;
        git2::opts::set_server_timeout_in_milliseconds(millis(read)).map_err(|e| e.to_string())?;
        if let Some(path) = &roots {
            git2::opts::set_ssl_cert_file(path).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
