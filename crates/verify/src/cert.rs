//! Signing certificates (Fulcio's): the path to a trusted certificate
//! authority at the log's time, and the identity the certificate states.

use std::time::Duration;

use rustls_pki_types::{CertificateDer, UnixTime};
use x509_cert::der::asn1::Utf8StringRef;
use x509_cert::der::{Decode, Encode};
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use crate::keys::PublicKey;
use crate::trust::TrustedRoot;

/// Fulcio's OIDC issuer extension, v1: the issuer URL as raw bytes.
const OID_ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// Fulcio's OIDC issuer extension, v2: a DER UTF8String.
const OID_ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
/// Subject alternative name.
const OID_SAN: &str = "2.5.29.17";
/// Fulcio's source repository URI extension: a DER UTF8String.
const OID_SOURCE_REPOSITORY: &str = "1.3.6.1.4.1.57264.1.12";
/// Fulcio's source repository digest extension (the commit a workflow ran on): a DER UTF8String.
const OID_SOURCE_DIGEST: &str = "1.3.6.1.4.1.57264.1.13";
/// id-kp-codeSigning (1.3.6.1.5.5.7.3.3), DER contents.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// Largest certificate read.
pub const MAX_CERTIFICATE: usize = 64 * 1024;

/// What a signing certificate says about its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The subject alternative names: e-mail addresses and URIs.
    pub subjects: Vec<String>,
    /// The OIDC issuer (v2 extension, else v1); empty when absent.
    pub issuer: String,
    /// Fulcio's source repository URI; empty when absent or not a UTF8String (it informs, it
    /// decides nothing).
    pub source_repository: String,
    /// Fulcio's source repository digest; empty likewise.
    pub source_digest: String,
}

/// A signing certificate's key and identity.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub key: PublicKey,
    pub identity: Identity,
}

/// Reads a certificate's key and identity (no trust decision).
///
/// # Errors
/// A certificate that does not parse, or whose key or extensions cannot be
/// read, or that repeats an extension.
pub fn read_leaf(der: &[u8]) -> Result<Leaf, String> {
    if der.len() > MAX_CERTIFICATE {
        return Err("the certificate is larger than 64 KiB".to_owned());
    }
    let cert = x509_cert::Certificate::from_der(der)
        .map_err(|e| format!("the certificate does not parse: {e}"))?;
    let tbs = &cert.tbs_certificate;
    let spki = tbs
        .subject_public_key_info
        .to_der()
        .map_err(|e| format!("the certificate's key: {e}"))?;
    let key = PublicKey::from_spki_der(&spki).map_err(|e| format!("the certificate's key: {e}"))?;
    let mut subjects = Vec::new();
    let mut source_repository = String::new();
    let mut source_digest = String::new();
    let mut seen = std::collections::HashSet::new();
    let mut v1 = None;
    let mut v2 = None;
    for ext in tbs.extensions.iter().flatten() {
        let oid = ext.extn_id.to_string();
        if !seen.insert(oid.clone()) {
            return Err(format!("the certificate repeats the extension {oid}"));
        }
        let value = ext.extn_value.as_bytes();
        match oid.as_str() {
            OID_SAN => {
                let san = SubjectAltName::from_der(value)
                    .map_err(|e| format!("the certificate's subject alternative names: {e}"))?;
                for name in san.0 {
                    match name {
                        GeneralName::Rfc822Name(s) | GeneralName::UniformResourceIdentifier(s) => {
                            subjects.push(s.as_str().to_owned());
                        }
                        _ => {}
                    }
                }
            }
            OID_ISSUER_V2 => {
                let s = Utf8StringRef::from_der(value).map_err(|_| {
                    "the certificate's issuer extension is not a UTF8String".to_owned()
                })?;
                v2 = Some(s.as_str().to_owned());
            }
            OID_SOURCE_REPOSITORY => {
                source_repository = Utf8StringRef::from_der(value)
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_default();
            }
            OID_SOURCE_DIGEST => {
                source_digest = Utf8StringRef::from_der(value)
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_default();
            }
            OID_ISSUER_V1 => {
                v1 = Some(
                    std::str::from_utf8(value)
                        .map_err(|_| "the certificate's issuer extension is not UTF-8".to_owned())?
                        .to_owned(),
                );
            }
            _ => {}
        }
    }
    Ok(Leaf {
        key,
        identity: Identity {
            subjects,
            issuer: v2.or(v1).unwrap_or_default(),
            source_repository,
            source_digest,
        },
    })
}

/// Checks that `der` chains to a certificate authority of `root` that was
/// valid at `time` (Unix seconds), with every certificate of the path valid
/// then and the code-signing usage allowed.
///
/// # Errors
/// Why no authority accepts it.
pub fn verify_path(der: &[u8], root: &TrustedRoot, time: i64) -> Result<(), String> {
    let leaf = CertificateDer::from(der);
    let ee = webpki::EndEntityCert::try_from(&leaf)
        .map_err(|e| format!("the certificate cannot be used: {e}"))?;
    let at = UnixTime::since_unix_epoch(Duration::from_secs(
        u64::try_from(time).map_err(|_| "the log's time is before 1970".to_owned())?,
    ));
    let mut last =
        "the trusted root has no certificate authority valid at the log's time".to_owned();
    for ca in root.authorities.iter().filter(|ca| ca.valid.contains(time)) {
        let Some((anchor_der, intermediates)) = ca.chain.split_last() else {
            continue;
        };
        let anchor_der = CertificateDer::from(anchor_der.as_slice());
        let anchor = match webpki::anchor_from_trusted_cert(&anchor_der) {
            Ok(a) => a,
            Err(e) => {
                last = format!("the authority {} cannot be used: {e}", ca.uri);
                continue;
            }
        };
        let intermediates: Vec<CertificateDer<'_>> = intermediates
            .iter()
            .map(|c| CertificateDer::from(c.as_slice()))
            .collect();
        match ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &intermediates,
            at,
            webpki::KeyUsage::required(CODE_SIGNING),
            None,
            None,
        ) {
            Ok(_) => return Ok(()),
            Err(e) => last = describe(&e),
        }
    }
    Err(last)
}

fn describe(e: &webpki::Error) -> String {
    match e {
        webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. } => {
            "the certificate was not valid at the transparency log's time".to_owned()
        }
        webpki::Error::UnknownIssuer => {
            "the certificate is not issued by a certificate authority of the trusted root"
                .to_owned()
        }
        webpki::Error::RequiredEkuNotFoundContext(_) => {
            "the certificate is not for code signing".to_owned()
        }
        other => format!("the certificate path is invalid: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use image_update_testkit::sigstore::{CertSpec, TestSigstore};

    /// Fulcio's source repository extensions (a CI workflow's certificate) are read; a certificate
    /// without them has them empty.
    #[test]
    fn source_repository_and_digest() {
        let store = TestSigstore::new();
        let spec = CertSpec::new(
            "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1.5.0",
            "https://token.actions.githubusercontent.com",
        );
        let plain = super::read_leaf(&store.issue(&spec).cert_der).unwrap();
        assert_eq!(
            (
                plain.identity.source_repository.as_str(),
                plain.identity.source_digest.as_str()
            ),
            ("", "")
        );
        let digest = "9c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5";
        let ci = spec.from_source("https://github.com/acme/web", digest);
        let leaf = super::read_leaf(&store.issue(&ci).cert_der).unwrap();
        assert_eq!(
            leaf.identity.source_repository,
            "https://github.com/acme/web"
        );
        assert_eq!(leaf.identity.source_digest, digest);
    }
}
