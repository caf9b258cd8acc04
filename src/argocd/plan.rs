//! Plan every Application's write-back: given the chosen image of each policy key, the edits of
//! every file (spans of the original bytes, or whole new files) and the changes they make.
//!
//! Pure apart from reading the target files through [`Files`]: nothing is written here. The
//! operation hands [`FilePlan::new_text`] to the all-or-nothing sink, and
//! [`FilePlan::changes`] to the report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use image_update_template::argocd::{
    AppChange, BranchData, BranchImage, CommitData, render_branch,
};
use sha2::{Digest, Sha256};

use super::application::{AppId, SourceForm, SourceType};
use super::catalog::Catalog;
use super::config::{AppConfig, ConfigOrigin, ImageSpec};
use super::settings::{GitCredentials, Located, Method};
use super::target::{self, Exists, KUSTOMIZATION_FILES, Target};
use super::writers::{self, OverrideKind, Part, Planned, Problem, Record, Writer};
use crate::argo_image::ImageTag;
use crate::diagnostic::{Diagnostic, Location};
use crate::input::SizeLimit;
use crate::object::ObjectId;
use crate::outcome::AppPullRequest;
use crate::policies::{ImageRef, PolicyKey};
use crate::sink::door::{Door, Refusal};
use crate::text::{LineIndex, Position};
use crate::yaml::edit::{self, Edit};
use crate::yaml::edit::{Editor, Handle};
use crate::yaml::tree::Tree;

/// Reads the files of the tree being updated (paths relative to its root, `/` separators).
pub trait Files: Exists + Sync {
    /// The file's text; `None` when there is no such file.
    ///
    /// # Errors
    /// The file exists but cannot be read (a message naming it).
    fn read(&self, path: &str) -> Result<Option<String>, String>;
}

/// Files in memory (tests, benchmarks, fuzzing, a ResourceList).
#[derive(Debug, Clone, Default)]
pub struct MemoryFiles(pub BTreeMap<String, String>);

impl Exists for MemoryFiles {
    fn exists(&self, path: &str) -> bool {
        self.0.contains_key(path)
    }
}

impl Files for MemoryFiles {
    fn read(&self, path: &str) -> Result<Option<String>, String> {
        Ok(self.0.get(path).cloned())
    }
}

/// Files under a directory, read through its door ([`crate::sink::door`]): a file that resolves
/// outside it (through a symlink, of the file or of a directory on its way), or that is not a
/// regular file, is refused; reads are bounded.
#[derive(Debug)]
pub struct DirFiles<'a> {
    door: DoorRef<'a>,
    limit: SizeLimit,
}

/// A door owned, or the run's own.
#[derive(Debug)]
enum DoorRef<'a> {
    Owned(Door),
    Borrowed(&'a Door),
}

impl DirFiles<'static> {
    /// The files under `root`, each read up to `limit` bytes.
    ///
    /// # Errors
    /// `root` cannot be resolved.
    pub fn new(root: &Path, limit: SizeLimit) -> std::io::Result<Self> {
        Ok(Self {
            door: DoorRef::Owned(Door::new(root)?),
            limit,
        })
    }
}

impl<'a> DirFiles<'a> {
    /// The files behind `door`, each read up to `limit` bytes.
    #[must_use]
    pub(crate) fn through(door: &'a Door, limit: SizeLimit) -> Self {
        Self {
            door: DoorRef::Borrowed(door),
            limit,
        }
    }

    fn door(&self) -> &Door {
        match &self.door {
            DoorRef::Owned(d) => d,
            DoorRef::Borrowed(d) => d,
        }
    }

    /// Whether `path` may be read and written (inside the tree, a regular file or absent).
    fn check(&self, path: &str) -> Result<(), String> {
        self.door()
            .resolve(path)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

impl Exists for DirFiles<'_> {
    /// Whether something is there: a regular file, or something the door refuses (a link out of
    /// the tree, a FIFO), which reading then names, instead of being told it is missing.
    fn exists(&self, path: &str) -> bool {
        match self.door().resolve(path) {
            Ok(r) => r.exists,
            Err(Refusal::Name { .. }) => false,
            Err(_) => true,
        }
    }
}

impl Files for DirFiles<'_> {
    fn read(&self, path: &str) -> Result<Option<String>, String> {
        self.door()
            .read(path, self.limit)
            .map_err(|e| e.to_string())
    }
}

/// Files some of which are already in memory (read by the tree walk), the others read from the
/// directory.
#[derive(Debug)]
pub struct KnownFiles<'a> {
    known: HashMap<String, String>,
    /// The known paths the walk read as regular files; any other (a symlink) is checked by the
    /// door before its text is used.
    regular: HashSet<String>,
    dir: DirFiles<'a>,
}

impl<'a> KnownFiles<'a> {
    /// `known` maps paths (relative to the tree, `/` separators) to their text; `regular` holds
    /// those the walk saw as regular files (not symlinks).
    #[must_use]
    pub fn new(
        known: HashMap<String, String>,
        regular: HashSet<String>,
        dir: DirFiles<'a>,
    ) -> Self {
        Self {
            known,
            regular,
            dir,
        }
    }
}

impl Exists for KnownFiles<'_> {
    fn exists(&self, path: &str) -> bool {
        match self.known.get(path) {
            Some(_) if self.regular.contains(path) => true,
            _ => self.dir.exists(path),
        }
    }
}

impl Files for KnownFiles<'_> {
    fn read(&self, path: &str) -> Result<Option<String>, String> {
        match self.known.get(path) {
            Some(text) => {
                if !self.regular.contains(path) {
                    self.dir.check(path)?;
                }
                Ok(Some(text.clone()))
            }
            None => self.dir.read(path),
        }
    }
}

/// Whether a file's name makes it a likely write-back target (an override file, a kustomization,
/// a Helm values file): a tree walk that reads every file can keep these for [`KnownFiles`].
#[must_use]
pub fn likely_target(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with(".argocd-source")
        || KUSTOMIZATION_FILES.contains(&name)
        || name.contains("values")
}

/// One changed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    /// The object edited (the Application for the `argocd` method; the kustomization's identity; an
    /// empty identity for override and values files).
    pub object: ObjectId,
    /// `kustomize.images[0]`, `helm.parameters[2].value`, `images[1].newTag`, `["image.tag"]`,
    /// `spec.source.kustomize.images[0]`.
    pub field_path: String,
    pub old_value: String,
    pub new_value: String,
    /// The policy key of the image: `NAMESPACE:APP/ALIAS` (KubeSphere `NAMESPACE:ALIAS`);
    /// `NAMESPACE:APP` for a value copied from the Application that no image owns.
    pub key: PolicyKey,
    pub app: AppId,
    /// The image's alias (`""` for none, or for an unowned value).
    pub alias: String,
    /// Where the new value is in the new text.
    pub position: Position,
}

/// The planned content of one file.
#[derive(Debug, Clone)]
pub struct FilePlan {
    /// Relative to the tree's root.
    pub path: String,
    /// The file does not exist yet.
    pub created: bool,
    /// Its edits against the original text (for a new file, one insertion into `""`).
    pub edits: Vec<Edit>,
    /// The original text (`""` for a new file).
    pub old_text: String,
    pub new_text: String,
    /// In the order of the new text.
    pub changes: Vec<FieldChange>,
}

/// One image that changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUpdate {
    pub key: PolicyKey,
    pub alias: String,
    /// The image's name as written in the Application's configuration (with its registry).
    pub image: String,
    pub old: Option<ImageTag>,
    pub new: ImageTag,
}

/// Where an Application's git write-back goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitPlan {
    /// `git-repository` / `gitConfig.repository`, else the source's `repoURL`.
    pub repository: String,
    /// The branch to check out; `None` for the remote's default branch.
    pub checkout: Option<String>,
    /// The branch to push when it is not the checkout branch (the rendered `base:write` template,
    /// or the pull-request branch).
    pub push: Option<String>,
    pub credentials: GitCredentials,
    /// 8 hex digits of SHA-256 over `repository|branch|target`.
    pub target_key: String,
    /// `gitConfig.pullRequest`: the Job proposes the change set's head branch (`push`) as a
    /// request into the base branch.
    pub pull_request: Option<AppPullRequest>,
}

/// What one Application's write-back does.
#[derive(Debug, Clone)]
pub struct AppPlan {
    pub app: AppId,
    pub origin: ConfigOrigin,
    pub method: Method,
    pub target: Target,
    /// The images that change (empty: nothing to do).
    pub images: Vec<ImageUpdate>,
    /// The commit message's data (`.AppName`, `.AppChanges`).
    pub commit: CommitData,
    /// For the git method.
    pub git: Option<GitPlan>,
}

/// Every file's plan and every Application's.
#[derive(Debug, Clone, Default)]
pub struct WriteBack {
    /// Files with at least one change, by path.
    pub files: Vec<FilePlan>,
    /// Applications with at least one changing image, by id.
    pub apps: Vec<AppPlan>,
    /// Warnings and notes.
    pub diagnostics: Vec<Diagnostic>,
}

/// An Application's resolved write-back, before its images are planned.
struct Work<'c> {
    config: &'c AppConfig,
    method: Method,
    target: Target,
    target_location: Location,
    source: usize,
    kind: Option<OverrideKind>,
    /// The file edited (relative to the tree).
    path: String,
    planned: Vec<Planned<'c>>,
}

struct FileState<'t, 'a> {
    editor: Editor<'t, 'a>,
    created: bool,
    original: &'a str,
    object: ObjectId,
    records: Vec<(ObjectId, AppId, Record)>,
    origin: String,
}

/// Plan the write-back of every configured Application in `catalog`: `chosen` gives the image each
/// policy key moved to (`None`: no result, the image is left alone with a warning), `files` reads
/// the target files.
///
/// # Errors
/// Every problem found, each at its file, line and column: an unknown method, a target outside the
/// repository, the `argocd` method for an Application that is not in the tree, a missing
/// kustomization, a Helm value path through a scalar, a target file that is not valid YAML...
/// Nothing is planned when there is one.
pub fn plan(
    catalog: &Catalog<'_>,
    chosen: &(dyn Fn(&PolicyKey) -> Option<ImageRef> + Sync),
    files: &dyn Files,
) -> Result<WriteBack, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut works = Vec::new();
    // Each configuration's method, target and images, resolved on every core (the source types
    // ask the file system which files exist).
    let threads = crate::pool::cores();
    let resolved = crate::pool::map(&catalog.configs, threads, |config| {
        let mut found = Vec::new();
        let r = resolve(catalog, config, chosen, files, &mut found);
        (r, found)
    });
    for (r, mut found) in resolved {
        warnings.append(&mut found);
        match r {
            Ok(Some(w)) => works.push(w),
            Ok(None) => {}
            Err(mut e) => errors.append(&mut e),
        }
    }
    // The Applications' own files, by tree path (the `argocd` method edits them).
    let in_tree: std::collections::HashMap<&str, usize> = catalog
        .files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.tree_path.as_deref().map(|p| (p, i)))
        .collect();
    let (mut out_files, mut apps, mut file_errors) =
        plan_files(catalog, files, &in_tree, &works, threads);
    // A Job (a git scope) pushes one commit to one branch: when the Applications that changed
    // push to different branches (one to its base branch, one to a pull request's head), this
    // run writes back those of the first branch (the base branch first, then by name) and
    // leaves the others for the next run, with a warning, so that every run makes progress.
    if errors.is_empty()
        && file_errors.is_empty()
        && catalog
            .options
            .git_scope
            .as_ref()
            .is_some_and(|s| s.own_branches)
        && let Some((keep, left)) = first_push_branch(&apps)
    {
        warnings.extend(left.iter().map(|(a, branch)| {
            let config = works.iter().find(|w| catalog.apps[w.config.app].id == a.app);
            let at = config.map(|w| w.config.location.clone());
            let warning = Diagnostic::warning(format!(
                "Application {} pushes to {}, and the Applications written back in this run to {}; one run pushes one branch, so it is left for the next run",
                a.app,
                branch_name(branch.as_deref()),
                branch_name(keep.as_deref()),
            ));
            match at {
                Some(at) => warning.at(at),
                None => warning,
            }
        }));
        let left: Vec<AppId> = left.into_iter().map(|(a, _)| a.app.clone()).collect();
        let works: Vec<Work<'_>> = works
            .into_iter()
            .filter(|w| !left.contains(&catalog.apps[w.config.app].id))
            .collect();
        (out_files, apps, file_errors) = plan_files(catalog, files, &in_tree, &works, threads);
    }
    errors.append(&mut file_errors);
    if !errors.is_empty() {
        errors.extend(warnings);
        errors.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        return Err(errors);
    }
    warnings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    apps.sort_by(|a: &AppPlan, b| a.app.cmp(&b.app));
    Ok(WriteBack {
        files: out_files,
        apps,
        diagnostics: warnings,
    })
}

/// The files' plans, the Applications' plans and the problems found, for `works`.
fn plan_files(
    catalog: &Catalog<'_>,
    files: &dyn Files,
    in_tree: &std::collections::HashMap<&str, usize>,
    works: &[Work<'_>],
    threads: usize,
) -> (Vec<FilePlan>, Vec<AppPlan>, Vec<Diagnostic>) {
    // Each target file, with the Applications written to it in order.
    let mut groups: BTreeMap<&str, (&Location, Vec<&Work<'_>>)> = BTreeMap::new();
    for w in works {
        groups
            .entry(w.path.as_str())
            .or_insert_with(|| (&w.target_location, Vec::new()))
            .1
            .push(w);
    }
    // Files are independent: each is read, parsed and planned on every core in one go, and its
    // tree freed once its plan is made (the next file's parse reuses the memory).
    let planned = crate::pool::map(groups, threads, |(path, (at, ws))| {
        plan_file(catalog, files, in_tree, path, at, &ws)
    });
    let mut apps = Vec::new();
    let mut out_files = Vec::new();
    let mut errors = Vec::new();
    for (file, mut a, mut e) in planned {
        out_files.extend(file);
        apps.append(&mut a);
        errors.append(&mut e);
    }
    (out_files, apps, errors)
}

/// An Application left for the next run, and the branch it pushes to (`None`: its base branch).
type LeftApp<'a> = (&'a AppPlan, Option<String>);

/// When the Applications of `apps` that changed and write back to git push to more than one
/// branch: the branch this run pushes (`None`: the base branch, chosen first; else the first by
/// name), and the Applications left, each with its branch.
fn first_push_branch(apps: &[AppPlan]) -> Option<(Option<String>, Vec<LeftApp<'_>>)> {
    let changed: Vec<LeftApp<'_>> = apps
        .iter()
        .filter(|a| !a.images.is_empty())
        .filter_map(|a| a.git.as_ref().map(|g| (a, g.push.clone())))
        .collect();
    let branches: std::collections::BTreeSet<&Option<String>> =
        changed.iter().map(|(_, b)| b).collect();
    if branches.len() < 2 {
        return None;
    }
    // `None` sorts first: the base branch.
    let keep = branches.into_iter().next().cloned().flatten();
    let left = changed.into_iter().filter(|(_, b)| *b != keep).collect();
    Some((keep, left))
}

fn branch_name(branch: Option<&str>) -> String {
    branch.map_or_else(|| "its base branch".to_owned(), |b| format!("branch {b}"))
}

/// Read, parse and plan one target file for the Applications written to it (`at`: where the first
/// names it): its plan (`None` when its text does not change), the Applications' plans, and the
/// problems found.
fn plan_file(
    catalog: &Catalog<'_>,
    files: &dyn Files,
    in_tree: &std::collections::HashMap<&str, usize>,
    path: &str,
    at: &Location,
    ws: &[&Work<'_>],
) -> (Option<FilePlan>, Vec<AppPlan>, Vec<Diagnostic>) {
    let text: String;
    let parsed: Tree<'_>;
    let (tree, created, origin) = if let Some(&i) = in_tree.get(path) {
        let file = &catalog.files[i];
        (&file.tree, false, file.origin.clone())
    } else {
        let created;
        (text, created) = match files.read(path) {
            Ok(Some(t)) => (t, false),
            Ok(None) => (String::new(), true),
            Err(e) => return (None, Vec::new(), vec![Diagnostic::error(e).at(at.clone())]),
        };
        parsed = match Tree::parse(&text) {
            Ok(tree) => tree,
            Err(e) => {
                let error = Diagnostic::error(format!("not valid YAML: {}", e.message))
                    .at(Location::new(path.to_owned(), e.position));
                return (None, Vec::new(), vec![error]);
            }
        };
        (&parsed, created, path.to_owned())
    };
    let mut state = FileState {
        object: file_object(tree),
        editor: Editor::new(tree),
        created,
        original: tree.text(),
        records: Vec::new(),
        origin,
    };
    let mut apps = Vec::new();
    let mut errors = Vec::new();
    for w in ws {
        match write(catalog, w, &mut state) {
            Ok(Some(plan)) => apps.push(plan),
            Ok(None) => {}
            Err(d) => errors.push(d),
        }
    }
    let file = if errors.is_empty() {
        finish_file(path.to_owned(), &state).unwrap_or_else(|e| {
            errors.push(e);
            None
        })
    } else {
        None
    };
    (file, apps, errors)
}

/// A file's edits, new text and changes (`None` when its text does not change).
fn finish_file(path: String, state: &FileState<'_, '_>) -> Result<Option<FilePlan>, Diagnostic> {
    if state.editor.is_empty() {
        return Ok(None);
    }
    let finished = state.editor.finish().map_err(|e| {
        Diagnostic::error(e.message).at(Location::new(
            state.origin.clone(),
            Some(crate::text::position_of(state.original, e.offset)),
        ))
    })?;
    let mut edits = finished.edits.clone();
    let new_text = edit::apply(state.original, &mut edits)
        .map_err(|e| Diagnostic::error(format!("internal error planning {path}: {e}")))?;
    if new_text == state.original {
        return Ok(None);
    }
    let lines = LineIndex::new(&new_text);
    let mut places = ItemPlaces::default();
    let mut changes: Vec<FieldChange> = state
        .records
        .iter()
        .map(|(object, app, r)| FieldChange {
            object: object.clone(),
            field_path: field_path(&state.editor, &mut places, &r.path),
            old_value: r.old.clone(),
            new_value: r.new.clone(),
            key: r.key.clone(),
            app: app.clone(),
            alias: r.alias.clone(),
            position: finished
                .offsets
                .get(r.tracked)
                .copied()
                .flatten()
                .map_or_else(Position::default, |o| lines.position(&new_text, o)),
        })
        .collect();
    changes.sort_by_key(|c| c.position);
    Ok(Some(FilePlan {
        path,
        created: state.created,
        edits,
        old_text: state.original.to_owned(),
        new_text,
        changes,
    }))
}

/// Method, target, source and images of one configured Application.
fn resolve<'c>(
    catalog: &'c Catalog<'_>,
    config: &'c AppConfig,
    chosen: &(dyn Fn(&PolicyKey) -> Option<ImageRef> + Sync),
    files: &dyn Files,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Work<'c>>, Vec<Diagnostic>> {
    let app = &catalog.apps[config.app];
    let file = catalog.file_of(app);
    let (method, method_location) = match &config.write_back.method {
        Some(m) => (
            Method::parse(&m.value, config.kubesphere())
                .map_err(|e| vec![Diagnostic::error(e).at(m.location.clone())])?,
            m.location.clone(),
        ),
        None => (Method::Application, config.location.clone()),
    };
    if let Some(b) = &config.write_back.branch {
        check_branch(b, &app.id).map_err(|e| vec![e])?;
    }
    // Target paths are relative to the source chosen without a target (Argo reads it so).
    let (first, _) = target::choose_source(app, &Target::Application, files);
    let first_source = &app.sources[first];
    let source_location = file.location(
        file.tree
            .at(first_source.node, &["path"])
            .unwrap_or(first_source.node),
    );
    let target = target::resolve(
        &method,
        config.write_back.target.as_ref(),
        app,
        &first_source.path,
        &source_location,
        &catalog.options.controller_namespace,
    )
    .map_err(|e| vec![e])?;
    let target_location = config
        .write_back
        .target
        .as_ref()
        .map_or_else(|| method_location.clone(), |t| t.location.clone());
    let (source, stype) = target::choose_source(app, &target, files);
    let is_git = matches!(method, Method::Git(_));
    if let (true, Some(scope)) = (is_git, &catalog.options.git_scope) {
        let to = git_destination(config, app, &app.sources[source]).map_err(|e| vec![e])?;
        if !scope.admits(&to.repository, to.checkout.as_deref()) {
            warnings.push(left_alone(
                config,
                app,
                file,
                &app.sources[source],
                &to,
                scope,
                &method_location,
            ));
            return Ok(None);
        }
    }
    let plugin_targets = config.images.iter().any(|i| i.target.is_plugin());
    let kind = match stype {
        SourceType::Kustomize => Some(OverrideKind::Kustomize),
        SourceType::Helm => Some(OverrideKind::Helm),
        SourceType::Plugin if plugin_targets => Some(OverrideKind::Plugin),
        // Argo CD Image Updater writes Helm parameters for a plugin source written back to git.
        SourceType::Plugin if is_git => Some(OverrideKind::Helm),
        SourceType::Plugin => Some(OverrideKind::Plugin),
        SourceType::Directory => None,
    };
    if kind.is_none() && matches!(target, Target::Application | Target::OverrideFile(_)) {
        warnings.push(
            Diagnostic::warning(format!(
                "Application {} renders a plain directory, which Argo CD Image Updater does not update; it is left alone",
                app.id
            ))
            .at(config.location.clone())
            .with_hint("mark the image fields of its manifests with $imagepolicy markers, or set a kustomization: or helmvalues: write-back target"),
        );
        return Ok(None);
    }
    let path = write_back_path(
        catalog,
        config,
        &target,
        files,
        &method_location,
        &target_location,
    )?;
    let planned = planned_images(catalog, config, chosen, warnings);
    if planned.is_empty() {
        return Ok(None);
    }
    Ok(Some(Work {
        config,
        method,
        target,
        target_location,
        source,
        kind,
        path,
        planned,
    }))
}

/// The file of the write-back `target` of one configured Application (its manifest for the
/// argocd method, the override or values file, the kustomization of a directory).
fn write_back_path(
    catalog: &Catalog<'_>,
    config: &AppConfig,
    target: &Target,
    files: &dyn Files,
    method_location: &Location,
    target_location: &Location,
) -> Result<String, Vec<Diagnostic>> {
    let app = &catalog.apps[config.app];
    let file = catalog.file_of(app);
    match target {
        Target::Application => {
            if app.form == SourceForm::Hydrator {
                return Err(vec![
                    Diagnostic::error(format!(
                        "Application {} takes its source from spec.sourceHydrator, which the argocd write-back method cannot patch in git",
                        app.id
                    ))
                    .at(method_location.clone())
                    .with_hint("use write-back-method: git"),
                ]);
            }
            match &file.tree_path {
                Some(p) => Ok(p.clone()),
                None => {
                    Err(vec![
                        Diagnostic::error(format!(
                            "Application {} uses the {} write-back method, which patches the Application itself, but its manifest ({}) is not in the tree being updated",
                            app.id,
                            if config.kubesphere() { "built-in" } else { "argocd" },
                            file.origin
                        ))
                        .at(method_location.clone())
                        .with_hint(if config.kubesphere() {
                            "write the change to git instead: set spec.argocd.write: git"
                        } else {
                            "write the change to git instead: argocd-image-updater.argoproj.io/write-back-method: git (or writeBackConfig.method: git)"
                        }),
                    ])
                }
            }
        }
        Target::OverrideFile(p) | Target::HelmValues(p) => Ok(p.clone()),
        Target::Kustomization(dir) => {
            let at = |f: &str| {
                if dir == "." {
                    f.to_owned()
                } else {
                    format!("{dir}/{f}")
                }
            };
            match KUSTOMIZATION_FILES
                .iter()
                .map(|f| at(f))
                .find(|p| files.exists(p))
            {
                Some(p) => Ok(p),
                None => {
                    Err(vec![
                        Diagnostic::error(format!(
                            "no kustomization (kustomization.yaml, kustomization.yml or Kustomization) in {dir}, the write-back target of Application {}",
                            app.id
                        ))
                        .at(target_location.clone()),
                    ])
                }
            }
        }
    }
}

/// The images of one configured Application that have a chosen result (`chosen`), with their new
/// references; a warning for each that has none.
fn planned_images<'c>(
    catalog: &Catalog<'_>,
    config: &'c AppConfig,
    chosen: &(dyn Fn(&PolicyKey) -> Option<ImageRef> + Sync),
    warnings: &mut Vec<Diagnostic>,
) -> Vec<Planned<'c>> {
    let app = &catalog.apps[config.app];
    let mut planned = Vec::new();
    // An image that must be signed is written back only with a fetched result, which the gate
    // checked (`catalog::collect` warned about the others).
    let verified = |i: &&ImageSpec| i.verify.is_none() || catalog.options.fetching;
    for spec in config.images.iter().filter(verified) {
        let key = catalog.key_of(config, spec);
        let Some(image) = chosen(&key) else {
            warnings.push(
                Diagnostic::warning(format!(
                    "no policy {key} was supplied, so image {:?} of Application {} is left alone",
                    spec.key_alias(),
                    app.id
                ))
                .at(spec.location.clone()),
            );
            continue;
        };
        planned.push(Planned {
            spec,
            new: spec.image.with_tag(Some(ImageTag {
                name: image.tag.clone(),
                digest: image.digest.clone(),
            })),
            key,
        });
    }
    planned
}

/// Plan one Application's edits in its file.
fn write(
    catalog: &Catalog<'_>,
    w: &Work<'_>,
    state: &mut FileState<'_, '_>,
) -> Result<Option<AppPlan>, Diagnostic> {
    let app = &catalog.apps[w.config.app];
    let source = &app.sources[w.source];
    let all: Vec<&ImageSpec> = w.config.images.iter().collect();
    let mut records = Vec::new();
    let mut writer = Writer {
        editor: &mut state.editor,
        records: &mut records,
        app_key: PolicyKey {
            namespace: app.id.namespace.clone(),
            name: app.id.name.clone(),
        },
    };
    let kind = w.kind.unwrap_or(OverrideKind::Helm);
    let result = match &w.target {
        Target::Application => writers::application(&mut writer, source, kind, &w.planned),
        Target::OverrideFile(_) => {
            writers::override_file(&mut writer, kind, source, &all, &w.planned)
        }
        Target::Kustomization(_) => writers::kustomization(&mut writer, source, &w.planned),
        Target::HelmValues(_) => writers::helm_values(&mut writer, &w.planned),
    };
    let moved = result.map_err(|p: Problem| {
        let position = p
            .offset
            .map(|o| crate::text::position_of(state.original, o));
        Diagnostic::error(format!("Application {}: {}", app.id, p.message))
            .at(Location::new(state.origin.clone(), position))
    })?;
    let object = match w.target {
        Target::Application => application_object(catalog, app),
        _ => state.object.clone(),
    };
    state.records.extend(
        records
            .into_iter()
            .map(|r| (object.clone(), app.id.clone(), r)),
    );
    if moved.is_empty() {
        return Ok(None);
    }
    // The planned images by key (the first of each), looked up once per image that moved.
    let mut by_key: HashMap<&PolicyKey, &writers::Planned<'_>> =
        HashMap::with_capacity(w.planned.len());
    for p in &w.planned {
        by_key.entry(&p.key).or_insert(p);
    }
    let updates: Vec<ImageUpdate> = moved
        .iter()
        .map(|m| {
            let p = by_key.get(&m.key);
            ImageUpdate {
                key: m.key.clone(),
                alias: m.alias.clone(),
                image: p.map(|p| p.spec.image.full_name()).unwrap_or_default(),
                old: m.old.clone(),
                new: m.new.clone(),
            }
        })
        .collect();
    let name_of = |m: &ImageUpdate| {
        by_key
            .get(&m.key)
            .map(|p| p.new.name.clone())
            .unwrap_or_default()
    };
    let commit = CommitData {
        app_name: app.id.name.clone(),
        changes: updates
            .iter()
            .map(|m| AppChange {
                image: name_of(m),
                old_tag: m.old.as_ref().map(ToString::to_string).unwrap_or_default(),
                new_tag: m.new.to_string(),
                labels: BTreeMap::new(),
            })
            .collect(),
    };
    let git = match &w.method {
        Method::Git(credentials) => {
            Some(git_plan(w, app, source, credentials, &updates, &name_of)?)
        }
        Method::Application => None,
    };
    Ok(Some(AppPlan {
        app: app.id.clone(),
        origin: w.config.origin.clone(),
        method: w.method.clone(),
        target: w.target.clone(),
        images: updates,
        commit,
        git,
    }))
}

/// A git branch setting: `BRANCH`, `BASE:WRITE` or `:WRITE`, its template parsing.
fn check_branch(b: &Located<String>, app: &AppId) -> Result<(), Diagnostic> {
    let parts: Vec<&str> = b.value.trim().split(':').collect();
    if parts.len() > 2 {
        return Err(Diagnostic::error(format!(
            "git branch {:?} of Application {app} is not BRANCH or BASE:WRITE",
            b.value
        ))
        .at(b.location.clone()));
    }
    if let Some(template) = parts.get(1) {
        image_update_template::Template::parse_go(
            image_update_template::argocd::BRANCH_TEMPLATE_NAME,
            template,
        )
        .map_err(|e| {
            Diagnostic::error(format!(
                "the write branch template of Application {app} does not parse: {e}"
            ))
            .at(b.location.clone())
        })?;
    }
    Ok(())
}

/// Where one Application writes back to git, as far as it is known before anything is planned.
#[cfg(feature = "job")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppDestination {
    pub app: AppId,
    /// The repository's URL.
    pub repository: String,
    /// The branch checked out (`None`: the remote's default branch).
    pub checkout: Option<String>,
    /// Where the repository is named: its setting (`git-repository`, `gitConfig.repository`),
    /// else the Application.
    pub location: Location,
}

/// The git destination of every Application of `catalog` whose write-back method is git (those
/// whose settings are invalid are left out: planning reports them).
#[cfg(feature = "job")]
#[must_use]
pub(crate) fn git_destinations(catalog: &Catalog<'_>) -> Vec<AppDestination> {
    let none = MemoryFiles::default();
    catalog
        .configs
        .iter()
        .filter_map(|config| {
            let method = config.write_back.method.as_ref()?;
            let Ok(Method::Git(_)) = Method::parse(&method.value, config.kubesphere()) else {
                return None;
            };
            let app = &catalog.apps[config.app];
            let target = config
                .write_back
                .target
                .as_ref()
                .and_then(|t| {
                    target::resolve(
                        &Method::Git(GitCredentials::RepoCreds),
                        Some(t),
                        app,
                        &app.sources.first()?.path,
                        &app.location,
                        &catalog.options.controller_namespace,
                    )
                    .ok()
                })
                .unwrap_or(Target::Application);
            let (source, _) = target::choose_source(app, &target, &none);
            let to = git_destination(config, app, &app.sources[source]).ok()?;
            let location = config
                .write_back
                .repository
                .as_ref()
                .map_or_else(|| app.location.clone(), |r| r.location.clone());
            Some(AppDestination {
                app: app.id.clone(),
                repository: to.repository,
                checkout: to.checkout,
                location,
            })
        })
        .collect()
}

/// The warning for an Application whose git write-back goes to another repository or base branch
/// than the one a Job cloned: it names both (the repository as the Application spells it, and the
/// clone URL), at the setting naming the repository (`git-repository`, `gitConfig.repository`),
/// else the source's `repoURL`.
fn left_alone(
    config: &AppConfig,
    app: &super::application::Application,
    file: &super::application::ParsedFile<'_>,
    source: &super::application::Source,
    to: &GitDestination,
    scope: &super::catalog::GitScope,
    method_location: &Location,
) -> Diagnostic {
    let branch = |b: Option<&str>| {
        b.map_or_else(
            || "its default branch".to_owned(),
            |b| format!("branch {b}"),
        )
    };
    let same = crate::git_repository::same_repository(&to.repository, &scope.repository);
    let (setting, location) = match &config.write_back.repository {
        Some(r) => ("its git repository", r.location.clone()),
        None => (
            "its repoURL",
            file.tree
                .at(source.node, &["repoURL"])
                .map_or_else(|| method_location.clone(), |node| file.location(node)),
        ),
    };
    let cloned = match &scope.branch {
        Some(b) => format!("branch {b}"),
        None if scope.default_branch => branch(None),
        None => "a tag or commit".to_owned(),
    };
    let (message, hint) = if same {
        (
            format!(
                "Application {} writes back to {} of {}, but this run cloned {} of it, so it is left alone",
                app.id,
                branch(to.checkout.as_deref()),
                to.repository,
                cloned,
            ),
            "run one Job per base branch, each with the Applications that write to it".to_owned(),
        )
    } else {
        (
            format!(
                "Application {} writes back to {} ({setting}), not to the repository this run cloned ({}), so it is left alone",
                app.id, to.repository, scope.repository,
            ),
            "a URL names the same repository when its host (in any case) and path match, whatever the scheme, user, port, trailing / or .git; spell the URL so, or run one Job per repository".to_owned(),
        )
    };
    Diagnostic::warning(message).at(location).with_hint(hint)
}

/// Where a git write-back goes before its changes are known: the repository, the base branch as
/// written (`""` for none), the write-branch template and where it is written, and the branch to
/// check out (`None`: the remote's default branch).
struct GitDestination {
    repository: String,
    base: String,
    write: Option<(String, Location)>,
    checkout: Option<String>,
}

fn git_destination(
    config: &AppConfig,
    app: &super::application::Application,
    source: &super::application::Source,
) -> Result<GitDestination, Diagnostic> {
    let wb = &config.write_back;
    let repository = wb
        .repository
        .as_ref()
        .map_or_else(|| source.repo_url.clone(), |r| r.value.clone());
    let (base, write) = match &wb.branch {
        Some(Located { value, location }) => {
            let parts: Vec<&str> = value.trim().split(':').collect();
            if parts.len() > 2 {
                return Err(Diagnostic::error(format!(
                    "git branch {value:?} of Application {} is not BRANCH or BASE:WRITE",
                    app.id
                ))
                .at(location.clone()));
            }
            (
                parts[0].to_owned(),
                parts.get(1).map(|s| ((*s).to_owned(), location.clone())),
            )
        }
        None => (String::new(), None),
    };
    // The checkout branch: the configured base, else the source's revision (with several
    // sources and a repository given, the revision of the source in that repository).
    let revision = if app.form == SourceForm::Multiple && wb.repository.is_some() {
        app.sources
            .iter()
            .find(|s| crate::git_repository::same_repository(&s.repo_url, &repository))
            .map_or(source.target_revision.as_str(), |s| {
                s.target_revision.as_str()
            })
    } else {
        source.target_revision.as_str()
    };
    let checkout = if base.is_empty() {
        revision
    } else {
        base.as_str()
    };
    let checkout = (!checkout.is_empty() && checkout != "HEAD").then(|| checkout.to_owned());
    Ok(GitDestination {
        repository,
        base,
        write,
        checkout,
    })
}

/// Repository, branches and credentials of a git write-back.
fn git_plan(
    w: &Work<'_>,
    app: &super::application::Application,
    source: &super::application::Source,
    credentials: &GitCredentials,
    updates: &[ImageUpdate],
    name_of: &dyn Fn(&ImageUpdate) -> String,
) -> Result<GitPlan, Diagnostic> {
    let wb = &w.config.write_back;
    let GitDestination {
        repository,
        base,
        write,
        checkout,
    } = git_destination(w.config, app, source)?;
    let target_text = w.target.path().unwrap_or_default();
    let target_key = {
        let digest = Sha256::digest(format!("{repository}|{base}|{target_text}").as_bytes());
        digest
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let images: Vec<BranchImage> = updates
        .iter()
        .map(|m| BranchImage {
            name: name_of(m),
            alias: m.alias.clone(),
            old_tag: m.old.as_ref().map(ToString::to_string).unwrap_or_default(),
            new_tag: m.new.to_string(),
        })
        .collect();
    let data = BranchData {
        app_namespace: app.id.namespace.clone(),
        app_name: app.id.name.clone(),
        target_key: target_key.clone(),
        images,
    };
    let pull_request = wb.pull_request.clone();
    let push = if pull_request.is_some() {
        if let Some((_, location)) = &write {
            return Err(Diagnostic::error(format!(
                "Application {}: a pull request needs a plain base branch, not BASE:WRITE",
                app.id
            ))
            .at(location.clone()));
        }
        Some(format!("image-updater-{target_key}-{}", data.sha256()))
    } else {
        match &write {
            Some((template, location)) => Some(render_branch(template, &data).map_err(|e| {
                Diagnostic::error(format!("Application {}: {e}", app.id)).at(location.clone())
            })?),
            None => None,
        }
    };
    Ok(GitPlan {
        repository,
        checkout,
        push,
        credentials: credentials.clone(),
        target_key,
        pull_request,
    })
}

fn application_object(catalog: &Catalog<'_>, app: &super::application::Application) -> ObjectId {
    object_id(&catalog.files[app.object.file].tree, app.object.node)
}

/// The identity of a file's single object (a kustomization has `apiVersion` and `kind`; override
/// and values files have none).
fn file_object(tree: &Tree<'_>) -> ObjectId {
    match tree.docs().first().and_then(|d| d.root) {
        Some(root) if tree.is_map(root) => object_id(tree, root),
        _ => ObjectId::default(),
    }
}

/// `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` of the object at `node`.
fn object_id(tree: &Tree<'_>, node: crate::yaml::tree::NodeId) -> ObjectId {
    let text = |path: &[&str]| {
        tree.at(node, path)
            .and_then(|n| tree.text_value(n))
            .unwrap_or("")
            .to_owned()
    };
    ObjectId {
        api_version: text(&["apiVersion"]),
        kind: text(&["kind"]),
        name: text(&["metadata", "name"]),
        namespace: text(&["metadata", "namespace"]),
    }
}

/// A field path as the report writes it: keys joined with `.`, `[N]` indexes, keys with `.`, `[`,
/// `]`, `"` or a space as `["a.b"]`.
fn field_path(editor: &Editor<'_, '_>, places: &mut ItemPlaces, parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Raw(raw) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(raw);
            }
            Part::Key(k) => {
                if k.contains(['.', '[', ']', '"', ' ']) || k.is_empty() {
                    out.push('[');
                    out.push_str(&serde_json::Value::from(k.as_str()).to_string());
                    out.push(']');
                } else {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
            }
            Part::Item { seq, item } => {
                let index = places.index(editor, *seq, *item);
                out.push('[');
                out.push_str(&index.map_or_else(|| "?".to_owned(), |i| i.to_string()));
                out.push(']');
            }
        }
    }
    out
}

/// The index of each item in its sequence, the sequences' items listed once per file (listing
/// them for every changed item made a file of N changes take N² steps).
#[derive(Default)]
struct ItemPlaces {
    seqs: HashMap<Handle, Places>,
}

/// The items of one sequence: the first index of each item handle, and of each resolved handle.
struct Places {
    by_handle: HashMap<Handle, usize>,
    by_resolved: HashMap<Handle, usize>,
}

impl ItemPlaces {
    /// The first index of `seq`'s items that is `item` or resolves to what it resolves to.
    fn index(&mut self, editor: &Editor<'_, '_>, seq: Handle, item: Handle) -> Option<usize> {
        let places = self.seqs.entry(seq).or_insert_with(|| {
            let items = editor.items(seq);
            let mut places = Places {
                by_handle: HashMap::with_capacity(items.len()),
                by_resolved: HashMap::with_capacity(items.len()),
            };
            for (i, h) in items.into_iter().enumerate() {
                places.by_handle.entry(h).or_insert(i);
                places.by_resolved.entry(editor.resolve(h)).or_insert(i);
            }
            places
        });
        let by_handle = places.by_handle.get(&item).copied();
        let by_resolved = places.by_resolved.get(&editor.resolve(item)).copied();
        match (by_handle, by_resolved) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_files_refuse_what_resolves_outside() {
        let outside = tempfile::tempdir().unwrap();
        fs_err::write(outside.path().join("values.yaml"), "a: 1\n").unwrap();
        let tree = tempfile::tempdir().unwrap();
        let root = tree.path();
        fs_err::create_dir_all(root.join("charts/app")).unwrap();
        fs_err::write(root.join("charts/app/values.yaml"), "b: 2\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("charts/escape")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("values.yaml"),
            root.join("charts/app/linked.yaml"),
        )
        .unwrap();
        std::os::unix::fs::symlink("values.yaml", root.join("charts/app/alias.yaml")).unwrap();
        let files = DirFiles::new(root, SizeLimit(1 << 20)).unwrap();
        assert_eq!(
            files.read("charts/app/values.yaml").unwrap().as_deref(),
            Some("b: 2\n")
        );
        assert_eq!(
            files.read("charts/app/alias.yaml").unwrap().as_deref(),
            Some("b: 2\n")
        );
        assert_eq!(files.read("charts/app/missing.yaml").unwrap(), None);
        assert_eq!(files.read("charts/new/dir/values.yaml").unwrap(), None);
        assert!(
            files
                .read("charts/escape/values.yaml")
                .unwrap_err()
                .contains("outside the tree")
        );
        assert!(
            files
                .read("charts/escape/new.yaml")
                .unwrap_err()
                .contains("outside the tree")
        );
        assert!(
            files
                .read("charts/app/linked.yaml")
                .unwrap_err()
                .contains("outside the tree")
        );
    }
}
