//! Hints at a misspelt policy name ("did you mean ...?") compare names by edit distance, whose
//! cost grows with the product of their lengths: a repository whose markers name thousands of
//! long, distinct policies that do not exist, against thousands of supplied policies of the same
//! length, must not make the run compare every pair. The work spent on hints is bounded
//! (`diagnostic::HintBudget`); past it, the warnings come without hints.

use std::fmt::Write as _;
use std::time::Duration;

use libtest_mimic::Trial;

use super::support::{bin, bounded, stderr, write};

const LIMIT: Duration = Duration::from_secs(60);

pub fn trials() -> Vec<Trial> {
    vec![super::support::trial(
        "seams::hints_for_unknown_policies_stay_bounded",
        hints_stay_bounded,
    )]
}

/// A name of `len` characters ending in `i`: every one is within the lengths a hint compares.
fn name(prefix: char, i: usize, len: usize) -> String {
    let tail = i.to_string();
    format!("{}{tail}", prefix.to_string().repeat(len - tail.len()))
}

fn hints_stay_bounded() {
    const MARKERS: usize = 20_000;
    const POLICIES: usize = 4_000;
    const LEN: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let mut markers = String::new();
    for i in 0..MARKERS {
        let _ = writeln!(
            markers,
            "k{i}: img:1 # {{\"$imagepolicy\": \"ns:{}\"}}",
            name('a', i, LEN)
        );
    }
    write(&tree, "apps/many.yaml", markers);
    let mut policies = String::new();
    for i in 0..POLICIES {
        let _ = write!(
            policies,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {}, namespace: ns}}\nstatus: {{latestRef: {{name: img, tag: '2'}}}}\n",
            name('b', i, LEN)
        );
    }
    let file = write(dir.path(), "policies.yaml", policies);
    let mut c = bin();
    c.arg("update")
        .arg(&tree)
        .arg("--dry-run")
        .arg("--policies")
        .arg(&file)
        .args(["--policy", &format!("ns:{}=img:3", name('a', MARKERS, LEN))]);
    let out = bounded(&c, LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        text.matches("so this marker is left alone").count(),
        MARKERS,
        "{}",
        stderr(&out)
    );
    assert!(
        text.contains("is used by no marker or Argo CD Application"),
        "{}",
        stderr(&out)
    );
}
