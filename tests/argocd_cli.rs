//! Argo CD users through the binary: one trial per `testdata/argocd-cli/<case>/`.
//!
//! A case holds `case.yaml`:
//!
//! ```yaml
//! description: what it shows
//! args: [update, repo, --fetch]     # the command line; {case} is the case directory
//! images: {team/web: [1.0.0, 1.2.0]} # pushed to a docker-registry started for the case
//! stdin: list.yaml                   # a file of the case directory given on stdin
//! exit: 0
//! ```
//!
//! `in/` (the tree, copied to `repo/` of a temporary directory the command runs in; `policies/`
//! of the case is copied beside it) and the expectations: `out/` (the tree afterwards, byte for
//! byte; for a failing case equal to `in/`, nothing written), `outputs/` (the files the command
//! wrote beside the tree: a report, a commit message), `stdout.txt` and `stderr.txt`. In every file `{host}` stands for the
//! registry's `127.0.0.1:PORT`; the fetch's progress lines, which only a slow fetch prints, are left
//! out of the comparison. A case with `images` needs Debian's `docker-registry` (ignored
//! with the reason without it, failed when `CI` is set).
//!
//! `UPDATE_EXPECT=1 cargo test --test argocd_cli [NAME]` rewrites `out/`, `stdout.txt` and
//! `stderr.txt` (refused when `CI` is set); review them with `git diff testdata/argocd-cli`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use image_update_testkit::registry::{Auth, ImageSpec, Registry};
use image_update_testkit::{self as testkit, trial_with};
use libtest_mimic::Failed;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[allow(dead_code)]
    description: String,
    args: Vec<String>,
    #[serde(default)]
    images: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    stdin: Option<String>,
    #[serde(default)]
    exit: i32,
}

const KNOWN: [&str; 7] = [
    "case.yaml",
    "in",
    "out",
    "outputs",
    "stdout.txt",
    "stderr.txt",
    "policies",
];

fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

/// `stderr` without the fetch's progress lines (`fetching: 2/2 repositories, 9 tags listed`, and the
/// last one, `fetched: ...`): they appear only when fetching takes over a second, which a loaded
/// machine decides, not the case (`tests/fetch.rs` tests them). Every other line is compared.
fn without_progress(stderr: &str) -> String {
    let progress = |line: &str| {
        ["fetching: ", "fetched: "].iter().any(|p| {
            line.strip_prefix(p).is_some_and(|rest| {
                rest.split_once(' ').is_some_and(|(count, what)| {
                    count.split_once('/').is_some_and(|(a, b)| {
                        a.bytes().all(|c| c.is_ascii_digit())
                            && b.bytes().all(|c| c.is_ascii_digit())
                    }) && what.starts_with("repositor")
                })
            })
        })
    };
    stderr
        .split_inclusive('\n')
        .filter(|line| !progress(line))
        .collect()
}

/// [`without_progress`] drops the progress lines and nothing else.
fn progress_lines_are_left_out() -> Result<(), Failed> {
    let stderr = "fetching: 2/2 repositories, 9 tags listed\n\
                  fetched: 1/1 repository, 3 tags listed\n\
                  fetched argocd:storefront/web: 5 tags listed, 2 eligible, chose h/acme/web:1.4.3\n\
                  fetching: the registry said 429\n";
    let kept = without_progress(stderr);
    if kept
        == "fetched argocd:storefront/web: 5 tags listed, 2 eligible, chose h/acme/web:1.4.3\n\
            fetching: the registry said 429\n"
    {
        Ok(())
    } else {
        Err(format!("kept {kept:?}").into())
    }
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
                    .into_owned();
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

fn replace_all(
    files: &BTreeMap<String, Vec<u8>>,
    from: &str,
    to: &str,
) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(k, v)| {
            let text = String::from_utf8_lossy(v).replace(from, to);
            (k.clone(), text.into_bytes())
        })
        .collect()
}

fn diff(name: &str, expected: &str, actual: &str) -> Option<String> {
    (expected != actual).then(|| {
        format!(
            "{name} differs (-expected +actual):\n{}",
            similar::TextDiff::from_lines(expected, actual).unified_diff()
        )
    })
}

fn compare_trees(
    expected: &BTreeMap<String, Vec<u8>>,
    actual: &BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = expected.keys().chain(actual.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| match (expected.get(name), actual.get(name)) {
            (Some(w), Some(g)) => diff(
                name,
                &String::from_utf8_lossy(w),
                &String::from_utf8_lossy(g),
            ),
            (Some(_), None) => Some(format!("{name} is missing")),
            (None, Some(_)) => Some(format!("{name} is unexpected")),
            (None, None) => None,
        })
        .collect()
}

/// Push `tags` of `repo`, one image each (created a day apart, in the order given).
fn push(reg: &Registry, repo: &str, tags: &[String]) {
    for (i, tag) in tags.iter().enumerate() {
        let created = format!("2024-01-{:02}T00:00:00Z", i + 1);
        let image = ImageSpec::new("linux", "amd64", None, &created);
        reg.push_image(repo, tag, &image);
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
    let registry = (!case.images.is_empty()).then(|| Registry::start(Auth::Anonymous));
    let host = registry
        .as_ref()
        .map_or_else(|| "127.0.0.1:1".to_owned(), Registry::authority);
    if let Some(reg) = &registry {
        for (repo, tags) in &case.images {
            push(reg, repo, tags);
        }
    }
    let tmp = tempfile::tempdir()?;
    let home = tmp.path().join("home");
    fs_err::create_dir_all(&home)?;
    let root = tmp.path().join("repo");
    let input = replace_all(&snapshot(&dir.join("in")), "{host}", &host);
    write_tree(&root, &input);
    let policies = tmp.path().join("policies");
    write_tree(
        &policies,
        &replace_all(&snapshot(&dir.join("policies")), "{host}", &host),
    );
    let mut command = Command::new(BIN);
    command
        .args(&case.args)
        .current_dir(tmp.path())
        .env("HOME", &home)
        .env("NO_COLOR", "1")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("RUST_LOG")
        .env_remove("CI");
    let output = match &case.stdin {
        Some(file) => {
            let text = fs_err::read_to_string(dir.join(file))?.replace("{host}", &host);
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()?;
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()?
        }
        None => command.stdin(Stdio::null()).output()?,
    };
    let shown = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&host, "{host}");
    let stdout = shown(&output.stdout);
    let stderr = without_progress(&shown(&output.stderr));
    let after = replace_all(&snapshot(&root), &host, "{host}");
    let outputs: BTreeMap<String, Vec<u8>> = replace_all(&snapshot(tmp.path()), &host, "{host}")
        .into_iter()
        .filter(|(rel, _)| {
            !["repo/", "home/", "policies/"]
                .iter()
                .any(|p| rel.starts_with(p))
        })
        .collect();
    if updating() {
        for (name, files) in [("out", &after), ("outputs", &outputs)] {
            let out = dir.join(name);
            if out.exists() {
                fs_err::remove_dir_all(&out)?;
            }
            write_tree(&out, files);
        }
        for (name, text) in [("stdout.txt", &stdout), ("stderr.txt", &stderr)] {
            let path = dir.join(name);
            if text.is_empty() {
                let _ = fs_err::remove_file(path);
            } else {
                fs_err::write(path, text)?;
            }
        }
        eprintln!("updated {}", dir.display());
    }
    let mut problems = Vec::new();
    if output.status.code() != Some(case.exit) {
        problems.push(format!(
            "exit status {:?}, expected {}\nstderr:\n{stderr}",
            output.status.code(),
            case.exit
        ));
    }
    problems.extend(compare_trees(&snapshot(&dir.join("out")), &after));
    problems.extend(compare_trees(&snapshot(&dir.join("outputs")), &outputs));
    if case.exit != 0 && case.stdin.is_none() {
        // A failed run writes nothing.
        let before = replace_all(&input, &host, "{host}");
        problems.extend(
            compare_trees(&before, &after)
                .into_iter()
                .map(|p| format!("written although the run failed: {p}")),
        );
    }
    for (name, actual) in [("stdout.txt", &stdout), ("stderr.txt", &stderr)] {
        let expected = fs_err::read_to_string(dir.join(name)).unwrap_or_default();
        problems.extend(diff(name, &expected, actual));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

/// `kpt fn source PKG | image-update fn | kpt fn sink OUT` over `testdata/argocd-kpt/pkg`: the
/// override file the write-back creates arrives as a new item with path annotations, and kpt
/// writes it (with the values file's change) where Argo CD reads it; `out/` is what kpt writes.
fn kpt_source_fn_sink() -> Result<(), Failed> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/argocd-kpt");
    let tmp = tempfile::tempdir()?;
    let source = Command::new("kpt")
        .args(["fn", "source"])
        .arg(dir.join("pkg"))
        .arg("--fn-config")
        .arg(dir.join("fn-config.yaml"))
        .output()?;
    if !source.status.success() {
        return Err(format!("kpt fn source: {}", String::from_utf8_lossy(&source.stderr)).into());
    }
    let mut function = Command::new(BIN)
        .arg("fn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    {
        use std::io::Write;
        function.stdin.take().unwrap().write_all(&source.stdout)?;
    }
    let answer = function.wait_with_output()?;
    if !answer.status.success() {
        return Err(format!(
            "image-update fn: {}",
            String::from_utf8_lossy(&answer.stdout)
        )
        .into());
    }
    let out = tmp.path().join("out");
    let mut sink = Command::new("kpt")
        .args(["fn", "sink"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    {
        use std::io::Write;
        sink.stdin.take().unwrap().write_all(&answer.stdout)?;
    }
    let sunk = sink.wait_with_output()?;
    if !sunk.status.success() {
        return Err(format!("kpt fn sink: {}", String::from_utf8_lossy(&sunk.stderr)).into());
    }
    let got = snapshot(&out);
    if updating() {
        let expected = dir.join("out");
        if expected.exists() {
            fs_err::remove_dir_all(&expected)?;
        }
        write_tree(&expected, &got);
    }
    let problems = compare_trees(&snapshot(&dir.join("out")), &got);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

/// A Helm values file that is a symlink (to a file inside the tree) is written where it points,
/// and stays a link; a regular values file beside it is written in place. (The walk tells the
/// write-back which targets it read as regular files; the others are asked about.)
fn symlinked_values_file() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let repo = tmp.path().join("repo");
    let app = |name: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=registry.example.test/{name}:^1\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: helmvalues\n    argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag\nspec:\n  source:\n    repoURL: https://git.example.test/fleet.git\n    path: charts/{name}\n    helm: {{}}\n  destination: {{namespace: {name}}}\n"
        )
    };
    let values = "# shared values\nimage:\n  tag: \"1.0.0\"\n";
    fs_err::create_dir_all(repo.join("apps"))?;
    for name in ["linked", "plain"] {
        fs_err::create_dir_all(repo.join(format!("charts/{name}")))?;
        fs_err::write(repo.join(format!("apps/{name}.yaml")), app(name))?;
    }
    fs_err::create_dir_all(repo.join("shared"))?;
    fs_err::write(repo.join("shared/values.yaml"), values)?;
    std::os::unix::fs::symlink(
        "../../shared/values.yaml",
        repo.join("charts/linked/values.yaml"),
    )?;
    fs_err::write(repo.join("charts/plain/values.yaml"), values)?;
    let out = Command::new(BIN)
        .current_dir(tmp.path())
        .args([
            "update",
            "repo",
            "--policy=argocd:linked/web=registry.example.test/linked:1.2.0",
            "--policy=argocd:plain/web=registry.example.test/plain:1.3.0",
        ])
        .output()?;
    if !out.status.success() {
        return Err(format!("update: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let link = repo.join("charts/linked/values.yaml");
    if !fs_err::symlink_metadata(&link)?.file_type().is_symlink() {
        return Err("charts/linked/values.yaml is no longer a symlink".into());
    }
    let shared = fs_err::read_to_string(repo.join("shared/values.yaml"))?;
    if shared != "# shared values\nimage:\n  tag: \"1.2.0\"\n  name: registry.example.test/linked\n"
    {
        return Err(format!("shared/values.yaml (the link's target): {shared:?}").into());
    }
    let plain = repo.join("charts/plain/values.yaml");
    if fs_err::symlink_metadata(&plain)?.file_type().is_symlink() {
        return Err("charts/plain/values.yaml became a symlink".into());
    }
    let plain = fs_err::read_to_string(plain)?;
    if plain != "# shared values\nimage:\n  tag: \"1.3.0\"\n  name: registry.example.test/plain\n" {
        return Err(format!("charts/plain/values.yaml: {plain:?}").into());
    }
    Ok(())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/argocd-cli");
    let mut dirs: Vec<PathBuf> = fs_err::read_dir(&root)
        .expect("testdata/argocd-cli")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let trials = dirs
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let needs: &[&str] = if fs_err::read_to_string(dir.join("case.yaml"))
                .is_ok_and(|t| t.contains("\nimages:"))
            {
                &["docker-registry"]
            } else {
                &[]
            };
            trial_with(name, needs, move || run_case(&dir))
        })
        .collect::<Vec<_>>();
    let mut trials = trials;
    trials.push(trial_with(
        "kpt_source_fn_sink",
        &["kpt"],
        kpt_source_fn_sink,
    ));
    trials.push(trial_with(
        "progress_lines_are_left_out",
        &[],
        progress_lines_are_left_out,
    ));
    trials.push(trial_with(
        "symlinked_values_file",
        &[],
        symlinked_values_file,
    ));
    testkit::run(trials);
}
