//! The KRM function, end to end.
//!
//! * Golden cases: every `testdata/krm/<case>/` holds `stdin.yaml` (a
//!   ResourceList) and the function's exact `stdout.yaml`, plus `exit-code`
//!   when it is not 0. Each case is also run on its own output, which must
//!   change nothing (and a third run must give the second output again).
//! * kpt cases: every `examples/<name>/` is a kpt package whose
//!   `.expected/config.yaml` says how to run it (`testType: eval|render`,
//!   `args`, `fnConfig`, `exitCode`); `.expected/out/` is the package kpt
//!   should write and `.expected/results.yaml` the results, both compared by
//!   YAML value (kpt normalises every file it writes). Plus a failing run
//!   that must leave the package byte for byte as it was.
//!
//! `UPDATE_EXPECT=1 cargo test --test krm [filter]` rewrites the expected
//! files (refused when `CI` is set). The kpt cases need `kpt` on PATH: they
//! are skipped without it, and fail without it when `CI` is set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use image_update::api::yaml::parse_values;
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn updating() -> Result<bool, Failed> {
    if std::env::var_os("UPDATE_EXPECT").is_none_or(|v| v.is_empty()) {
        return Ok(false);
    }
    if std::env::var_os("CI").is_some() {
        return Err("UPDATE_EXPECT is refused when CI is set".into());
    }
    Ok(true)
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = golden_trials();
    trials.push(Trial::test("fn_help", fn_doc_help));
    trials.push(Trial::test("kpt_fn_yaml", kpt_fn_yaml));
    trials.push(Trial::test(
        "no_arguments_act_as_fn",
        no_arguments_act_as_fn,
    ));
    trials.extend(kpt_trials());
    libtest_mimic::run(&args, trials).exit();
}

// ---------------------------------------------------------------- golden

fn golden_trials() -> Vec<Trial> {
    let dir = root().join("testdata/krm");
    let mut cases: Vec<PathBuf> = fs_err::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    cases.sort();
    cases
        .into_iter()
        .filter(|p| p.is_dir())
        .map(|case| {
            let name = case
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Trial::test(format!("golden::{name}"), move || golden(&case))
        })
        .collect()
}

/// Run the function with `stdin`; stdout and the exit code.
fn run_fn(stdin: &[u8]) -> Result<(Vec<u8>, i32), Failed> {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .arg("fn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {BIN}: {e}"))?;
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&data));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    writer
        .join()
        .map_err(|_| "stdin writer panicked")?
        .map_err(|e| format!("cannot write stdin: {e}"))?;
    Ok((out.stdout, out.status.code().unwrap_or(-1)))
}

fn golden(case: &Path) -> Result<(), Failed> {
    for entry in fs_err::read_dir(case).map_err(|e| e.to_string())? {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let name = name.to_string_lossy();
        if !matches!(name.as_ref(), "stdin.yaml" | "stdout.yaml" | "exit-code") {
            return Err(format!("{}: unknown file {name}", case.display()).into());
        }
    }
    let stdin = fs_err::read(case.join("stdin.yaml")).map_err(|e| format!("stdin.yaml: {e}"))?;
    let (stdout, code) = run_fn(&stdin)?;
    let expected_path = case.join("stdout.yaml");
    let code_path = case.join("exit-code");
    if updating()? {
        fs_err::write(&expected_path, &stdout).map_err(|e| e.to_string())?;
        if code == 0 {
            let _ = fs_err::remove_file(&code_path);
        } else {
            fs_err::write(&code_path, format!("{code}\n")).map_err(|e| e.to_string())?;
        }
        eprintln!("updated {}", expected_path.display());
    } else {
        let expected = fs_err::read(&expected_path)
            .map_err(|e| format!("stdout.yaml: {e} (run with UPDATE_EXPECT=1 to create it)"))?;
        let expected_code: i32 = match fs_err::read_to_string(&code_path) {
            Ok(s) => s.trim().parse().map_err(|e| format!("exit-code: {e}"))?,
            Err(_) => 0,
        };
        if stdout != expected {
            return Err(diff("stdout.yaml", &expected, &stdout).into());
        }
        if code != expected_code {
            return Err(format!("exit code {code}, expected {expected_code}").into());
        }
    }
    // Idempotence: the output, run again, changes no item; a third run
    // gives the second output back byte for byte.
    let (second, second_code) = run_fn(&stdout)?;
    let (third, third_code) = run_fn(&second)?;
    if third != second || third_code != second_code {
        return Err(diff("second run vs third run", &second, &third).into());
    }
    if code == 0 {
        if second_code != 0 {
            return Err(format!("second run exited {second_code}").into());
        }
        let strip = |bytes: &[u8]| -> Result<Value, Failed> {
            let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
            let mut docs = parse_values(text).map_err(|e| format!("output is not YAML: {e}"))?;
            let mut doc = docs.pop().ok_or("output is empty")?;
            if let Some(map) = doc.as_object_mut() {
                map.remove("results");
            }
            Ok(doc)
        };
        if strip(&stdout)? != strip(&second)? {
            return Err(diff("first run vs second run", &stdout, &second).into());
        }
    }
    Ok(())
}

fn diff(what: &str, expected: &[u8], actual: &[u8]) -> String {
    let expected = String::from_utf8_lossy(expected);
    let actual = String::from_utf8_lossy(actual);
    let diff = similar::TextDiff::from_lines(expected.as_ref(), actual.as_ref());
    format!(
        "{what} differs (- expected, + actual):\n{}",
        diff.unified_diff().context_radius(3)
    )
}

// ---------------------------------------------------------------- kpt

/// Whether kpt can be run; `Err` when it must be and cannot.
fn kpt_available() -> Result<bool, String> {
    let found = Command::new("kpt")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Ok(true);
    }
    if std::env::var_os("CI").is_some() {
        return Err("kpt is not installed, and CI is set: the kpt tests must run".into());
    }
    Ok(false)
}

fn kpt_trials() -> Vec<Trial> {
    let available = kpt_available();
    if available == Ok(false) {
        eprintln!(
            "note: kpt is not on PATH: the kpt tests are skipped (ignored); install kpt to run them"
        );
    }
    let mut examples: Vec<PathBuf> = fs_err::read_dir(root().join("examples"))
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    examples.sort();
    let mut trials: Vec<Trial> = examples
        .into_iter()
        .filter(|p| p.join(".expected/config.yaml").is_file())
        .map(|example| {
            let name = example
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let available = available.clone();
            Trial::test(format!("kpt::example::{name}"), move || {
                if available? {
                    kpt_example(&example)
                } else {
                    Ok(())
                }
            })
        })
        .collect();
    let available2 = available.clone();
    trials.push(Trial::test(
        "kpt::failure_leaves_package_untouched",
        move || {
            if available2? {
                kpt_failure_leaves_package_untouched()
            } else {
                Ok(())
            }
        },
    ));
    if available == Ok(false) {
        trials = trials
            .into_iter()
            .map(|t| t.with_ignored_flag(true))
            .collect();
    }
    trials
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), Failed> {
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

/// Every file under `dir` (relative `/` paths, skipping `.expected`), with
/// its bytes.
fn files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
        for entry in fs_err::read_dir(dir).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.file_name().is_some_and(|n| n == ".expected") {
                continue;
            }
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
    walk(dir, dir, &mut out)?;
    Ok(out)
}

fn is_yaml(rel: &str) -> bool {
    rel.ends_with(".yaml") || rel.ends_with(".yml") || rel.rsplit('/').next() == Some("Kptfile")
}

/// The files kept in `.expected/out/`: YAML, except the root Kptfile.
fn is_expected_output(rel: &str) -> bool {
    is_yaml(rel) && rel != "Kptfile"
}

fn yaml_value(rel: &str, bytes: &[u8]) -> Result<Vec<Value>, Failed> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("{rel}: {e}"))?;
    parse_values(text).map_err(|e| format!("{rel}: {e}").into())
}

/// Run kpt on `pkg` as `config` says; kpt's exit code, output and results.
fn run_kpt(pkg: &Path, config: &Value, results_dir: &Path) -> Result<(i32, String, Value), Failed> {
    let bin_dir = Path::new(BIN).parent().ok_or("binary has no directory")?;
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("kpt");
    cmd.env("PATH", path);
    match config["testType"].as_str().unwrap_or("eval") {
        "render" => {
            cmd.args(["fn", "render"]).arg(pkg).arg("--allow-exec");
        }
        "eval" => {
            cmd.args(["fn", "eval"]).arg(pkg).arg("--exec").arg(BIN);
            if let Some(file) = config["fnConfig"].as_str() {
                cmd.arg("--fn-config").arg(pkg.join(file));
            }
        }
        other => return Err(format!("unknown testType {other}").into()),
    }
    cmd.arg("--results-dir").arg(results_dir);
    if let Some(args) = config["args"].as_object() {
        cmd.arg("--");
        for (k, v) in args {
            cmd.arg(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    let out = cmd.output().map_err(|e| format!("cannot run kpt: {e}"))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let results = match fs_err::read(results_dir.join("results.yaml")) {
        Ok(bytes) => {
            let mut docs = yaml_value("results.yaml", &bytes)?;
            let mut doc = docs.pop().ok_or("empty results.yaml")?;
            let exit = doc["exitCode"].clone();
            let results = doc["items"][0]
                .as_object_mut()
                .and_then(|item| item.remove("results"))
                .unwrap_or(Value::Null);
            serde_json::json!({"exitCode": exit, "results": results})
        }
        Err(_) => Value::Null,
    };
    Ok((out.status.code().unwrap_or(-1), log, results))
}

fn kpt_example(example: &Path) -> Result<(), Failed> {
    let expected_dir = example.join(".expected");
    let config_bytes = fs_err::read(expected_dir.join("config.yaml")).map_err(|e| e.to_string())?;
    let config = yaml_value("config.yaml", &config_bytes)?
        .pop()
        .ok_or("empty config.yaml")?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let pkg = tmp.path().join(example.file_name().ok_or("no name")?);
    copy_tree(example, &pkg)?;
    let (code, log, results) = run_kpt(&pkg, &config, &tmp.path().join("results"))?;
    let expected_code = config["exitCode"].as_i64().unwrap_or(0);
    if i64::from(code) != expected_code {
        return Err(format!("kpt exited {code}, expected {expected_code}:\n{log}").into());
    }
    let before = files(example)?;
    let after = files(&pkg)?;
    let out_dir = expected_dir.join("out");
    let results_file = expected_dir.join("results.yaml");
    if updating()? {
        let _ = fs_err::remove_dir_all(&out_dir);
        for (rel, bytes) in after.iter().filter(|(rel, _)| is_expected_output(rel)) {
            let target = out_dir.join(rel);
            if let Some(parent) = target.parent() {
                fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            fs_err::write(&target, bytes).map_err(|e| e.to_string())?;
        }
        let text = serde_saphyr::to_string(&results).map_err(|e| e.to_string())?;
        fs_err::write(&results_file, text).map_err(|e| e.to_string())?;
        eprintln!("updated {}", expected_dir.display());
        return Ok(());
    }
    // Files that are not YAML are never touched.
    for (rel, bytes) in before.iter().filter(|(rel, _)| !is_yaml(rel)) {
        if after.get(rel) != Some(bytes) {
            return Err(format!("{rel} changed or vanished").into());
        }
    }
    // The Kptfile keeps its value (it is not in `.expected/out/`: a Kptfile
    // there would make kpt render it as a nested package).
    let kptfile = |files: &BTreeMap<String, Vec<u8>>| -> Result<Vec<Value>, Failed> {
        yaml_value("Kptfile", files.get("Kptfile").ok_or("no Kptfile")?)
    };
    if kptfile(&before)? != kptfile(&after)? {
        return Err("the Kptfile changed".into());
    }
    let expected = files(&out_dir)?;
    let actual: BTreeMap<&String, &Vec<u8>> = after
        .iter()
        .filter(|(rel, _)| is_expected_output(rel))
        .collect();
    let expected_names: Vec<&String> = expected.keys().collect();
    let actual_names: Vec<&String> = actual.keys().copied().collect();
    if expected_names != actual_names {
        return Err(format!("files {actual_names:?}, expected {expected_names:?}").into());
    }
    for (rel, bytes) in &expected {
        let got = yaml_value(rel, actual[rel])?;
        if got != yaml_value(rel, bytes)? {
            return Err(diff(rel, bytes, actual[rel]).into());
        }
    }
    let expected_results = yaml_value(
        "results.yaml",
        &fs_err::read(&results_file).map_err(|e| format!("results.yaml: {e}"))?,
    )?
    .pop()
    .ok_or("empty results.yaml")?;
    if results != expected_results {
        return Err(format!(
            "results differ:\nexpected {}\nactual   {}",
            serde_json::to_string_pretty(&expected_results).unwrap_or_default(),
            serde_json::to_string_pretty(&results).unwrap_or_default()
        )
        .into());
    }
    Ok(())
}

/// A conflict (an argument against an ImagePolicy in the package) fails the
/// function; kpt then writes nothing, not even its usual normalisation.
fn kpt_failure_leaves_package_untouched() -> Result<(), Failed> {
    let example = root().join("examples/imageupdate-render");
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let pkg = tmp.path().join("pkg");
    copy_tree(&example, &pkg)?;
    let config = serde_json::json!({
        "testType": "eval",
        "args": {"flux-system:podinfo": "ghcr.io/stefanprodan/podinfo:6.7.0"},
    });
    let (code, log, results) = run_kpt(&pkg, &config, &tmp.path().join("results"))?;
    if code == 0 {
        return Err(format!("kpt succeeded:\n{log}").into());
    }
    let message = results["results"][0]["message"].as_str().unwrap_or("");
    if !message.contains("given twice") || !message.contains("ImagePolicy flux-system/podinfo") {
        return Err(format!("unexpected first result {message:?}:\n{log}").into());
    }
    if files(&example)? != files(&pkg)? {
        return Err(format!("the package changed although the function failed:\n{log}").into());
    }
    Ok(())
}

/// `kpt fn doc --image` runs `IMAGE --help` (no container runtime here, so
/// no kpt): it must exit 0 and point to the function's docs, which
/// `fn --help` prints.
fn fn_doc_help() -> Result<(), Failed> {
    let top = Command::new(BIN)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !top.status.success()
        || !String::from_utf8_lossy(&top.stdout).contains("image-update fn --help")
    {
        return Err("--help does not mention the KRM function".into());
    }
    let out = Command::new(BIN)
        .args(["fn", "--help"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success()
        || !text.contains("ImageUpdateAutomation")
        || !text.contains("kpt fn eval")
    {
        return Err(format!("fn --help: {text}").into());
    }
    Ok(())
}

/// Every functionConfig example in `kpt-fn.yaml` is accepted by the
/// function, and every example package it lists exists with its
/// expectations.
fn kpt_fn_yaml() -> Result<(), Failed> {
    let bytes = fs_err::read(root().join("kpt-fn.yaml")).map_err(|e| e.to_string())?;
    let meta = yaml_value("kpt-fn.yaml", &bytes)?
        .pop()
        .ok_or("empty kpt-fn.yaml")?;
    let configs = meta["functionConfigs"]
        .as_array()
        .ok_or("no functionConfigs")?;
    if configs.len() != 3 {
        return Err(format!("{} functionConfigs, expected 3", configs.len()).into());
    }
    for config in configs {
        let example = &config["example"];
        if example["kind"] != config["kind"] || example["apiVersion"] != config["apiVersion"] {
            return Err(format!("example of {} has another kind", config["kind"]).into());
        }
        let list = serde_json::json!({
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [],
            "functionConfig": example,
        });
        let (stdout, code) = run_fn(list.to_string().as_bytes())?;
        if code != 0 {
            return Err(format!(
                "example {} is refused:\n{}",
                config["kind"],
                String::from_utf8_lossy(&stdout)
            )
            .into());
        }
    }
    let examples = meta["examples"].as_array().ok_or("no examples")?;
    for example in examples {
        let path = example["path"].as_str().ok_or("example without path")?;
        if !root().join(path).join(".expected/config.yaml").is_file() {
            return Err(format!("{path}: no such example package").into());
        }
    }
    Ok(())
}

/// A container function gets no argv: the bare binary with a ResourceList
/// on stdin must answer exactly as `fn` does.
fn no_arguments_act_as_fn() -> Result<(), Failed> {
    use std::io::Write;
    let stdin = fs_err::read(root().join("testdata/krm/kpt-eval-configmap/stdin.yaml"))
        .map_err(|e| e.to_string())?;
    let (expected, expected_code) = run_fn(&stdin)?;
    let mut child = Command::new(BIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut input = child.stdin.take().ok_or("no stdin")?;
    input.write_all(&stdin).map_err(|e| e.to_string())?;
    drop(input);
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.stdout != expected || out.status.code() != Some(expected_code) {
        return Err(diff("bare binary vs fn", &expected, &out.stdout).into());
    }
    Ok(())
}
