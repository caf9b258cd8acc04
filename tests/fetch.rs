//! Fetched policy results end to end: `update --fetch`, `policy IMAGE` and
//! the KRM function's `fetch: true`, against Debian's `docker-registry`
//! started on 127.0.0.1 (ignored with the reason when it is missing, failed
//! when `CI` is set), plus offline `policy --tags-file` cases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use image_update_testkit::registry as harness;
use image_update_testkit::{self as testkit, trial};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use base64::Engine;
use harness::{Auth, ImageSpec, Registry};
use image_update::api::yaml::parse_values;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

/// The binary, isolated from the user's registry credentials.
fn cmd(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("RUST_LOG");
    c
}

fn run(c: &mut Command) -> Output {
    c.stdin(Stdio::null()).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, text).unwrap();
    path
}

/// `testdata/fetch/NAME` with each `{KEY}` of `vars` filled in.
fn fixture(name: &str, vars: &[(&str, &str)]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/fetch")
        .join(name);
    let mut text = fs_err::read_to_string(path).unwrap();
    for (key, value) in vars {
        text = text.replace(&format!("{{{key}}}"), value);
    }
    assert!(!text.contains("{host}"), "{name}: {{host}} left unfilled");
    text
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap()
}

/// Push one tiny image and re-tag its manifest; returns its digest.
fn push_tags(reg: &Registry, repo: &str, tags: &[&str]) -> String {
    let image = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    let (manifest, digest) = reg.push_image(repo, tags[0], &image);
    let rest: Vec<String> = tags[1..].iter().map(|t| (*t).to_owned()).collect();
    reg.push_tags(repo, image.media_type(), &manifest, &rest);
    digest
}

/// The Flux definitions of the end-to-end tests, against the registry at
/// `host`.
fn flux_definitions(host: &str) -> String {
    fixture("flux-definitions.yaml", &[("host", host)])
}

/// Pushes the repositories of [`flux_definitions`]; returns the digest of
/// `team/multi:1.1.0` (an index).
fn push_flux_repos(reg: &Registry) -> String {
    push_tags(
        reg,
        "team/app",
        &[
            "v1.0.0",
            "v1.2.0",
            "1.3.0-rc.1",
            "v2.0.0",
            "latest",
            "sha256-abc.sig",
        ],
    );
    push_tags(
        reg,
        "team/alpha",
        &["2024-01-05", "2024-03-01", "2023-12-31"],
    );
    push_tags(
        reg,
        "team/num",
        &["build-5", "build-12", "build-7", "latest", "build-x"],
    );
    let images = [
        ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
        ImageSpec::new("linux", "arm64", Some("v8"), "2024-01-01T00:00:00Z"),
    ];
    reg.push_index("team/multi", "1.0.0", &images, false);
    let (digest, _) = reg.push_index("team/multi", "1.1.0", &images, true);
    digest
}

fn update_fetch_flux_end_to_end() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let multi_digest = push_flux_repos(&reg);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(&root, "flux/images.yaml", &flux_definitions(&host));
    let deploy = write(
        &root,
        "apps/web.yaml",
        &fixture("deployment.yaml", &[("host", &host)]),
    );
    let emitted = dir.path().join("emitted.yaml");
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(&root)
        .arg("--fetch")
        .arg("--emit-policies")
        .arg(&emitted));
    assert!(out.status.success(), "{}", stderr(&out));
    let want = fixture(
        "deployment.expected.yaml",
        &[("host", &host), ("multi_digest", &multi_digest)],
    );
    assert_eq!(read(&deploy), want);
    assert!(
        stderr(&out).contains("fetched flux-system:app: 6 tags listed, 2 eligible, chose"),
        "{}",
        stderr(&out)
    );

    // --emit-policies: the ImagePolicies with the computed status.
    let docs = parse_values(&read(&emitted)).unwrap();
    assert_eq!(docs.len(), 4);
    let find = |name: &str| {
        docs.iter()
            .find(|d| d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} not emitted"))
    };
    let multi = find("multi");
    assert_eq!(multi["kind"], "ImagePolicy");
    assert_eq!(multi["spec"]["digestReflectionPolicy"], "Always");
    assert_eq!(multi["status"]["latestRef"]["tag"], "1.1.0");
    assert_eq!(
        multi["status"]["latestRef"]["digest"],
        multi_digest.as_str()
    );
    assert_eq!(
        multi["status"]["observedPreviousRef"]["tag"], "1.0.0",
        "the previous latestRef moves to observedPreviousRef"
    );
    assert_eq!(
        find("app")["status"]["latestRef"]["name"],
        format!("{host}/team/app").as_str()
    );
    assert!(find("app")["status"].get("observedPreviousRef").is_none());

    // A second run changes nothing; the emitted file works as supplied
    // results without --fetch.
    let out = run(cmd(dir.path()).arg("update").arg(&root).arg("--fetch"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(&deploy), want);
    let fresh = write(
        dir.path(),
        "again/web.yaml",
        &fixture("deployment.yaml", &[("host", &host)]),
    );
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(fresh.parent().unwrap())
        .arg("--policies")
        .arg(&emitted));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(&fresh), want);
}

fn update_fetch_if_not_present_and_selector() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let digest = push_tags(&reg, "team/app", &["v1.0.0", "v1.2.0"]);
    let recorded = format!("sha256:{}", "a".repeat(64));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(
        &root,
        "flux/images.yaml",
        &fixture(
            "if-not-present.yaml",
            &[("host", &host), ("recorded", &recorded)],
        ),
    );
    let text = "a: x # {\"$imagepolicy\": \"default:keep\"}\nb: x # {\"$imagepolicy\": \"default:fresh:digest\"}\n";
    let file = write(&root, "values.yaml", text);
    let out = run(cmd(dir.path())
        .args(["update", "--fetch", "-l", "env=prod"])
        .arg(&root));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        read(&file),
        format!(
            "a: {host}/team/app:v1.2.0@{recorded} # {{\"$imagepolicy\": \"default:keep\"}}\nb: {digest} # {{\"$imagepolicy\": \"default:fresh:digest\"}}\n"
        ),
        "IfNotPresent keeps the recorded digest of an unchanged tag, and fetches it for a new tag"
    );
    // Without the selector the broken policy is in scope, and fails the run.
    let out = run(cmd(dir.path()).arg("update").arg("--fetch").arg(&root));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("policy default:dev"),
        "{}",
        stderr(&out)
    );
}

fn update_fetch_failure_writes_nothing() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_flux_repos(&reg);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let defs = format!(
        "{}---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: gone, namespace: flux-system}}\nspec: {{image: {host}/team/gone}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: gone, namespace: flux-system}}\nspec: {{imageRepositoryRef: {{name: gone}}, policy: {{semver: {{range: '*'}}}}}}\n",
        flux_definitions(&host)
    );
    let defs_path = write(&root, "flux/images.yaml", &defs);
    let text = fixture("deployment.yaml", &[("host", &host)]);
    let deploy = write(&root, "apps/web.yaml", &text);
    let emitted = dir.path().join("emitted.yaml");
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(&root)
        .arg("--fetch")
        .arg("--emit-policies")
        .arg(&emitted));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("1 of 5 policies could not be fetched; nothing was written"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}:", defs_path.display()))
            && err.contains(&format!(
                ": error: policy flux-system:gone: {host}/team/gone: GET"
            )),
        "{err}"
    );
    assert_eq!(read(&deploy), text, "nothing written");
    assert!(!emitted.exists());

    // A registry that does not answer at all: also exit 1, nothing written.
    let settings = write(
        dir.path(),
        "registries.yaml",
        "retry: {max_retries: 0}\ndefaults: {timeout: 5s}\n",
    );
    let dead = format!("127.0.0.1:{}", harness::free_port());
    let defs = flux_definitions(&dead);
    write(&root, "flux/images.yaml", &defs);
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(&root)
        .arg("--fetch")
        .arg("--registry-config")
        .arg(&settings));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("4 of 4 policies could not be fetched"),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(&deploy), text, "nothing written");
}

fn update_fetch_conflicts_with_supplied_result() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_flux_repos(&reg);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(&root, "flux/images.yaml", &flux_definitions(&host));
    let text = fixture("deployment.yaml", &[("host", &host)]);
    let deploy = write(&root, "apps/web.yaml", &text);
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(&root)
        .arg("--fetch")
        .arg("--policy")
        .arg(format!("flux-system:app={host}/team/app:v0.9.0")));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "policy flux-system:app is given twice with different values: {host}/team/app:v0.9.0 by --policy flux-system:app={host}/team/app:v0.9.0, {host}/team/app:v1.2.0 by fetched for"
        )),
        "{err}"
    );
    assert_eq!(read(&deploy), text);

    // The same value supplied and fetched is no conflict.
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(&root)
        .arg("--fetch")
        .arg("--policy")
        .arg(format!("flux-system:app={host}/team/app:v1.2.0")));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(read(&deploy).contains("team/app:v1.2.0 #"));

    // Without --fetch the definitions are not used.
    fs_err::write(&deploy, &text).unwrap();
    let out = run(cmd(dir.path()).arg("update").arg(&root));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(&deploy), text);
}

fn update_fetch_kubesphere_newest_build_and_digest() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    for (tag, created) in [
        ("main-a", "2024-01-01T00:00:00Z"),
        ("main-b", "2024-03-01T00:00:00Z"),
        ("main-c", "2024-02-01T00:00:00Z"),
        ("dev-x", "2025-01-01T00:00:00Z"),
        ("main-old-dev", "2026-01-01T00:00:00Z"),
    ] {
        reg.push_image(
            "team/nb",
            tag,
            &ImageSpec::new("linux", "amd64", None, created),
        );
    }
    let images = [
        ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
        ImageSpec::new("linux", "arm64", Some("v8"), "2024-01-02T00:00:00Z"),
    ];
    let (stable, _) = reg.push_index("team/idx", "stable", &images, true);
    reg.push_index("team/idx", "1.0.0", &images[..1], false);
    push_tags(&reg, "team/ver", &["0.1.0", "0.1.5", "0.2.0", "1.0.0"]);

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(
        &root,
        "updater.yaml",
        &fixture("kubesphere-updater.yaml", &[("host", &host)]),
    );
    let text = fixture("kubesphere-values.yaml", &[("host", &host)]);
    let file = write(&root, "values.yaml", &text);
    let emitted = dir.path().join("emitted.yaml");
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(&root)
        .arg("--fetch")
        .arg("--emit-policies")
        .arg(&emitted));
    assert!(out.status.success(), "{}", stderr(&out));
    let want = text
        .replace("team/nb:main-a", "team/nb:main-b")
        .replace("team/idx:stable", &format!("team/idx:stable@{stable}"))
        .replace("team/ver:0.1.0", "team/ver:0.1.5")
        .replace("\"0.1.0\"", "\"0.1.5\"");
    assert_eq!(read(&file), want);
    let docs = parse_values(&read(&emitted)).unwrap();
    let nb = docs.iter().find(|d| d["metadata"]["name"] == "nb").unwrap();
    assert_eq!(nb["metadata"]["namespace"], "demo");
    assert_eq!(
        nb["metadata"]["annotations"]["image-update.dev/image-updater"],
        "demo/demo"
    );
    assert_eq!(nb["status"]["latestRef"]["tag"], "main-b");

    // A platform the index does not have: the digest policy fails.
    let updater = read(&root.join("updater.yaml")).replace("linux/arm64", "linux/s390x");
    write(&root, "updater.yaml", &updater);
    let out = run(cmd(dir.path()).arg("update").arg(&root).arg("--fetch"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("tag stable has no image for platform linux/s390x"),
        "{}",
        stderr(&out)
    );
}

/// A fluxcd KubeSphere ImageUpdater whose image has a constraint (`^0.1`) and whose
/// `spec.fluxcd.policy` is another range (`5.0.x`): the policy governs, as the Flux ImagePolicy
/// the image stands for would, and the run says so at the image entry, naming both; with
/// `--fail-on-warnings` nothing is written.
fn update_fetch_kubesphere_policy_over_constraint_is_warned() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_tags(&reg, "team/nginx", &["0.1.0", "0.1.4", "5.0.0", "5.0.3"]);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(
        &root,
        "updater.yaml",
        &format!(
            "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {{name: demo, namespace: demo}}\nspec:\n  kind: fluxcd\n  images:\n  - nginx={host}/team/nginx:^0.1\n  fluxcd:\n    interval: 1m\n    policy:\n      semver:\n        range: 5.0.x\n"
        ),
    );
    let text = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: {host}/team/nginx:0.1.0 # {{\"$imagepolicy\": \"demo:nginx\"}}\n"
    );
    let deploy = write(&root, "web.yaml", &text);
    let warning = format!(
        "updater.yaml:7:5: warning: ImageUpdater demo/demo: image \"nginx={host}/team/nginx:^0.1\": its constraint ^0.1 is not applied: spec.fluxcd.policy (semver range 5.0.x) governs every image of a fluxcd updater"
    );
    let out = run(cmd(dir.path())
        .arg("update")
        .arg(&root)
        .args(["--fetch", "--fail-on-warnings"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(&warning), "{}", stderr(&out));
    assert_eq!(read(&deploy), text);
    let out = run(cmd(dir.path()).arg("update").arg(&root).arg("--fetch"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&warning), "{}", stderr(&out));
    assert_eq!(
        read(&deploy),
        text.replace("nginx:0.1.0 #", "nginx:5.0.3 #")
    );
}

fn update_fetch_htpasswd_with_secret_manifest() {
    let reg = Registry::start(Auth::Htpasswd {
        user: "robot".into(),
        password: "s3cret-pw".into(),
    });
    let host = reg.authority();
    push_tags(&reg, "private/app", &["1.0.0", "1.1.0"]);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let config = format!(
        r#"{{"auths":{{"{host}":{{"auth":"{}"}}}}}}"#,
        base64::engine::general_purpose::STANDARD.encode("robot:s3cret-pw")
    );
    let defs = fixture("secret-definitions.yaml", &[("host", &host)]);
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: regcred, namespace: team}}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {}\n",
        base64::engine::general_purpose::STANDARD.encode(&config)
    );
    write(&root, "flux/images.yaml", &defs);
    let text = "image: x # {\"$imagepolicy\": \"team:private\"}\n";
    let file = write(&root, "apps/a.yaml", text);

    // Without the Secret: the repository names a secret that is not there.
    let out = run(cmd(dir.path()).arg("update").arg(&root).arg("--fetch"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no Secret team/regcred among the definitions"),
        "{}",
        stderr(&out)
    );
    // A Secret for another registry only: no credentials for this one.
    let other = secret.replace(
        &base64::engine::general_purpose::STANDARD.encode(&config),
        &base64::engine::general_purpose::STANDARD.encode(config.replace(&host, "other.example")),
    );
    write(&root, "flux/secret.yaml", &other);
    let out = run(cmd(dir.path()).arg("update").arg(&root).arg("--fetch"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("holds no credentials for {host}")),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(&file), text);

    write(&root, "flux/secret.yaml", &secret);
    let out = run(cmd(dir.path()).arg("update").arg(&root).arg("--fetch"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        read(&file),
        format!("image: {host}/private/app:1.1.0 # {{\"$imagepolicy\": \"team:private\"}}\n")
    );
    assert!(!stderr(&out).contains("s3cret"), "no secret in output");
}

fn policy_command_against_the_registry() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let multi = push_flux_repos(&reg);
    let dir = tempfile::tempdir().unwrap();
    let out = run(cmd(dir.path())
        .args(["policy", &format!("{host}/team/app"), "--semver", "^1"])
        .args(["--output", "json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["tag"], "v1.2.0");
    assert_eq!(json["listed"], 6);
    assert_eq!(json["dropped"]["excluded"], 1, "the .sig tag");
    assert!(json["digest"].is_null());

    let out = run(cmd(dir.path()).args([
        "policy",
        &format!("{host}/team/multi"),
        "--digest",
        "1.1.0",
        "--platform",
        "linux/arm64",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "image:  {host}/team/multi\npolicy: digest of tag \"1.1.0\"\ntag:    1.1.0\ndigest: {multi}\n"
        )),
        "{text}"
    );

    let out =
        run(cmd(dir.path()).args(["policy", &format!("{host}/team/alpha"), "--semver", ">=1"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no tag satisfies semver range \">=1\": 3 tags listed, 3 not semver"),
        "{}",
        stderr(&out)
    );

    let out = run(cmd(dir.path()).args(["policy", &format!("{host}/team/none")]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("cannot list the tags of {host}/team/none")),
        "{}",
        stderr(&out)
    );
}

fn policy_command_offline() {
    let dir = tempfile::tempdir().unwrap();
    let tags = write(
        dir.path(),
        "tags.txt",
        "1.0.0\n1.4.2\n2.0.0-rc.1\nlatest\n1.4.2.sig\n",
    );
    let out = run(cmd(dir.path())
        .args([
            "policy",
            "ghcr.io/acme/app",
            "--semver",
            "^1",
            "--tags-file",
        ])
        .arg(&tags));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .starts_with("image:  ghcr.io/acme/app\npolicy: semver range \"^1\"\ntag:    1.4.2\n"),
        "{}",
        stdout(&out)
    );

    let mut child = cmd(dir.path())
        .args([
            "policy",
            "app",
            "--alphabetical",
            "desc",
            "--output",
            "json",
        ])
        .args(["--tags-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"b\na\nc\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["image"], "app");
    assert_eq!(json["tag"], "a");
    assert_eq!(json["candidates"][0]["tag"], "a");

    let out = run(cmd(dir.path())
        .args(["policy", "app", "--semver", ">=3", "--tags-file"])
        .arg(&tags));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: no tag satisfies semver range \">=3\": 5 tags listed, 1 excluded by ^.*\\.sig$, 1 not semver, 3 outside range\n"
    );

    let out = run(cmd(dir.path())
        .args(["policy", "app", "--semver", "latest", "--tags-file"])
        .arg(&tags));
    assert_eq!(out.status.code(), Some(2), "bad options are usage errors");
}

fn update_fetch_invalid_definitions_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let text = "image: x # {\"$imagepolicy\": \"default:app\"}\n";
    let file = write(&root, "apps/a.yaml", text);
    let broken = write(
        &root,
        "flux/broken.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: [unclosed\n",
    );
    // In the tree, a file that is not YAML is skipped with a warning (it
    // may be a Helm template); named by --policies, it is fatal.
    let out = run(cmd(dir.path()).arg("update").arg("--fetch").arg(&root));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "{}:2:7: warning: mentions the Flux image API but is not valid YAML, so its definitions are skipped: unclosed bracket",
            broken.display()
        )) && stderr(&out).contains("hint: a Helm template or other generated file does not belong to the definitions: list it in a .sourceignore file"),
        "{}",
        stderr(&out)
    );
    let out = run(cmd(dir.path())
        .arg("update")
        .arg("--fetch")
        .arg("--policies")
        .arg(&broken)
        .arg(root.join("apps")));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(&format!(
            "{}:2:7: error: not valid YAML: unclosed bracket",
            broken.display()
        )),
        "{}",
        stderr(&out)
    );
    fs_err::remove_file(&broken).unwrap();

    let defs = write(
        &root,
        "flux/images.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: app}\nspec:\n  imageRepositoryRef: {name: app}\n  policy: {numerical: {order: sideways}}\n",
    );
    let out = run(cmd(dir.path()).arg("update").arg("--fetch").arg(&root));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: invalid policy definitions; nothing was written\n{}:5:23: error: ImagePolicy default/app: ImageRepository default/app is not among the definitions\n",
            defs.display()
        )
    );
    let policies = write(
        dir.path(),
        "repos.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: app}\nspec: {image: ghcr.io/acme/app}\n",
    );
    let out = run(cmd(dir.path())
        .arg("update")
        .arg("--fetch")
        .arg("--policies")
        .arg(&policies)
        .arg(&root));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "{}:6:31: error: ImagePolicy default/app: spec.policy.numerical: invalid order 'sideways'",
            defs.display()
        )),
        "a repository from --policies is found; {}",
        stderr(&out)
    );
    assert_eq!(read(&file), text);
}

/// An ImagePolicy whose semver range does not parse is an error at the
/// range's value (not the object's first line), before the registry is
/// asked; fixed, a marker misspelling its name is told that no policy of
/// that name was defined (fetching), with the defined one as a hint.
fn update_fetch_bad_range_and_misspelt_marker() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_tags(&reg, "team/app", &["1.0.0", "1.2.0"]);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let definitions = |range: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: webapp, namespace: flux-system}}\nspec: {{image: {host}/team/app}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: webapp\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: webapp\n  policy:\n    semver:\n      range: '{range}'\n"
        )
    };
    let defs = write(&root, "flux/images.yaml", &definitions(">=1.0 <<2"));
    let text =
        format!("image: {host}/team/app:1.0.0 # {{\"$imagepolicy\": \"flux-system:webap\"}}\n");
    let deploy = write(&root, "apps/web.yaml", &text);
    let out = run(cmd(dir.path()).arg("update").arg("--fetch").arg(&root));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "{}:16:14: error: ImagePolicy flux-system/webapp: spec.policy.semver.range: invalid semver range '>=1.0 <<2'",
            defs.display()
        )),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("fetched"), "{}", stderr(&out));

    write(&root, "flux/images.yaml", &definitions(">=1.0"));
    let out = run(cmd(dir.path()).arg("update").arg("--fetch").arg(&root));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "{}:1:8: warning: no policy flux-system:webap was defined or supplied, so this marker is left alone\n  hint: did you mean flux-system:webapp?\n",
            deploy.display()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(&deploy), text);
}

/// The KRM function on `input`.
fn function(home: &Path, input: &str) -> Output {
    let mut child = cmd(home)
        .arg("fn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

fn function_fetch_true() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_flux_repos(&reg);
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("resource-list.yaml", &[("host", &host)]);
    let fn_run = |input: &str| function(dir.path(), input);
    let out = fn_run(&input);
    assert!(out.status.success(), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "image: {host}/team/app:v1.2.0 # {{\"$imagepolicy\": \"flux-system:app\"}}"
        )),
        "{text}"
    );

    // Without fetch: nothing changes (the ImagePolicy has no status).
    let out = fn_run(&input.replace("  fetch: true\n", ""));
    assert!(out.status.success());
    assert!(stdout(&out).contains(&format!("image: {host}/team/app:v1.0.0 #")));

    // A failing policy: error results, exit 1, no edit.
    let out = fn_run(&input.replace("team/app}", "team/gone}"));
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("image: {host}/team/app:v1.0.0 #")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "flux/images.yaml: policy flux-system:app: {host}/team/gone: GET"
        )),
        "{text}"
    );

    // ConfigMap spelling.
    let cm = input.replace(
        "  apiVersion: fn.image-update.dev/v1alpha1\n  kind: ImageUpdate\n  metadata: {name: fetch}\n  fetch: true\n",
        "  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: fn-config}\n  data: {fetch: 'true'}\n",
    );
    let out = fn_run(&cm);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains(&format!("image: {host}/team/app:v1.2.0 #")));
}

/// A KubeSphere ImageUpdater as the functionConfig: with the fetch
/// annotation, its own images are definitions fetched like the items'; the
/// same object among the items too is read once.
fn function_image_updater_config_fetches_its_images() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_flux_repos(&reg);
    let dir = tempfile::tempdir().unwrap();
    let updater = format!(
        "apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata:
  name: demo
  namespace: apps
  annotations: {{fn.image-update.dev/fetch: 'true'}}
spec:
  kind: fluxcd
  images: [app={host}/team/app]
  fluxcd:
    interval: 5m
    policy: {{semver: {{range: 1.x}}}}
    sourceRef: {{name: fleet}}
    git:
      commit:
        author: {{email: bot@example.com, name: bot}}
        messageTemplate: '{{{{range .Updated.Images}}}}{{{{println .}}}}{{{{end}}}}'
"
    );
    let indent =
        |text: &str, by: &str| -> String { text.lines().map(|l| format!("{by}{l}\n")).collect() };
    let deployment = format!(
        "- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    namespace: apps
    annotations: {{config.kubernetes.io/path: apps/web.yaml}}
  spec:
    image: {host}/team/app:v1.0.0 # {{\"$imagepolicy\": \"apps:app\"}}
"
    );
    let list = |items: &str, config: &str| {
        format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{items}functionConfig:\n{}",
            indent(config, "  ")
        )
    };
    let fn_run = |input: &str| function(dir.path(), input);
    let out = fn_run(&list(&deployment, &updater));
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("image: {host}/team/app:v1.2.0 # ")),
        "{text}"
    );
    assert!(
        text.contains("which Flux v1 removed"),
        "the template's warning is a result: {text}"
    );
    // The same ImageUpdater among the items: one definition, not two.
    let item = indent(&updater, "  ");
    let both = format!("{deployment}- {}", &item[2..]);
    let out = fn_run(&list(&both, &updater));
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("image: {host}/team/app:v1.2.0 # ")),
        "{text}"
    );
    // Without the annotation the function asks no registry.
    let pure = updater.replace("  annotations: {fn.image-update.dev/fetch: 'true'}\n", "");
    let out = fn_run(&list(&deployment, &pure));
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("image: {host}/team/app:v1.0.0 # ")),
        "{text}"
    );
    // A value the annotation cannot have.
    let bad = updater.replace("'true'", "'yes'");
    let out = fn_run(&list(&deployment, &bad));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("annotation fn.image-update.dev/fetch: expected")
            && stdout(&out).contains("yes"),
        "{}",
        stdout(&out)
    );
}

/// Through kpt itself: `kpt fn eval --exec` runs the binary on the host,
/// with network access (a container image would get `--network none`).
fn kpt_fn_eval_exec_fetch() {
    let kpt = "kpt";
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_flux_repos(&reg);
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    write(
        &pkg,
        "flux/images.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: flux-system}}\nspec: {{image: {host}/team/app}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: flux-system}}\nspec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: 1.x}}}}\n"
        ),
    );
    let web = write(
        &pkg,
        "apps/web.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: {host}/team/app:v1.0.0 # {{\"$imagepolicy\": \"flux-system:app\"}}\n"
        ),
    );
    let config = write(
        dir.path(),
        "fn-config.yaml",
        "apiVersion: fn.image-update.dev/v1alpha1\nkind: ImageUpdate\nmetadata: {name: fetch}\nfetch: true\n",
    );
    let out = Command::new(kpt)
        .args(["fn", "eval", "--exec", BIN])
        .arg(&pkg)
        .arg("--fn-config")
        .arg(&config)
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        read(&web).contains(&format!("image: {host}/team/app:v1.2.0 #")),
        "{}",
        read(&web)
    );
}

/// A Secret manifest with Basic credentials for `host`.
fn docker_secret(namespace: &str, name: &str, host: &str, user: &str, password: &str) -> String {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let config = format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#);
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: {namespace}}}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{config}'\n"
    )
}

fn repository_and_policy(namespace: &str, name: &str, image: &str, extra: &str) -> String {
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  image: {image}\n  interval: 5m\n{extra}---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  imageRepositoryRef: {{name: {name}}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n---\n"
    )
}

/// `insecure: true` on one ImageRepository must not send another
/// repository's credentials over plain HTTP on the same host.
fn insecure_applies_to_its_own_repository_only() {
    let server = harness::FakeServer::start(|r| {
        if r.path() == "/v2/" {
            return harness::Reply::json(200, "{}");
        }
        let name = r
            .path()
            .trim_start_matches("/v2/")
            .trim_end_matches("/tags/list");
        harness::Reply::json(
            200,
            format!(r#"{{"name":"{name}","tags":["1.0.0","1.1.0"]}}"#),
        )
    });
    let host = server.authority();
    let home = tempfile::tempdir().unwrap();
    let tree = tempfile::tempdir().unwrap();
    write(
        tree.path(),
        "flux/images.yaml",
        &format!(
            "{}{}{}",
            repository_and_policy(
                "ops",
                "public",
                &format!("{host}/team/public"),
                "  insecure: true\n"
            ),
            repository_and_policy(
                "ops",
                "private",
                &format!("{host}/team/private"),
                "  secretRef: {name: regcred}\n"
            ),
            docker_secret("ops", "regcred", &host, "priv", "TOPSECRET"),
        ),
    );
    let deploy = write(
        tree.path(),
        "apps/deploy.yaml",
        &format!(
            "kind: Pod\nimages:\n- {host}/team/public:1.0.0 # {{\"$imagepolicy\": \"ops:public\"}}\n- {host}/team/private:1.0.0 # {{\"$imagepolicy\": \"ops:private\"}}\n"
        ),
    );
    let before = read(&deploy);
    let settings = write(
        home.path(),
        "registries.yaml",
        &format!("registries:\n  {host}:\n    insecure: false\nretry:\n  max_retries: 0\n"),
    );
    let out = run(cmd(home.path())
        .args(["update", "--fetch", "--registry-config"])
        .arg(&settings)
        .arg(tree.path()));
    // The private repository is reached over HTTPS, which this plain-HTTP
    // server cannot speak, so its policy fails and nothing is written.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("ops:private"), "{}", stderr(&out));
    assert_eq!(read(&deploy), before);
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.path() == "/v2/team/public/tags/list"),
        "the insecure repository is listed over HTTP"
    );
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization").is_none() && !r.path().contains("private")),
        "no credentials and no private request over plain HTTP: {:?}",
        requests
            .iter()
            .map(|r| (
                r.path().to_owned(),
                r.header("authorization").map(str::to_owned)
            ))
            .collect::<Vec<_>>()
    );
}

/// A tag list fetched with a Secret's credentials is never served from the
/// cache to a policy that does not name that Secret.
fn cached_tag_lists_stay_with_their_credentials() {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("priv:TOPSECRET")
    );
    let server = harness::FakeServer::start(move |r| {
        if r.header("authorization") != Some(expected.as_str()) {
            return harness::Reply::status(401)
                .with_header("WWW-Authenticate", "Basic realm=\"test\"");
        }
        if r.path() == "/v2/" {
            return harness::Reply::json(200, "{}");
        }
        harness::Reply::json(200, r#"{"name":"team/private","tags":["1.0.0","1.1.0"]}"#)
    });
    let host = server.authority();
    let home = tempfile::tempdir().unwrap();
    let tree = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write(
        tree.path(),
        "flux/images.yaml",
        &format!(
            "{}{}{}",
            repository_and_policy(
                "ns",
                "authed",
                &format!("{host}/team/private"),
                "  secretRef: {name: regcred}\n"
            ),
            repository_and_policy("other", "anon", &format!("{host}/team/private"), ""),
            docker_secret("ns", "regcred", &host, "priv", "TOPSECRET"),
        ),
    );
    write(
        tree.path(),
        "apps/deploy.yaml",
        &format!(
            "kind: Pod\nimage: {host}/team/private:1.0.0 # {{\"$imagepolicy\": \"ns:authed\"}}\n"
        ),
    );
    let settings = write(home.path(), "registries.yaml", "retry:\n  max_retries: 0\n");
    for round in 1..=2 {
        let out = run(cmd(home.path())
            .args(["update", "--fetch", "--dry-run", "--registry-config"])
            .arg(&settings)
            .arg("--cache-dir")
            .arg(cache.path())
            .arg(tree.path()));
        assert_eq!(
            out.status.code(),
            Some(1),
            "round {round}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("other:anon"),
            "round {round}: {}",
            stderr(&out)
        );
    }
}

/// A fetch that takes more than a second shows progress on stderr: plain
/// lines when stderr is not a terminal, and nothing with `-q`.
fn slow_fetch_shows_progress() {
    let server = harness::FakeServer::start(|req| match req.path() {
        "/v2/" => harness::Reply::json(200, "{}"),
        p if p.ends_with("/tags/list") => {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            harness::Reply::json(200, r#"{"name":"team/app","tags":["v1.0.0","v1.2.0"]}"#)
        }
        _ => harness::Reply::status(404),
    });
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(
        &root,
        "flux/images.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: flux-system}}\nspec: {{image: {}/team/app}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: flux-system}}\nspec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n",
            server.authority()
        ),
    );
    write(
        &root,
        "apps/a.yaml",
        "image: x:v1.0.0 # {\"$imagepolicy\": \"flux-system:app:tag\"}\n",
    );
    let out = run(cmd(dir.path())
        .args(["update", "--fetch", "--dry-run"])
        .arg(&root));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("fetching: 0/1 repository, 0 tags listed\n")
            && err.contains("fetched: 1/1 repository, 2 tags listed\n"),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "no escape codes in a log: {err}");
    let out = run(cmd(dir.path())
        .args(["update", "--fetch", "--dry-run", "-q"])
        .arg(&root));
    assert_eq!(stderr(&out), "", "nothing with -q");
}

/// A file named on the command line that the tree holds too is read once
/// (the same file by any path: `--policies` spelt differently, twice, through
/// a symlink; a KubeSphere ImageUpdater or a Flux automation holding
/// definitions given as `--automation`); a copy elsewhere that differs is an
/// error naming both places and the field, and nothing is written.
fn named_files_in_the_tree_are_read_once() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    push_tags(&reg, "acme/web", &["1.0.0", "1.2.0"]);
    let images = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {{name: web, namespace: flux-system}}
spec: {{image: {host}/acme/web, interval: 5m}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {{name: web, namespace: flux-system}}
spec:
  imageRepositoryRef: {{name: web}}
  policy: {{semver: {{range: '>=1.0.0'}}}}
"
    );
    let automation = "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit:
      author: {name: bot, email: bot@example.com}
  update: {path: ./apps, strategy: Setters}
";
    let updater = format!(
        "apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {{name: web, namespace: flux-system}}
spec:
  kind: fluxcd
  images: [web={host}/acme/web]
  fluxcd:
    interval: 5m
    policy: {{semver: {{range: '>=1.0.0'}}}}
    sourceRef: {{name: fleet}}
    git:
      commit:
        author: {{email: bot@example.com, name: bot}}
"
    );
    let web = |tag: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: {host}/acme/web:{tag} # {{\"$imagepolicy\": \"flux-system:web\"}}\n"
        )
    };
    let automation_with_images = format!("{automation}---\n{images}");
    let cases: [(&str, &str, &str, &[&str]); 6] = [
        (
            "one --policies",
            "flux/images.yaml",
            &images,
            &["--policies", "repo/flux/images.yaml"],
        ),
        (
            "--policies twice, spelt differently",
            "flux/images.yaml",
            &images,
            &[
                "--policies",
                "./repo/flux/images.yaml",
                "--policies",
                "repo/flux/../flux/images.yaml",
            ],
        ),
        (
            "--policies through a symlink",
            "flux/images.yaml",
            &images,
            &["--policies", "link.yaml"],
        ),
        (
            "--policies through a hard link",
            "flux/images.yaml",
            &images,
            &["--policies", "hard.yaml"],
        ),
        (
            "--automation: a KubeSphere ImageUpdater",
            "flux/updater.yaml",
            &updater,
            &["--automation", "repo/flux/updater.yaml"],
        ),
        (
            "--automation and --policies: a Flux automation with definitions",
            "flux/automation.yaml",
            &automation_with_images,
            &[
                "--automation",
                "repo/flux/automation.yaml",
                "--policies",
                "repo/flux/automation.yaml",
            ],
        ),
    ];
    for (case, file, text, flags) in cases {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let named = write(&root, file, text);
        let deploy = write(&root, "apps/web.yaml", &web("1.0.0"));
        std::os::unix::fs::symlink(&named, dir.path().join("link.yaml")).unwrap();
        fs_err::hard_link(&named, dir.path().join("hard.yaml")).unwrap();
        let out = run(cmd(dir.path())
            .current_dir(dir.path())
            .args(["update", "repo", "--fetch"])
            .args(flags));
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        assert_eq!(read(&deploy), web("1.2.0"), "{case}");
        assert!(
            !stderr(&out).contains("defined twice"),
            "{case}: {}",
            stderr(&out)
        );
    }

    // A copy outside the tree that differs: both places and the field, nothing written.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(&root, "flux/images.yaml", &images);
    let deploy = write(&root, "apps/web.yaml", &web("1.0.0"));
    let with_copy = |copy: &str| {
        write(dir.path(), "other.yaml", copy);
        run(cmd(dir.path()).current_dir(dir.path()).args([
            "update",
            "repo",
            "--fetch",
            "--policies",
            "other.yaml",
        ]))
    };
    let out = with_copy(&images.replace("'>=1.0.0'", "'<1.2.0'"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "repo/flux/images.yaml:11:28: error: ImagePolicy flux-system/web is defined twice, and the definitions differ: /spec/policy/semver/range is \"<1.2.0\" at other.yaml:11:28 but \">=1.0.0\" here"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(&deploy), web("1.0.0"));
    // The same copy: one object.
    let out = with_copy(&images);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(read(&deploy), web("1.2.0"));
}

fn main() {
    testkit::run(vec![
        trial("slow_fetch_shows_progress", &[], slow_fetch_shows_progress),
        trial(
            "update_fetch_flux_end_to_end",
            &["docker-registry"],
            update_fetch_flux_end_to_end,
        ),
        trial(
            "update_fetch_if_not_present_and_selector",
            &["docker-registry"],
            update_fetch_if_not_present_and_selector,
        ),
        trial(
            "update_fetch_failure_writes_nothing",
            &["docker-registry"],
            update_fetch_failure_writes_nothing,
        ),
        trial(
            "update_fetch_conflicts_with_supplied_result",
            &["docker-registry"],
            update_fetch_conflicts_with_supplied_result,
        ),
        trial(
            "update_fetch_kubesphere_newest_build_and_digest",
            &["docker-registry"],
            update_fetch_kubesphere_newest_build_and_digest,
        ),
        trial(
            "update_fetch_kubesphere_policy_over_constraint_is_warned",
            &["docker-registry"],
            update_fetch_kubesphere_policy_over_constraint_is_warned,
        ),
        trial(
            "update_fetch_htpasswd_with_secret_manifest",
            &["docker-registry"],
            update_fetch_htpasswd_with_secret_manifest,
        ),
        trial(
            "policy_command_against_the_registry",
            &["docker-registry"],
            policy_command_against_the_registry,
        ),
        trial("policy_command_offline", &[], policy_command_offline),
        trial(
            "named_files_in_the_tree_are_read_once",
            &["docker-registry"],
            named_files_in_the_tree_are_read_once,
        ),
        trial(
            "update_fetch_bad_range_and_misspelt_marker",
            &["docker-registry"],
            update_fetch_bad_range_and_misspelt_marker,
        ),
        trial(
            "function_image_updater_config_fetches_its_images",
            &["docker-registry"],
            function_image_updater_config_fetches_its_images,
        ),
        trial(
            "update_fetch_invalid_definitions_name_the_file",
            &[],
            update_fetch_invalid_definitions_name_the_file,
        ),
        trial(
            "function_fetch_true",
            &["docker-registry"],
            function_fetch_true,
        ),
        trial(
            "kpt_fn_eval_exec_fetch",
            &["docker-registry", "kpt"],
            kpt_fn_eval_exec_fetch,
        ),
        trial(
            "insecure_applies_to_its_own_repository_only",
            &[],
            insecure_applies_to_its_own_repository_only,
        ),
        trial(
            "cached_tag_lists_stay_with_their_credentials",
            &[],
            cached_tag_lists_stay_with_their_credentials,
        ),
    ]);
}
