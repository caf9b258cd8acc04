//! Who must have signed: the signers of a policy, how they are configured
//! (the `verify` section of the registry settings file, or the caller's
//! values), and the verification of one image's signature material against
//! them.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use image_update_registry::settings::{IdentityConfig, KeyConfig, Require, VerifyConfig};
use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::cert::{self, Leaf};
use crate::keys::{HashAlg, PublicKey, hex};
use crate::material::{
    COSIGN_SIGN_PREDICATE, IN_TOTO, Signature, SignatureLayer, Signed, Verifier, pae,
};
use crate::tlog::Logged;
use crate::trust::TrustedRoot;

/// Most signature layers examined per image.
pub const MAX_LAYERS: usize = 32;
/// Most rejection reasons kept per image.
const MAX_REASONS: usize = 16;

/// A string matched exactly, or a regular expression matched against the
/// **whole** string (cosign's `--certificate-identity-regexp` searches;
/// anchoring is stricter, so a pattern never matches more than it says).
#[derive(Debug, Clone)]
pub enum Matcher {
    Exact(String),
    Regex { source: String, regex: Regex },
}

impl Matcher {
    /// A whole-string regular expression.
    ///
    /// # Errors
    /// An invalid pattern.
    pub fn regex(source: &str) -> Result<Self, String> {
        Regex::new(&format!("^(?:{source})$"))
            .map(|regex| Self::Regex {
                source: source.to_owned(),
                regex,
            })
            .map_err(|e| format!("invalid regular expression {source:?}: {e}"))
    }

    /// Whether `value` matches.
    pub fn matches(&self, value: &str) -> bool {
        match self {
            Self::Exact(s) => s == value,
            Self::Regex { regex, .. } => regex.is_match(value),
        }
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact(s) => write!(f, "{s}"),
            Self::Regex { source, .. } => write!(f, "/{source}/"),
        }
    }
}

/// One accepted signer.
#[derive(Debug, Clone)]
pub enum Signer {
    /// A public key.
    Key {
        /// How reports name it (the file name, or `key N`).
        name: String,
        key: PublicKey,
        /// Also require a transparency log entry that verifies against
        /// the trusted root.
        tlog: bool,
    },
    /// A keyless identity: a Fulcio certificate whose subject alternative
    /// name and OIDC issuer match, logged in a trusted transparency log.
    Identity { subject: Matcher, issuer: Matcher },
}

impl fmt::Display for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key { name, key, .. } => write!(f, "key {name} ({})", key.fingerprint()),
            Self::Identity { subject, issuer } => {
                write!(f, "identity {subject} issued by {issuer}")
            }
        }
    }
}

/// Who signed an image that passed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SignedBy {
    /// A configured public key.
    Key { name: String, fingerprint: String },
    /// A keyless identity, with the log entry that timestamps it.
    Identity {
        subject: String,
        issuer: String,
        #[serde(rename = "logIndex")]
        log_index: i64,
        /// RFC 3339.
        #[serde(rename = "integratedTime")]
        integrated_time: String,
        /// Fulcio's source repository URI, when the certificate has it.
        #[serde(rename = "sourceRepository", skip_serializing_if = "String::is_empty")]
        source_repository: String,
        /// Fulcio's source repository digest (the commit signed from), when present.
        #[serde(rename = "sourceDigest", skip_serializing_if = "String::is_empty")]
        source_digest: String,
    },
}

impl fmt::Display for SignedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key { name, fingerprint } => write!(f, "key {name} ({fingerprint})"),
            Self::Identity {
                subject,
                issuer,
                log_index,
                integrated_time,
                ..
            } => write!(
                f,
                "{subject} (issuer {issuer}; transparency log index {log_index}, {integrated_time})"
            ),
        }
    }
}

/// An image whose signatures satisfy the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The manifest digest that was verified.
    pub digest: String,
    /// One entry per satisfied signer (one for `any`, every signer for `all`).
    pub signed_by: Vec<SignedBy>,
}

/// Why an image does not satisfy the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// `no signature found`, or one reason per signature examined.
    pub reasons: Vec<String>,
    /// Whether any signature material was found at all.
    pub found: bool,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reasons.is_empty() {
            return f.write_str("no signature found");
        }
        f.write_str(&self.reasons.join("; "))
    }
}

/// A validated verification policy.
#[derive(Debug, Clone)]
pub struct Policy {
    signers: Vec<Signer>,
    require: Require,
    root: Option<Arc<TrustedRoot>>,
    predicate_types: Vec<String>,
}

impl Policy {
    /// A policy over `signers`.
    ///
    /// `predicate_types` lists the in-toto predicate types accepted in DSSE
    /// bundles; empty means cosign's `https://sigstore.dev/cosign/sign/v1`
    /// only (an SBOM or provenance attestation is not a signature unless
    /// asked for).
    ///
    /// # Errors
    /// No signers, or a keyless signer (or a key requiring the log) without
    /// a trusted root.
    pub fn new(
        signers: Vec<Signer>,
        require: Require,
        root: Option<Arc<TrustedRoot>>,
        predicate_types: Vec<String>,
    ) -> Result<Self, String> {
        if signers.is_empty() {
            return Err("a verification policy needs at least one signer".to_owned());
        }
        let needs_root = signers.iter().any(|s| match s {
            Signer::Key { tlog, .. } => *tlog,
            Signer::Identity { .. } => true,
        });
        if needs_root && root.is_none() {
            return Err(
                "keyless signers (and keys with `tlog: true`) need a trusted root (trusted_root.json)"
                    .to_owned(),
            );
        }
        let predicate_types = if predicate_types.is_empty() {
            vec![COSIGN_SIGN_PREDICATE.to_owned()]
        } else {
            predicate_types
        };
        Ok(Self {
            signers,
            require,
            root,
            predicate_types,
        })
    }

    /// The signers.
    pub fn signers(&self) -> &[Signer] {
        &self.signers
    }

    /// `any` or `all`.
    pub fn require(&self) -> Require {
        self.require
    }

    /// Verifies the signature material found for the manifest `digest`
    /// (`sha256:` + 64 hex digits). Fails closed: anything that cannot be
    /// checked counts as not signed.
    ///
    /// # Errors
    /// [`Rejected`], with a reason per signature examined.
    pub fn verify(&self, digest: &str, layers: &[SignatureLayer]) -> Result<Verified, Rejected> {
        let mut reasons = Vec::new();
        let mut found = false;
        let Some(want) = digest
            .strip_prefix("sha256:")
            .and_then(crate::keys::unhex)
            .filter(|d| d.len() == 32)
        else {
            return Err(Rejected {
                reasons: vec![format!("{digest:?} is not a sha256 manifest digest")],
                found,
            });
        };
        let mut satisfied: Vec<Option<SignedBy>> = vec![None; self.signers.len()];
        let note = |reasons: &mut Vec<String>, r: String| {
            if reasons.len() < MAX_REASONS {
                reasons.push(r);
            }
        };
        for layer in layers.iter().take(MAX_LAYERS) {
            let sig = match layer.read() {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(e) => {
                    found = true;
                    note(&mut reasons, format!("{}: {e}", layer.origin));
                    continue;
                }
            };
            found = true;
            if let Err(e) = self.binds(&sig, digest, &want) {
                note(&mut reasons, format!("{}: {e}", layer.origin));
                continue;
            }
            let leaf = match &sig.verifier {
                Verifier::Certificate(der) => Some(cert::read_leaf(der)),
                Verifier::Key => None,
            };
            let mut why = Vec::new();
            for (i, signer) in self.signers.iter().enumerate() {
                if satisfied[i].is_some() {
                    continue;
                }
                match self.check(&sig, signer, leaf.as_ref()) {
                    Ok(by) => satisfied[i] = Some(by),
                    Err(e) if self.signers.len() == 1 => why.push(e),
                    Err(e) => why.push(format!("not {signer}: {e}")),
                }
            }
            if !why.is_empty() && satisfied.iter().all(Option::is_none) {
                note(
                    &mut reasons,
                    format!("{}: {}", layer.origin, why.join(", ")),
                );
            }
            let done = match self.require {
                Require::Any => satisfied.iter().any(Option::is_some),
                Require::All => satisfied.iter().all(Option::is_some),
            };
            if done {
                return Ok(Verified {
                    digest: digest.to_owned(),
                    signed_by: satisfied.into_iter().flatten().collect(),
                });
            }
        }
        if self.require == Require::All && satisfied.iter().any(Option::is_some) {
            for (signer, s) in self.signers.iter().zip(&satisfied) {
                if s.is_none() {
                    note(&mut reasons, format!("no valid signature by {signer}"));
                }
            }
        }
        Err(Rejected { reasons, found })
    }

    /// Whether the signed content names the manifest `digest`.
    fn binds(&self, sig: &Signature, digest: &str, want: &[u8]) -> Result<(), String> {
        match &sig.signed {
            Signed::Payload(payload) => {
                let v: Value = serde_json::from_slice(payload)
                    .map_err(|_| "the signed payload is not JSON".to_owned())?;
                let named = v
                    .pointer("/critical/image/docker-manifest-digest")
                    .and_then(Value::as_str)
                    .ok_or("the signed payload names no manifest digest")?;
                if named == digest {
                    Ok(())
                } else {
                    Err(format!("the signature is for another image ({named})"))
                }
            }
            Signed::MessageDigest(d) => {
                if d.as_slice() == want {
                    Ok(())
                } else {
                    Err(format!(
                        "the signature is for another image (sha256:{})",
                        hex(d)
                    ))
                }
            }
            Signed::Dsse {
                payload_type,
                payload,
            } => {
                if payload_type != IN_TOTO {
                    return Err(format!("unsupported DSSE payload type {payload_type:?}"));
                }
                let v: Value = serde_json::from_slice(payload)
                    .map_err(|_| "the in-toto statement is not JSON".to_owned())?;
                let kind = v.get("_type").and_then(Value::as_str).unwrap_or_default();
                if !matches!(
                    kind,
                    "https://in-toto.io/Statement/v1" | "https://in-toto.io/Statement/v0.1"
                ) {
                    return Err(format!("unsupported in-toto statement type {kind:?}"));
                }
                let predicate = v
                    .get("predicateType")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !self.predicate_types.iter().any(|p| p == predicate) {
                    return Err(format!(
                        "the statement's predicate type {predicate:?} is not accepted as a signature"
                    ));
                }
                let hexd = hex(want);
                let subjects = v
                    .get("subject")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if subjects.iter().take(1024).any(|s| {
                    s.pointer("/digest/sha256").and_then(Value::as_str) == Some(hexd.as_str())
                }) {
                    Ok(())
                } else {
                    Err("the statement is about another image".to_owned())
                }
            }
        }
    }

    /// Verifies one signature against one signer.
    fn check(
        &self,
        sig: &Signature,
        signer: &Signer,
        leaf: Option<&Result<Leaf, String>>,
    ) -> Result<SignedBy, String> {
        match signer {
            Signer::Key { name, key, tlog } => {
                if !signature_verifies(sig, key) {
                    return Err(format!("the signature does not verify with key {name}"));
                }
                if *tlog {
                    let root = self.root.as_deref().ok_or("no trusted root")?;
                    logged(sig, root, key.spki_der())?;
                }
                Ok(SignedBy::Key {
                    name: name.clone(),
                    fingerprint: key.fingerprint(),
                })
            }
            Signer::Identity { subject, issuer } => {
                let der = match &sig.verifier {
                    Verifier::Certificate(der) => der,
                    Verifier::Key => {
                        return Err("signed with a key, not a certificate".to_owned());
                    }
                };
                let leaf = match leaf {
                    Some(Ok(l)) => l,
                    Some(Err(e)) => return Err(e.clone()),
                    None => return Err("no certificate".to_owned()),
                };
                let id = &leaf.identity;
                let Some(name) = id.subjects.iter().find(|s| subject.matches(s)) else {
                    return Err(format!(
                        "the certificate's identity {} is not {subject}",
                        if id.subjects.is_empty() {
                            "(none)".to_owned()
                        } else {
                            id.subjects.join(", ")
                        }
                    ));
                };
                if !issuer.matches(&id.issuer) {
                    return Err(format!(
                        "the certificate's issuer {:?} is not {issuer}",
                        id.issuer
                    ));
                }
                let root = self.root.as_deref().ok_or("no trusted root")?;
                let entry = logged(sig, root, der)?;
                cert::verify_path(der, root, entry.integrated_time)?;
                if !signature_verifies(sig, &leaf.key) {
                    return Err("the signature does not verify with the certificate's key".into());
                }
                Ok(SignedBy::Identity {
                    subject: name.clone(),
                    issuer: id.issuer.clone(),
                    log_index: entry.log_index,
                    integrated_time: image_update_registry::Timestamp::from_unix(
                        entry.integrated_time,
                        0,
                    )
                    .to_string(),
                    source_repository: id.source_repository.clone(),
                    source_digest: id.source_digest.clone(),
                })
            }
        }
    }
}

/// Whether `key` verifies the signature over what it signs.
fn signature_verifies(sig: &Signature, key: &PublicKey) -> bool {
    match &sig.signed {
        Signed::Payload(p) => key.verify(p, &sig.signature),
        Signed::Dsse {
            payload_type,
            payload,
        } => key.verify(&pae(payload_type, payload), &sig.signature),
        Signed::MessageDigest(d) => key.verify_prehash(HashAlg::Sha256, d, &sig.signature),
    }
}

/// The first log entry of `sig` that verifies against `root` and records
/// this signature by `verifier_der`.
fn logged<'a>(
    sig: &'a Signature,
    root: &TrustedRoot,
    verifier_der: &[u8],
) -> Result<&'a crate::tlog::TlogEntry, String> {
    if sig.tlog.is_empty() {
        return Err("the signature has no transparency log entry".to_owned());
    }
    let payload_digest;
    let logged = match &sig.signed {
        Signed::Payload(p) => {
            payload_digest = Sha256::digest(p).to_vec();
            Logged::HashedRekord {
                digest: &payload_digest,
                signature: &sig.signature,
                verifier_der,
            }
        }
        Signed::MessageDigest(d) => Logged::HashedRekord {
            digest: d,
            signature: &sig.signature,
            verifier_der,
        },
        Signed::Dsse { payload, .. } => Logged::Dsse {
            payload,
            signature: &sig.signature,
            verifier_der,
        },
    };
    let mut last = String::new();
    for entry in &sig.tlog {
        match entry
            .verify(root, sig.needs_proof)
            .and_then(|()| entry.check_body(&logged))
        {
            Ok(()) => return Ok(entry),
            Err(e) => last = e,
        }
    }
    Err(last)
}

// ---------------------------------------------------------------------------
// Configuration

fn matcher(what: &str, exact: Option<&String>, re: Option<&String>) -> Result<Matcher, String> {
    match (exact, re) {
        (Some(e), None) if !e.is_empty() => Ok(Matcher::Exact(e.clone())),
        (None, Some(r)) if !r.is_empty() => Matcher::regex(r),
        (Some(_), Some(_)) => Err(format!("give {what} or {what}_regexp, not both")),
        _ => Err(format!("an identity needs {what} or {what}_regexp")),
    }
}

/// Builds the policy of a `verify` section, reading key files and the
/// trusted root (`config.trusted_root`, else `default_root`) relative to
/// `base` (the directory of the settings file).
///
/// # Errors
/// A message naming the key, identity or file at fault.
pub fn from_config(
    config: &VerifyConfig,
    default_root: Option<&Path>,
    base: Option<&Path>,
) -> Result<Policy, String> {
    let resolve = |p: &Path| match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p.to_path_buf(),
    };
    let mut signers = Vec::new();
    for (i, k) in config.keys.iter().enumerate() {
        let (pem, default_name) = match (&k.path, &k.pem) {
            (Some(p), None) => {
                let path = resolve(p);
                let text = fs_err::read_to_string(&path).map_err(|e| format!("keys[{i}]: {e}"))?;
                let name = path.file_name().map_or_else(
                    || format!("key {}", i + 1),
                    |n| n.to_string_lossy().into_owned(),
                );
                (text, name)
            }
            (None, Some(pem)) => (pem.clone(), format!("key {}", i + 1)),
            _ => return Err(format!("keys[{i}]: give path or pem (one of them)")),
        };
        let key = PublicKey::from_pem(&pem).map_err(|e| format!("keys[{i}]: {e}"))?;
        signers.push(Signer::Key {
            name: k.name.clone().unwrap_or(default_name),
            key,
            tlog: k.tlog,
        });
    }
    for (i, id) in config.identities.iter().enumerate() {
        signers.push(Signer::Identity {
            subject: matcher("subject", id.subject.as_ref(), id.subject_regexp.as_ref())
                .map_err(|e| format!("identities[{i}]: {e}"))?,
            issuer: matcher("issuer", id.issuer.as_ref(), id.issuer_regexp.as_ref())
                .map_err(|e| format!("identities[{i}]: {e}"))?,
        });
    }
    let root = match &config.trusted_root_json {
        Some(json) => Some(Arc::new(
            TrustedRoot::from_json(json.as_bytes()).map_err(|e| e.to_string())?,
        )),
        None => config
            .trusted_root
            .as_deref()
            .or(default_root)
            .map(|p| TrustedRoot::load(&resolve(p)).map(Arc::new))
            .transpose()
            .map_err(|e| e.to_string())?,
    };
    Policy::new(
        signers,
        config.require,
        root,
        config.predicate_types.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers() {
        let m = Matcher::regex("a.c").unwrap();
        assert!(m.matches("abc") && !m.matches("xabc") && !m.matches("abcx"));
        assert!(Matcher::regex("(").is_err());
        assert!(Matcher::Exact("a".into()).matches("a"));
        assert_eq!(m.to_string(), "/a.c/");
    }

    #[test]
    fn configurations_name_what_is_wrong() {
        let both = VerifyConfig {
            identities: vec![IdentityConfig {
                subject: Some("a".into()),
                subject_regexp: Some("b".into()),
                issuer: Some("i".into()),
                ..IdentityConfig::default()
            }],
            ..VerifyConfig::default()
        };
        let e = from_config(&both, None, None).unwrap_err();
        assert!(
            e.contains("identities[0]: give subject or subject_regexp, not both"),
            "{e}"
        );
        let no_root = VerifyConfig {
            identities: vec![IdentityConfig {
                subject: Some("a".into()),
                issuer: Some("i".into()),
                ..IdentityConfig::default()
            }],
            ..VerifyConfig::default()
        };
        assert!(
            from_config(&no_root, None, None)
                .unwrap_err()
                .contains("need a trusted root")
        );
        assert!(
            from_config(&VerifyConfig::default(), None, None)
                .unwrap_err()
                .contains("at least one signer")
        );
        let bad_key = VerifyConfig {
            keys: vec![KeyConfig {
                pem: Some("junk".into()),
                ..KeyConfig::default()
            }],
            ..VerifyConfig::default()
        };
        assert!(
            from_config(&bad_key, None, None)
                .unwrap_err()
                .starts_with("keys[0]:")
        );
        let missing = VerifyConfig {
            keys: vec![KeyConfig {
                path: Some("nowhere/cosign.pub".into()),
                ..KeyConfig::default()
            }],
            ..VerifyConfig::default()
        };
        assert!(
            from_config(&missing, None, None)
                .unwrap_err()
                .contains("nowhere/cosign.pub")
        );
    }

    #[test]
    fn a_digest_must_be_sha256() {
        let key = PublicKey::from_pem(
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEXBO983V7qNmas2P8371Q85p33WZN\nlD47vyupoNCqw/IlxZOw6es4pL3HtudrW1IwBDhlycbPtzuzxoq57mrZng==\n-----END PUBLIC KEY-----\n",
        )
        .unwrap();
        let p = Policy::new(
            vec![Signer::Key {
                name: "k".into(),
                key,
                tlog: false,
            }],
            Require::Any,
            None,
            Vec::new(),
        )
        .unwrap();
        assert!(
            p.verify("latest", &[])
                .unwrap_err()
                .to_string()
                .contains("not a sha256")
        );
        let r = p
            .verify(&format!("sha256:{}", "a".repeat(64)), &[])
            .unwrap_err();
        assert!(!r.found);
        assert_eq!(r.to_string(), "no signature found");
    }
}
