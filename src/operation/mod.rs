//! The one operation every front end runs.
//!
//! ```text
//! UpdateConfig + Input ──> policy documents (files, the tree's definitions,
//!                          the ResourceList's items)
//!                     ──> policy table (values, supplied ImagePolicies,
//!                          fetched results; scope; conflicts)
//!                     ──> plan (the tree's files, or the list's items)
//!                     ──> report, diagnostics, rendered outputs
//!                     ──> writes (tree, `Apply`) ──> Outcome
//! ```
//!
//! The CLI (`update`), the KRM function, the GitHub Action and the Job each
//! convert their input into an [`UpdateConfig`], call [`run`], and render the
//! [`Outcome`] their own way. `run` prints nothing and chooses no exit
//! status.

mod argocd;
pub(crate) mod config;
mod list;
mod policies;

use std::path::{Path, PathBuf};

pub(crate) use self::config::{FetchSettings, Outputs, PolicyValue, UpdateConfig};
pub(crate) use self::list::{ListError, ListRun, NotAList, Reading, run_list};
pub(crate) use self::policies::client_settings;
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::outcome::{Change, Outcome, Stats, StdoutOutput, TreeRoot};
use crate::policies::{PolicyDocument, PolicyKey, PolicyTable};
use crate::reflector::{emit, may_define, may_define_item};
use crate::render::report::Report;
use crate::sink::door::Door;
use crate::sink::{self, dir::FileWrite};
use crate::updater::plan;
use crate::updater::plan::Planned;
use crate::updater::scan::{ObjectInfo, Scan};
use crate::updater::source::resource_list::{ListLayout, parse_node};
use crate::updater::tree::{self, FileOutcome, Placement};

/// What a run updates.
#[derive(Debug)]
pub(crate) enum Input<'a> {
    /// A directory, or one file, on disk.
    Tree(&'a Path),
    /// A kpt ResourceList's text, already laid out and scanned (by
    /// [`run_list`], in one pass).
    ResourceList {
        text: &'a str,
        layout: &'a ListLayout,
        scan: Scan,
    },
}

/// Run `config` over `input`.
///
/// # Errors
/// As [`run_then`].
pub(crate) fn run(config: &UpdateConfig, input: Input<'_>) -> Result<Outcome, Error> {
    run_then(config, input, &mut |_| Ok(()))
}

/// What a front end does with the outcome before anything is renamed into
/// place: write the outputs asked for on stdout (`--diff`, `--report -`).
/// Its failure leaves every file as it was.
pub(crate) type BeforeCommit<'a> = &'a mut dyn FnMut(&Outcome) -> Result<(), Error>;

/// Run `config` over `input`, calling `before_commit` with the complete
/// outcome once every file is staged and before the first is renamed into
/// place (or, when nothing is written, before returning), so that a closed
/// pipe or a full disk on stdout fails the run with nothing changed.
///
/// # Errors
/// Invalid policy input (every problem at its location), fetch failures
/// (every failed policy), a tree that cannot be read, outputs that cannot
/// be written. Nothing is written when an error is returned (the commit is
/// all or nothing, see `sink::dir`), except when putting back the
/// originals after a failed rename fails too: the error then names them.
pub(crate) fn run_then(
    config: &UpdateConfig,
    input: Input<'_>,
    before_commit: BeforeCommit<'_>,
) -> Result<Outcome, Error> {
    let mut early = Vec::new();
    let mut named =
        policies::read_policy_files(&config.policy_files, config.max_file_size, &mut early)?;
    let argo_policy_files = std::mem::take(&mut named.argo);
    let mut documents = Vec::new();
    let mut prepared = None;
    // The texts Argo CD objects are read from: the policy files, and the
    // tree's files that may hold them (with the write-back targets), read by
    // the definitions' walk when fetching, by a walk of their own when the
    // marker scan walks only the update path, else by the marker scan.
    let mut argo = argocd::Texts::default();
    let mut argo_warnings = Vec::new();
    let mut keep_in_scan = false;
    let mut argo_base = None;
    // Every file of the tree the run reads outside its walk, or writes, goes through its door.
    let mut door = None;
    let mut list_items = Vec::new();
    match &input {
        Input::Tree(path) => {
            if !path.exists() {
                return Err(Error::invalid(vec![
                    Diagnostic::error("no such file or directory")
                        .at(Location::new(path.display().to_string(), None)),
                ]));
            }
            // Held until the writes are done: runs on one tree take turns.
            prepared = Some(
                tree::prepare(
                    path,
                    config.mode.writes() && config.outputs.output_dir.is_none(),
                )
                .map_err(tree_error)?,
            );
            // A file named explicitly (a policy file) that the tree's walk reads too is read
            // once, as the tree's: found by its device and inode, however it was named.
            let kept = if config.fetch.is_some() {
                let ids = named.files.iter().map(|(id, _)| *id).collect();
                let found = policies::tree_definitions(
                    path,
                    &config.update_path,
                    config.max_file_size,
                    &mut early,
                    Some(argocd::keep),
                    &ids,
                )?;
                named.leave_out(&found.named);
                documents.extend(found.documents);
                found.kept
            } else if !config.update_path.is_empty() {
                argocd::read_tree(path, config.max_file_size, &mut argo_warnings)?
            } else {
                keep_in_scan = true;
                Vec::new()
            };
            for text in kept {
                argo.add_walked(text);
            }
            let base = crate::walk::base_dir(path);
            for file in argo_policy_files {
                argo.add_policy(file);
            }
            if argo.has_named() {
                let read = argo.tree_ids(&base);
                argo.leave_out(&read);
            }
            door = Some(Door::new(&base).map_err(|e| {
                Error::invalid(vec![
                    Diagnostic::error(format!("cannot resolve the tree: {e}"))
                        .at(Location::new(base.display().to_string(), None)),
                ])
            })?);
            argo_base = Some(base);
        }
        Input::ResourceList { text, layout, .. } => {
            documents.extend(list_documents(text, layout, config.fetch.is_some())?);
            list_items = argocd::list_items(text, layout, &mut argo);
            for file in argo_policy_files {
                argo.add_policy(file);
            }
        }
    }
    // The policy files' documents first: of two equal definitions of an object, the first read
    // is kept (a Job's ConfigMap before its clone, whose registry Secret files are beside it).
    documents.splice(0..0, named.documents);
    // The config's own documents (a KRM functionConfig that is an ImageUpdater): one that is also
    // an item is one object when both are the same (`reflector::collect`).
    documents.extend(config.documents.iter().cloned());
    if let Some(message) = &config.message {
        message.check()?;
    }
    argocd::check(config)?;
    let mut names = match &argo_base {
        Some(base) => argocd::Names::tree(base, config, &argo),
        None => argocd::Names::list(config),
    };
    early.extend(names.fix(argo_warnings));
    // Fetching, the Applications' images are definitions: they are read
    // before the policy table is built.
    let fetching = config.fetch.is_some();
    let early_catalog = if fetching {
        argocd::collect(config, &[&argo.files], &names)?
    } else {
        None
    };
    let argo_definitions = argocd::definitions(config, early_catalog.as_ref(), &documents, &names)?;
    let gathered = policies::gather(config, &documents, argo_definitions)?;
    let mut diagnostics = gathered.notes;
    diagnostics.extend(early);
    let mut outcome = Outcome {
        mode: config.mode,
        fetched: gathered.fetched,
        carried: config.carried.clone(),
        diagnostics,
        ..Outcome::default()
    };
    if let Some(p) = &prepared {
        let at = || Location::new(p.dir.display().to_string(), None);
        outcome.diagnostics.extend(
            p.notes
                .iter()
                .map(|n| Diagnostic::note(n.clone()).at(at()))
                .chain(
                    p.problems
                        .iter()
                        .map(|n| Diagnostic::warning(n.clone()).at(at())),
                ),
        );
    }
    outcome.observed_policies = observed(&gathered.table);
    let mut marker_changes = Vec::new();
    if let Some(automation) = config.suspended() {
        let what = automation.describe();
        outcome.diagnostics.push(Diagnostic::note(format!(
            "{what} is suspended: nothing updated"
        )));
        outcome.suspended = Some(what);
    } else {
        match input {
            Input::Tree(path) => {
                let keep = keep_in_scan.then_some(argocd::keep as crate::updater::tree::Keep);
                let mut late = argocd::Texts::default();
                for text in absorb_tree(config, path, &gathered.table, &mut outcome, keep)? {
                    late.add_walked(text);
                }
                marker_changes.clone_from(&outcome.changes);
                let late_catalog = match early_catalog {
                    Some(_) => None,
                    None => {
                        // The marker scan's walk read the tree's texts: a policy file among
                        // them is read as the tree's.
                        let read = match argo_base.as_deref() {
                            Some(base) if argo.has_named() => late.tree_ids(base),
                            _ => std::collections::HashSet::new(),
                        };
                        for origin in argo.named_among(&read) {
                            names.forget(&origin);
                        }
                        argocd::collect_except(config, &[&argo.files, &late.files], &names, &read)?
                    }
                };
                let catalog = early_catalog.as_ref().or(late_catalog.as_ref());
                if let (Some(catalog), Some(door)) = (catalog, &door) {
                    let mut targets = std::mem::take(&mut argo.targets);
                    targets.extend(std::mem::take(&mut late.targets));
                    argocd::plan_tree(
                        config,
                        catalog,
                        &gathered.table,
                        door,
                        targets,
                        &names,
                        &mut outcome,
                    )?;
                }
                crate::teardown::release(late_catalog);
                crate::teardown::release(late);
            }
            Input::ResourceList { text, layout, scan } => {
                check_item_paths(&config.update_path, &scan)?;
                let planned = plan::plan_edits(scan, &gathered.table, config.plan, |object| {
                    in_update_path(&config.update_path, object)
                });
                absorb_list(planned, &mut outcome, config.mode.writes());
                let late_catalog = match early_catalog {
                    Some(_) => None,
                    None => argocd::collect(config, &[&argo.files], &names)?,
                };
                let catalog = early_catalog.as_ref().or(late_catalog.as_ref());
                if let Some(catalog) = catalog {
                    // Only with Argo CD objects: a large list has many changes.
                    marker_changes.clone_from(&outcome.changes);
                    argocd::plan_list(
                        config,
                        catalog,
                        &gathered.table,
                        text,
                        layout,
                        &list_items,
                        std::mem::take(&mut argo.targets.known),
                        &names,
                        &mut outcome,
                    )?;
                }
                crate::teardown::release(late_catalog);
            }
        }
    }
    if outcome.suspended.is_none() {
        outcome
            .diagnostics
            .extend(unused_values(config, &gathered.table));
    }
    if let Some(message) = &config.message {
        outcome.diagnostics.extend(message.warnings());
    }
    if config.wants_provenance() {
        outcome.provenance = crate::provenance::gather(&outcome);
    }
    // The report only for what renders it: a large list has thousands of
    // changes, and the KRM function answers from the outcome.
    let report =
        (config.message.is_some() || config.outputs.report.is_some()).then(|| outcome.report());
    if let (Some(message), Some(report)) = (&config.message, &report)
        && !report.file_changes.is_empty()
    {
        let marker_report = Report::of(&Outcome {
            changes: marker_changes,
            ..Outcome::default()
        });
        let mut warnings = Vec::new();
        let argo =
            argocd::commit_message(config, message, &outcome, &marker_report, &mut warnings)?;
        outcome.diagnostics.extend(warnings);
        outcome.commit_message = Some(match argo {
            Some(m) => m,
            None => message.render(report)?,
        });
    }
    let rendered = render_outputs(config, report.as_ref(), &gathered.definitions, &outcome)?;
    let journal_dir = prepared.as_ref().map(|p| p.dir.as_path());
    if config.fail_on_warnings && outcome.warnings().next().is_some() {
        outcome.held_back = true;
        outcome.list_edits.clear();
        before_commit(&outcome)?;
        return Ok(outcome);
    }
    write(
        config,
        rendered,
        &mut outcome,
        door.as_ref(),
        journal_dir,
        before_commit,
    )?;
    drop(prepared);
    crate::teardown::release(early_catalog);
    crate::teardown::release((argo, documents, gathered.table, gathered.definitions));
    Ok(outcome)
}

#[cfg(feature = "job")]
/// The policies a run of `config` would apply, as far as they are known
/// without its input: the values, the ImagePolicies of the policy files
/// and, fetching, the results of the definitions in those files; in scope,
/// keyed `NAMESPACE:NAME` as in the report's `observedPolicies`. Nothing
/// is read from a tree and nothing is written.
///
/// The Job's short-circuit compares these with the last run's before it
/// clones anything; definitions that live only in the tree are not seen
/// here, so a run that used them never compares equal.
///
/// # Errors
/// As [`run`] for the policy files and fetching.
pub(crate) fn observe(
    config: &UpdateConfig,
) -> Result<std::collections::BTreeMap<crate::policies::PolicyKey, crate::policies::ImageRef>, Error>
{
    let mut early = Vec::new();
    let named =
        policies::read_policy_files(&config.policy_files, config.max_file_size, &mut early)?;
    let gathered = policies::gather(config, &named.documents, Vec::new())?;
    Ok(observed(&gathered.table))
}

#[cfg(feature = "job")]
/// Where the Argo CD Applications of the policy files write back to git,
/// known before any repository is cloned (the Job's repository and branch
/// when no flag names them). Standard input (`-`) is left for the run.
///
/// # Errors
/// Unreadable policy files; invalid Argo CD objects in them.
pub(crate) fn argocd_destinations(
    config: &UpdateConfig,
) -> Result<Vec<crate::argocd::plan::AppDestination>, Error> {
    let files: Vec<_> = config
        .policy_files
        .iter()
        .filter(|f| f.as_os_str() != "-")
        .cloned()
        .collect();
    let named = policies::read_policy_files(&files, config.max_file_size, &mut Vec::new())?;
    let mut argo = argocd::Texts::default();
    for file in named.argo {
        argo.add_policy(file);
    }
    let names = argocd::Names::list(config);
    Ok(argocd::collect_part(config, &[&argo.files], &names)?
        .map(|catalog| crate::argocd::plan::git_destinations(&catalog))
        .unwrap_or_default())
}

/// Every policy of `table` with a latest image, by key.
fn observed(
    table: &crate::policies::PolicyTable,
) -> std::collections::BTreeMap<crate::policies::PolicyKey, crate::policies::ImageRef> {
    table
        .observed()
        .map(|(k, l)| (k.clone(), l.clone()))
        .collect()
}

fn tree_error(e: tree::TreeError) -> Error {
    match e {
        tree::TreeError::Walk(w) => w.into(),
        tree::TreeError::Read(r) => r.into(),
        tree::TreeError::Lock(l) => l.into(),
    }
}

/// Whether a ResourceList item lies under the update path (items without a
/// path annotation do not, when there is a path).
fn in_update_path(base: &str, object: &ObjectInfo) -> bool {
    base.is_empty()
        || object
            .annotations
            .path
            .as_deref()
            .is_some_and(|p| is_under(base, p))
}

/// Whether the item path `item` lies under the normalised `base`. An item
/// path that is absolute or climbs out with `..` lies under nothing but the
/// empty base.
#[must_use]
pub(crate) fn is_under(base: &str, item: &str) -> bool {
    if base.is_empty() {
        return true;
    }
    let Some(item) = crate::automation::normalise_item_path(item) else {
        return false;
    };
    item == base
        || item
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// With a path limit, every item whose path annotation is absolute or
/// climbs out of the package is an error naming the item: what lies "under"
/// the limit cannot be decided for it.
fn check_item_paths(base: &str, scan: &Scan) -> Result<(), Error> {
    if base.is_empty() {
        return Ok(());
    }
    let errors: Vec<Diagnostic> = scan
        .objects
        .iter()
        .filter_map(|o| {
            let path = o.annotations.path.as_deref()?;
            if crate::automation::normalise_item_path(path).is_some() {
                return None;
            }
            let item = o.item.map_or_else(String::new, |i| format!("items[{i}] "));
            let id = &o.id;
            let mut d = Diagnostic::error(format!(
                "{item}{}/{} {}: path annotation {path:?} is absolute or climbs out of the package with `..`, so the path limit {base:?} cannot apply to it; nothing was edited",
                id.api_version, id.kind, id.name
            ))
            .at(Location::new(path.to_owned(), None));
            d.object = Some(id.clone());
            Some(d)
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(errors))
    }
}

/// The items of a ResourceList that may hold ImagePolicies, definitions or
/// the Secrets they name (screened by substring, then parsed); every Secret
/// only when `fetching` (a fetched definition may name any).
fn list_documents(
    text: &str,
    layout: &ListLayout,
    fetching: bool,
) -> Result<Vec<PolicyDocument>, Error> {
    let screen = if fetching {
        may_define_item
    } else {
        may_define
    };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, item) in layout.items.as_deref().unwrap_or(&[]).iter().enumerate() {
        if !text.get(item.range.clone()).is_some_and(screen) {
            continue;
        }
        match parse_node(text, item) {
            Ok(value) => {
                let origin = [
                    "internal.config.kubernetes.io/path",
                    "config.kubernetes.io/path",
                ]
                .iter()
                .find_map(|a| {
                    value
                        .get("metadata")
                        .and_then(|m| m.get("annotations"))
                        .and_then(|m| m.get(*a))
                        .and_then(serde_json::Value::as_str)
                })
                .map_or_else(|| format!("items[{i}]"), str::to_owned);
                out.push(PolicyDocument {
                    document: crate::yaml::Document::from_value(value),
                    origin,
                    positions: false,
                    dir: None,
                    supplies: true,
                });
            }
            Err(e) => errors.push(Diagnostic::error(format!("items[{i}]: {e}"))),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(Error::invalid(errors))
    }
}

/// Plan the tree at `path` (under the update path, through
/// `updater::tree::plan_tree`) and absorb the plan into `outcome`: its
/// changes, its warnings, its files and counts.
fn absorb_tree(
    config: &UpdateConfig,
    path: &Path,
    table: &crate::policies::PolicyTable,
    outcome: &mut Outcome,
    keep: Option<crate::updater::tree::Keep>,
) -> Result<Vec<crate::updater::tree::KeptText>, Error> {
    let root = if config.update_path.is_empty() {
        path.to_path_buf()
    } else {
        path.join(&config.update_path)
    };
    if !root.exists() {
        return Err(Error::invalid(vec![
            Diagnostic::error(format!(
                "the update path {} does not exist",
                config.update_path
            ))
            .at(Location::new(root.display().to_string(), None)),
        ]));
    }
    let tree = tree::plan_tree(
        &root,
        table,
        tree::TreeOptions {
            plan: config.plan,
            keep_old: config.outputs.keep_old_text,
            max_file_size: config.max_file_size,
            keep,
        },
    )
    .map_err(tree_error)?;
    let cwd = std::env::current_dir().ok();
    let tree_root = TreeRoot::new(root.clone(), root.is_file(), cwd.as_deref());
    let mut warnings = Vec::new();
    for (rel, file) in tree.files {
        let display = tree_root.display(&rel);
        match file {
            FileOutcome::Skipped { position, message } => {
                warnings.push(Diagnostic::warning(message).at(Location::in_tree(
                    rel,
                    display,
                    Some(position),
                )));
            }
            FileOutcome::Planned {
                planned,
                update,
                refused,
            } => {
                warnings.extend(planned_warnings(
                    &planned,
                    |_| Location::in_tree(rel.clone(), display.clone(), None),
                    true,
                ));
                for c in &planned.changes {
                    outcome
                        .changes
                        .push(change(&rel, &display, &planned, c, None));
                }
                if let Some(why) = refused {
                    let first = crate::text::Position { line: 1, column: 1 };
                    warnings.push(Diagnostic::warning(why).at(Location::in_tree(
                        rel,
                        display,
                        Some(first),
                    )));
                }
                outcome.files.extend(update);
            }
        }
    }
    warnings.sort_by(|a, b| (&a.location, &a.message).cmp(&(&b.location, &b.message)));
    outcome.diagnostics.extend(warnings);
    outcome.stats = Stats {
        files_read: tree.files_read,
        files_screened: tree.files_screened,
        skipped: tree.skipped,
    };
    outcome.root = Some(tree_root);
    Ok(tree.kept)
}

/// A warning for each policy value (`--policy`, the Action's `policy`
/// input, a functionConfig's) whose key no marker and no Argo CD
/// Application asked for, once per key, with the nearest key one did ask
/// for as a hint: a misspelt key would otherwise change nothing, silently.
fn unused_values(config: &UpdateConfig, table: &PolicyTable) -> Vec<Diagnostic> {
    let keys: Vec<&PolicyKey> = config.values.iter().map(|v| &v.key).collect();
    table
        .unasked(&keys)
        .into_iter()
        .filter_map(|(key, near)| {
            let value = config.values.iter().find(|v| &v.key == key)?;
            let d = Diagnostic::warning(format!(
                "policy {key} ({}) is used by no marker or Argo CD Application, so it changes nothing",
                value.source
            ));
            Some(match near {
                Some(near) => d.with_hint(format!("did you mean {near}? (a marker or Application names it)")),
                None => d,
            })
        })
        .collect()
}

/// The warnings of one planned text as diagnostics; `location` gives each
/// object's location (its file), and `with_position` whether the planned
/// text's positions are the file's.
fn planned_warnings(
    planned: &Planned,
    location: impl Fn(Option<&ObjectInfo>) -> Location,
    with_position: bool,
) -> Vec<Diagnostic> {
    planned
        .warnings
        .iter()
        .map(|w| {
            let object = w.object.and_then(|i| planned.objects.get(i));
            let mut at = location(object);
            if with_position {
                at.position = Some(w.position);
            }
            let mut d = Diagnostic::warning(w.message.clone()).at(at);
            d.hint.clone_from(&w.hint);
            d.object = object.map(|o| o.id.clone());
            d.field.clone_from(&w.field_path);
            d
        })
        .collect()
}

fn change(
    file: &str,
    display: &str,
    planned: &Planned,
    c: &plan::PlannedChange,
    index: Option<String>,
) -> Change {
    Change {
        file: file.to_owned(),
        display: display.to_owned(),
        object: planned
            .objects
            .get(c.object)
            .map(|o| o.id.clone())
            .unwrap_or_default(),
        object_index: c.object,
        index,
        field_path: c.field_path.clone(),
        old_value: c.old_value.clone(),
        new_value: c.new_value.clone(),
        setter: c.setter.clone(),
        position: c.position,
    }
}

/// The changes, their edits (when `keep_edits`) and the warnings of a
/// planned ResourceList: files are the items' path annotations; there are
/// no line numbers a user could use. What was planned moves into the
/// outcome: a large list has thousands of changes.
fn absorb_list(mut planned: Planned, outcome: &mut Outcome, keep_edits: bool) {
    let annotations = |object: Option<&ObjectInfo>| {
        let path = object
            .and_then(|o| o.annotations.path.clone())
            .unwrap_or_default();
        let mut at = Location::new(path.clone(), None);
        at.tree_path = Some(path).filter(|p| !p.is_empty());
        at.index = object.and_then(|o| o.annotations.index.clone());
        at
    };
    outcome
        .diagnostics
        .extend(planned_warnings(&planned, annotations, false));
    outcome.changes.reserve_exact(planned.changes.len());
    for c in std::mem::take(&mut planned.changes) {
        let object = planned.objects.get(c.object);
        let at = annotations(object);
        if keep_edits {
            outcome.list_edits.push(c.edit);
        }
        outcome.changes.push(Change {
            display: at.path.clone(),
            file: at.path,
            object: object.map(|o| o.id.clone()).unwrap_or_default(),
            object_index: c.object,
            index: at.index,
            field_path: c.field_path,
            old_value: c.old_value,
            new_value: c.new_value,
            setter: c.setter,
            position: c.position,
        });
    }
}

/// An output file's path and text.
struct Rendered {
    what: &'static str,
    path: PathBuf,
    text: String,
}

fn render_outputs(
    config: &UpdateConfig,
    report: Option<&Report>,
    definitions: &[crate::reflector::Definition],
    outcome: &Outcome,
) -> Result<Vec<Rendered>, Error> {
    let mut out = Vec::new();
    if let Some(path) = &config.outputs.emit_policies {
        let text = emit::render(definitions, &outcome.fetched)
            .map_err(|e| Error::Internal(format!("rendering the emitted policies: {e}")))?;
        out.push(Rendered {
            what: "--emit-policies",
            path: path.clone(),
            text,
        });
    }
    if let Some(path) = &config.outputs.commit_message {
        out.push(Rendered {
            what: "--commit-message-file",
            path: path.clone(),
            text: outcome.commit_message.clone().unwrap_or_default(),
        });
    }
    if let (Some((path, format)), Some(report)) = (&config.outputs.report, report) {
        let text = report
            .render(*format)
            .map_err(|e| Error::Internal(format!("rendering the report: {e}")))?;
        out.push(Rendered {
            what: "--report",
            path: path.clone(),
            text,
        });
    }
    Ok(out)
}

/// Write the changed files (when the mode writes) and the output files as
/// one all-or-nothing commit (`sink::dir`): on an error nothing was
/// written. The tree's files go through `door` (in place) or the output
/// directory's own door. Outputs for stdout go into the outcome. An
/// in-place commit keeps its journal in `journal_dir` (the locked tree);
/// one under `--output-dir` in that directory.
fn write(
    config: &UpdateConfig,
    rendered: Vec<Rendered>,
    outcome: &mut Outcome,
    door: Option<&Door>,
    journal_dir: Option<&Path>,
    before_commit: BeforeCommit<'_>,
) -> Result<(), Error> {
    let stdout = Path::new("-");
    // An output goes into an existing directory: a typo in its path is an
    // error, not a new directory.
    let missing: Vec<Diagnostic> = rendered
        .iter()
        .filter(|r| r.path != stdout)
        .filter_map(|r| {
            let dir = r.path.parent().filter(|d| !d.as_os_str().is_empty())?;
            (!dir.is_dir()).then(|| {
                Diagnostic::error(format!("the directory of {} does not exist", r.what))
                    .at(Location::new(dir.display().to_string(), None))
            })
        })
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid(missing));
    }
    let extra: Vec<FileWrite<'_>> = rendered
        .iter()
        .filter(|r| r.path != stdout)
        .map(|r| FileWrite {
            target: &r.path,
            bytes: r.text.as_bytes(),
            permissions_from: None,
            door: None,
        })
        .collect();
    let placement = match &config.outputs.output_dir {
        Some(dir) => Placement::Under(dir.clone()),
        None => Placement::InPlace,
    };
    let updates = if config.mode.writes() {
        outcome.files.as_slice()
    } else {
        &[]
    };
    let output_door = match &placement {
        Placement::Under(dir) if !updates.is_empty() => Some(Door::new(dir).map_err(|e| {
            Error::invalid(vec![
                Diagnostic::error(format!("cannot resolve the output directory: {e}"))
                    .at(Location::new(dir.display().to_string(), None)),
            ])
        })?),
        _ => None,
    };
    let door = match (&output_door, door) {
        (Some(out), _) => Some(out),
        (None, tree) => tree,
    };
    if !updates.is_empty() && door.is_none() {
        return Err(Error::Internal(
            "files of a tree to write without the tree's door".to_owned(),
        ));
    }
    let journal_dir = match &placement {
        _ if updates.is_empty() => None,
        Placement::Under(dir) => Some(dir.as_path()),
        Placement::InPlace => journal_dir,
    };
    outcome.stdout = rendered
        .iter()
        .filter(|r| r.path == stdout)
        .map(|r| StdoutOutput {
            what: r.what,
            text: r.text.clone(),
        })
        .collect();
    let done: &Outcome = outcome;
    // The front end's own error, kept here (the sink only needs to know
    // that the step failed).
    let mut failed = None;
    let mut before_rename = || {
        before_commit(done).map_err(|e| {
            failed = Some(e);
            sink::dir::BoxError::from("the outputs asked for on stdout could not be written")
        })
    };
    let written = match door {
        Some(door) => tree::write_updates(
            updates,
            &placement,
            door,
            &extra,
            journal_dir,
            &mut before_rename,
        ),
        None => sink::dir::write_all_then(&extra, journal_dir, &mut before_rename).map(|_| ()),
    };
    if let Some(e) = failed {
        return Err(Error::failed("nothing was written", e));
    }
    written?;
    Ok(())
}
