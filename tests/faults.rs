//! image-update against a hostile user and a flaky world: symlinks, rename
//! failures (immutable files, a sticky directory), a full filesystem,
//! SIGKILL and SIGTERM in the middle of a large in-place run, concurrent
//! runs, closed stdout, unbounded inputs (`/dev/zero`, FIFOs), foreign
//! encodings and escaping ResourceList paths.
//!
//! Each trial runs the real binary (`IMAGE_UPDATE_BIN` runs the suite
//! against another build). Trials that need a program (`chattr`, `setpriv`,
//! `mount`, `docker-registry`) are ignored with the reason when it is
//! missing, and fail when `CI` is set; trials that need something the
//! machine may not allow (root, `chattr +i` on this filesystem, mounting a
//! tmpfs) are probed when the suite starts and ignored with the reason when
//! it is not allowed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use image_update_testkit::{self as testkit, trial};
use libtest_mimic::Trial;

// ---------------------------------------------------------------------------
// Helpers

fn bin_path() -> PathBuf {
    std::env::var_os("IMAGE_UPDATE_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_image-update")),
        PathBuf::from,
    )
}

fn bin() -> Command {
    let mut c = Command::new(bin_path());
    c.env_remove("IMAGE_UPDATE_MAX_FILE_SIZE")
        .env_remove("IMAGE_UPDATE_MAX_INPUT_SIZE")
        .stdin(Stdio::null());
    c
}

/// Run `c` (stdout and stderr captured), killing it (and failing) if it
/// takes longer than `limit`.
fn output_within(c: &mut Command, limit: Duration) -> Output {
    wait_within(c.stdout(Stdio::piped()), limit)
}

/// Run `c` with stdout closed (stderr captured).
fn output_closed(c: &mut Command) -> Output {
    wait_within(c.stdout(closed_stdout()), Duration::from_secs(120))
}

fn wait_within(c: &mut Command, limit: Duration) -> Output {
    let child = c.stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    // Collect the output on a thread (a full pipe must not block the child).
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
            panic!("still running after {limit:?} (hung)");
        }
    }
}

fn output(c: &mut Command) -> Output {
    output_within(c, Duration::from_secs(120))
}

/// stderr, cut short for failure messages.
fn stderr(o: &Output) -> String {
    let text = String::from_utf8_lossy(&o.stderr);
    match text.char_indices().nth(4000) {
        Some((i, _)) => format!("{}... (cut)", &text[..i]),
        None => text.into_owned(),
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn pod(tag: &str) -> String {
    format!("kind: Pod\nimage: nginx:{tag} # {{\"$imagepolicy\": \"ns:p\"}}\n")
}

fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let p = root.join(rel);
    fs_err::create_dir_all(p.parent().unwrap()).unwrap();
    fs_err::write(&p, text).unwrap();
    p
}

fn read(p: &Path) -> String {
    fs_err::read_to_string(p).unwrap()
}

/// Every name under `dir` (relative, `/` separators), recursively.
fn names(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs_err::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            out.insert(
                p.strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

/// The files a run left behind: anything named `.image-update*`.
fn leftovers(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| {
            n.rsplit('/')
                .next()
                .is_some_and(|b| b.starts_with(".image-update"))
        })
        .collect()
}

/// A write end of a pipe whose read end is already closed.
fn closed_stdout() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "probe", "");
    fs_err::metadata(f).unwrap().uid() == 0
}

/// A trial that needs a capability of this machine: ignored, with the
/// reason, when the probe says it is missing.
fn trial_if(name: &str, needs: &[&str], probe: Result<(), String>, test: fn()) -> Trial {
    match probe {
        Ok(()) => trial(name, needs, test),
        Err(why) => Trial::test(name, || Ok(()))
            .with_kind(why)
            .with_ignored_flag(true),
    }
}

fn probe_root() -> Result<(), String> {
    if is_root() {
        Ok(())
    } else {
        Err("needs root".to_owned())
    }
}

fn probe_chattr() -> Result<(), String> {
    if testkit::missing(&["chattr"]).len() == 1 {
        return Ok(()); // the trial itself reports the missing program
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let f = dir.path().join("probe");
    fs_err::write(&f, "").map_err(|e| e.to_string())?;
    let ok = Command::new("chattr")
        .arg("+i")
        .arg(&f)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let _ = Command::new("chattr").arg("-i").arg(&f).status();
    if ok {
        Ok(())
    } else {
        Err("needs chattr +i, which this filesystem or user does not allow".to_owned())
    }
}

fn probe_mount() -> Result<(), String> {
    if testkit::missing(&["mount", "umount"]).len() == 2 {
        return Ok(());
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(dir.path())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        let _ = Command::new("umount").arg(dir.path()).status();
        Ok(())
    } else {
        Err("needs to mount a tmpfs, which this machine does not allow".to_owned())
    }
}

/// A tree of `n` marked files in `n / 100 + 1` directories, at `tag`.
fn big_tree(root: &Path, n: usize, tag: &str) -> Vec<PathBuf> {
    (0..n)
        .map(|i| write(root, &format!("d{}/f{i:04}.yaml", i / 100), pod(tag)))
        .collect()
}

fn reset(files: &[PathBuf], tag: &str) {
    for f in files {
        fs_err::write(f, pod(tag)).unwrap();
    }
}

/// How many files hold `old` and `new`; fails on anything else (a torn or
/// foreign content).
fn census(files: &[PathBuf], old: &str, new: &str) -> (usize, usize) {
    let (old, new) = (pod(old), pod(new));
    let mut counts = (0, 0);
    for f in files {
        let text = read(f);
        if text == old {
            counts.0 += 1;
        } else if text == new {
            counts.1 += 1;
        } else {
            panic!("{}: partial or foreign content: {text:?}", f.display());
        }
    }
    counts
}

/// A small deterministic generator (test delays only).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn update(root: &Path, tag: &str) -> Command {
    let mut c = bin();
    c.arg("update")
        .arg(root)
        .arg("--policy")
        .arg(format!("ns:p=nginx:{tag}"))
        .arg("-q");
    c
}

/// Removes the immutable flag on drop, so that the temporary directory can
/// be removed even when the test fails.
struct Immutable(PathBuf);

impl Immutable {
    fn set(p: &Path) -> Self {
        let ok = Command::new("chattr").arg("+i").arg(p).status().unwrap();
        assert!(ok.success());
        Immutable(p.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// A ResourceList with one marked Pod and policies in a ConfigMap, after
/// `prefix`.
fn resource_list(prefix: &str) -> String {
    format!(
        "{prefix}apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- kind: Pod\n  metadata: {{name: web}}\n  image: nginx:1.25.0 # {{\"$imagepolicy\": \"ns:p\"}}\nfunctionConfig: {{apiVersion: v1, kind: ConfigMap, data: {{'ns:p': 'nginx:1.27.1'}}}}\n"
    )
}

// ---------------------------------------------------------------------------
// 1. Symlinks

fn a_symlink_given_as_path_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "real.yaml", pod("1.25.0"));
    let link = dir.path().join("l.yaml");
    std::os::unix::fs::symlink("real.yaml", &link).unwrap();
    // Given as a bare name: its directory is the current one.
    let out = output(update(Path::new("l.yaml"), "1.27.1").current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        fs_err::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is still a link"
    );
    assert_eq!(read(&target), pod("1.27.1"), "its target is written");
    assert!(leftovers(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

fn a_symlink_given_as_path_to_outside_its_directory_is_not_written() {
    let outside = tempfile::tempdir().unwrap();
    let target = write(outside.path(), "real.yaml", pod("1.25.0"));
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("l.yaml");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = output(&mut update(&link, "1.27.1"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("lies outside"), "{}", stderr(&out));
    assert!(
        fs_err::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read(&target), pod("1.25.0"));
}

// ---------------------------------------------------------------------------
// 2. All or nothing at the rename phase

/// `chattr +i` on one of 40 changed files: its rename fails, every file
/// already renamed is put back, the report is not written.
fn an_immutable_file_rolls_back_every_rename() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let files: Vec<PathBuf> = (0..40)
        .map(|i| write(&root, &format!("f{i:02}.yaml"), pod("1.25.0")))
        .collect();
    let _guard = Immutable::set(&files[20]);
    let report = dir.path().join("report.json");
    let out = output(update(&root, "1.27.1").arg("--report").arg(&report));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was written"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("f20.yaml"), "{}", stderr(&out));
    assert_eq!(census(&files, "1.25.0", "1.27.1"), (40, 0), "all old");
    assert!(!report.exists(), "the report is not written");
    assert!(leftovers(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

/// As an unprivileged user in a sticky directory, one file owned by someone
/// else can be read and staged but not replaced: the whole run must write
/// nothing (today's code renamed the others and failed on it).
fn a_file_a_sticky_directory_protects_changes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    fs_err::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = base.path().join("tree");
    fs_err::create_dir(&root).unwrap();
    fs_err::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let files: Vec<PathBuf> = (0..40)
        .map(|i| write(&root, &format!("f{i:02}.yaml"), pod("1.25.0")))
        .collect();
    for (i, f) in files.iter().enumerate() {
        if i == 20 {
            // root's, but readable and writable by all: hard links allowed.
            fs_err::set_permissions(f, std::fs::Permissions::from_mode(0o666)).unwrap();
        } else {
            std::os::unix::fs::chown(f, Some(65534), Some(65534)).unwrap();
        }
    }
    let out = output(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin_path())
            .arg("update")
            .arg(&root)
            .args(["--policy", "ns:p=nginx:1.27.1", "-q"])
            .stdin(Stdio::null()),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was written"),
        "{}",
        stderr(&out)
    );
    assert_eq!(census(&files, "1.25.0", "1.27.1"), (40, 0), "all old");
    assert!(leftovers(&root).is_empty(), "{:?}", names(&root));
}

// ---------------------------------------------------------------------------
// 3. and 9. Kills, terminations, a full filesystem, read-only directories

const BIG: usize = 3000;

/// How long one in-place run over the big tree takes here.
fn time_one_run(root: &Path, files: &[PathBuf]) -> Duration {
    let start = Instant::now();
    let out = output(&mut update(root, "1.27.1"));
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(census(files, "1.25.0", "1.27.1"), (0, BIG));
    reset(files, "1.25.0");
    took
}

fn kill_after(child: &mut Child, delay: Duration, signal: &str) {
    std::thread::sleep(delay);
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status();
}

/// SIGKILL at random moments of an in-place run over 3,000 files: no file is
/// ever partial; the next run (even one with nothing to change) puts the
/// tree back to all old or all new and removes every leftover file; the run
/// after that updates everything.
fn sigkill_during_writes_leaves_no_partial_file_and_the_next_run_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let files = big_tree(&root, BIG, "1.25.0");
    let took = time_one_run(&root, &files);
    let mut rng = Lcg(0x5eed);
    let mut mixed_after_kill = 0;
    for round in 0..6 {
        let delay = took.mul_f64(0.3 + rng.next() * 0.8);
        let mut child = update(&root, "1.27.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        kill_after(&mut child, delay, "KILL");
        child.wait().unwrap();
        let (old, new) = census(&files, "1.25.0", "1.27.1");
        if old != 0 && new != 0 {
            mixed_after_kill += 1;
        }
        // A run with nothing to change takes over what the killed one left.
        let out = output(bin().arg("update").arg(&root).args([
            "--policy",
            "other:policy=nginx:9.9.9",
            "-q",
        ]));
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}",
            stderr(&out)
        );
        let (old, new) = census(&files, "1.25.0", "1.27.1");
        assert!(
            old == BIG || new == BIG,
            "round {round} (killed after {delay:?}): {old} old and {new} new files after the next run"
        );
        assert!(
            leftovers(&root).is_empty(),
            "round {round}: {:?}",
            leftovers(&root)
        );
        reset(&files, "1.25.0");
    }
    eprintln!("{mixed_after_kill} of 6 kills hit the renames");
    let out = output(&mut update(&root, "1.27.1"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(census(&files, "1.25.0", "1.27.1"), (0, BIG));
    assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
}

/// The journal of the run working on `root`, once it records staged files
/// (the renames begin right after).
fn journal_when_staged(root: &Path, limit: Duration) -> Option<PathBuf> {
    let start = Instant::now();
    while start.elapsed() < limit {
        for e in fs_err::read_dir(root).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".image-update.")
                && name.ends_with(".journal")
                && fs_err::read_to_string(e.path()).is_ok_and(|t| t.contains("\"staged\""))
            {
                return Some(e.path());
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    None
}

/// SIGKILL right when the renames begin: the tree may be mixed then, and the
/// next run (one with nothing to change) puts every original back.
fn sigkill_during_the_renames_is_undone_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let files = big_tree(&root, BIG, "1.25.0");
    let mut mixed = 0;
    for round in 0..3 {
        let mut child = update(&root, "1.27.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let journal = journal_when_staged(&root, Duration::from_secs(120));
        // The journal is flushed, then the renames run (3,000 of them take
        // tens of milliseconds): land in them.
        std::thread::sleep(Duration::from_millis([10, 30, 60][round]));
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(child.id().to_string())
            .status();
        child.wait().unwrap();
        let journal = journal.expect("the run keeps a journal that records its staged files");
        // No journal any more: the run finished before the kill.
        let committed =
            fs_err::read_to_string(&journal).map_or(true, |t| t.contains("\"committed\""));
        let (old, new) = census(&files, "1.25.0", "1.27.1");
        if old != 0 && new != 0 {
            mixed += 1;
        }
        let out = output(
            bin()
                .arg("update")
                .arg(&root)
                .args(["--policy", "other:policy=nginx:9.9.9"]),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("was killed while writing") || committed || new == 0,
            "round {round}: the next run says what it did: {}",
            stderr(&out)
        );
        let after = census(&files, "1.25.0", "1.27.1");
        let expected = if committed { (0, BIG) } else { (BIG, 0) };
        assert_eq!(
            after, expected,
            "round {round}: {old} old and {new} new after the kill (committed: {committed})"
        );
        assert!(
            leftovers(&root).is_empty(),
            "round {round}: {:?}",
            leftovers(&root)
        );
        reset(&files, "1.25.0");
    }
    eprintln!("{mixed} of 3 kills left a mixed tree, which the next run undid");
}

/// SIGTERM (and SIGINT) at random moments: the run itself leaves the tree
/// all old or all new and removes its own temporary files, with no later run.
fn sigterm_during_writes_cleans_up_its_own_files() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let files = big_tree(&root, BIG, "1.25.0");
    let took = time_one_run(&root, &files);
    let mut rng = Lcg(0x7e57);
    for round in 0..6 {
        let signal = if round % 2 == 0 { "TERM" } else { "INT" };
        let delay = took.mul_f64(0.3 + rng.next() * 0.8);
        let mut child = update(&root, "1.27.1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        kill_after(&mut child, delay, signal);
        let out = child.wait_with_output().unwrap();
        let (old, new) = census(&files, "1.25.0", "1.27.1");
        assert!(
            old == BIG || new == BIG,
            "round {round} (SIG{signal} after {delay:?}, {:?} {:?}): {old} old and {new} new files: {}",
            out.status.code(),
            out.status.signal(),
            stderr(&out)
        );
        if old == BIG && out.status.code().is_some() {
            assert_ne!(
                out.status.code(),
                Some(0),
                "an interrupted run is no success"
            );
        }
        assert!(
            leftovers(&root).is_empty(),
            "round {round} (SIG{signal} after {delay:?}): {:?}",
            leftovers(&root)
        );
        reset(&files, "1.25.0");
    }
}

/// A full filesystem while staging: nothing is changed, nothing is left.
fn a_full_filesystem_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("mnt");
    fs_err::create_dir(&mount).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k"])
        .arg("tmpfs")
        .arg(&mount)
        .status()
        .unwrap();
    assert!(ok.success());
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.clone());
    let root = mount.join("tree");
    // 30 files of 8 KiB each: staging them needs 240 KiB more.
    let padding = format!("# {}\n", "x".repeat(8 * 1024));
    let text = |tag: &str| format!("{padding}{}", pod(tag));
    let files: Vec<PathBuf> = (0..30)
        .map(|i| write(&root, &format!("f{i:02}.yaml"), text("1.25.0")))
        .collect();
    // Fill the filesystem, then free about 64 KiB.
    let filler = mount.join("filler");
    {
        let mut f = fs_err::File::create(&filler).unwrap();
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let len = fs_err::metadata(&filler).unwrap().len();
        f.file().set_len(len.saturating_sub(64 * 1024)).unwrap();
    }
    let before = names(&root);
    let out = output(&mut update(&root, "1.27.1"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was written"),
        "{}",
        stderr(&out)
    );
    for f in &files {
        assert_eq!(read(f), text("1.25.0"));
    }
    assert_eq!(names(&root), before, "no temporary file is left");
}

/// As an unprivileged user, a directory without write permission: nothing
/// is changed, and the error names the file.
fn a_read_only_directory_changes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    fs_err::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = base.path().join("tree");
    let writable = write(&root, "a/f.yaml", pod("1.25.0"));
    let locked = write(&root, "b/f.yaml", pod("1.25.0"));
    for d in [&root, &root.join("a")] {
        std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
    }
    std::os::unix::fs::chown(&writable, Some(65534), Some(65534)).unwrap();
    fs_err::set_permissions(root.join("b"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = output(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin_path())
            .arg("update")
            .arg(&root)
            .args(["--policy", "ns:p=nginx:1.27.1", "-q"])
            .stdin(Stdio::null()),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("b/f.yaml"), "{}", stderr(&out));
    assert_eq!(read(&writable), pod("1.25.0"));
    assert_eq!(read(&locked), pod("1.25.0"));
    assert!(leftovers(&root).is_empty(), "{:?}", names(&root));
}

// ---------------------------------------------------------------------------
// 8. Concurrency and ownership

/// Two runs with different results on one tree, started together, many
/// times: the tree always holds one run's result, never a mix.
fn concurrent_runs_on_one_tree_do_not_mix() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let files = big_tree(&root, 1500, "1.25.0");
    for round in 0..6 {
        // Each run's stderr is drained on its own thread: the run that goes
        // second moves every tag back (1,500 downgrade warnings), more than
        // a pipe holds, and must not block while the other waits.
        let runs = ["1.27.1", "1.28.0"].map(|tag| {
            let child = update(&root, tag).stderr(Stdio::piped()).spawn().unwrap();
            std::thread::spawn(move || child.wait_with_output().unwrap())
        });
        for run in runs {
            let out = run.join().unwrap();
            assert!(out.status.success(), "round {round}: {}", stderr(&out));
        }
        let a_count = files.iter().filter(|f| read(f) == pod("1.27.1")).count();
        let b_count = files.iter().filter(|f| read(f) == pod("1.28.0")).count();
        assert!(
            a_count == files.len() || b_count == files.len(),
            "round {round}: {a_count} files from one run and {b_count} from the other"
        );
        assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
        reset(&files, "1.25.0");
    }
}

/// Run as root, a file owned by another user keeps its owner and group.
fn owner_and_group_are_kept() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "a.yaml", pod("1.25.0"));
    std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
    let out = output(&mut update(dir.path(), "1.27.1"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let m = fs_err::metadata(&f).unwrap();
    assert_eq!(read(&f), pod("1.27.1"));
    assert_eq!((m.uid(), m.gid()), (65534, 65534));
}

fn duplicate_keys_are_reported_with_both_positions() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.yaml",
        "kind: Pod\nspec:\n  image: nginx:1.25.0 # {\"$imagepolicy\": \"ns:p\"}\n  image: nginx:1.0.0\n",
    );
    let out = output(&mut update(dir.path(), "1.27.1"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "a.yaml:4:3: warning: duplicate key \"image\" in this mapping (first at line 3, column 3)"
        ),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------
// 4. Closed stdout

fn closed_stdout_is_an_error_for_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "a.yaml", pod("1.25.0"));
    for (args, what) in [
        (vec!["--diff"], "the diff"),
        (vec!["--report", "-"], "--report"),
        (vec!["--report", "-", "--dry-run"], "--report"),
    ] {
        fs_err::write(&f, pod("1.25.0")).unwrap();
        let out = output_closed(update(dir.path(), "1.27.1").args(&args));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("cannot write {what} to stdout")),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // The KRM function.
    let list = resource_list("");
    let input = write(dir.path(), "list.yaml", &list);
    let out = output_closed(
        bin()
            .arg("fn")
            .stdin(fs_err::File::open(&input).unwrap().into_parts().0),
    );
    assert_eq!(out.status.code(), Some(1), "fn: {}", stderr(&out));
    // The reflector on the command line.
    let tags = write(dir.path(), "tags.txt", "1.0.0\n1.2.0\n");
    let out = output_closed(
        bin()
            .args(["policy", "app", "--semver", "^1", "--tags-file"])
            .arg(&tags),
    );
    assert_eq!(out.status.code(), Some(1), "policy: {}", stderr(&out));
}

/// `--diff`, `--report -` and `--emit-policies -` reach stdout before any
/// staged file is renamed into place: a closed pipe or a full disk there
/// fails the run with every file as it was, and no temporary file left.
fn stdout_outputs_come_before_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..40)
        .map(|i| write(dir.path(), &format!("app-{i:02}.yaml"), pod("1.25.0")))
        .collect();
    let unchanged = |what: &str| {
        for f in &files {
            assert_eq!(
                fs_err::read_to_string(f).unwrap(),
                pod("1.25.0"),
                "{what}: {} was written",
                f.display()
            );
        }
        let leftovers: Vec<_> = fs_err::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".image-update"))
            .collect();
        assert!(leftovers.is_empty(), "{what}: left {leftovers:?}");
    };
    for (args, what) in [
        (vec!["--diff"], "the diff"),
        (vec!["--report", "-"], "--report"),
    ] {
        let out = output_closed(update(dir.path(), "1.27.1").args(&args));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("nothing was written")
                && stderr(&out).contains(&format!("cannot write {what} to stdout")),
            "{args:?}: {}",
            stderr(&out)
        );
        unchanged(&format!("{args:?} into a closed pipe"));
        let full = fs_err::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = wait_within(
            update(dir.path(), "1.27.1")
                .args(&args)
                .stdout(Stdio::from(full.into_parts().0)),
            Duration::from_secs(120),
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        unchanged(&format!("{args:?} into /dev/full"));
    }
    // With a pipe that reads, the same run writes every file.
    let out = output_within(
        update(dir.path(), "1.27.1").arg("--diff"),
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("+image: nginx:1.27.1"));
    for f in &files {
        assert_eq!(fs_err::read_to_string(f).unwrap(), pod("1.27.1"));
    }
}

fn closed_stdout_is_an_error_for_emitted_policies() {
    use image_update_testkit::registry::{Auth, ImageSpec, Registry};
    let reg = Registry::start(Auth::Anonymous);
    let spec = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    for tag in ["1.0.0", "1.1.0"] {
        reg.push_image("team/app", tag, &spec);
    }
    let host = reg.authority();
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "flux/images.yaml",
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: ns}}\nspec:\n  image: {host}/team/app\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: ns}}\nspec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n"
        ),
    );
    let out = output_closed(
        bin()
            .env("HOME", home.path())
            .arg("update")
            .arg(dir.path())
            .args(["--fetch", "--dry-run", "--emit-policies", "-"]),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot write --emit-policies to stdout"),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------
// 5. Unbounded input

fn devices_and_fifos_in_the_tree_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(dir.path(), "ok.yaml", pod("1.25.0"));
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.yaml")).unwrap();
    let fifo = dir.path().join("fifo.yaml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = output_within(
        bin()
            .arg("update")
            .arg(dir.path())
            .args(["--policy", "ns:p=nginx:1.27.1", "-v"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(read(&ok), pod("1.27.1"));
    let err = stderr(&out);
    assert!(
        err.contains("fifo.yaml: skipped: not a regular file"),
        "{err}"
    );
    assert!(
        err.contains("zero.yaml: skipped: symlink to something that is not a regular file"),
        "{err}"
    );
}

fn inputs_from_dev_zero_end_in_an_error_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.yaml", pod("1.25.0"));
    for args in [
        vec![
            "update",
            dir.path().to_str().unwrap(),
            "--policies",
            "/dev/zero",
        ],
        vec![
            "update",
            dir.path().to_str().unwrap(),
            "--automation",
            "/dev/zero",
        ],
        vec![
            "policy",
            "app",
            "--semver",
            "^1",
            "--tags-file",
            "/dev/zero",
        ],
    ] {
        let out = output_within(bin().args(&args), Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("/dev/zero is larger than 64 MiB")
                && stderr(&out).contains("--max-file-size"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A tree file over a lower limit.
    let out = output(update(dir.path(), "1.27.1").args(["--max-file-size", "16"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a.yaml is larger than 16 bytes"),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(&dir.path().join("a.yaml")), pod("1.25.0"));
}

/// Explicit FIFOs and stdin still work, within the limit.
fn explicit_fifos_and_stdin_are_read_with_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "tree/a.yaml", pod("1.25.0"));
    let policies = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p, namespace: ns}\nstatus: {latestRef: {name: nginx, tag: 1.27.1}}\n";
    let fifo = dir.path().join("policies.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs_err::write(fifo, policies).unwrap())
    };
    let out = output_within(
        bin()
            .arg("update")
            .arg(dir.path().join("tree"))
            .arg("--policies")
            .arg(&fifo),
        Duration::from_secs(30),
    );
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(read(&f), pod("1.27.1"));

    // stdin over the limit.
    let mut child = bin()
        .arg("update")
        .arg(dir.path().join("tree"))
        .args(["--policies", "-", "--max-file-size", "1KiB"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&vec![b'#'; 64 * 1024]);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stdin is larger than 1 KiB"),
        "{}",
        stderr(&out)
    );
}

fn run_fn(input: &[u8], env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "in.yaml", input);
    let mut c = bin();
    c.arg("fn")
        .stdin(fs_err::File::open(&file).unwrap().into_parts().0);
    for (k, v) in env {
        c.env(k, v);
    }
    output(&mut c)
}

fn a_resource_list_over_the_limit_is_answered_with_an_error() {
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n# {}\n",
        "x".repeat(4096)
    );
    let out = run_fn(list.as_bytes(), &[("IMAGE_UPDATE_MAX_INPUT_SIZE", "1KiB")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("kind: ResourceList"), "{text}");
    assert!(
        text.contains("stdin is larger than 1 KiB") && text.contains("IMAGE_UPDATE_MAX_INPUT_SIZE"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------
// 6. Encodings

fn utf16_files_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let text = pod("1.25.0");
    let le: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let be: Vec<u8> = [0xFE, 0xFF]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
        .collect();
    write(dir.path(), "le.yaml", &le);
    write(dir.path(), "be.yaml", &be);
    let out = output(&mut update(dir.path(), "1.27.1"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("le.yaml:1:1: warning: file is UTF-16LE text"),
        "{err}"
    );
    assert!(
        err.contains("be.yaml:1:1: warning: file is UTF-16BE text"),
        "{err}"
    );
    assert_eq!(fs_err::read(dir.path().join("le.yaml")).unwrap(), le);
}

fn a_resource_list_with_a_byte_order_mark_gives_valid_output() {
    let list = resource_list("\u{FEFF}");
    let out = run_fn(list.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let body = text
        .strip_prefix('\u{FEFF}')
        .expect("the BOM is kept first");
    assert!(body.contains("\nresults:\n"), "{text}");
    let value: serde_json::Value = serde_saphyr::from_str(body).unwrap();
    assert_eq!(value["results"][0]["severity"], "info", "{text}");
    assert_eq!(value["items"][0]["image"], "nginx:1.27.1", "{text}");
}

// ---------------------------------------------------------------------------
// 7. KRM path scope

fn krm_items_whose_path_escapes_the_limit_are_refused() {
    let item = |path: &str| {
        format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: {}\n    annotations: {{internal.config.kubernetes.io/path: '{path}'}}\n  image: nginx:1.25.0 # {{\"$imagepolicy\": \"ns:p\"}}\n",
            path.replace(['/', '.'], "-").trim_matches('-')
        )
    };
    for bad in ["../apps/x.yaml", "/apps/x.yaml"] {
        let list = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}{}functionConfig:\n  apiVersion: fn.image-update.dev/v1alpha1\n  kind: ImageUpdate\n  metadata: {{name: u}}\n  policies: {{'ns:p': 'nginx:1.27.1'}}\n  path: apps\n",
            item("apps/ok.yaml"),
            item(bad)
        );
        let out = run_fn(list.as_bytes(), &[]);
        assert_eq!(out.status.code(), Some(1), "{bad}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            !text.contains("nginx:1.27.1 #"),
            "{bad}: nothing is edited: {text}"
        );
        let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        let messages: Vec<&str> = value["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["severity"] == "error")
            .map(|r| r["message"].as_str().unwrap())
            .collect();
        assert!(
            messages
                .iter()
                .any(|m| m.contains(bad) && m.contains("items[1]")),
            "{bad}: {messages:?}"
        );
    }
}

fn main() {
    let root = probe_root();
    let setpriv_probe = || probe_root();
    testkit::run(vec![
        trial(
            "symlink_given_as_path_stays_a_link",
            &[],
            a_symlink_given_as_path_stays_a_link,
        ),
        trial(
            "symlink_given_as_path_to_outside_its_directory_is_not_written",
            &[],
            a_symlink_given_as_path_to_outside_its_directory_is_not_written,
        ),
        trial_if(
            "immutable_file_rolls_back_every_rename",
            &["chattr"],
            probe_chattr(),
            an_immutable_file_rolls_back_every_rename,
        ),
        trial_if(
            "file_a_sticky_directory_protects_changes_nothing",
            &["setpriv"],
            setpriv_probe(),
            a_file_a_sticky_directory_protects_changes_nothing,
        ),
        trial(
            "sigkill_during_writes_leaves_no_partial_file_and_the_next_run_cleans_up",
            &["kill"],
            sigkill_during_writes_leaves_no_partial_file_and_the_next_run_cleans_up,
        ),
        trial(
            "sigkill_during_the_renames_is_undone_by_the_next_run",
            &["kill"],
            sigkill_during_the_renames_is_undone_by_the_next_run,
        ),
        trial(
            "sigterm_during_writes_cleans_up_its_own_files",
            &["kill"],
            sigterm_during_writes_cleans_up_its_own_files,
        ),
        trial_if(
            "full_filesystem_changes_nothing",
            &["mount", "umount"],
            probe_mount(),
            a_full_filesystem_changes_nothing,
        ),
        trial_if(
            "read_only_directory_changes_nothing",
            &["setpriv"],
            setpriv_probe(),
            a_read_only_directory_changes_nothing,
        ),
        trial(
            "concurrent_runs_on_one_tree_do_not_mix",
            &[],
            concurrent_runs_on_one_tree_do_not_mix,
        ),
        trial_if(
            "owner_and_group_are_kept",
            &[],
            root.clone(),
            owner_and_group_are_kept,
        ),
        trial(
            "duplicate_keys_are_reported_with_both_positions",
            &[],
            duplicate_keys_are_reported_with_both_positions,
        ),
        trial(
            "closed_stdout_is_an_error_for_every_output",
            &[],
            closed_stdout_is_an_error_for_every_output,
        ),
        trial(
            "stdout_outputs_come_before_the_commit",
            &[],
            stdout_outputs_come_before_the_commit,
        ),
        trial(
            "closed_stdout_is_an_error_for_emitted_policies",
            &["docker-registry"],
            closed_stdout_is_an_error_for_emitted_policies,
        ),
        trial(
            "devices_and_fifos_in_the_tree_are_skipped",
            &["mkfifo"],
            devices_and_fifos_in_the_tree_are_skipped,
        ),
        trial(
            "inputs_from_dev_zero_end_in_an_error_naming_the_limit",
            &[],
            inputs_from_dev_zero_end_in_an_error_naming_the_limit,
        ),
        trial(
            "explicit_fifos_and_stdin_are_read_with_the_cap",
            &["mkfifo"],
            explicit_fifos_and_stdin_are_read_with_the_cap,
        ),
        trial(
            "resource_list_over_the_limit_is_answered_with_an_error",
            &[],
            a_resource_list_over_the_limit_is_answered_with_an_error,
        ),
        trial("utf16_files_are_reported", &[], utf16_files_are_reported),
        trial(
            "resource_list_with_a_byte_order_mark_gives_valid_output",
            &[],
            a_resource_list_with_a_byte_order_mark_gives_valid_output,
        ),
        trial(
            "krm_items_whose_path_escapes_the_limit_are_refused",
            &[],
            krm_items_whose_path_escapes_the_limit_are_refused,
        ),
    ])
}
