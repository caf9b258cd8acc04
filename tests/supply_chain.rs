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

/// `update --fetch` of `root` with a settings file whose rule requires the key `cosign.pub` (in
/// `dir`) of the registry's `team/` repositories.
fn update_requiring_key(dir: &Path, host: &str, root: &Path) -> Output {
    let settings = write(
        dir,
        "registries.yaml",
        &format!(
            "supply_chain:\n  rules:\n  - repositories: ['{host}/team/*']\n    verify:\n      keys: [{{path: cosign.pub}}]\n"
        ),
    );
    cmd(dir)
        .args(["update", "--fetch", "--registry-config"])
        .arg(&settings)
        .arg(root)
        .output()
        .unwrap()
}

fn image(created: &str) -> ImageSpec {
    ImageSpec::new("linux", "amd64", None, created)
}

/// Signs the image `digest` (its manifest `manifest`) keyless, as the
/// release workflow of acme/app on GitHub, and pushes the bundle as a
/// referrer.
fn sign_keyless(reg: &Registry, store: &TestSigstore, manifest: &[u8], digest: &str) {
    let signing = store.issue(&CertSpec::new(
        "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1.0.0",
        "https://token.actions.githubusercontent.com",
    ));
    let bundle = ts::dsse_bundle(
        store,
        &ts::sign_statement(digest, ts::COSIGN_SIGN),
        &signing,
        ts::now(),
    );
    reg.push_bundle_referrer(
        REPO,
        digest,
        "application/vnd.oci.image.manifest.v1+json",
        manifest.len(),
        &serde_json::to_vec(&bundle).unwrap(),
    );
}

/// Pushes 1.0.0, signed with a new key as cosign signs with a key, and a newer 1.1.0 unsigned;
/// returns the key and 1.0.0's digest.
fn signed_then_unsigned(reg: &Registry) -> (TestKey, String) {
    let key = TestKey::p256();
    let (_, signed) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.1.0", &image("2026-02-01T00:00:00Z"));
    reg.push_sig_tag(REPO, &signed, &[ts::legacy_key_layer(&signed, &key)]);
    (key, signed)
}

/// The newest tag is unsigned: the newest signed one is written, with the
/// digest that was verified, and the run says what it skipped and who
/// signed.
fn signed_tag_is_chosen_over_newer_unsigned() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let (key, signed) = signed_then_unsigned(&reg);
    let (dir, root, deploy) = tree(&host, "");
    write(dir.path(), "cosign.pub", &key.public_pem());
    let out = update_requiring_key(dir.path(), &host, &root);
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
    sign_keyless(&reg, &store, &manifest, &digest);
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

/// The `policy` command shows every candidate's verdict (signed or not,
/// old enough or not, matching the alias or not) in text and JSON, and
/// the tag the gate chooses; when none passes, the verdicts are shown and
/// the command fails.
fn every_candidate_has_a_verdict() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let dir = tempfile::tempdir().unwrap();
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
    let public = write(dir.path(), "cosign.pub", &key.public_pem());
    let policy = |extra: &[&str]| {
        let mut c = cmd(dir.path());
        c.args(["policy", &format!("{host}/{REPO}"), "--verify-key"])
            .arg(&public)
            .args(["--min-age", "1h", "--age-source", "builder"])
            .args(extra);
        c.output().unwrap()
    };
    let out = policy(&["--alias", "latest"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.contains("tag:    1.0.0\n"), "{text}");
    assert!(text.contains(&format!("digest: {old_signed}\n")), "{text}");
    assert!(
        text.contains("  signers (any): key cosign.pub (sha256:"),
        "{text}"
    );
    assert!(
        text.contains("  minimum age: 1h 0m (builder time)\n"),
        "{text}"
    );
    assert!(
        text.contains("  1. 1.2.0  unsigned: no signature found; old enough: released "),
        "{text}"
    );
    assert!(text.contains("; not latest\n"), "{text}");
    assert!(
        text.contains("  2. 1.1.0  signed by key cosign.pub (sha256:"),
        "{text}"
    );
    assert!(
        text.contains("; too young: released 1m 0s ago (")
            || text.contains("; too young: released 1m "),
        "{text}"
    );
    assert!(text.contains("; matches latest  <- chosen\n"), "{text}");

    let out = policy(&["--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tag"], "1.0.0");
    let chain = &json["supply_chain"];
    assert_eq!(chain["chosen"], "1.0.0");
    let verdicts: Vec<&str> = chain["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["unsigned", "too-young", "passes"]);
    assert_eq!(chain["candidates"][1]["signed"], true);
    assert_eq!(chain["candidates"][1]["signed_by"][0]["kind"], "key");
    assert_eq!(chain["candidates"][2]["age"]["verdict"], "old-enough");
    assert!(chain["candidates"][2].get("matches_alias").is_none());

    // Another key signed nothing: every verdict is printed, then the error.
    let other = write(dir.path(), "other.pub", &TestKey::p256().public_pem());
    let out = cmd(dir.path())
        .args(["policy", &format!("{host}/{REPO}"), "--verify-key"])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.contains("chosen: none: no candidate passed"), "{text}");
    assert!(
        text.contains("  2. 1.1.0  unsigned: no valid signature: "),
        "{text}"
    );
    assert!(
        text.contains("  3. 1.0.0  unsigned: no valid signature: "),
        "{text}"
    );
    assert!(
        stderr(&out).contains("no candidate passed the supply-chain gate"),
        "{}",
        stderr(&out)
    );
    // The gate needs the registry.
    let out = cmd(dir.path())
        .args(["policy", "app", "--tags-file", "-", "--min-age", "1h"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// When the gate passes no candidate, `policy` names no tag: `--output
/// json` has `tag` and `digest` null and the selection's pick only as
/// `unverified_pick`, and the text's `tag:` line says none passed; the
/// command fails.
fn no_tag_is_named_when_no_candidate_passes() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::p256();
    let (_, signed) = reg.push_image(REPO, "1.5.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.7.0", &image("2026-02-01T00:00:00Z"));
    // 1.5.0 is signed, by a key the policy does not accept.
    reg.push_sig_tag(REPO, &signed, &[ts::legacy_key_layer(&signed, &key)]);
    let other = write(dir.path(), "other.pub", &TestKey::p256().public_pem());
    let policy = |format: &str| {
        cmd(dir.path())
            .args(["policy", &format!("{host}/{REPO}"), "--verify-key"])
            .arg(&other)
            .args(["--output", format])
            .output()
            .unwrap()
    };
    let out = policy("json");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tag"], serde_json::Value::Null, "{json:#}");
    assert_eq!(json["digest"], serde_json::Value::Null, "{json:#}");
    assert_eq!(json["unverified_pick"], "1.7.0", "{json:#}");
    assert_eq!(json["supply_chain"]["chosen"], serde_json::Value::Null);
    assert_eq!(json["candidates"][0]["tag"], "1.7.0");

    let out = policy("text");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        text.contains("\ntag:    none (no candidate passed the supply-chain gate)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\nunverified pick: 1.7.0 (ranked first, rejected by the supply-chain gate)\n"
        ),
        "{text}"
    );
    assert!(!text.contains("tag:    1.7.0"), "{text}");
    assert!(!text.contains("digest:"), "{text}");
    assert!(text.contains("chosen: none: no candidate passed"), "{text}");

    // A candidate that passes is the tag, with the digest that was verified.
    let public = write(dir.path(), "cosign.pub", &key.public_pem());
    let out = cmd(dir.path())
        .args(["policy", &format!("{host}/{REPO}"), "--verify-key"])
        .arg(&public)
        .args(["--output", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tag"], "1.5.0", "{json:#}");
    assert_eq!(json["digest"], signed.as_str(), "{json:#}");
    assert!(json.get("unverified_pick").is_none(), "{json:#}");
}

/// The supply-chain flags of `update` (no settings file): signers and a
/// minimum age for every fetched policy; each mistake is a usage error
/// naming its flag, and the flags need --fetch.
fn update_flags_require_signers() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let key = TestKey::p256();
    let (_, signed) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.1.0", &image("2026-02-01T00:00:00Z"));
    reg.push_sig_tag(REPO, &signed, &[ts::legacy_key_layer(&signed, &key)]);
    let (dir, root, deploy) = tree(&host, "");
    let public = write(dir.path(), "keys/cosign.pub", &key.public_pem());
    let out = cmd(dir.path())
        .args(["update", "--fetch", "--verify-key"])
        .arg(&public)
        .args(["--min-age", "1d", "--age-source", "builder"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(&format!(":1.0.0@{signed} #"))
    );
    let err = stderr(&out);
    assert!(err.contains("signed by key cosign.pub (sha256:"), "{err}");
    assert!(
        err.contains("warning: policy flux-system:app: skipped "),
        "{err}"
    );
    assert!(err.contains("is builder-controlled"), "{err}");

    for (args, message) in [
        (
            vec!["--verify-key".to_owned(), public.display().to_string()],
            "--verify-key applies to the policies fetched from registries: add --fetch",
        ),
        (
            vec![
                "--fetch".to_owned(),
                "--verify-identity".to_owned(),
                "https://x".to_owned(),
            ],
            "--verify-identity needs --verify-issuer or --verify-issuer-regexp",
        ),
        (
            vec![
                "--fetch".to_owned(),
                "--verify-key".to_owned(),
                dir.path().join("missing.pub").display().to_string(),
            ],
            "--verify-key ",
        ),
        (
            vec![
                "--fetch".to_owned(),
                "--verify-identity-regexp".to_owned(),
                "(".to_owned(),
                "--verify-issuer".to_owned(),
                "https://i".to_owned(),
            ],
            "--verify-identity-regexp: invalid regular expression",
        ),
        (
            vec![
                "--fetch".to_owned(),
                "--age-source".to_owned(),
                "sundial".to_owned(),
            ],
            "\"sundial\" is neither registry nor builder",
        ),
    ] {
        let out = cmd(dir.path())
            .arg("update")
            .args(&args)
            .arg(&root)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

/// A policy's own signers (annotations) are required besides the settings
/// file's: an image signed by only one of them is skipped; a misspelt
/// annotation is an error, not ignored.
fn policy_annotations_add_signers() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let (team, release) = (TestKey::p256(), TestKey::p256());
    let (_, both) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    let (_, team_only) = reg.push_image(REPO, "1.1.0", &image("2026-02-01T00:00:00Z"));
    reg.push_sig_tag(
        REPO,
        &both,
        &[
            ts::legacy_key_layer(&both, &team),
            ts::legacy_key_layer(&both, &release),
        ],
    );
    reg.push_sig_tag(REPO, &team_only, &[ts::legacy_key_layer(&team_only, &team)]);
    let pem = release.public_pem().replace('\n', "\\n");
    let (dir, root, deploy) = tree(&host, &format!("image-update.dev/verify-key: \"{pem}\""));
    write(dir.path(), "team.pub", &team.public_pem());
    let settings = write(
        dir.path(),
        "registries.yaml",
        &format!(
            "supply_chain:\n  rules:\n  - repositories: ['{host}/*']\n    verify:\n      keys: [{{path: team.pub}}]\n"
        ),
    );
    let out = cmd(dir.path())
        .args(["update", "--fetch", "--registry-config"])
        .arg(&settings)
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(&format!(":1.0.0@{both} #"))
    );
    let err = stderr(&out);
    assert!(
        err.contains("signed by key team.pub (sha256:")
            && err.contains(" and key image-update.dev/verify-key (sha256:"),
        "{err}"
    );
    assert!(
        err.contains("skipped 1.1.0 (unsigned: no valid signature"),
        "{err}"
    );

    let (dir, root, deploy) = tree(&host, "image-update.dev/min-ages: 1d");
    let out = cmd(dir.path())
        .args(["update", "--fetch"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown annotation image-update.dev/min-ages"),
        "{}",
        stderr(&out)
    );
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(":0.1.0 #")
    );
    drop(dir);
}

/// Runs the binary's `fn` on `input` (a ResourceList).
fn run_fn(home: &Path, input: &str) -> Output {
    use std::io::Write as _;
    let mut child = cmd(home)
        .arg("fn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The KRM function: an ImageUpdate's `verify` (a keyless identity, the
/// trusted root written as YAML), `minAge` and `ageSource` through `kpt fn
/// eval --exec`, the newer unsigned tag reported as a kpt result; a
/// ConfigMap's `verifyKey` through `fn` on a ResourceList; settings without
/// `fetch` are an error.
fn function_config_requires_signers() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let store = TestSigstore::new();
    let key = TestKey::p256();
    let (manifest, digest) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.1.0", &image("2026-02-01T00:00:00Z"));
    sign_keyless(&reg, &store, &manifest, &digest);
    reg.push_sig_tag(REPO, &digest, &[ts::legacy_key_layer(&digest, &key)]);

    let (dir, pkg, deploy) = tree(&host, "");
    let config = write(
        dir.path(),
        "fn-config.yaml",
        &format!(
            "apiVersion: fn.image-update.dev/v1alpha1\nkind: ImageUpdate\nmetadata: {{name: gate}}\nfetch: true\nverify:\n  identityRegexps: ['https://github\\.com/acme/app/.*']\n  issuer: https://token.actions.githubusercontent.com\n  trustedRoot: {}\nminAge: 1d\nageSource: builder\n",
            store.trusted_root_json().replace('\n', " ")
        ),
    );
    let bin_dir = Path::new(BIN).parent().unwrap();
    let out = Command::new("kpt")
        .args(["fn", "eval", "--exec", BIN])
        .arg(&pkg)
        .arg("--fn-config")
        .arg(&config)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .env("HOME", dir.path())
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{log}");
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(&format!(":1.0.0@{digest} #")),
        "{log}"
    );
    let results = fs_err::read_to_string(dir.path().join("results/results.yaml")).unwrap();
    assert!(
        results.contains("policy flux-system:app: skipped ")
            && results.contains("1.1.0 (unsigned): no signature found"),
        "{results}"
    );
    assert!(results.contains("is builder-controlled"), "{results}");
    assert!(
        results.contains("signed by https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1.0.0 (issuer https://token.actions.githubusercontent.com; transparency log index"),
        "{results}"
    );

    // A ConfigMap with the key's PEM, through the binary, on the
    // ResourceList kpt makes of the package.
    let (dir, pkg, _) = tree(&host, "");
    let list = |data: &str| {
        let config = write(
            dir.path(),
            "cm.yaml",
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: fn-config}}\ndata:\n{data}"
            ),
        );
        let out = Command::new("kpt")
            .args(["fn", "source"])
            .arg(&pkg)
            .arg("--fn-config")
            .arg(&config)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let pem = key.public_pem().trim_end().replace('\n', "\n    ");
    let input = list(&format!("  fetch: 'true'\n  verifyKey: |\n    {pem}\n"));
    let out = run_fn(dir.path(), &input);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains(&format!(":1.0.0@{digest} #")), "{text}");
    assert!(
        text.contains("1.1.0 (unsigned): no signature found"),
        "{text}"
    );

    // Another key: nothing passes, nothing is edited, exit 1.
    let other = TestKey::p256()
        .public_pem()
        .trim_end()
        .replace('\n', "\n    ");
    let out = run_fn(
        dir.path(),
        &list(&format!("  fetch: 'true'\n  verifyKey: |\n    {other}\n")),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(":0.1.0 #"), "{text}");
    assert!(
        text.contains("no candidate passed the supply-chain gate"),
        "{text}"
    );

    // Settings without fetch.
    let out = run_fn(dir.path(), &list("  minAge: 1d\n"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(r#"ConfigMap fn-config data \"minAge\": the supply-chain settings apply to fetched policies: set fetch"#),
        "{text}"
    );
}

/// The GitHub Action: `fetch` with the `verify-key`, `min-age` and
/// `age-source` inputs; the skipped tag is a `::warning` at the policy's
/// definition, the `changes` output carries who signed; another key fails
/// the step with nothing written.
fn action_inputs_require_signers() {
    use image_update::api::action::input_variable;
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let key = TestKey::p256();
    let (_, signed) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    reg.push_image(REPO, "1.1.0", &image("2026-02-01T00:00:00Z"));
    reg.push_sig_tag(REPO, &signed, &[ts::legacy_key_layer(&signed, &key)]);
    let (dir, root, deploy) = tree(&host, "");
    write(&root, "keys/cosign.pub", &key.public_pem());
    write(&root, "keys/other.pub", &TestKey::p256().public_pem());
    let step = |key_file: &str| {
        let output = dir.path().join(format!("output-{key_file}"));
        let mut c = cmd(dir.path());
        c.arg("action")
            .env("GITHUB_WORKSPACE", &root)
            .env("GITHUB_OUTPUT", &output)
            .env_remove("GITHUB_STEP_SUMMARY")
            .current_dir(&root);
        for (name, value) in [
            ("fetch", "true"),
            ("verify-key", &format!("keys/{key_file}\n")),
            ("min-age", "1d"),
            ("age-source", "builder"),
        ] {
            c.env(input_variable(name), value);
        }
        let out = c.output().unwrap();
        let outputs = fs_err::read_to_string(&output).unwrap_or_default();
        (out, outputs)
    };
    let before = fs_err::read_to_string(&deploy).unwrap();
    let (out, _) = step("other.pub");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(log.contains("::error"), "{log}");
    assert!(
        log.contains("no candidate passed the supply-chain gate"),
        "{log}"
    );
    assert_eq!(fs_err::read_to_string(&deploy).unwrap(), before);

    let (out, outputs) = step("cosign.pub");
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{log}{}", stderr(&out));
    assert!(
        fs_err::read_to_string(&deploy)
            .unwrap()
            .contains(&format!(":1.0.0@{signed} #"))
    );
    assert!(
        log.contains("::warning file=flux/images.yaml,line=")
            && log.contains("skipped ")
            && log.contains("1.1.0 (unsigned): no signature found"),
        "{log}"
    );
    assert!(log.contains("signed by key cosign.pub (sha256:"), "{log}");
    let changes = outputs
        .lines()
        .find_map(|l| l.strip_prefix("changes="))
        .or_else(|| {
            let at = outputs.find("changes<<")?;
            outputs[at..].lines().nth(1)
        })
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(changes).unwrap();
    assert_eq!(
        report["supplyChain"]["flux-system:app"]["signedBy"][0]["name"], "cosign.pub",
        "{report}"
    );

    // The supply-chain inputs need fetch.
    let out = cmd(dir.path())
        .arg("action")
        .env("GITHUB_WORKSPACE", &root)
        .env(input_variable("min-age"), "1d")
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("input min-age applies to the policies fetched from registries"),
        "{}",
        stderr(&out)
    );
}

/// A signature manifest whose layer declares 52 MB (more than the 1 MiB a
/// payload or bundle may have) is not fetched, and the verdict says so,
/// with the size declared and the limit, instead of "no signature found":
/// in `policy`'s text and JSON, and in `update`'s report of what it
/// skipped.
fn oversized_signature_is_named() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let key = TestKey::p256();
    let (_, signed) = reg.push_image(REPO, "1.0.0", &image("2026-01-01T00:00:00Z"));
    let (_, big) = reg.push_image(REPO, "1.1.0", &image("2026-02-01T00:00:00Z"));
    reg.push_sig_tag(REPO, &signed, &[ts::legacy_key_layer(&signed, &key)]);
    // A good signature of 1.1.0, whose descriptor lies about its size: the
    // descriptor alone must keep it unread.
    let layer = ts::legacy_key_layer(&big, &key);
    let payload = reg.push_blob(REPO, &layer.payload);
    let config = reg.push_blob(REPO, b"{}");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": 2},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": payload,
            "size": 52_000_000,
            "annotations": layer.annotations,
        }],
    });
    let sig_tag = format!("{}.sig", big.replace(':', "-"));
    reg.put_manifest(
        REPO,
        &sig_tag,
        "application/vnd.oci.image.manifest.v1+json",
        &serde_json::to_vec(&manifest).unwrap(),
    );
    let (dir, root, deploy) = tree(&host, "");
    let public = write(dir.path(), "cosign.pub", &key.public_pem());
    let why = format!(
        "unsigned: no valid signature: signature tag: tag {sig_tag}: the signature layer declares 52000000 bytes, over the 1 MiB limit on signature material, so it was not read"
    );

    let policy = |extra: &[&str]| {
        cmd(dir.path())
            .args(["policy", &format!("{host}/{REPO}"), "--verify-key"])
            .arg(&public)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = policy(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.contains(&format!("  1. 1.1.0  {why}")), "{text}");
    assert!(text.contains("tag:    1.0.0\n"), "{text}");
    let out = policy(&["--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &json["supply_chain"]["candidates"][0];
    assert_eq!(first["tag"], "1.1.0", "{json}");
    assert_eq!(first["verdict"], "unsigned", "{json}");
    assert_eq!(
        first["unsigned_reason"].as_str(),
        why.strip_prefix("unsigned: "),
        "{json}"
    );

    let out = update_requiring_key(dir.path(), &host, &root);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("skipped 1.1.0 ({why})")), "{err}");
    let text = fs_err::read_to_string(&deploy).unwrap();
    assert!(
        text.contains(&format!("{host}/{REPO}:1.0.0@{signed} #")),
        "{text}"
    );
}

/// A tree with an Argo CD Application (its own kustomize images, written back by the `argocd`
/// method) and Argo CD Image Updater's ImageUpdater asking for `imagesVerification` with the key
/// `cosign.pub` of the Secret `argocd/app-key`.
fn argo_tree(host: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let app = write(
        &root,
        "apps/shop.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: shop, namespace: argocd}}\nspec:\n  source:\n    repoURL: https://git.example.test/fleet.git\n    path: shop\n    kustomize:\n      images:\n      - {host}/{REPO}:0.9.0\n"
        ),
    );
    write(
        &root,
        "apps/updater.yaml",
        &format!(
            "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {{name: fleet, namespace: argocd}}\nspec:\n  imagesVerification:\n    cosignKey: {{secretName: app-key, key: cosign.pub}}\n  applicationRefs:\n  - namePattern: shop\n    images:\n    - {{alias: app, imageName: '{host}/{REPO}:^1'}}\n"
        ),
    );
    (dir, root, app)
}

/// A policy file with the Secret `argocd/app-key` holding `pem` as `cosign.pub`.
fn key_secret(dir: &Path, pem: &str) -> PathBuf {
    use base64::Engine as _;
    write(
        dir,
        "keys.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: app-key, namespace: argocd}}\ndata:\n  cosign.pub: {}\n",
            base64::engine::general_purpose::STANDARD.encode(pem)
        ),
    )
}

/// Argo CD Image Updater's `imagesVerification.cosignKey` is a signer the gate requires: the
/// newest candidate signed with the key of the Secret is written back (with the digest checked),
/// newer unsigned ones skipped with the reason; signed with another key, or the key nowhere to be
/// found, the run fails and writes nothing; without `--fetch` the image is left alone.
fn argo_images_verification_gates_the_write_back() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let (key, signed) = signed_then_unsigned(&reg);
    let (dir, root, app) = argo_tree(&host);
    let before = fs_err::read_to_string(&app).unwrap();
    let update = |args: &[&std::ffi::OsStr]| {
        cmd(dir.path())
            .arg("update")
            .arg(&root)
            .args(args)
            .output()
            .unwrap()
    };

    // The key nowhere: an error at the field, nothing written.
    let out = update(&["--fetch".as_ref()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("apps/updater.yaml:6:16: error: ") && err.contains("imagesVerification.cosignKey: no Secret argocd/app-key among the policy documents (--policies files, the package's items), and no --secrets-dir where it is mounted"),
        "{err}"
    );
    assert_eq!(fs_err::read_to_string(&app).unwrap(), before);

    // Signed with another key: no candidate passes, nothing written.
    let other = key_secret(dir.path(), &TestKey::p256().public_pem());
    let out = update(&["--fetch".as_ref(), "--policies".as_ref(), other.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no candidate passed the supply-chain gate (2 examined): 1.1.0 unsigned: no signature found; 1.0.0 unsigned: no valid signature"),
        "{err}"
    );
    assert_eq!(fs_err::read_to_string(&app).unwrap(), before);

    // The right key, from a Secret manifest: 1.0.0 with the digest verified.
    let right = key_secret(dir.path(), &key.public_pem());
    let out = update(&["--fetch".as_ref(), "--policies".as_ref(), right.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("signed by key cosign.pub of Secret argocd/app-key (sha256:"),
        "{err}"
    );
    assert!(
        err.contains("skipped 1.1.0 (unsigned: no signature found)"),
        "{err}"
    );
    let written = fs_err::read_to_string(&app).unwrap();
    assert_eq!(
        written,
        before.replace(&format!("{REPO}:0.9.0"), &format!("{REPO}:1.0.0@{signed}"))
    );

    // The right key, mounted as a Secret volume under --secrets-dir.
    fs_err::write(&app, &before).unwrap();
    let mounted = dir.path().join("secrets");
    write(&mounted, "app-key/cosign.pub", &key.public_pem());
    let out = update(&[
        "--fetch".as_ref(),
        "--secrets-dir".as_ref(),
        mounted.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs_err::read_to_string(&app).unwrap(), written);

    // A result supplied as a value is checked by nothing: the image is left alone.
    fs_err::write(&app, &before).unwrap();
    let value = format!("argocd:shop/app={host}/{REPO}:1.1.0");
    let out = update(&["--policy".as_ref(), value.as_ref()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("must be signed with the key cosign.pub of Secret argocd/app-key (imagesVerification), which only a fetched result is checked against; without fetching it is left alone"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs_err::read_to_string(&app).unwrap(), before);
    let out = update(&["--secrets-dir".as_ref(), mounted.as_os_str()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The KRM function: the package's Secret item holds the key `imagesVerification.cosignKey`
/// names; the Application item's image moves to the signed tag with its digest, and without the
/// Secret the function fails at the field and edits nothing.
fn argo_images_verification_in_a_package() {
    use base64::Engine as _;
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let (key, signed) = signed_then_unsigned(&reg);
    let secret = format!(
        "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: app-key\n    namespace: argocd\n    annotations: {{config.kubernetes.io/path: apps/keys.yaml}}\n  data:\n    cosign.pub: {}\n",
        base64::engine::general_purpose::STANDARD.encode(key.public_pem())
    );
    let list = |secret: &str| {
        format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: fn.image-update.dev/v1alpha1\n  kind: ImageUpdate\n  metadata: {{name: fetch}}\n  fetch: true\nitems:\n- apiVersion: argoproj.io/v1alpha1\n  kind: Application\n  metadata:\n    name: shop\n    namespace: argocd\n    annotations: {{config.kubernetes.io/path: apps/shop.yaml}}\n  spec:\n    source:\n      repoURL: https://git.example.test/fleet.git\n      path: shop\n      kustomize:\n        images:\n        - {host}/{REPO}:0.9.0\n- apiVersion: argocd-image-updater.argoproj.io/v1alpha1\n  kind: ImageUpdater\n  metadata:\n    name: fleet\n    namespace: argocd\n    annotations: {{config.kubernetes.io/path: apps/updater.yaml}}\n  spec:\n    imagesVerification:\n      cosignKey: {{secretName: app-key, key: cosign.pub}}\n    applicationRefs:\n    - namePattern: shop\n      images:\n      - {{alias: app, imageName: '{host}/{REPO}:^1'}}\n{secret}"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let function = |input: &str| run_fn(dir.path(), input);
    let out = function(&list(&secret));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(
        text.contains(&format!("- {host}/{REPO}:1.0.0@{signed}\n")),
        "{text}"
    );
    let out = function(&list(""));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("- {host}/{REPO}:0.9.0\n")), "{text}");
    assert!(
        text.contains("imagesVerification.cosignKey: no Secret argocd/app-key"),
        "{text}"
    );
}

fn main() {
    run(vec![
        trial(
            "argo_images_verification_in_a_package",
            &["docker-registry"],
            argo_images_verification_in_a_package,
        ),
        trial(
            "argo_images_verification_gates_the_write_back",
            &["docker-registry"],
            argo_images_verification_gates_the_write_back,
        ),
        trial(
            "oversized_signature_is_named",
            &["docker-registry"],
            oversized_signature_is_named,
        ),
        trial(
            "action_inputs_require_signers",
            &["docker-registry"],
            action_inputs_require_signers,
        ),
        trial(
            "function_config_requires_signers",
            &["docker-registry", "kpt"],
            function_config_requires_signers,
        ),
        trial(
            "every_candidate_has_a_verdict",
            &["docker-registry"],
            every_candidate_has_a_verdict,
        ),
        trial(
            "no_tag_is_named_when_no_candidate_passes",
            &["docker-registry"],
            no_tag_is_named_when_no_candidate_passes,
        ),
        trial(
            "update_flags_require_signers",
            &["docker-registry"],
            update_flags_require_signers,
        ),
        trial(
            "policy_annotations_add_signers",
            &["docker-registry"],
            policy_annotations_add_signers,
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
