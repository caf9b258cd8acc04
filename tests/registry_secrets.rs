//! The `image-update` binary never prints a registry credential, even when a
//! registry echoes it back: `update --fetch`, `policy` and `fn` run against
//! an in-process fake registry (127.0.0.1) that answers every authenticated
//! request with the credentials it received, in bodies and headers, and
//! their stdout (kpt results) and stderr (errors, trace-level logs) are
//! searched for every form of the secret.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use base64::Engine;
use image_update_testkit::registry::{LeakyAuth, LeakyRegistry, percent_encode};
use image_update_testkit::{self as testkit, trial};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

const USER: &str = "robot";
const PASSWORD: &str = "hunter2 /pa+ss@word&=";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Every form of the password a registry may echo: as is, URL-encoded,
/// base64, and the `user:password` pair (the Basic header value) likewise.
fn secret_forms() -> Vec<String> {
    let pair = format!("{USER}:{PASSWORD}");
    vec![
        PASSWORD.to_owned(),
        percent_encode(PASSWORD),
        b64(PASSWORD),
        pair.clone(),
        b64(&pair),
    ]
}

/// The binary with trace logging, isolated from the user's credentials.
fn cmd(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("HOME", home)
        .env("IMAGE_UPDATE_LOG", "trace")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE");
    c
}

fn run(c: &mut Command, stdin: &str) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Fails unless the run failed, its output shows the registry's echo (as
/// `<redacted>`), and no form of the password nor any of `tokens` (bearer
/// tokens the token service issued) is anywhere in it.
fn assert_redacted(what: &str, out: &Output, tokens: &[String]) {
    let text = format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{what}: {text}");
    let mut forms = secret_forms();
    for token in tokens {
        forms.extend([token.clone(), percent_encode(token), b64(token)]);
    }
    for form in forms {
        assert!(!text.contains(&form), "{what} prints {form:?}:\n{text}");
    }
    assert!(
        text.contains("<redacted>"),
        "{what}: the registry's echo is missing:\n{text}"
    );
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, text).unwrap();
    path
}

/// An ImageRepository + ImagePolicy for `host/kind/x`, with a
/// dockerconfigjson Secret holding the credentials.
fn definitions(host: &str, kind: &str) -> String {
    let config = serde_json::json!({"auths": {host: {"auth": b64(&format!("{USER}:{PASSWORD}"))}}})
        .to_string();
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {{name: app, namespace: team}}
spec: {{image: {host}/{kind}/x, secretRef: {{name: regcred}}}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {{name: app, namespace: team}}
spec: {{imageRepositoryRef: {{name: app}}, policy: {{semver: {{range: '1.x'}}}}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: regcred, namespace: team}}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: {}
",
        b64(&config)
    )
}

fn update_fetch_with_a_secret() {
    let reg = LeakyRegistry::start(LeakyAuth::Basic);
    let host = reg.authority();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let marker = "image: x # {\"$imagepolicy\": \"team:app\"}\n";
    for kind in ["e401", "e403", "e500", "redirect", "json"] {
        write(&root, "flux/images.yaml", &definitions(&host, kind));
        let file = write(&root, "apps/a.yaml", marker);
        let out = run(cmd(dir.path()).arg("update").arg(&root).arg("--fetch"), "");
        assert_redacted(&format!("update --fetch ({kind})"), &out, &[]);
        assert_eq!(fs_err::read_to_string(file).unwrap(), marker);
    }
}

fn policy_with_environment_credentials() {
    let reg = LeakyRegistry::start(LeakyAuth::Bearer);
    let host = reg.authority();
    let dir = tempfile::tempdir().unwrap();
    for kind in ["e401", "e403", "tokenfail"] {
        let out = run(
            cmd(dir.path())
                .env("IMAGE_UPDATE_REGISTRY_USERNAME", USER)
                .env("IMAGE_UPDATE_REGISTRY_PASSWORD", PASSWORD)
                .env("IMAGE_UPDATE_REGISTRY_HOST", &host)
                .args(["policy", &format!("{host}/{kind}/x"), "--semver", "1.x"]),
            "",
        );
        assert_redacted(&format!("policy ({kind})"), &out, &reg.issued_tokens());
    }
    assert!(!reg.issued_tokens().is_empty());
}

fn function_fetch_with_a_secret() {
    let reg = LeakyRegistry::start(LeakyAuth::Basic);
    let host = reg.authority();
    let dir = tempfile::tempdir().unwrap();
    for kind in ["e401", "e500", "redirect"] {
        let mut items = String::new();
        for doc in definitions(&host, kind).split("---\n") {
            let mut lines = doc.lines();
            items.push_str(&format!("- {}\n", lines.next().unwrap()));
            for line in lines {
                items.push_str(&format!("  {line}\n"));
            }
        }
        let input = format!(
            "apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
{items}- apiVersion: apps/v1
  kind: Deployment
  metadata: {{name: web, annotations: {{config.kubernetes.io/path: apps/web.yaml}}}}
  spec:
    template:
      spec:
        containers:
        - name: app
          image: x # {{\"$imagepolicy\": \"team:app\"}}
functionConfig:
  apiVersion: fn.image-update.dev/v1alpha1
  kind: ImageUpdate
  metadata: {{name: fetch}}
  fetch: true
"
        );
        let out = run(cmd(dir.path()).arg("fn"), &input);
        assert_redacted(&format!("fn ({kind})"), &out, &[]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("results:"),
            "kpt results are written"
        );
    }
}

fn main() {
    testkit::run(vec![
        trial(
            "update_fetch_with_a_secret",
            &[],
            update_fetch_with_a_secret,
        ),
        trial(
            "policy_with_environment_credentials",
            &[],
            policy_with_environment_credentials,
        ),
        trial(
            "function_fetch_with_a_secret",
            &[],
            function_fetch_with_a_secret,
        ),
    ]);
}
