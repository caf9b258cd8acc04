//! The Sigstore trusted root (`trusted_root.json`, media type
//! `application/vnd.dev.sigstore.trustedroot+json;version=0.1`): the
//! certificate authorities (Fulcio) and transparency logs (Rekor) whose
//! keys verification trusts, each with the interval it is valid for.
//!
//! Only what keyless verification needs is read: `certificateAuthorities`
//! and `tlogs`. `ctlogs` (certificate transparency) and
//! `timestampAuthorities` (RFC 3161) are not used (docs/security.md).

use std::path::Path;

use base64::Engine;
use image_update_registry::Timestamp;
use serde::Deserialize;

use crate::keys::{KeyError, PublicKey};

/// Largest `trusted_root.json` read.
pub const MAX_TRUSTED_ROOT: u64 = 4 * 1024 * 1024;
/// Most certificate authorities, logs and certificates per chain read.
const MAX_ENTRIES: usize = 64;

/// An interval of validity; an open end is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validity {
    /// Unix seconds, inclusive.
    pub start: Option<i64>,
    /// Unix seconds, inclusive.
    pub end: Option<i64>,
}

impl Validity {
    /// Whether `t` (Unix seconds) is inside.
    pub fn contains(&self, t: i64) -> bool {
        self.start.is_none_or(|s| s <= t) && self.end.is_none_or(|e| t <= e)
    }
}

/// A certificate authority: its chain (intermediates first, the
/// self-signed root last), as DER.
#[derive(Debug, Clone)]
pub struct CertificateAuthority {
    pub uri: String,
    pub chain: Vec<Vec<u8>>,
    pub valid: Validity,
}

/// A transparency log: its key and ID (SHA-256 of the key's DER).
#[derive(Debug, Clone)]
pub struct TransparencyLog {
    pub base_url: String,
    pub key: PublicKey,
    pub log_id: Vec<u8>,
    pub valid: Validity,
}

/// The trusted root.
#[derive(Debug, Clone, Default)]
pub struct TrustedRoot {
    pub authorities: Vec<CertificateAuthority>,
    pub logs: Vec<TransparencyLog>,
}

/// Why a trusted root cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("reading {path}: {message}")]
    Read { path: String, message: String },
    #[error("invalid trusted root{at}: {message}", at = path.as_deref().map(|p| format!(" {p}")).unwrap_or_default())]
    Invalid {
        path: Option<String>,
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RootDoc {
    #[serde(default)]
    media_type: String,
    #[serde(default)]
    tlogs: Vec<TlogDoc>,
    #[serde(default)]
    certificate_authorities: Vec<CaDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlogDoc {
    #[serde(default)]
    base_url: String,
    #[serde(default)]
    hash_algorithm: String,
    public_key: KeyDoc,
    log_id: KeyIdDoc,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyDoc {
    raw_bytes: String,
    #[serde(default)]
    valid_for: Option<RangeDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyIdDoc {
    key_id: String,
}

#[derive(Deserialize)]
struct RangeDoc {
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CaDoc {
    #[serde(default)]
    uri: String,
    cert_chain: ChainDoc,
    #[serde(default)]
    valid_for: Option<RangeDoc>,
}

#[derive(Deserialize)]
struct ChainDoc {
    certificates: Vec<RawDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDoc {
    raw_bytes: String,
}

fn b64(field: &str, text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("{field} is not base64: {e}"))
}

fn validity(field: &str, range: Option<&RangeDoc>) -> Result<Validity, String> {
    let Some(range) = range else {
        return Ok(Validity::default());
    };
    let time = |t: &Option<String>| -> Result<Option<i64>, String> {
        t.as_deref()
            .map(|s| {
                Timestamp::parse_rfc3339(s)
                    .map(Timestamp::unix_seconds)
                    .map_err(|e| format!("{field}: {e}"))
            })
            .transpose()
    };
    Ok(Validity {
        start: time(&range.start)?,
        end: time(&range.end)?,
    })
}

impl TrustedRoot {
    /// Parses the JSON text of a trusted root.
    ///
    /// # Errors
    /// Malformed JSON, an unknown media type, a key or certificate that
    /// cannot be read, or more than 64 entries of a kind.
    pub fn from_json(bytes: &[u8]) -> Result<Self, TrustError> {
        Self::parse(bytes).map_err(|message| TrustError::Invalid {
            path: None,
            message,
        })
    }

    fn parse(bytes: &[u8]) -> Result<Self, String> {
        let doc: RootDoc = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if !doc.media_type.is_empty()
            && !doc
                .media_type
                .starts_with("application/vnd.dev.sigstore.trustedroot")
        {
            return Err(format!("unknown mediaType {:?}", doc.media_type));
        }
        if doc.tlogs.len() > MAX_ENTRIES || doc.certificate_authorities.len() > MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} logs or authorities"));
        }
        let mut logs = Vec::new();
        for (i, t) in doc.tlogs.iter().enumerate() {
            let field = format!("tlogs[{i}]");
            if !t.hash_algorithm.is_empty() && t.hash_algorithm != "SHA2_256" {
                return Err(format!(
                    "{field}.hashAlgorithm {:?} is not supported (SHA2_256 is)",
                    t.hash_algorithm
                ));
            }
            let der = b64(
                &format!("{field}.publicKey.rawBytes"),
                &t.public_key.raw_bytes,
            )?;
            let key = PublicKey::from_spki_der(&der)
                .map_err(|KeyError(e)| format!("{field}.publicKey: {e}"))?;
            logs.push(TransparencyLog {
                base_url: t.base_url.clone(),
                key,
                log_id: b64(&format!("{field}.logId.keyId"), &t.log_id.key_id)?,
                valid: validity(
                    &format!("{field}.publicKey.validFor"),
                    t.public_key.valid_for.as_ref(),
                )?,
            });
        }
        let mut authorities = Vec::new();
        for (i, ca) in doc.certificate_authorities.iter().enumerate() {
            let field = format!("certificateAuthorities[{i}]");
            if ca.cert_chain.certificates.is_empty()
                || ca.cert_chain.certificates.len() > MAX_ENTRIES
            {
                return Err(format!(
                    "{field}.certChain must hold 1 to {MAX_ENTRIES} certificates"
                ));
            }
            let chain = ca
                .cert_chain
                .certificates
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let der = b64(
                        &format!("{field}.certChain.certificates[{j}]"),
                        &c.raw_bytes,
                    )?;
                    <x509_cert::Certificate as x509_cert::der::Decode>::from_der(&der).map_err(
                        |e| {
                            format!("{field}.certChain.certificates[{j}] is not a certificate: {e}")
                        },
                    )?;
                    Ok(der)
                })
                .collect::<Result<Vec<_>, String>>()?;
            authorities.push(CertificateAuthority {
                uri: ca.uri.clone(),
                chain,
                valid: validity(&format!("{field}.validFor"), ca.valid_for.as_ref())?,
            });
        }
        Ok(Self { authorities, logs })
    }

    /// Reads a trusted root from a file.
    ///
    /// # Errors
    /// The file cannot be read, is larger than 4 MiB, or is invalid.
    pub fn load(path: &Path) -> Result<Self, TrustError> {
        let shown = path.display().to_string();
        let meta = fs_err::metadata(path).map_err(|e| TrustError::Read {
            path: shown.clone(),
            message: e.to_string(),
        });
        if let Ok(m) = &meta
            && m.len() > MAX_TRUSTED_ROOT
        {
            return Err(TrustError::Read {
                path: shown,
                message: format!("larger than {MAX_TRUSTED_ROOT} bytes"),
            });
        }
        let bytes = fs_err::read(path).map_err(|e| TrustError::Read {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        Self::parse(&bytes).map_err(|message| TrustError::Invalid {
            path: Some(shown),
            message,
        })
    }

    /// The log with ID `log_id`, if the root trusts one.
    pub fn log(&self, log_id: &[u8]) -> Option<&TransparencyLog> {
        self.logs.iter().find(|l| l.log_id == log_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_bounds_are_inclusive() {
        let v = Validity {
            start: Some(10),
            end: Some(20),
        };
        assert!(v.contains(10) && v.contains(20) && !v.contains(9) && !v.contains(21));
        assert!(Validity::default().contains(i64::MIN));
    }

    #[test]
    fn malformed_roots_are_refused_with_the_field() {
        let err = |json: &str| {
            TrustedRoot::from_json(json.as_bytes())
                .unwrap_err()
                .to_string()
        };
        assert!(err("{").contains("invalid trusted root"));
        assert!(err(r#"{"mediaType":"text/plain"}"#).contains("unknown mediaType"));
        assert!(
            err(r#"{"tlogs":[{"hashAlgorithm":"SHA2_256","publicKey":{"rawBytes":"!!"},"logId":{"keyId":"AA=="}}]}"#)
                .contains("tlogs[0].publicKey.rawBytes is not base64")
        );
        assert!(
            err(r#"{"tlogs":[{"hashAlgorithm":"SHA2_256","publicKey":{"rawBytes":"AAAA"},"logId":{"keyId":"AA=="}}]}"#)
                .contains("tlogs[0].publicKey: not a SubjectPublicKeyInfo")
        );
        assert!(
            err(r#"{"certificateAuthorities":[{"certChain":{"certificates":[]}}]}"#)
                .contains("certificateAuthorities[0].certChain must hold 1 to 64 certificates")
        );
        assert!(
            err(r#"{"certificateAuthorities":[{"certChain":{"certificates":[{"rawBytes":"AAAA"}]}}]}"#)
                .contains("is not a certificate")
        );
        assert!(TrustedRoot::from_json(b"{}").unwrap().logs.is_empty());
    }
}
