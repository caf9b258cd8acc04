//! Transparency log entries (Rekor v1) and their offline checks: the signed
//! entry timestamp (SET), the inclusion proof with its signed checkpoint,
//! and that the logged body is about this very signature.

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::keys::{hex, pem_blocks, unhex};
use crate::merkle;
use crate::note::Checkpoint;
use crate::trust::TrustedRoot;

/// Largest logged body read.
pub const MAX_BODY: usize = 256 * 1024;

/// One entry, from a bundle or a legacy `dev.sigstore.cosign/bundle`
/// annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogEntry {
    pub log_index: i64,
    pub log_id: Vec<u8>,
    /// Unix seconds at which the log says it integrated the entry.
    pub integrated_time: i64,
    /// The canonicalized body (JSON).
    pub body: Vec<u8>,
    /// `kind` and `version` as the bundle declares them (empty for a
    /// legacy annotation, whose body alone says).
    pub kind: String,
    pub version: String,
    /// The signed entry timestamp.
    pub set: Option<Vec<u8>>,
    pub proof: Option<InclusionProof>,
}

/// An inclusion proof with its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    pub log_index: u64,
    pub root_hash: Vec<u8>,
    pub tree_size: u64,
    pub hashes: Vec<Vec<u8>>,
    pub checkpoint: String,
}

/// What the logged body must say about the signature.
pub enum Logged<'a> {
    /// hashedrekord: the signed artifact's SHA-256, the signature, and the
    /// certificate or public key (DER) that verifies it.
    HashedRekord {
        digest: &'a [u8],
        signature: &'a [u8],
        verifier_der: &'a [u8],
    },
    /// dsse: the payload's SHA-256, the signature and the verifier (DER).
    Dsse {
        payload: &'a [u8],
        signature: &'a [u8],
        verifier_der: &'a [u8],
    },
}

impl TlogEntry {
    /// The canonical JSON the SET signs (RFC 8785 over four fields whose
    /// values are two integers and two strings of base64 and hex, which
    /// need no escaping, so it is written directly).
    pub fn set_payload(&self) -> String {
        format!(
            r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
            base64::engine::general_purpose::STANDARD.encode(&self.body),
            self.integrated_time,
            hex(&self.log_id),
            self.log_index
        )
    }

    /// Checks the entry against the trusted root: the log is trusted and
    /// its key valid at the integrated time; the SET verifies (required:
    /// it is what makes the integrated time trustworthy); the inclusion
    /// proof, when present or when `need_proof`, leads to the root hash of
    /// a checkpoint the log signed.
    ///
    /// # Errors
    /// Why the entry cannot be trusted.
    pub fn verify(&self, root: &TrustedRoot, need_proof: bool) -> Result<(), String> {
        let log = root.log(&self.log_id).ok_or_else(|| {
            format!(
                "the transparency log {} is not in the trusted root",
                hex(&self.log_id)
            )
        })?;
        if !log.valid.contains(self.integrated_time) {
            return Err(format!(
                "the transparency log's key was not valid at the entry's time {}",
                self.integrated_time
            ));
        }
        let set = self
            .set
            .as_ref()
            .ok_or("the log entry has no signed entry timestamp")?;
        if !log.key.verify(self.set_payload().as_bytes(), set) {
            return Err(
                "the log entry's signed entry timestamp does not verify with the log's key"
                    .to_owned(),
            );
        }
        match &self.proof {
            None if need_proof => Err("the log entry has no inclusion proof".to_owned()),
            None => Ok(()),
            Some(p) => {
                let leaf = merkle::leaf_hash(&self.body);
                let computed = merkle::root_from_proof(p.log_index, p.tree_size, leaf, &p.hashes)
                    .map_err(|e| format!("the inclusion proof is invalid: {e}"))?;
                if computed.as_slice() != p.root_hash.as_slice() {
                    return Err("the inclusion proof does not lead to its root hash".to_owned());
                }
                let cp = Checkpoint::parse(&p.checkpoint)
                    .map_err(|e| format!("the inclusion proof's checkpoint: {e}"))?;
                if cp.root_hash != p.root_hash || cp.size != p.tree_size {
                    return Err(
                        "the checkpoint is for another tree than the inclusion proof".to_owned(),
                    );
                }
                if !cp.signed_by(&log.key, &log.base_url) {
                    return Err(
                        "the checkpoint is not signed by the transparency log's key".to_owned()
                    );
                }
                Ok(())
            }
        }
    }

    /// Checks that the logged body is about this signature.
    ///
    /// # Errors
    /// A kind other than hashedrekord 0.0.1 or dsse 0.0.1, or a body that
    /// names another artifact, signature or signer.
    pub fn check_body(&self, expected: &Logged<'_>) -> Result<(), String> {
        if self.body.len() > MAX_BODY {
            return Err("the logged body is too large".to_owned());
        }
        let body: Value = serde_json::from_slice(&self.body)
            .map_err(|_| "the logged body is not JSON".to_owned())?;
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or_default();
        let version = body
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.kind.is_empty() && (self.kind != kind || self.version != version) {
            return Err(format!(
                "the log entry says {}/{} but its body is {kind}/{version}",
                self.kind, self.version
            ));
        }
        let spec = body.get("spec").unwrap_or(&Value::Null);
        let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let b64 = |t: Option<String>| {
            t.and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
        };
        let mismatch = |what: &str| Err(format!("the logged body names another {what}"));
        match (expected, kind, version) {
            (
                Logged::HashedRekord {
                    digest,
                    signature,
                    verifier_der,
                },
                "hashedrekord",
                "0.0.1",
            ) => {
                if s(spec, "/data/hash/algorithm").as_deref() != Some("sha256")
                    || s(spec, "/data/hash/value")
                        .and_then(|h| unhex(&h))
                        .as_deref()
                        != Some(*digest)
                {
                    return mismatch("artifact");
                }
                if b64(s(spec, "/signature/content")).as_deref() != Some(*signature) {
                    return mismatch("signature");
                }
                if !verifier_matches(b64(s(spec, "/signature/publicKey/content")), verifier_der) {
                    return mismatch("signer");
                }
                Ok(())
            }
            (
                Logged::Dsse {
                    payload,
                    signature,
                    verifier_der,
                },
                "dsse",
                "0.0.1",
            ) => {
                let hash = hex(&Sha256::digest(payload));
                if s(spec, "/payloadHash/algorithm").as_deref() != Some("sha256")
                    || s(spec, "/payloadHash/value").as_deref() != Some(hash.as_str())
                {
                    return mismatch("payload");
                }
                let sigs = spec
                    .get("signatures")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let found = sigs.iter().take(16).any(|e| {
                    b64(s(e, "/signature")).as_deref() == Some(*signature)
                        && verifier_matches(b64(s(e, "/verifier")), verifier_der)
                });
                if found {
                    Ok(())
                } else {
                    mismatch("signature or signer")
                }
            }
            (_, kind, version) => Err(format!(
                "log entries of kind {kind}/{version} are not supported here"
            )),
        }
    }
}

/// Whether a logged verifier (a PEM certificate or public key) is `der`.
fn verifier_matches(pem: Option<Vec<u8>>, der: &[u8]) -> bool {
    let Some(pem) = pem else {
        return false;
    };
    ["CERTIFICATE", "PUBLIC KEY"]
        .iter()
        .any(|label| pem_blocks(&pem, label).first().map(Vec::as_slice) == Some(der))
}
