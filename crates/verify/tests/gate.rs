//! The gate against the real registry (Debian's docker-registry 2.8):
//! images signed as cosign signs them (keys, a test Fulcio and transparency
//! log minted per run), pushed as legacy `.sig` manifests and as bundle
//! referrers, then tampered with. Every verdict is also put to an
//! independent Sigstore verifier (`@sigstore/verify`, under node), which
//! must agree (`crosscheck_independent_verifier`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use base64::Engine;
use image_update_registry::{ClientSettings, RegistryClient, Repository};
use image_update_testkit::registry::{Auth, ImageSpec, Registry, registry_proxy};
use image_update_testkit::sigstore::{
    self as ts, CertSpec, KeyKind, LegacyLayer, TestKey, TestSigstore,
};
use image_update_testkit::{run, trial};
use image_update_verify::{Gate, Matcher, Policy, Require, Signer, TrustedRoot};
use sha2::{Digest, Sha256};

const REPO: &str = "team/app";
const SUBJECT: &str = "https://github.com/acme/app/.github/workflows/release.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

fn b64(d: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(d)
}

/// A registry with two images, and a test Sigstore.
struct Bed {
    reg: Registry,
    store: TestSigstore,
    root: Arc<TrustedRoot>,
    /// (manifest, digest) of the image being checked and of another one.
    image: (Vec<u8>, String),
    other: (Vec<u8>, String),
}

fn bed() -> Bed {
    let reg = Registry::start(Auth::Anonymous);
    let image = reg.push_image(
        REPO,
        "1.0.0",
        &ImageSpec::new("linux", "amd64", None, "2026-01-01T00:00:00Z"),
    );
    let other = reg.push_image(
        REPO,
        "0.9.0",
        &ImageSpec::new("linux", "arm64", None, "2025-01-01T00:00:00Z"),
    );
    let store = TestSigstore::new();
    let root = Arc::new(TrustedRoot::from_json(store.trusted_root_json().as_bytes()).unwrap());
    Bed {
        reg,
        store,
        root,
        image,
        other,
    }
}

/// What is pushed for the image.
#[derive(Clone)]
enum Push {
    SigTag(Vec<LegacyLayer>),
    Bundle(serde_json::Value),
}

/// The signer a scenario's policy requires.
#[derive(Clone)]
enum Want {
    Key(String),
    Identity(String, String),
}

struct Scenario {
    pushes: Vec<Push>,
    want: Want,
    /// Trusted root JSON the policy uses (default: the bed's).
    root_json: Option<String>,
    /// Expected: `Ok(part of who signed)` or `Err(part of the reason)`.
    expect: Result<&'static str, &'static str>,
}

fn policy(bed: &Bed, s: &Scenario) -> Policy {
    let root = match &s.root_json {
        Some(j) => Arc::new(TrustedRoot::from_json(j.as_bytes()).unwrap()),
        None => Arc::clone(&bed.root),
    };
    let signer = match &s.want {
        Want::Key(pem) => Signer::Key {
            name: "cosign.pub".into(),
            key: image_update_verify::PublicKey::from_pem(pem).unwrap(),
            tlog: false,
        },
        Want::Identity(sub, iss) => Signer::Identity {
            subject: Matcher::Exact(sub.clone()),
            issuer: Matcher::Exact(iss.clone()),
        },
    };
    Policy::new(vec![signer], Require::Any, Some(root), Vec::new()).unwrap()
}

fn push(bed: &Bed, pushes: &[Push]) {
    for p in pushes {
        match p {
            Push::SigTag(layers) => bed.reg.push_sig_tag(REPO, &bed.image.1, layers),
            Push::Bundle(b) => {
                bed.reg.push_bundle_referrer(
                    REPO,
                    &bed.image.1,
                    "application/vnd.oci.image.manifest.v1+json",
                    bed.image.0.len(),
                    &serde_json::to_vec(b).unwrap(),
                );
            }
        }
    }
}

fn client() -> RegistryClient {
    RegistryClient::new(ClientSettings::default()).unwrap()
}

fn repo(authority: &str) -> Repository {
    Repository::parse(&format!("{authority}/{REPO}")).unwrap()
}

/// The scenarios: a name, and how to build it on a bed.
type Build = fn(&Bed) -> Scenario;

fn keyless(bed: &Bed) -> ts::Signing {
    bed.store.issue(&CertSpec::new(SUBJECT, ISSUER))
}

fn id() -> Want {
    Want::Identity(SUBJECT.into(), ISSUER.into())
}

fn key_scenario(kind: KeyKind) -> impl Fn(&Bed) -> Scenario {
    move |bed| {
        let key = TestKey::new(kind);
        Scenario {
            pushes: vec![Push::SigTag(vec![ts::legacy_key_layer(&bed.image.1, &key)])],
            want: Want::Key(key.public_pem()),
            root_json: None,
            expect: Ok("key cosign.pub (sha256:"),
        }
    }
}

fn scenarios() -> Vec<(&'static str, Build)> {
    vec![
        ("key_p256_legacy", |b| key_scenario(KeyKind::P256)(b)),
        ("key_p384_legacy", |b| key_scenario(KeyKind::P384)(b)),
        ("key_ed25519_legacy", |b| key_scenario(KeyKind::Ed25519)(b)),
        ("key_rsa_legacy", |b| key_scenario(KeyKind::Rsa)(b)),
        ("key_dsse_bundle", |bed| {
            let key = TestKey::p256();
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_key_bundle(
                    &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                    &key,
                ))],
                want: Want::Key(key.public_pem()),
                root_json: None,
                expect: Ok("key cosign.pub"),
            }
        }),
        ("key_wrong_key", |bed| {
            let key = TestKey::p256();
            Scenario {
                pushes: vec![Push::SigTag(vec![ts::legacy_key_layer(&bed.image.1, &key)])],
                want: Want::Key(TestKey::p256().public_pem()),
                root_json: None,
                expect: Err("does not verify with key cosign.pub"),
            }
        }),
        ("keyless_legacy", |bed| {
            let s = keyless(bed);
            Scenario {
                pushes: vec![Push::SigTag(vec![ts::legacy_keyless_layer(
                    &bed.store,
                    ts::simple_signing_payload(&bed.image.1),
                    &s,
                    ts::now(),
                )])],
                want: id(),
                root_json: None,
                expect: Ok(SUBJECT),
            }
        }),
        ("keyless_dsse_bundle", |bed| {
            let s = keyless(bed);
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Ok(SUBJECT),
            }
        }),
        ("keyless_message_bundle", |bed| {
            let s = keyless(bed);
            Scenario {
                pushes: vec![Push::Bundle(ts::message_bundle(
                    &bed.store,
                    &bed.image.0,
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Ok(SUBJECT),
            }
        }),
        ("unsigned", |_| Scenario {
            pushes: Vec::new(),
            want: id(),
            root_json: None,
            expect: Err("no signature found"),
        }),
        ("tamper_another_digest_legacy", |bed| {
            let s = keyless(bed);
            Scenario {
                // A valid signature of the other image, copied to this one.
                pushes: vec![Push::SigTag(vec![ts::legacy_keyless_layer(
                    &bed.store,
                    ts::simple_signing_payload(&bed.other.1),
                    &s,
                    ts::now(),
                )])],
                want: id(),
                root_json: None,
                expect: Err("for another image"),
            }
        }),
        ("tamper_another_digest_bundle", |bed| {
            let s = keyless(bed);
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.other.1, ts::COSIGN_SIGN),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Err("about another image"),
            }
        }),
        ("tamper_another_digest_message", |bed| {
            let s = keyless(bed);
            Scenario {
                pushes: vec![Push::Bundle(ts::message_bundle(
                    &bed.store,
                    &bed.other.0,
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Err("for another image"),
            }
        }),
        ("tamper_broken_chain", |bed| {
            // Issued by another CA, logged in the trusted log.
            let stranger = TestSigstore::with_name("stranger fulcio");
            let s = stranger.issue(&CertSpec::new(SUBJECT, ISSUER));
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Err("not issued by a certificate authority of the trusted root"),
            }
        }),
        ("tamper_expired_certificate", |bed| {
            let mut spec = CertSpec::new(SUBJECT, ISSUER);
            spec.not_before = ts::now() - 7200;
            spec.not_after = ts::now() - 3600;
            let s = bed.store.issue(&spec);
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Err("not valid at the transparency log's time"),
            }
        }),
        ("tamper_wrong_identity", |bed| {
            let s = bed.store.issue(&CertSpec::new(
                "https://github.com/evil/app/.github/workflows/release.yml@refs/heads/main",
                ISSUER,
            ));
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Err("identity https://github.com/evil/app"),
            }
        }),
        ("tamper_wrong_issuer", |bed| {
            let s = bed
                .store
                .issue(&CertSpec::new(SUBJECT, "https://accounts.example.com"));
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Err("issuer \"https://accounts.example.com\""),
            }
        }),
        ("tamper_forged_log_entry", |bed| {
            // The same statement, logged in a log nobody trusts, under the
            // trusted log's ID.
            let s = keyless(bed);
            let forged = TestSigstore::with_name("forger");
            let mut b = ts::dsse_bundle(
                &forged,
                &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                &s,
                ts::now(),
            );
            b["verificationMaterial"]["tlogEntries"][0]["logId"]["keyId"] =
                serde_json::json!(b64(&bed.store.log_id()));
            Scenario {
                pushes: vec![Push::Bundle(b)],
                want: id(),
                root_json: None,
                expect: Err("signed entry timestamp does not verify"),
            }
        }),
        ("tamper_inclusion_proof", |bed| {
            // A genuine entry whose proof hashes were altered.
            let s = keyless(bed);
            let mut b = ts::dsse_bundle(
                &bed.store,
                &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                &s,
                ts::now(),
            );
            b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"][0] =
                serde_json::json!(b64(&[9u8; 32]));
            Scenario {
                pushes: vec![Push::Bundle(b)],
                want: id(),
                root_json: None,
                expect: Err("inclusion proof"),
            }
        }),
        ("tamper_logged_body_of_another_signature", |bed| {
            // The log entry of one signature attached to another.
            let s = keyless(bed);
            let a = ts::dsse_bundle(
                &bed.store,
                &ts::sign_statement(&bed.other.1, ts::COSIGN_SIGN),
                &s,
                ts::now(),
            );
            let mut b = ts::dsse_bundle(
                &bed.store,
                &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                &s,
                ts::now(),
            );
            b["verificationMaterial"]["tlogEntries"] =
                a["verificationMaterial"]["tlogEntries"].clone();
            Scenario {
                pushes: vec![Push::Bundle(b)],
                want: id(),
                root_json: None,
                expect: Err("the logged body names another payload"),
            }
        }),
        ("untrusted_root", |bed| {
            let s = keyless(bed);
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: Some(TestSigstore::with_name("other").trusted_root_json()),
                expect: Err("is not in the trusted root"),
            }
        }),
        ("attestation_is_not_a_signature", |bed| {
            let s = keyless(bed);
            Scenario {
                pushes: vec![Push::Bundle(ts::dsse_bundle(
                    &bed.store,
                    &ts::sign_statement(&bed.image.1, "https://slsa.dev/provenance/v1"),
                    &s,
                    ts::now(),
                ))],
                want: id(),
                root_json: None,
                expect: Err("predicate type \"https://slsa.dev/provenance/v1\" is not accepted"),
            }
        }),
        ("bad_layer_then_good_layer", |bed| {
            let key = TestKey::p256();
            let mut bad = ts::legacy_key_layer(&bed.image.1, &TestKey::p256());
            bad.payload = ts::simple_signing_payload(&bed.image.1);
            Scenario {
                pushes: vec![Push::SigTag(vec![
                    bad,
                    ts::legacy_key_layer(&bed.image.1, &key),
                ])],
                want: Want::Key(key.public_pem()),
                root_json: None,
                expect: Ok("key cosign.pub"),
            }
        }),
    ]
}

fn run_scenario(build: Build) {
    let bed = bed();
    let s = build(&bed);
    push(&bed, &s.pushes);
    let gate = Gate::new(policy(&bed, &s));
    let verdict = gate
        .check(&client(), &repo(&bed.reg.authority()), &bed.image.1)
        .unwrap();
    match (&verdict, s.expect) {
        (Ok(v), Ok(who)) => {
            let text = v
                .signed_by
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            assert!(text.contains(who), "signed by {text}, expected {who}");
            assert_eq!(v.digest, bed.image.1);
        }
        (Err(r), Err(why)) => {
            assert!(
                r.to_string().contains(why),
                "rejected: {r}; expected: {why}"
            );
        }
        (v, e) => panic!("verdict {v:?}, expected {e:?}"),
    }
}

/// The referrers API (served by a proxy from the stored referrers-tag
/// index) is asked first, and a signature found there costs three
/// requests: the list, the referrer manifest, the bundle.
fn referrers_api_first() {
    let bed = bed();
    let s = keyless(&bed);
    push(
        &bed,
        &[Push::Bundle(ts::dsse_bundle(
            &bed.store,
            &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
            &s,
            ts::now(),
        ))],
    );
    let proxy = registry_proxy(&bed.reg.authority(), true);
    let client = client();
    let repo = repo(&proxy.authority());
    let gate = Gate::new(policy(
        &bed,
        &Scenario {
            pushes: Vec::new(),
            want: id(),
            root_json: None,
            expect: Ok(""),
        },
    ));
    // The /v2/ ping first, so that only the gate's requests are counted.
    client.digest(&repo, "1.0.0", None).unwrap();
    let before = proxy.requests().len();
    let v = gate.check(&client, &repo, &bed.image.1).unwrap().unwrap();
    assert!(v.signed_by[0].to_string().contains(SUBJECT));
    let paths: Vec<String> = proxy.requests()[before..]
        .iter()
        .map(|r| format!("{} {}", r.method, r.path()))
        .collect();
    assert_eq!(paths.len(), 3, "{paths:#?}");
    assert!(paths[0].contains("/referrers/sha256:"), "{paths:#?}");
    assert!(paths[1].contains("/manifests/sha256:"), "{paths:#?}");
    assert!(paths[2].contains("/blobs/sha256:"), "{paths:#?}");
}

/// Fewer requests for the same bundle: embedded in its layer descriptor
/// (OCI `data`), two (the list, the referrer manifest); with a cache
/// directory, an image checked before costs one (the list: the referrer
/// manifest and the bundle are content-addressed); a cached document that
/// does not match its digest is not used.
fn referrers_api_embedded_and_cached() {
    let first = bed();
    let s = keyless(&first);
    let bundle = ts::dsse_bundle(
        &first.store,
        &ts::sign_statement(&first.image.1, ts::COSIGN_SIGN),
        &s,
        ts::now(),
    );
    first.reg.push_bundle_referrer_with(
        REPO,
        &first.image.1,
        "application/vnd.oci.image.manifest.v1+json",
        first.image.0.len(),
        &serde_json::to_vec(&bundle).unwrap(),
        true,
    );
    let proxy = registry_proxy(&first.reg.authority(), true);
    let gate = || {
        Gate::new(policy(
            &first,
            &Scenario {
                pushes: Vec::new(),
                want: id(),
                root_json: None,
                expect: Ok(""),
            },
        ))
    };
    let first_repo = repo(&proxy.authority());
    let paths = |client: &RegistryClient| {
        client.digest(&first_repo, "1.0.0", None).unwrap();
        let before = proxy.requests().len();
        let v = gate()
            .check(client, &first_repo, &first.image.1)
            .unwrap()
            .unwrap();
        assert!(v.signed_by[0].to_string().contains(SUBJECT));
        proxy.requests()[before..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.path()))
            .collect::<Vec<_>>()
    };
    let p = paths(&client());
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(
        p[0].contains("/referrers/sha256:") && p[1].contains("/manifests/sha256:"),
        "{p:#?}"
    );

    // The cache, with a bundle that is not embedded.
    let bed2 = bed();
    push(
        &bed2,
        &[Push::Bundle(ts::dsse_bundle(
            &bed2.store,
            &ts::sign_statement(&bed2.image.1, ts::COSIGN_SIGN),
            &keyless(&bed2),
            ts::now(),
        ))],
    );
    let proxy = registry_proxy(&bed2.reg.authority(), true);
    let second_repo = repo(&proxy.authority());
    let cache = tempfile::tempdir().unwrap();
    let cached_client = || {
        RegistryClient::new(ClientSettings {
            cache_dir: Some(cache.path().to_owned()),
            ..ClientSettings::default()
        })
        .unwrap()
    };
    let check = |client: &RegistryClient| {
        client.digest(&second_repo, "1.0.0", None).unwrap();
        let before = proxy.requests().len();
        let policy = policy(
            &bed2,
            &Scenario {
                pushes: Vec::new(),
                want: id(),
                root_json: None,
                expect: Ok(""),
            },
        );
        Gate::new(policy)
            .check(client, &second_repo, &bed2.image.1)
            .unwrap()
            .unwrap();
        proxy.requests().len() - before
    };
    assert_eq!(check(&cached_client()), 3);
    assert_eq!(check(&cached_client()), 1);
    // A cached file that is not what its name says is ignored (and
    // fetched again).
    for entry in fs_err::read_dir(cache.path().join("sha256")).unwrap() {
        fs_err::write(entry.unwrap().path(), b"tampered").unwrap();
    }
    assert_eq!(check(&cached_client()), 3);
}

/// Without the referrers API: one 404, remembered for the next image.
fn referrers_api_absent_is_remembered() {
    let bed = bed();
    let key = TestKey::p256();
    bed.reg.push_sig_tag(
        REPO,
        &bed.image.1,
        &[ts::legacy_key_layer(&bed.image.1, &key)],
    );
    bed.reg.push_sig_tag(
        REPO,
        &bed.other.1,
        &[ts::legacy_key_layer(&bed.other.1, &key)],
    );
    let proxy = registry_proxy(&bed.reg.authority(), false);
    let client = client();
    let repo = repo(&proxy.authority());
    client.digest(&repo, "1.0.0", None).unwrap();
    let gate = Gate::new(
        Policy::new(
            vec![Signer::Key {
                name: "k".into(),
                key: image_update_verify::PublicKey::from_pem(&key.public_pem()).unwrap(),
                tlog: false,
            }],
            Require::Any,
            None,
            Vec::new(),
        )
        .unwrap(),
    );
    let count = |from: usize| proxy.requests().len() - from;
    let before = proxy.requests().len();
    gate.check(&client, &repo, &bed.image.1).unwrap().unwrap();
    // referrers 404, sha256- tag 404, .sig manifest, payload blob
    assert_eq!(count(before), 4, "{:#?}", proxy.requests());
    let before = proxy.requests().len();
    gate.check(&client, &repo, &bed.other.1).unwrap().unwrap();
    assert_eq!(count(before), 3, "{:#?}", proxy.requests());
}

/// `all`: both signers must have signed; one of two is not enough.
fn require_all_signers() {
    let bed = bed();
    let a = TestKey::p256();
    let b = TestKey::new(KeyKind::Ed25519);
    let signer = |k: &TestKey, n: &str| Signer::Key {
        name: n.into(),
        key: image_update_verify::PublicKey::from_pem(&k.public_pem()).unwrap(),
        tlog: false,
    };
    let gate = Gate::new(
        Policy::new(
            vec![signer(&a, "a"), signer(&b, "b")],
            Require::All,
            None,
            Vec::new(),
        )
        .unwrap(),
    );
    let repo = repo(&bed.reg.authority());
    bed.reg.push_sig_tag(
        REPO,
        &bed.image.1,
        &[ts::legacy_key_layer(&bed.image.1, &a)],
    );
    let r = gate
        .check(&client(), &repo, &bed.image.1)
        .unwrap()
        .unwrap_err();
    assert!(r.to_string().contains("no valid signature by key b"), "{r}");
    bed.reg.push_sig_tag(
        REPO,
        &bed.image.1,
        &[
            ts::legacy_key_layer(&bed.image.1, &a),
            ts::legacy_key_layer(&bed.image.1, &b),
        ],
    );
    let v = gate.check(&client(), &repo, &bed.image.1).unwrap().unwrap();
    assert_eq!(v.signed_by.len(), 2);
}

/// Regular expressions match the whole identity.
fn identity_regexp_is_anchored() {
    let bed = bed();
    let s = keyless(&bed);
    push(
        &bed,
        &[Push::Bundle(ts::dsse_bundle(
            &bed.store,
            &ts::sign_statement(&bed.image.1, ts::COSIGN_SIGN),
            &s,
            ts::now(),
        ))],
    );
    let check = |subject: &str| {
        let gate = Gate::new(
            Policy::new(
                vec![Signer::Identity {
                    subject: Matcher::regex(subject).unwrap(),
                    issuer: Matcher::regex(r"https://token\.actions\.githubusercontent\.com")
                        .unwrap(),
                }],
                Require::Any,
                Some(Arc::clone(&bed.root)),
                Vec::new(),
            )
            .unwrap(),
        );
        gate.check(&client(), &repo(&bed.reg.authority()), &bed.image.1)
            .unwrap()
            .is_ok()
    };
    assert!(check(r"https://github\.com/acme/app/.*"));
    assert!(!check(r"https://github\.com/acme/"));
    assert!(!check(r"github\.com/acme/app/.*"));
}

// ---------------------------------------------------------------------------
// The independent verifier

fn crosscheck_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/crosscheck")
}

/// One case for the node script: a bundle (legacy layers are turned into
/// v0.1 message-signature bundles over their payload, which is what they
/// are), the artifact when there is one, the target digest and the policy.
fn crosscheck_cases(bed: &Bed, name: &str, s: &Scenario) -> Vec<serde_json::Value> {
    let root = s
        .root_json
        .clone()
        .unwrap_or_else(|| bed.store.trusted_root_json());
    let mut out = Vec::new();
    let (identity, key) = match &s.want {
        Want::Identity(sub, iss) => (
            Some(serde_json::json!({"subject": sub, "issuer": iss})),
            None,
        ),
        Want::Key(pem) => (None, Some(pem.clone())),
    };
    let case = |bundle: serde_json::Value, artifact: Option<&[u8]>| {
        serde_json::json!({
            "name": name,
            "trustedRoot": serde_json::from_str::<serde_json::Value>(&root).unwrap(),
            "bundle": bundle,
            "artifact": artifact.map(b64),
            "digest": bed.image.1,
            "identity": identity,
            "key": key,
        })
    };
    for p in &s.pushes {
        match p {
            Push::Bundle(b) => {
                let artifact = b.get("messageSignature").map(|_| bed.image.0.as_slice());
                out.push(case(b.clone(), artifact));
            }
            Push::SigTag(layers) => {
                for l in layers {
                    let a = &l.annotations;
                    let sig = a["dev.cosignproject.cosign/signature"].clone();
                    let mut vm = serde_json::json!({"tlogEntries": []});
                    if let Some(cert) = a.get("dev.sigstore.cosign/certificate") {
                        let der: String =
                            cert.lines().filter(|l| !l.starts_with("-----")).collect();
                        vm["x509CertificateChain"] =
                            serde_json::json!({"certificates": [{"rawBytes": der}]});
                    } else {
                        vm["publicKey"] = serde_json::json!({"hint": "key"});
                    }
                    if let Some(rb) = a.get("dev.sigstore.cosign/bundle") {
                        let rb: serde_json::Value = serde_json::from_str(rb).unwrap();
                        let p = &rb["Payload"];
                        let log_id = p["logID"].as_str().unwrap();
                        let log_id: Vec<u8> = (0..log_id.len())
                            .step_by(2)
                            .map(|i| u8::from_str_radix(&log_id[i..i + 2], 16).unwrap())
                            .collect();
                        vm["tlogEntries"] = serde_json::json!([{
                            "logIndex": p["logIndex"].to_string(),
                            "logId": {"keyId": b64(&log_id)},
                            "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                            "integratedTime": p["integratedTime"].to_string(),
                            "inclusionPromise": {"signedEntryTimestamp": rb["SignedEntryTimestamp"]},
                            "canonicalizedBody": p["body"],
                        }]);
                    }
                    // A P-384 key signs with SHA-384.
                    let (alg, digest) = if name.contains("p384") {
                        ("SHA2_384", sha2::Sha384::digest(&l.payload).to_vec())
                    } else {
                        ("SHA2_256", Sha256::digest(&l.payload).to_vec())
                    };
                    let bundle = serde_json::json!({
                        "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1",
                        "verificationMaterial": vm,
                        "messageSignature": {
                            "messageDigest": {"algorithm": alg, "digest": b64(&digest)},
                            "signature": sig,
                        },
                    });
                    out.push(case(bundle, Some(&l.payload)));
                }
            }
        }
    }
    out
}

fn crosscheck_independent_verifier() {
    let dir = crosscheck_dir();
    if !dir.join("node_modules/@sigstore/verify").is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "@sigstore/verify is not installed: npm ci --prefix crates/verify/tests/crosscheck"
        );
        eprintln!(
            "skipped: @sigstore/verify is not installed (npm ci --prefix crates/verify/tests/crosscheck)"
        );
        return;
    }
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (name, build) in scenarios() {
        let bed = bed();
        let s = build(&bed);
        push(&bed, &s.pushes);
        let gate = Gate::new(policy(&bed, &s));
        let verdict = gate
            .check(&client(), &repo(&bed.reg.authority()), &bed.image.1)
            .unwrap();
        assert_eq!(verdict.is_ok(), s.expect.is_ok(), "{name}: {verdict:?}");
        let these = crosscheck_cases(&bed, name, &s);
        if these.is_empty() {
            continue;
        }
        ours.push((name, verdict.is_ok()));
        cases.extend(these);
    }
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("cases.json");
    fs_err::write(&input, serde_json::to_vec(&cases).unwrap()).unwrap();
    let out = Command::new("node")
        .arg(dir.join("verify.mjs"))
        .arg(&input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // A scenario passes for the independent verifier when any of its
    // signatures does.
    let mut disagreements = Vec::new();
    for (name, ok) in &ours {
        let results: Vec<&serde_json::Value> =
            theirs.iter().filter(|t| t["name"] == *name).collect();
        let their_ok = results.iter().any(|t| t["ok"] == true);
        if their_ok != *ok {
            disagreements.push(format!(
                "{name}: ours {ok}, @sigstore/verify {their_ok}: {results:?}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    assert!(ours.len() >= 15, "{} scenarios cross-checked", ours.len());
}

fn main() {
    let mut trials = Vec::new();
    for (name, build) in scenarios() {
        trials.push(image_update_testkit::trial_with(
            format!("gate_{name}"),
            &["docker-registry"],
            move || {
                run_scenario(build);
                Ok(())
            },
        ));
    }
    trials.push(trial(
        "referrers_api_first",
        &["docker-registry"],
        referrers_api_first,
    ));
    trials.push(trial(
        "referrers_api_embedded_and_cached",
        &["docker-registry"],
        referrers_api_embedded_and_cached,
    ));
    trials.push(trial(
        "referrers_api_absent_is_remembered",
        &["docker-registry"],
        referrers_api_absent_is_remembered,
    ));
    trials.push(trial(
        "require_all_signers",
        &["docker-registry"],
        require_all_signers,
    ));
    trials.push(trial(
        "identity_regexp_is_anchored",
        &["docker-registry"],
        identity_regexp_is_anchored,
    ));
    trials.push(trial(
        "crosscheck_independent_verifier",
        &["docker-registry", "node"],
        crosscheck_independent_verifier,
    ));
    run(trials);
}
