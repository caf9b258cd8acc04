//! Signing certificates (Fulcio's): the path to a trusted certificate
//! authority at the log's time, and the identity the certificate states.

use std::time::Duration;

use rustls_pki_types::{CertificateDer, UnixTime};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

use crate::keys::PublicKey;
use crate::trust::TrustedRoot;

/// Fulcio's OIDC issuer extension, v1: the issuer URL as raw bytes.
const OID_ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// Fulcio's OIDC issuer extension, v2: a DER UTF8String.
const OID_ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
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
/// read.
pub fn read_leaf(der: &[u8]) -> Result<Leaf, String> {
    if der.len() > MAX_CERTIFICATE {
        return Err("the certificate is larger than 64 KiB".to_owned());
    }
    let (rest, cert) = x509_parser::certificate::X509Certificate::from_der(der)
        .map_err(|e| format!("the certificate does not parse: {e}"))?;
    if !rest.is_empty() {
        return Err("the certificate has trailing bytes".to_owned());
    }
    let key = PublicKey::from_spki_der(cert.public_key().raw)
        .map_err(|e| format!("the certificate's key: {e}"))?;
    Ok(Leaf {
        key,
        identity: identity(&cert)?,
    })
}

/// The identity stated by a parsed certificate.
///
/// # Errors
/// Duplicate or malformed extensions.
pub fn identity(cert: &x509_parser::certificate::X509Certificate<'_>) -> Result<Identity, String> {
    let mut subjects = Vec::new();
    if let Some(san) = cert
        .subject_alternative_name()
        .map_err(|e| format!("the certificate's subject alternative names: {e}"))?
    {
        for name in &san.value.general_names {
            match name {
                GeneralName::RFC822Name(s) | GeneralName::URI(s) => subjects.push((*s).to_owned()),
                _ => {}
            }
        }
    }
    let mut v1 = None;
    let mut v2 = None;
    for ext in cert.extensions() {
        let oid = ext.oid.to_id_string();
        if oid == OID_ISSUER_V2 {
            if v2.is_some() {
                return Err("the certificate has two issuer extensions".to_owned());
            }
            let (_, s) = x509_parser::der_parser::asn1_rs::Utf8String::from_der(ext.value)
                .map_err(|_| "the certificate's issuer extension is not a UTF8String".to_owned())?;
            v2 = Some(s.string());
        } else if oid == OID_ISSUER_V1 {
            if v1.is_some() {
                return Err("the certificate has two issuer extensions".to_owned());
            }
            v1 = Some(
                std::str::from_utf8(ext.value)
                    .map_err(|_| "the certificate's issuer extension is not UTF-8".to_owned())?
                    .to_owned(),
            );
        }
    }
    Ok(Identity {
        subjects,
        issuer: v2.or(v1).unwrap_or_default(),
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
