//! Golden fixtures for Argo CD write-back: one test per `testdata/argocd/<case>/`.
//!
//! A case holds `case.yaml` (`chosen`: the image each policy key moved to; `policies`: files of the
//! case directory read as policy files, from outside the tree; `controllerNamespace`), `in/` (the
//! tree: Applications, updaters, target files), and the expectations:
//! * `out/`: the complete tree after the planned files are written, byte for byte (for a case that
//!   fails, it must equal `in/`: nothing is written);
//! * `result.json`: the selections, every Application's plan (images, commit message from the
//!   default template, git branches), every file's changes (field, old, new, setter, line and
//!   column in the new text) and the warnings;
//! * `errors.txt`: for a case that fails, every error as `file:line:col: error: message`.
//!
//! The harness drives the library directly with the supplied images (`--fetch` end to end is the
//! job of the CLI tests). Every passing case is planned a second time over its output, which must
//! change nothing, and every file's new text must be its original with its edits applied.
//!
//! `UPDATE_EXPECT=1 cargo test --test argocd [NAME]` rewrites `out/`, `result.json` and
//! `errors.txt` (refused when `CI` is set); review them with `git diff testdata/argocd`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use image_update::api::argocd::{
    CollectOptions, DefinedBy, Diagnostic, DirFiles, InputFile, SizeLimit, WriteBack, apply_edits,
    collect, plan,
};
use image_update::api::plan::{ImageRef, PolicyKey};
use image_update_template::argocd::{parse_commit_template, render_commit_message};
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{Value, json};

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Case {
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    #[serde(default)]
    chosen: BTreeMap<String, String>,
    #[serde(default)]
    policies: Vec<String>,
    #[serde(default)]
    controller_namespace: Option<String>,
}

const KNOWN: [&str; 6] = [
    "case.yaml",
    "in",
    "out",
    "result.json",
    "errors.txt",
    "policies",
];

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/argocd");
    let mut dirs: Vec<PathBuf> = fs_err::read_dir(&root)
        .expect("testdata/argocd")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let trials = dirs
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            Trial::test(name, move || run_case(&dir))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

/// Every file under `root` by relative path.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !root.exists() {
        return out;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, fs_err::read(&path).unwrap());
            }
        }
    }
    out
}

fn write_tree(root: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (rel, bytes) in files {
        let path = root.join(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, bytes).unwrap();
    }
}

/// Plan over the tree at `work` (plus the case's policy files).
fn run(work: &Path, dir: &Path, case: &Case) -> Result<(WriteBack, Value), Vec<String>> {
    let tree = snapshot(work);
    let texts: Vec<(String, Option<String>, String)> = tree
        .iter()
        .filter(|(rel, _)| {
            rel.ends_with(".yaml") || rel.ends_with(".yml") || rel.ends_with("Kustomization")
        })
        .map(|(rel, bytes)| {
            (
                rel.clone(),
                Some(rel.clone()),
                String::from_utf8(bytes.clone()).unwrap(),
            )
        })
        .chain(case.policies.iter().map(|p| {
            (
                p.clone(),
                None,
                fs_err::read_to_string(dir.join(p)).unwrap(),
            )
        }))
        .collect();
    let inputs: Vec<InputFile<'_>> = texts
        .iter()
        .map(|(origin, tree_path, text)| InputFile {
            origin: origin.clone(),
            tree_path: tree_path.clone(),
            text,
        })
        .collect();
    let options = CollectOptions {
        controller_namespace: case
            .controller_namespace
            .clone()
            .unwrap_or_else(|| "argocd".to_owned()),
        ..CollectOptions::default()
    };
    let render = |ds: &[Diagnostic]| -> Vec<String> {
        ds.iter()
            .map(|d| match &d.hint {
                Some(h) => format!("{d}\n  hint: {h}"),
                None => d.to_string(),
            })
            .collect()
    };
    let catalog = collect(&inputs, &options).map_err(|e| render(&e))?;
    let chosen: BTreeMap<PolicyKey, ImageRef> = case
        .chosen
        .iter()
        .map(|(k, v)| {
            (
                PolicyKey::parse(k).unwrap_or_else(|| panic!("bad key {k}")),
                ImageRef::parse(v).unwrap_or_else(|e| panic!("bad image {v}: {e}")),
            )
        })
        .collect();
    let files = DirFiles::new(work, SizeLimit(1 << 20)).unwrap();
    let lookup = |k: &PolicyKey| chosen.get(k).cloned();
    let wb = plan(&catalog, &lookup, &files).map_err(|e| render(&e))?;
    let selections: Vec<Value> = catalog
        .selections
        .iter()
        .map(|s| {
            json!({
                "key": s.key.to_string(),
                "app": s.app.to_string(),
                "alias": s.alias,
                "image": s.image,
                "repository": s.repository.to_string(),
                "strategy": s.config.strategy.to_string(),
                "allowTags": s.config.allow_tags,
                "ignoreTags": s.config.ignore_tags,
                "platforms": s.config.platforms,
                "pullSecret": s.pull_secret.as_ref().map(|p| format!("{p:?}")),
                "forceUpdate": s.force_update,
                "definedByReflector": s.defined_by == DefinedBy::KubeSphereUpdater,
                "source": s.source,
            })
        })
        .collect();
    let template = parse_commit_template(None).unwrap();
    let apps: Vec<Value> = wb
        .apps
        .iter()
        .map(|a| {
            json!({
                "app": a.app.to_string(),
                "origin": a.origin.describe(),
                "method": format!("{:?}", a.method),
                "target": format!("{:?}", a.target),
                "images": a.images.iter().map(|i| json!({
                    "key": i.key.to_string(),
                    "alias": i.alias,
                    "image": i.image,
                    "old": i.old.as_ref().map(ToString::to_string),
                    "new": i.new.to_string(),
                })).collect::<Vec<_>>(),
                "commitMessage": render_commit_message(&template, &a.commit).message,
                "git": a.git.as_ref().map(|g| json!({
                    "repository": g.repository,
                    "checkout": g.checkout,
                    "push": g.push,
                    "credentials": format!("{:?}", g.credentials),
                    "targetKey": g.target_key,
                    "pullRequest": g.pull_request.as_ref().map(|p| json!({"provider": p.provider, "labels": p.labels})),
                })),
            })
        })
        .collect();
    let files_json: Vec<Value> = wb
        .files
        .iter()
        .map(|f| {
            json!({
                "path": f.path,
                "created": f.created,
                "edits": f.edits.len(),
                "changes": f.changes.iter().map(|c| json!({
                    "object": format!("{}/{}/{}/{}", c.object.api_version, c.object.kind, c.object.namespace, c.object.name),
                    "field": c.field_path,
                    "old": c.old_value,
                    "new": c.new_value,
                    "setter": c.key.to_string(),
                    "app": c.app.to_string(),
                    "alias": c.alias,
                    "line": c.position.line,
                    "column": c.position.column,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut diagnostics = render(&catalog.diagnostics);
    diagnostics.extend(render(&wb.diagnostics));
    let result = json!({
        "selections": selections,
        "apps": apps,
        "files": files_json,
        "diagnostics": diagnostics,
    });
    Ok((wb, result))
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

fn compare_trees(expected: &Path, actual: &Path) -> Result<(), Failed> {
    let want = snapshot(expected);
    let got = snapshot(actual);
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

fn run_case(dir: &Path) -> Result<(), Failed> {
    for entry in fs_err::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if !KNOWN.contains(&name.as_str()) {
            return Err(format!("unknown file {name} in {} (typo?)", dir.display()).into());
        }
    }
    if updating() && std::env::var_os("CI").is_some() {
        return Err("UPDATE_EXPECT is refused when CI is set".into());
    }
    let case: Case = serde_saphyr::from_str(&fs_err::read_to_string(dir.join("case.yaml"))?)
        .map_err(|e| format!("case.yaml: {e}"))?;
    let tmp = tempfile::tempdir()?;
    let work = tmp.path().join("work");
    let input = snapshot(&dir.join("in"));
    write_tree(&work, &input);
    let outcome = run(&work, dir, &case);
    let (result_text, errors_text) = match &outcome {
        Ok((wb, result)) => {
            for f in &wb.files {
                // The new text is the original with the edits applied, nothing else.
                let original = input
                    .get(&f.path)
                    .map(|b| String::from_utf8(b.clone()).unwrap())
                    .unwrap_or_default();
                let mut edits = f.edits.clone();
                let spliced = apply_edits(&original, &mut edits)?;
                if spliced != f.new_text {
                    return Err(format!("{}: new text is not its edits applied", f.path).into());
                }
                if f.created == input.contains_key(&f.path) {
                    return Err(format!("{}: created is wrong", f.path).into());
                }
                let path = work.join(&f.path);
                fs_err::create_dir_all(path.parent().unwrap())?;
                fs_err::write(path, &f.new_text)?;
            }
            (serde_json::to_string_pretty(result)? + "\n", String::new())
        }
        Err(errors) => (String::new(), errors.join("\n") + "\n"),
    };
    if updating() {
        let out = dir.join("out");
        if out.exists() {
            fs_err::remove_dir_all(&out)?;
        }
        write_tree(&out, &snapshot(&work));
        for (name, text) in [("result.json", &result_text), ("errors.txt", &errors_text)] {
            let path = dir.join(name);
            if text.is_empty() {
                let _ = fs_err::remove_file(path);
            } else {
                fs_err::write(path, text)?;
            }
        }
        eprintln!("updated {}", dir.display());
    }
    compare_trees(&dir.join("out"), &work)?;
    expect_text(
        "result.json",
        &fs_err::read_to_string(dir.join("result.json")).unwrap_or_default(),
        &result_text,
    )?;
    expect_text(
        "errors.txt",
        &fs_err::read_to_string(dir.join("errors.txt")).unwrap_or_default(),
        &errors_text,
    )?;
    if outcome.is_err() {
        // Nothing is written when planning fails.
        compare_trees(&dir.join("in"), &work)?;
        return Ok(());
    }
    // A second run over the output plans nothing.
    let (again, _) = run(&work, dir, &case).map_err(|e| format!("second run failed: {e:?}"))?;
    if !again.files.is_empty() || !again.apps.is_empty() {
        return Err(format!(
            "second run is not idempotent: files {:?}, apps {:?}",
            again.files.iter().map(|f| &f.path).collect::<Vec<_>>(),
            again
                .apps
                .iter()
                .map(|a| a.app.to_string())
                .collect::<Vec<_>>()
        )
        .into());
    }
    Ok(())
}
