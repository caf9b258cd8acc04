use std::collections::BTreeSet;

use super::*;

fn names(dir: &Path) -> BTreeSet<String> {
    fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// `n` files `f00.yaml`... holding "old N".
fn files(dir: &Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let p = dir.join(format!("f{i:02}.yaml"));
            fs_err::write(&p, format!("old {i}")).unwrap();
            p
        })
        .collect()
}

fn new_contents(paths: &[PathBuf]) -> Vec<String> {
    (0..paths.len()).map(|i| format!("new {i}")).collect()
}

fn writes<'a>(paths: &'a [PathBuf], texts: &'a [String]) -> Vec<FileWrite<'a>> {
    paths
        .iter()
        .zip(texts)
        .map(|(p, t)| FileWrite {
            target: p,
            bytes: t.as_bytes(),
            permissions_from: None,
            door: None,
        })
        .collect()
}

fn contents(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| fs_err::read_to_string(p).unwrap_or_else(|_| "<missing>".to_owned()))
        .collect()
}

fn olds(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("old {i}")).collect()
}

/// Fails (or "crashes") at one step for one file.
struct FailAt(Step, usize);

impl Faults for FailAt {
    fn at(&self, step: Step, n: usize) -> std::io::Result<()> {
        if (step, n) == (self.0, self.1) {
            Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "injected",
            ))
        } else {
            Ok(())
        }
    }
}

#[cfg(unix)]
#[test]
fn keeps_permissions_and_leaves_no_temporary_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.yaml");
    fs_err::write(&file, "old").unwrap();
    fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let n = write_all(
        &[FileWrite {
            target: &file,
            bytes: b"new",
            permissions_from: None,
            door: None,
        }],
        None,
    )
    .unwrap();
    assert_eq!(n, 1);
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "new");
    assert_eq!(
        fs_err::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o640
    );
    assert_eq!(names(dir.path()), BTreeSet::from(["a.yaml".to_owned()]));
}

#[test]
fn a_failure_while_staging_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let paths = files(dir.path(), 12);
    let texts = new_contents(&paths);
    let before = names(dir.path());
    let err = commit(
        &writes(&paths, &texts),
        None,
        &FailAt(Step::Stage, 7),
        &mut || Ok(()),
    )
    .unwrap_err();
    assert!(matches!(err, CommitError::Staging { .. }), "{err}");
    assert!(err.to_string().contains("f07.yaml"), "{err}");
    assert_eq!(contents(&paths), olds(12));
    assert_eq!(
        names(dir.path()),
        before,
        "no temporary file or backup is left"
    );
}

#[test]
fn a_failed_rename_puts_back_every_replaced_file_and_removes_created_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = files(dir.path(), 30);
    paths.push(dir.path().join("sub/created.yaml"));
    let texts = new_contents(&paths);
    let before = names(dir.path());
    let err = commit(
        &writes(&paths, &texts),
        None,
        &FailAt(Step::Rename, 20),
        &mut || Ok(()),
    )
    .unwrap_err();
    assert!(matches!(err, CommitError::RolledBack { .. }), "{err}");
    assert!(err.to_string().contains("f20.yaml"), "{err}");
    assert!(err.to_string().starts_with("nothing was written"), "{err}");
    assert_eq!(contents(&paths[..30]), olds(30));
    assert!(!paths[30].exists(), "a file the commit created is removed");
    let mut after = names(dir.path());
    after.remove("sub");
    assert_eq!(after, before, "no temporary file or backup is left");
}

#[test]
fn a_killed_commit_is_undone_by_the_next_run_and_only_its_files_are_touched() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = files(dir.path(), 40);
    paths.push(dir.path().join("created.yaml"));
    let texts = new_contents(&paths);
    // A file with the prefix that no journal names is not ours to remove.
    let foreign = dir.path().join(".image-update.1-deadbeef.0.tmp");
    fs_err::write(&foreign, "someone else's").unwrap();
    // "Killed" before the rename of file 25: some files are new, some old.
    commit(
        &writes(&paths, &texts),
        None,
        &FailAt(Step::Crash, 25),
        &mut || Ok(()),
    )
    .unwrap();
    let mixed = contents(&paths);
    assert!(mixed.iter().any(|c| c.starts_with("new")));
    assert!(mixed.iter().any(|c| c.starts_with("old")));
    assert!(
        names(dir.path()).iter().any(|n| n.ends_with(".journal")),
        "the journal stays"
    );

    let recovered = recover(dir.path());
    assert_eq!(recovered.notes.len(), 1, "{recovered:?}");
    assert!(recovered.problems.is_empty(), "{recovered:?}");
    assert_eq!(contents(&paths[..40]), olds(40));
    let mut expected: BTreeSet<String> = (0..40).map(|i| format!("f{i:02}.yaml")).collect();
    expected.insert(".image-update.1-deadbeef.0.tmp".to_owned());
    assert_eq!(names(dir.path()), expected);
    assert_eq!(
        recover(dir.path()),
        Recovered::default(),
        "nothing is left to do"
    );

    // The next commit works, and still leaves the foreign file alone.
    commit(&writes(&paths, &texts), None, &NoFaults, &mut || Ok(())).unwrap();
    assert_eq!(contents(&paths), texts);
    assert!(foreign.exists());
}

#[test]
fn the_journal_of_a_live_commit_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let paths = files(dir.path(), 2);
    let slots: Vec<Slot> = paths
        .iter()
        .enumerate()
        .map(|(n, p)| Slot::new("7-0badf00d", n, p.clone(), true))
        .collect();
    fs_err::write(&slots[0].tmp, "staged by a live run").unwrap();
    let journal = Journal::create(dir.path(), "7-0badf00d", &slots).unwrap();
    assert_eq!(recover(dir.path()), Recovered::default());
    assert!(slots[0].tmp.exists());
    drop(journal);
    // Its run is gone now: its files go.
    assert_eq!(recover(dir.path()).notes.len(), 1);
    assert!(!slots[0].tmp.exists());
    assert_eq!(contents(&paths), olds(2));
}

#[test]
fn a_journal_killed_before_its_first_line_is_removed_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let paths = files(dir.path(), 2);
    // A run killed between creating its journal and writing to it.
    fs_err::write(dir.path().join(".image-update.31-0badcafe.journal"), "").unwrap();
    // Files of other forms are not this program's journals.
    fs_err::write(dir.path().join(".image-update.notes.journal"), "").unwrap();
    fs_err::write(dir.path().join(".image-update.32-nothex!.journal"), "").unwrap();
    let recovered = recover(dir.path());
    assert_eq!(recovered.notes.len(), 1, "{recovered:?}");
    let mut expected: BTreeSet<String> = ["f00.yaml", "f01.yaml"].map(str::to_owned).into();
    expected.insert(".image-update.notes.journal".to_owned());
    expected.insert(".image-update.32-nothex!.journal".to_owned());
    assert_eq!(names(dir.path()), expected);
    assert_eq!(contents(&paths), olds(2));
}

#[cfg(unix)]
#[test]
fn owner_and_group_are_kept_when_the_process_may() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.yaml");
    fs_err::write(&file, "old").unwrap();
    if fs_err::metadata(&file).unwrap().uid() != 0 {
        // Only root may give a file to another user; nothing to test.
        return;
    }
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    write_all(
        &[FileWrite {
            target: &file,
            bytes: b"new",
            permissions_from: None,
            door: None,
        }],
        None,
    )
    .unwrap();
    let m = fs_err::metadata(&file).unwrap();
    assert_eq!((m.uid(), m.gid()), (65534, 65534));
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "new");
}
