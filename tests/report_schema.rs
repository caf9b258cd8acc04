//! `schema/report.schema.json` against every report the project produces:
//! each golden `testdata/cases/*/report.json`, and reports written by the
//! binary on each of its paths (a written run, `--dry-run`, `--check`,
//! `--output-dir`, a single file, `--policies` with `--selector`,
//! `--automation`, nothing to do, and `--fetch` against Debian's
//! `docker-registry`), as JSON and as YAML, to a file and to stdout. The
//! schema itself is checked against the 2020-12 meta-schema, and malformed
//! reports must fail it, so the schema cannot pass by accepting anything.
//!
//! The registry trial is ignored, with the reason, when `docker-registry`
//! is missing, and fails then when `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use image_update_testkit::registry::{Auth, ImageSpec, Registry};
use image_update_testkit::{self as testkit, trial, trial_with};
use libtest_mimic::{Failed, Trial};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn schema() -> Value {
    serde_json::from_str(&fs_err::read_to_string(root().join("schema/report.schema.json")).unwrap())
        .unwrap()
}

/// Every way `instance` breaks the schema, one per line with its place.
fn violations(instance: &Value) -> Vec<String> {
    let schema = schema();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn check(what: &str, instance: &Value) -> Result<(), Failed> {
    let errors = violations(instance);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{what} does not match the schema:\n{}", errors.join("\n")).into())
    }
}

fn schema_is_valid_2020_12() {
    let schema = schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    if let Err(e) = jsonschema::meta::validate(&schema) {
        panic!("the schema is not a valid JSON Schema: {e}");
    }
    // The version it pins is the one the binary writes.
    assert_eq!(
        schema["properties"]["version"]["const"],
        image_update::api::report::REPORT_VERSION
    );
}

/// One trial per golden case that has a report (cases that fail before
/// writing one have an empty `report.json`).
fn fixture_trials() -> Vec<Trial> {
    let mut dirs: Vec<PathBuf> = fs_err::read_dir(root().join("testdata/cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("report.json").is_file())
        .collect();
    dirs.sort();
    let with_reports: Vec<PathBuf> = dirs
        .into_iter()
        .filter(|d| {
            !fs_err::read_to_string(d.join("report.json"))
                .unwrap()
                .trim()
                .is_empty()
        })
        .collect();
    assert!(
        with_reports.len() >= 20,
        "only {} golden reports found",
        with_reports.len()
    );
    with_reports
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            Trial::test(format!("golden::{name}"), move || {
                let text = fs_err::read_to_string(dir.join("report.json"))?;
                check(
                    &format!("{name}/report.json"),
                    &serde_json::from_str(&text)?,
                )
            })
        })
        .collect()
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, text).unwrap();
    path
}

fn run(args: &[&str], home: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Reads a report in either rendering; YAML is read back as the
/// project reads YAML (the `message` command does the same).
fn parse(text: &str, yaml: bool) -> Value {
    if yaml {
        let mut docs = image_update::api::yaml::parse_values(text).unwrap();
        assert_eq!(docs.len(), 1, "{text}");
        docs.remove(0)
    } else {
        serde_json::from_str(text).unwrap()
    }
}

const DEPLOY: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  template:
    spec:
      containers:
      - name: web
        image: ghcr.io/acme/web:1.0 # {"$imagepolicy": "apps:web"}
      - name: "sidecar.v2"
        image: ghcr.io/acme/side:true # {"$imagepolicy": "apps:side"}
      - name: db
        image: ghcr.io/acme/db:1 # {"$imagepolicy": "apps:db"}
"#;

const VALUES: &str = r#"image:
  repository: ghcr.io/acme/web # {"$imagepolicy": "apps:web:name"}
  tag: "1.0" # {"$imagepolicy": "apps:web:tag"}
  digest: "" # {"$imagepolicy": "apps:web:digest"}
"odd key":
  with.dots: ghcr.io/acme/side:true # {"$imagepolicy": "apps:side"}
"#;

const POLICIES: &str = r"apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: web, namespace: apps, labels: {env: prod}}
status:
  latestRef:
    name: ghcr.io/acme/web
    tag: '1.10'
    digest: sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: side, namespace: apps, labels: {env: staging}}
status:
  latestRef: {name: ghcr.io/acme/side, tag: 'false'}
";

const AUTOMATION: &str = r"apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: prod, namespace: apps}
spec:
  policySelector: {matchLabels: {env: prod}}
  update: {strategy: Setters, path: ./deploy}
";

/// A tree with markers of every kind, plus the policies and automation.
fn tree(dir: &Path) -> PathBuf {
    let root = dir.join("repo");
    write(&root, "deploy/web.yaml", DEPLOY);
    write(&root, "helm/values.yaml", VALUES);
    write(&root, "plain/none.yaml", "kind: ConfigMap\ndata: {a: b}\n");
    write(dir, "policies.yaml", POLICIES);
    write(dir, "automation.yaml", AUTOMATION);
    root
}

/// One run of `update` whose report is checked.
struct CliRun {
    name: &'static str,
    /// What to update, relative to the tree ("" for all of it).
    path: &'static str,
    /// Further arguments; `{dir}` is the directory above the tree.
    args: &'static [&'static str],
    /// Give the `--policy` values of [`SUPPLIED`].
    supplied: bool,
    /// Where the report goes: stdout (`--report -`) or a file.
    to_stdout: bool,
    yaml: bool,
    exit: i32,
    /// Whether the report must name changes (so the run did something).
    changes: bool,
}

const SUPPLIED: [&str; 4] = [
    "--policy",
    "apps:web=ghcr.io/acme/web:1.10@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "--policy",
    "apps:side=ghcr.io/acme/side:false",
];

const CLI_RUNS: [CliRun; 9] = [
    CliRun {
        name: "written",
        path: "",
        args: &[],
        supplied: true,
        to_stdout: false,
        yaml: false,
        exit: 0,
        changes: true,
    },
    CliRun {
        name: "written-yaml",
        path: "",
        args: &[],
        supplied: true,
        to_stdout: false,
        yaml: true,
        exit: 0,
        changes: true,
    },
    CliRun {
        name: "dry-run-stdout",
        path: "",
        args: &["--dry-run"],
        supplied: true,
        to_stdout: true,
        yaml: false,
        exit: 0,
        changes: true,
    },
    CliRun {
        name: "check-stdout-yaml",
        path: "",
        args: &["--check"],
        supplied: true,
        to_stdout: true,
        yaml: true,
        exit: 3,
        changes: true,
    },
    CliRun {
        name: "output-dir",
        path: "",
        args: &["--output-dir", "{dir}/out"],
        supplied: true,
        to_stdout: false,
        yaml: false,
        exit: 0,
        changes: true,
    },
    CliRun {
        name: "single-file-yaml",
        path: "helm/values.yaml",
        args: &["--dry-run"],
        supplied: true,
        to_stdout: false,
        yaml: true,
        exit: 0,
        changes: true,
    },
    CliRun {
        name: "policies-selector",
        path: "",
        args: &[
            "--policies",
            "{dir}/policies.yaml",
            "--selector",
            "env in (prod, staging)",
            "--dry-run",
        ],
        supplied: false,
        to_stdout: false,
        yaml: false,
        exit: 0,
        changes: true,
    },
    CliRun {
        name: "automation",
        path: "",
        args: &[
            "--policies",
            "{dir}/policies.yaml",
            "--automation",
            "{dir}/automation.yaml",
            "--dry-run",
        ],
        supplied: false,
        to_stdout: true,
        yaml: false,
        exit: 0,
        changes: true,
    },
    CliRun {
        name: "nothing-to-do",
        path: "plain",
        args: &["--dry-run"],
        supplied: true,
        to_stdout: false,
        yaml: false,
        exit: 0,
        changes: false,
    },
];

fn run_cli(p: &CliRun) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let root = tree(dir.path());
    let mut args: Vec<String> = vec!["update".into(), root.join(p.path).display().to_string()];
    if p.supplied {
        args.extend(SUPPLIED.iter().map(|a| (*a).to_owned()));
    }
    args.extend(
        p.args
            .iter()
            .map(|a| a.replace("{dir}", &dir.path().display().to_string())),
    );
    let report_file = dir.path().join("report.out");
    args.push("--report".into());
    args.push(if p.to_stdout {
        "-".into()
    } else {
        report_file.display().to_string()
    });
    if p.yaml {
        args.extend(["--report-format".into(), "yaml".into()]);
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&argv, dir.path());
    if out.status.code() != Some(p.exit) {
        return Err(format!(
            "{}: exit {:?}, expected {}\n{}",
            p.name,
            out.status.code(),
            p.exit,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = if p.to_stdout {
        String::from_utf8(out.stdout)?
    } else {
        fs_err::read_to_string(&report_file)?
    };
    let report = parse(&text, p.yaml);
    check(&format!("the report of {}", p.name), &report)?;
    let changed = report["fileChanges"]
        .as_object()
        .is_some_and(|m| !m.is_empty());
    if changed != p.changes {
        return Err(format!("{}: changes reported: {changed}\n{text}", p.name).into());
    }
    Ok(())
}

fn cli_trials() -> Vec<Trial> {
    CLI_RUNS
        .iter()
        .map(|p| Trial::test(format!("cli::{}", p.name), move || run_cli(p)))
        .collect()
}

/// `update --fetch` resolving Flux definitions against a real registry.
fn cli_fetch_report() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let image = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    let (manifest, _) = reg.push_image("team/app", "1.0.0", &image);
    reg.push_tags(
        "team/app",
        image.media_type(),
        &manifest,
        &["1.2.0".into(), "2.0.0".into(), "latest".into()],
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    write(
        &root,
        "flux/app.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: apps}}\nspec: {{image: {host}/team/app}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: apps}}\nspec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0 <2.0'}}}}\n  digestReflectionPolicy: Always\n"
        ),
    );
    write(
        &root,
        "deploy.yaml",
        &format!("image: {host}/team/app:1.0.0 # {{\"$imagepolicy\": \"apps:app\"}}\n"),
    );
    // A second policy the supply-chain gate checks (a settings rule for its
    // repository): signed by a key, old enough by the builder's time; the
    // newer 1.3.0 is unsigned.
    let key = testkit::sigstore::TestKey::p256();
    let (_, signed) = reg.push_image("team/gated", "1.2.0", &image);
    reg.push_image(
        "team/gated",
        "1.3.0",
        &ImageSpec::new("linux", "amd64", None, "2024-02-01T00:00:00Z"),
    );
    reg.push_sig_tag(
        "team/gated",
        &signed,
        &[testkit::sigstore::legacy_key_layer(&signed, &key)],
    );
    write(dir.path(), "cosign.pub", &key.public_pem());
    let settings = write(
        dir.path(),
        "registries.yaml",
        &format!(
            "supply_chain:\n  rules:\n  - repositories: ['{host}/team/gated']\n    verify:\n      keys: [{{path: cosign.pub}}]\n"
        ),
    );
    write(
        &root,
        "flux/gated.yaml",
        &format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: gated, namespace: apps}}\nspec: {{image: {host}/team/gated}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: gated\n  namespace: apps\n  annotations: {{image-update.dev/min-age: 1d, image-update.dev/age-source: builder}}\nspec:\n  imageRepositoryRef: {{name: gated}}\n  policy: {{semver: {{range: '>=1.0'}}}}\n"
        ),
    );
    write(
        &root,
        "gated.yaml",
        &format!("image: {host}/team/gated:1.0.0 # {{\"$imagepolicy\": \"apps:gated\"}}\n"),
    );
    for yaml in [false, true] {
        let mut args = vec![
            "update".to_owned(),
            root.display().to_string(),
            "--fetch".into(),
            "--dry-run".into(),
            "--report".into(),
            "-".into(),
            "--registry-config".into(),
            settings.display().to_string(),
        ];
        if yaml {
            args.extend(["--report-format".into(), "yaml".into()]);
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&argv, dir.path());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = parse(&String::from_utf8(out.stdout).unwrap(), yaml);
        check("the --fetch report", &report).unwrap();
        let observed = &report["observedPolicies"]["apps:app"];
        assert_eq!(observed["tag"], "1.2.0", "{report}");
        assert!(
            observed["digest"].as_str().unwrap().starts_with("sha256:"),
            "{report}"
        );
        let gated = &report["supplyChain"]["apps:gated"];
        assert_eq!(gated["image"], format!("{host}/team/gated:1.2.0@{signed}"));
        assert_eq!(gated["signedBy"][0]["name"], "cosign.pub", "{report}");
        assert_eq!(gated["released"]["builderControlled"], true, "{report}");
        assert_eq!(gated["skipped"][0]["tag"], "1.3.0", "{report}");
        assert_eq!(gated["skipped"][0]["kind"], "unsigned", "{report}");
        // The gate's findings are warnings too, at the policy's definition.
        let warnings = report["warnings"].as_array().unwrap();
        assert!(
            warnings.iter().any(|w| w["message"]
                .as_str()
                .unwrap()
                .contains("policy apps:gated: skipped")
                && w["file"].as_str().unwrap().ends_with("gated.yaml")
                && w["line"].is_u64()),
            "{report}"
        );
    }
}

/// `update --fetch --provenance`: each change's provenance in the report,
/// against a golden (`testdata/provenance/report.json`, the registry's
/// address and the key's fingerprint masked), which the request body's
/// golden in `crates/forge` is rendered from. The new image is a signed
/// index whose descriptor names the revision, the old one has labels only,
/// and another field's old digest is gone from the registry.
fn cli_fetch_provenance_report() {
    const SOURCE: &str = "org.opencontainers.image.source";
    const REVISION: &str = "org.opencontainers.image.revision";
    const VERSION: &str = "org.opencontainers.image.version";
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let old = ImageSpec::new("linux", "amd64", None, "2026-01-01T00:00:00Z").labels(&[
        (SOURCE, "https://github.com/acme/web.git"),
        (REVISION, "3f2a1b0c4d5e6f708192a3b4c5d6e7f8091a2b3c"),
        (VERSION, "1.4.2"),
    ]);
    reg.push_image("acme/web", "1.4.2", &old);
    let amd64 = ImageSpec::new("linux", "amd64", None, "2026-02-01T00:00:00Z")
        .labels(&[(SOURCE, "https://github.com/acme/web")])
        .descriptor_annotations(&[(REVISION, "9c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5")]);
    let arm64 = ImageSpec::new("linux", "arm64", None, "2026-02-01T00:00:00Z");
    let (index, _) =
        reg.push_annotated_index("acme/web", "1.5.0", &[amd64, arm64], &[(VERSION, "1.5.0")]);
    let key = testkit::sigstore::TestKey::p256();
    reg.push_sig_tag(
        "acme/web",
        &index,
        &[testkit::sigstore::legacy_key_layer(&index, &key)],
    );
    reg.push_image(
        "acme/api",
        "2.0.0",
        &ImageSpec::new("linux", "amd64", None, "2026-01-01T00:00:00Z").labels(&[]),
    );
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("repo");
    let policy = |name: &str, range: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: {name}, namespace: apps}}\nspec: {{image: {host}/acme/{name}}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  imageRepositoryRef: {{name: {name}}}\n  policy: {{semver: {{range: '{range}'}}}}\n  digestReflectionPolicy: Always\n"
        )
    };
    write(&tree, "flux/web.yaml", &policy("web", ">=1.0"));
    write(&tree, "flux/api.yaml", &policy("api", ">=1.0"));
    let gone = format!("sha256:{}", "0".repeat(64));
    write(
        &tree,
        "deploy.yaml",
        &format!(
            "web: {host}/acme/web:1.4.2 # {{\"$imagepolicy\": \"apps:web\"}}\napi: {host}/acme/api:1.0.0@{gone} # {{\"$imagepolicy\": \"apps:api\"}}\n"
        ),
    );
    write(dir.path(), "cosign.pub", &key.public_pem());
    let settings = write(
        dir.path(),
        "registries.yaml",
        &format!(
            "supply_chain:\n  rules:\n  - repositories: ['{host}/acme/web']\n    verify:\n      keys: [{{path: cosign.pub}}]\n"
        ),
    );
    let out = run(
        &[
            "update",
            &tree.display().to_string(),
            "--fetch",
            "--provenance",
            "--dry-run",
            "--report",
            "-",
            "--registry-config",
            &settings.display().to_string(),
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let report = parse(&text, false);
    check("the --provenance report", &report).unwrap();
    let fingerprint = report["supplyChain"]["apps:web"]["signedBy"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_owned();
    let masked = text
        .replace(&host, "registry.test")
        .replace(&fingerprint, "sha256:FINGERPRINT");
    // `policy IMAGE --provenance`: the chosen image's side, its commit, the gate's signer.
    let out = run(
        &[
            "policy",
            &format!("{host}/acme/web"),
            "--semver",
            ">=1.0",
            "--provenance",
            "--output",
            "json",
            "--registry-config",
            &settings.display().to_string(),
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let policy: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &policy["provenance"];
    assert_eq!(
        p["new"]["revision"], "9c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5",
        "{p}"
    );
    assert_eq!(
        p["commitURL"],
        "https://github.com/acme/web/commit/9c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5",
        "{p}"
    );
    assert_eq!(
        (&p["compareURL"], &p["signer"]["name"]),
        (&json!(""), &json!("cosign.pub")),
        "{p}"
    );
    let golden = root().join("testdata/provenance/report.json");
    if testkit::golden::updating().unwrap() {
        testkit::golden::write(&golden, &masked).unwrap();
        return;
    }
    let want = fs_err::read_to_string(&golden).unwrap();
    assert_eq!(
        masked,
        want,
        "UPDATE_EXPECT=1 rewrites {}",
        golden.display()
    );
}

/// Reports that break the format must fail the schema, each for the
/// reason it was broken.
fn schema_rejects_malformed_reports() {
    let valid = json!({
        "version": "image-update.dev/v1",
        "fileChanges": {
            "apps/web.yaml": [{
                "object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "apps"},
                "changes": [{"oldValue": "a:1", "newValue": "a:2", "setter": "apps:web", "line": 3, "column": 12, "fieldPath": "spec.image"}]
            }]
        },
        "observedPolicies": {"apps:web": {"name": "a", "tag": "2", "digest": ""}},
        "warnings": [{"file": "apps/web.yaml", "line": 4, "column": 1, "message": "no policy apps:db was supplied"}],
        "supplyChain": {"apps:web": {
            "image": "a:2@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
            "signedBy": [
                {"kind": "key", "name": "cosign.pub", "fingerprint": "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
                {"kind": "identity", "subject": "https://github.com/acme/web/.github/workflows/r.yml@refs/heads/main", "issuer": "https://token.actions.githubusercontent.com", "logIndex": 7, "integratedTime": "2026-01-01T00:00:00Z"}
            ],
            "released": {"at": "2026-01-01T00:00:00Z", "source": "registry push", "builderControlled": false},
            "alias": "latest",
            "aliasDigest": "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
            "skipped": [{"tag": "3", "kind": "unsigned", "reason": "no signature found"}]
        }}
    });
    assert!(violations(&valid).is_empty(), "{:?}", violations(&valid));
    let broken: Vec<(&str, &str, Value)> = vec![
        ("no version", "/version", json!(null)),
        ("another version", "/version", json!("image-update.dev/v2")),
        (
            "line 0",
            "/fileChanges/apps~1web.yaml/0/changes/0/line",
            json!(0),
        ),
        ("column as text", "/warnings/0/column", json!("1")),
        (
            "a setter that is not NS:NAME",
            "/fileChanges/apps~1web.yaml/0/changes/0/setter",
            json!("web"),
        ),
        (
            "an unknown setter field",
            "/fileChanges/apps~1web.yaml/0/changes/0/setter",
            json!("apps:web:repo"),
        ),
        (
            "an empty change list",
            "/fileChanges/apps~1web.yaml/0/changes",
            json!([]),
        ),
        (
            "a tag with a colon",
            "/observedPolicies/apps:web/tag",
            json!("a:b"),
        ),
        (
            "a digest without algorithm",
            "/observedPolicies/apps:web/digest",
            json!("abc"),
        ),
        ("an unknown field", "/extra", json!(true)),
        (
            "an unknown change field",
            "/fileChanges/apps~1web.yaml/0/changes/0/path",
            json!("x"),
        ),
        (
            "a missing object field",
            "/fileChanges/apps~1web.yaml/0/object/kind",
            json!(null),
        ),
        (
            "a supply-chain entry without its image",
            "/supplyChain/apps:web/image",
            json!(null),
        ),
        (
            "a key without its fingerprint",
            "/supplyChain/apps:web/signedBy/0/fingerprint",
            json!(null),
        ),
        (
            "an identity without its log entry",
            "/supplyChain/apps:web/signedBy/1/logIndex",
            json!(null),
        ),
        (
            "an unknown signer kind",
            "/supplyChain/apps:web/signedBy/0/kind",
            json!("gpg"),
        ),
        (
            "an unknown skip",
            "/supplyChain/apps:web/skipped/0/kind",
            json!("ugly"),
        ),
        (
            "an alias without its digest",
            "/supplyChain/apps:web/aliasDigest",
            json!(null),
        ),
        (
            "a release time without its source",
            "/supplyChain/apps:web/released/source",
            json!(null),
        ),
    ];
    for (why, pointer, value) in broken {
        let mut report = valid.clone();
        set(&mut report, pointer, value);
        assert!(
            !violations(&report).is_empty(),
            "accepted with {why}: {report}"
        );
    }
    // Paths: relative, never climbing out.
    for key in ["/etc/passwd", "../up.yaml", "a/../../b.yaml", ""] {
        let mut report = valid.clone();
        let changes = report["fileChanges"]["apps/web.yaml"].take();
        report["fileChanges"] = json!({ key: changes });
        assert!(!violations(&report).is_empty(), "accepted the path {key:?}");
    }
}

/// Sets (or, with `null`, removes) the value at a JSON pointer, creating
/// the last key when absent.
fn set(value: &mut Value, pointer: &str, new: Value) {
    let (parent, last) = pointer.rsplit_once('/').unwrap();
    let last = last.replace("~1", "/").replace("~0", "~");
    let target = value.pointer_mut(parent).unwrap();
    match target {
        Value::Object(map) => {
            if new.is_null() {
                map.remove(&last);
            } else {
                map.insert(last, new);
            }
        }
        Value::Array(items) => items[last.parse::<usize>().unwrap()] = new,
        _ => panic!("{pointer}"),
    }
}

fn main() {
    let mut trials = vec![
        trial("schema_is_valid_2020_12", &[], schema_is_valid_2020_12),
        trial(
            "schema_rejects_malformed_reports",
            &[],
            schema_rejects_malformed_reports,
        ),
        trial_with("cli::fetch", &["docker-registry"], || {
            cli_fetch_report();
            Ok(())
        }),
        trial(
            "cli::fetch_provenance",
            &["docker-registry"],
            cli_fetch_provenance_report,
        ),
    ];
    trials.extend(fixture_trials());
    trials.extend(cli_trials());
    testkit::run(trials);
}
