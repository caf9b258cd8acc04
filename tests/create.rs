//! `image-update create`: the objects it writes, byte for byte
//! (`testdata/create/NAME.args`, one argument per line, and the expected
//! `NAME.yaml`; `UPDATE_EXPECT=1` rewrites them, refused when `CI` is set),
//! its usage errors, and every object taken as is by the commands that read
//! such objects: `update --fetch --policies` (ImageRepository and ImagePolicy,
//! and an `argocd` ImageUpdater, against a real registry), `update
//! --automation` (ImageUpdateAutomation, and a `fluxcd` ImageUpdater whose
//! images are fetched), and the KRM function's functionConfig.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use image_update_testkit::registry::{Auth, Registry};
use image_update_testkit::{trial, trial_with};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/create")
}

fn create(args: &[&str]) -> Output {
    Command::new(BIN).arg("create").args(args).output().unwrap()
}

fn created(args: &[&str]) -> String {
    let out = create(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut input, stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn main() {
    let mut trials = Vec::new();
    let mut cases: Vec<PathBuf> = fs_err::read_dir(root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "args"))
        .collect();
    cases.sort();
    for args in cases {
        let name = args.file_stem().unwrap().to_string_lossy().into_owned();
        trials.push(trial_with(format!("golden: {name}"), &[], move || {
            golden(&args)
        }));
    }
    trials.push(trial("usage errors", &[], usage_errors));
    trials.push(trial(
        "imageupdateautomation is followed by update --automation",
        &[],
        automation_is_followed,
    ));
    trials.push(trial(
        "objects are functionConfigs of the KRM function",
        &[],
        krm_function_configs,
    ));
    trials.push(trial(
        "imagerepository + imagepolicy are fetched by update --fetch",
        &["docker-registry"],
        repository_and_policy_are_fetched,
    ));
    trials.push(trial(
        "imageupdater (fluxcd) is an automation whose images are fetched",
        &["docker-registry"],
        fluxcd_updater_runs,
    ));
    trials.push(trial(
        "imageupdater (argocd) images are fetched by update --fetch",
        &["docker-registry"],
        argocd_updater_is_fetched,
    ));
    image_update_testkit::run(trials);
}

fn golden(args_file: &Path) -> Result<(), libtest_mimic::Failed> {
    let text = fs_err::read_to_string(args_file)?;
    let args: Vec<&str> = text.lines().collect();
    let out = create(&args);
    if !out.status.success() {
        return Err(format!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let got = String::from_utf8(out.stdout)?;
    let expected = args_file.with_extension("yaml");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        if std::env::var_os("CI").is_some() {
            return Err("UPDATE_EXPECT is refused when CI is set".into());
        }
        fs_err::write(&expected, &got)?;
        return Ok(());
    }
    let want = fs_err::read_to_string(&expected)?;
    if got != want {
        return Err(format!(
            "{} differs:\n--- expected\n{want}\n--- got\n{got}",
            expected.display()
        )
        .into());
    }
    // What is written reads back as the same object.
    let doc = image_update::api::yaml::parse_one(&got)?;
    assert_eq!(doc.value["metadata"]["name"], args[1]);
    Ok(())
}

fn usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["imagerepository", "a"], "--image"),
        (
            &["imagerepository", "a", "--image", "Nginx"],
            "--image \"Nginx\"",
        ),
        (
            &[
                "imagerepository",
                "a",
                "--image",
                "nginx",
                "--interval",
                "1 minute",
            ],
            "--interval \"1 minute\" is not a duration",
        ),
        (
            &["imagepolicy", "a", "--image-ref", "r"],
            "a policy must be provided",
        ),
        (
            &[
                "imagepolicy",
                "a",
                "--image-ref",
                "r",
                "--select-semver",
                "not a range",
            ],
            "is not a semver range",
        ),
        (
            &["imageupdateautomation", "a", "--git-repo-ref", "g"],
            "--checkout-branch",
        ),
        (
            &[
                "imageupdateautomation",
                "a",
                "--git-repo-ref",
                "g",
                "--checkout-branch",
                "main",
                "--author-name",
                "n",
                "--author-email",
                "e",
                "--commit-template",
                "{{ .Changed ",
            ],
            "--commit-template: template: commit message:1: unclosed action",
        ),
        (
            &["imageupdater", "a", "--kind", "helm", "--image", "nginx"],
            "--kind \"helm\": use fluxcd or argocd",
        ),
        (
            &["imageupdater", "a", "--kind", "argocd"],
            "at least one image is required",
        ),
        (
            &[
                "imageupdater",
                "a",
                "--kind",
                "argocd",
                "--image",
                "a=nginx",
                "--image",
                "a=redis",
            ],
            "the alias \"a\" is given twice",
        ),
        (
            &["imageupdater", "a", "--kind", "fluxcd", "--image", "nginx"],
            "--git-repo-ref",
        ),
        (
            &["imageupdater", "A", "--kind", "argocd", "--image", "nginx"],
            "NAME \"A\" is not a valid object name",
        ),
        (
            &[
                "imageupdater",
                "a",
                "--kind",
                "argocd",
                "--image",
                "nginx",
                "--label",
                "x",
            ],
            "--label \"x\": expected KEY=VALUE",
        ),
    ];
    for (args, message) in cases {
        let out = create(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}

const MARKED: &str = "kind: Deployment\nmetadata: {name: app, namespace: apps}\nspec:\n  image: nginx:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n";

fn automation_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let auto = dir.path().join("auto.yaml");
    fs_err::write(
        &auto,
        created(&[
            "imageupdateautomation",
            "apps",
            "--git-repo-ref",
            "fleet",
            "--git-repo-path",
            "./clusters/prod",
            "--checkout-branch",
            "main",
            "--author-name",
            "bot",
            "--author-email",
            "bot@example.com",
            "--commit-template",
            "{{range .Updated.Images}}{{println .}}{{end}}",
        ]),
    )
    .unwrap();
    let tree = dir.path().join("tree");
    for sub in ["clusters/prod", "clusters/dev"] {
        fs_err::create_dir_all(tree.join(sub)).unwrap();
        fs_err::write(tree.join(sub).join("app.yaml"), MARKED).unwrap();
    }
    let msg = dir.path().join("msg.txt");
    let out = run(
        &[
            "update",
            tree.to_str().unwrap(),
            "--automation",
            auto.to_str().unwrap(),
            "--policy",
            "flux-system:app=nginx:1.1.0",
            "--commit-message-file",
            msg.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let read = |p: &str| fs_err::read_to_string(tree.join(p)).unwrap();
    assert!(read("clusters/prod/app.yaml").contains("nginx:1.1.0"));
    assert_eq!(
        read("clusters/dev/app.yaml"),
        MARKED,
        "outside spec.update.path"
    );
    assert_eq!(fs_err::read_to_string(&msg).unwrap(), "nginx:1.1.0\n");
}

fn krm_function_configs() {
    let automation = created(&[
        "imageupdateautomation",
        "apps",
        "--git-repo-ref",
        "fleet",
        "--checkout-branch",
        "main",
        "--author-name",
        "bot",
        "--author-email",
        "bot@example.com",
    ]);
    let updater = created(&[
        "imageupdater",
        "apps",
        "--kind",
        "fluxcd",
        "--image",
        "app=nginx",
        "--git-repo-ref",
        "fleet",
        "--checkout-branch",
        "main",
        "--author-name",
        "bot",
        "--author-email",
        "bot@example.com",
    ]);
    for config in [automation, updater] {
        let config = config.trim_start_matches("---\n");
        let indented: String = config.lines().map(|l| format!("  {l}\n")).collect();
        let list = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: app\n    namespace: apps\n    annotations: {{config.kubernetes.io/path: app.yaml}}\n  spec:\n    image: nginx:1.0.0 # {{\"$imagepolicy\": \"flux-system:app\"}}\n- apiVersion: image.toolkit.fluxcd.io/v1\n  kind: ImagePolicy\n  metadata: {{name: app, namespace: flux-system}}\n  status: {{latestRef: {{name: nginx, tag: 1.1.0}}}}\nfunctionConfig:\n{indented}"
        );
        let out = run(&["fn"], Some(&list));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{list}\n{out:?}");
        assert!(stdout.contains("image: nginx:1.1.0 #"), "{stdout}");
    }
}

/// Push `tags` of one tiny image to `repo`.
/// A tree with one file marked `flux-system:app` at `IMAGE:FROM`, updated
/// with `--fetch --policies POLICIES`; the file's text afterwards.
fn fetched(dir: &Path, image: &str, from: &str, policies: &Path) -> String {
    let tree = dir.join("tree");
    fs_err::create_dir_all(&tree).unwrap();
    let marked = MARKED.replace("nginx:1.0.0", &format!("{image}:{from}"));
    fs_err::write(tree.join("app.yaml"), marked).unwrap();
    let out = run(
        &[
            "update",
            tree.to_str().unwrap(),
            "--fetch",
            "--policies",
            policies.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    fs_err::read_to_string(tree.join("app.yaml")).unwrap()
}

fn repository_and_policy_are_fetched() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    reg.push_one_image("team/app", &["1.0.0", "1.1.0", "2.0.0-rc.1"]);
    let image = format!("{host}/team/app");
    let dir = tempfile::tempdir().unwrap();
    let defs = format!(
        "{}{}",
        created(&[
            "imagerepository",
            "app",
            "--image",
            &image,
            "--interval",
            "5m"
        ]),
        created(&[
            "imagepolicy",
            "app",
            "--image-ref",
            "app",
            "--select-semver",
            ">=1.0.0"
        ]),
    );
    fs_err::write(dir.path().join("defs.yaml"), defs).unwrap();
    let text = fetched(dir.path(), &image, "1.0.0", &dir.path().join("defs.yaml"));
    assert!(text.contains(&format!("image: {image}:1.1.0 #")), "{text}");
}

fn fluxcd_updater_runs() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    reg.push_one_image("team/app", &["5.0.0", "5.0.3", "5.1.0"]);
    let image = format!("{host}/team/app");
    let dir = tempfile::tempdir().unwrap();
    let updater = dir.path().join("updater.yaml");
    fs_err::write(
        &updater,
        created(&[
            "imageupdater",
            "demo",
            "--namespace",
            "flux-system",
            "--kind",
            "fluxcd",
            "--image",
            &format!("app={image}"),
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
        ]),
    )
    .unwrap();
    let tree = dir.path().join("tree");
    fs_err::create_dir_all(tree.join("clusters/my-cluster")).unwrap();
    let marked = MARKED.replace("nginx:1.0.0", &format!("{image}:5.0.0"));
    fs_err::write(tree.join("clusters/my-cluster/app.yaml"), &marked).unwrap();
    fs_err::write(tree.join("outside.yaml"), &marked).unwrap();
    let msg = dir.path().join("msg.txt");
    let out = run(
        &[
            "update",
            tree.to_str().unwrap(),
            "--automation",
            updater.to_str().unwrap(),
            "--fetch",
            "--commit-message-file",
            msg.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let text = fs_err::read_to_string(tree.join("clusters/my-cluster/app.yaml")).unwrap();
    assert!(text.contains(&format!("image: {image}:5.0.3 #")), "{text}");
    assert_eq!(
        fs_err::read_to_string(tree.join("outside.yaml")).unwrap(),
        marked
    );
    assert_eq!(
        fs_err::read_to_string(&msg).unwrap(),
        format!("{image}:5.0.3\n")
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the commit message template uses '.Updated'"),
        "{stderr}"
    );
}

fn argocd_updater_is_fetched() {
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    reg.push_one_image("team/app", &["1.0.0", "1.2.0"]);
    let image = format!("{host}/team/app");
    let dir = tempfile::tempdir().unwrap();
    let updater = dir.path().join("updater.yaml");
    fs_err::write(
        &updater,
        created(&[
            "imageupdater",
            "demo",
            "--namespace",
            "flux-system",
            "--kind",
            "argocd",
            "--image",
            &format!("app={image}:^1"),
            "--update-strategy",
            "app=semver",
        ]),
    )
    .unwrap();
    let text = fetched(dir.path(), &image, "1.0.0", &updater);
    assert!(text.contains(&format!("image: {image}:1.2.0 #")), "{text}");
}
