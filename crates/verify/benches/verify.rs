//! The gate's cost, in time and in registry requests.
//!
//! 1. **Keyless verification of one bundle** (target: under 5 ms): a DSSE
//!    bundle signed by a test Fulcio certificate and logged with an
//!    inclusion proof, verified in memory by `Policy::verify` (chain to the
//!    trusted root at the log's time, SET, inclusion proof and signed
//!    checkpoint, logged body, signature, identity, digest binding). Also a
//!    key-signed legacy layer, for comparison.
//! 2. **Registry round trips added per image** (target: at most two when
//!    the signature is found at the first discovery step): requests the
//!    gate sends for a known digest, counted by a proxy in front of a real
//!    docker-registry, for a bundle found through the referrers API, a
//!    legacy `.sig` found when it is the first step tried, and the default
//!    order on a registry without the referrers API.
//!
//! Run: `cargo bench -p image-update-verify --bench verify` (`BENCH_RUNS`
//! sets the timed repetitions, default 2000).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use image_update_registry::signatures::Step;
use image_update_registry::{ClientSettings, RegistryClient, Repository};
use image_update_testkit::registry::{Auth, ImageSpec, Registry, registry_proxy};
use image_update_testkit::sigstore::{self as ts, CertSpec, TestKey, TestSigstore};
use image_update_verify::material::{BUNDLE_V03, SIMPLE_SIGNING, SignatureLayer};
use image_update_verify::{Gate, Matcher, Policy, PublicKey, Require, Signer, TrustedRoot};

const SUBJECT: &str = "https://github.com/acme/app/.github/workflows/release.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name}: median {:.0} µs, min {:.0} µs, p95 {:.0} µs, max {:.0} µs ({} runs)",
        us(v[v.len() / 2]),
        us(v[0]),
        us(v[v.len() * 95 / 100]),
        us(v[v.len() - 1]),
        v.len()
    );
}

fn time(runs: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..runs / 10 {
        f();
    }
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect()
}

fn keyless_policy(root: &Arc<TrustedRoot>) -> Policy {
    Policy::new(
        vec![Signer::Identity {
            subject: Matcher::Exact(SUBJECT.into()),
            issuer: Matcher::Exact(ISSUER.into()),
        }],
        Require::Any,
        Some(Arc::clone(root)),
        Vec::new(),
    )
    .unwrap()
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let store = TestSigstore::new();
    let root = Arc::new(TrustedRoot::from_json(store.trusted_root_json().as_bytes()).unwrap());
    let digest = format!("sha256:{}", "ab".repeat(32));
    let signing = store.issue(&CertSpec::new(SUBJECT, ISSUER));
    let bundle = ts::dsse_bundle(
        &store,
        &ts::sign_statement(&digest, ts::COSIGN_SIGN),
        &signing,
        ts::now(),
    );
    let layer = SignatureLayer {
        origin: "bench".into(),
        media_type: BUNDLE_V03.into(),
        annotations: BTreeMap::new(),
        data: serde_json::to_vec(&bundle).unwrap(),
    };
    let policy = keyless_policy(&root);
    assert!(policy.verify(&digest, std::slice::from_ref(&layer)).is_ok());
    stats(
        "keyless DSSE bundle (chain, SET, inclusion proof, checkpoint, body, signature)",
        time(runs, || {
            assert!(policy.verify(&digest, std::slice::from_ref(&layer)).is_ok());
        }),
    );
    let key = TestKey::p256();
    let legacy = ts::legacy_key_layer(&digest, &key);
    let key_layer = SignatureLayer {
        origin: "bench".into(),
        media_type: SIMPLE_SIGNING.into(),
        annotations: legacy.annotations.clone(),
        data: legacy.payload.clone(),
    };
    let key_policy = Policy::new(
        vec![Signer::Key {
            name: "k".into(),
            key: PublicKey::from_pem(&key.public_pem()).unwrap(),
            tlog: false,
        }],
        Require::Any,
        None,
        Vec::new(),
    )
    .unwrap();
    stats(
        "ECDSA P-256 key, legacy simple-signing layer",
        time(runs, || {
            assert!(
                key_policy
                    .verify(&digest, std::slice::from_ref(&key_layer))
                    .is_ok()
            );
        }),
    );

    if image_update_testkit::find_program("docker-registry").is_none() {
        eprintln!("docker-registry is not installed: request counts skipped");
        return;
    }
    let reg = Registry::start(Auth::Anonymous);
    let spec = |c: &str| ImageSpec::new("linux", "amd64", None, c);
    let (m1, bundled) = reg.push_image("bench/app", "1.0.0", &spec("2026-01-01T00:00:00Z"));
    let (_, legacy_signed) = reg.push_image("bench/app", "1.1.0", &spec("2026-02-01T00:00:00Z"));
    let (m3, embedded) = reg.push_image("bench/app", "1.2.0", &spec("2026-03-01T00:00:00Z"));
    let e = ts::dsse_bundle(
        &store,
        &ts::sign_statement(&embedded, ts::COSIGN_SIGN),
        &signing,
        ts::now(),
    );
    reg.push_bundle_referrer_with(
        "bench/app",
        &embedded,
        "application/vnd.oci.image.manifest.v1+json",
        m3.len(),
        &serde_json::to_vec(&e).unwrap(),
        true,
    );
    let cache = tempfile::tempdir().unwrap();
    let b = ts::dsse_bundle(
        &store,
        &ts::sign_statement(&bundled, ts::COSIGN_SIGN),
        &signing,
        ts::now(),
    );
    reg.push_bundle_referrer(
        "bench/app",
        &bundled,
        "application/vnd.oci.image.manifest.v1+json",
        m1.len(),
        &serde_json::to_vec(&b).unwrap(),
    );
    reg.push_sig_tag(
        "bench/app",
        &legacy_signed,
        &[ts::legacy_keyless_layer(
            &store,
            ts::simple_signing_payload(&legacy_signed),
            &signing,
            ts::now(),
        )],
    );
    let count = |referrers: bool, steps: Vec<Step>, digest: &str, cached: bool| {
        let proxy = registry_proxy(&reg.authority(), referrers);
        let client = RegistryClient::new(ClientSettings {
            cache_dir: cached.then(|| cache.path().to_owned()),
            ..ClientSettings::default()
        })
        .unwrap();
        let repo = Repository::parse(&format!("{}/bench/app", proxy.authority())).unwrap();
        client.digest(&repo, "1.0.0", None).unwrap();
        let gate = Gate::new(keyless_policy(&root)).with_steps(steps);
        let before = proxy.requests().len();
        let start = Instant::now();
        assert!(gate.check(&client, &repo, digest).unwrap().is_ok());
        let elapsed = start.elapsed();
        let reqs: Vec<String> = proxy.requests()[before..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.path().split('/').nth(4).unwrap_or("")))
            .collect();
        (reqs, elapsed)
    };
    for (what, referrers, steps, d, cached) in [
        (
            "bundle, referrers API first (found at step 1)",
            true,
            Vec::new(),
            &bundled,
            false,
        ),
        (
            "bundle embedded in its layer descriptor (OCI data), referrers API first",
            true,
            Vec::new(),
            &embedded,
            false,
        ),
        (
            "bundle, referrers API first, first run with a cache directory",
            true,
            Vec::new(),
            &bundled,
            true,
        ),
        (
            "bundle, referrers API first, a later run with the cache directory",
            true,
            Vec::new(),
            &bundled,
            true,
        ),
        (
            "legacy .sig, signature tag first (found at step 1)",
            false,
            vec![Step::SigTag],
            &legacy_signed,
            false,
        ),
        (
            "legacy .sig, default order, no referrers API (found at step 3)",
            false,
            Vec::new(),
            &legacy_signed,
            false,
        ),
        (
            "bundle, default order, no referrers API (found at step 2)",
            false,
            Vec::new(),
            &bundled,
            false,
        ),
    ] {
        let (reqs, elapsed) = count(referrers, steps, d, cached);
        println!(
            "{what}: {} requests ({}), {:.1} ms on loopback",
            reqs.len(),
            reqs.join(", "),
            elapsed.as_secs_f64() * 1000.0
        );
    }
}
