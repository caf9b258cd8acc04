//! Target `bundle`: signature material as a registry serves it. The input
//! is read as a Sigstore bundle, as a legacy layer's Rekor bundle
//! annotation, and as a trusted root; then put to a verification policy
//! whose key signed nothing. Checks, besides "never panics": the bounds of
//! what is read (log entries, proof hashes) hold, and nothing verifies.

use std::collections::BTreeMap;

use image_update_verify::material::{self, SignatureLayer};
use image_update_verify::{Policy, PublicKey, Require, Signer, TrustedRoot};

/// A P-256 key that signed nothing (a fixed, valid point).
const KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEXBO983V7qNmas2P8371Q85p33WZN
lD47vyupoNCqw/IlxZOw6es4pL3HtudrW1IwBDhlycbPtzuzxoq57mrZng==
-----END PUBLIC KEY-----
";

const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

pub fn run(data: &[u8]) {
    if let Ok(sig) = material::bundle(data) {
        assert!(sig.tlog.len() <= material::MAX_TLOG_ENTRIES);
        for e in &sig.tlog {
            if let Some(p) = &e.proof {
                assert!(p.hashes.len() <= image_update_verify::merkle::MAX_PROOF_HASHES);
            }
            let _ = e.set_payload();
        }
    }
    let _ = TrustedRoot::from_json(data);
    let text = String::from_utf8_lossy(data).into_owned();
    let layers = vec![
        SignatureLayer {
            origin: "bundle".into(),
            media_type: material::BUNDLE_V03.into(),
            annotations: BTreeMap::new(),
            data: data.to_vec(),
        },
        SignatureLayer {
            origin: "legacy".into(),
            media_type: material::SIMPLE_SIGNING.into(),
            annotations: BTreeMap::from([
                (
                    material::SIGNATURE_ANNOTATION.to_owned(),
                    "MEUCIQ==".to_owned(),
                ),
                (material::BUNDLE_ANNOTATION.to_owned(), text.clone()),
                (material::CERTIFICATE_ANNOTATION.to_owned(), text),
            ]),
            data: data.to_vec(),
        },
    ];
    let key = PublicKey::from_pem(KEY).unwrap_or_else(|e| panic!("the fixed key: {e}"));
    let policy = Policy::new(
        vec![Signer::Key {
            name: "fuzz".into(),
            key,
            tlog: false,
        }],
        Require::Any,
        None,
        Vec::new(),
    )
    .unwrap_or_else(|e| panic!("the fixed policy: {e}"));
    assert!(
        policy.verify(DIGEST, &layers).is_err(),
        "random material verified with a key that signed nothing"
    );
}
