//! [`Outcome`]: everything one run of the operation found and did, the one
//! model every output is rendered from ([`crate::render`]). It holds values
//! only; it prints nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::object::ObjectId;
use crate::policies::{ImageRef, PolicyKey};
use crate::reflector::Resolved;
use crate::text::Position;
use crate::walk::Skipped;
use crate::yaml::edit::Edit;

/// A file whose content changes.
#[derive(Debug, Clone)]
pub struct FileUpdate {
    /// Path relative to the root, `/` separators.
    pub rel: String,
    /// Where it was read from, and is written in place (through the tree's door, which writes
    /// a symlink's target).
    pub path: PathBuf,
    /// The original text (kept only when asked for, e.g. for diffs).
    pub old_text: Option<String>,
    pub new_text: String,
    /// The file does not exist yet (an Argo CD override file).
    pub created: bool,
}

/// One changed field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file as the report names it (relative to the update path, `/`
    /// separators; a ResourceList item's path annotation).
    pub file: String,
    /// The file as the user knows it (a path from the current directory;
    /// the path annotation).
    pub display: String,
    pub object: ObjectId,
    /// Which object of its file (or list) it is, counted from 0: tells two
    /// objects with the same identity apart.
    pub object_index: usize,
    /// The document's index in its file, when known (kpt `file.index`).
    pub index: Option<String>,
    pub field_path: String,
    pub old_value: String,
    pub new_value: String,
    pub setter: String,
    /// Where the value is (in a ResourceList, in the list's text).
    pub position: Position,
}

impl Change {
    /// The old value as change lines show it: `""` for an empty one, so
    /// that `"" -> 1.2.0` does not read as a missing word.
    #[must_use]
    pub fn shown_old_value(&self) -> &str {
        if self.old_value.is_empty() {
            "\"\""
        } else {
            &self.old_value
        }
    }
}

/// Output that was asked for on stdout (`--report -`, `--emit-policies -`),
/// rendered for the front end to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdoutOutput {
    /// `--report`, `--emit-policies`.
    pub what: &'static str,
    pub text: String,
}

/// Counts of a tree run.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Candidate files read.
    pub files_read: usize,
    /// Files that mention `$imagepolicy` (parsed).
    pub files_screened: usize,
    /// Files skipped before reading, with the reason (relative paths).
    pub skipped: Vec<Skipped>,
}

/// What one run found and did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub mode: Mode,
    /// Every changed field (pending ones under `DryRun`/`Check`), by file,
    /// then in document order.
    pub changes: Vec<Change>,
    /// Warnings and notes, notes first, then warnings by location (tree),
    /// or in the list's order (ResourceList). Every warning the run raised
    /// is here, and only here: each output shows these.
    pub diagnostics: Vec<Diagnostic>,
    /// Every policy in scope that has a latest image, keyed
    /// `NAMESPACE:NAME`.
    pub observed_policies: BTreeMap<PolicyKey, ImageRef>,
    /// The files whose content changes (tree input).
    pub files: Vec<FileUpdate>,
    /// The edits of the ResourceList's text (ResourceList input, `Apply`).
    pub list_edits: Vec<Edit>,
    /// The policies fetched from registries.
    pub fetched: Vec<Resolved>,
    /// Results an earlier run fetched, given again as values (the config's
    /// `carried`): what the supply-chain gate found about them then.
    pub carried: Vec<Resolved>,
    /// The rendered commit message, when one was asked for and a field
    /// changed.
    pub commit_message: Option<String>,
    /// Outputs asked for on stdout, in the order they were asked for.
    pub stdout: Vec<StdoutOutput>,
    pub stats: Stats,
    /// Nothing was written because warnings were raised and the config
    /// says to fail on them.
    pub held_back: bool,
    /// `ImageUpdateAutomation NS/NAME`, when it is suspended (nothing was
    /// edited).
    pub suspended: Option<String>,
    /// The directory (or file) the report's paths are relative to (tree
    /// input).
    pub root: Option<TreeRoot>,
    /// The Argo CD Applications whose write-back was written: each one's
    /// commit message data and git destination.
    pub argocd: Vec<AppWriteBack>,
    /// Each change's provenance, by old value, new value and setter (when
    /// an output asked for it: `FetchSettings::provenance`).
    pub provenance:
        std::collections::HashMap<ProvenanceKey, image_update_template::provenance::Provenance>,
}

/// The key of a change's provenance: its old value, new value and setter.
pub(crate) type ProvenanceKey = (String, String, String);

/// What one Argo CD Application's write-back did, as the commit message and
/// the Job need it (the planner's own plan stays in `crate::argocd::plan`).
#[derive(Debug, Clone)]
pub struct AppWriteBack {
    /// `NAMESPACE/NAME`.
    pub app: String,
    /// Whether at least one of its images changes.
    pub changes_images: bool,
    /// The commit message's data (`.AppName`, `.AppChanges`).
    pub commit: image_update_template::argocd::CommitData,
    /// Where its git write-back pushes (`None`: not the git method).
    pub git: Option<GitWriteBack>,
}

/// Where an Application's git write-back pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitWriteBack {
    /// The branch pushed when it is not the checkout branch (the rendered
    /// `base:write` template, or the pull request's head branch).
    pub push: Option<String>,
    /// `gitConfig.pullRequest`: the request the Job proposes the head
    /// branch (`push`) in, into the base branch.
    pub pull_request: Option<AppPullRequest>,
}

/// The pull (merge) request an Argo CD Application asks for
/// (`gitConfig.pullRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppPullRequest {
    /// Where it is set.
    pub location: crate::diagnostic::Location,
    /// The forge it names.
    pub provider: RequestProvider,
    /// Labels to add: de-duplicated, empty ones dropped.
    pub labels: Vec<String>,
}

/// The forges `gitConfig.pullRequest` can name (Argo CD Image Updater's
/// `github: {}` and `gitlab: {}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestProvider {
    GitHub,
    GitLab,
}

impl RequestProvider {
    /// Every provider, by its key.
    pub const ALL: [RequestProvider; 2] = [RequestProvider::GitHub, RequestProvider::GitLab];

    /// Its key in `gitConfig.pullRequest`: `github` or `gitlab`.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            RequestProvider::GitHub => "github",
            RequestProvider::GitLab => "gitlab",
        }
    }
}

/// The root of a tree run, for turning report paths into display paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRoot {
    pub path: PathBuf,
    /// The root is one file, not a directory.
    pub is_file: bool,
    /// The root as shown: relative to the current directory when it lies
    /// below it, else as given.
    shown: PathBuf,
}

impl TreeRoot {
    /// The root `path` (a file when `is_file`), shown relative to the
    /// current directory `cwd` when it lies below it.
    #[must_use]
    pub fn new(path: PathBuf, is_file: bool, cwd: Option<&Path>) -> Self {
        let shown = cwd
            .filter(|_| path.is_absolute())
            .and_then(|cwd| path.strip_prefix(cwd).ok())
            .map_or_else(|| path.clone(), Path::to_path_buf);
        Self {
            path,
            is_file,
            shown,
        }
    }

    /// `rel` (a report path) as the user knows the file: the root joined
    /// with it, without a leading `./`; the root itself when it is a file.
    /// Paths are relative to the current directory when the root lies
    /// below it, so a diff with these paths applies from there.
    #[must_use]
    pub fn display(&self, rel: &str) -> String {
        if self.is_file {
            return self.shown.display().to_string();
        }
        let joined = if rel.is_empty() {
            self.shown.clone()
        } else {
            self.shown.join(rel)
        };
        let s = joined.display().to_string();
        s.strip_prefix("./").map(str::to_owned).unwrap_or(s)
    }

    /// The root path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Outcome {
    /// Whether any field changes (or would).
    #[must_use]
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The warnings (not the notes).
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == crate::diagnostic::Severity::Warning)
    }

    /// `rel` as the user knows it (see [`TreeRoot::display`]).
    #[must_use]
    pub fn display(&self, rel: &str) -> String {
        self.root
            .as_ref()
            .map_or_else(|| rel.to_owned(), |r| r.display(rel))
    }
}

/// Whether files are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Write the new values.
    #[default]
    Apply,
    /// Write nothing; report what would change.
    DryRun,
    /// Write nothing; pending changes are a failure.
    Check,
}

impl Mode {
    /// Whether the input is written.
    #[must_use]
    pub fn writes(self) -> bool {
        self == Mode::Apply
    }
}
