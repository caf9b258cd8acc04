//! Writes seeds for the `bundle`, `certificate` and `note` fuzz targets
//! (fuzz/corpus/…): bundles, legacy Rekor annotations and trusted roots,
//! certificates, and checkpoints, minted by the test Sigstore of
//! `image-update-testkit`. Run once when the formats change:
//! `cargo run -p image-update-verify --example fuzz_seeds`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use image_update_testkit::sigstore::{self as ts, CertSpec, TestKey, TestSigstore};
use sha2::{Digest, Sha256};

fn put(target: &str, data: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    fs_err::create_dir_all(&dir).unwrap();
    let name: String = Sha256::digest(data)[..20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    fs_err::write(dir.join(name), data).unwrap();
}

fn main() {
    let store = TestSigstore::new();
    let digest = format!("sha256:{}", "ab".repeat(32));
    let s = store.issue(&CertSpec::new(
        "https://github.com/acme/app/.github/workflows/r.yml@refs/heads/main",
        "https://token.actions.githubusercontent.com",
    ));
    let email = store.issue(&CertSpec::new(
        "dev@example.com",
        "https://accounts.google.com",
    ));
    put("certificate", &s.cert_der);
    put("certificate", &email.cert_der);
    for c in store.ca_chain() {
        put("certificate", &c);
    }
    let dsse = ts::dsse_bundle(
        &store,
        &ts::sign_statement(&digest, ts::COSIGN_SIGN),
        &s,
        ts::now(),
    );
    let message = ts::message_bundle(&store, b"{\"schemaVersion\":2}", &s, ts::now());
    let keyed = ts::dsse_key_bundle(
        &ts::sign_statement(&digest, ts::COSIGN_SIGN),
        &TestKey::p256(),
    );
    for b in [&dsse, &message, &keyed] {
        put("bundle", &serde_json::to_vec(b).unwrap());
        let cp =
            b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]["envelope"]
                .as_str();
        if let Some(cp) = cp {
            put("note", cp.as_bytes());
        }
    }
    let legacy =
        ts::legacy_keyless_layer(&store, ts::simple_signing_payload(&digest), &s, ts::now());
    put(
        "bundle",
        legacy.annotations["dev.sigstore.cosign/bundle"].as_bytes(),
    );
    put("bundle", store.trusted_root_json().as_bytes());
    put("note", store.checkpoint(1, &[0u8; 32]).as_bytes());
}
