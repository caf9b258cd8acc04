//! Argo CD Applications in a run (`crate::argocd`, `docs/argocd.md`).
//!
//! Their texts come from the reads the run makes anyway: the tree's walk (the marker scan keeps
//! the files that may hold Argo CD objects and those named like write-back targets, so every file
//! is read once), the policy files (one the tree's walk read too is left out: a file is read once,
//! as the tree's), a ResourceList's items. Fetching, their images become the
//! reflector's definitions before the policy table is built. Once it is, each Application's
//! write-back is planned against the table, and its files and changes join the outcome's, so the
//! report, the change lines, kpt results, the Action's outputs, the Job's status and the commit
//! message show them, and the sink writes them with every other file, all or nothing.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use image_update_template::argocd::{parse_commit_template, render_commit_message};

use super::config::UpdateConfig;
use crate::argocd::application::AppId;
use crate::argocd::application::InputFile;
use crate::argocd::catalog::{self, Catalog, CollectOptions};
use crate::argocd::plan::{self, AppPlan, DirFiles, FilePlan, Files, KnownFiles, WriteBack};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::FileId;
use crate::outcome::{AppWriteBack, FileUpdate, GitWriteBack};
use crate::outcome::{Change, Outcome, TreeRoot};
use crate::policies::{PolicyDocument, PolicyKey, PolicyTable};
use crate::reflector::Definition;
use crate::render::message::MessageConfig;
use crate::render::report::Report;
use crate::sink::door::Door;
use crate::updater::tree::KeptText;

/// A text that may hold Argo CD objects.
#[derive(Debug)]
pub(super) struct ArgoFile {
    /// How messages name it.
    pub origin: String,
    /// Its path in the tree (relative to the tree's base directory), `None` for a policy file.
    pub tree_path: Option<String>,
    pub text: String,
    /// Which file a policy file is (`None`: stdin, or a text of the tree).
    pub id: Option<FileId>,
}

impl ArgoFile {
    /// Whether this is a policy file among `read`.
    fn named_among(&self, read: &HashSet<FileId>) -> bool {
        self.tree_path.is_none() && self.id.is_some_and(|id| read.contains(&id))
    }
}

/// The likely write-back targets a run read.
#[derive(Debug, Default)]
pub(super) struct Targets {
    /// Texts by tree path (read by the walk, so the plan need not read them again).
    pub known: HashMap<String, String>,
    /// The tree paths the walk read as regular files (not symlinks): written where they are
    /// named, without asking the file system again.
    pub regular: HashSet<String>,
}

impl Targets {
    /// Add `other`'s targets.
    pub(super) fn extend(&mut self, other: Targets) {
        self.known.extend(other.known);
        self.regular.extend(other.regular);
    }
}

/// What a run reads Argo CD objects and write-back targets from.
#[derive(Debug, Default)]
pub(super) struct Texts {
    /// Texts that may hold Argo CD objects.
    pub files: Vec<ArgoFile>,
    /// The tree's likely write-back targets.
    pub targets: Targets,
    /// How messages name the policy files (the other locations are the tree's).
    pub policy_origins: HashSet<String>,
}

impl Texts {
    /// Keep `text`, read from `origin` (at `tree_path` in the tree, or a policy file).
    pub(super) fn add(&mut self, origin: String, tree_path: Option<String>, text: String) {
        self.add_read(origin, tree_path, text, false, None);
    }

    /// Keep a text the tree's walk read at `kept.rel`.
    pub(super) fn add_walked(&mut self, kept: KeptText) {
        let KeptText { rel, text, regular } = kept;
        self.add_read(rel.clone(), Some(rel), text, regular, None);
    }

    /// Keep the text of a policy file.
    pub(super) fn add_policy(&mut self, file: super::policies::ArgoPolicyFile) {
        let super::policies::ArgoPolicyFile { origin, text, id } = file;
        self.add_read(origin, None, text, false, id);
    }

    /// Whether a policy file on disk is among the texts.
    pub(super) fn has_named(&self) -> bool {
        self.files
            .iter()
            .any(|f| f.tree_path.is_none() && f.id.is_some())
    }

    /// Which files the tree's texts are (their paths relative to `base`).
    pub(super) fn tree_ids(&self, base: &Path) -> HashSet<FileId> {
        self.files
            .iter()
            .filter_map(|f| f.tree_path.as_deref())
            .filter_map(|rel| crate::input::file_id(&base.join(rel)))
            .collect()
    }

    /// Leave out the policy files among `read`, the files the tree's walk read: a file named
    /// explicitly that the tree holds is read once, as the tree's (its Applications are written
    /// back in place).
    pub(super) fn leave_out(&mut self, read: &HashSet<FileId>) {
        for origin in self.named_among(read) {
            self.policy_origins.remove(&origin);
        }
        self.files.retain(|f| !f.named_among(read));
    }

    /// How messages name the policy files among `read`.
    pub(super) fn named_among(&self, read: &HashSet<FileId>) -> Vec<String> {
        self.files
            .iter()
            .filter(|f| f.named_among(read))
            .map(|f| f.origin.clone())
            .collect()
    }

    fn add_read(
        &mut self,
        origin: String,
        tree_path: Option<String>,
        text: String,
        regular: bool,
        id: Option<FileId>,
    ) {
        if regular && let Some(path) = &tree_path {
            self.targets.regular.insert(path.clone());
        }
        match tree_path {
            None if catalog::may_hold(&text) => {
                self.policy_origins.insert(origin.clone());
                self.files.push(ArgoFile {
                    origin,
                    tree_path: None,
                    text,
                    id,
                });
            }
            None => {}
            Some(path) if catalog::may_hold(&text) => self.files.push(ArgoFile {
                origin: path.clone(),
                tree_path: Some(path),
                text,
                id: None,
            }),
            Some(path) => {
                self.targets.known.insert(path, text);
            }
        }
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
) -> Result<Vec<KeptText>, Error> {
    let walked = crate::walk::walk(root, |c| {
        let bytes = match crate::input::read_regular_owned(&c.path, c.regular, limit) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(e) => return Some(Err((c.rel.clone(), e.to_string()))),
        };
        if !keep(&c.rel, &bytes) {
            return None;
        }
        String::from_utf8(bytes)
            .ok()
            .map(|text| Ok((text, c.regular)))
    })?;
    let mut out = Vec::new();
    for (rel, result) in walked.results {
        match result {
            Ok((text, regular)) => out.push(KeptText { rel, text, regular }),
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
        fetching: config.fetch.is_some(),
        partial: false,
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
    collect_except(config, files, names, &HashSet::new())
}

/// [`collect`] from files that are a part of what the run will read (a Job's `--policies`
/// files before its clone): a KubeSphere updater naming an Application not among them is passed
/// over ([`CollectOptions::partial`]).
///
/// # Errors
/// As [`collect`].
#[cfg(feature = "job")]
pub(super) fn collect_part<'a>(
    config: &UpdateConfig,
    files: &[&'a [ArgoFile]],
    names: &Names,
) -> Result<Option<Catalog<'a>>, Error> {
    let inputs = inputs(files, &HashSet::new());
    if inputs.is_empty() {
        return Ok(None);
    }
    let options = CollectOptions {
        partial: true,
        ..options(config)
    };
    catalog::collect(&inputs, &options)
        .map(Some)
        .map_err(|errors| Error::invalid(names.fix(errors)))
}

/// The files of `files` as the catalog reads them, but those among `read`.
fn inputs<'a>(files: &[&'a [ArgoFile]], read: &HashSet<FileId>) -> Vec<InputFile<'a>> {
    files
        .iter()
        .flat_map(|f| f.iter())
        .filter(|f| !f.named_among(read))
        .map(|f| InputFile {
            origin: f.origin.clone(),
            tree_path: f.tree_path.clone(),
            text: &f.text,
        })
        .collect()
}

/// [`collect`] without the policy files among `read` (read by the tree's walk).
///
/// # Errors
/// As [`collect`].
pub(super) fn collect_except<'a>(
    config: &UpdateConfig,
    files: &[&'a [ArgoFile]],
    names: &Names,
    read: &HashSet<FileId>,
) -> Result<Option<Catalog<'a>>, Error> {
    if files.iter().all(|f| f.is_empty()) {
        return Ok(None);
    }
    let inputs = inputs(files, read);
    catalog::collect(&inputs, &options(config))
        .map(Some)
        .map_err(|errors| Error::invalid(names.fix(errors)))
}

/// The definitions of the catalog's images, for fetching.
///
/// # Errors
/// Pull secrets that cannot be had.
pub(super) fn definitions(
    config: &UpdateConfig,
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
        config.argocd.secrets_dir.as_deref(),
        &crate::argocd::definitions::ProcessEnvironment,
        names.root.as_ref().map(|r| r.path.as_path()),
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
    /// `origin` no longer names a policy file: it was left out, read as the tree's.
    pub(super) fn forget(&mut self, origin: &str) {
        self.policy_origins.remove(origin);
    }

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

/// Plan the write-back of `catalog` over the tree at `base` (its base directory) with the
/// table's images, and absorb it into `outcome`.
///
/// # Errors
/// Every problem found (nothing is written), a file that both markers and a write-back edit.
pub(super) fn plan_tree(
    config: &UpdateConfig,
    catalog: &Catalog<'_>,
    table: &PolicyTable,
    door: &Door,
    targets: Targets,
    names: &Names,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    let Targets { known, regular } = targets;
    let files = KnownFiles::new(
        known,
        regular,
        DirFiles::through(door, config.max_file_size),
    );
    let wb = plan_with(catalog, table, &outcome.fetched, &files, names)?;
    // Written where named: the sink resolves each file through the same door.
    absorb(config, catalog, wb, names, outcome, door.root())
}

/// Plan with the table's images; errors named for the user. An image that must be signed
/// (`imagesVerification`) takes only a result fetched through the supply-chain gate (among
/// `fetched`), never one supplied as a value, which nothing checked.
pub(super) fn plan_with(
    catalog: &Catalog<'_>,
    table: &PolicyTable,
    fetched: &[crate::reflector::Resolved],
    files: &dyn Files,
    names: &Names,
) -> Result<WriteBack, Error> {
    let signed: HashSet<&PolicyKey> = catalog
        .selections
        .iter()
        .filter(|s| s.verify.is_some())
        .map(|s| &s.key)
        .collect();
    let gated: HashSet<&PolicyKey> = fetched
        .iter()
        .filter(|r| signed.contains(&r.key))
        .map(|r| &r.key)
        .collect();
    let lookup = |k: &PolicyKey| {
        if signed.contains(k) && !gated.contains(k) {
            return None;
        }
        table.latest(k).cloned()
    };
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
    root: &Path,
) -> Result<(), Error> {
    let mut diagnostics = names.fix(catalog.diagnostics.clone());
    diagnostics.extend(names.fix(wb.diagnostics));
    let mut conflicts = Vec::new();
    let marked: HashSet<String> = outcome.files.iter().map(|f| f.rel.clone()).collect();
    let mut written: HashSet<AppId> = HashSet::new();
    outcome
        .changes
        .reserve(wb.files.iter().map(|f| f.changes.len()).sum());
    outcome.files.reserve(wb.files.len());
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
        let path = root.join(&file.path);
        written.extend(file.changes.iter().map(|c| c.app.clone()));
        // The plan's values move into the outcome (the write-back is not kept).
        outcome
            .changes
            .extend(file.changes.into_iter().map(|c| Change {
                file: rel.clone(),
                display: display.clone(),
                object: c.object,
                object_index: 0,
                index: None,
                field_path: c.field_path,
                old_value: c.old_value,
                new_value: c.new_value,
                setter: c.key.to_string(),
                position: c.position,
            }));
        outcome.files.push(FileUpdate {
            rel,
            path,
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
    outcome.argocd = written_apps(wb.apps, &written);
    Ok(())
}

/// The Applications of `apps` with a change in `written`, the files written: an Application whose
/// write-back is not written (outside the update path) gives no commit message, write branch or
/// pull request.
fn written_apps(apps: Vec<AppPlan>, written: &HashSet<AppId>) -> Vec<AppWriteBack> {
    apps.into_iter()
        .filter(|a| written.contains(&a.app))
        .map(|a| AppWriteBack {
            app: a.app.to_string(),
            changes_images: !a.images.is_empty(),
            commit: a.commit,
            git: a.git.map(|g| GitWriteBack {
                push: g.push,
                pull_request: g.pull_request,
            }),
        })
        .collect()
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
/// An Application whose template fails gets Argo CD's fallback message, as in Argo CD, and a
/// warning in `warnings` that says why (a template error, or a limit of the engine).
///
/// # Errors
/// The Flux message of the markers' changes fails (the Argo template falls back as Argo's does).
pub(super) fn commit_message(
    config: &UpdateConfig,
    message: &MessageConfig,
    outcome: &Outcome,
    marker_report: &Report,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<String>, Error> {
    if outcome.argocd.is_empty() || message.template.as_deref().is_some_and(|t| !t.is_empty()) {
        return Ok(None);
    }
    let template =
        parse_commit_template(config.argocd.commit_template.as_deref()).map_err(|e| {
            Error::invalid(vec![Diagnostic::error(format!(
                "the Argo CD commit message template does not parse: {e}"
            ))])
        })?;
    let mut parts: Vec<String> = outcome
        .argocd
        .iter()
        .map(|app| {
            let rendered = render_commit_message(&template, &app.commit);
            if let Some(e) = rendered.error {
                warnings.push(Diagnostic::warning(format!(
                    "the Argo CD commit message template fails for Application {}, so its \
                     message is Argo CD Image Updater's fallback: {e}",
                    app.app
                )));
            }
            rendered.message
        })
        .collect();
    if !marker_report.file_changes.is_empty() {
        parts.push(message.render(marker_report)?);
    }
    Ok(Some(parts.join("\n")))
}

/// A ResourceList item as a file: its text from its line's start, with what precedes it on that
/// line (`- `, or a flow list's earlier items) as spaces, so that its offsets are the list's less
/// `base` and its columns are the list's.
#[derive(Debug)]
pub(super) struct ListItem {
    /// How the plan names it: its path annotation, or `PATH#INDEX` when several items share the
    /// path (a file of several documents).
    key: String,
    path: String,
    index: Option<String>,
    base: usize,
    /// The item's range in the list's text.
    range: std::ops::Range<usize>,
}

/// The items of the ResourceList `text` that may hold Argo CD objects (into `argo`) or be
/// write-back targets (by their path annotation); none when the list mentions no Argo CD object.
pub(super) fn list_items(
    text: &str,
    layout: &crate::updater::source::resource_list::ListLayout,
    argo: &mut Texts,
) -> Vec<ListItem> {
    if !catalog::may_hold(text) {
        return Vec::new();
    }
    let nodes = layout.items.as_deref().unwrap_or(&[]);
    let mut found: Vec<(ListItem, String)> = Vec::new();
    for node in nodes {
        let range = &node.range;
        let Some(slice) = text.get(range.clone()) else {
            continue;
        };
        let holds = catalog::may_hold(slice);
        if !holds && !crate::argocd::plan::likely_target(&path_hint(slice)) {
            continue;
        }
        let line_start = crate::yaml::edit::lines::line_start(text, range.start);
        let mut item_text = " ".repeat(range.start - line_start);
        // A block item runs to the end of its last line (its text ends as a file does); a flow
        // item (JSON) ends where it ends, others may follow on its line.
        let block = text[line_start..range.start].trim() == "-";
        let end = if block {
            crate::yaml::edit::lines::after_line(text, range.end)
        } else {
            range.end
        };
        item_text.push_str(&text[range.start..end]);
        let annotations = crate::updater::source::resource_list::parse_node(text, node)
            .ok()
            .and_then(|v| v.pointer("/metadata/annotations").cloned());
        let annotation = |keys: [&str; 2]| {
            keys.iter().find_map(|k| {
                annotations
                    .as_ref()
                    .and_then(|a| a.get(*k))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            })
        };
        let Some(path) = annotation([
            "internal.config.kubernetes.io/path",
            "config.kubernetes.io/path",
        ]) else {
            continue;
        };
        let index = annotation([
            "internal.config.kubernetes.io/index",
            "config.kubernetes.io/index",
        ]);
        found.push((
            ListItem {
                key: path.clone(),
                path,
                index,
                base: line_start,
                range: range.clone(),
            },
            item_text,
        ));
    }
    let mut count: HashMap<String, usize> = HashMap::new();
    for (item, _) in &found {
        *count.entry(item.path.clone()).or_default() += 1;
    }
    let mut items = Vec::new();
    for (mut item, item_text) in found {
        if count.get(&item.path).is_some_and(|n| *n > 1) {
            item.key = format!("{}#{}", item.path, item.index.as_deref().unwrap_or("0"));
        }
        argo.add(item.key.clone(), Some(item.key.clone()), item_text);
        items.push(item);
    }
    items
}

/// The path annotation's value as the text writes it, cheaply (for screening only).
fn path_hint(item: &str) -> String {
    let Some(at) = item.find("config.kubernetes.io/path") else {
        return String::new();
    };
    let rest = &item[at + "config.kubernetes.io/path".len()..];
    let rest = rest.trim_start_matches(['"', '\'', ':', ' ']);
    rest.split(['"', '\'', '\n', ',', '}'])
        .next()
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// Plan the write-back of `catalog` over the ResourceList's items and absorb it into `outcome`:
/// changed items become edits of the list's text, new files new items (with path annotations,
/// as `kpt fn source` gives a package's files), changes carry the items' path and index.
///
/// # Errors
/// Every problem found; an item that both markers and a write-back edit.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan_list(
    config: &UpdateConfig,
    catalog: &Catalog<'_>,
    table: &PolicyTable,
    text: &str,
    layout: &crate::updater::source::resource_list::ListLayout,
    items: &[ListItem],
    known: HashMap<String, String>,
    names: &Names,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    let mut texts: std::collections::BTreeMap<String, String> = known.into_iter().collect();
    for f in &catalog.files {
        if let Some(p) = &f.tree_path {
            texts.insert(p.clone(), f.tree.text().to_owned());
        }
    }
    let files = plan::MemoryFiles(texts);
    let wb = plan_with(catalog, table, &outcome.fetched, &files, names)?;
    let by_key: HashMap<&str, &ListItem> = items.iter().map(|i| (i.key.as_str(), i)).collect();
    let marked: HashSet<String> = outcome.changes.iter().map(|c| c.file.clone()).collect();
    let mut diagnostics = names.fix(catalog.diagnostics.clone());
    diagnostics.extend(names.fix(wb.diagnostics));
    let mut errors = Vec::new();
    let mut edits = Vec::new();
    let mut new_items = Vec::new();
    let mut written: HashSet<AppId> = HashSet::new();
    for file in wb.files {
        let item = by_key.get(file.path.as_str());
        let path = item.map_or_else(|| file.path.clone(), |i| i.path.clone());
        if !names.update_path.is_empty() && !is_under(&names.update_path, &path) {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "the Argo CD write-back of {} is not under the update path {}, so it is not written",
                    apps_of(&file),
                    config.update_path
                ))
                .at(Location::new(path.clone(), None)),
            );
            continue;
        }
        if marked.contains(&path) {
            errors.push(
                Diagnostic::error(format!(
                    "both $imagepolicy markers and the Argo CD write-back of {} edit this item",
                    apps_of(&file)
                ))
                .at(Location::new(path.clone(), None)),
            );
            continue;
        }
        written.extend(file.changes.iter().map(|c| c.app.clone()));
        let index = item.and_then(|i| i.index.clone());
        let first_line = item.map_or(0, |i| text[..i.base].matches('\n').count());
        for c in &file.changes {
            outcome.changes.push(Change {
                file: path.clone(),
                display: path.clone(),
                object: c.object.clone(),
                object_index: 0,
                index: index.clone(),
                field_path: c.field_path.clone(),
                old_value: c.old_value.clone(),
                new_value: c.new_value.clone(),
                setter: c.key.to_string(),
                position: crate::text::Position {
                    line: c.position.line + first_line,
                    column: c.position.column,
                },
            });
        }
        match item {
            Some(item) => edits.extend(file.edits.iter().map(|e| e.shifted(item.base))),
            // A new item's path annotation is where `kpt fn sink` writes it: the same check
            // as the tree's door gives a file to create.
            None => match crate::sink::door::check_new_path(&path) {
                Ok(()) => new_items.push((path, file.new_text)),
                Err(refusal) => errors.push(
                    Diagnostic::error(refusal.to_string()).at(Location::new(path.clone(), None)),
                ),
            },
        }
    }
    if !errors.is_empty() {
        return Err(Error::invalid(errors));
    }
    if !new_items.is_empty() {
        edits.extend(new_items_edit(text, layout, items, &new_items)?);
    }
    outcome.diagnostics.extend(diagnostics);
    outcome.argocd = written_apps(wb.apps, &written);
    if config.mode.writes() {
        outcome.list_edits.extend(edits);
    }
    Ok(())
}

/// Whether the item path `item` lies under `base` (both normalised).
fn is_under(base: &str, item: &str) -> bool {
    super::is_under(base, item)
}

/// The edits that append `new` (path and text of each new file) to the list's items, in the
/// list's style ([`crate::yaml::edit::list::Items::append_items`]), each carrying kpt's path
/// annotations.
fn new_items_edit(
    text: &str,
    layout: &crate::updater::source::resource_list::ListLayout,
    items: &[ListItem],
    new: &[(String, String)],
) -> Result<Vec<crate::yaml::edit::Edit>, Error> {
    use crate::yaml::edit::list::{Items, NewItem};
    let ranges: Vec<std::ops::Range<usize>> = match layout.items.as_deref() {
        Some(nodes) if !nodes.is_empty() => nodes.iter().map(|n| n.range.clone()).collect(),
        _ => items.iter().map(|i| i.range.clone()).collect(),
    };
    let add: Vec<NewItem> = new
        .iter()
        .map(|(path, body)| {
            NewItem::file(
                body,
                &[
                    ("config.kubernetes.io/path", path.as_str()),
                    ("internal.config.kubernetes.io/path", path.as_str()),
                ],
            )
        })
        .collect();
    Items {
        text,
        ranges: &ranges,
    }
    .append_items(&add)
    .ok_or_else(|| {
        Error::Internal("an Argo CD write-back in a ResourceList without items".to_owned())
    })
}
