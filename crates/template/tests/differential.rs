//! Differential suite: every template of `testdata/templates/cases` rendered over every report of
//! `testdata/templates/reports`, compared byte for byte with what real Go `text/template` + Sprig
//! rendered (written by `scripts/template-oracle.sh`): Debian's Go 1.19 for
//! `testdata/templates/expected`, and a Go 1.24 for the constructs Go 1.19 lacks (`else with`, range
//! over an integer) in `testdata/templates/expected-newer-go`. Each case has its expectations in
//! exactly one of the two.
//!
//! One more trial runs the oracle itself (`scripts/template-oracle.sh`), so a stale expectation cannot
//! hide; it needs `go`, Debian's Sprig sources and Go 1.24 (`golang-1.24-go`, from Debian trixie;
//! `.ci/run` installs all three), and is ignored, with the reason, without them, or fails when `CI`
//! is set.

// Test support code: a broken fixture directory should stop the run loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use image_update_template::{TemplateData, render_commit_message};
use image_update_testkit::Unmet;
use libtest_mimic::{Arguments, Failed, Trial};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn names(dir: &Path, ext: &str) -> Vec<String> {
    let mut out: Vec<String> = fs_err::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_name()?.to_str()?.to_owned();
            name.strip_suffix(ext).map(str::to_owned)
        })
        .collect();
    out.sort();
    out
}

fn check(case: &str, report: &str) -> Result<(), Failed> {
    let base = root().join("testdata/templates");
    let text = fs_err::read_to_string(base.join(format!("cases/{case}.tmpl")))?;
    let json: serde_json::Value = serde_json::from_str(&fs_err::read_to_string(
        base.join(format!("reports/{report}.json")),
    )?)?;
    let data = TemplateData::from_report_json(&json)?;
    let stem = format!("{case}__{report}");
    let mut found = Vec::new();
    for dir in ["expected", "expected-newer-go"] {
        for ext in ["out", "err"] {
            let p = base.join(format!("{dir}/{stem}.{ext}"));
            if p.exists() {
                found.push((ext, p));
            }
        }
    }
    let (ext, path) = match found.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(format!(
                "no expectation for {stem}: run scripts/template-oracle.sh with UPDATE_EXPECT=1"
            )
            .into());
        }
        more => {
            return Err(format!("{stem} has more than one expectation: {more:?}").into());
        }
    };
    let bytes = fs_err::read(&path)?;
    let want = String::from_utf8_lossy(&bytes).into_owned();
    let got = match render_commit_message(Some(&text), &data) {
        Ok(s) => ("out", s),
        Err(e) => ("err", e.to_string()),
    };
    if got.0 != ext || got.1 != want {
        return Err(format!(
            "{} differs\n--- expected ({ext}) ---\n{want}\n--- got ({}) ---\n{}\n---",
            path.display(),
            got.0,
            got.1
        )
        .into());
    }
    Ok(())
}

fn unused_expectations(cases: &[String], reports: &[String]) -> Result<(), Failed> {
    let base = root().join("testdata/templates");
    let wanted: BTreeSet<String> = cases
        .iter()
        .flat_map(|c| reports.iter().map(move |r| format!("{c}__{r}")))
        .collect();
    let mut stray = Vec::new();
    for dir in ["expected", "expected-newer-go"] {
        for e in fs_err::read_dir(base.join(dir))? {
            let name = e?.file_name().to_string_lossy().into_owned();
            let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
            if !wanted.contains(stem) {
                stray.push(format!("{dir}/{name}"));
            }
        }
    }
    if stray.is_empty() {
        Ok(())
    } else {
        Err(format!("expectations without a case or report: {stray:?}").into())
    }
}

/// The Go that renders `expected-newer-go/` (as `scripts/template-oracle.sh` finds it).
fn newer_go() -> String {
    std::env::var("TEMPLATE_ORACLE_NEWER_GO").unwrap_or_else(|_| "/usr/lib/go-1.24/bin/go".into())
}

fn oracle_available() -> Result<(), Unmet> {
    Unmet::programs(&["go", "bash"])?;
    if !Path::new("/usr/share/gocode/src/github.com/Masterminds/sprig").is_dir() {
        return Err(Unmet::Missing(
            "needs Debian's Sprig sources (apt-get install golang-github-masterminds-sprig-dev)"
                .to_owned(),
        ));
    }
    if image_update_testkit::find_program(&newer_go()).is_none() {
        return Err(Unmet::Missing(format!(
            "needs Go 1.24 at {} (Debian trixie's golang-1.24-go; or set TEMPLATE_ORACLE_NEWER_GO)",
            newer_go()
        )));
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let base = root().join("testdata/templates");
    let cases = names(&base.join("cases"), ".tmpl");
    let reports = names(&base.join("reports"), ".json");
    let mut trials = Vec::new();
    for c in &cases {
        for r in &reports {
            let (c2, r2) = (c.clone(), r.clone());
            trials.push(Trial::test(format!("{c}__{r}"), move || check(&c2, &r2)));
        }
    }
    let (c2, r2) = (cases.clone(), reports.clone());
    trials.push(Trial::test("expectations_are_all_used", move || {
        unused_expectations(&c2, &r2)
    }));
    trials.push(image_update_testkit::gated(
        "oracle_agrees_with_expectations",
        oracle_available,
        |()| {
            let out = Command::new("bash")
                .arg(root().join("scripts/template-oracle.sh"))
                .env_remove("UPDATE_EXPECT")
                .output()?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "scripts/template-oracle.sh failed\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
                .into())
            }
        },
    ));
    libtest_mimic::run(&args, trials).exit();
}
