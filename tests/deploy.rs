//! The Kubernetes manifests in `deploy/` (a Job and a CronJob running
//! `image-update job`), checked against what they depend on, so that none of
//! it can drift without a failing test:
//!
//! * every document parses, and each file holds the objects it should;
//! * the container image is the published one (`kpt-fn.yaml`'s `image` with
//!   the crate's version, as `action.yml` names it);
//! * the Pod is hardened (non-root 65534, read-only root, no privilege
//!   escalation, no capabilities, RuntimeDefault seccomp, no service account
//!   token), its work tree is an `emptyDir` at `/tmp`, it has resources and a
//!   termination message policy;
//! * `podFailurePolicy` maps the README's "configuration" exit code to
//!   `FailJob` and its "push conflict" exit code to `Count` (both parsed from
//!   the README's Job section), with `restartPolicy: Never`, a
//!   `backoffLimit` and an `activeDeadlineSeconds`; the CronJob forbids
//!   concurrent runs and keeps `--state` on a mounted claim;
//! * the ConfigMap's objects are an ImageUpdateAutomation (read by the
//!   crate's reader) naming the GitRepository beside it, and ImagePolicy
//!   definitions the reflector reads; the Secret has every key the Pod takes
//!   from it; both files hold the same ConfigMap and Secret;
//! * the binary accepts the container's arguments: `image-update job ARGS
//!   --help` exits 0 (clap parses every argument before it acts on `--help`,
//!   which the first trial checks with `update`), and a run with the
//!   ConfigMap's files against a closed local port fails as a network error
//!   (exit 1), not as a configuration error (exit 2);
//! * both files are valid, strictly (unknown fields are errors), for every
//!   Kubernetes minor version from 1.30 to the newest PyPI's
//!   `kubernetes-validate` knows.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use image_update_testkit::trial;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const CONTAINER: &str = "image-update";
const CONFIG_MOUNT: &str = "/config";

fn main() {
    let mut trials = vec![
        trial("README exit-code reader", &[], exit_code_reader),
        trial("documents", &[], documents),
        trial("image is the published one", &[], image),
        trial("pod is hardened", &[], pod_shape),
        trial(
            "podFailurePolicy follows the README's exit codes",
            &[],
            failure_policy,
        ),
        trial("cronjob: Forbid, --state on a claim", &[], cronjob_shape),
        trial(
            "config objects are read by image-update",
            &[],
            config_objects,
        ),
        trial("secret keys and environment", &[], secret_and_env),
        trial(
            "clap stops at --help only after accepting the arguments",
            &[],
            help_probe,
        ),
        trial(
            "container args are accepted by `image-update job`",
            &[],
            args_accepted,
        ),
        trial("config runs as far as the network", &[], config_runs),
    ];
    trials.extend(image_update_testkit::kube::trials(
        "kubernetes-validate: deploy/job.yaml and deploy/cronjob.yaml",
        || {
            (
                (),
                vec![
                    root().join("deploy/job.yaml"),
                    root().join("deploy/cronjob.yaml"),
                ],
            )
        },
    ));
    image_update_testkit::run(trials);
}

// ------------------------------------------------------------ the files

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    fs_err::read_to_string(root().join(path)).unwrap()
}

/// The objects of `deploy/NAME`, comment-only documents dropped.
fn objects(name: &str) -> Vec<Value> {
    let path = format!("deploy/{name}");
    image_update::api::yaml::parse_values(&read(&path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

fn kinds(name: &str) -> Vec<String> {
    objects(name)
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("?").to_owned())
        .collect()
}

fn object(name: &str, kind: &str) -> Value {
    let mut found: Vec<Value> = objects(name)
        .into_iter()
        .filter(|o| o["kind"] == kind)
        .collect();
    assert_eq!(found.len(), 1, "deploy/{name}: one {kind} expected");
    found.remove(0)
}

/// The Job spec of each manifest: the Job's, and the CronJob's template.
fn job_specs() -> Vec<(&'static str, Value)> {
    vec![
        ("job.yaml", object("job.yaml", "Job")["spec"].clone()),
        (
            "cronjob.yaml",
            object("cronjob.yaml", "CronJob")["spec"]["jobTemplate"]["spec"].clone(),
        ),
    ]
}

fn pod_spec(job_spec: &Value) -> &Value {
    &job_spec["template"]["spec"]
}

fn container(job_spec: &Value) -> &Value {
    let containers = pod_spec(job_spec)["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "one container expected");
    &containers[0]
}

fn args(job_spec: &Value) -> Vec<String> {
    container(job_spec)["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().expect("every argument is a string").to_owned())
        .collect()
}

/// The value after `flag` in `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

// ------------------------------------------------------------ the README

/// The README's Job section: from the level-2 heading that names the Job mode
/// to the next level-2 heading.
fn readme_job_section() -> String {
    let readme = read("README.md");
    let mut section = None::<String>;
    // The subsection on deploy/ itself is left out: the facts checked here
    // must come from the Job mode's own documentation.
    let mut skipping = false;
    for line in readme.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            if section.is_some() {
                break;
            }
            if !heading.contains("Kubernetes Job")
                && heading
                    .to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|word| word == "job")
            {
                section = Some(String::new());
            }
            continue;
        }
        if let Some(heading) = line.strip_prefix("### ") {
            skipping = heading.contains("Kubernetes Job");
        }
        if let Some(text) = &mut section
            && !skipping
        {
            text.push_str(line);
            text.push('\n');
        }
    }
    section.unwrap_or_else(|| {
        panic!("README.md has no `## Job ...` section (the Job mode's flags and exit codes)")
    })
}

/// The exit codes documented in `section`, each with its text (lower
/// case), in any of the README's three ways of listing them: a table row
/// (`` | `2` | usage or configuration | ``), a line that starts with the
/// code (`2  usage or configuration`, also as a list item), or codes in a
/// sentence (`` `2` usage or configuration, `4` push conflict ``).
fn exit_codes(section: &str) -> Vec<(i64, String)> {
    let number = |token: &str| token.trim().trim_matches('`').parse::<i64>().ok();
    let mut codes = Vec::new();
    for line in section.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('|') {
            let cells: Vec<&str> = trimmed.trim_matches('|').split('|').collect();
            if let Some(code) = cells.first().and_then(|c| number(c)) {
                codes.push((code, cells[1..].join(" ").to_lowercase()));
            }
            continue;
        }
        let item = trimmed.trim_start_matches(['-', '*']).trim_start();
        if let Some((first, rest)) = item.split_once(char::is_whitespace)
            && !first.starts_with('`')
            && let Ok(code) = first.parse::<i64>()
        {
            codes.push((code, rest.trim().to_lowercase()));
            continue;
        }
        // Sentence form: each `N` owns the text up to the next `N`.
        let pieces: Vec<&str> = line.split('`').collect();
        let mut i = 1;
        while i < pieces.len() {
            if let Some(code) = number(pieces[i]) {
                let mut text = String::new();
                let mut j = i + 1;
                while j < pieces.len() && !(j % 2 == 1 && number(pieces[j]).is_some()) {
                    text.push_str(pieces[j]);
                    j += 1;
                }
                codes.push((code, text.trim().to_lowercase()));
                i = j;
            } else {
                i += 2;
            }
        }
    }
    codes
}

/// The one exit code whose documented text has one of `words` (whole words).
fn code_for(codes: &[(i64, String)], words: &[&str]) -> Result<i64, String> {
    let found: BTreeSet<i64> = codes
        .iter()
        .filter(|(_, text)| {
            text.split(|c: char| !c.is_alphanumeric())
                .any(|w| words.contains(&w))
        })
        .map(|(code, _)| *code)
        .collect();
    match found.len() {
        1 => Ok(found.into_iter().next().unwrap()),
        _ => Err(format!(
            "exactly one exit code should be documented for {words:?}; found {found:?} in {codes:?}"
        )),
    }
}

/// Words that name the configuration exit code.
const CONFIGURATION: &[&str] = &["configuration"];
/// Words that name the push-conflict exit code.
const CONFLICT: &[&str] = &["conflict", "conflicts", "race", "races"];

/// The README's Job section's exit code for `words`.
fn readme_code(words: &[&str]) -> i64 {
    code_for(&exit_codes(&readme_job_section()), words)
        .unwrap_or_else(|e| panic!("README.md, Job section: {e}"))
}

// ------------------------------------------------------------ trials

/// The reader finds the codes in each of the README's layouts, and refuses
/// an ambiguous or missing one.
fn exit_code_reader() {
    let table = "| Code | Meaning |\n|---|---|\n| `0` | pushed |\n| `2` | usage or configuration error |\n| `4` | the push conflict persisted |\n";
    let block = "```text\n  1  failed: network\n  2  usage or configuration error\n  4  every push lost a race with other writers\n  128+N  ended by signal N\n```\n";
    let sentence = "Exit status: `0` success, `1` failure, `2` usage or configuration, `4` push conflict after the retries.\n";
    for text in [table, block, sentence] {
        let codes = exit_codes(text);
        assert_eq!(code_for(&codes, CONFIGURATION), Ok(2), "{text}: {codes:?}");
        assert_eq!(code_for(&codes, CONFLICT), Ok(4), "{text}: {codes:?}");
    }
    assert!(
        code_for(
            &exit_codes("`2` configuration, `3` configuration\n"),
            CONFIGURATION
        )
        .is_err()
    );
    assert!(code_for(&exit_codes("`0` success\n"), CONFLICT).is_err());
}

fn documents() {
    assert_eq!(kinds("job.yaml"), ["ConfigMap", "Secret", "Job"]);
    assert_eq!(
        kinds("cronjob.yaml"),
        ["ConfigMap", "Secret", "PersistentVolumeClaim", "CronJob"]
    );
    for name in ["job.yaml", "cronjob.yaml"] {
        for o in objects(name) {
            assert!(o["apiVersion"].is_string(), "deploy/{name}: {o}");
            assert!(o["metadata"]["name"].is_string(), "deploy/{name}: {o}");
            // `kubectl apply -n NS` chooses the namespace.
            assert!(
                o["metadata"]["namespace"].is_null(),
                "deploy/{name}: {} has a namespace",
                o["kind"]
            );
        }
    }
    assert_eq!(object("job.yaml", "Job")["apiVersion"], "batch/v1");
    assert_eq!(object("cronjob.yaml", "CronJob")["apiVersion"], "batch/v1");
}

fn image() {
    let kpt: Value =
        image_update::api::yaml::parse_values(&read("kpt-fn.yaml")).unwrap()[0].clone();
    let name = kpt["image"].as_str().expect("kpt-fn.yaml: image");
    let published = format!("{name}:{}", env!("CARGO_PKG_VERSION"));
    assert!(
        read("action.yml").contains(&format!("image: docker://{published}\n")),
        "action.yml does not name {published}"
    );
    for (file, spec) in job_specs() {
        assert_eq!(
            container(&spec)["image"],
            published.as_str(),
            "deploy/{file}"
        );
        assert_eq!(container(&spec)["name"], CONTAINER, "deploy/{file}");
    }
}

fn pod_shape() {
    for (file, spec) in job_specs() {
        let pod = pod_spec(&spec);
        let c = container(&spec);
        assert_eq!(pod["restartPolicy"], "Never", "deploy/{file}");
        assert_eq!(pod["automountServiceAccountToken"], false, "deploy/{file}");
        for context in [&pod["securityContext"], &c["securityContext"]] {
            assert_eq!(context["runAsNonRoot"], true, "deploy/{file}");
            assert_eq!(context["runAsUser"], 65534, "deploy/{file}");
            assert_eq!(
                context["seccompProfile"]["type"], "RuntimeDefault",
                "deploy/{file}"
            );
        }
        let sc = &c["securityContext"];
        assert_eq!(sc["readOnlyRootFilesystem"], true, "deploy/{file}");
        assert_eq!(sc["allowPrivilegeEscalation"], false, "deploy/{file}");
        assert_eq!(
            sc["capabilities"]["drop"],
            serde_json::json!(["ALL"]),
            "deploy/{file}"
        );
        assert!(sc["capabilities"]["add"].is_null(), "deploy/{file}");
        assert_eq!(
            c["terminationMessagePolicy"], "FallbackToLogsOnError",
            "deploy/{file}"
        );
        assert_eq!(
            c["terminationMessagePath"], "/dev/termination-log",
            "deploy/{file}"
        );
        assert_eq!(
            flag_value(&args(&spec), "--termination-log"),
            c["terminationMessagePath"].as_str(),
            "deploy/{file}: the binary writes where Kubernetes reads"
        );
        for part in ["requests", "limits"] {
            for resource in ["cpu", "memory"] {
                assert!(
                    c["resources"][part][resource].is_string(),
                    "deploy/{file}: resources.{part}.{resource}"
                );
            }
        }
        // Every mount names a volume of the Pod; /tmp is an emptyDir; the
        // ConfigMap is read-only.
        let volumes = pod["volumes"].as_array().unwrap();
        let volume = |name: &str| {
            volumes
                .iter()
                .find(|v| v["name"] == name)
                .unwrap_or_else(|| panic!("deploy/{file}: no volume {name}"))
        };
        let mounts = c["volumeMounts"].as_array().unwrap();
        let mount = |path: &str| {
            mounts
                .iter()
                .find(|m| m["mountPath"] == path)
                .unwrap_or_else(|| panic!("deploy/{file}: nothing mounted at {path}"))
        };
        for m in mounts {
            volume(m["name"].as_str().unwrap());
        }
        assert!(volume(mount("/tmp")["name"].as_str().unwrap())["emptyDir"].is_object());
        let config = mount(CONFIG_MOUNT);
        assert_eq!(config["readOnly"], true, "deploy/{file}");
        assert_eq!(
            volume(config["name"].as_str().unwrap())["configMap"]["name"],
            object(file, "ConfigMap")["metadata"]["name"],
            "deploy/{file}: /config is the ConfigMap of the file"
        );
        let tmpdir = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "TMPDIR");
        assert!(
            tmpdir.is_none_or(|e| e["value"] == "/tmp"),
            "deploy/{file}: TMPDIR is not the emptyDir"
        );
    }
}

fn failure_policy() {
    let configuration = readme_code(CONFIGURATION);
    let conflict = readme_code(CONFLICT);
    assert_ne!(configuration, conflict);
    for (file, spec) in job_specs() {
        assert_eq!(
            pod_spec(&spec)["restartPolicy"],
            "Never",
            "deploy/{file}: podFailurePolicy needs it"
        );
        assert!(
            spec["backoffLimit"].as_u64().is_some_and(|n| n >= 1),
            "deploy/{file}"
        );
        assert!(
            spec["activeDeadlineSeconds"]
                .as_u64()
                .is_some_and(|n| n > 0),
            "deploy/{file}"
        );
        let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
        let action = |code: i64| {
            let matching: Vec<&Value> = rules
                .iter()
                .filter(|r| {
                    let on = &r["onExitCodes"];
                    on["operator"] == "In"
                        && on["values"]
                            .as_array()
                            .is_some_and(|v| v.iter().any(|c| c.as_i64() == Some(code)))
                })
                .collect();
            assert_eq!(
                matching.len(),
                1,
                "deploy/{file}: one rule for exit code {code}"
            );
            let rule = matching[0];
            let on = &rule["onExitCodes"];
            assert!(
                on["containerName"].is_null() || on["containerName"] == CONTAINER,
                "deploy/{file}: the rule names another container"
            );
            rule["action"].as_str().unwrap().to_owned()
        };
        assert_eq!(action(configuration), "FailJob", "deploy/{file}");
        assert_eq!(action(conflict), "Count", "deploy/{file}");
        // The exit code of a success is never matched (Kubernetes refuses 0 in `In`).
        assert!(
            rules.iter().all(|r| {
                r["onExitCodes"]["values"]
                    .as_array()
                    .is_none_or(|v| v.iter().all(|c| c.as_i64() != Some(0)))
            }),
            "deploy/{file}"
        );
    }
}

fn cronjob_shape() {
    let cron = object("cronjob.yaml", "CronJob");
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Forbid");
    assert!(cron["spec"]["schedule"].is_string());
    let spec = &cron["spec"]["jobTemplate"]["spec"];
    let cron_args = args(spec);
    let state = flag_value(&cron_args, "--state").expect("the CronJob keeps --state");
    let c = container(spec);
    let mount = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| Path::new(state).starts_with(m["mountPath"].as_str().unwrap()))
        .expect("--state lies on a mounted volume");
    assert_ne!(mount["readOnly"], true);
    let volume = pod_spec(spec)["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    assert_eq!(
        volume["persistentVolumeClaim"]["claimName"],
        object("cronjob.yaml", "PersistentVolumeClaim")["metadata"]["name"],
        "--state is on the file's claim"
    );
    // One run at a time: the deadline ends a run before the next is due
    // (the schedule is every N minutes).
    let schedule = cron["spec"]["schedule"].as_str().unwrap();
    let every = schedule
        .strip_prefix("*/")
        .and_then(|s| s.split(' ').next())
        .and_then(|m| m.parse::<u64>().ok())
        .expect("schedule `*/N * * * *`");
    assert!(spec["activeDeadlineSeconds"].as_u64().unwrap() < every * 60);
    // The one-off Job has nowhere to keep a state.
    let job = object("job.yaml", "Job");
    assert_eq!(flag_value(&args(&job["spec"]), "--state"), None);
}

/// The ConfigMap's file named by `flag` in `args`, as (key, text).
fn config_file(file: &str, args: &[String], flag: &str) -> (String, String) {
    let path = flag_value(args, flag).unwrap_or_else(|| panic!("deploy/{file}: no {flag}"));
    let key = path
        .strip_prefix(&format!("{CONFIG_MOUNT}/"))
        .unwrap_or_else(|| panic!("deploy/{file}: {flag} {path} is not under {CONFIG_MOUNT}"));
    let data = &object(file, "ConfigMap")["data"];
    let text = data[key]
        .as_str()
        .unwrap_or_else(|| panic!("deploy/{file}: the ConfigMap has no {key}"));
    (key.to_owned(), text.to_owned())
}

fn config_objects() {
    for (file, spec) in job_specs() {
        let args = args(&spec);
        let (key, text) = config_file(file, &args, "--automation");
        let doc = image_update::api::yaml::parse_one(&text).unwrap();
        let automation = image_update::api::policies::read_automation(&doc, &key, true)
            .unwrap_or_else(|d| panic!("deploy/{file}: {key}: {d:?}"));
        let (key, text) = config_file(file, &args, "--git-repository");
        let repo = image_update::api::yaml::parse_one(&text).unwrap().value;
        assert_eq!(repo["kind"], "GitRepository", "deploy/{file}: {key}");
        assert_eq!(
            repo["apiVersion"], "source.toolkit.fluxcd.io/v1",
            "deploy/{file}: {key}"
        );
        let source = automation.source_ref.as_ref().expect("spec.sourceRef");
        assert_eq!(source.kind, "GitRepository", "deploy/{file}: {key}");
        assert_eq!(
            (source.namespace.as_str(), source.name.as_str()),
            (
                repo["metadata"]["namespace"].as_str().unwrap(),
                repo["metadata"]["name"].as_str().unwrap()
            ),
            "deploy/{file}: the automation's sourceRef names the GitRepository"
        );
        assert!(
            repo["spec"]["url"]
                .as_str()
                .unwrap()
                .starts_with("https://")
        );
        // The credentials come from the environment, so no Secret is named.
        assert!(repo["spec"]["secretRef"].is_null(), "deploy/{file}: {key}");
        let (key, text) = config_file(file, &args, "--policies");
        let documents = image_update::api::yaml::parse_documents(&text)
            .unwrap()
            .into_iter()
            .map(|document| image_update::api::policies::PolicyDocument {
                document,
                origin: key.clone(),
                positions: true,
                dir: None,
                supplies: true,
            })
            .collect::<Vec<_>>();
        let definitions = image_update::api::policies::collect_definitions(&documents)
            .unwrap_or_else(|d| panic!("deploy/{file}: {key}: {d:?}"));
        assert!(
            !definitions.is_empty(),
            "deploy/{file}: {key} defines no policy"
        );
        assert!(
            args.iter().any(|a| a == "--fetch"),
            "deploy/{file}: definitions need --fetch"
        );
        for d in &definitions {
            assert_eq!(
                d.key.namespace, automation.namespace,
                "deploy/{file}: {} is outside the automation's namespace",
                d.key
            );
        }
    }
    assert_eq!(
        object("job.yaml", "ConfigMap"),
        object("cronjob.yaml", "ConfigMap"),
        "both files hold the same ConfigMap"
    );
}

fn secret_and_env() {
    assert_eq!(
        object("job.yaml", "Secret"),
        object("cronjob.yaml", "Secret"),
        "both files hold the same Secret"
    );
    let section = readme_job_section();
    for (file, spec) in job_specs() {
        let secret = object(file, "Secret");
        for e in container(&spec)["env"].as_array().unwrap() {
            let name = e["name"].as_str().unwrap();
            if let Some(r) = e["valueFrom"]["secretKeyRef"].as_object() {
                assert_eq!(
                    r["name"], secret["metadata"]["name"],
                    "deploy/{file}: {name}"
                );
                let key = r["key"].as_str().unwrap();
                assert!(
                    secret["stringData"][key].is_string() || secret["data"][key].is_string(),
                    "deploy/{file}: the Secret has no {key} for {name}"
                );
            }
            if name.starts_with("IMAGE_UPDATE_") {
                assert!(
                    section.contains(name),
                    "deploy/{file}: {name} is not documented in the README's Job section"
                );
            }
        }
        // Secret values never on the command line.
        let values: Vec<&str> = secret["stringData"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(Value::as_str)
            .collect();
        for a in args(&spec) {
            assert!(
                !values.contains(&a.as_str()),
                "deploy/{file}: a secret in the args"
            );
        }
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn help_probe() {
    let bogus = run(&["update", "--bogus", "--help"]);
    assert_eq!(
        bogus.status.code(),
        Some(2),
        "an unknown flag before --help is refused"
    );
    let known = run(&["update", "--dry-run", "--policy", "a:b=c:1", "--help"]);
    assert!(
        known.status.success(),
        "{}",
        String::from_utf8_lossy(&known.stderr)
    );
}

/// Whether the binary has the `job` subcommand; a failure says why not.
fn require_job() {
    let out = run(&["job", "--help"]);
    assert!(
        out.status.success(),
        "the binary has no working `image-update job` yet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn args_accepted() {
    require_job();
    for (file, spec) in job_specs() {
        let args = args(&spec);
        assert_eq!(args[0], "job", "deploy/{file}");
        let mut with_help: Vec<&str> = args.iter().map(String::as_str).collect();
        with_help.push("--help");
        let out = run(&with_help);
        assert!(
            out.status.success(),
            "deploy/{file}: `image-update {}` refused: {}",
            with_help.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The container's arguments with `/config/...`, `/state/...` and the
/// termination log mapped into `dir` (the ConfigMap's files written there).
fn localised(file: &str, args: &[String], dir: &Path) -> Vec<String> {
    let data = object(file, "ConfigMap")["data"].clone();
    for (key, text) in data.as_object().unwrap() {
        fs_err::write(dir.join(key), text.as_str().unwrap()).unwrap();
    }
    fs_err::create_dir_all(dir.join("state")).unwrap();
    args.iter()
        .map(|a| {
            if let Some(key) = a.strip_prefix(&format!("{CONFIG_MOUNT}/")) {
                path(dir.join(key))
            } else if let Some(rest) = a.strip_prefix("/state/") {
                path(dir.join("state").join(rest))
            } else if a == "/dev/termination-log" {
                path(dir.join("termination-log"))
            } else {
                a.clone()
            }
        })
        .collect()
}

fn path(p: PathBuf) -> String {
    p.to_str().unwrap().to_owned()
}

fn config_runs() {
    require_job();
    let configuration = readme_code(CONFIGURATION);
    for (file, spec) in job_specs() {
        let dir = tempfile::tempdir().unwrap();
        let mut args = localised(file, &args(&spec), dir.path());
        // Nothing listens on this port: the run must get as far as the
        // network and fail there, after reading the whole configuration.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        args.extend([
            "--url".to_owned(),
            format!("http://127.0.0.1:{port}/fleet.git"),
            "--git-timeout".to_owned(),
            "10s".to_owned(),
            "--fetch-timeout".to_owned(),
            "10s".to_owned(),
        ]);
        let out = Command::new(BIN)
            .args(&args)
            .env("IMAGE_UPDATE_GIT_USERNAME", "image-update-bot")
            .env("IMAGE_UPDATE_GIT_PASSWORD", "not-a-real-token")
            .env("TMPDIR", dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(
            out.status.code(),
            Some(i32::try_from(configuration).unwrap()),
            "deploy/{file}: the configuration was refused: {stderr}"
        );
        assert_eq!(out.status.code(), Some(1), "deploy/{file}: {stderr}");
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(status["result"], "failed", "deploy/{file}: {status}");
        assert_eq!(status["error"]["kind"], "failed", "deploy/{file}: {status}");
        // Kubernetes' termination message: the status, compact, within 4 KiB.
        let message = fs_err::read(dir.path().join("termination-log")).unwrap();
        assert!(message.len() <= 4096, "deploy/{file}");
        let message: Value = serde_json::from_slice(&message).unwrap();
        assert_eq!(message["error"], status["error"], "deploy/{file}");
        assert!(
            !stderr.contains("not-a-real-token"),
            "deploy/{file}: {stderr}"
        );
    }
}
