//! The trust roots of every HTTPS connection the Job makes: the git transport's, and the pull
//! request client's (`image-update-forge` uses this module, so a push and the request that
//! follows it trust the same servers).
//!
//! The roots are the Mozilla roots compiled into the binary (an image without a CA store works)
//! and the system's trust store when there is one (a CA a cluster's administrator installed, or
//! `SSL_CERT_FILE`), read once per process, plus the caller's PEM CA certificates (Flux's Secret
//! `ca.crt`, `--ca-file`).

use std::sync::{Arc, OnceLock};

use ureq::tls::Certificate;

use crate::error::Error;

/// The bundled and system roots, read once per process.
#[must_use]
pub fn base_roots() -> &'static [Certificate<'static>] {
    static ROOTS: OnceLock<Vec<Certificate<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let system = rustls_native_certs::load_native_certs();
        for e in &system.errors {
            tracing::debug!("system trust store: {e}");
        }
        webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|der| Certificate::from_der(der.as_ref()).to_owned())
            .chain(
                system
                    .certs
                    .iter()
                    .map(|der| Certificate::from_der(der.as_ref()).to_owned()),
            )
            .collect()
    })
}

/// The roots to trust: [`base_roots`] and `extra`.
#[must_use]
pub fn roots_with(extra: &[Certificate<'static>]) -> Arc<Vec<Certificate<'static>>> {
    let mut roots = base_roots().to_vec();
    roots.extend(extra.iter().cloned());
    Arc::new(roots)
}

/// The certificates of PEM text (other PEM items, such as keys, are skipped).
///
/// # Errors
/// [`Error::InvalidCaCertificates`]: text that is not PEM, or holds no certificate.
pub fn parse_ca_certificates(pem: &str) -> Result<Arc<[Certificate<'static>]>, Error> {
    let invalid = |reason: String| Error::InvalidCaCertificates { reason };
    let mut certificates = Vec::new();
    for item in ureq::tls::parse_pem(pem.as_bytes()) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(certificate)) => certificates.push(certificate),
            Ok(_) => {}
            Err(e) => return Err(invalid(format!("not valid PEM: {e}"))),
        }
    }
    if certificates.is_empty() {
        return Err(invalid("no `BEGIN CERTIFICATE` block".to_owned()));
    }
    Ok(Arc::from(certificates))
}
