//! Argo CD Applications in a run (`crate::argocd`, `docs/argocd.md`).
//!
//! Their texts come from the reads the run makes anyway: the tree's walk (the marker scan keeps
//! the files that may hold Argo CD objects and those named like write-back targets, so every file
//! is read once), the policy files, a ResourceList's items. Fetching, their images become the
//! reflector's definitions before the policy table is built. Once it is, each Application's
//! write-back is planned against the table, and its files and changes join the outcome's, so the
//! report, the change lines, kpt results, the Action's outputs, the Job's status and the commit
//! message show them, and the sink writes them with every other file, all or nothing.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use image_update_template::argocd::{parse_commit_template, render_commit_message};

use super::config::UpdateConfig;
use crate::argocd::application::InputFile;
use crate::argocd::catalog::{self, Catalog, CollectOptions};
use crate::argocd::plan::{self, DirFiles, FilePlan, Files, KnownFiles, WriteBack};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::outcome::{Change, Outcome, TreeRoot};
use crate::policies::{ImageRef, PolicyDocument, PolicyKey, PolicyTable};
use crate::reflector::Definition;
use crate::render::message::MessageConfig;
use crate::render::report::Report;
use crate::updater::tree::FileUpdate;

/// A text that may hold Argo CD objects.
#[derive(Debug)]
pub(super) struct ArgoFile {
    /// How messages name it.
    pub origin: String,
    /// Its path in the tree (relative to the tree's base directory), `None` for a policy file.
    pub tree_path: Option<String>,
    pub text: String,
}

/// What a run reads Argo CD objects and write-back targets from.
#[derive(Debug, Default)]
pub(super) struct Texts {
    /// Texts that may hold Argo CD objects.
    pub files: Vec<ArgoFile>,
    /// Texts of the tree's likely write-back targets, by tree path (read by the walk, so the
    /// plan need not read them again).
    pub known: HashMap<String, String>,
    /// How messages name the policy files (the other locations are the tree's).
    pub policy_origins: HashSet<String>,
}

impl Texts {
    /// Keep `text`, read from `origin` (at `tree_path` in the tree, or a policy file).
    pub(super) fn add(&mut self, origin: String, tree_path: Option<String>, text: String) {
        match tree_path {
            None if catalog::may_hold(&text) => {
                self.policy_origins.insert(origin.clone());
                self.files.push(ArgoFile {
                    origin,
                    tree_path: None,
                    text,
                });
            }
            None => {}
            Some(path) if catalog::may_hold(&text) => self.files.push(ArgoFile {
                origin: path.clone(),
                tree_path: Some(path),
                text,
            }),
            Some(path) => {
                self.known.insert(path, text);
            }
        }
    }

    /// Move `other`'s texts into these.
    pub(super) fn append(&mut self, other: &mut Texts) {
        self.files.append(&mut other.files);
        self.known.extend(other.known.drain());
        self.policy_origins.extend(other.policy_origins.drain());
    }
}

/// The texts `keep` wants of every file under `root` (relative to its base directory), for a run
/// whose marker scan does not walk the whole tree (it has an update path). A file that cannot be
/// read is left out with a warning in `warnings`.
///
/// # Errors
/// A walk failure.
pub(super) fn read_tree(
    root: &Path,
    limit: crate::input::SizeLimit,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Vec<(String, String)>, Error> {
    let walked = crate::walk::walk(root, |c| {
        let file = match crate::walk::open_regular(&c.path, c.regular) {
            Ok(Some((file, _))) => file,
            Ok(None) => return None,
            Err(e) => return Some(Err((c.rel.clone(), e.to_string()))),
        };
        let mut bytes = Vec::new();
        let name = c.path.display().to_string();
        if let Err(e) =
            crate::input::read_capped(file, &name, limit, crate::input::FILE_KNOB, &mut bytes)
        {
            return Some(Err((c.rel.clone(), e.to_string())));
        }
        if !keep(&c.rel, &bytes) {
            return None;
        }
        String::from_utf8(bytes).ok().map(Ok)
    })?;
    let mut out = Vec::new();
    for (rel, result) in walked.results {
        match result {
            Ok(text) => out.push((rel, text)),
            Err((rel, e)) => warnings.push(
                Diagnostic::warning(format!(
                    "cannot be read, so the Argo CD objects in it are skipped: {e}"
                ))
                .at(Location::new(rel, None)),
            ),
        }
    }
    Ok(out)
}

/// Whether a walk keeps a file for Argo CD: it may hold an Argo CD object, or is named like a
/// write-back target.
pub(super) fn keep(rel: &str, bytes: &[u8]) -> bool {
    catalog::may_hold_bytes(bytes) || plan::likely_target(rel)
}

/// The options of the catalog, from the run's settings.
fn options(config: &UpdateConfig) -> CollectOptions {
    CollectOptions {
        controller_namespace: config.argocd.controller_namespace.clone(),
        git_scope: config.argocd.git_scope.clone(),
    }
}

/// Check what can be checked before anything is read: Argo CD Image Updater's commit template
/// parses.
///
/// # Errors
/// A template that does not parse.
pub(super) fn check(config: &UpdateConfig) -> Result<(), Error> {
    if config.message.is_some()
        && let Some(text) = &config.argocd.commit_template
    {
        parse_commit_template(Some(text)).map_err(|e| {
            Error::invalid(vec![Diagnostic::error(format!(
                "the Argo CD commit message template does not parse: {e}"
            ))])
        })?;
    }
    Ok(())
}

/// Read every Application and its configuration from `files` (`None` when there are none).
///
/// # Errors
/// Every problem found, each at its file, line and column.
pub(super) fn collect<'a>(
    config: &UpdateConfig,
    files: &[&'a [ArgoFile]],
    names: &Names,
) -> Result<Option<Catalog<'a>>, Error> {
    if files.iter().all(|f| f.is_empty()) {
        return Ok(None);
    }
    let inputs: Vec<InputFile<'a>> = files
        .iter()
        .flat_map(|f| f.iter())
        .map(|f| InputFile {
            origin: f.origin.clone(),
            tree_path: f.tree_path.clone(),
            text: &f.text,
        })
        .collect();
    catalog::collect(&inputs, &options(config))
        .map(Some)
        .map_err(|errors| Error::invalid(names.fix(errors)))
}

/// The definitions of the catalog's images, for fetching.
///
/// # Errors
/// Pull secrets that cannot be had.
pub(super) fn definitions(
    catalog: Option<&Catalog<'_>>,
    documents: &[PolicyDocument],
    names: &Names,
) -> Result<Vec<Definition>, Error> {
    let Some(catalog) = catalog else {
        return Ok(Vec::new());
    };
    crate::argocd::definitions::definitions(
        catalog,
        documents,
        &crate::argocd::definitions::ProcessEnvironment,
    )
    .map_err(|errors| {
        Error::invalid_with(
            "invalid policy definitions; nothing was written",
            names.fix(errors),
        )
    })
}

/// How a run names the files of its Argo CD objects and targets: tree paths are shown as the
/// user knows them and reported relative to the update path; policy files as given.
#[derive(Debug)]
pub(super) struct Names {
    root: Option<TreeRoot>,
    update_path: String,
    policy_origins: HashSet<String>,
    /// A ResourceList: tree paths are the items' path annotations.
    list: bool,
}

impl Names {
    /// The names of a tree run whose base directory is `base`.
    pub(super) fn tree(base: &Path, config: &UpdateConfig, texts: &Texts) -> Self {
        let cwd = std::env::current_dir().ok();
        Self {
            root: Some(TreeRoot::new(base.to_path_buf(), false, cwd.as_deref())),
            update_path: config.update_path.clone(),
            policy_origins: texts.policy_origins.clone(),
            list: false,
        }
    }

    /// The names of a ResourceList run.
    pub(super) fn list(config: &UpdateConfig) -> Self {
        Self {
            root: None,
            update_path: config.update_path.clone(),
            policy_origins: HashSet::new(),
            list: true,
        }
    }

    /// `path` (relative to the tree's base) as the report names it: relative to the update path,
    /// `None` outside it.
    fn report_path(&self, path: &str) -> Option<String> {
        if self.update_path.is_empty() || self.list {
            return Some(path.to_owned());
        }
        path.strip_prefix(&self.update_path)
            .and_then(|r| r.strip_prefix('/'))
            .map(str::to_owned)
    }

    /// `path` (relative to the tree's base) as the user knows it.
    fn display(&self, path: &str) -> String {
        self.root
            .as_ref()
            .map_or_else(|| path.to_owned(), |r| r.display(path))
    }

    /// Diagnostics with their tree locations named for the user and the report.
    pub(super) fn fix(&self, mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        for d in &mut diagnostics {
            if let Some(at) = &mut d.location
                && at.tree_path.is_none()
                && !self.policy_origins.contains(&at.path)
            {
                let tree = at.path.clone();
                at.tree_path = self.report_path(&tree);
                at.path = self.display(&tree);
            }
        }
        diagnostics
    }
}

/// The image each policy key moved to, from the table.
fn chosen(table: &PolicyTable) -> HashMap<PolicyKey, ImageRef> {
    table
        .observed()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Plan the write-back of `catalog` over the tree at `base` (its base directory) with the
/// table's images, and absorb it into `outcome`.
///
/// # Errors
/// Every problem found (nothing is written), a file that both markers and a write-back edit.
pub(super) fn plan_tree(
    config: &UpdateConfig,
    catalog: &Catalog<'_>,
    table: &PolicyTable,
    base: &Path,
    known: HashMap<String, String>,
    names: &Names,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    let dir = DirFiles::new(base, config.max_file_size).map_err(|e| {
        Error::invalid(vec![
            Diagnostic::error(format!("cannot resolve the tree: {e}"))
                .at(Location::new(base.display().to_string(), None)),
        ])
    })?;
    let files = KnownFiles::new(known, dir);
    let wb = plan_with(catalog, table, &files, names)?;
    absorb(config, catalog, wb, names, outcome, |path| {
        let full = base.join(path);
        // An existing file is written where it resolves (a symlink inside the tree, which the
        // plan checked); a new one where it is named.
        let write_to = fs_err::canonicalize(&full).unwrap_or_else(|_| full.clone());
        (full, write_to)
    })
}

/// Plan with the table's images; errors named for the user.
pub(super) fn plan_with(
    catalog: &Catalog<'_>,
    table: &PolicyTable,
    files: &dyn Files,
    names: &Names,
) -> Result<WriteBack, Error> {
    let chosen = chosen(table);
    let lookup = |k: &PolicyKey| chosen.get(k).cloned();
    plan::plan(catalog, &lookup, files).map_err(|errors| Error::invalid(names.fix(errors)))
}

/// Absorb a planned write-back into `outcome`: its diagnostics, its files (where `paths` says
/// each is read and written) and changes, its Applications.
pub(super) fn absorb(
    config: &UpdateConfig,
    catalog: &Catalog<'_>,
    wb: WriteBack,
    names: &Names,
    outcome: &mut Outcome,
    paths: impl Fn(&str) -> (PathBuf, PathBuf),
) -> Result<(), Error> {
    let mut diagnostics = names.fix(catalog.diagnostics.clone());
    diagnostics.extend(names.fix(wb.diagnostics));
    let mut conflicts = Vec::new();
    let marked: HashSet<String> = outcome.files.iter().map(|f| f.rel.clone()).collect();
    for file in wb.files {
        let Some(rel) = names.report_path(&file.path) else {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "the Argo CD write-back of {} is not under the update path {}, so it is not written",
                    apps_of(&file),
                    config.update_path
                ))
                .at(Location::new(names.display(&file.path), None)),
            );
            continue;
        };
        let display = names.display(&file.path);
        if marked.contains(&rel) {
            conflicts.push(
                Diagnostic::error(format!(
                    "both $imagepolicy markers and the Argo CD write-back of {} edit this file",
                    apps_of(&file)
                ))
                .at(Location::in_tree(rel.clone(), display.clone(), None))
                .with_hint("follow each image one way: remove the markers, or the image from the Application's image list"),
            );
            continue;
        }
        for c in &file.changes {
            outcome.changes.push(Change {
                file: rel.clone(),
                display: display.clone(),
                object: c.object.clone(),
                object_index: 0,
                index: None,
                field_path: c.field_path.clone(),
                old_value: c.old_value.clone(),
                new_value: c.new_value.clone(),
                setter: c.setter.clone(),
                position: c.position,
            });
        }
        let (path, write_to) = paths(&file.path);
        outcome.files.push(FileUpdate {
            rel,
            path,
            write_to,
            old_text: config.outputs.keep_old_text.then_some(file.old_text),
            new_text: file.new_text,
            created: file.created,
        });
    }
    if !conflicts.is_empty() {
        return Err(Error::invalid(conflicts));
    }
    outcome
        .changes
        .sort_by(|a, b| (&a.file, a.position).cmp(&(&b.file, b.position)));
    outcome.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    outcome.diagnostics.extend(diagnostics);
    outcome.argocd = wb.apps;
    Ok(())
}

/// The Applications whose changes a file holds, for messages.
fn apps_of(file: &FilePlan) -> String {
    let apps: std::collections::BTreeSet<String> =
        file.changes.iter().map(|c| c.app.to_string()).collect();
    let apps: Vec<String> = apps.into_iter().collect();
    match apps.as_slice() {
        [one] => format!("Application {one}"),
        _ => format!("Applications {}", apps.join(", ")),
    }
}

/// The commit message of a run with Argo CD changes and no Flux template: Argo CD Image Updater's
/// template (its default, or `--argocd-commit-template`) rendered for each Application in name
/// order, one after the other; the changes of `$imagepolicy` markers (`marker_report`) follow as
/// Flux's message when there are some.
///
/// # Errors
/// The Flux message of the markers' changes fails (the Argo template falls back as Argo's does).
pub(super) fn commit_message(
    config: &UpdateConfig,
    message: &MessageConfig,
    outcome: &Outcome,
    marker_report: &Report,
) -> Result<Option<String>, Error> {
    if outcome.argocd.is_empty() || message.template.as_deref().is_some_and(|t| !t.is_empty()) {
        return Ok(None);
    }
    let template = parse_commit_template(config.argocd.commit_template.as_deref()).map_err(|e| {
        Error::invalid(vec![Diagnostic::error(format!(
            "the Argo CD commit message template does not parse: {e}"
        ))])
    })?;
    let mut parts: Vec<String> = outcome
        .argocd
        .iter()
        .map(|app| render_commit_message(&template, &app.commit).message)
        .collect();
    if !marker_report.file_changes.is_empty() {
        parts.push(message.render(marker_report)?);
    }
    Ok(Some(parts.join("\n")))
}
