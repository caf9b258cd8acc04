//! The front ends tell the same warnings: `update` on stderr and in its
//! report (`--report -`), and the Action in its annotations and its
//! `changes` output, for one tree whose run raises warnings from the policy
//! files, the walk and the markers. (`src/render/tests.rs` checks every
//! kind of warning the operation raises against every renderer.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

/// A workspace whose tree `repo` raises a warning about a policy file
/// (`not-policies.yaml`), a file that is not YAML, an unknown policy and a
/// look-alike marker.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let marker = |p: &str| format!("# {{\"$imagepolicy\": \"{p}\"}}");
    write(
        ws.path(),
        "repo/apps/web.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  a: nginx:1.25.0 {}\n  b: nginx:1.25.0 {}\n  c: x # {{\"$imagePolicy\": \"ns:p\"}}\n",
            marker("ns:p"),
            marker("ns:nope"),
        ),
    );
    write(
        ws.path(),
        "repo/apps/broken.yaml",
        &format!("a: [\nb: x {}\n", marker("ns:p")),
    );
    write(
        ws.path(),
        "not-policies.yaml",
        "apiVersion: v1\nkind: ConfigMap\n",
    );
    ws
}

/// `(message, line)` of each warning; the message with its hint, as the
/// report and the annotations word it.
type Seen = BTreeSet<(String, Option<u64>)>;

fn from_report(report: &Value) -> Seen {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            let mut message = w["message"].as_str().unwrap().to_owned();
            if let Some(hint) = w["hint"].as_str() {
                message.push_str(&format!("\nhint: {hint}"));
            }
            (message, w["line"].as_u64())
        })
        .collect()
}

fn from_stderr(stderr: &str) -> Seen {
    let mut seen = Vec::<(String, Option<u64>)>::new();
    for line in stderr.lines() {
        if let Some(hint) = line.strip_prefix("  hint: ") {
            if let Some(last) = seen.last_mut() {
                last.0.push_str(&format!("\nhint: {hint}"));
            }
            continue;
        }
        if let Some((head, message)) = line.split_once(": warning: ") {
            let parts: Vec<&str> = head.rsplitn(3, ':').collect();
            let line = match parts.as_slice() {
                [_, line, _] => line.parse().ok(),
                _ => None,
            };
            seen.push((message.to_owned(), line));
        }
    }
    seen.into_iter().collect()
}

fn from_annotations(stdout: &str) -> Seen {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("::warning"))
        .map(|rest| {
            let (properties, message) = rest.split_once("::").unwrap();
            let line = properties
                .trim()
                .split(',')
                .find_map(|p| p.strip_prefix("line="))
                .and_then(|l| l.parse().ok());
            (message.replace("%0A", "\n").replace("%25", "%"), line)
        })
        .collect()
}

#[test]
fn update_stderr_report_and_action_annotations_agree() {
    let ws = workspace();
    let out = Command::new(BIN)
        .current_dir(ws.path())
        .args([
            "update",
            "repo",
            "--policies",
            "not-policies.yaml",
            "--policy",
            "ns:p=nginx:1.27.1",
            "--dry-run",
            "--report",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reported = from_report(&report);
    assert_eq!(from_stderr(&stderr), reported, "stderr:\n{stderr}");
    assert_eq!(reported.len(), 4, "{reported:#?}");
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["file"] == "not-policies.yaml"
                && w["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("holds no ImagePolicy")
                && w.get("line").is_none()),
        "the policy file's warning is in the report: {report:#}"
    );

    let output = ws.path().join("github-output");
    let action = Command::new(BIN)
        .arg("action")
        .current_dir(ws.path())
        .env("GITHUB_WORKSPACE", ws.path())
        .env("GITHUB_OUTPUT", &output)
        .env("INPUT_PATH", "repo")
        .env("INPUT_POLICIES", "not-policies.yaml")
        .env("INPUT_POLICY", "ns:p=nginx:1.27.1")
        .env("INPUT_DRY-RUN", "true")
        .output()
        .unwrap();
    assert_eq!(action.status.code(), Some(0));
    let stdout = String::from_utf8(action.stdout).unwrap();
    assert_eq!(
        from_annotations(&stdout),
        reported,
        "annotations:\n{stdout}"
    );
    let outputs = fs_err::read_to_string(&output).unwrap();
    let changes = outputs
        .lines()
        .find_map(|l| l.strip_prefix("changes="))
        .unwrap();
    let action_report: Value = serde_json::from_str(changes).unwrap();
    assert_eq!(from_report(&action_report), reported);
}
