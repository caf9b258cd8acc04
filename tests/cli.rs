//! End-to-end behaviour of `image-update update` that the golden fixtures do
//! not show: stdout formats, usage errors, stdin, symlinks out of the tree
//! and no partial writes. The trial that runs `git apply` needs git: it is
//! ignored with the reason without it, and fails without it when `CI` is
//! set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use image_update_testkit::{self as testkit, trial};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_image-update"))
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = bin();
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
    dir
}

const POD: &str = "kind: Pod\nimage: nginx:1.25.0 # {\"$imagepolicy\": \"ns:p\"}\n";

fn s(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

fn diff_goes_to_stdout_and_nothing_is_written_in_dry_run() {
    let dir = tree(&[("a.yaml", POD)]);
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--dry-run",
            "--diff",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "--- a/a.yaml\n+++ b/a.yaml\n@@ -1,2 +1,2 @@\n kind: Pod\n-image: nginx:1.25.0 # {\"$imagepolicy\": \"ns:p\"}\n+image: nginx:1.27.1 # {\"$imagepolicy\": \"ns:p\"}\n"
    );
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        POD
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.ends_with("would update 1 field in 1 file\n"),
        "{stderr}"
    );
}

fn report_on_stdout_as_json_or_yaml() {
    let dir = tree(&[("a.yaml", POD)]);
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--report",
            "-",
            "-q",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["fileChanges"]["a.yaml"][0]["changes"][0]["newValue"],
        "nginx:1.27.1"
    );
    assert_eq!(report["observedPolicies"]["ns:p"]["tag"], "1.27.1");
    assert!(
        out.stderr.is_empty(),
        "--quiet prints nothing without warnings"
    );

    let dir = tree(&[("a.yaml", POD)]);
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--report",
            "-",
            "--report-format",
            "yaml",
        ],
        None,
    );
    let yaml: serde_json::Value = serde_saphyr::from_slice(&out.stdout).unwrap();
    assert_eq!(
        yaml["fileChanges"]["a.yaml"][0]["changes"][0]["oldValue"],
        "nginx:1.25.0"
    );
}

fn policies_from_stdin() {
    let dir = tree(&[("a.yaml", POD)]);
    let policies = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p, namespace: ns}\nstatus: {latestRef: {name: nginx, tag: 1.27.1}}\n";
    let out = run(
        &["update", s(dir.path()), "--policies", "-"],
        Some(policies),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        fs_err::read_to_string(dir.path().join("a.yaml"))
            .unwrap()
            .contains("nginx:1.27.1")
    );
}

fn usage_errors_exit_2() {
    let dir = tree(&[("a.yaml", POD)]);
    for args in [
        vec!["update", s(dir.path()), "--policy", "ns:p"],
        vec!["update", s(dir.path()), "--policy", "nsp=nginx:1"],
        vec!["update", s(dir.path()), "--policy", "ns:p=nginx"],
        vec!["update", s(dir.path()), "--selector", "a in b"],
        vec!["update", s(dir.path()), "--bogus"],
        vec!["update", s(dir.path()), "--report", "-", "--diff"],
        vec!["update", s(dir.path()), "--dry-run", "--output-dir", "x"],
    ] {
        let out = run(&args, None);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        POD
    );
}

fn errors_exit_1_and_write_nothing() {
    let dir = tree(&[("a.yaml", POD), ("b.yaml", POD)]);
    let policies = dir.path().join("policies.yaml");
    fs_err::write(
        &policies,
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p, namespace: ns}\nstatus: {latestRef: {name: nginx, tag: 1.26.0}}\n",
    )
    .unwrap();
    // A conflict between two sources names both.
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--policies",
            policies.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("nginx:1.27.1 by --policy ns:p=nginx:1.27.1, nginx:1.26.0 by"),
        "{stderr}"
    );
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        POD
    );
    assert_eq!(
        fs_err::read_to_string(dir.path().join("b.yaml")).unwrap(),
        POD
    );

    // A policies file that is not YAML names its position.
    fs_err::write(&policies, "a: [\n").unwrap();
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policies",
            policies.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("policies.yaml:1:4: error: not valid YAML: unclosed bracket"),
        "{stderr}"
    );
    assert!(!stderr.contains("<input>"), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");

    let out = run(
        &["update", "/nonexistent/dir", "--policy", "ns:p=nginx:1"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
}

#[cfg(unix)]
fn symlinks_to_files_outside_the_tree_are_not_written() {
    let outside = tree(&[("target.yaml", POD)]);
    let dir = tree(&[("inside.yaml", POD)]);
    std::os::unix::fs::symlink(
        outside.path().join("target.yaml"),
        dir.path().join("link.yaml"),
    )
    .unwrap();
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--report",
            "-",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        fs_err::read_to_string(outside.path().join("target.yaml")).unwrap(),
        POD
    );
    assert!(
        fs_err::read_to_string(dir.path().join("inside.yaml"))
            .unwrap()
            .contains("1.27.1")
    );
    assert!(
        fs_err::symlink_metadata(dir.path().join("link.yaml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["fileChanges"].get("link.yaml").is_none());
    assert!(
        report["warnings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("lies outside")
    );
}

fn non_utf8_files_are_skipped_with_a_position() {
    let dir = tree(&[("ok.yaml", POD)]);
    let bytes =
        b"kind: Pod\n# caf\xe9\nimage: nginx:1.25.0 # {\"$imagepolicy\": \"ns:p\"}\n".to_vec();
    fs_err::write(dir.path().join("latin1.yaml"), &bytes).unwrap();
    let out = run(
        &["update", s(dir.path()), "--policy", "ns:p=nginx:1.27.1"],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("latin1.yaml:2:6: warning: file is not valid UTF-8"),
        "{stderr}"
    );
    assert!(
        fs_err::read_to_string(dir.path().join("ok.yaml"))
            .unwrap()
            .contains("1.27.1")
    );
}

fn a_report_that_cannot_be_written_leaves_every_file_untouched() {
    let dir = tree(&[("a.yaml", POD), ("blocker", "")]);
    let report = dir.path().join("blocker/report.json");
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--report",
            report.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        POD
    );
    let names: Vec<_> = fs_err::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "no temporary file is left behind: {names:?}"
    );
}

#[cfg(unix)]
fn new_output_files_are_world_readable_and_replaced_ones_keep_their_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tree(&[("a.yaml", POD)]);
    let out_dir = tempfile::tempdir().unwrap();
    let report = out_dir.path().join("report.json");
    let args = [
        "update",
        s(dir.path()),
        "--policy",
        "ns:p=nginx:1.27.1",
        "--dry-run",
        "--report",
        report.to_str().unwrap(),
    ];
    assert_eq!(run(&args, None).status.code(), Some(0));
    let mode = |p: &Path| fs_err::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode(&report),
        0o644,
        "a report is written under --dry-run too, readable like any new file"
    );
    fs_err::set_permissions(&report, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(run(&args, None).status.code(), Some(0));
    assert_eq!(mode(&report), 0o600);
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        POD,
        "--dry-run changes nothing under PATH"
    );
}

fn only_one_output_may_use_stdout() {
    let dir = tree(&[("a.yaml", POD)]);
    for args in [
        vec![
            "update",
            s(dir.path()),
            "--report",
            "-",
            "--emit-policies",
            "-",
            "--fetch",
        ],
        vec![
            "update",
            s(dir.path()),
            "--diff",
            "--emit-policies",
            "-",
            "--fetch",
        ],
    ] {
        let out = run(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("all write to stdout"));
    }
}

/// `message` renders a commit message from a saved report: the same text
/// `update --commit-message-file` writes, from a file or stdin, with values
/// and the automation object from flags.
fn message_from_a_saved_report() {
    let dir = tree(&[("apps/a.yaml", POD)]);
    let report = dir.path().join("report.json");
    let template = dir.path().join("msg.tmpl");
    fs_err::write(
        &template,
        "{{ .AutomationObject }} ({{ .Values.env }}):{{ range .Changed.Changes }} {{ .OldValue }} -> {{ .NewValue }}{{ end }}\n",
    )
    .unwrap();
    let written = dir.path().join("commit.txt");
    let out = run(
        &[
            "update",
            s(&dir.path().join("apps")),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--dry-run",
            "--report",
            report.to_str().unwrap(),
            "--commit-template",
            template.to_str().unwrap(),
            "--commit-value",
            "env=prod",
            "--automation-object",
            "flux-system/apps",
            "--commit-message-file",
            written.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let expected = "flux-system/apps (prod): nginx:1.25.0 -> nginx:1.27.1\n";
    assert_eq!(fs_err::read_to_string(&written).unwrap(), expected);

    let args = [
        "message",
        "--template",
        template.to_str().unwrap(),
        "--value",
        "env=prod",
        "--automation-object",
        "flux-system/apps",
        "--report",
    ];
    let mut from_file = args.to_vec();
    from_file.push(report.to_str().unwrap());
    let out = run(&from_file, None);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    let mut from_stdin = args.to_vec();
    from_stdin.push("-");
    let json = fs_err::read_to_string(&report).unwrap();
    let out = run(&from_stdin, Some(&json));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);

    // No template: Flux's default message, with no trailing newline.
    let out = run(&["message", "--report", report.to_str().unwrap()], None);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "Update from image update automation"
    );

    // Flux v0.x's `.Updated` (seed 002's template) renders as Flux v0.x did,
    // from the report's observed policies, with a warning that Flux v1
    // dropped it.
    fs_err::write(
        &template,
        "{{range .Updated.Images}}{{println .}}{{end}}{{ (index .Updated.Images 0).Name }}",
    )
    .unwrap();
    let out = run(
        &[
            "message",
            "--report",
            report.to_str().unwrap(),
            "--template",
            template.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "nginx:1.27.1\nindex.docker.io/library/nginx:1.27.1"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with(
            "warning: the commit message template uses '.Updated' (line 1, column 9), which Flux v1 removed: it renders here as in Flux v0.x"
        ),
        "{stderr}"
    );
    let out = run(
        &[
            "update",
            s(&dir.path().join("apps")),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--dry-run",
            "--commit-template",
            template.to_str().unwrap(),
            "--commit-message-file",
            written.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        fs_err::read_to_string(&written).unwrap(),
        "nginx:1.27.1\nindex.docker.io/library/nginx:1.27.1"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warning: the commit message template uses '.Updated'"),
        "{stderr}"
    );
    // Only whole-image setters are recorded in `.Updated`, as in Flux before
    // its ResultV2 (seed 003): a tag-only change is in `.Changed` alone.
    let partial = dir.path().join("partial");
    fs_err::create_dir_all(&partial).unwrap();
    fs_err::write(
        partial.join("values.yaml"),
        "image:\n  repository: nginx # {\"$imagepolicy\": \"ns:p:name\"}\n  tag: 1.0.0 # {\"$imagepolicy\": \"ns:p:tag\"}\n",
    )
    .unwrap();
    fs_err::write(
        &template,
        "{{ len .Updated.Files }} {{ len .Updated.Images }} {{ len .Changed.Changes }}",
    )
    .unwrap();
    let out = run(
        &[
            "update",
            s(&partial),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--dry-run",
            "--commit-template",
            template.to_str().unwrap(),
            "--commit-message-file",
            written.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(fs_err::read_to_string(&written).unwrap(), "0 0 1");
    // A template that does not parse fails `update` before anything is
    // written.
    fs_err::write(&template, "{{ if }}").unwrap();
    let out = run(
        &[
            "update",
            s(&dir.path().join("apps")),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--commit-template",
            template.to_str().unwrap(),
            "--commit-message-file",
            written.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("error: unable to create commit message template from spec: template: commit message:1: missing value for if"),
        "{stderr}"
    );
    assert_eq!(
        fs_err::read_to_string(dir.path().join("apps/a.yaml")).unwrap(),
        POD,
        "nothing written"
    );
}

/// `update DIR/apps --dry-run --diff` run from `DIR`, the tree's root.
fn diff_from_the_root(dir: &Path) -> Output {
    bin()
        .current_dir(dir)
        .args([
            "update",
            s(&dir.join("apps")),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--dry-run",
            "--diff",
        ])
        .output()
        .unwrap()
}

/// `--diff` uses the paths of the stderr lines when the tree lies below the
/// current directory, so `git apply` works from there; `--check -q` still
/// names each pending change.
fn diff_paths_follow_the_current_directory() {
    let dir = tree(&[("apps/web/a.yaml", POD)]);
    let out = diff_from_the_root(dir.path());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("--- a/apps/web/a.yaml\n+++ b/apps/web/a.yaml\n"),
        "{stdout}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("apps/web/a.yaml:2:8: "), "{stderr}");

    let out = bin()
        .current_dir(dir.path())
        .args([
            "update",
            "apps",
            "--policy",
            "ns:p=nginx:1.28.0",
            "--check",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "apps/web/a.yaml:2:8: nginx:1.25.0 -> nginx:1.28.0 (ns:p)\n"
    );
}

/// The `--diff` of a tree below the current directory applies there with
/// `git apply`, outside any repository.
fn the_diff_applies_with_git_apply() {
    let dir = tree(&[("apps/web/a.yaml", POD)]);
    let out = diff_from_the_root(dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    fs_err::write(dir.path().join("p.diff"), &out.stdout).unwrap();
    let git = Command::new("git")
        .current_dir(dir.path())
        .args(["apply", "--unsafe-paths", "p.diff"])
        .output()
        .unwrap();
    assert!(git.status.success(), "git apply: {git:?}");
    assert_eq!(
        fs_err::read_to_string(dir.path().join("apps/web/a.yaml")).unwrap(),
        POD.replace("nginx:1.25.0", "nginx:1.27.1")
    );
}

/// `--fail-on-warnings` writes nothing (not even the report) and exits 1
/// when a warning is raised; `--no-downgrade` leaves a backwards move alone.
fn strict_mode_and_downgrades() {
    let text =
        "a: nginx:1.25.0 # {\"$imagepolicy\": \"ns:p\"}\nb: x # {\"$imagepolicy\": \"ns:gone\"}\n";
    let dir = tree(&[("a.yaml", text)]);
    let report = dir.path().join("r.json");
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--fail-on-warnings",
            "--report",
            report.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warning: no policy ns:gone was supplied")
            && stderr.ends_with(
                "error: would update 1 field in 1 file, but --fail-on-warnings is set and 1 \
                 warning was raised: nothing was written\n"
            ),
        "{stderr}"
    );
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        text
    );
    assert!(!report.exists());

    let text = "a: nginx:1.25.0 # {\"$imagepolicy\": \"ns:p\"}\n";
    let dir = tree(&[("a.yaml", text)]);
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.24.9",
            "--no-downgrade",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("a.yaml:1:4: warning: ns:p would move the tag backwards, from 1.25.0 to 1.24.9, so it is left alone (--no-downgrade)"),
        "{stderr}"
    );
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        text
    );
    let out = run(
        &["update", s(dir.path()), "--policy", "ns:p=nginx:1.24.9"],
        None,
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warning: ns:p moves the tag backwards, from 1.25.0 to 1.24.9"),
        "{stderr}"
    );
    assert!(
        fs_err::read_to_string(dir.path().join("a.yaml"))
            .unwrap()
            .contains("1.24.9")
    );
}

/// Outputs go into existing directories; colours only when asked for or on
/// a terminal, and never with NO_COLOR.
/// A `--policy` value whose key no marker names changes nothing: a warning
/// says so, once per key, with the key a marker names as a hint (and
/// `--fail-on-warnings` counts it); a value a marker uses is not named.
fn unused_policy_values_are_named() {
    let dir = tree(&[("pod.yaml", POD)]);
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--policy",
            "ns:pp=nginx:1.27.1",
            "--policy",
            "ns:pp=nginx:1.27.1",
            "--policy",
            "team:database=postgres:16",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let unused = |key: &str, value: &str| {
        format!(
            "warning: policy {key} (--policy {key}={value}) is used by no marker or Argo CD \
             Application, so it changes nothing\n"
        )
    };
    assert_eq!(
        stderr.matches(&unused("ns:pp", "nginx:1.27.1")).count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{}  hint: did you mean ns:p? (a marker or Application names it)\n",
            unused("ns:pp", "nginx:1.27.1")
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{}updated 1 field in 1 file (2 warnings)\n",
            unused("team:database", "postgres:16")
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("policy ns:p (--policy"), "{stderr}");
}

fn outputs_need_their_directory_and_colours_are_opt_in() {
    let dir = tree(&[("a.yaml", POD)]);
    let out = run(
        &[
            "update",
            s(dir.path()),
            "--policy",
            "ns:p=nginx:1.27.1",
            "--report",
            dir.path().join("missing/r.json").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("missing: error: the directory of --report does not exist"),
        "{stderr}"
    );
    assert!(!dir.path().join("missing").exists());
    assert_eq!(
        fs_err::read_to_string(dir.path().join("a.yaml")).unwrap(),
        POD
    );

    let gone = "b: x # {\"$imagepolicy\": \"ns:gone\"}\n";
    let dir = tree(&[("b.yaml", gone)]);
    let plain = run(&["update", s(dir.path()), "--dry-run"], None);
    assert!(!String::from_utf8(plain.stderr).unwrap().contains('\x1b'));
    let coloured = run(
        &["update", s(dir.path()), "--dry-run", "--color", "always"],
        None,
    );
    assert!(
        String::from_utf8(coloured.stderr)
            .unwrap()
            .contains("\x1b[1;33mwarning\x1b[0m")
    );
}

fn main() {
    testkit::run(vec![
        trial(
            "diff_goes_to_stdout_and_nothing_is_written_in_dry_run",
            &[],
            diff_goes_to_stdout_and_nothing_is_written_in_dry_run,
        ),
        trial(
            "report_on_stdout_as_json_or_yaml",
            &[],
            report_on_stdout_as_json_or_yaml,
        ),
        trial("policies_from_stdin", &[], policies_from_stdin),
        trial("usage_errors_exit_2", &[], usage_errors_exit_2),
        trial(
            "errors_exit_1_and_write_nothing",
            &[],
            errors_exit_1_and_write_nothing,
        ),
        trial(
            "symlinks_to_files_outside_the_tree_are_not_written",
            &[],
            symlinks_to_files_outside_the_tree_are_not_written,
        ),
        trial(
            "non_utf8_files_are_skipped_with_a_position",
            &[],
            non_utf8_files_are_skipped_with_a_position,
        ),
        trial(
            "a_report_that_cannot_be_written_leaves_every_file_untouched",
            &[],
            a_report_that_cannot_be_written_leaves_every_file_untouched,
        ),
        trial(
            "new_output_files_are_world_readable_and_replaced_ones_keep_their_mode",
            &[],
            new_output_files_are_world_readable_and_replaced_ones_keep_their_mode,
        ),
        trial(
            "only_one_output_may_use_stdout",
            &[],
            only_one_output_may_use_stdout,
        ),
        trial(
            "message_from_a_saved_report",
            &[],
            message_from_a_saved_report,
        ),
        trial(
            "diff_paths_follow_the_current_directory",
            &[],
            diff_paths_follow_the_current_directory,
        ),
        trial(
            "the_diff_applies_with_git_apply",
            &["git"],
            the_diff_applies_with_git_apply,
        ),
        trial(
            "strict_mode_and_downgrades",
            &[],
            strict_mode_and_downgrades,
        ),
        trial(
            "unused_policy_values_are_named",
            &[],
            unused_policy_values_are_named,
        ),
        trial(
            "outputs_need_their_directory_and_colours_are_opt_in",
            &[],
            outputs_need_their_directory_and_colours_are_opt_in,
        ),
    ]);
}
