//! Signing images as cosign does, offline: signing keys (ECDSA P-256/P-384,
//! Ed25519, RSA), a test Fulcio (a root and an intermediate CA issuing
//! code-signing certificates with an OIDC identity and issuer), a test
//! transparency log (a P-256 key, signed entry timestamps, RFC 6962
//! inclusion proofs and signed checkpoints), the `trusted_root.json` that
//! trusts them, and pushes of the results to a [`Registry`]: legacy
//! `sha256-<hex>.sig` manifests and Sigstore bundle referrers (with the
//! `sha256-<hex>` referrers-tag index registries without the referrers API
//! get).
//!
//! Everything is minted per run; nothing here is a recorded fixture.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use ring::signature as rs;
use sha2::{Digest, Sha256};

use crate::registry::{Registry, sha256};

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// PEM armour.
pub fn pem(label: &str, der: &[u8]) -> String {
    let body = b64(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The kinds of signing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    P256,
    P384,
    Ed25519,
    Rsa,
}

/// A signing key.
pub struct TestKey {
    pub kind: KeyKind,
    /// PKCS#8 DER.
    pkcs8: Vec<u8>,
    /// SubjectPublicKeyInfo DER.
    pub spki: Vec<u8>,
    rng: ring::rand::SystemRandom,
}

const RSA_KEY: &str = include_str!("../data/rsa-2048.pk8.pem");

impl TestKey {
    pub fn new(kind: KeyKind) -> Self {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = match kind {
            KeyKind::P256 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
                .unwrap()
                .serialize_der(),
            KeyKind::P384 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384)
                .unwrap()
                .serialize_der(),
            KeyKind::Ed25519 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)
                .unwrap()
                .serialize_der(),
            KeyKind::Rsa => {
                let body: String = RSA_KEY
                    .lines()
                    .filter(|l| !l.starts_with("-----"))
                    .collect();
                base64::engine::general_purpose::STANDARD
                    .decode(body)
                    .unwrap()
            }
        };
        let spki = rcgen::PublicKeyData::subject_public_key_info(&Self::rcgen_pair(kind, &pkcs8));
        Self {
            kind,
            pkcs8,
            spki,
            rng,
        }
    }

    fn rcgen_pair(kind: KeyKind, pkcs8: &[u8]) -> rcgen::KeyPair {
        let alg = match kind {
            KeyKind::P256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            KeyKind::P384 => &rcgen::PKCS_ECDSA_P384_SHA384,
            KeyKind::Ed25519 => &rcgen::PKCS_ED25519,
            KeyKind::Rsa => &rcgen::PKCS_RSA_SHA256,
        };
        rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
            &rustls_pki_types::PrivatePkcs8KeyDer::from(pkcs8.to_vec()),
            alg,
        )
        .unwrap()
    }

    /// An rcgen key pair for certificates.
    pub fn rcgen(&self) -> rcgen::KeyPair {
        Self::rcgen_pair(self.kind, &self.pkcs8)
    }

    pub fn p256() -> Self {
        Self::new(KeyKind::P256)
    }

    /// The public key, PEM (`cosign.pub`).
    pub fn public_pem(&self) -> String {
        pem("PUBLIC KEY", &self.spki)
    }

    /// Signs `message` as cosign does for the key: ECDSA (DER) with
    /// SHA-256 (P-256) or SHA-384 (P-384), Ed25519, RSA PKCS#1 v1.5 SHA-256.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self.kind {
            KeyKind::P256 | KeyKind::P384 => {
                let alg = if self.kind == KeyKind::P256 {
                    &rs::ECDSA_P256_SHA256_ASN1_SIGNING
                } else {
                    &rs::ECDSA_P384_SHA384_ASN1_SIGNING
                };
                let pair = rs::EcdsaKeyPair::from_pkcs8(alg, &self.pkcs8, &self.rng).unwrap();
                pair.sign(&self.rng, message).unwrap().as_ref().to_vec()
            }
            KeyKind::Ed25519 => {
                let pair = rs::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&self.pkcs8).unwrap();
                pair.sign(message).as_ref().to_vec()
            }
            KeyKind::Rsa => {
                let pair = rs::RsaKeyPair::from_pkcs8(&self.pkcs8).unwrap();
                let mut sig = vec![0; pair.public().modulus_len()];
                pair.sign(&rs::RSA_PKCS1_SHA256, &self.rng, message, &mut sig)
                    .unwrap();
                sig
            }
        }
    }
}

/// A signing certificate and its key.
pub struct Signing {
    pub key: TestKey,
    pub cert_der: Vec<u8>,
}

impl Signing {
    pub fn cert_pem(&self) -> String {
        pem("CERTIFICATE", &self.cert_der)
    }
}

/// What the test Fulcio puts in a certificate.
#[derive(Clone)]
pub struct CertSpec {
    /// A URI (`https://…`) or, with `@`, an e-mail address.
    pub subject: String,
    pub issuer: String,
    /// Unix seconds.
    pub not_before: i64,
    pub not_after: i64,
    /// Give the code-signing extended key usage (Fulcio always does).
    pub code_signing: bool,
    /// Fulcio's source repository URI and digest extensions (a CI workflow's certificate).
    pub source: Option<(String, String)>,
}

impl CertSpec {
    /// Valid from a minute ago for ten minutes.
    pub fn new(subject: &str, issuer: &str) -> Self {
        Self {
            subject: subject.to_owned(),
            issuer: issuer.to_owned(),
            not_before: now() - 60,
            not_after: now() + 600,
            code_signing: true,
            source: None,
        }
    }

    /// With Fulcio's source repository URI and digest extensions.
    pub fn from_source(mut self, repository: &str, digest: &str) -> Self {
        self.source = Some((repository.to_owned(), digest.to_owned()));
        self
    }
}

/// A test Sigstore: Fulcio CA and a transparency log.
pub struct TestSigstore {
    root: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    intermediate: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    log_key: TestKey,
    /// Leaf hashes of the log so far.
    leaves: Mutex<Vec<[u8; 32]>>,
}

/// One transparency log entry, as the log answers it.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub log_index: i64,
    pub log_id: Vec<u8>,
    pub integrated_time: i64,
    pub body: Vec<u8>,
    pub set: Vec<u8>,
    pub tree_size: u64,
    pub root_hash: Vec<u8>,
    pub hashes: Vec<Vec<u8>>,
    pub checkpoint: String,
}

fn time(t: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(t).unwrap()
}

fn ca_params(name: &str) -> rcgen::CertificateParams {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(rcgen::DnType::OrganizationName, "image-update test");
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    p.not_before = time(now() - 86_400 * 365);
    p.not_after = time(now() + 86_400 * 365);
    p
}

/// The DER of a UTF8String.
fn utf8_string(s: &str) -> Vec<u8> {
    let mut out = vec![0x0c];
    let n = s.len();
    if n < 128 {
        out.push(n as u8);
    } else {
        out.push(0x82);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    }
    out.extend_from_slice(s.as_bytes());
    out
}

impl TestSigstore {
    pub fn new() -> Self {
        Self::with_name("image-update test fulcio")
    }

    /// A Sigstore whose CA has the given common name (two Sigstores never
    /// trust each other's certificates or logs).
    pub fn with_name(name: &str) -> Self {
        let root_key = TestKey::new(KeyKind::P384).rcgen();
        let root = rcgen::CertifiedIssuer::self_signed(ca_params(name), root_key).unwrap();
        let mut ip = ca_params(&format!("{name} intermediate"));
        ip.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        ip.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        let intermediate =
            rcgen::CertifiedIssuer::signed_by(ip, TestKey::new(KeyKind::P384).rcgen(), &root)
                .unwrap();
        // A log that already holds a few entries, so proofs have hashes.
        let leaves = (0..5u8)
            .map(|i| leaf_hash(format!("earlier entry {i}").as_bytes()))
            .collect();
        Self {
            root,
            intermediate,
            log_key: TestKey::p256(),
            leaves: Mutex::new(leaves),
        }
    }

    /// The log's ID: SHA-256 of its key.
    pub fn log_id(&self) -> Vec<u8> {
        Sha256::digest(&self.log_key.spki).to_vec()
    }

    /// The DER of the root and the intermediate.
    pub fn ca_chain(&self) -> Vec<Vec<u8>> {
        vec![self.intermediate.der().to_vec(), self.root.der().to_vec()]
    }

    /// `trusted_root.json` trusting this CA and log.
    pub fn trusted_root_json(&self) -> String {
        serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{
                "baseUrl": "https://rekor.test.invalid",
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": b64(&self.log_key.spki),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2000-01-01T00:00:00Z"},
                },
                "logId": {"keyId": b64(&self.log_id())},
            }],
            "certificateAuthorities": [{
                "subject": {"organization": "image-update test", "commonName": "test fulcio"},
                "uri": "https://fulcio.test.invalid",
                "certChain": {"certificates": self.ca_chain().iter().map(|c| serde_json::json!({"rawBytes": b64(c)})).collect::<Vec<_>>()},
                "validFor": {"start": "2000-01-01T00:00:00Z"},
            }],
            "ctlogs": [],
            "timestampAuthorities": [],
        })
        .to_string()
    }

    /// A code-signing certificate for a fresh P-256 key.
    pub fn issue(&self, spec: &CertSpec) -> Signing {
        let key = TestKey::p256();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.subject_alt_names = vec![
            if spec.subject.contains('@') && !spec.subject.contains("://") {
                rcgen::SanType::Rfc822Name(spec.subject.as_str().try_into().unwrap())
            } else {
                rcgen::SanType::URI(spec.subject.as_str().try_into().unwrap())
            },
        ];
        p.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        if spec.code_signing {
            p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        } else {
            p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        }
        p.not_before = time(spec.not_before);
        p.not_after = time(spec.not_after);
        p.custom_extensions = vec![
            rcgen::CustomExtension::from_oid_content(
                &[1, 3, 6, 1, 4, 1, 57264, 1, 1],
                spec.issuer.as_bytes().to_vec(),
            ),
            rcgen::CustomExtension::from_oid_content(
                &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
                utf8_string(&spec.issuer),
            ),
        ];
        if let Some((repository, digest)) = &spec.source {
            p.custom_extensions
                .push(rcgen::CustomExtension::from_oid_content(
                    &[1, 3, 6, 1, 4, 1, 57264, 1, 12],
                    utf8_string(repository),
                ));
            p.custom_extensions
                .push(rcgen::CustomExtension::from_oid_content(
                    &[1, 3, 6, 1, 4, 1, 57264, 1, 13],
                    utf8_string(digest),
                ));
        }
        let cert = p.signed_by(&key.rcgen(), &self.intermediate).unwrap();
        Signing {
            key,
            cert_der: cert.der().to_vec(),
        }
    }

    /// Logs `body` at `integrated_time`: the SET, and an inclusion proof
    /// with a checkpoint signed at the tree's new size.
    pub fn log(&self, body: &[u8], integrated_time: i64) -> LogEntry {
        let mut leaves = self.leaves.lock().unwrap();
        let index = leaves.len();
        leaves.push(leaf_hash(body));
        let size = leaves.len();
        let root = tree_root(&leaves);
        let hashes = inclusion_proof(&leaves, index);
        drop(leaves);
        let log_id = self.log_id();
        let set_payload = format!(
            r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
            b64(body),
            integrated_time,
            hex(&log_id),
            index
        );
        let set = self.log_key.sign(set_payload.as_bytes());
        let checkpoint = self.checkpoint(size as u64, &root);
        LogEntry {
            log_index: index as i64,
            log_id,
            integrated_time,
            body: body.to_vec(),
            set,
            tree_size: size as u64,
            root_hash: root.to_vec(),
            hashes,
            checkpoint,
        }
    }

    /// A checkpoint for a tree, signed by the log.
    pub fn checkpoint(&self, size: u64, root: &[u8]) -> String {
        let body = format!("rekor.test.invalid - 1\n{size}\n{}\n", b64(root));
        let sig = self.log_key.sign(body.as_bytes());
        let mut raw = Sha256::digest(&self.log_key.spki)[..4].to_vec();
        raw.extend_from_slice(&sig);
        format!("{body}\n\u{2014} rekor.test.invalid {}\n", b64(&raw))
    }

    /// A key the log does not have, to forge with.
    pub fn forger() -> TestKey {
        TestKey::p256()
    }
}

/// A hashedrekord v0.0.1 body.
pub fn hashedrekord_body(artifact_sha256: &[u8], signature: &[u8], verifier_pem: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{{"data":{{"hash":{{"algorithm":"sha256","value":"{}"}}}},"signature":{{"content":"{}","publicKey":{{"content":"{}"}}}}}}}}"#,
        hex(artifact_sha256),
        b64(signature),
        b64(verifier_pem.as_bytes())
    )
    .into_bytes()
}

/// A dsse v0.0.1 body.
pub fn dsse_body(envelope: &[u8], payload: &[u8], signature: &[u8], verifier_pem: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"0.0.1","kind":"dsse","spec":{{"envelopeHash":{{"algorithm":"sha256","value":"{}"}},"payloadHash":{{"algorithm":"sha256","value":"{}"}},"signatures":[{{"signature":"{}","verifier":"{}"}}]}}}}"#,
        hex(&Sha256::digest(envelope)),
        hex(&Sha256::digest(payload)),
        b64(signature),
        b64(verifier_pem.as_bytes())
    )
    .into_bytes()
}

/// The legacy Rekor bundle annotation of a log entry.
pub fn rekor_annotation(e: &LogEntry) -> String {
    serde_json::json!({
        "SignedEntryTimestamp": b64(&e.set),
        "Payload": {
            "body": b64(&e.body),
            "integratedTime": e.integrated_time,
            "logIndex": e.log_index,
            "logID": hex(&e.log_id),
        }
    })
    .to_string()
}

/// A bundle's `tlogEntries` item for a log entry.
pub fn bundle_tlog(e: &LogEntry, kind: &str) -> serde_json::Value {
    serde_json::json!({
        "logIndex": e.log_index.to_string(),
        "logId": {"keyId": b64(&e.log_id)},
        "kindVersion": {"kind": kind, "version": "0.0.1"},
        "integratedTime": e.integrated_time.to_string(),
        "inclusionPromise": {"signedEntryTimestamp": b64(&e.set)},
        "inclusionProof": {
            "logIndex": e.log_index.to_string(),
            "rootHash": b64(&e.root_hash),
            "treeSize": e.tree_size.to_string(),
            "hashes": e.hashes.iter().map(|h| b64(h)).collect::<Vec<_>>(),
            "checkpoint": {"envelope": e.checkpoint},
        },
        "canonicalizedBody": b64(&e.body),
    })
}

/// cosign's simple-signing payload for `digest`.
pub fn simple_signing_payload(digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": "registry.test/app"},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": null,
    }))
    .unwrap()
}

/// cosign's in-toto statement for `cosign sign` with bundles.
pub fn sign_statement(digest: &str, predicate_type: &str) -> Vec<u8> {
    let hexd = digest.strip_prefix("sha256:").unwrap();
    serde_json::to_vec(&serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": hexd}}],
        "predicateType": predicate_type,
        "predicate": {},
    }))
    .unwrap()
}

pub const COSIGN_SIGN: &str = "https://sigstore.dev/cosign/sign/v1";
pub const IN_TOTO: &str = "application/vnd.in-toto+json";

/// DSSE pre-authentication encoding.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A legacy simple-signing layer: payload and annotations.
#[derive(Clone)]
pub struct LegacyLayer {
    pub payload: Vec<u8>,
    pub annotations: BTreeMap<String, String>,
}

/// A simple-signing layer signed with `key` (no certificate, no log).
pub fn legacy_key_layer(digest: &str, key: &TestKey) -> LegacyLayer {
    let payload = simple_signing_payload(digest);
    let sig = key.sign(&payload);
    LegacyLayer {
        annotations: BTreeMap::from([("dev.cosignproject.cosign/signature".to_owned(), b64(&sig))]),
        payload,
    }
}

/// A keyless simple-signing layer: certificate, chain and Rekor bundle.
pub fn legacy_keyless_layer(
    sigstore: &TestSigstore,
    payload: Vec<u8>,
    signing: &Signing,
    integrated_time: i64,
) -> LegacyLayer {
    let sig = signing.key.sign(&payload);
    let body = hashedrekord_body(&Sha256::digest(&payload), &sig, &signing.cert_pem());
    let entry = sigstore.log(&body, integrated_time);
    let chain: String = sigstore
        .ca_chain()
        .iter()
        .map(|c| pem("CERTIFICATE", c))
        .collect();
    LegacyLayer {
        annotations: BTreeMap::from([
            ("dev.cosignproject.cosign/signature".to_owned(), b64(&sig)),
            (
                "dev.sigstore.cosign/certificate".to_owned(),
                signing.cert_pem(),
            ),
            ("dev.sigstore.cosign/chain".to_owned(), chain),
            (
                "dev.sigstore.cosign/bundle".to_owned(),
                rekor_annotation(&entry),
            ),
        ]),
        payload,
    }
}

/// A v0.3 bundle with a DSSE envelope over `statement`, signed keylessly.
pub fn dsse_bundle(
    sigstore: &TestSigstore,
    statement: &[u8],
    signing: &Signing,
    integrated_time: i64,
) -> serde_json::Value {
    let sig = signing.key.sign(&pae(IN_TOTO, statement));
    let envelope = serde_json::json!({
        "payload": b64(statement),
        "payloadType": IN_TOTO,
        "signatures": [{"sig": b64(&sig), "keyid": ""}],
    });
    let body = dsse_body(
        envelope.to_string().as_bytes(),
        statement,
        &sig,
        &signing.cert_pem(),
    );
    let entry = sigstore.log(&body, integrated_time);
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": b64(&signing.cert_der)},
            "tlogEntries": [bundle_tlog(&entry, "dsse")],
        },
        "dsseEnvelope": envelope,
    })
}

/// A v0.3 bundle with a message signature over the manifest itself.
pub fn message_bundle(
    sigstore: &TestSigstore,
    manifest: &[u8],
    signing: &Signing,
    integrated_time: i64,
) -> serde_json::Value {
    let sig = signing.key.sign(manifest);
    let digest = Sha256::digest(manifest);
    let body = hashedrekord_body(&digest, &sig, &signing.cert_pem());
    let entry = sigstore.log(&body, integrated_time);
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": b64(&signing.cert_der)},
            "tlogEntries": [bundle_tlog(&entry, "hashedrekord")],
        },
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&digest)},
            "signature": b64(&sig),
        },
    })
}

/// A v0.3 bundle with a DSSE envelope signed by a key (no log).
pub fn dsse_key_bundle(statement: &[u8], key: &TestKey) -> serde_json::Value {
    let sig = key.sign(&pae(IN_TOTO, statement));
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "publicKey": {"hint": hex(&Sha256::digest(&key.spki))},
            "tlogEntries": [],
        },
        "dsseEnvelope": {
            "payload": b64(statement),
            "payloadType": IN_TOTO,
            "signatures": [{"sig": b64(&sig), "keyid": ""}],
        },
    })
}

fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

fn node(l: &[u8], r: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(l);
    h.update(r);
    h.finalize().into()
}

fn split(n: usize) -> usize {
    let mut k = 1;
    while k << 1 < n {
        k <<= 1;
    }
    k
}

fn tree_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node(&tree_root(&leaves[..k]), &tree_root(&leaves[k..]))
        }
    }
}

fn inclusion_proof(leaves: &[[u8; 32]], index: usize) -> Vec<Vec<u8>> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = split(n);
    if index < k {
        let mut p = inclusion_proof(&leaves[..k], index);
        p.push(tree_root(&leaves[k..]).to_vec());
        p
    } else {
        let mut p = inclusion_proof(&leaves[k..], index - k);
        p.push(tree_root(&leaves[..k]).to_vec());
        p
    }
}

// ---------------------------------------------------------------------------
// Pushing

const EMPTY_CONFIG: &[u8] = b"{}";

impl Registry {
    /// Push a legacy signature manifest under `sha256-<hex>.sig`.
    pub fn push_sig_tag(&self, repo: &str, digest: &str, layers: &[LegacyLayer]) {
        let config = self.push_blob(repo, EMPTY_CONFIG);
        let mut descs = Vec::new();
        for l in layers {
            let d = self.push_blob(repo, &l.payload);
            descs.push(serde_json::json!({
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "digest": d,
                "size": l.payload.len(),
                "annotations": l.annotations,
            }));
        }
        let m = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": EMPTY_CONFIG.len()},
            "layers": descs,
        });
        let tag = format!("{}.sig", digest.replace(':', "-"));
        self.put_manifest(
            repo,
            &tag,
            "application/vnd.oci.image.manifest.v1+json",
            &serde_json::to_vec(&m).unwrap(),
        );
    }

    /// Push a bundle as cosign's referrer manifest (by digest) and add it
    /// to the `sha256-<hex>` referrers-tag index; returns the referrer's
    /// digest.
    pub fn push_bundle_referrer(
        &self,
        repo: &str,
        subject_digest: &str,
        subject_media_type: &str,
        subject_size: usize,
        bundle: &[u8],
    ) -> String {
        self.push_bundle_referrer_with(
            repo,
            subject_digest,
            subject_media_type,
            subject_size,
            bundle,
            false,
        )
    }

    /// [`Registry::push_bundle_referrer`], with the bundle embedded in its
    /// layer descriptor (`data`, as OCI image-spec 1.1 allows) when `embed`.
    pub fn push_bundle_referrer_with(
        &self,
        repo: &str,
        subject_digest: &str,
        subject_media_type: &str,
        subject_size: usize,
        bundle: &[u8],
        embed: bool,
    ) -> String {
        use base64::Engine as _;
        const ARTIFACT: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
        let config = self.push_blob(repo, EMPTY_CONFIG);
        let layer = self.push_blob(repo, bundle);
        let annotations = serde_json::json!({
            "dev.sigstore.bundle.content": "dsse-envelope",
            "dev.sigstore.bundle.predicateType": COSIGN_SIGN,
            "org.opencontainers.image.created": "2026-01-01T00:00:00Z",
        });
        let mut layer =
            serde_json::json!({"mediaType": ARTIFACT, "digest": layer, "size": bundle.len()});
        if embed {
            layer["data"] = base64::engine::general_purpose::STANDARD
                .encode(bundle)
                .into();
        }
        let m = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": ARTIFACT,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "artifactType": ARTIFACT, "digest": config, "size": EMPTY_CONFIG.len()},
            "layers": [layer],
            "subject": {"mediaType": subject_media_type, "digest": subject_digest, "size": subject_size},
            "annotations": annotations,
        });
        let bytes = serde_json::to_vec(&m).unwrap();
        let digest = sha256(&bytes);
        self.put_manifest(
            repo,
            &digest,
            "application/vnd.oci.image.manifest.v1+json",
            &bytes,
        );
        let tag = subject_digest.replace(':', "-");
        let mut index = self
            .get_manifest(repo, &tag)
            .map(|b| serde_json::from_slice::<serde_json::Value>(&b).unwrap())
            .unwrap_or_else(|| {
                serde_json::json!({
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": [],
                })
            });
        index["manifests"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest,
                "size": bytes.len(),
                "artifactType": ARTIFACT,
                "annotations": annotations,
            }));
        self.put_manifest(
            repo,
            &tag,
            "application/vnd.oci.image.index.v1+json",
            &serde_json::to_vec(&index).unwrap(),
        );
        digest
    }
}
