//! Differential suite: every template of `testdata/templates/cases` rendered over every report of
//! `testdata/templates/reports`, compared byte for byte with what real Go `text/template` + Sprig
//! rendered (`testdata/templates/expected`, written by `scripts/template-oracle.sh`), or, for
//! constructs newer than the oracle's Go 1.19, with expectations written from Go's documented
//! semantics (`testdata/templates/expected-newer-go`).
//!
//! One more trial runs the oracle itself (`scripts/template-oracle.sh`) when Go and Sprig are
//! installed, so a stale expectation cannot hide; it is ignored, with the reason, when they are not,
//! and fails when `CI` is set.

// Test support code: a broken fixture directory should stop the run loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use image_update_template::{TemplateData, render_commit_message};
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
    let mut expected = None;
    for dir in ["expected", "expected-newer-go"] {
        for ext in ["out", "err"] {
            let p = base.join(format!("{dir}/{stem}.{ext}"));
            if p.exists() {
                expected = Some((ext, fs_err::read(&p)?, p));
            }
        }
    }
    let Some((ext, bytes, path)) = expected else {
        return Err(format!(
            "no expectation for {stem}: run scripts/template-oracle.sh with UPDATE_EXPECT=1"
        )
        .into());
    };
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

fn oracle_available() -> Result<(), String> {
    let go = Command::new("go").arg("version").output();
    if !go.is_ok_and(|o| o.status.success()) {
        return Err("`go` not found (apt-get install golang-go)".to_owned());
    }
    if !Path::new("/usr/share/gocode/src/github.com/Masterminds/sprig").is_dir() {
        return Err(
            "Sprig sources not found (apt-get install golang-github-masterminds-sprig-dev)"
                .to_owned(),
        );
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
    match oracle_available() {
        Ok(()) => trials.push(Trial::test("oracle_agrees_with_expectations", || {
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
        })),
        Err(reason) if std::env::var_os("CI").is_some() => {
            trials.push(Trial::test("oracle_agrees_with_expectations", move || {
                Err(format!("CI is set and {reason}").into())
            }));
        }
        Err(reason) => {
            eprintln!("oracle_agrees_with_expectations ignored: {reason}");
            trials.push(
                Trial::test(
                    format!("oracle_agrees_with_expectations (ignored: {reason})"),
                    || Ok(()),
                )
                .with_ignored_flag(true),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
