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
//!   - `journey: NAME` (optionally followed by `skip: REASON`): a step of the journey NAME. The
//!     journey's steps in one document run in order, as one trial, in one sandbox as in one
//!     terminal (the working directory and exported variables carry over), from an empty
//!     working directory, with `github.com/acme/fleet` seeded from `testdata/journeys/NAME/`; a
//!     step with a reason is not run, and its `kubectl apply -f FILE` files are validated where
//!     the journey stands. The user's git has an identity and the token in its credential store.
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

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use fs_err as fs;
use image_update_testkit::forge::Flavor;
use image_update_testkit::registry::{ImageSpec, Registry};
use image_update_testkit::world::{REPOSITORY, TOKEN, World};
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
/// Where a journey's repository comes from: `testdata/journeys/NAME/`.
const JOURNEYS: &str = "testdata/journeys";

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
    /// A step of the journey NAME: run after the journey's earlier blocks, as in one terminal;
    /// with a reason, not run (its `kubectl apply -f FILE` files validated where it stands).
    Journey { name: String, skip: Option<String> },
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
    } else if let Some(rest) = rest.strip_prefix("journey:") {
        let rest = rest.trim();
        let (name, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if !root().join(JOURNEYS).join(name).is_dir() {
            return Err(format!("no journey repository {JOURNEYS}/{name}/"));
        }
        let skip = match rest.trim() {
            "" => None,
            rest => match rest.strip_prefix("skip:").map(str::trim) {
                Some(reason) if !reason.is_empty() => Some(reason.to_owned()),
                _ => {
                    return Err(format!(
                        "`journey: {name} {rest}`: after a journey's name, only `skip: REASON`"
                    ));
                }
            },
        };
        Kind::Journey {
            name: name.to_owned(),
            skip,
        }
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
            "`{rest}`: after the language, `skip: REASON`, `tested: tests/NAME.rs`, \
             `sandbox: NAME` or `journey: NAME [skip: REASON]`"
        ));
    };
    Ok(Some((language.to_owned(), kind)))
}

// ------------------------------------------------------------ main

fn main() {
    let (blocks, problems) = blocks();
    let count = |f: fn(&Kind) -> bool| blocks.iter().filter(|b| f(&b.kind)).count();
    eprintln!(
        "docs: {} command blocks: {} run here, {} skipped, {} run by other tests, {} steps of \
         journeys",
        blocks.len(),
        count(|k| matches!(k, Kind::Run { .. })),
        count(|k| matches!(k, Kind::Skip(_))),
        count(|k| matches!(k, Kind::Tested(_))),
        count(|k| matches!(k, Kind::Journey { .. })),
    );
    let mut trials = vec![Trial::test("inventory", move || {
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n").into())
        }
    })];
    // A journey's steps, in the order of their document: one trial each journey.
    let mut journeys: Vec<(String, String, Vec<Block>)> = Vec::new();
    for block in blocks {
        if let Kind::Journey { name, .. } = &block.kind {
            match journeys
                .iter_mut()
                .find(|(file, n, _)| *file == block.file && n == name)
            {
                Some((_, _, steps)) => steps.push(block),
                None => journeys.push((block.file.clone(), name.clone(), vec![block])),
            }
        } else {
            trials.push(trial(block));
        }
    }
    for (_, name, steps) in journeys {
        trials.push(journey_trial(name, steps));
    }
    image_update_testkit::run(trials);
}

fn trial(block: Block) -> Trial {
    let name = block.name();
    match block.kind.clone() {
        Kind::Skip(reason) => Trial::ignorable_test(name, move || {
            validate_applied(&block, &root())?;
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
            let gate = needs(std::slice::from_ref(&block));
            gated(name, gate, move |()| run_block(&block, sandbox.as_deref()))
        }
        Kind::Journey { .. } => unreachable!("journeys are run by journey_trial"),
    }
}

/// What `blocks` need to run: the programs they call, and the fake GitHub's API description for
/// pull requests.
fn needs(blocks: &[Block]) -> impl FnOnce() -> Result<(), Unmet> + Send + 'static {
    let mut needs = vec!["bash", "git", "docker-registry", "lighttpd"];
    let runs = |b: &&Block| !matches!(&b.kind, Kind::Journey { skip: Some(_), .. });
    if blocks.iter().filter(runs).any(|b| b.text.contains("kpt ")) {
        needs.push("kpt");
    }
    // A skipped step's `kubectl apply -f FILE` is validated when kubernetes-validate is there.
    if blocks
        .iter()
        .filter(runs)
        .any(|b| b.text.contains("kubectl apply"))
    {
        needs.push(image_update_testkit::kube::PROGRAM);
    }
    let pull_request = blocks
        .iter()
        .filter(runs)
        .any(|b| b.text.contains("--pull-request") || b.text.contains("pullRequest"));
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
    }
}

// ------------------------------------------------------------ the world

/// The servers the documents' commands reach ([`image_update_testkit::world`]), started once.
struct Docs {
    world: World,
    /// Held while a block uses `github.com/acme/fleet`, which each such block gets afresh.
    repository: Mutex<()>,
}

fn docs() -> Result<&'static Docs, Failed> {
    static DOCS: OnceLock<Result<Docs, String>> = OnceLock::new();
    DOCS.get_or_init(|| {
        let world = World::start()?;
        push_images(&world.registry);
        Ok(Docs {
            world,
            repository: Mutex::new(()),
        })
    })
    .as_ref()
    .map_err(|e| Failed::from(e.as_str()))
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
    registry.push_one_image("acme/api", &["1.0.0", "1.1.0", "1.1.2", "2.0.0"]);
    registry.push_one_image("library/nginx", &["stable", "5.0.0", "5.0.3", "5.1.0"]);
    registry.push_one_image("some/image", &["5.0.0", "5.0.1"]);
}

// ------------------------------------------------------------ running a block

/// The sandbox of one block (or one journey): its working directory, home, temporary directory
/// and `PATH`; for a journey, the state its steps hand on (working directory, exported
/// variables).
struct Sandbox {
    _temp: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    bin: PathBuf,
    /// A journey's `cwd` and `env` files.
    state: Option<PathBuf>,
}

/// The sandbox of a block: a copy of `testdata/docs/NAME/`, or of the checkout's directories.
fn sandbox(name: Option<&str>) -> Result<Sandbox, Failed> {
    let sandbox = empty_sandbox()?;
    match name {
        Some(name) => copy(
            &root().join("testdata/docs").join(name).join("."),
            &sandbox.work,
        )?,
        None => {
            for dir in ["examples", "testdata/demo", "deploy"] {
                let to = sandbox.work.join(dir);
                fs::create_dir_all(to.parent().unwrap())?;
                copy(&root().join(dir), &to)?;
            }
        }
    }
    Ok(sandbox)
}

/// A fresh sandbox with an empty working directory, and a user's git configuration in its home:
/// an identity, and the documents' token for `github.com` in git's credential store (the proxy's
/// CA is `GIT_SSL_CAINFO`, [`command`]).
fn empty_sandbox() -> Result<Sandbox, Failed> {
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
    std::os::unix::fs::symlink(BIN, bin.join("image-update"))?;
    script(&bin.join("cargo"), CARGO)?;
    script(&bin.join("kubectl"), KUBECTL)?;
    fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = A Newcomer\n\temail = newcomer@acme.example\n\
         [credential]\n\thelper = store\n[init]\n\tdefaultBranch = main\n",
    )?;
    fs::write(
        home.join(".git-credentials"),
        format!("https://x-access-token:{TOKEN}@github.com\n"),
    )?;
    Ok(Sandbox {
        _temp: temp,
        work,
        home,
        tmp,
        bin,
        state: None,
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

/// A block's command, in its sandbox, with stderr merged into stdout. In a journey it starts
/// where the journey's last step left off (its working directory and exported variables), and
/// leaves them for the next.
fn command(sandbox: &Sandbox, world: &World, script: &str) -> snapbox::cmd::Command {
    let path = format!(
        "{}:{}",
        sandbox.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let ca = world.ca_file(&sandbox.tmp).unwrap();
    let script = match &sandbox.state {
        None => format!("set -eo pipefail\n{script}"),
        Some(state) => format!(
            "set -eo pipefail\ncd \"$(cat '{cwd}')\"\n[ -f '{env}' ] && . '{env}'\n\
             trap \"pwd > '{cwd}'; export -p > '{env}'\" EXIT\n{script}",
            cwd = state.join("cwd").display(),
            env = state.join("env").display(),
        ),
    };
    snapbox::cmd::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&sandbox.work)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &sandbox.home)
        .env("TMPDIR", &sandbox.tmp)
        .env("LANG", "C.UTF-8")
        .env("HTTPS_PROXY", world.proxy.url())
        .env("SSL_CERT_FILE", &ca)
        // git's HTTPS (GnuTLS) reads its CAs from here, not from SSL_CERT_FILE.
        .env("GIT_SSL_CAINFO", &ca)
        .timeout(BLOCK_TIMEOUT)
        .stderr_to_stdout()
}

/// Runs `block`: a script (every command must succeed) or a transcript.
fn run_one(block: &Block, sandbox: &Sandbox, world: &World) -> Result<(), Failed> {
    match block.language.as_str() {
        "console" => run_transcript(block, sandbox, world),
        _ => {
            let out = command(sandbox, world, &block.text).output()?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{} failed ({}):\n{}",
                    block.name(),
                    out.status,
                    String::from_utf8_lossy(&out.stdout)
                )
                .into())
            }
        }
    }
}

fn run_block(block: &Block, sandbox_name: Option<&str>) -> Result<(), Failed> {
    let docs = docs()?;
    let world = &docs.world;
    let sandbox = sandbox(sandbox_name)?;
    let uses_repository = block.text.contains("image-update job");
    let _held = uses_repository.then(|| docs.repository.lock().unwrap_or_else(|e| e.into_inner()));
    let before = if uses_repository {
        Some(world.seed(&root().join("testdata/docs/remote"))?)
    } else {
        None
    };
    run_one(block, &sandbox, world)?;
    if let Some(before) = before {
        let after = world.refs()?;
        if after == before {
            return Err(format!(
                "{}: `image-update job` ran, but no ref of {REPOSITORY} moved: {after:?}",
                block.name()
            )
            .into());
        }
    }
    Ok(())
}

// ------------------------------------------------------------ journeys

/// The trial of a journey: its steps in order.
fn journey_trial(name: String, steps: Vec<Block>) -> Trial {
    let title = format!("{} journey: {name}", steps[0].name());
    let gate = needs(&steps);
    gated(title, gate, move |()| run_journey(&name, &steps))
}

/// A journey: `github.com/acme/fleet` afresh from `testdata/journeys/NAME/`, then each step in
/// one sandbox, starting in its empty working directory, as in one terminal; a skipped step's
/// `kubectl apply -f FILE` files are validated where the journey stands. When a step ran
/// `image-update job`, a ref of the repository must have moved by the end.
fn run_journey(name: &str, steps: &[Block]) -> Result<(), Failed> {
    let docs = docs()?;
    let world = &docs.world;
    let mut sandbox = empty_sandbox()?;
    let state = sandbox.tmp.join("journey");
    fs::create_dir_all(&state)?;
    fs::write(state.join("cwd"), sandbox.work.to_string_lossy().as_bytes())?;
    sandbox.state = Some(state.clone());
    let _held = docs.repository.lock().unwrap_or_else(|e| e.into_inner());
    let before = world.seed(&root().join(JOURNEYS).join(name))?;
    for step in steps {
        match &step.kind {
            Kind::Journey { skip: Some(_), .. } => {
                let here = PathBuf::from(fs::read_to_string(state.join("cwd"))?.trim_end());
                validate_applied(step, &here)?;
            }
            _ => run_one(step, &sandbox, world)?,
        }
    }
    if steps.iter().any(|s| s.text.contains("image-update job")) && world.refs()? == before {
        return Err(format!("journey {name}: no ref of {REPOSITORY} moved").into());
    }
    Ok(())
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

/// A skipped block's `kubectl apply -f FILE`: FILE, a file under `base` (the checkout, or where
/// a journey stands), must be valid.
fn validate_applied(block: &Block, base: &Path) -> Result<(), Failed> {
    let words: Vec<&str> = block.text.split_whitespace().collect();
    let mut files = Vec::new();
    for (i, pair) in words.windows(2).enumerate() {
        let applies = words[..i]
            .iter()
            .rev()
            .take_while(|w| **w != "kubectl")
            .any(|w| *w == "apply");
        if applies && pair[0] == "-f" && pair[1] != "-" {
            files.push(base.join(pair[1]));
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
