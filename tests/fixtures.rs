//! Golden fixtures: one test per `testdata/cases/<name>/` directory.
//!
//! A case holds `case.yaml` (`args`: arguments after `update PATH`, where
//! `{case}` is the case directory; `path`: what to update, relative to the
//! copied input tree, default the whole tree; `exit`: expected status,
//! default 0; `output_dir`: compare the `--output-dir` tree instead of the
//! input tree), `in/` (the input tree, copied to a temporary directory),
//! `out/` (the complete expected tree, compared byte for byte, symlinks
//! included), `report.json` (the expected `--report`) and `stderr.txt` (the
//! expected stderr, the temporary directory shown as `[ROOT]`, the case
//! directory as `[CASE]`) and, when its args name them, `policies.yaml`
//! (ImagePolicy objects), `automation.yaml` (an ImageUpdateAutomation) and
//! `template.tmpl` (a commit template). With `commit_message: true` the
//! run also writes `--commit-message-file`, compared with `commit.txt`;
//! `report_root` names the directory report paths are relative to when it
//! is an automation's `spec.update.path`.
//!
//! Every case also checks that
//! * a second run over the output changes nothing (idempotence), and
//! * the lines that differ between input and output are exactly lines that
//!   the report names as changed.
//!
//! `UPDATE_EXPECT=1 cargo test --test fixtures [NAME]` rewrites `out/`,
//! `report.json` and `stderr.txt` from the actual results (refused when `CI`
//! is set); review them with `git diff testdata/` like code.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    exit: i32,
    #[serde(default)]
    output_dir: bool,
    /// The directory, relative to the input tree, that report paths are
    /// relative to when it is not `path` (an automation's update path).
    #[serde(default)]
    report_root: Option<String>,
    /// Also render the commit message (`--commit-message-file`) and compare
    /// it with `commit.txt`.
    #[serde(default)]
    commit_message: bool,
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
}

const KNOWN: [&str; 9] = [
    "case.yaml",
    "in",
    "out",
    "report.json",
    "stderr.txt",
    "policies.yaml",
    "automation.yaml",
    "template.tmpl",
    "commit.txt",
];

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/cases");
    let mut trials = Vec::new();
    let mut dirs: Vec<PathBuf> = fs_err::read_dir(&root)
        .expect("testdata/cases")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        trials.push(Trial::test(name, move || run_case(&dir)));
    }
    libtest_mimic::run(&args, trials).exit();
}

fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

fn run_case(dir: &Path) -> Result<(), Failed> {
    for entry in fs_err::read_dir(dir).map_err(|e| e.to_string())? {
        let name = entry
            .map_err(|e| e.to_string())?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !KNOWN.contains(&name.as_str()) {
            return Err(format!("unknown file {name} in {} (typo?)", dir.display()).into());
        }
    }
    if updating() && std::env::var_os("CI").is_some() {
        return Err("UPDATE_EXPECT is refused when CI is set".into());
    }
    let case: Case = serde_saphyr::from_str(
        &fs_err::read_to_string(dir.join("case.yaml")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("case.yaml: {e}"))?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let work = tmp.path().join("work");
    copy_tree(&dir.join("in"), &work)?;
    let outdir = tmp.path().join("outdir");
    let report_path = tmp.path().join("report.json");
    let target = case
        .path
        .as_ref()
        .map_or_else(|| work.clone(), |p| work.join(p));
    let extra: Vec<String> = case
        .args
        .iter()
        .map(|a| a.replace("{case}", &dir.display().to_string()))
        .collect();
    let wants_message = case.commit_message;
    let message_path = tmp.path().join("commit.txt");
    let run = |report: &Path| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_image-update"));
        cmd.arg("update")
            .arg(&target)
            .args(&extra)
            .arg("--report")
            .arg(report);
        if wants_message && report == report_path {
            cmd.arg("--commit-message-file").arg(&message_path);
        }
        if case.output_dir {
            cmd.arg("--output-dir").arg(&outdir);
        }
        cmd.env_remove("RUST_LOG").output()
    };
    let output = run(&report_path).map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&output.stderr)
        .replace(&tmp.path().display().to_string(), "[ROOT]")
        .replace(&dir.display().to_string(), "[CASE]");
    let code = output.status.code().unwrap_or(-1);
    // Inputs outside the tree (policy files) are named as given.
    let report = fs_err::read_to_string(&report_path)
        .unwrap_or_default()
        .replace(&tmp.path().display().to_string(), "[ROOT]")
        .replace(&dir.display().to_string(), "[CASE]");
    let produced = if case.output_dir { &outdir } else { &work };

    if updating() {
        let out = dir.join("out");
        if out.exists() {
            fs_err::remove_dir_all(&out).map_err(|e| e.to_string())?;
        }
        fs_err::create_dir_all(&out).map_err(|e| e.to_string())?;
        if produced.exists() {
            copy_tree(produced, &out)?;
        }
        fs_err::write(dir.join("report.json"), &report).map_err(|e| e.to_string())?;
        fs_err::write(dir.join("stderr.txt"), &stderr).map_err(|e| e.to_string())?;
        match fs_err::read_to_string(&message_path) {
            Ok(message) if !message.is_empty() => {
                fs_err::write(dir.join("commit.txt"), message).map_err(|e| e.to_string())?;
            }
            _ => {
                let _ = fs_err::remove_file(dir.join("commit.txt"));
            }
        }
        eprintln!("updated {}", dir.display());
    }

    if code != case.exit {
        return Err(format!(
            "exit status {code}, expected {}\nstderr:\n{stderr}",
            case.exit
        )
        .into());
    }
    compare_trees(&dir.join("out"), produced)?;
    if case.output_dir {
        compare_trees(&dir.join("in"), &work)
            .map_err(|e| format!("input changed with --output-dir: {:?}", e.message()))?;
    }
    expect_text(
        "report.json",
        &fs_err::read_to_string(dir.join("report.json")).unwrap_or_default(),
        &report,
    )?;
    expect_text(
        "stderr.txt",
        &fs_err::read_to_string(dir.join("stderr.txt")).unwrap_or_default(),
        &stderr,
    )?;
    if case.commit_message {
        expect_text(
            "commit.txt",
            &fs_err::read_to_string(dir.join("commit.txt")).unwrap_or_default(),
            &fs_err::read_to_string(&message_path).unwrap_or_default(),
        )?;
    }
    if code == 0 || code == 3 {
        // Report paths are relative to the updated directory (or to the
        // directory of the updated file, or to the automation's path).
        let prefix = match case.report_root.as_ref().or(case.path.as_ref()) {
            Some(p) if work.join(p).is_file() => Path::new(p)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            Some(p) => PathBuf::from(p),
            None => PathBuf::new(),
        };
        only_reported_lines_changed(&dir.join("in"), produced, &report, &prefix)?;
    }

    // Second run over the output: nothing changes.
    if code == 0 && !case.output_dir {
        let before = snapshot(&work)?;
        let second = tmp.path().join("second.json");
        let output = run(&second).map_err(|e| e.to_string())?;
        if output.status.code() != Some(0) {
            return Err(format!(
                "second run failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let again: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(&second).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        if again["fileChanges"] != serde_json::json!({}) {
            return Err(format!("second run is not idempotent: {}", again["fileChanges"]).into());
        }
        if snapshot(&work)? != before {
            return Err("second run changed files".into());
        }
    }
    Ok(())
}

fn expect_text(name: &str, expected: &str, actual: &str) -> Result<(), Failed> {
    if expected == actual {
        return Ok(());
    }
    let diff = similar::TextDiff::from_lines(expected, actual);
    Err(format!(
        "{name} differs (-expected +actual):\n{}",
        diff.unified_diff()
    )
    .into())
}

/// Every file (and symlink, as `-> target`) under `root`, by relative path.
fn snapshot(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let mut out = BTreeMap::new();
    if !root.exists() {
        return Ok(out);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let meta = fs_err::symlink_metadata(&path).map_err(|e| e.to_string())?;
            if meta.file_type().is_symlink() {
                let target = fs_err::read_link(&path).map_err(|e| e.to_string())?;
                out.insert(rel, format!("-> {}", target.display()).into_bytes());
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, fs_err::read(&path).map_err(|e| e.to_string())?);
            }
        }
    }
    Ok(out)
}

fn compare_trees(expected: &Path, actual: &Path) -> Result<(), Failed> {
    let want = snapshot(expected)?;
    let got = snapshot(actual)?;
    let names: BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    let mut problems = Vec::new();
    for name in names {
        match (want.get(name), got.get(name)) {
            (Some(w), Some(g)) if w == g => {}
            (Some(w), Some(g)) => {
                let (w, g) = (String::from_utf8_lossy(w), String::from_utf8_lossy(g));
                let diff = similar::TextDiff::from_lines(w.as_ref(), g.as_ref());
                problems.push(format!(
                    "{name} differs (-expected +actual):\n{}",
                    diff.unified_diff()
                ));
                if w.replace("\r\n", "\n") == g.replace("\r\n", "\n") {
                    problems.push(format!("{name}: only line endings differ"));
                }
            }
            (Some(_), None) => problems.push(format!("{name} is missing")),
            (None, Some(_)) => problems.push(format!("{name} is unexpected")),
            (None, None) => {}
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

/// Lines that differ between input and output files must be lines the
/// report names as changed (all replaced scalars here are single-line).
fn only_reported_lines_changed(
    input: &Path,
    output: &Path,
    report: &str,
    prefix: &Path,
) -> Result<(), Failed> {
    let report: serde_json::Value =
        serde_json::from_str(report).map_err(|e| format!("report is not JSON: {e}"))?;
    let before = snapshot(input)?;
    let after = snapshot(output)?;
    for (name, new) in &after {
        let Some(old) = before.get(name) else {
            continue;
        };
        if old == new {
            continue;
        }
        let key = Path::new(name)
            .strip_prefix(prefix)
            .map_or_else(|_| name.clone(), |p| p.display().to_string());
        let reported: BTreeSet<u64> = report["fileChanges"][key.as_str()]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|o| o["changes"].as_array().cloned().unwrap_or_default())
            .filter_map(|c| c["line"].as_u64())
            .collect();
        let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
        if old_lines.len() != new_lines.len() {
            return Err(format!("{name}: line count changed").into());
        }
        for (i, (a, b)) in old_lines.iter().zip(&new_lines).enumerate() {
            if a != b && !reported.contains(&(i as u64 + 1)) {
                return Err(
                    format!("{name}:{}: changed but not reported:\n-{a}+{b}", i + 1).into(),
                );
            }
        }
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), Failed> {
    fs_err::create_dir_all(to).map_err(|e| e.to_string())?;
    for entry in fs_err::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let dest = to.join(path.file_name().unwrap());
        let meta = fs_err::symlink_metadata(&path).map_err(|e| e.to_string())?;
        if meta.file_type().is_symlink() {
            let target = fs_err::read_link(&path).map_err(|e| e.to_string())?;
            #[cfg(unix)]
            std::os::unix::fs::symlink(&target, &dest).map_err(|e| e.to_string())?;
        } else if meta.is_dir() {
            copy_tree(&path, &dest)?;
        } else {
            fs_err::copy(&path, &dest).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
