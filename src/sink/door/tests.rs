#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::os::unix::fs::symlink;
use std::path::Path;

use super::{Door, Refusal};
use crate::input::SizeLimit;

fn tree() -> (tempfile::TempDir, Door) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    fs_err::create_dir_all(root.join("apps/web")).unwrap();
    fs_err::create_dir_all(dir.path().join("outside")).unwrap();
    fs_err::write(root.join("apps/web/values.yaml"), "a: 1\n").unwrap();
    fs_err::write(dir.path().join("outside/x.yaml"), "secret: 1\n").unwrap();
    let door = Door::new(&root).unwrap();
    (dir, door)
}

fn refusal(door: &Door, rel: &str) -> Refusal {
    match door.resolve(rel) {
        Ok(r) => panic!("{rel} was let through: {r:?}"),
        Err(e) => e,
    }
}

#[test]
fn plain_files_and_new_ones_are_let_through_where_named() {
    let (_dir, door) = tree();
    let r = door.resolve("apps/web/values.yaml").unwrap();
    assert!(r.exists);
    assert_eq!(r.path, door.root().join("apps/web/values.yaml"));
    let r = door.resolve("apps/web/.argocd-source-web.yaml").unwrap();
    assert!(!r.exists);
    let r = door.resolve("apps/new/deeper/values.yaml").unwrap();
    assert!(!r.exists);
    assert_eq!(r.path, door.root().join("apps/new/deeper/values.yaml"));
}

#[test]
fn names_that_are_not_plain_are_refused() {
    let (_dir, door) = tree();
    for rel in [
        "../outside/x.yaml",
        "apps/../../outside/x.yaml",
        "/etc/passwd",
        "apps//x.yaml",
        "./apps/x.yaml",
        "apps/x.yaml/",
        "",
        "apps/\0.yaml",
    ] {
        assert!(
            matches!(refusal(&door, rel), Refusal::Name { .. }),
            "{rel:?}"
        );
    }
    // Control characters in a name to create.
    for rel in [
        "apps/web/x\n::error::y.yaml",
        "apps/\u{1b}[2J/x.yaml",
        "a\u{202e}x.yaml",
    ] {
        assert!(
            matches!(refusal(&door, rel), Refusal::Name { .. }),
            "{rel:?}"
        );
    }
}

#[test]
fn symlinks_out_of_the_tree_are_refused_and_those_inside_followed() {
    let (dir, door) = tree();
    let root = door.root().to_path_buf();
    symlink(
        "../../../outside/x.yaml",
        root.join("apps/web/.argocd-source-web.yaml"),
    )
    .unwrap();
    assert!(matches!(
        refusal(&door, "apps/web/.argocd-source-web.yaml"),
        Refusal::Outside { .. }
    ));
    // A directory on the way.
    symlink(dir.path().join("outside"), root.join("apps/out")).unwrap();
    assert!(matches!(
        refusal(&door, "apps/out/x.yaml"),
        Refusal::Outside { .. }
    ));
    assert!(matches!(
        refusal(&door, "apps/out/new.yaml"),
        Refusal::Outside { .. }
    ));
    // Inside: the target is written, by its real path below the root as given.
    symlink("values.yaml", root.join("apps/web/alias.yaml")).unwrap();
    let r = door.resolve("apps/web/alias.yaml").unwrap();
    assert_eq!(r.path, root.join("apps/web/values.yaml"));
    symlink("web", root.join("apps/same")).unwrap();
    let r = door.resolve("apps/same/values.yaml").unwrap();
    assert_eq!(r.path, root.join("apps/web/values.yaml"));
    // Asked again, from the cache of checked directories.
    assert!(matches!(
        refusal(&door, "apps/out/x.yaml"),
        Refusal::Outside { .. }
    ));
    assert_eq!(
        door.resolve("apps/same/values.yaml").unwrap().path,
        root.join("apps/web/values.yaml")
    );
    // A dangling link would create a file wherever it points.
    symlink("/nonexistent/x.yaml", root.join("apps/web/dangling.yaml")).unwrap();
    assert!(matches!(
        refusal(&door, "apps/web/dangling.yaml"),
        Refusal::Dangling { .. }
    ));
}

#[test]
fn fifos_devices_and_directories_are_refused_without_opening_them() {
    let (_dir, door) = tree();
    let root = door.root().to_path_buf();
    let fifo = root.join("apps/web/.argocd-source-web.yaml");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(matches!(
        refusal(&door, "apps/web/.argocd-source-web.yaml"),
        Refusal::NotRegular { .. }
    ));
    // Reading it would block for ever if it were opened: it is refused at once.
    assert!(
        door.read("apps/web/.argocd-source-web.yaml", SizeLimit(1024))
            .is_err()
    );
    symlink("/dev/zero", root.join("apps/web/zero.yaml")).unwrap();
    assert!(matches!(
        refusal(&door, "apps/web/zero.yaml"),
        Refusal::Outside { .. }
    ));
    assert!(matches!(
        refusal(&door, "apps/web"),
        Refusal::NotRegular { .. }
    ));
    assert!(matches!(
        refusal(&door, "apps/web/values.yaml/x.yaml"),
        Refusal::NotDirectory { .. }
    ));
}

#[test]
fn reads_are_bounded() {
    let (_dir, door) = tree();
    assert_eq!(
        door.read("apps/web/values.yaml", SizeLimit(1024))
            .unwrap()
            .as_deref(),
        Some("a: 1\n")
    );
    assert_eq!(
        door.read("apps/web/none.yaml", SizeLimit(1024)).unwrap(),
        None
    );
    assert!(matches!(
        door.read("apps/web/values.yaml", SizeLimit(3)),
        Err(Refusal::Read(crate::input::ReadError::TooLarge { .. }))
    ));
}

#[test]
fn relative_paths_are_found_below_the_root_as_given() {
    let (dir, door) = tree();
    let root = door.root().to_path_buf();
    assert_eq!(
        door.rel_of(&root.join("apps/x.yaml")).as_deref(),
        Some("apps/x.yaml")
    );
    assert_eq!(door.rel_of(dir.path()), None);
    assert_eq!(door.rel_of(&root.join("../x.yaml")), None);
    let here = Door::new(Path::new(".")).unwrap();
    assert_eq!(here.rel_of(Path::new("a.yaml")).as_deref(), Some("a.yaml"));
    assert_eq!(
        here.rel_of(Path::new("./a/b.yaml")).as_deref(),
        Some("a/b.yaml")
    );
    // A root still to create (an output directory).
    let later = Door::new(&dir.path().join("out/deeper")).unwrap();
    let r = later.resolve("apps/x.yaml").unwrap();
    assert!(!r.exists);
    assert_eq!(r.path, dir.path().join("out/deeper/apps/x.yaml"));
}
