//! The documentation's commands, run as written: every fenced command block of `README.md`,
//! `docs/*.md` and `examples/*/README.md` either runs here, in a sandbox, against the test bed's
//! real servers, with the output it shows checked, or says why it does not. This target owns
//! that rule: one trial per command block, and `inventory` fails on a fenced block that does not
//! say what it is.
//!
//! # The convention (fence info strings)
//!
//! * Every fenced block names its language. The command blocks are `sh` (a script a user would
//!   paste) and `console` (a transcript: `$ COMMAND` lines, a trailing `\` continuing one, each
//!   followed by the output it prints, stdout and stderr as a terminal shows them, matched with
//!   snapbox's elisions: `[..]` within a line, `...` for whole lines). `bash`, `shell` and a
//!   fence without a language are refused, so that no command block escapes the rule by its
//!   spelling; so are indented code blocks, which have no info string.
//! * After the language, at most one attribute:
//!   - `skip: REASON`: the block cannot run here (a cluster, a registry this network cannot
//!     reach, a build of minutes); the trial is ignored with the reason. The files it gives to
//!     `kubectl apply -f` are validated instead (`kubernetes-validate --strict`).
//!   - `tested: tests/NAME.rs`: another test target runs the block (that file must name the
//!     Markdown file it reads); ignored here with that name.
//!   - `sandbox: NAME`: the working directory is a copy of `testdata/docs/NAME/` (a user's
//!     repository) instead of the checkout's `examples/`, `testdata/demo/` and `deploy/`.
//!
//! GitHub shows only the language; the attribute is for this test.
//!
//! # The sandbox
//!
//! Each block runs with `bash` (`set -eo pipefail`: every command must succeed) in a fresh copy
//! of its working directory, with a fresh `HOME` and `TMPDIR`, and on `PATH`: `image-update`
//! (the binary under test), `cargo` (a stand-in that runs `cargo run [--release] -- ARGS` as
//! `image-update ARGS`, since the suite has built it), `kubectl` (a stand-in whose
//! `apply -f FILE|-` validates strictly what it would send, and which refuses everything else),
//! then the machine's `PATH` (`kpt`...). `HTTPS_PROXY` names [`image_update_testkit::proxy`],
//! which answers for `ghcr.io` and Docker Hub with a real `docker-registry` holding the tags the
//! documents use, for `github.com` with the git bed's lighttpd (`acme/fleet`, seeded from
//! `testdata/docs/remote/` before each block that uses it, token `ghp_...`), and for
//! `api.github.com` with the fake GitHub; `SSL_CERT_FILE` trusts the proxy's CA. So the
//! documents keep the names users see, and nothing leaves the machine. A block that runs
//! `image-update job` must also have moved a ref of the repository.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fs_err as fs;
use image_update_testkit::forge::{FakeForge, Flavor};
use image_update_testkit::git::{Env, Need, Servers};
use image_update_testkit::proxy::Proxy;
use image_update_testkit::registry::{Auth, ImageSpec, Registry};
use image_update_testkit::{Unmet, gated};
use libtest_mimic::{Completion, Failed, Trial};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
/// The languages of command blocks.
const COMMAND_LANGUAGES: [&str; 2] = ["sh", "console"];
/// Spellings of a shell block that must be written `sh`.
const OTHER_SHELLS: [&str; 4] = ["bash", "shell", "zsh", "shell-session"];
/// The longest a block may run.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(120);
/// The token the documents' git and forge commands carry (`IMAGE_UPDATE_GIT_TOKEN=ghp_...`).
const DOC_TOKEN: &str = "ghp_...";
/// The repository the documents clone, as the proxy serves it.
const DOC_REPOSITORY: &str = "acme/fleet";
/// The host names the proxy answers for.
const HOSTS: [&str; 5] = [
    "ghcr.io",
    "registry-1.docker.io",
    "index.docker.io",
    "github.com",
    "api.github.com",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ------------------------------------------------------------ the blocks

/// What a command block asks of this test.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Run in a copy of the checkout, or of `testdata/docs/NAME/`.
    Run { sandbox: Option<String> },
    /// Not run, for this reason.
    Skip(String),
    /// Run by this test target.
    Tested(String),
}

/// One fenced command block.
#[derive(Debug, Clone)]
struct Block {
    /// The Markdown file, relative to the repository.
    file: String,
    /// The line of its opening fence.
    line: usize,
    /// `sh` or `console`.
    language: String,
    kind: Kind,
    /// Its text.
    text: String,
}

impl Block {
    fn name(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The Markdown files whose command blocks a user would copy.
fn documents() -> Vec<String> {
    let mut files = vec!["README.md".to_owned()];
    for (dir, pattern) in [("docs", None), ("examples", Some("README.md"))] {
        let mut found: Vec<String> = fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter_map(|path| match pattern {
                None => (path.extension().is_some_and(|e| e == "md"))
                    .then(|| format!("{dir}/{}", path.file_name().unwrap().to_string_lossy())),
                Some(name) => path.join(name).is_file().then(|| {
                    format!(
                        "{dir}/{}/{name}",
                        path.file_name().unwrap().to_string_lossy()
                    )
                }),
            })
            .collect();
        found.sort();
        files.extend(found);
    }
    files
}

/// The command blocks of every document, and the problems of any fenced block.
fn blocks() -> (Vec<Block>, Vec<String>) {
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    for file in documents() {
        let text = fs::read_to_string(root().join(&file)).unwrap();
        let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
        let mut open: Option<(usize, String, String)> = None;
        for (event, range) in Parser::new(&text).into_offset_iter() {
            match event {
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                    open = Some((line_of(range.start), info.to_string(), String::new()));
                }
                Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)) => problems.push(format!(
                    "{file}:{}: an indented code block: fence it, with its language",
                    line_of(range.start)
                )),
                Event::Text(t) => {
                    if let Some((_, _, body)) = &mut open {
                        body.push_str(&t);
                    }
                }
                Event::End(TagEnd::CodeBlock) => {
                    let Some((line, info, body)) = open.take() else {
                        continue;
                    };
                    let at = format!("{file}:{line}");
                    match parse_info(&info) {
                        Err(problem) => problems.push(format!("{at}: {problem}")),
                        Ok(None) => {}
                        Ok(Some((language, kind))) => blocks.push(Block {
                            file: file.clone(),
                            line,
                            language,
                            kind,
                            text: body,
                        }),
                    }
                }
                _ => {}
            }
        }
    }
    (blocks, problems)
}

/// A fence's info string: `None` for a block that is no command, else its language and kind.
fn parse_info(info: &str) -> Result<Option<(String, Kind)>, String> {
    let info = info.trim();
    let (language, rest) = info.split_once(char::is_whitespace).unwrap_or((info, ""));
    let rest = rest.trim();
    if language.is_empty() {
        return Err(
            "a fenced block without a language: name it (`sh` or `console` for commands, \
             `text` for output or a synopsis)"
                .to_owned(),
        );
    }
    if OTHER_SHELLS.contains(&language) {
        return Err(format!(
            "a `{language}` block: write `sh` (a script) or `console` (a transcript)"
        ));
    }
    if !COMMAND_LANGUAGES.contains(&language) {
        return Ok(None);
    }
    let kind = if rest.is_empty() {
        Kind::Run { sandbox: None }
    } else if let Some(reason) = rest.strip_prefix("skip:") {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err("`skip:` without a reason".to_owned());
        }
        Kind::Skip(reason.to_owned())
    } else if let Some(test) = rest.strip_prefix("tested:") {
        Kind::Tested(test.trim().to_owned())
    } else if let Some(name) = rest.strip_prefix("sandbox:") {
        let name = name.trim();
        if !root().join("testdata/docs").join(name).is_dir() {
            return Err(format!("no sandbox testdata/docs/{name}/"));
        }
        Kind::Run {
            sandbox: Some(name.to_owned()),
        }
    } else {
        return Err(format!(
            "`{rest}`: after the language, `skip: REASON`, `tested: tests/NAME.rs` or \
             `sandbox: NAME`"
        ));
    };
    Ok(Some((language.to_owned(), kind)))
}

// ------------------------------------------------------------ main

fn main() {
    let (blocks, problems) = blocks();
    let count = |f: fn(&Kind) -> bool| blocks.iter().filter(|b| f(&b.kind)).count();
    eprintln!(
        "docs: {} command blocks: {} run here, {} skipped, {} run by other tests",
        blocks.len(),
        count(|k| matches!(k, Kind::Run { .. })),
        count(|k| matches!(k, Kind::Skip(_))),
        count(|k| matches!(k, Kind::Tested(_))),
    );
    let mut trials = vec![Trial::test("inventory", move || {
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n").into())
        }
    })];
    for block in blocks {
        trials.push(trial(block));
    }
    image_update_testkit::run(trials);
}

fn trial(block: Block) -> Trial {
    let name = block.name();
    match block.kind.clone() {
        Kind::Skip(reason) => Trial::ignorable_test(name, move || {
            validate_applied(&block)?;
            Ok(Completion::ignored_with(format!("skip: {reason}")))
        }),
        Kind::Tested(test) => Trial::ignorable_test(name, move || {
            let path = test.split_whitespace().next().unwrap_or_default();
            let source = fs::read_to_string(root().join(path))
                .map_err(|e| format!("`tested: {test}`: {e}"))?;
            let document = Path::new(&block.file)
                .file_name()
                .unwrap()
                .to_string_lossy();
            if !source.contains(document.as_ref()) {
                return Err(format!("{path} does not name {document}, which it should run").into());
            }
            Ok(Completion::ignored_with(format!("run by {test}")))
        }),
        Kind::Run { sandbox } => {
            let mut needs = vec!["bash", "git", "docker-registry", "lighttpd"];
            if block.text.contains("kpt ") {
                needs.push("kpt");
            }
            if block.text.contains("kubectl apply") {
                needs.push(image_update_testkit::kube::PROGRAM);
            }
            let pull_request = block.text.contains("--pull-request");
            gated(
                name,
                move || {
                    Unmet::programs(&needs)?;
                    if pull_request {
                        let description = Flavor::GitHub.description_path();
                        if !description.is_file() {
                            return Err(Unmet::Missing(format!(
                                "needs {} (bash scripts/api-descriptions.sh)",
                                description.display()
                            )));
                        }
                    }
                    Ok(())
                },
                move |()| run_block(&block, sandbox.as_deref()),
            )
        }
    }
}

// ------------------------------------------------------------ the world

/// The servers the documents' commands reach, started once.
struct World {
    proxy: Proxy,
    _registry: Registry,
    git: Arc<Env>,
    _servers: Servers,
    _git_temp: tempfile::TempDir,
    forge: Option<FakeForge>,
    /// Held while a block uses `github.com/acme/fleet`, which each such block gets afresh.
    repository: Mutex<()>,
}

fn world() -> Result<&'static World, Failed> {
    static WORLD: OnceLock<Result<World, String>> = OnceLock::new();
    WORLD
        .get_or_init(start_world)
        .as_ref()
        .map_err(|e| Failed::from(e.as_str()))
}

fn start_world() -> Result<World, String> {
    let registry = Registry::start(Auth::Anonymous);
    push_images(&registry);
    let (git, servers, git_temp) = Env::start_with(&[Need::Http])?;
    if let Some(reason) = git.missing(&[Need::Http]) {
        return Err(reason);
    }
    let proxy = Proxy::start(&HOSTS);
    let local = |port: u16| format!("127.0.0.1:{port}").parse().unwrap();
    for host in ["ghcr.io", "registry-1.docker.io", "index.docker.io"] {
        proxy.route(host, local(registry.port));
    }
    proxy.route("github.com", local(git.http_port()));
    let forge = FakeForge::start(Flavor::GitHub, DOC_TOKEN, None).ok();
    if let Some(forge) = &forge {
        let authority = forge.api_url().trim_start_matches("http://").to_owned();
        proxy.route("api.github.com", authority.parse().unwrap());
    }
    fs::write(git.hosted_users(), format!("x-access-token:{DOC_TOKEN}\n"))
        .map_err(|e| e.to_string())?;
    Ok(World {
        proxy,
        _registry: registry,
        git,
        _servers: servers,
        _git_temp: git_temp,
        forge,
        repository: Mutex::new(()),
    })
}

/// The tags the documents' commands find (docs/fetch.md's `policy` transcript lists
/// `ghcr.io/stefanprodan/podinfo` exactly).
fn push_images(registry: &Registry) {
    let signature = format!("sha256-{}.sig", "5".repeat(64));
    registry.push_one_image(
        "stefanprodan/podinfo",
        &[
            "6.7.1", "6.6.0", "6.5.4", "6.5.3", "latest", &signature, "6.4.1", "5.2.1",
        ],
    );
    registry.push_one_image("acme/app", &["1.3.0", "1.4.1", "1.4.2", "2.0.0"]);
    for (tag, created) in [
        ("main-3f2a9c1", "2024-05-01T10:00:00Z"),
        ("main-8b41d07", "2024-05-02T10:00:00Z"),
    ] {
        let images = [
            ImageSpec::new("linux", "amd64", None, created),
            ImageSpec::new("linux", "arm64", Some("v8"), created),
        ];
        registry.push_index("acme/app", tag, &images, false);
    }
    registry.push_one_image("acme/web", &["2.4.0", "2.4.1", "2.5.0"]);
    registry.push_one_image("library/nginx", &["stable", "5.0.0", "5.0.3", "5.1.0"]);
    registry.push_one_image("some/image", &["5.0.0", "5.0.1"]);
}

// ------------------------------------------------------------ running a block

/// The sandbox of one block: its working directory, home, temporary directory and `PATH`.
struct Sandbox {
    _temp: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    bin: PathBuf,
}

fn sandbox(name: Option<&str>) -> Result<Sandbox, Failed> {
    let temp = tempfile::Builder::new()
        .prefix("image-update-docs")
        .tempdir()?;
    let work = temp.path().join("work");
    let home = temp.path().join("home");
    let tmp = temp.path().join("tmp");
    let bin = temp.path().join("bin");
    for dir in [&work, &home, &tmp, &bin] {
        fs::create_dir_all(dir)?;
    }
    match name {
        Some(name) => copy(&root().join("testdata/docs").join(name).join("."), &work)?,
        None => {
            for dir in ["examples", "testdata/demo", "deploy"] {
                let to = work.join(dir);
                fs::create_dir_all(to.parent().unwrap())?;
                copy(&root().join(dir), &to)?;
            }
        }
    }
    std::os::unix::fs::symlink(BIN, bin.join("image-update"))?;
    script(&bin.join("cargo"), CARGO)?;
    script(&bin.join("kubectl"), KUBECTL)?;
    Ok(Sandbox {
        _temp: temp,
        work,
        home,
        tmp,
        bin,
    })
}

/// `cargo run [--release] -- ARGS`: the binary the suite built (a release build takes minutes).
const CARGO: &str = r#"#!/bin/sh
# cargo for tests/docs.rs: `cargo run [--release] -- ARGS` runs the image-update the suite built.
[ "$1" = run ] || { echo "cargo $1: not run by tests/docs.rs" >&2; exit 2; }
shift
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
  case "$1" in
    --release|--locked|-q) shift ;;
    *) echo "cargo run $1: not understood by tests/docs.rs" >&2; exit 2 ;;
  esac
done
[ "$#" -gt 0 ] && shift
exec image-update "$@"
"#;

/// `kubectl apply -f FILE|-`: what it would send, validated strictly; nothing else.
const KUBECTL: &str = r#"#!/bin/sh
# kubectl for tests/docs.rs: there is no cluster; `apply -f FILE|-` validates strictly what it
# would send to one (kubernetes-validate), and every other command fails.
[ "$1" = apply ] || { echo "kubectl $1: needs a cluster" >&2; exit 1; }
shift
file=
while [ "$#" -gt 0 ]; do
  case "$1" in
    -f) file="$2"; shift 2 ;;
    -n) shift 2 ;;
    *) echo "kubectl apply $1: not understood by tests/docs.rs" >&2; exit 1 ;;
  esac
done
[ -n "$file" ] || { echo "kubectl apply: no -f" >&2; exit 1; }
if [ "$file" = - ]; then
  file="$(mktemp --suffix=.yaml)"
  cat > "$file"
fi
out="$(kubernetes-validate --strict "$file" 2>&1)" || { echo "$out" >&2; exit 1; }
case "$out" in *ERROR*) echo "$out" >&2; exit 1 ;; esac
echo "$out"
"#;

fn script(path: &Path, text: &str) -> Result<(), Failed> {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text)?;
    fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<(), Failed> {
    let out = Command::new("cp").arg("-a").arg(from).arg(to).output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    Ok(())
}

/// A block's command, in its sandbox, with stderr merged into stdout.
fn command(sandbox: &Sandbox, world: &World, script: &str) -> snapbox::cmd::Command {
    let path = format!(
        "{}:{}",
        sandbox.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let ca = sandbox.tmp.join("proxy-ca.pem");
    fs::write(&ca, world.proxy.ca_pem()).unwrap();
    snapbox::cmd::Command::new("bash")
        .args(["-c", &format!("set -eo pipefail\n{script}")])
        .current_dir(&sandbox.work)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &sandbox.home)
        .env("TMPDIR", &sandbox.tmp)
        .env("LANG", "C.UTF-8")
        .env("HTTPS_PROXY", world.proxy.url())
        .env("SSL_CERT_FILE", &ca)
        .timeout(BLOCK_TIMEOUT)
        .stderr_to_stdout()
}

fn run_block(block: &Block, sandbox_name: Option<&str>) -> Result<(), Failed> {
    let world = world()?;
    let sandbox = sandbox(sandbox_name)?;
    let uses_repository = block.text.contains("image-update job");
    let _held = uses_repository.then(|| world.repository.lock().unwrap_or_else(|e| e.into_inner()));
    let before = if uses_repository {
        Some(seed_repository(world)?)
    } else {
        None
    };
    match block.language.as_str() {
        "console" => run_transcript(block, &sandbox, world)?,
        _ => {
            let out = command(&sandbox, world, &block.text).output()?;
            if !out.status.success() {
                return Err(format!(
                    "{} failed ({}):\n{}",
                    block.name(),
                    out.status,
                    String::from_utf8_lossy(&out.stdout)
                )
                .into());
            }
        }
    }
    if let Some(before) = before {
        let after = refs(world)?;
        if after == before {
            return Err(format!(
                "{}: `image-update job` ran, but no ref of {DOC_REPOSITORY} moved: {after:?}",
                block.name()
            )
            .into());
        }
    }
    Ok(())
}

/// `github.com/acme/fleet` afresh, from `testdata/docs/remote/`; its refs.
fn seed_repository(world: &World) -> Result<BTreeSet<String>, Failed> {
    let git = &world.git;
    for dir in [
        git.root.join("repos").join(format!("{DOC_REPOSITORY}.git")),
        git.root.join("seed").join(DOC_REPOSITORY),
    ] {
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
    }
    let fixture = git.fixture_from_tree(DOC_REPOSITORY, &root().join("testdata/docs/remote"))?;
    if let Some(forge) = &world.forge {
        forge.track_branches(&fixture.bare);
    }
    refs(world)
}

fn refs(world: &World) -> Result<BTreeSet<String>, Failed> {
    let bare = world
        .git
        .root
        .join("repos")
        .join(format!("{DOC_REPOSITORY}.git"));
    let listed = world.git.git_out(&bare, &["for-each-ref"])?;
    Ok(listed.lines().map(str::to_owned).collect())
}

/// A `console` block: each `$ COMMAND` runs in turn and prints what follows it.
fn run_transcript(block: &Block, sandbox: &Sandbox, world: &World) -> Result<(), Failed> {
    for (command_text, expected) in transcript(&block.text)? {
        let out = command(sandbox, world, &command_text).output()?;
        let actual = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "{}: `{command_text}` failed ({}):\n{actual}",
                block.name(),
                out.status
            )
            .into());
        }
        let name = format!("{}: `{command_text}`", block.name());
        snapbox::Assert::new()
            .normalize_paths(false)
            .try_eq(
                Some(&name),
                snapbox::Data::text(actual.trim_end().to_owned()),
                snapbox::Data::text(expected),
            )
            .map_err(|e| format!("{e}"))?;
    }
    Ok(())
}

/// The commands of a transcript and the output shown after each.
fn transcript(text: &str) -> Result<Vec<(String, String)>, Failed> {
    let mut steps: Vec<(String, String)> = Vec::new();
    let mut continued = false;
    for line in text.lines() {
        if continued {
            let (command, _) = steps.last_mut().unwrap();
            command.push('\n');
            command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            steps.push((command.to_owned(), String::new()));
            continued = command.ends_with('\\');
        } else if let Some((_, output)) = steps.last_mut() {
            output.push_str(line);
            output.push('\n');
        } else if !line.trim().is_empty() {
            return Err(format!("output before the first `$ ` line: {line:?}").into());
        }
    }
    Ok(steps
        .into_iter()
        .map(|(c, o)| (c, o.trim_end().to_owned()))
        .collect())
}

/// A skipped block's `kubectl apply -f FILE`: FILE, a file of the repository, must be valid.
fn validate_applied(block: &Block) -> Result<(), Failed> {
    let words: Vec<&str> = block.text.split_whitespace().collect();
    let mut files = Vec::new();
    for (i, pair) in words.windows(2).enumerate() {
        let applies = words[..i]
            .iter()
            .rev()
            .take_while(|w| **w != "kubectl")
            .any(|w| *w == "apply");
        if applies && pair[0] == "-f" && pair[1] != "-" {
            files.push(root().join(pair[1]));
        }
    }
    if files.is_empty() {
        return Ok(());
    }
    if let Err(unmet) = Unmet::programs(&[image_update_testkit::kube::PROGRAM]) {
        if image_update_testkit::under_ci() {
            return Err(unmet.reason().into());
        }
        return Ok(());
    }
    let newest = image_update_testkit::kube::versions().pop().unwrap();
    image_update_testkit::kube::check(&files, &newest)
}
