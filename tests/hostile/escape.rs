//! Names that carry a line break and a forged workflow command, an escape sequence, NUL or a
//! right-to-left override (object names and namespaces, file names, policy names, an Argo CD
//! Application's name, a field's old value), and the errors that quote them: every line a person
//! or the GitHub runner reads shows them escaped (`\n`, `\x1b`, `\0`, `\u{202e}`), so no line of
//! stdout or stderr starts a workflow command of the input's making, and no raw control or
//! bidirectional character reaches a terminal.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use libtest_mimic::{Failed, Trial};

use super::support::{bin, bounded, stderr, stdout, write};

/// A line break and a workflow command, a screen-clearing sequence, NUL and a right-to-left
/// override, as YAML double-quoted escapes.
const PAYLOAD_YAML: &str = r"\n::error title=FORGED::forged\e[2J\0\u202Eend";

/// The same characters in a file name or an argument, which cannot hold NUL.
const PAYLOAD: &str = "\n::error title=FORGED::forged\u{1b}[2J\u{202e}end";

const LIMIT: Duration = Duration::from_secs(60);

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("escape::update_lines_show_names_escaped", update_lines),
        image_update_testkit::trial_with(
            "escape::diff_headers_quote_paths_as_git_does",
            &["git"],
            diff_headers,
        ),
        Trial::test("escape::action_log_and_summary_show_names_escaped", action),
        Trial::test("escape::errors_quoting_the_input_are_escaped", errors),
        Trial::test("escape::argocd_application_names_are_escaped", argocd),
        Trial::test("escape::action_errors_are_escaped", action_errors),
    ]
}

/// A tree whose names carry the payload: a Deployment (name, namespace, an old value, markers),
/// a file whose name holds it, a file whose name starts with `::`, and a policy file.
fn hostile_tree(root: &Path) {
    write(
        root,
        "apps/deploy.yaml",
        format!(
            r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web{PAYLOAD_YAML}"
  namespace: "ns{PAYLOAD_YAML}"
spec:
  template:
    spec:
      containers:
      - name: a
        image: nginx:1.0 # {{"$imagepolicy": "flux-system:podinfo"}}
      - name: b
        image: "nginx:1.0{PAYLOAD_YAML}" # {{"$imagepolicy": "flux-system:podinfo"}}
      - name: c
        image: nginx:1.0 # {{"$imagepolicy": "flux-system:pod\n::error title=FORGED::x"}}
      - name: d
        image: nginx:1.0 # {{"$imagepolicy": "flux-system:we\u001b[2J\u202e\u0000ird"}}
"#
        ),
    );
    let marked = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  image: nginx:1.0 \
                  # {\"$imagepolicy\": \"flux-system:podinfo\"}\n";
    write(root, &format!("apps/evil{PAYLOAD}.yaml"), marked);
    write(root, "::error title=FORGED::start.yaml", marked);
    write(
        root,
        "policies.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata: {name: \
         podinfo, namespace: flux-system}\nstatus: {latestImage: \"nginx:1.1\"}\n",
    );
}

/// Whether `c` must never be written raw: a control character but the line feed, or a
/// bidirectional embedding, override or isolate.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` (stdout, stderr, a runner file) holds no raw control or bidirectional character, and
/// every line that the runner would read as a workflow command is one of image-update's own:
/// `::warning`, `::notice` or `::error`, with no property but `file`, `line` and `col`.
fn check(what: &str, text: &[u8]) -> Result<(), Failed> {
    let text = std::str::from_utf8(text).map_err(|e| format!("{what} is not UTF-8: {e}"))?;
    if let Some(c) = text.chars().find(|c| unsafe_char(*c)) {
        return Err(format!("{what} holds a raw {c:?}:\n{text}").into());
    }
    for line in text.lines() {
        // The runner skips leading blanks before a command.
        let Some(command) = line.trim_start().strip_prefix("::") else {
            continue;
        };
        let header = command.split("::").next().unwrap_or_default();
        let (name, properties) = header.split_once(' ').unwrap_or((header, ""));
        let own = matches!(name, "warning" | "notice" | "error")
            && command.contains("::")
            && properties
                .split(',')
                .filter(|p| !p.is_empty())
                .all(|p| ["file=", "line=", "col="].iter().any(|k| p.starts_with(k)));
        if !own {
            return Err(format!("{what} has a forged workflow command {line:?}:\n{text}").into());
        }
    }
    Ok(())
}

/// `image-update ARGS` in `dir` (bounded), which must end with `code` and whose stdout and stderr
/// must pass [`check`].
fn run_checked(dir: &Path, args: &[&str], code: i32, what: &str) -> Result<Output, Failed> {
    let out = bounded(bin().args(args).current_dir(dir), LIMIT);
    expect_status(&out, code, what)?;
    check(&format!("stdout of {what}"), &out.stdout)?;
    check(&format!("stderr of {what}"), &out.stderr)?;
    Ok(out)
}

fn expect_status(out: &Output, code: i32, what: &str) -> Result<(), Failed> {
    if out.status.code() == Some(code) {
        Ok(())
    } else {
        Err(format!(
            "{what}: exit {:?}, expected {code}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            stdout(out),
            stderr(out)
        )
        .into())
    }
}

fn expect_shown(what: &str, text: &str, shown: &[&str]) -> Result<(), Failed> {
    for s in shown {
        if !text.contains(s) {
            return Err(format!("{what} does not show {s:?}:\n{text}").into());
        }
    }
    Ok(())
}

fn update_lines() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    hostile_tree(tmp.path());
    let args = [
        "update",
        "--dry-run",
        "-v",
        "--policies",
        "policies.yaml",
        ".",
    ];
    let out = run_checked(tmp.path(), &args, 0, "update")?;
    // Shown, escaped, not dropped: the file names, the old value, the policy names.
    expect_shown(
        "stderr",
        &stderr(&out),
        &[
            "./::error title=FORGED::start.yaml:5:10: nginx:1.0 -> nginx:1.1",
            r"apps/evil\n::error title=FORGED::forged\x1b[2J\u{202e}end.yaml:5:10: nginx:1.0 -> ",
            r"nginx:1.0\n::error title=FORGED::forged\x1b[2J\0\u{202e}end -> nginx:1.1",
            r"no policy flux-system:we\x1b[2J\u{202e}\0ird was supplied",
        ],
    )
}

fn diff_headers() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    hostile_tree(tmp.path());
    let args = [
        "update",
        "--dry-run",
        "--diff",
        "--policies",
        "policies.yaml",
        ".",
    ];
    let out = run_checked(tmp.path(), &args, 0, "update --diff")?;
    expect_shown(
        "stdout",
        &stdout(&out),
        &[r#"--- "a/apps/evil\n::error title=FORGED::forged\033[2J\342\200\256end.yaml""#],
    )?;
    // git reads the quoted paths back: the diff applies to the tree it was made from.
    let patch = tmp.path().join("changes.patch");
    fs_err::write(&patch, &out.stdout)?;
    let git = Command::new("git")
        .args(["apply", "--check", "--verbose"])
        .arg(&patch)
        .current_dir(tmp.path())
        .output()?;
    if !git.status.success() {
        return Err(format!(
            "git apply --check refuses the diff: {}\n{}",
            String::from_utf8_lossy(&git.stderr),
            stdout(&out)
        )
        .into());
    }
    expect_shown(
        "git apply --verbose",
        &String::from_utf8_lossy(&git.stderr),
        &[r#"Checking patch "apps/evil\n::error title=FORGED::forged"#],
    )
}

/// `image-update action` as the runner runs it (`tests/action.rs`) in `workspace`, with `with`
/// over `action.yml`'s defaults, a fresh `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` beside it: it
/// must end with `code`, and its stdout, stderr and step summary must pass [`check`]. Returns the
/// output, the step summary and the `GITHUB_OUTPUT` file.
fn run_action(
    workspace: &Path,
    with: &[(&str, &str)],
    code: i32,
    what: &str,
) -> Result<(Output, String, String), Failed> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = fs_err::read_to_string(root.join("action.yml"))?;
    let action = image_update::api::yaml::parse_values(&text)
        .map_err(|e| format!("action.yml: {e}"))?
        .remove(0);
    let with: BTreeMap<&str, &str> = with.iter().copied().collect();
    let runner = tempfile::tempdir()?;
    let output = runner.path().join("output");
    let summary = runner.path().join("summary");
    let mut c = bin();
    c.arg("action")
        .env("CI", "true")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", workspace)
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .current_dir(workspace);
    for name in image_update::api::action::INPUTS {
        let value = with.get(name).map_or_else(
            || {
                action["inputs"][name]["default"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            },
            |v| (*v).to_owned(),
        );
        c.env(image_update::api::action::input_variable(name), value);
    }
    let out = bounded(&c, LIMIT);
    expect_status(&out, code, what)?;
    check(&format!("stdout of {what}"), &out.stdout)?;
    check(&format!("stderr of {what}"), &out.stderr)?;
    let summary = fs_err::read(&summary)?;
    check(&format!("the step summary of {what}"), &summary)?;
    let output = if output.exists() {
        fs_err::read_to_string(&output)?
    } else {
        String::new()
    };
    Ok((out, String::from_utf8_lossy(&summary).into_owned(), output))
}

/// The names of the entries of a `GITHUB_OUTPUT` file, read as the runner reads it.
fn output_names(text: &str) -> Result<Vec<String>, Failed> {
    let mut names = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let heredoc = line
            .find("<<")
            .filter(|h| line.find('=').is_none_or(|e| *h < e));
        match heredoc {
            Some(h) => {
                let delimiter = &line[h + 2..];
                names.push(line[..h].to_owned());
                if !lines.any(|l| l == delimiter) {
                    return Err(
                        format!("no closing {delimiter:?} in GITHUB_OUTPUT:\n{text}").into(),
                    );
                }
            }
            None => names.push(line.split('=').next().unwrap_or_default().to_owned()),
        }
    }
    Ok(names)
}

fn action() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let workspace = tmp.path().join("workspace");
    hostile_tree(&workspace);
    let with = [("policies", "policies.yaml"), ("dry-run", "true")];
    let (out, summary, output) = run_action(&workspace, &with, 0, "action")?;
    expect_shown(
        "stdout",
        &stdout(&out),
        &[
            "./::error title=FORGED::start.yaml:5:10: nginx:1.0 -> nginx:1.1",
            "::warning file=apps/deploy.yaml,line=17,col=16::no policy flux-system:we\\x1b",
        ],
    )?;
    expect_shown(
        "the step summary",
        &summary,
        &[r"`apps/evil\n::error title=FORGED::forged\x1b[2J\u{202e}end.yaml`"],
    )?;
    let names = output_names(&output)?;
    let expected = [
        "changed",
        "changed-files",
        "changes",
        "commit-message",
        "summary",
    ];
    if names != expected {
        return Err(format!("GITHUB_OUTPUT names {names:?}, expected {expected:?}").into());
    }
    // The outputs are data: the exact values, in JSON.
    if !output.contains(r#""name":"web\n::error title=FORGED::forged\u001b[2J\u0000"#) {
        return Err(format!("the changes output lost the exact name:\n{output}").into());
    }
    Ok(())
}

fn errors() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    hostile_tree(root);
    // An invalid --policy key, quoted by its error.
    let policy = format!("flux-system:a{PAYLOAD}=nginx:1");
    let args = ["update", "--dry-run", "--policy", &policy, "."];
    run_checked(root, &args, 2, "update --policy")?;
    // A policy file named with the payload, whose ImagePolicy (named with it too) is invalid: the
    // error's location opens the line.
    let bad = format!("bad{PAYLOAD}.yaml");
    write(root, &bad, invalid_policy("nginx:1.1:"));
    let args = ["update", "--dry-run", "--policies", &bad, "."];
    let out = run_checked(root, &args, 1, "update --policies")?;
    expect_shown(
        "stderr",
        &stderr(&out),
        &[
            r"bad\n::error title=FORGED::forged\x1b[2J\u{202e}end.yaml:7:16: error: ImagePolicy ",
            r"flux-system/a\n::error title=FORGED::forged\x1b[2J\0\u{202e}end",
        ],
    )?;
    // A suspended automation's name, in a note.
    write(
        root,
        "automation.yaml",
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\nmetadata:\n  \
             name: \"auto{PAYLOAD_YAML}\"\n  namespace: flux-system\nspec:\n  suspend: true\n  \
             sourceRef: {{kind: GitRepository, name: x}}\n"
        ),
    );
    let args = [
        "update",
        "--dry-run",
        "--automation",
        "automation.yaml",
        ".",
    ];
    let out = run_checked(root, &args, 0, "update --automation")?;
    expect_shown(
        "stderr",
        &stderr(&out),
        &[r"note: ImageUpdateAutomation flux-system/auto\n::error title=FORGED::forged\x1b[2J"],
    )
}

/// An ImagePolicy named with the payload whose latest image is `latest` (an invalid one).
fn invalid_policy(latest: &str) -> String {
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata:\n  name: \
         \"a{PAYLOAD_YAML}\"\n  namespace: flux-system\nstatus:\n  latestImage: \"{latest}\"\n"
    )
}

fn argocd() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    let application = |method: &str| {
        format!(
            r#"apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: "shop{PAYLOAD_YAML}"
  namespace: argocd
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=ghcr.io/acme/web
    argocd-image-updater.argoproj.io/write-back-method: "{method}"
spec:
  project: default
  source:
    repoURL: https://git.example.test/acme/fleet.git
    targetRevision: main
    path: web
    kustomize: {{images: [ghcr.io/acme/web:1.0.0]}}
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"#
        )
    };
    write(root, "apps/shop.yaml", application("git"));
    write(
        root,
        "web/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
    );
    // The error refusing the name quotes it.
    let out = run_checked(root, &["update", "--dry-run", "."], 1, "update")?;
    expect_shown(
        "stderr",
        &stderr(&out),
        &[
            r#"metadata.name "shop\n::error title=FORGED::forged\u{1b}[2J\0\u{202e}end" is not a valid Kubernetes name"#,
        ],
    )?;
    // A policy for it given on the command line: the key is refused, quoted.
    let policy = format!("argocd:shop{PAYLOAD}/web=ghcr.io/acme/web:1.1.0");
    let args = ["update", "--dry-run", "--policy", &policy, "."];
    run_checked(root, &args, 2, "update --policy argocd:...")?;
    // An error at its annotation, quoting the value.
    write(
        root,
        "apps/shop.yaml",
        application(&format!("svn{PAYLOAD_YAML}")),
    );
    run_checked(root, &["update", "--dry-run", "."], 1, "update (invalid)")?;
    Ok(())
}

fn action_errors() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let workspace = tmp.path().join("workspace");
    hostile_tree(&workspace);
    // One policy per line: the second line is a forged command, refused and quoted.
    let policy = format!("flux-system:podinfo=nginx:1.2{PAYLOAD}");
    let with = [("policy", policy.as_str()), ("dry-run", "true")];
    run_action(&workspace, &with, 1, "action with an invalid policy")?;
    // A policy file (named with an escape sequence: the input is one path per line) holding an
    // invalid ImagePolicy named with the payload: an `::error` at that file.
    let bad = "bad\u{1b}[2J\u{202e}::error title=FORGED::x.yaml";
    write(&workspace, bad, invalid_policy("nginx:1.1:"));
    let with = [("policies", bad), ("dry-run", "true")];
    let (out, _, _) = run_action(&workspace, &with, 1, "action with an invalid policy file")?;
    expect_shown(
        "stdout",
        &stdout(&out),
        &[
            r"::error file=bad\x1b[2J\u{202e}%3A%3Aerror title=FORGED%3A%3Ax.yaml,line=7,col=16::",
            r"ImagePolicy flux-system/a\n::error title=FORGED::forged\x1b[2J\0\u{202e}end",
        ],
    )
}
