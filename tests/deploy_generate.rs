//! `image-update deploy`: one test per `testdata/deploy/CASE/` (the input
//! files `in/*.yaml`, the arguments `args`, one per line; the expected
//! `stdout.yaml` and `stderr.txt`, and `exit` when it is not 0), run from the
//! case directory so that diagnostics name `in/FILE:LINE:COL`;
//! `UPDATE_EXPECT=1` rewrites the expectations (refused when `CI` is set).
//! A case that fails writes nothing on stdout. Every expected manifest
//! stream is also checked by PyPI's `kubernetes-validate` (strict) for the
//! two latest Kubernetes versions it knows, and read back: the CronJobs have
//! `concurrencyPolicy: Forbid`, the hardened Pod, a `podFailurePolicy` on
//! the Job's exit codes (2 fails the Job, or the index in a fleet; 4 counts),
//! and arguments `image-update job` accepts.

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
