//! Differential suite for Argo CD Image Updater's templates: every
//! `testdata/templates/argocd/cases/{commit,branch}-*.tmpl` over every `data/*.json`, compared byte
//! for byte with what real Go `text/template` rendered over Argo's own types
//! (`testdata/templates/argocd/expected`, written by `scripts/template-oracle.sh`, which also checks
//! them against Go when Go is installed; the Flux suite's `oracle` trial runs it).

// Test support code: a broken fixture directory should stop the run loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use image_update_template::argocd::{
    AppChange, BranchData, BranchError, BranchImage, CommitData, parse_commit_template,
    render_branch, render_commit_message,
};
use libtest_mimic::{Arguments, Failed, Trial};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates/argocd")
}

fn names(sub: &str, ext: &str) -> Vec<String> {
    let mut out: Vec<String> = fs_err::read_dir(dir().join(sub))
        .expect("read dir")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_str()?.to_owned();
            name.strip_suffix(ext).map(str::to_owned)
        })
        .collect();
    out.sort();
    out
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Change {
    image: String,
    alias: String,
    old_tag: String,
    new_tag: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    app_name: String,
    app_namespace: String,
    target_key: String,
    changes: Vec<Change>,
}

fn expected(stem: &str, ext: &str) -> Option<String> {
    fs_err::read_to_string(dir().join(format!("expected/{stem}.{ext}"))).ok()
}

fn check(case: &str, data_name: &str) -> Result<(), Failed> {
    let text = fs_err::read_to_string(dir().join(format!("cases/{case}.tmpl")))?;
    let data: Data = serde_json::from_str(&fs_err::read_to_string(
        dir().join(format!("data/{data_name}.json")),
    )?)?;
    let stem = format!("{case}__{data_name}");
    let (out, err) = if case.starts_with("commit-") {
        match parse_commit_template(Some(&text)) {
            Err(e) => (None, Some(e.message)),
            Ok(t) => {
                let m = render_commit_message(
                    &t,
                    &CommitData {
                        app_name: data.app_name.clone(),
                        changes: data
                            .changes
                            .iter()
                            .map(|c| AppChange {
                                image: c.image.clone(),
                                old_tag: c.old_tag.clone(),
                                new_tag: c.new_tag.clone(),
                                labels: c.labels.clone(),
                            })
                            .collect(),
                    },
                );
                (Some(m.message), m.error.map(|e| e.message))
            }
        }
    } else {
        let b = BranchData {
            app_namespace: data.app_namespace.clone(),
            app_name: data.app_name.clone(),
            target_key: data.target_key.clone(),
            images: data
                .changes
                .iter()
                .map(|c| BranchImage {
                    name: c.image.clone(),
                    alias: c.alias.clone(),
                    old_tag: c.old_tag.clone(),
                    new_tag: c.new_tag.clone(),
                })
                .collect(),
        };
        match render_branch(&text, &b) {
            Ok(name) => (Some(name), None),
            Err(BranchError::Empty) => (Some(String::new()), None),
            Err(BranchError::Parse(e)) => (None, Some(e.message)),
            Err(BranchError::Execute(e)) => (None, Some(e.message)),
        }
    };
    let want = (expected(&stem, "out"), expected(&stem, "err"));
    if want.0.is_none() && want.1.is_none() {
        return Err(format!(
            "no expectation for {stem}: run scripts/template-oracle.sh with UPDATE_EXPECT=1"
        )
        .into());
    }
    if (out.clone(), err.clone()) != want {
        return Err(format!(
            "{stem} differs from Go\n--- expected ---\n{want:?}\n--- got ---\n{:?}",
            (out, err)
        )
        .into());
    }
    Ok(())
}

/// Every expectation belongs to a case and a data file (a renamed case leaves none behind).
fn no_stray_expectations() -> Result<(), Failed> {
    let cases = names("cases", ".tmpl");
    let datas = names("data", ".json");
    for name in fs_err::read_dir(dir().join("expected"))? {
        let name = name?.file_name().to_string_lossy().into_owned();
        let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
        let known = stem
            .split_once("__")
            .is_some_and(|(c, d)| cases.iter().any(|x| x == c) && datas.iter().any(|x| x == d));
        if !known {
            return Err(
                format!("stray expectation testdata/templates/argocd/expected/{name}").into(),
            );
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = vec![Trial::test("no-stray-expectations", no_stray_expectations)];
    for case in names("cases", ".tmpl") {
        for data in names("data", ".json") {
            let (c, d) = (case.clone(), data.clone());
            trials.push(Trial::test(format!("{case}__{data}"), move || {
                check(&c, &d)
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
