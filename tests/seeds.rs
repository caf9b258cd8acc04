//! The design documents' examples, end to end, through the binary, against a
//! real git server (`image_update_testkit::git`) and a real registry:
//!
//! * seed 002's sample `ImageUpdater` (`kind: fluxcd`, as written), with a
//!   GitRepository, runs as `image-update job`: it clones, updates the path
//!   the updater names, and commits with its `.Updated` template (Flux
//!   v0.x's `{{range .Updated.Images}}{{println .}}{{end}}`), as the author
//!   it names, on the branch it names;
//! * the same automation written by `image-update create imageupdater`,
//!   turned into a CronJob by `image-update deploy`, runs from the CronJob's
//!   own container arguments and mounted ConfigMap (the files laid out as
//!   the volume would, `JOB_COMPLETION_INDEX` set as Kubernetes does for a
//!   fleet), fetching its image from the registry; an index the fleet does
//!   not have fails at the fleet's list with nothing pushed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};

use fs_err as fs;
use image_update_testkit::git::{
    Env, GPG_PASSPHRASE, HTTP_PASSWORD, HTTP_USER, Need, TestResult, ensure,
};
use image_update_testkit::registry::{Auth, Registry};
use libtest_mimic::Arguments;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

/// Seed 002's sample, `kind: fluxcd` (its `argocd` section is the other
/// engine's, which an object does not hold at the same time).
const SEED_002: &str = include_str!("../testdata/crd/valid/seed-002-fluxcd.yaml");

fn main() {
    let args = Arguments::from_args();
    let (env, servers, temp) = match Env::start() {
        Ok(started) => started,
        Err(reason) => panic!("cannot set up the test bed: {reason}"),
    };
    // With a registry too: without docker-registry the trial is ignored
    // (failed with CI) by the testkit's program check.
    let with_registry = |name: &str, test: fn(&Env) -> TestResult| {
        if image_update_testkit::missing(&["docker-registry"]).is_empty() {
            env.trial(name, &[Need::Http], test)
        } else {
            image_update_testkit::trial(name, &["docker-registry"], || {})
        }
    };
    let trials = vec![
        env.trial(
            "seed 002's ImageUpdater runs as a Job",
            &[Need::Http],
            seed_002_job,
        ),
        with_registry(
            "create + deploy: the CronJob's own arguments run the automation",
            deployed_cronjob_runs,
        ),
        with_registry(
            "create + deploy --fleet: index 1 runs the second automation; index 2 is out of range",
            deployed_fleet_index_runs,
        ),
        if image_update_testkit::missing(&["docker-registry"]).is_empty() {
            env.trial(
                "create + deploy: a Flux automation's CronJob signs with the projected key",
                &[Need::Http, Need::Gpg],
                deployed_flux_automation_signs,
            )
        } else {
            image_update_testkit::trial(
                "create + deploy: a Flux automation's CronJob signs with the projected key",
                &["docker-registry"],
                || {},
            )
        },
    ];
    let conclusion = libtest_mimic::run(&args, trials);
    drop(servers);
    drop(temp);
    conclusion.exit();
}

/// A repository whose `clusters/my-cluster` and `other` hold a Deployment
/// marked with `marker`, at `image`.
fn tree(env: &Env, name: &str, marker: &str, image: &str) -> std::path::PathBuf {
    let dir = env.root.join(format!("{name}-tree"));
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: {image} # {{\"$imagepolicy\": \"{marker}\"}}\n"
    );
    for sub in ["clusters/my-cluster", "other"] {
        fs::create_dir_all(dir.join(sub)).unwrap();
        fs::write(dir.join(sub).join("web.yaml"), &deployment).unwrap();
    }
    dir
}

fn git_repository(url: &str, namespace: &str) -> String {
    format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: podinfo\n  namespace: {namespace}\nspec:\n  interval: 5m\n  url: {url}\n  ref:\n    branch: main\n  secretRef:\n    name: git-auth\n"
    )
}

fn clean(command: &mut Command) -> &mut Command {
    for var in [
        "IMAGE_UPDATE_GIT_USERNAME",
        "IMAGE_UPDATE_GIT_PASSWORD",
        "IMAGE_UPDATE_GIT_TOKEN",
        "IMAGE_UPDATE_GIT_BEARER_TOKEN",
        "IMAGE_UPDATE_GIT_SSH_KEY",
        "IMAGE_UPDATE_GIT_KNOWN_HOSTS",
        "IMAGE_UPDATE_GIT_CA_CERT",
    ] {
        command.env_remove(var);
    }
    command.stdin(Stdio::null())
}

fn seed_002_job(env: &Env) -> TestResult {
    let source = tree(env, "seed-002", "default:nginx", "nginx:5.0.0");
    let fixture = env.fixture_from_tree("seed-002", &source)?;
    let dir = env.root.join("seed-002");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("imageupdater.yaml"), SEED_002)?;
    fs::write(
        dir.join("gitrepository.yaml"),
        git_repository(&env.http_url(&fixture), "default"),
    )?;
    fs::write(
        dir.join("secret.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-auth\n  namespace: default\nstringData:\n  username: {HTTP_USER}\n  password: {HTTP_PASSWORD}\n"
        ),
    )?;
    // A GitRepository other than the one sourceRef names is refused before
    // anything is cloned.
    fs::write(
        dir.join("other.yaml"),
        git_repository(&env.http_url(&fixture), "default").replace("name: podinfo", "name: other"),
    )?;
    let out = clean(&mut Command::new(BIN))
        .args(["job", "--automation"])
        .arg(dir.join("imageupdater.yaml"))
        .arg("--git-repository")
        .arg(dir.join("other.yaml"))
        .args(["--policy", "default:nginx=nginx:5.0.3"])
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure(out.status.code() == Some(2), || format!("{out:?}"))?;
    // At the sourceRef's line and column.
    let line = SEED_002
        .lines()
        .position(|l| l == "      kind: GitRepository")
        .unwrap()
        + 1;
    ensure(
        stderr.starts_with(&format!(
            "{}:{line}:7: error: ImageUpdater default/demo: its sourceRef names GitRepository default/podinfo, but --git-repository gives default/other",
            dir.join("imageupdater.yaml").display()
        )),
        || stderr.to_string(),
    )?;
    // Without the GitRepository it names (and without --url): at the
    // sourceRef too.
    let out = clean(&mut Command::new(BIN))
        .args(["job", "--automation"])
        .arg(dir.join("imageupdater.yaml"))
        .args(["--policy", "default:nginx=nginx:5.0.3"])
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure(out.status.code() == Some(2), || format!("{out:?}"))?;
    ensure(
        stderr.starts_with(&format!(
            "{}:{line}:7: error: ImageUpdater default/demo: its sourceRef names GitRepository default/podinfo, which is not given: give its file with --git-repository",
            dir.join("imageupdater.yaml").display()
        )),
        || stderr.to_string(),
    )?;
    // The seed's images live on Docker Hub, out of reach here: the policy's
    // result is given.
    let out = clean(&mut Command::new(BIN))
        .args(["job", "--automation"])
        .arg(dir.join("imageupdater.yaml"))
        .arg("--git-repository")
        .arg(dir.join("gitrepository.yaml"))
        .arg("--secret")
        .arg(dir.join("secret.yaml"))
        .args(["--policy", "default:nginx=nginx:5.0.3", "--work-dir"])
        .arg(&dir)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure(out.status.code() == Some(0), || format!("{out:?}"))?;
    ensure(
        stderr.contains("warning: the commit message template uses '.Updated'"),
        || stderr.to_string(),
    )?;
    // The status (stdout, and the termination message) carries it too, in
    // its report's warnings.
    let status: Value = serde_json::from_slice(&out.stdout)?;
    ensure(
        status["result"] == "pushed"
            && status["commitMessage"] == "nginx:5.0.3\n"
            && status["changes"]["warnings"].as_array().is_some_and(|w| {
                w.iter().any(|w| {
                    w["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("uses '.Updated'") && m.contains("'.Changed'"))
                })
            }),
        || format!("{status}"),
    )?;
    let message = env.git_out(&fixture.bare, &["log", "-1", "--format=%B", "main"])?;
    ensure(message.trim_end() == "nginx:5.0.3", || {
        format!("{message:?}")
    })?;
    let author = env.git_out(&fixture.bare, &["log", "-1", "--format=%an <%ae>", "main"])?;
    ensure(
        author.trim() == "fluxcdbot <fluxcdbot@users.noreply.github.com>",
        || author.clone(),
    )?;
    let updated = env.git_out(
        &fixture.bare,
        &["show", "main:clusters/my-cluster/web.yaml"],
    )?;
    ensure(updated.contains("image: nginx:5.0.3 #"), || updated.clone())?;
    let other = env.git_out(&fixture.bare, &["show", "main:other/web.yaml"])?;
    ensure(other.contains("image: nginx:5.0.0 #"), || {
        "outside update.path".to_owned()
    })
}

fn binary(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn updater(name: &str, image: &str) -> String {
    binary(&[
        "create",
        "imageupdater",
        name,
        "--namespace",
        "default",
        "--kind",
        "fluxcd",
        "--image",
        &format!("nginx={image}"),
        "--interval",
        "1m",
        "--select-semver",
        "5.0.x",
        "--git-repo-ref",
        "podinfo",
        "--checkout-branch",
        "main",
        "--author-name",
        "fluxcdbot",
        "--author-email",
        "fluxcdbot@users.noreply.github.com",
        "--commit-template",
        "{{range .Updated.Images}}{{println .}}{{end}}",
        "--push-branch",
        "main",
        "--git-repo-path",
        "./clusters/my-cluster",
    ])
}

/// Run the container of the CronJob `cron` as the kubelet would: the
/// ConfigMaps' files laid out as its projected volume (`items` paths), its
/// arguments with `/config` pointing there and `$(JOB_COMPLETION_INDEX)`
/// expanded, the git Secret's keys as the environment it names.
fn run_container(
    env: &Env,
    objects: &[Value],
    dir: &Path,
    index: usize,
) -> Result<std::process::Output, libtest_mimic::Failed> {
    let config = dir.join("config");
    let cron = objects.iter().find(|o| o["kind"] == "CronJob").unwrap();
    let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    for source in pod["volumes"][0]["projected"]["sources"]
        .as_array()
        .unwrap()
    {
        if let Some(items) = source["secret"]["items"].as_array() {
            // The signing Secret's armored key, as the kubelet would project it.
            for item in items {
                if item["key"] == "git.asc" {
                    let path = config.join(item["path"].as_str().unwrap());
                    fs::create_dir_all(path.parent().unwrap())?;
                    fs::write(path, &env.gpg().ed25519_armored)?;
                }
            }
        }
        let Some(name) = source["configMap"]["name"].as_str() else {
            continue;
        };
        let map = objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name)
            .unwrap();
        let data = map["data"].as_object().unwrap();
        match source["configMap"]["items"].as_array() {
            Some(items) => {
                for item in items {
                    let path = config.join(item["path"].as_str().unwrap());
                    fs::create_dir_all(path.parent().unwrap())?;
                    fs::write(path, data[item["key"].as_str().unwrap()].as_str().unwrap())?;
                }
            }
            None => {
                fs::create_dir_all(&config)?;
                for (k, v) in data {
                    fs::write(config.join(k), v.as_str().unwrap())?;
                }
            }
        }
    }
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap()
                .replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
                .replace("/config", config.to_str().unwrap())
                .replace(
                    "/dev/termination-log",
                    dir.join("termination").to_str().unwrap(),
                )
        })
        .collect();
    let mut command = Command::new(BIN);
    clean(&mut command).args(&args).arg("--work-dir").arg(dir);
    // Kubernetes sets it in every Pod of an Indexed Job.
    command.env_remove("JOB_COMPLETION_INDEX");
    if cron["spec"]["jobTemplate"]["spec"]["completionMode"] == "Indexed" {
        command.env("JOB_COMPLETION_INDEX", index.to_string());
    }
    for var in container["env"].as_array().unwrap() {
        let name = var["name"].as_str().unwrap();
        match var["valueFrom"]["secretKeyRef"]["key"].as_str() {
            Some("username") => command.env(name, HTTP_USER),
            Some("password") => command.env(name, HTTP_PASSWORD),
            Some("passphrase") => command.env(name, GPG_PASSPHRASE),
            Some(_) => &mut command,
            None => command.env(name, dir),
        };
    }
    Ok(command.output()?)
}

fn deployed_cronjob_runs(env: &Env) -> TestResult {
    let reg = Registry::start(Auth::Anonymous);
    let image = format!("{}/library/nginx", reg.authority());
    reg.push_one_image("library/nginx", &["5.0.0", "5.0.3", "5.1.0"]);
    let source = tree(env, "deployed", "default:nginx", &format!("{image}:5.0.0"));
    let fixture = env.fixture_from_tree("deployed", &source)?;
    let dir = env.root.join("deployed");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("updater.yaml"), updater("demo", &image))?;
    fs::write(
        dir.join("repo.yaml"),
        git_repository(&env.http_url(&fixture), "default"),
    )?;
    let manifests = binary(&[
        "deploy",
        dir.join("updater.yaml").to_str().unwrap(),
        dir.join("repo.yaml").to_str().unwrap(),
    ]);
    let objects = image_update::api::yaml::parse_values(&manifests)?;
    let out = run_container(env, &objects, &dir, 0)?;
    ensure(out.status.code() == Some(0), || format!("{out:?}"))?;
    let message = env.git_out(&fixture.bare, &["log", "-1", "--format=%B", "main"])?;
    ensure(message.trim_end() == format!("{image}:5.0.3"), || {
        format!("{message:?}")
    })?;
    let updated = env.git_out(
        &fixture.bare,
        &["show", "main:clusters/my-cluster/web.yaml"],
    )?;
    ensure(updated.contains(&format!("image: {image}:5.0.3 #")), || {
        updated.clone()
    })
}

fn deployed_fleet_index_runs(env: &Env) -> TestResult {
    let reg = Registry::start(Auth::Anonymous);
    let image = format!("{}/library/nginx", reg.authority());
    reg.push_one_image("library/nginx", &["5.0.0", "5.0.7"]);
    let first = tree(env, "fleet-0", "default:nginx", &format!("{image}:5.0.0"));
    let second = tree(env, "fleet-1", "default:nginx", &format!("{image}:5.0.0"));
    let f0 = env.fixture_from_tree("fleet-0", &first)?;
    let f1 = env.fixture_from_tree("fleet-1", &second)?;
    let dir = env.root.join("fleet");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("a.yaml"), updater("a", &image))?;
    let b = updater("b", &image).replace("name: podinfo", "name: second");
    fs::write(dir.join("b.yaml"), b)?;
    fs::write(
        dir.join("repos.yaml"),
        format!(
            "{}---\n{}",
            git_repository(&env.http_url(&f0), "default"),
            git_repository(&env.http_url(&f1), "default").replace("name: podinfo", "name: second")
        ),
    )?;
    let manifests = binary(&[
        "deploy",
        "--fleet",
        "images",
        dir.join("a.yaml").to_str().unwrap(),
        dir.join("b.yaml").to_str().unwrap(),
        dir.join("repos.yaml").to_str().unwrap(),
    ]);
    let objects = image_update::api::yaml::parse_values(&manifests)?;
    let out = run_container(env, &objects, &dir, 1)?;
    ensure(out.status.code() == Some(0), || format!("{out:?}"))?;
    let moved = env.git_out(&f1.bare, &["show", "main:clusters/my-cluster/web.yaml"])?;
    ensure(moved.contains(&format!("image: {image}:5.0.7 #")), || {
        moved.clone()
    })?;
    let untouched = env.git_out(&f0.bare, &["show", "main:clusters/my-cluster/web.yaml"])?;
    ensure(
        untouched.contains(&format!("image: {image}:5.0.0 #")),
        || "index 1 ran the first automation".to_owned(),
    )?;
    // An index the fleet does not have (a CronJob whose completions outgrew
    // its ConfigMap) is a configuration error at the fleet's list, before
    // anything is cloned: exit 2, which fails that index alone.
    let before = env.git_out(&f0.bare, &["rev-parse", "main"])?;
    let out = run_container(env, &objects, &dir, 2)?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let index = dir.join("config").join("fleet.yaml");
    let line = fs::read_to_string(&index)?
        .lines()
        .position(|l| l.starts_with("automations:"))
        .unwrap()
        + 2;
    ensure(out.status.code() == Some(2), || format!("{out:?}"))?;
    ensure(
        stderr.starts_with(&format!(
            "{}:{line}:3: error: fleet default/images: index 2 (JOB_COMPLETION_INDEX or --fleet-index) is out of range of its automations list: it has 2 automations, indexes 0 to 1\n",
            index.display()
        )),
        || stderr.clone(),
    )?;
    let status: Value = serde_json::from_slice(&out.stdout)?;
    ensure(
        status["result"] == "failed" && status["error"]["kind"] == "configuration",
        || format!("{status}"),
    )?;
    ensure(
        env.git_out(&f0.bare, &["rev-parse", "main"])? == before
            && env
                .git_out(&f1.bare, &["log", "-1", "--format=%s", "main"])?
                .trim()
                == format!("{image}:5.0.7"),
        || "an index out of range pushed something".to_owned(),
    )?;
    // Outside an Indexed Job, the index must be given.
    let out = clean(&mut Command::new(BIN))
        .env_remove("JOB_COMPLETION_INDEX")
        .args(["job", "--fleet"])
        .arg(&index)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    ensure(
        out.status.code() == Some(2)
            && stderr.contains("--fleet needs the index of its automation: JOB_COMPLETION_INDEX"),
        || stderr.clone(),
    )
}

fn deployed_flux_automation_signs(env: &Env) -> TestResult {
    let reg = Registry::start(Auth::Anonymous);
    let image = format!("{}/team/web", reg.authority());
    reg.push_one_image("team/web", &["1.0.0", "1.4.0"]);
    let source = tree(env, "signed", "flux-system:web", &format!("{image}:1.0.0"));
    let fixture = env.fixture_from_tree("signed", &source)?;
    let dir = env.root.join("signed");
    fs::create_dir_all(&dir)?;
    let objects = [
        binary(&[
            "create",
            "imageupdateautomation",
            "web",
            "--git-repo-ref",
            "podinfo",
            "--checkout-branch",
            "main",
            "--author-name",
            "bot",
            "--author-email",
            "bot@example.com",
            "--git-repo-path",
            "clusters/my-cluster",
            "--signing-key-secret",
            "signing",
        ]),
        binary(&["create", "imagerepository", "web", "--image", &image]),
        binary(&[
            "create",
            "imagepolicy",
            "web",
            "--image-ref",
            "web",
            "--select-semver",
            ">=1.0.0",
        ]),
        git_repository(&env.http_url(&fixture), "flux-system"),
    ];
    fs::write(dir.join("objects.yaml"), objects.join("---\n"))?;
    let manifests = binary(&["deploy", dir.join("objects.yaml").to_str().unwrap()]);
    let objects = image_update::api::yaml::parse_values(&manifests)?;
    let out = run_container(env, &objects, &dir, 0)?;
    ensure(out.status.code() == Some(0), || format!("{out:?}"))?;
    let updated = env.git_out(
        &fixture.bare,
        &["show", "main:clusters/my-cluster/web.yaml"],
    )?;
    ensure(updated.contains(&format!("image: {image}:1.4.0 #")), || {
        updated.clone()
    })?;
    let verified = env
        .git(&fixture.bare)
        .env("GNUPGHOME", &env.gpg().home)
        .args(["verify-commit", "-v", "main"])
        .output()?;
    let said = String::from_utf8_lossy(&verified.stderr).into_owned();
    ensure(
        verified.status.success() && said.contains("Good signature"),
        || format!("git verify-commit: {said}"),
    )
}
