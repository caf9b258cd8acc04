//! Signature material as found in a registry, read into one shape: cosign's
//! simple-signing layers (legacy `.sig` manifests) and Sigstore bundles
//! (v0.1 to v0.3, with a DSSE envelope or a message signature).

use std::collections::BTreeMap;

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use crate::keys::pem_blocks;
use crate::tlog::{InclusionProof, TlogEntry};

/// Layer media type of a simple-signing payload.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// Annotation holding a simple-signing layer's base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// Annotation holding the signing certificate (PEM).
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// Annotation holding the certificate chain (PEM).
pub const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
/// Annotation holding the Rekor bundle (SET and entry).
pub const BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";
/// Artifact and layer media type of a Sigstore bundle v0.3.
pub const BUNDLE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The in-toto payload type.
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// The predicate type of `cosign sign` with bundles.
pub const COSIGN_SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// Most transparency log entries read per bundle.
pub const MAX_TLOG_ENTRIES: usize = 4;
/// Largest bundle or payload read.
pub const MAX_DOCUMENT: usize = 1024 * 1024;

/// One layer of a signature manifest, as the registry served it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureLayer {
    /// Where it was found, for messages: `referrer sha256:…`,
    /// `tag sha256-….sig layer 2`.
    pub origin: String,
    pub media_type: String,
    pub annotations: BTreeMap<String, String>,
    pub data: Vec<u8>,
}

/// What a signature signs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// A simple-signing payload, signed as is.
    Payload(Vec<u8>),
    /// A DSSE envelope: the signature is over PAE(type, payload).
    Dsse {
        payload_type: String,
        payload: Vec<u8>,
    },
    /// A message known by its SHA-256 digest.
    MessageDigest(Vec<u8>),
}

/// Who the material says signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verifier {
    /// A certificate (DER) and any chain it came with.
    Certificate(Vec<u8>),
    /// No certificate: a key known out of band.
    Key,
}

/// One signature, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub signed: Signed,
    pub signature: Vec<u8>,
    pub verifier: Verifier,
    pub tlog: Vec<TlogEntry>,
    /// A bundle of version 0.2 or later, which must carry inclusion proofs.
    pub needs_proof: bool,
}

fn b64(field: &str, text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| format!("{field} is not base64"))
}

/// A JSON integer that protobuf's JSON mapping may write as a string.
fn int(v: Option<&Value>, field: &str) -> Result<i64, String> {
    match v {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("{field} is not an integer"))
}

impl SignatureLayer {
    /// Reads the layer, if it is signature material at all (`Ok(None)`
    /// for other layers, such as an SBOM referrer).
    ///
    /// # Errors
    /// Material of a known kind that is malformed.
    pub fn read(&self) -> Result<Option<Signature>, String> {
        let media = self.media_type.split(';').next().unwrap_or_default().trim();
        if media == SIMPLE_SIGNING {
            return legacy(self).map(Some);
        }
        if media == BUNDLE_V03 || media.starts_with("application/vnd.dev.sigstore.bundle") {
            return bundle(&self.data).map(Some);
        }
        Ok(None)
    }
}

fn legacy(layer: &SignatureLayer) -> Result<Signature, String> {
    let a = &layer.annotations;
    let signature = b64(
        SIGNATURE_ANNOTATION,
        a.get(SIGNATURE_ANNOTATION)
            .ok_or("the layer has no signature annotation")?,
    )?;
    let verifier = match a
        .get(CERTIFICATE_ANNOTATION)
        .filter(|c| !c.trim().is_empty())
    {
        Some(pem) => Verifier::Certificate(
            pem_blocks(pem.as_bytes(), "CERTIFICATE")
                .into_iter()
                .next()
                .ok_or("the certificate annotation holds no PEM certificate")?,
        ),
        None => Verifier::Key,
    };
    let mut tlog = Vec::new();
    if let Some(bundle) = a.get(BUNDLE_ANNOTATION).filter(|b| !b.trim().is_empty()) {
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct RekorBundle {
            signed_entry_timestamp: String,
            payload: RekorPayload,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct RekorPayload {
            body: String,
            integrated_time: i64,
            log_index: i64,
            #[serde(rename = "logID")]
            log_id: String,
        }
        let b: RekorBundle = serde_json::from_str(bundle)
            .map_err(|e| format!("the Rekor bundle annotation is malformed: {e}"))?;
        tlog.push(TlogEntry {
            log_index: b.payload.log_index,
            log_id: crate::keys::unhex(&b.payload.log_id)
                .ok_or("the Rekor bundle's logID is not hex")?,
            integrated_time: b.payload.integrated_time,
            body: b64("the Rekor bundle's body", &b.payload.body)?,
            kind: String::new(),
            version: String::new(),
            set: Some(b64(
                "the Rekor bundle's SignedEntryTimestamp",
                &b.signed_entry_timestamp,
            )?),
            proof: None,
        });
    }
    Ok(Signature {
        signed: Signed::Payload(layer.data.clone()),
        signature,
        verifier,
        tlog,
        needs_proof: false,
    })
}

/// Reads a Sigstore bundle (JSON).
///
/// # Errors
/// Anything malformed, or a version this verifier does not read.
pub fn bundle(data: &[u8]) -> Result<Signature, String> {
    if data.len() > MAX_DOCUMENT {
        return Err("the bundle is larger than 1 MiB".to_owned());
    }
    let doc: Value =
        serde_json::from_slice(data).map_err(|e| format!("the bundle is not JSON: {e}"))?;
    let media = doc
        .get("mediaType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = match media {
        "application/vnd.dev.sigstore.bundle+json;version=0.1" => 1,
        "application/vnd.dev.sigstore.bundle+json;version=0.2" => 2,
        "application/vnd.dev.sigstore.bundle+json;version=0.3" | BUNDLE_V03 => 3,
        other => return Err(format!("unsupported bundle media type {other:?}")),
    };
    let vm = doc
        .get("verificationMaterial")
        .ok_or("the bundle has no verificationMaterial")?;
    let verifier = if let Some(c) = vm.pointer("/certificate/rawBytes").and_then(Value::as_str) {
        Verifier::Certificate(b64("verificationMaterial.certificate", c)?)
    } else if let Some(first) = vm
        .pointer("/x509CertificateChain/certificates/0/rawBytes")
        .and_then(Value::as_str)
    {
        Verifier::Certificate(b64("verificationMaterial.x509CertificateChain", first)?)
    } else if vm.get("publicKey").is_some() {
        Verifier::Key
    } else {
        return Err("the bundle names no certificate or key".to_owned());
    };
    let entries = vm
        .get("tlogEntries")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if entries.len() > MAX_TLOG_ENTRIES {
        return Err(format!("more than {MAX_TLOG_ENTRIES} log entries"));
    }
    let mut tlog = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let f = |name: &str| format!("tlogEntries[{i}].{name}");
        let text = |p: &str| e.pointer(p).and_then(Value::as_str);
        let proof = match e.get("inclusionProof").filter(|p| !p.is_null()) {
            None => None,
            Some(p) => {
                let hashes = p
                    .get("hashes")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if hashes.len() > crate::merkle::MAX_PROOF_HASHES {
                    return Err(format!("{} has too many hashes", f("inclusionProof")));
                }
                let index = int(p.get("logIndex"), &f("inclusionProof.logIndex"))?;
                let size = int(p.get("treeSize"), &f("inclusionProof.treeSize"))?;
                Some(InclusionProof {
                    log_index: u64::try_from(index)
                        .map_err(|_| format!("{} is negative", f("inclusionProof.logIndex")))?,
                    tree_size: u64::try_from(size)
                        .map_err(|_| format!("{} is negative", f("inclusionProof.treeSize")))?,
                    root_hash: b64(
                        &f("inclusionProof.rootHash"),
                        p.get("rootHash")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    )?,
                    hashes: hashes
                        .iter()
                        .map(|h| b64(&f("inclusionProof.hashes"), h.as_str().unwrap_or("!")))
                        .collect::<Result<_, _>>()?,
                    checkpoint: p
                        .pointer("/checkpoint/envelope")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("{} has no checkpoint", f("inclusionProof")))?
                        .to_owned(),
                })
            }
        };
        tlog.push(TlogEntry {
            log_index: int(e.get("logIndex"), &f("logIndex"))?,
            log_id: b64(&f("logId.keyId"), text("/logId/keyId").unwrap_or("!"))?,
            integrated_time: int(e.get("integratedTime"), &f("integratedTime"))?,
            body: b64(
                &f("canonicalizedBody"),
                text("/canonicalizedBody").unwrap_or("!"),
            )?,
            kind: text("/kindVersion/kind").unwrap_or_default().to_owned(),
            version: text("/kindVersion/version").unwrap_or_default().to_owned(),
            set: text("/inclusionPromise/signedEntryTimestamp")
                .map(|s| b64(&f("inclusionPromise"), s))
                .transpose()?,
            proof,
        });
    }
    let (signed, signature) = if let Some(env) = doc.get("dsseEnvelope") {
        let sigs = env
            .get("signatures")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let [only] = sigs else {
            return Err("the DSSE envelope must hold exactly one signature".to_owned());
        };
        (
            Signed::Dsse {
                payload_type: env
                    .get("payloadType")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                payload: b64(
                    "dsseEnvelope.payload",
                    env.get("payload").and_then(Value::as_str).unwrap_or("!"),
                )?,
            },
            b64(
                "dsseEnvelope.signatures[0].sig",
                only.get("sig").and_then(Value::as_str).unwrap_or("!"),
            )?,
        )
    } else if let Some(m) = doc.get("messageSignature") {
        let alg = m
            .pointer("/messageDigest/algorithm")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if alg != "SHA2_256" {
            return Err(format!(
                "message digests of algorithm {alg:?} are not supported (SHA2_256 is)"
            ));
        }
        (
            Signed::MessageDigest(b64(
                "messageSignature.messageDigest.digest",
                m.pointer("/messageDigest/digest")
                    .and_then(Value::as_str)
                    .unwrap_or("!"),
            )?),
            b64(
                "messageSignature.signature",
                m.get("signature").and_then(Value::as_str).unwrap_or("!"),
            )?,
        )
    } else {
        return Err("the bundle has neither a DSSE envelope nor a message signature".to_owned());
    };
    Ok(Signature {
        signed,
        signature,
        verifier,
        tlog,
        needs_proof: version >= 2,
    })
}

/// DSSE's pre-authentication encoding.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}
