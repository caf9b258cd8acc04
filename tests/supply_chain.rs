//! The supply-chain gate end to end: `update --fetch` with a registry
//! settings file whose `supply_chain` rules require signers or a minimum
//! release age, and ImagePolicies that follow an alias, against Debian's
//! `docker-registry` with images signed as cosign signs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use image_update_testkit::registry::{Auth, ImageSpec, Registry};
use image_update_testkit::sigstore::{self as ts, CertSpec, TestKey, TestSigstore};
use image_update_testkit::{run, trial};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const REPO: &str = "team/app";

fn cmd(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    c
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, text).unwrap();
    path
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A tree with one Flux ImagePolicy (semver `>=1.0.0`, with extra
/// annotations) and one marked deployment.
fn tree(host: &str, annotations: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(
        &root,
        "flux/images.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: flux-system}}\nspec: {{image: {host}/{REPO}}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app\n  namespace: flux-system\n  annotations: {{{annotations}}}\nspec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n"
        ),
    );
    let deploy = write(
        &root,
        "apps/web.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: {host}/{REPO}:0.1.0 # {{\"$imagepolicy\": \"flux-system:app\"}}\n"
        ),
    );
    (dir, root, deploy)
}

fn image(created: &str) -> ImageSpec {
    ImageSpec::new("linux", "amd64", None, created)
}

/// The newest tag is unsigned: the newest signed one is written, with the
/// digest that was verified, and the run says what it skipped and who
/// signed.
fn signed_tag_is_chosen_over_newer_unsigned() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let key = TestKey::p256();
    let (_, signed) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.1.0", &image("2026-02-01T00:00:00Z"));
    reg.push_sig_tag(REPO, &signed, &[ts::legacy_key_layer(&signed, &key)]);
    let (dir, root, deploy) = tree(&host, "");
    write(dir.path(), "cosign.pub", &key.public_pem());
    let settings = write(
        dir.path(),
        "registries.yaml",
        &format!(
            "supply_chain:\n  rules:\n  - repositories: ['{host}/team/*']\n    verify:\n      keys: [{{path: cosign.pub}}]\n"
        ),
    );
    let out = cmd(dir.path())
        .args(["update", "--fetch", "--registry-config"])
        .arg(&settings)
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = fs_err::read_to_string(&deploy).unwrap();
    assert!(
        text.contains(&format!("{host}/{REPO}:1.0.0@{signed} #")),
        "{text}"
    );
    let err = stderr(&out);
    assert!(err.contains("signed by key cosign.pub (sha256:"), "{err}");
    assert!(
        err.contains("skipped 1.1.0 (unsigned: no signature found)"),
        "{err}"
    );
}

/// Keyless: the identity must match; with no acceptable signature at all
/// the policy fails and nothing is written.
fn keyless_identity_or_nothing_written() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let store = TestSigstore::new();
    let (manifest, digest) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    let signing = store.issue(&CertSpec::new(
        "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1.0.0",
        "https://token.actions.githubusercontent.com",
    ));
    let bundle = ts::dsse_bundle(
        &store,
        &ts::sign_statement(&digest, ts::COSIGN_SIGN),
        &signing,
        ts::now(),
    );
    reg.push_bundle_referrer(
        REPO,
        &digest,
        "application/vnd.oci.image.manifest.v1+json",
        manifest.len(),
        &serde_json::to_vec(&bundle).unwrap(),
    );
    let (dir, root, deploy) = tree(&host, "");
    write(dir.path(), "trusted_root.json", &store.trusted_root_json());
    let settings = |subject_regexp: &str| {
        write(
            dir.path(),
            "registries.yaml",
            &format!(
                "supply_chain:\n  trusted_root: trusted_root.json\n  rules:\n  - repositories: ['{host}/*']\n    verify:\n      identities:\n      - subject_regexp: '{subject_regexp}'\n        issuer: https://token.actions.githubusercontent.com\n"
            ),
        )
    };
    let before = fs_err::read_to_string(&deploy).unwrap();
    let path = settings(r"https://github\.com/evil/.*");
    let out = cmd(dir.path())
        .args(["update", "--fetch", "--registry-config"])
        .arg(&path)
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(fs_err::read_to_string(&deploy).unwrap(), before);
    let err = stderr(&out);
    assert!(
        err.contains("no candidate passed the supply-chain gate"),
        "{err}"
    );
    assert!(err.contains("1.0.0 unsigned"), "{err}");

    let path = settings(r"https://github\.com/acme/app/.*");
    let out = cmd(dir.path())
        .args(["update", "--fetch", "--registry-config"])
        .arg(&path)
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(&format!(":1.0.0@{digest}"))
    );
    assert!(
        stderr(&out).contains(
            "signed by https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1.0.0 (issuer https://token.actions.githubusercontent.com; transparency log index"
        ),
        "{}",
        stderr(&out)
    );
}

/// A minimum age needs a trusted time: docker-registry has no push-time
/// API, so the policy fails closed; with the builder's time (opt-in), the
/// newest old-enough tag is chosen, and epoch-0 times are refused.
fn minimum_age_fails_closed_and_builder_time_is_opt_in() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let now = ts::now();
    let recent = image_update_registry::Timestamp::from_unix(now - 3600, 0).to_string();
    reg.push_image(REPO, "1.0.0", &image("1970-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.1.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.2.0", &image(&recent));
    reg.push_image(REPO, "1.3.0", &image("1970-01-01T00:00:00Z"));

    let (dir, root, deploy) = tree(&host, "image-update.dev/min-age: 24h");
    let out = cmd(dir.path())
        .args(["update", "--fetch"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("has no push-time API"),
        "{}",
        stderr(&out)
    );
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(":0.1.0 #")
    );

    let (dir, root, deploy) = tree(
        &host,
        "image-update.dev/min-age: 24h, image-update.dev/age-source: builder",
    );
    let out = cmd(dir.path())
        .args(["update", "--fetch"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(":1.1.0@sha256:"),
        "{}",
        fs_err::read_to_string(&deploy).unwrap()
    );
    let err = stderr(&out);
    assert!(err.contains("skipped 1.3.0 (no-trusted-time"), "{err}");
    assert!(err.contains("reproducible-build placeholder"), "{err}");
    assert!(
        err.contains("skipped 1.2.0 (too-young: released 1h 0m ago"),
        "{err}"
    );
    assert!(
        err.contains("builder-controlled image config created"),
        "{err}"
    );
}

/// An alias: the versioned tag with `latest`'s digest is written; when
/// none among the candidates has it, the policy fails.
fn alias_to_versioned_sibling() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let (m, d) = reg.push_image(REPO, "1.1.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.2.0", &image("2026-02-01T00:00:00Z"));
    reg.put_manifest(
        REPO,
        "latest",
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    let (dir, root, deploy) = tree(&host, "image-update.dev/alias: latest");
    let out = cmd(dir.path())
        .args(["update", "--fetch"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(&format!(":1.1.0@{d}"))
    );
    assert!(
        stderr(&out).contains(", the tag of latest ("),
        "{}",
        stderr(&out)
    );

    reg.push_image(REPO, "latest", &image("2026-03-01T00:00:00Z"));
    let out = cmd(dir.path())
        .args(["update", "--fetch"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no tag the policy admits has the digest of latest"),
        "{}",
        stderr(&out)
    );
}

/// Every candidate's verdict (what the `policy` command shows): signed or
/// not, old enough or not, matching the alias or not.
fn every_candidate_has_a_verdict() {
    use image_update::reflector::gate::{AgeCheck, SupplyChain, evaluate};
    use image_update::reflector::selection::{AliasConfig, PolicyConfig, PolicySpec, Strategy};
    use image_update_registry::settings::AgeSource;
    use image_update_verify::age::MinAge;
    use image_update_verify::{Gate, Policy, PublicKey, Require, Signer};

    let reg = Registry::start(Auth::Anonymous);
    let key = TestKey::p256();
    let (m, old_signed) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    let young = image_update_registry::Timestamp::from_unix(ts::now() - 60, 0).to_string();
    let (_, young_signed) = reg.push_image(REPO, "1.1.0", &image(&young));
    reg.push_image(REPO, "1.2.0", &image("2026-02-01T00:00:00Z"));
    reg.put_manifest(
        REPO,
        "latest",
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    for d in [&old_signed, &young_signed] {
        reg.push_sig_tag(REPO, d, &[ts::legacy_key_layer(d, &key)]);
    }
    let client = image_update_registry::RegistryClient::new(Default::default()).unwrap();
    let repo =
        image_update_registry::Repository::parse(&format!("{}/{REPO}", reg.authority())).unwrap();
    let spec = PolicySpec::new(PolicyConfig::new(Strategy::SemVer { range: "*".into() })).unwrap();
    let tags = client.list_tags(&repo).unwrap();
    let selection = spec
        .select(
            &tags
                .iter()
                .map(image_update::reflector::selection::TagInfo::new)
                .collect::<Vec<_>>(),
            10,
        )
        .unwrap();
    let chain = SupplyChain {
        verify: Some(std::sync::Arc::new(Gate::new(
            Policy::new(
                vec![Signer::Key {
                    name: "release".into(),
                    key: PublicKey::from_pem(&key.public_pem()).unwrap(),
                    tlog: false,
                }],
                Require::Any,
                None,
                Vec::new(),
            )
            .unwrap(),
        ))),
        min_age: Some(MinAge {
            min: std::time::Duration::from_secs(3600),
            source: AgeSource::Builder,
        }),
        alias: Some(AliasConfig {
            tag: "latest".into(),
            platform: None,
            max_requests: 10,
        }),
        max_candidates: 0,
    };
    let v = evaluate(&client, &repo, "app", &selection, &chain, 10).unwrap();
    let tags: Vec<&str> = v.iter().map(|c| c.tag.as_str()).collect();
    assert_eq!(tags, ["1.2.0", "1.1.0", "1.0.0"]);
    assert!(v[0].signed.as_ref().unwrap().is_err());
    assert_eq!(v[0].matches_alias, Some(false));
    assert!(v[1].signed.as_ref().unwrap().is_ok());
    assert!(matches!(v[1].age, Some(AgeCheck::TooYoung { .. })));
    assert_eq!(v[2].matches_alias, Some(true));
    assert!(v[2].passes() && !v[1].passes() && !v[0].passes());
    let json = serde_json::to_string(&v[2]).unwrap();
    assert!(
        json.contains(r#""verdict":"old-enough""#) && json.contains(r#""matchesAlias":true"#),
        "{json}"
    );
}

fn main() {
    run(vec![
        trial(
            "every_candidate_has_a_verdict",
            &["docker-registry"],
            every_candidate_has_a_verdict,
        ),
        trial(
            "signed_tag_is_chosen_over_newer_unsigned",
            &["docker-registry"],
            signed_tag_is_chosen_over_newer_unsigned,
        ),
        trial(
            "keyless_identity_or_nothing_written",
            &["docker-registry"],
            keyless_identity_or_nothing_written,
        ),
        trial(
            "minimum_age_fails_closed_and_builder_time_is_opt_in",
            &["docker-registry"],
            minimum_age_fails_closed_and_builder_time_is_opt_in,
        ),
        trial(
            "alias_to_versioned_sibling",
            &["docker-registry"],
            alias_to_versioned_sibling,
        ),
    ]);
}
