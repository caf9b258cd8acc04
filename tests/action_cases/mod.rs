//! The GitHub Action's golden cases, shared by `tests/action.rs` (the binary
//! run as the runner runs a container's entrypoint, without a container)
//! and `tests/image.rs` (the same cases run in the real image with podman).
//!
//! A case is `testdata/action/cases/<name>/`:
//! * `case.yaml`: `workspace` (a tree under `testdata/action/workspaces/`),
//!   `inputs` (the step's `with:`), `description`;
//! * `stdout`: the exact stdout (log lines and workflow commands);
//! * `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY`: the runner's files after
//!   the step, which already held a previous step's lines;
//! * `exit-code`, when not 0;
//! * `workspace/`: the complete workspace after the step.
//!
//! The runner is simulated as it runs a Docker action: every input
//! `action.yml` declares is passed as `INPUT_<NAME>` (hyphens kept), with
//! its default when the step leaves it out and empty when it has none; the
//! working directory is the workspace; `GITHUB_WORKSPACE`, `GITHUB_OUTPUT`
//! and `GITHUB_STEP_SUMMARY` are set. Multi-line outputs use the fixed
//! delimiter [`DELIMITER`] (through `IMAGE_UPDATE_TEST_DELIMITER`, which
//! exists for tests only). Before comparing, the workspace's absolute path
//! (a temporary directory, or `/github/workspace` in a container) is shown
//! as `$GITHUB_WORKSPACE`; nothing else is rewritten.
//!
//! `UPDATE_EXPECT=1 cargo test --test action` rewrites the expectations
//! (refused when `CI` is set); review them with `git diff testdata/action`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libtest_mimic::Failed;
use serde_json::Value;

/// The heredoc delimiter of multi-line outputs in the tests.
pub const DELIMITER: &str = "ghadelimiter_TEST";
/// What a previous step left in `GITHUB_OUTPUT` (outputs are appended).
pub const PREVIOUS_OUTPUT: &str = "previous=kept\n";
/// What a previous step left in `GITHUB_STEP_SUMMARY`.
pub const PREVIOUS_SUMMARY: &str = "## An earlier step\n\nIts summary stays.\n\n";

/// The repository root.
#[must_use]
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether expectations are rewritten; an error when `CI` is set.
pub fn updating() -> Result<bool, Failed> {
    if std::env::var_os("UPDATE_EXPECT").is_none_or(|v| v.is_empty()) {
        return Ok(false);
    }
    if std::env::var_os("CI").is_some() {
        return Err("UPDATE_EXPECT is refused when CI is set".into());
    }
    Ok(true)
}

/// The one YAML document in `text`.
pub fn yaml(what: &str, text: &str) -> Result<Value, Failed> {
    let mut docs = image_update::api::yaml::parse_values(text)
        .map_err(|e| format!("{what}: not YAML: {e}"))?;
    if docs.len() != 1 {
        return Err(format!("{what}: {} documents, expected 1", docs.len()).into());
    }
    Ok(docs.remove(0))
}

/// `action.yml`, parsed.
pub fn action_yml() -> Result<Value, Failed> {
    let text = fs_err::read_to_string(root().join("action.yml")).map_err(|e| e.to_string())?;
    yaml("action.yml", &text)
}

/// The environment the runner gives the container for a step whose `with:`
/// is `with`: every declared input, with its default or empty. An input
/// the action does not declare is an error (the runner warns about it; a
/// test should not rely on it).
pub fn input_env(with: &BTreeMap<String, String>) -> Result<Vec<(String, String)>, Failed> {
    let action = action_yml()?;
    let declared = action["inputs"]
        .as_object()
        .ok_or("action.yml has no inputs")?;
    for name in with.keys() {
        if !declared.contains_key(name) {
            return Err(format!("input {name} is not declared in action.yml").into());
        }
    }
    Ok(declared
        .iter()
        .map(|(name, spec)| {
            let value = with.get(name).cloned().unwrap_or_else(|| {
                spec["default"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_default()
            });
            (image_update::api::action::input_variable(name), value)
        })
        .collect())
}

/// One golden case.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub dir: PathBuf,
    /// The workspace before the step.
    pub workspace: PathBuf,
    /// The step's `with:`.
    pub inputs: BTreeMap<String, String>,
}

const KNOWN: [&str; 6] = [
    "case.yaml",
    "stdout",
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "exit-code",
    "workspace",
];

/// Every case under `testdata/action/cases/`, by name.
pub fn cases() -> Vec<Case> {
    let dir = root().join("testdata/action/cases");
    let mut names: Vec<String> = fs_err::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let dir = dir.join(&name);
            let (workspace, inputs) = read_case(&dir).unwrap_or_else(|e| {
                panic!("{}: {}", dir.display(), e.message().unwrap_or_default())
            });
            Case {
                name,
                dir,
                workspace,
                inputs,
            }
        })
        .collect()
}

fn read_case(dir: &Path) -> Result<(PathBuf, BTreeMap<String, String>), Failed> {
    for entry in fs_err::read_dir(dir).map_err(|e| e.to_string())? {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let name = name.to_string_lossy();
        if !KNOWN.contains(&name.as_ref()) {
            return Err(format!("unknown file {name}").into());
        }
    }
    let text = fs_err::read_to_string(dir.join("case.yaml")).map_err(|e| e.to_string())?;
    let case = yaml("case.yaml", &text)?;
    for key in case.as_object().ok_or("case.yaml is not a mapping")?.keys() {
        if !matches!(key.as_str(), "workspace" | "inputs" | "description") {
            return Err(format!("case.yaml: unknown key {key}").into());
        }
    }
    let workspace = root().join("testdata/action/workspaces").join(
        case["workspace"]
            .as_str()
            .ok_or("case.yaml: no workspace")?,
    );
    let inputs = case["inputs"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let value = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), value)
                })
                .collect()
        })
        .unwrap_or_default();
    Ok((workspace, inputs))
}

/// A step about to run: the workspace copied into a temporary directory,
/// and the runner's file-command directory with files a previous step
/// wrote to.
pub struct Prepared {
    pub tmp: tempfile::TempDir,
    pub workspace: PathBuf,
    pub file_commands: PathBuf,
    pub output: PathBuf,
    pub summary: PathBuf,
}

/// Prepare a run of the step over a copy of `workspace`.
pub fn prepare(workspace: &Path) -> Result<Prepared, Failed> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = tmp.path().join("workspace");
    copy_tree(workspace, &ws)?;
    let file_commands = tmp.path().join("file_commands");
    fs_err::create_dir_all(&file_commands).map_err(|e| e.to_string())?;
    let output = file_commands.join("set_output_1");
    let summary = file_commands.join("step_summary_1");
    fs_err::write(&output, PREVIOUS_OUTPUT).map_err(|e| e.to_string())?;
    fs_err::write(&summary, PREVIOUS_SUMMARY).map_err(|e| e.to_string())?;
    Ok(Prepared {
        tmp,
        workspace: ws,
        file_commands,
        output,
        summary,
    })
}

/// Copy the tree `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), Failed> {
    fs_err::create_dir_all(to).map_err(|e| e.to_string())?;
    for entry in fs_err::read_dir(from).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let target = to.join(entry.file_name());
        if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs_err::copy(entry.path(), &target).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Every file under `dir`, by relative `/` path, with its bytes.
pub fn files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
        for entry in fs_err::read_dir(dir).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                walk(base, &path, out)?;
            } else {
                let rel = path.strip_prefix(base).map_err(|e| e.to_string())?;
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.insert(rel, fs_err::read(&path).map_err(|e| e.to_string())?);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out)?;
    }
    Ok(out)
}

/// What a step left behind.
pub struct Observed {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: i32,
    pub output: Vec<u8>,
    pub summary: Vec<u8>,
    pub tree: BTreeMap<String, Vec<u8>>,
}

/// Collect what the step in `prepared` left, given its stdout, stderr and
/// exit status.
pub fn observe(
    prepared: &Prepared,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    code: i32,
) -> Result<Observed, Failed> {
    Ok(Observed {
        stdout,
        stderr,
        code,
        output: fs_err::read(&prepared.output).map_err(|e| e.to_string())?,
        summary: fs_err::read(&prepared.summary).map_err(|e| e.to_string())?,
        tree: files(&prepared.workspace)?,
    })
}

/// `bytes` with `workspace` (the path the step saw) shown as
/// `$GITHUB_WORKSPACE`.
fn normalise(bytes: &[u8], workspace: &str) -> Vec<u8> {
    String::from_utf8_lossy(bytes)
        .replace(workspace, "$GITHUB_WORKSPACE")
        .into_bytes()
}

/// A unified diff of two texts.
pub fn diff(what: &str, expected: &[u8], actual: &[u8]) -> String {
    let expected = String::from_utf8_lossy(expected);
    let actual = String::from_utf8_lossy(actual);
    let diff = similar::TextDiff::from_lines(expected.as_ref(), actual.as_ref());
    format!(
        "{what} differs (- expected, + actual):\n{}",
        diff.unified_diff().context_radius(3)
    )
}

/// Compare what a step left with the case's expectations (or rewrite them
/// when `may_update` and `UPDATE_EXPECT` is set). `workspace_seen` is the
/// workspace's path as the step saw it.
pub fn compare(
    case: &Case,
    observed: &Observed,
    workspace_seen: &str,
    may_update: bool,
) -> Result<(), Failed> {
    let stdout = normalise(&observed.stdout, workspace_seen);
    let output = normalise(&observed.output, workspace_seen);
    let summary = normalise(&observed.summary, workspace_seen);
    let write = |name: &str, bytes: &[u8]| -> Result<(), Failed> {
        fs_err::write(case.dir.join(name), bytes).map_err(|e| e.to_string().into())
    };
    if may_update && updating()? {
        write("stdout", &stdout)?;
        write("GITHUB_OUTPUT", &output)?;
        write("GITHUB_STEP_SUMMARY", &summary)?;
        let code_file = case.dir.join("exit-code");
        if observed.code == 0 {
            let _ = fs_err::remove_file(&code_file);
        } else {
            write("exit-code", format!("{}\n", observed.code).as_bytes())?;
        }
        let tree_dir = case.dir.join("workspace");
        let _ = fs_err::remove_dir_all(&tree_dir);
        for (rel, bytes) in &observed.tree {
            let target = tree_dir.join(rel);
            if let Some(parent) = target.parent() {
                fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            fs_err::write(&target, bytes).map_err(|e| e.to_string())?;
        }
        eprintln!("updated {}", case.dir.display());
        return Ok(());
    }
    let read = |name: &str| -> Result<Vec<u8>, Failed> {
        fs_err::read(case.dir.join(name)).map_err(|e| {
            format!("{name}: {e} (UPDATE_EXPECT=1 cargo test --test action writes it)").into()
        })
    };
    let expected_code: i32 = match fs_err::read_to_string(case.dir.join("exit-code")) {
        Ok(s) => s.trim().parse().map_err(|e| format!("exit-code: {e}"))?,
        Err(_) => 0,
    };
    let mut problems = Vec::new();
    if observed.code != expected_code {
        problems.push(format!(
            "exit status {}, expected {expected_code}",
            observed.code
        ));
    }
    for (name, actual) in [
        ("stdout", &stdout),
        ("GITHUB_OUTPUT", &output),
        ("GITHUB_STEP_SUMMARY", &summary),
    ] {
        let expected = read(name)?;
        if &expected != actual {
            problems.push(diff(name, &expected, actual));
        }
    }
    let expected_tree = files(&case.dir.join("workspace"))?;
    let expected_names: Vec<&String> = expected_tree.keys().collect();
    let actual_names: Vec<&String> = observed.tree.keys().collect();
    if expected_names != actual_names {
        problems.push(format!(
            "workspace files {actual_names:?}, expected {expected_names:?}"
        ));
    } else {
        for (rel, bytes) in &expected_tree {
            if &observed.tree[rel] != bytes {
                problems.push(diff(
                    &format!("workspace/{rel}"),
                    bytes,
                    &observed.tree[rel],
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\nstderr:\n{}",
            problems.join("\n"),
            String::from_utf8_lossy(&observed.stderr)
        )
        .into())
    }
}
