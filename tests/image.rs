//! The container image, run for real with podman: the one image that kpt,
//! GitHub Actions and Kubernetes Jobs use.
//!
//! * Always (no tools needed): the Dockerfile's shape (builder and runtime
//!   stages sharing `scripts/mkroot.sh`; exec-form absolute ENTRYPOINT; no
//!   USER, CMD or WORKDIR; OCI labels), the runtime tree `scripts/mkroot.sh`
//!   writes, and the published image name wherever it is written.
//! * With the image (`IMAGE_UPDATE_IMAGE=TAG`, built by
//!   `scripts/build-image.sh TAG`), `podman` and `kpt`:
//!   - `KPT_FN_RUNTIME=podman kpt fn eval --image TAG` with the README's
//!     arguments over `examples/configmap-args`, byte-checked against its
//!     `.expected/out/`;
//!   - `kpt fn render` of `testdata/image/render/`, whose Kptfile names the
//!     image, byte-checked against its `.expected/out/`;
//!   - `kpt fn doc --image TAG` prints exactly what `image-update --help`
//!     prints;
//!   - the Action shape: every golden case of `testdata/action/cases/` run in
//!     the container as the runner runs it (root, the workspace mounted at
//!     `/github/workspace` and owned by uid 1001, `INPUT_*` variables,
//!     `GITHUB_OUTPUT`/`GITHUB_STEP_SUMMARY` under a mounted
//!     `/github/file_commands`), compared byte for byte with the same
//!     expectations as `tests/action.rs`;
//!   - the Job shape (`--user 65534 --read-only --tmpfs /tmp`) updating a
//!     mounted tree, and fetching over TLS from a real `docker-registry` on
//!     127.0.0.1 with the bundled roots, the image's CA bundle path and a
//!     per-registry CA file;
//!   - the image's facts: entrypoint, no user/workdir/cmd, labels, size,
//!     a static binary, and exactly the files of `scripts/mkroot.sh`.
//!
//! Without `IMAGE_UPDATE_IMAGE` (or podman, kpt, docker-registry) these
//! trials are ignored, with the reason; with `CI` set they fail instead.
//! With `IMAGE_UPDATE_IMAGE_LATER` set (and no image named) they are ignored
//! as deferred, also under `CI`: `.ci/run` runs the suite that way while the
//! image is being built, then this binary again with the image.
//! podman must see the store the image was built in: source
//! `scripts/podman-env.sh` first (as `.ci/run` does); without
//! `CONTAINERS_CONF` the tests use `target/podman/` as that script does.
//! These tests run as root (podman runs rootful; workspaces are chowned).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

mod action_cases;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use action_cases::{Case, root};
use image_update_testkit::Unmet;
use image_update_testkit::registry::{Auth, ImageSpec, Registry, TestCa};
use libtest_mimic::{Failed, Trial};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
/// The variable naming the image under test.
const IMAGE_VARIABLE: &str = "IMAGE_UPDATE_IMAGE";
/// Set by a run that tests the image with a later command (see the module
/// documentation).
const LATER_VARIABLE: &str = "IMAGE_UPDATE_IMAGE_LATER";
/// Where the image is published (kpt-fn.yaml, README, action.yml).
const IMAGE_NAME: &str = "ghcr.io/image-update/image-update";
/// The entrypoint every target relies on.
const ENTRYPOINT: &str = "/usr/local/bin/image-update";
/// The image must stay under this size: the target, 15 MB
/// (BENCHMARKS.md has the figure and where the bytes go).
const MAX_IMAGE_BYTES: u64 = 15_000_000;
/// The runner user that owns a GitHub workspace.
const RUNNER_UID: u32 = 1001;
/// `nobody`, as a Job runs the image.
const NOBODY: u32 = 65534;

fn published() -> String {
    format!("{IMAGE_NAME}:{}", env!("CARGO_PKG_VERSION"))
}

fn main() {
    let mut trials = vec![
        Trial::test("dockerfile_shape", dockerfile_shape),
        Trial::test("runtime_tree", runtime_tree),
        Trial::test("published_name", published_name),
        image_trial("image_facts", &["podman", "tar", "ldd"], image_facts),
        image_trial("kpt_fn_eval_image", &["podman", "kpt"], kpt_fn_eval),
        image_trial("kpt_fn_render_image", &["podman", "kpt"], kpt_fn_render),
        image_trial("kpt_fn_doc_image", &["podman", "kpt"], kpt_fn_doc),
        image_trial("job_shape_update", &["podman"], job_shape_update),
        image_trial(
            "job_shape_fetch_over_tls",
            &["podman", "docker-registry"],
            job_shape_fetch_over_tls,
        ),
    ];
    for case in action_cases::cases() {
        let name = format!("action_shape::{}", case.name);
        trials.push(image_case_trial(name, case));
    }
    trials.push(image_trial(
        "action_shape_keeps_workspace_owner",
        &["podman"],
        action_keeps_owner,
    ));
    image_update_testkit::run(trials);
}

// ------------------------------------------------------------ gating

/// The image under test, or why there is none.
fn image_tag() -> Option<String> {
    std::env::var(IMAGE_VARIABLE).ok().filter(|v| !v.is_empty())
}

/// A trial that needs the image and `needs`: ignored with the reason
/// without them, failed without them when `CI` is set.
fn image_trial(
    name: &str,
    needs: &'static [&'static str],
    test: fn(&str) -> Result<(), Failed>,
) -> Trial {
    gate(name.to_owned(), needs, move |tag| test(&tag))
}

fn image_case_trial(name: String, case: Case) -> Trial {
    gate(name, &["podman"], move |tag| action_shape(&tag, &case))
}

fn gate(
    name: String,
    needs: &'static [&'static str],
    test: impl FnOnce(String) -> Result<(), Failed> + Send + 'static,
) -> Trial {
    image_update_testkit::gated(
        name,
        move || {
            if image_tag().is_none() && std::env::var_os(LATER_VARIABLE).is_some() {
                return Err(Unmet::Later(format!(
                    "deferred ({LATER_VARIABLE}): run once the image is built"
                )));
            }
            Unmet::programs(needs)?;
            image_tag().ok_or_else(|| {
                Unmet::Missing(format!(
                    "needs the image: build it with scripts/build-image.sh TAG and export \
                     {IMAGE_VARIABLE}=TAG"
                ))
            })
        },
        test,
    )
}

// ------------------------------------------------------------ helpers

fn read_text(path: &Path) -> Result<String, Failed> {
    fs_err::read_to_string(path).map_err(|e| e.to_string().into())
}

/// The target directory (where `scripts/podman-env.sh` keeps podman's
/// store by default).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| root().join("target"), Path::to_path_buf)
}

/// `program` with podman's private configuration (the caller's, or the
/// one `scripts/podman-env.sh` writes by default).
fn tool(program: &str) -> Command {
    let mut cmd = Command::new(program);
    if std::env::var_os("CONTAINERS_CONF").is_none() {
        let dir = target_dir().join("podman");
        cmd.env("CONTAINERS_CONF", dir.join("containers.conf"));
        cmd.env("CONTAINERS_STORAGE_CONF", dir.join("storage.conf"));
    }
    cmd.stdin(Stdio::null());
    cmd
}

fn run(cmd: &mut Command) -> Result<Output, Failed> {
    cmd.output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}").into())
}

fn log(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn succeed(cmd: &mut Command) -> Result<Output, Failed> {
    let out = run(cmd)?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed: {}", log(&out)).into());
    }
    Ok(out)
}

/// `chown -R uid:uid dir`.
fn chown_tree(dir: &Path, uid: u32) -> Result<(), Failed> {
    std::os::unix::fs::chown(dir, Some(uid), Some(uid))
        .map_err(|e| format!("chown {}: {e} (the image tests run as root)", dir.display()))?;
    for entry in fs_err::read_dir(dir).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            chown_tree(&path, uid)?;
        } else {
            std::os::unix::fs::chown(&path, Some(uid), Some(uid))
                .map_err(|e| format!("chown {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Compare the files of `actual` with `expected` byte for byte, skipping
/// the files `skip` names (relative paths).
fn compare_trees(expected: &Path, actual: &Path, skip: &[&str]) -> Result<(), Failed> {
    let keep = |files: BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        files
            .into_iter()
            .filter(|(rel, _)| {
                !skip
                    .iter()
                    .any(|s| rel == s || rel.starts_with(&format!("{s}/")))
            })
            .collect()
    };
    let expected = keep(action_cases::files(expected)?);
    let actual = keep(action_cases::files(actual)?);
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    if names(&expected) != names(&actual) {
        return Err(format!(
            "files {:?}, expected {:?}",
            names(&actual),
            names(&expected)
        )
        .into());
    }
    for (rel, bytes) in &expected {
        if &actual[rel] != bytes {
            return Err(action_cases::diff(rel, bytes, &actual[rel]).into());
        }
    }
    Ok(())
}

// ------------------------------------------------------------ static checks

/// The instructions of a Dockerfile, continuation lines joined, comments
/// dropped, by stage.
fn dockerfile_stages(text: &str) -> Vec<Vec<(String, String)>> {
    let mut stages: Vec<Vec<(String, String)>> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let instruction = std::mem::take(&mut pending);
        let (word, rest) = instruction
            .split_once(char::is_whitespace)
            .unwrap_or((instruction.as_str(), ""));
        let word = word.to_ascii_uppercase();
        if word == "FROM" {
            stages.push(Vec::new());
        }
        if let Some(stage) = stages.last_mut() {
            stage.push((word, rest.trim().to_owned()));
        }
    }
    stages
}

fn dockerfile_shape() -> Result<(), Failed> {
    let text = read_text(&root().join("Dockerfile"))?;
    if text.lines().any(|l| l.trim_start().starts_with("# syntax")) {
        return Err("a `# syntax` line makes BuildKit pull a frontend image".into());
    }
    let stages = dockerfile_stages(&text);
    let [build, runtime] = stages.as_slice() else {
        return Err(format!(
            "{} stages, expected a builder and a runtime stage",
            stages.len()
        )
        .into());
    };
    if !build[0].1.ends_with(" AS build") {
        return Err(format!("the first stage is not named build: FROM {}", build[0].1).into());
    }
    let build_run: Vec<&String> = build
        .iter()
        .filter(|(w, _)| w == "RUN")
        .map(|(_, r)| r)
        .collect();
    let runs = |script: &str| build_run.iter().any(|r| r.contains(script));
    if !runs("scripts/build-static.sh") || !runs("scripts/mkroot.sh") {
        return Err("the builder must run scripts/build-static.sh and scripts/mkroot.sh".into());
    }
    if runtime[0].1 != "scratch" {
        return Err(format!(
            "the runtime stage is FROM {}, expected scratch",
            runtime[0].1
        )
        .into());
    }
    let words: Vec<&str> = runtime.iter().map(|(w, _)| w.as_str()).collect();
    for forbidden in ["USER", "CMD", "WORKDIR", "RUN", "ENV", "VOLUME"] {
        if words.contains(&forbidden) {
            return Err(format!("the runtime stage has {forbidden}").into());
        }
    }
    let copies: Vec<&String> = runtime
        .iter()
        .filter(|(w, _)| w == "COPY")
        .map(|(_, r)| r)
        .collect();
    if copies != ["--from=build /out/ /"] {
        return Err(format!(
            "the runtime stage must copy only the mkroot tree (`COPY --from=build /out/ /`), not {copies:?}"
        )
        .into());
    }
    let entrypoints: Vec<&String> = runtime
        .iter()
        .filter(|(w, _)| w == "ENTRYPOINT")
        .map(|(_, r)| r)
        .collect();
    let [entrypoint] = entrypoints.as_slice() else {
        return Err("the runtime stage needs exactly one ENTRYPOINT".into());
    };
    let parsed: Vec<String> = serde_json::from_str(entrypoint)
        .map_err(|_| format!("ENTRYPOINT {entrypoint} is not in exec (JSON) form"))?;
    if parsed != [ENTRYPOINT] {
        return Err(format!("ENTRYPOINT {parsed:?}, expected [{ENTRYPOINT:?}]").into());
    }
    let labels: String = runtime
        .iter()
        .filter(|(w, _)| w == "LABEL")
        .map(|(_, r)| r.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for (key, value) in [
        ("title", "image-update".to_owned()),
        ("version", env!("CARGO_PKG_VERSION").to_owned()),
        ("licenses", "Apache-2.0".to_owned()),
        (
            "source",
            "https://github.com/image-update/image-update".to_owned(),
        ),
    ] {
        let label = format!("org.opencontainers.image.{key}=\"{value}\"");
        if !labels.contains(&label) {
            return Err(format!("the runtime stage has no label {label}").into());
        }
    }
    if !labels.contains("org.opencontainers.image.description=") {
        return Err("the runtime stage has no description label".into());
    }
    // The local build uses this very stage, and the same tree script.
    let build_image = read_text(&root().join("scripts/build-image.sh"))?;
    for needle in [
        "Dockerfile",
        "scripts/mkroot.sh",
        "COPY --from=build /out/ /",
    ] {
        if !build_image.contains(needle) {
            return Err(format!("scripts/build-image.sh does not use {needle}").into());
        }
    }
    let ignore = read_text(&root().join(".dockerignore"))?;
    if !ignore.lines().any(|l| l.trim() == "target/") {
        return Err(".dockerignore must keep target/ out of the build context".into());
    }
    Ok(())
}

/// What `scripts/mkroot.sh` writes: (path, mode, content check).
fn check_runtime_tree(dir: &Path, binary: &[u8]) -> Result<(), Failed> {
    let mut found: Vec<String> = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), Failed> {
        for entry in fs_err::read_dir(dir).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let rel = path.strip_prefix(base).map_err(|e| e.to_string())?;
            out.push(format!("/{}", rel.display()));
            if path.is_dir() {
                walk(base, &path, out)?;
            }
        }
        Ok(())
    }
    walk(dir, dir, &mut found)?;
    found.sort();
    let expected = [
        "/etc",
        "/etc/group",
        "/etc/nsswitch.conf",
        "/etc/passwd",
        "/etc/ssl",
        "/etc/ssl/certs",
        "/etc/ssl/certs/ca-certificates.crt",
        "/tmp",
        "/usr",
        "/usr/local",
        "/usr/local/bin",
        "/usr/local/bin/image-update",
    ];
    if found != expected {
        return Err(format!("the tree holds {found:?}, expected {expected:?}").into());
    }
    let mode = |rel: &str| -> Result<u32, Failed> {
        Ok(fs_err::metadata(dir.join(rel))
            .map_err(|e| e.to_string())?
            .permissions()
            .mode()
            & 0o7777)
    };
    for (rel, want) in [
        ("tmp", 0o1777),
        ("usr/local/bin/image-update", 0o755),
        ("etc/passwd", 0o644),
        ("etc/group", 0o644),
        ("etc/ssl/certs/ca-certificates.crt", 0o644),
    ] {
        let got = mode(rel)?;
        if got != want {
            return Err(format!("/{rel} has mode {got:o}, expected {want:o}").into());
        }
    }
    let passwd = read_text(&dir.join("etc/passwd"))?;
    if passwd
        != "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
    {
        return Err(format!("/etc/passwd is {passwd:?}").into());
    }
    let group = read_text(&dir.join("etc/group"))?;
    if group != "root:x:0:\nnogroup:x:65534:\n" {
        return Err(format!("/etc/group is {group:?}").into());
    }
    if fs_err::read(dir.join("usr/local/bin/image-update")).map_err(|e| e.to_string())? != binary {
        return Err("the binary is not the one given".into());
    }
    let bundle = read_text(&dir.join("etc/ssl/certs/ca-certificates.crt"))?;
    if !bundle.contains("-----BEGIN CERTIFICATE-----") {
        return Err("the CA bundle holds no certificate".into());
    }
    Ok(())
}

fn runtime_tree() -> Result<(), Failed> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let binary = tmp.path().join("binary");
    fs_err::write(&binary, b"\x7fELF not really").map_err(|e| e.to_string())?;
    let bundle = tmp.path().join("bundle.pem");
    fs_err::write(
        &bundle,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .map_err(|e| e.to_string())?;
    let dest = tmp.path().join("root");
    let out = run(Command::new("sh")
        .arg(root().join("scripts/mkroot.sh"))
        .arg(&binary)
        .arg(&bundle)
        .arg(&dest))?;
    if !out.status.success() {
        return Err(format!("mkroot.sh failed: {}", log(&out)).into());
    }
    check_runtime_tree(&dest, b"\x7fELF not really")?;
    // A missing CA bundle is an error, not an image without one.
    let out = run(Command::new("sh")
        .arg(root().join("scripts/mkroot.sh"))
        .arg(&binary)
        .arg(tmp.path().join("absent.pem"))
        .arg(tmp.path().join("other")))?;
    if out.status.success() {
        return Err("mkroot.sh accepted a missing CA bundle".into());
    }
    Ok(())
}

fn published_name() -> Result<(), Failed> {
    let meta = action_cases::yaml("kpt-fn.yaml", &read_text(&root().join("kpt-fn.yaml"))?)?;
    if meta["image"] != IMAGE_NAME {
        return Err(format!(
            "kpt-fn.yaml names image {}, expected {IMAGE_NAME}",
            meta["image"]
        )
        .into());
    }
    let readme = read_text(&root().join("README.md"))?;
    for needle in [
        format!("kpt fn eval --image {} ", published()),
        format!("podman pull {}", published()),
    ] {
        if !readme.contains(&needle) {
            return Err(format!("the README does not show `{needle}`").into());
        }
    }
    let kptfile = read_text(&root().join("testdata/image/render/Kptfile"))?;
    if !kptfile.contains(&format!("image: {}\n", published())) {
        return Err("testdata/image/render/Kptfile does not name the published image".into());
    }
    Ok(())
}

// ------------------------------------------------------------ image facts

fn image_facts(tag: &str) -> Result<(), Failed> {
    let out = succeed(tool("podman").args(["image", "inspect", tag]))?;
    let inspect: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let image = &inspect[0];
    let config = &image["Config"];
    if config["Entrypoint"] != serde_json::json!([ENTRYPOINT]) {
        return Err(format!("Entrypoint {}", config["Entrypoint"]).into());
    }
    for key in ["User", "WorkingDir"] {
        if config[key].as_str().is_some_and(|v| !v.is_empty()) {
            return Err(format!("the image sets {key} {}", config[key]).into());
        }
    }
    if config["Cmd"].as_array().is_some_and(|c| !c.is_empty()) {
        return Err(format!("the image sets Cmd {}", config["Cmd"]).into());
    }
    let labels = &config["Labels"];
    if labels["org.opencontainers.image.version"] != env!("CARGO_PKG_VERSION")
        || labels["org.opencontainers.image.title"] != "image-update"
    {
        return Err(format!("labels {labels}").into());
    }
    let size = image["Size"].as_u64().ok_or("no Size")?;
    if size >= MAX_IMAGE_BYTES {
        return Err(format!("the image has {size} bytes, over {MAX_IMAGE_BYTES}").into());
    }
    // Its files: exactly the mkroot tree, with a static binary.
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let created = succeed(tool("podman").args(["create", tag]))?;
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    let tar = tmp.path().join("image.tar");
    let exported = run(tool("podman").args(["export", "-o"]).arg(&tar).arg(&id));
    let _ = run(tool("podman").args(["rm", &id]));
    let exported = exported?;
    if !exported.status.success() {
        return Err(format!("podman export failed: {}", log(&exported)).into());
    }
    let tree = tmp.path().join("root");
    fs_err::create_dir_all(&tree).map_err(|e| e.to_string())?;
    succeed(
        Command::new("tar")
            .arg("-xpf")
            .arg(&tar)
            .arg("-C")
            .arg(&tree),
    )?;
    // podman adds the mount points a container needs; they are not ours.
    for runtime_added in [
        "dev",
        "proc",
        "sys",
        "run",
        "etc/hosts",
        "etc/resolv.conf",
        "etc/hostname",
    ] {
        let path = tree.join(runtime_added);
        if path.is_dir() {
            fs_err::remove_dir_all(&path).map_err(|e| e.to_string())?;
        } else if path.exists() {
            fs_err::remove_file(&path).map_err(|e| e.to_string())?;
        }
    }
    let binary_path = tree.join("usr/local/bin/image-update");
    let binary = fs_err::read(&binary_path).map_err(|e| e.to_string())?;
    check_runtime_tree(&tree, &binary)?;
    let ldd = run(Command::new("ldd").arg(&binary_path))?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&ldd.stdout),
        String::from_utf8_lossy(&ldd.stderr)
    );
    if !said.contains("statically linked") && !said.contains("not a dynamic executable") {
        return Err(format!("the binary has dynamic dependencies:\n{said}").into());
    }
    let meta = fs_err::metadata(&binary_path).map_err(|e| e.to_string())?;
    if meta.uid() != 0 {
        return Err("the binary is not owned by root".into());
    }
    Ok(())
}

// ------------------------------------------------------------ kpt

fn kpt() -> Command {
    let mut cmd = tool("kpt");
    cmd.env("KPT_FN_RUNTIME", "podman");
    cmd
}

/// The README's `kpt fn eval --image` line, with the image under test.
fn kpt_fn_eval(tag: &str) -> Result<(), Failed> {
    let readme = read_text(&root().join("README.md"))?;
    let line = readme
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("kpt fn eval --image "))
        .ok_or("the README has no `kpt fn eval --image` line")?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let [_, _, _, _, image, package, rest @ ..] = words.as_slice() else {
        return Err(format!("unexpected README line {line:?}").into());
    };
    if *image != published() {
        return Err(format!("the README runs {image}, expected {}", published()).into());
    }
    let example = root().join(package);
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let pkg = tmp.path().join("pkg");
    action_cases::copy_tree(&example, &pkg)?;
    let out = run(kpt()
        .args(["fn", "eval", "--image", tag])
        .arg(&pkg)
        .args(rest))?;
    if !out.status.success() {
        return Err(format!("kpt fn eval --image failed: {}", log(&out)).into());
    }
    let before = action_cases::files(&example)?;
    let after = action_cases::files(&pkg)?;
    for (rel, bytes) in &before {
        let yaml = rel.ends_with(".yaml") || rel.ends_with(".yml");
        if rel.starts_with(".expected/") || (yaml && !rel.contains('/')) {
            continue;
        }
        if !yaml && after.get(rel) != Some(bytes) {
            return Err(format!("{rel} changed").into());
        }
    }
    compare_trees(
        &example.join(".expected/out"),
        &pkg,
        &["Kptfile", "README.md", ".krmignore", ".expected"],
    )
}

fn kpt_fn_render(tag: &str) -> Result<(), Failed> {
    let package = root().join("testdata/image/render");
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let pkg = tmp.path().join("image-render");
    action_cases::copy_tree(&package, &pkg)?;
    fs_err::remove_dir_all(pkg.join(".expected")).ok();
    let kptfile = read_text(&pkg.join("Kptfile"))?;
    let ours = kptfile.replace(&published(), tag);
    if ours == kptfile {
        return Err("the Kptfile does not name the published image".into());
    }
    fs_err::write(pkg.join("Kptfile"), &ours).map_err(|e| e.to_string())?;
    let out = run(kpt().args(["fn", "render"]).arg(&pkg))?;
    if !out.status.success() {
        return Err(format!("kpt fn render failed: {}", log(&out)).into());
    }
    if read_text(&pkg.join("Kptfile"))? != ours {
        return Err("kpt fn render changed the Kptfile".into());
    }
    let expected = package.join(".expected/out");
    if action_cases::updating()? {
        let mut outputs = action_cases::files(&pkg)?;
        outputs.retain(|rel, _| rel != "Kptfile" && rel != ".krmignore");
        image_update_testkit::golden::write_tree(&expected, &outputs)?;
    }
    compare_trees(&expected, &pkg, &["Kptfile", ".krmignore"])
}

/// `kpt fn doc --image` runs the image with `--help`: the function's
/// documentation, exactly as the binary prints it.
fn kpt_fn_doc(tag: &str) -> Result<(), Failed> {
    let out = run(kpt().args(["fn", "doc", "--image", tag]))?;
    if !out.status.success() {
        return Err(format!("kpt fn doc failed: {}", log(&out)).into());
    }
    // kpt ends what the function printed with a line break of its own.
    let mut help = succeed(Command::new(BIN).arg("--help").stdin(Stdio::null()))?.stdout;
    help.push(b'\n');
    if out.stdout != help {
        return Err(
            action_cases::diff("kpt fn doc vs image-update --help", &help, &out.stdout).into(),
        );
    }
    let doc = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Run as a KRM function",
        "ImageUpdateAutomation",
        "kpt fn eval",
    ] {
        if !doc.contains(needle) {
            return Err(format!("kpt fn doc does not show {needle:?}").into());
        }
    }
    Ok(())
}

// ------------------------------------------------------------ Action shape

/// Run `case` in the container as the runner runs a Docker action; the
/// prepared step (its workspace owned by the runner's uid).
fn run_action_container(
    tag: &str,
    case: &Case,
) -> Result<(action_cases::Prepared, action_cases::Observed), Failed> {
    let prepared = action_cases::prepare(&case.workspace)?;
    let home = prepared.tmp.path().join("home");
    fs_err::create_dir_all(&home).map_err(|e| e.to_string())?;
    for dir in [&prepared.workspace, &prepared.file_commands, &home] {
        chown_tree(dir, RUNNER_UID)?;
    }
    let mut cmd = tool("podman");
    cmd.args([
        "run",
        "--rm",
        "--network",
        "none",
        "--workdir",
        "/github/workspace",
    ])
    .arg("-v")
    .arg(format!(
        "{}:/github/workspace",
        prepared.workspace.display()
    ))
    .arg("-v")
    .arg(format!(
        "{}:/github/file_commands",
        prepared.file_commands.display()
    ))
    .arg("-v")
    .arg(format!("{}:/github/home", home.display()));
    // As the runner does: names on the command line, values in podman's
    // environment.
    let mut env: Vec<(String, String)> = action_cases::input_env(&case.inputs)?;
    env.extend(
        [
            ("HOME", "/github/home"),
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_WORKSPACE", "/github/workspace"),
            ("GITHUB_OUTPUT", "/github/file_commands/set_output_1"),
            (
                "GITHUB_STEP_SUMMARY",
                "/github/file_commands/step_summary_1",
            ),
            (
                image_update::api::action::TEST_DELIMITER_VARIABLE,
                action_cases::DELIMITER,
            ),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    for (name, value) in &env {
        cmd.arg("-e").arg(name).env(name, value);
    }
    cmd.arg(tag).arg("action");
    let out = run(&mut cmd)?;
    let observed = action_cases::observe(
        &prepared,
        out.stdout,
        out.stderr,
        out.status.code().unwrap_or(-1),
    )?;
    Ok((prepared, observed))
}

fn action_shape(tag: &str, case: &Case) -> Result<(), Failed> {
    let (prepared, observed) = run_action_container(tag, case)?;
    action_cases::compare(case, &observed, "/github/workspace", false)?;
    // Appending keeps the runner's files the runner's.
    for file in [&prepared.output, &prepared.summary] {
        let uid = fs_err::metadata(file).map_err(|e| e.to_string())?.uid();
        if uid != RUNNER_UID {
            return Err(format!("{} is now owned by {uid}", file.display()).into());
        }
    }
    Ok(())
}

/// The files the Action rewrites stay the runner's (uid 1001), so later
/// steps (git commit, other actions) can write them.
fn action_keeps_owner(tag: &str) -> Result<(), Failed> {
    let case = action_cases::cases()
        .into_iter()
        .find(|c| c.name == "update-and-commit")
        .ok_or("no update-and-commit case")?;
    let (prepared, observed) = run_action_container(tag, &case)?;
    if observed.code != 0 {
        return Err(format!(
            "the step failed: {}",
            String::from_utf8_lossy(&observed.stderr)
        )
        .into());
    }
    for rel in [
        "clusters/prod/podinfo.yaml",
        "clusters/prod/kustomization.yaml",
    ] {
        let meta = fs_err::metadata(prepared.workspace.join(rel)).map_err(|e| e.to_string())?;
        if (meta.uid(), meta.gid()) != (RUNNER_UID, RUNNER_UID) {
            return Err(format!(
                "{rel} is owned by {}:{} after the update, expected {RUNNER_UID}:{RUNNER_UID}",
                meta.uid(),
                meta.gid()
            )
            .into());
        }
    }
    Ok(())
}

// ------------------------------------------------------------ Job shape

/// `podman run` as a Job runs the image: any uid (nobody), read-only root,
/// a tmpfs for /tmp.
fn job() -> Command {
    let mut cmd = tool("podman");
    cmd.args([
        "run",
        "--rm",
        "--user",
        &NOBODY.to_string(),
        "--read-only",
        "--tmpfs",
        "/tmp",
    ]);
    cmd
}

/// A Job updating a mounted tree gives the same tree as the Action's
/// update-and-commit case.
fn job_shape_update(tag: &str) -> Result<(), Failed> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tree = tmp.path().join("workspace");
    action_cases::copy_tree(&root().join("testdata/action/workspaces/fleet"), &tree)?;
    chown_tree(&tree, NOBODY)?;
    let out = run(job()
        .args(["--network", "none", "--workdir", "/workspace", "-v"])
        .arg(format!("{}:/workspace", tree.display()))
        .args([
            tag,
            "update",
            "clusters",
            "--policy",
            "flux-system:podinfo=ghcr.io/stefanprodan/podinfo:6.7.0",
            "--policy",
            "flux-system:redis=docker.io/library/redis:7.4.1",
            "--report",
            "image-update-report.json",
        ]))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || !stderr.ends_with("updated 3 fields in 2 files (1 warning)\n") {
        return Err(format!("the Job did not update: {}", log(&out)).into());
    }
    compare_trees(
        &root().join("testdata/action/cases/update-and-commit/workspace"),
        &tree,
        &[],
    )?;
    let meta =
        fs_err::metadata(tree.join("clusters/prod/podinfo.yaml")).map_err(|e| e.to_string())?;
    if meta.uid() != NOBODY {
        return Err(format!("the updated file is owned by {}", meta.uid()).into());
    }
    Ok(())
}

/// TLS in the scratch image, run as a Job (nobody, read-only root): the
/// registry on 127.0.0.1 has a certificate from a test CA. Trusted through
/// a per-registry `ca_file` and through `SSL_CERT_FILE` (the system store a
/// host would have); refused by the bundled roots alone, which shows they
/// were loaded and checked.
fn job_shape_fetch_over_tls(tag: &str) -> Result<(), Failed> {
    let ca = TestCa::new();
    let registry = Registry::start_with(Auth::Anonymous, Some(&ca));
    let spec = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    let (manifest, _) = registry.push_image("secure/app", "1.0.0", &spec);
    registry.push_tags(
        "secure/app",
        spec.media_type(),
        &manifest,
        &[
            "1.2.0".to_owned(),
            "1.10.1".to_owned(),
            "2.0.0-rc.1".to_owned(),
        ],
    );
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = tmp.path().join("config");
    fs_err::create_dir_all(&config).map_err(|e| e.to_string())?;
    fs_err::write(config.join("ca.pem"), &ca.ca_pem).map_err(|e| e.to_string())?;
    let host = registry.authority();
    let settings = |ca_file: bool| {
        format!(
            "registries:\n  {host}:\n    insecure: false\n{}retry:\n  max_retries: 0\n",
            if ca_file {
                "    ca_file: /config/ca.pem\n"
            } else {
                ""
            }
        )
    };
    fs_err::write(config.join("with-ca.yaml"), settings(true)).map_err(|e| e.to_string())?;
    fs_err::write(config.join("roots-only.yaml"), settings(false)).map_err(|e| e.to_string())?;
    chown_tree(&config, NOBODY)?;
    let fetch = |settings_file: &str, env: &[&str]| -> Result<Output, Failed> {
        let mut cmd = job();
        cmd.args(["--network", "host", "-v"])
            .arg(format!("{}:/config:ro", config.display()));
        for e in env {
            cmd.arg("-e").arg(e);
        }
        cmd.args([
            tag,
            "policy",
            &format!("{host}/secure/app"),
            "--semver",
            "1.x",
            "--registry-config",
            settings_file,
        ]);
        run(&mut cmd)
    };
    let chose = |out: &Output| String::from_utf8_lossy(&out.stdout).contains("1.10.1");
    let with_ca = fetch("/config/with-ca.yaml", &[])?;
    if !with_ca.status.success() || !chose(&with_ca) {
        return Err(format!("with the CA file: {}", log(&with_ca)).into());
    }
    let system = fetch("/config/roots-only.yaml", &["SSL_CERT_FILE=/config/ca.pem"])?;
    if !system.status.success() || !chose(&system) {
        return Err(format!("with SSL_CERT_FILE: {}", log(&system)).into());
    }
    let refused = fetch("/config/roots-only.yaml", &[])?;
    let said = String::from_utf8_lossy(&refused.stderr);
    if refused.status.success() || !said.contains("UnknownIssuer") {
        return Err(format!(
            "the bundled roots did not refuse the test CA: {}",
            log(&refused)
        )
        .into());
    }
    Ok(())
}
