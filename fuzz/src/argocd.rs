//! Target `argocd`: Argo CD objects (Applications, Argo CD Image Updater's `ImageUpdater`,
//! KubeSphere's `ImageUpdater` of kind `argocd`) through the catalog to the write plan.
//!
//! Input: the files of a tree, each starting with a line `#### PATH` (a text without such a
//! line is one file, `apps/input.yaml`); a PATH that is not a plain relative path is skipped.
//! Every file is read for Argo CD objects and serves as a write-back target; every selection's
//! image is chosen at tag `9.9.9`. Checks that `collect` and `plan` never panic, and that every
//! file the plan writes is a plain path inside the tree (no `..`, not absolute, no control
//! characters: the check of the tree's door), and either one of the tree's files or a file it
//! creates; that a created file was not one of the tree's; and that a changed file's new text is
//! its old text with its edits applied.

use std::collections::BTreeMap;

use image_update::api::argocd::{
    CollectOptions, InputFile, MemoryFiles, collect, new_path_problem, plan,
};
use image_update::api::plan::{ImageRef, PolicyKey};

/// The files of `data` by path.
fn files(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !text.starts_with("#### ") {
        out.insert("apps/input.yaml".to_owned(), text.to_owned());
        return out;
    }
    for chunk in text.split("#### ").skip(1) {
        let (path, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        if new_path_problem(path).is_none() {
            out.insert(path.to_owned(), body.to_owned());
        }
    }
    out
}

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let files = files(text);
    let inputs: Vec<InputFile<'_>> = files
        .iter()
        .map(|(path, text)| InputFile {
            origin: path.clone(),
            tree_path: Some(path.clone()),
            text,
        })
        .collect();
    let Ok(catalog) = collect(&inputs, &CollectOptions::default()) else {
        return;
    };
    let chosen: BTreeMap<PolicyKey, ImageRef> = catalog
        .selections
        .iter()
        .filter_map(|s| {
            let image = ImageRef::parse(&format!("{}:9.9.9", s.repository)).ok()?;
            Some((s.key.clone(), image))
        })
        .collect();
    let lookup = |k: &PolicyKey| chosen.get(k).cloned();
    let memory = MemoryFiles(files.clone());
    let Ok(wb) = plan(&catalog, &lookup, &memory) else {
        return;
    };
    for f in &wb.files {
        assert!(
            new_path_problem(&f.path).is_none(),
            "the plan writes {:?}: {:?}",
            f.path,
            new_path_problem(&f.path)
        );
        if f.created {
            assert!(
                !files.contains_key(&f.path),
                "the plan creates {:?}, which the tree holds",
                f.path
            );
            assert_eq!(
                f.old_text, "",
                "a created file {:?} has an old text",
                f.path
            );
        } else {
            assert!(
                files.contains_key(&f.path),
                "the plan edits {:?}, which is not a file of the tree",
                f.path
            );
            assert_eq!(
                Some(&f.old_text),
                files.get(&f.path),
                "{:?}: the old text is not the tree's",
                f.path
            );
        }
        let mut edits = f.edits.clone();
        let applied = image_update::api::argocd::apply_edits(&f.old_text, &mut edits);
        assert_eq!(
            applied.as_deref(),
            Ok(f.new_text.as_str()),
            "{:?}: the new text is not the old one with its edits",
            f.path
        );
    }
}
