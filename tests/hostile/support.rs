//! What every hostile trial needs: the binary, bounded runs, trees on disk.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A trial running `test`, which fails by panicking.
pub fn trial(name: &str, test: fn()) -> libtest_mimic::Trial {
    libtest_mimic::Trial::test(name, move || {
        test();
        Ok(())
    })
}

/// The binary under test.
pub fn bin_path() -> PathBuf {
    std::env::var_os("IMAGE_UPDATE_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_image-update")),
        PathBuf::from,
    )
}

/// The binary with a clean environment for limits and test hooks.
pub fn bin() -> Command {
    let mut c = Command::new(bin_path());
    c.env_remove("IMAGE_UPDATE_MAX_FILE_SIZE")
        .env_remove("IMAGE_UPDATE_MAX_INPUT_SIZE")
        .env_remove("IMAGE_UPDATE_TEST_PAUSE_RENAMES")
        .env_remove("GITHUB_ACTIONS")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    c
}

/// The most address space a bounded run may map: the documented limits keep every attack far
/// below it (a 4 MiB value, a 64 MiB render budget, 64 MiB files), while the attacks asked for
/// gigabytes.
pub const MEMORY: u64 = 1 << 30;

/// Run `c` (stdout and stderr captured) under `prlimit --as=MEMORY`, failing if it takes longer
/// than `limit` (then it is killed) or dies of a signal (an abort on a failed allocation).
pub fn bounded(c: &Command, limit: Duration) -> Output {
    let mut wrapped = Command::new("prlimit");
    wrapped
        .arg(format!("--as={MEMORY}"))
        .arg("--")
        .arg(c.get_program())
        .args(c.get_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = c.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    let out = within(&mut wrapped, limit);
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&out.status) {
        panic!(
            "killed by signal {signal} (memory limit {MEMORY} bytes):\n{}",
            stderr(&out)
        );
    }
    out
}

/// [`bounded`] with the file `input` on stdin.
pub fn bounded_with_stdin(c: &Command, limit: Duration, input: &Path) -> Output {
    let mut wrapped = Command::new("prlimit");
    wrapped
        .arg(format!("--as={MEMORY}"))
        .arg("--")
        .arg(c.get_program())
        .args(c.get_args())
        .stdin(std::process::Stdio::from(
            fs_err::File::open(input).unwrap().into_file(),
        ));
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    let out = within(&mut wrapped, limit);
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&out.status) {
        panic!(
            "killed by signal {signal} (memory limit {MEMORY} bytes):\n{}",
            stderr(&out)
        );
    }
    out
}

/// Run `c` with its output captured, killing it (and failing) after `limit`.
pub fn within(c: &mut Command, limit: Duration) -> Output {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
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

/// stderr, cut short for failure messages.
pub fn stderr(o: &Output) -> String {
    let text = String::from_utf8_lossy(&o.stderr);
    match text.char_indices().nth(4000) {
        Some((i, _)) => format!("{}... (cut)", &text[..i]),
        None => text.into_owned(),
    }
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Write `text` at `rel` under `root`, creating directories.
pub fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let p = root.join(rel);
    fs_err::create_dir_all(p.parent().unwrap()).unwrap();
    fs_err::write(&p, text).unwrap();
    p
}

/// Every file under `dir` with its bytes (symlinks as `-> target`), for "nothing changed"
/// checks.
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let p = e.path();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(p);
            } else if t.is_symlink() {
                let target = fs_err::read_link(&p).unwrap();
                out.insert(p, format!("-> {}", target.display()).into_bytes());
            } else if t.is_file() {
                out.insert(p.clone(), fs_err::read(&p).unwrap());
            } else {
                out.insert(p, b"(special)".to_vec());
            }
        }
    }
    out
}
