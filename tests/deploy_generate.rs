//! `image-update deploy`: one test per `testdata/deploy/CASE/` (the input
//! files `in/*.yaml`, the arguments `args`, one per line; the expected
//! `stdout.yaml` and `stderr.txt`, and `exit` when it is not 0), run from the
//! case directory so that diagnostics name `in/FILE:LINE:COL`;
//! `UPDATE_EXPECT=1` rewrites the expectations (refused when `CI` is set).
//! A case that fails writes nothing on stdout. Every expected manifest
//! stream is also checked by PyPI's `kubernetes-validate` (strict) for
//! every Kubernetes minor version from 1.30 to the newest it knows, and
//! read back: the CronJobs have
//! `concurrencyPolicy: Forbid`, the hardened Pod, a `podFailurePolicy` on
//! the Job's exit codes (2 fails the Job, or the index in a fleet; 4 counts),
//! and arguments `image-update job` accepts. The same inputs as a ResourceList
//! with a `Deploy` functionConfig (the arguments as its fields) give the same
//! objects through `image-update fn`, added to the items, or the same failure
//! (a Secret among the items is no input there, but a file of the package).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::path::{Path, PathBuf};
use std::process::Command;

use image_update_testkit::trial_with;
use libtest_mimic::Failed;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/deploy")
}

fn cases() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs_err::read_dir(root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn main() {
    let mut trials = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let dir = case.clone();
        trials.push(trial_with(format!("golden: {name}"), &[], move || {
            golden(&dir)
        }));
        if case.join("stdout.yaml").exists() {
            let dir = case.clone();
            trials.push(trial_with(format!("shape: {name}"), &[], move || {
                shape(&dir)
            }));
        }
        let dir = case.clone();
        trials.push(trial_with(
            format!("as a KRM function: {name}"),
            &[],
            move || as_function(&dir),
        ));
    }
    trials.extend(image_update_testkit::kube::trials(
        "kubernetes-validate: every generated stream",
        || {
            let files: Vec<PathBuf> = cases()
                .into_iter()
                .map(|c| c.join("stdout.yaml"))
                .filter(|p| p.exists())
                .collect();
            ((), files)
        },
    ));
    image_update_testkit::run(trials);
}

fn golden(case: &Path) -> Result<(), Failed> {
    let args = fs_err::read_to_string(case.join("args"))?;
    let mut inputs: Vec<String> = fs_err::read_dir(case.join("in"))?
        .map(|e| format!("in/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    inputs.sort();
    let out = Command::new(BIN)
        .current_dir(case)
        .arg("deploy")
        .args(args.lines().filter(|l| !l.is_empty()))
        .args(&inputs)
        .output()?;
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8(out.stdout)?;
    let stderr = String::from_utf8(out.stderr)?;
    if code != 0 && !stdout.is_empty() {
        return Err(format!("exit {code} with output on stdout:\n{stdout}").into());
    }
    let expected: [(&str, String); 3] = [
        ("stdout.yaml", stdout),
        ("stderr.txt", stderr),
        (
            "exit",
            if code == 0 {
                String::new()
            } else {
                format!("{code}\n")
            },
        ),
    ];
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        if std::env::var_os("CI").is_some() {
            return Err("UPDATE_EXPECT is refused when CI is set".into());
        }
        for (file, text) in &expected {
            let path = case.join(file);
            if text.is_empty() {
                let _ = fs_err::remove_file(&path);
            } else {
                fs_err::write(&path, text)?;
            }
        }
        return Ok(());
    }
    for (file, text) in &expected {
        let want = fs_err::read_to_string(case.join(file)).unwrap_or_default();
        if &want != text {
            return Err(format!(
                "{}/{file} differs:\n--- expected\n{want}\n--- got\n{text}",
                case.display()
            )
            .into());
        }
    }
    Ok(())
}

fn shape(case: &Path) -> Result<(), Failed> {
    let objects =
        image_update::api::yaml::parse_values(&fs_err::read_to_string(case.join("stdout.yaml"))?)?;
    let crons: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "CronJob").collect();
    assert!(!crons.is_empty());
    for cron in crons {
        let spec = &cron["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert_eq!(spec["timeZone"], "Etc/UTC");
        let job = &spec["jobTemplate"]["spec"];
        let fleet = job["completionMode"] == "Indexed";
        let rules = job["podFailurePolicy"]["rules"].as_array().unwrap();
        let on = |code: i64| {
            rules
                .iter()
                .find(|r| {
                    r["onExitCodes"]["values"]
                        .as_array()
                        .is_some_and(|v| v.contains(&Value::from(code)))
                })
                .map(|r| r["action"].as_str().unwrap())
        };
        assert_eq!(on(2), Some(if fleet { "FailIndex" } else { "FailJob" }));
        assert_eq!(on(4), Some("Count"));
        assert_eq!(on(1), None, "a failure worth retrying is retried");
        let pod = &job["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["automountServiceAccountToken"], false);
        let c = &pod["containers"][0];
        let sc = &c["securityContext"];
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(sc["capabilities"]["drop"][0], "ALL");
        assert_eq!(sc["runAsUser"], 65534);
        // The arguments parse: clap reads them all before acting on --help.
        let args: Vec<String> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(args[0], "job");
        let out = Command::new(BIN).args(&args).arg("--help").output()?;
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Every file the arguments name is in a ConfigMap the Pod mounts, or
        // a Secret it projects there.
        let projected: Vec<&str> = pod["volumes"][0]["projected"]["sources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["secret"]["items"].as_array())
            .flatten()
            .filter_map(|i| i["path"].as_str())
            .collect();
        for path in args.iter().filter(|a| a.starts_with("/config/")) {
            let file = path.rsplit('/').next().unwrap();
            let found = projected.contains(&file)
                || objects.iter().any(|o| {
                    o["kind"] == "ConfigMap"
                        && o["data"]
                            .as_object()
                            .unwrap()
                            .keys()
                            .any(|k| k == file || k.ends_with(&format!(".{file}")))
                });
            assert!(found, "{path} is in no ConfigMap");
        }
    }
    Ok(())
}

/// The case through `image-update fn`: its input files as the items (each
/// with its path annotation, as kpt gives them), its arguments as the
/// `Deploy` functionConfig's fields.
fn as_function(case: &Path) -> Result<(), Failed> {
    let args = fs_err::read_to_string(case.join("args"))?;
    let mut config = String::from(
        "functionConfig:\n  apiVersion: fn.image-update.dev/v1alpha1\n  kind: Deploy\n  metadata: {name: deploy}\n",
    );
    let mut words = args.lines().filter(|l| !l.is_empty());
    let mut providers = serde_json::Map::new();
    while let Some(flag) = words.next() {
        let field = match flag {
            "--state" => {
                config.push_str("  state: true\n");
                continue;
            }
            "--registry-provider" => {
                let pair = words.next().ok_or("a flag without its value")?;
                let (host, provider) = pair.split_once('=').ok_or("not HOST=PROVIDER")?;
                providers.insert(host.to_owned(), Value::from(provider));
                continue;
            }
            "--fleet" => "fleet",
            "--image" => "image",
            "--namespace" => "namespace",
            "--parallelism" => "parallelism",
            "--cloud-identity" => "cloudIdentity",
            other => return Err(format!("no functionConfig field for {other}").into()),
        };
        let value = words.next().ok_or("a flag without its value")?;
        let value = if field == "parallelism" {
            value.to_owned()
        } else {
            format!("{value:?}")
        };
        config.push_str(&format!("  {field}: {value}\n"));
    }
    if !providers.is_empty() {
        config.push_str(&format!(
            "  registryProviders: {}\n",
            Value::Object(providers)
        ));
    }
    let mut files: Vec<PathBuf> = fs_err::read_dir(case.join("in"))?
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut items = Vec::new();
    for file in &files {
        let name = format!("in/{}", file.file_name().unwrap().to_string_lossy());
        for mut doc in image_update::api::yaml::parse_values(&fs_err::read_to_string(file)?)? {
            doc["metadata"]["annotations"]["config.kubernetes.io/path"] = Value::from(name.clone());
            items.push(doc);
        }
    }
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {}\n{config}",
        serde_json::to_string(&items)?
    );
    let mut child = Command::new(BIN)
        .arg("fn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), list.as_bytes())?;
    let out = child.wait_with_output()?;
    let answer = image_update::api::yaml::parse_values(&String::from_utf8(out.stdout)?)?;
    let answer = answer.first().ok_or("no ResourceList")?;
    let Ok(expected) = fs_err::read_to_string(case.join("stdout.yaml")) else {
        let secret_only = fs_err::read_to_string(case.join("stderr.txt"))?
            .lines()
            .all(|l| l.contains("a Secret: deploy writes no Secret"));
        if secret_only {
            return Ok(());
        }
        return if out.status.code() == Some(1) && answer["results"][0]["severity"] == "error" {
            Ok(())
        } else {
            Err(format!("{}: the function did not fail: {answer}", case.display()).into())
        };
    };
    if !out.status.success() {
        return Err(format!("the function failed: {}", answer["results"]).into());
    }
    let returned = answer["items"].as_array().ok_or("no items")?;
    if returned.len() < items.len() || returned[..items.len()] != items[..] {
        return Err("the input items did not come back first, unchanged".into());
    }
    let generated: Vec<Value> = returned[items.len()..]
        .iter()
        .cloned()
        .map(|mut o| {
            let annotations = o["metadata"]["annotations"].as_object_mut().unwrap();
            if annotations.get("fn.image-update.dev/generated-by") != Some(&Value::from("deploy")) {
                panic!("a generated item without its annotation: {o}");
            }
            // The function's own and kpt's annotations; an object's own (a
            // ServiceAccount's cloud identity) stay, as deploy writes them.
            annotations.retain(|k, _| {
                k != "fn.image-update.dev/generated-by" && !k.contains("config.kubernetes.io/")
            });
            if annotations.is_empty() {
                o["metadata"].as_object_mut().unwrap().remove("annotations");
            }
            o
        })
        .collect();
    let expected = image_update::api::yaml::parse_values(&expected)?;
    if generated != expected {
        fs_err::write("/tmp/exp.json", serde_json::to_string_pretty(&expected)?)?;
        return Err(format!(
            "the function's objects differ from deploy's:\n{}",
            serde_json::to_string_pretty(&generated)?
        )
        .into());
    }
    Ok(())
}
