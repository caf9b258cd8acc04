//! The GitHub Action's contract, without a container: the binary is run as
//! the runner runs a Docker action's entrypoint (`image-update action`,
//! `INPUT_*` variables with `action.yml`'s defaults, the workspace as the
//! working directory, `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` files), and
//! everything it leaves is compared byte for byte with the golden cases of
//! `testdata/action/cases/` (see `action_cases`).
//!
//! Also checked: `action.yml` declares exactly the inputs and outputs the
//! binary knows, and the README's workflows run: each step that uses the
//! action is run with its `with:` over the example workspace, and every
//! `steps.ID.outputs.NAME` the workflow reads is an output the action
//! writes.
//!
//! `UPDATE_EXPECT=1 cargo test --test action` rewrites the golden files
//! (refused when `CI` is set).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

mod action_cases;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};

use action_cases::{Case, Prepared};
use image_update::api::action::{INPUTS, OUTPUTS, TEST_DELIMITER_VARIABLE};
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

/// The action's reference in the README's workflows.
fn action_ref() -> String {
    format!("image-update/image-update@v{}", env!("CARGO_PKG_VERSION"))
}

fn main() {
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = action_cases::cases()
        .into_iter()
        .map(|case| Trial::test(format!("case::{}", case.name), move || run_case(&case)))
        .collect();
    trials.push(Trial::test("action_yml_declares_the_contract", action_yml));
    trials.push(Trial::test("readme_workflows_run", readme_workflows));
    trials.push(Trial::test("help_lists_inputs_and_outputs", help));
    libtest_mimic::run(&args, trials).exit();
}

/// Run `image-update action` as the runner would, over `prepared`.
fn run_step(
    prepared: &Prepared,
    with: &BTreeMap<String, String>,
) -> Result<action_cases::Observed, Failed> {
    let home = prepared.tmp.path().join("home");
    fs_err::create_dir_all(&home).map_err(|e| e.to_string())?;
    let out = Command::new(BIN)
        .arg("action")
        .env_clear()
        .envs(action_cases::input_env(with)?)
        .env("HOME", &home)
        .env("CI", "true")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", &prepared.workspace)
        .env("GITHUB_OUTPUT", &prepared.output)
        .env("GITHUB_STEP_SUMMARY", &prepared.summary)
        .env(TEST_DELIMITER_VARIABLE, action_cases::DELIMITER)
        .current_dir(&prepared.workspace)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {BIN}: {e}"))?;
    action_cases::observe(
        prepared,
        out.stdout,
        out.stderr,
        out.status.code().unwrap_or(-1),
    )
}

fn run_case(case: &Case) -> Result<(), Failed> {
    let prepared = action_cases::prepare(&case.workspace)?;
    let observed = run_step(&prepared, &case.inputs)?;
    let seen = prepared.workspace.display().to_string();
    action_cases::compare(case, &observed, &seen, true)
}

fn action_yml() -> Result<(), Failed> {
    let action = action_cases::action_yml()?;
    let runs = &action["runs"];
    if runs["using"] != "docker" || runs["image"] != "Dockerfile" {
        return Err(format!("runs must be a Docker action built from Dockerfile: {runs}").into());
    }
    if runs["args"] != serde_json::json!(["action"]) {
        return Err(format!("runs.args must be [action]: {}", runs["args"]).into());
    }
    for key in ["entrypoint", "env"] {
        if !runs[key].is_null() {
            return Err(
                format!("runs.{key} is not expected: the image's ENTRYPOINT is used").into(),
            );
        }
    }
    let names = |what: &str| -> Result<Vec<String>, Failed> {
        let map = action[what]
            .as_object()
            .ok_or(format!("action.yml has no {what}"))?;
        for (name, spec) in map {
            if spec["description"].as_str().is_none_or(str::is_empty) {
                return Err(format!("{what}.{name} has no description").into());
            }
        }
        Ok(map.keys().cloned().collect())
    };
    let inputs = names("inputs")?;
    if inputs != INPUTS {
        return Err(format!("inputs {inputs:?}, the binary reads {INPUTS:?}").into());
    }
    let outputs = names("outputs")?;
    if outputs != OUTPUTS {
        return Err(format!("outputs {outputs:?}, the binary writes {OUTPUTS:?}").into());
    }
    for flag in ["fetch", "dry-run", "fail-on-warnings"] {
        if action["inputs"][flag]["default"] != "false" {
            return Err(format!("input {flag} must default to \"false\"").into());
        }
    }
    if action["inputs"]["path"]["default"] != "." {
        return Err("input path must default to \".\"".into());
    }
    // The prebuilt-image form is documented in the file itself.
    let text = fs_err::read_to_string(action_cases::root().join("action.yml"))
        .map_err(|e| e.to_string())?;
    let prebuilt = format!(
        "image: docker://ghcr.io/image-update/image-update:{}",
        env!("CARGO_PKG_VERSION")
    );
    if !text.contains(&prebuilt) {
        return Err(format!("action.yml does not document `{prebuilt}`").into());
    }
    Ok(())
}

/// The fenced `yaml` blocks of the README that use the action.
fn readme_workflows() -> Result<(), Failed> {
    let readme = fs_err::read_to_string(action_cases::root().join("README.md"))
        .map_err(|e| e.to_string())?;
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match &mut current {
            None if line.trim_end() == "```yaml" => current = Some(String::new()),
            Some(block) if line.trim_end() == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    let workflows: Vec<&String> = blocks
        .iter()
        .filter(|b| b.contains("uses: image-update/image-update@"))
        .collect();
    if workflows.len() < 2 {
        return Err(format!(
            "the README has {} workflows using the action, expected at least 2",
            workflows.len()
        )
        .into());
    }
    if !workflows
        .iter()
        .any(|w| w.contains("uses: peter-evans/create-pull-request@"))
    {
        return Err("no README workflow opens a pull request".into());
    }
    let reference = regex::Regex::new(r"steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)")
        .map_err(|e| e.to_string())?;
    for (i, text) in workflows.iter().enumerate() {
        let what = format!("README workflow {}", i + 1);
        let workflow = action_cases::yaml(&what, text)?;
        let jobs = workflow["jobs"]
            .as_object()
            .ok_or(format!("{what}: no jobs"))?;
        let mut ids = BTreeSet::new();
        for job in jobs.values() {
            for step in job["steps"].as_array().into_iter().flatten() {
                let Some(uses) = step["uses"].as_str() else {
                    continue;
                };
                if !uses.starts_with("image-update/image-update@") {
                    continue;
                }
                if uses != action_ref() {
                    return Err(format!("{what}: uses {uses}, expected {}", action_ref()).into());
                }
                let id = step["id"]
                    .as_str()
                    .ok_or(format!("{what}: the image-update step has no id"))?;
                ids.insert(id.to_owned());
                run_readme_step(&what, step)?;
            }
        }
        for found in reference.captures_iter(text) {
            let (id, output) = (&found[1], &found[2]);
            if !ids.contains(id) {
                return Err(format!("{what}: reads outputs of unknown step {id}").into());
            }
            if !OUTPUTS.contains(&output) {
                return Err(format!(
                    "{what}: reads output {output}, which the action never writes"
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Run a README step's `with:` over the example workspace: it must succeed
/// and change something.
fn run_readme_step(what: &str, step: &Value) -> Result<(), Failed> {
    let with: BTreeMap<String, String> = step["with"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let value = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    (k.clone(), value)
                })
                .collect()
        })
        .unwrap_or_default();
    if with.values().any(|v| v.contains("${{")) {
        return Err(format!("{what}: keep expressions out of the action's inputs").into());
    }
    let workspace = action_cases::root().join("testdata/action/workspaces/fleet");
    let prepared = action_cases::prepare(&workspace)?;
    let observed = run_step(&prepared, &with)?;
    let output = String::from_utf8_lossy(&observed.output);
    if observed.code != 0 || !output.contains("\nchanged=true\n") {
        return Err(format!(
            "{what}: exit {}, outputs:\n{output}\nstdout:\n{}\nstderr:\n{}",
            observed.code,
            String::from_utf8_lossy(&observed.stdout),
            String::from_utf8_lossy(&observed.stderr)
        )
        .into());
    }
    Ok(())
}

fn help() -> Result<(), Failed> {
    let out = Command::new(BIN)
        .args(["action", "--help"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("action --help failed: {text}").into());
    }
    for name in INPUTS.iter().chain(OUTPUTS) {
        if !text
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{name} ")))
        {
            return Err(format!("action --help does not describe {name}:\n{text}").into());
        }
    }
    Ok(())
}
