//! Argo CD Image Updater's `ImageUpdater` CRD (`argocd-image-updater.argoproj.io/v1alpha1`).
//!
//! ```yaml
//! spec:
//!   commonUpdateSettings: {updateStrategy, forceUpdate, allowTags, ignoreTags[], pullSecret, platforms[]}
//!   writeBackConfig: {method, gitConfig: {repository, branch, writeBackTarget, pullRequest}}
//!   imagesVerification: {enabled, cosignKey: {secretName, key}}
//!   applicationRefs:                       # at least one
//!   - namePattern: "shop-*"                # a glob (Go's filepath.Match)
//!     labelSelectors: {matchLabels, matchExpressions}
//!     useAnnotations: false                # true: only the pattern and labels; the annotations say the rest
//!     commonUpdateSettings, writeBackConfig, imagesVerification
//!     images:
//!     - alias: web
//!       imageName: ghcr.io/acme/web:~2.4
//!       commonUpdateSettings, imagesVerification
//!       manifestTargets: {helm: {name, tag, spec}, kustomize: {name}, plugin: {name, tag, spec}}
//! ```
//!
//! A CR selects Applications in its own namespace. When several references match one Application,
//! the most specific wins: a pattern without `*?[]` scores 1,000,000, every literal character of the
//! pattern (classes `[...]` and wildcards removed) one point, a label selector 10,000 plus 100 per
//! `matchLabels` entry and per `matchExpressions` entry; ties keep the written order. Settings merge
//! global -> reference -> image, field by field. Unknown fields are warnings (a typo would otherwise
//! be ignored silently).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::application::{Application, ParsedFile, namespace_name};
use super::config::{
    CosignKeyRef, MAX_IMAGES_PER_APPLICATION, over_limit, split_entry, too_many_images,
};
use super::settings::{
    Located, MAX_PULL_REQUEST_LABELS, ManifestTarget, PullSecret, UpdateSettings,
    WriteBackSettings, policy_config,
};
use crate::diagnostic::{Diagnostic, Location};
use crate::outcome::{AppPullRequest, RequestProvider};
use crate::policies::selector::{LabelSelector, LabelSelectorRequirement, Selector};
use crate::reflector::selection::glob::Glob;
use crate::yaml::tree::{NodeId, Tree};

/// The API group of Argo CD Image Updater's CRD.
pub(crate) const GROUP: &str = "argocd-image-updater.argoproj.io";

/// The most `applicationRefs` one CR lists, far above any real one's few: more is an error at the
/// first reference over the limit, before any is read. References that cannot be filed (a pattern
/// with a wildcard at both ends, no label required) or that share their key are tried on every
/// Application they may select: the limit bounds that work.
pub(crate) const MAX_APPLICATION_REFS: usize = 10_000;

/// One `ImageUpdater` object.
#[derive(Debug, Clone)]
pub(crate) struct ImageUpdater {
    pub namespace: String,
    pub name: String,
    pub settings: UpdateSettings,
    pub write_back: WriteBackSettings,
    /// Boxed: most CRs have none, and the CR is read into a list of every object found.
    pub verify: Option<Box<Verification>>,
    pub refs: Vec<AppRef>,
    /// `refs` by what an Application must have to be selected by each.
    index: Box<RefIndex>,
}

/// The references of a CR by what an Application must have to be selected by each, so that
/// finding an Application's references looks at the few that can select it: each reference is
/// filed under one key, the first of its exact name, a label its selector requires (`key=value`,
/// or one of `key in (...)`), the longer of its pattern's literal prefix and suffix; the rest (a
/// pattern such as `*` or `*x*` with no label required) are looked at for every Application.
/// Trying every reference on every Application made a CR of 20,000 references over 2,000
/// Applications take 17.5 s.
#[derive(Debug, Clone, Default)]
struct RefIndex {
    exact: HashMap<String, Vec<usize>>,
    /// Label key -> value -> references.
    labelled: HashMap<String, HashMap<String, Vec<usize>>>,
    prefixed: HashMap<String, Vec<usize>>,
    /// The lengths (bytes) of the prefixes filed.
    prefix_lengths: BTreeSet<usize>,
    suffixed: HashMap<String, Vec<usize>>,
    suffix_lengths: BTreeSet<usize>,
    rest: Vec<usize>,
}

impl RefIndex {
    fn new(refs: &[AppRef]) -> Self {
        let mut index = Self::default();
        for (i, r) in refs.iter().enumerate() {
            if let Some(name) = r.glob.literal() {
                index.exact.entry(name).or_default().push(i);
                continue;
            }
            if let Some((key, values)) = r.selector.as_ref().and_then(|(s, _)| s.required_label()) {
                let by_value = index.labelled.entry(key.to_owned()).or_default();
                for v in values {
                    by_value.entry(v.to_owned()).or_default().push(i);
                }
                continue;
            }
            // The longer literal is the likelier to tell references apart (`app-*-{n}`).
            let prefix = r.glob.literal_prefix();
            let suffix = r.glob.literal_suffix();
            if !prefix.is_empty() && prefix.len() >= suffix.len() {
                index.prefix_lengths.insert(prefix.len());
                index.prefixed.entry(prefix).or_default().push(i);
            } else if !suffix.is_empty() {
                index.suffix_lengths.insert(suffix.len());
                index.suffixed.entry(suffix).or_default().push(i);
            } else {
                index.rest.push(i);
            }
        }
        index
    }

    /// Every reference that may select `app` (some more than once).
    fn candidates<'i>(&'i self, app: &'i Application) -> impl Iterator<Item = usize> + 'i {
        let name = app.id.name.as_str();
        let exact = self.exact.get(name).into_iter().flatten();
        let labelled = app.labels.iter().flat_map(move |(k, v)| {
            self.labelled
                .get(k)
                .and_then(|by_value| by_value.get(v))
                .into_iter()
                .flatten()
        });
        let prefixed = self
            .prefix_lengths
            .iter()
            .filter_map(move |&n| name.get(..n))
            .flat_map(move |p| self.prefixed.get(p).into_iter().flatten());
        let suffixed = self
            .suffix_lengths
            .iter()
            .filter_map(move |&n| name.get(name.len().checked_sub(n)?..))
            .flat_map(move |s| self.suffixed.get(s).into_iter().flatten());
        exact
            .chain(labelled)
            .chain(prefixed)
            .chain(suffixed)
            .chain(&self.rest)
            .copied()
    }
}

/// One `applicationRefs` entry.
#[derive(Debug, Clone)]
pub(crate) struct AppRef {
    glob: Glob,
    selector: Option<(Selector, usize)>,
    pub use_annotations: bool,
    pub settings: UpdateSettings,
    pub write_back: WriteBackSettings,
    pub verify: Option<Verification>,
    pub images: Vec<CrImage>,
    pub location: Location,
    /// Its [`specificity`], computed once.
    score: usize,
}

/// One `images` entry of a reference.
#[derive(Debug, Clone)]
pub(crate) struct CrImage {
    pub alias: String,
    /// The selection with every layer merged, validated.
    pub config: Option<crate::reflector::selection::PolicyConfig>,
    pub image_name: String,
    pub settings: UpdateSettings,
    pub verify: Option<Verification>,
    pub target: ManifestTarget,
    pub location: Location,
}

/// One `imagesVerification` block as written (`{enabled, cosignKey: {secretName, key}}`), at the
/// CR's, a reference's or an image's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verification {
    pub enabled: Option<bool>,
    pub cosign_key: Option<CosignKeyRef>,
}

impl Verification {
    /// The key an image must be signed with under the blocks of its scopes, least specific first
    /// (Argo CD Image Updater's merge: a more specific block's fields replace the others', and
    /// every block says `enabled`, true unless written false, as the API server defaults it; no
    /// block at all, or a most specific `enabled: false`, asks for nothing).
    #[must_use]
    pub(crate) fn required(scopes: &[Option<&Verification>]) -> Option<CosignKeyRef> {
        let mut merged: Option<Verification> = None;
        for block in scopes.iter().flatten() {
            let m = merged.get_or_insert(Verification {
                enabled: None,
                cosign_key: None,
            });
            if block.enabled.is_some() {
                m.enabled = block.enabled;
            }
            if block.cosign_key.is_some() {
                m.cosign_key.clone_from(&block.cosign_key);
            }
        }
        let merged = merged?;
        // Every block that is enabled names its key (checked where it is read), so an enabled
        // merge has one.
        merged
            .enabled
            .unwrap_or(true)
            .then_some(merged.cosign_key)
            .flatten()
    }
}

impl AppRef {
    /// Whether the reference selects `app` (its name and labels).
    #[must_use]
    pub(crate) fn matches(&self, app: &Application) -> bool {
        self.glob.matches(&app.id.name)
            && self
                .selector
                .as_ref()
                .is_none_or(|(s, _)| s.matches(&app.labels))
    }
}

/// Argo CD Image Updater's specificity of a reference with `pattern` and, when it has a label
/// selector, that selector's number of requirements.
#[must_use]
pub(crate) fn specificity(pattern: &str, selector_requirements: Option<usize>) -> usize {
    let mut score = 0;
    if !pattern.contains(['*', '?', '[', ']']) {
        score += 1_000_000;
    }
    // Character classes go entirely (the shortest `[...]`), then the wildcards.
    let mut literals = String::new();
    let mut rest = pattern;
    while let Some(open) = rest.find('[') {
        literals.push_str(&rest[..open]);
        match rest[open..].find(']') {
            Some(close) => rest = &rest[open + close + 1..],
            None => {
                literals.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    literals.push_str(rest);
    score += literals.replace(['*', '?'], "").len();
    if let Some(n) = selector_requirements {
        score += 10_000 + 100 * n;
    }
    score
}

/// Whether `key` is a key of a Secret's data: 1 to 253 letters, digits, `-`, `_`, `.`, and not `.`
/// or `..` (Kubernetes's rule).
fn secret_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key != "."
        && key != ".."
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl ImageUpdater {
    /// The most specific reference that selects `app` (of those as specific, the first written),
    /// when `app` is in this CR's namespace.
    #[must_use]
    pub(crate) fn best_ref(&self, app: &Application) -> Option<&AppRef> {
        if app.id.namespace != self.namespace {
            return None;
        }
        let mut best: Option<usize> = None;
        for i in self.index.candidates(app) {
            let r = &self.refs[i];
            let better = best.is_none_or(|b| {
                let b_score = self.refs[b].score;
                r.score > b_score || (r.score == b_score && i < b)
            });
            if better && r.matches(app) {
                best = Some(i);
            }
        }
        best.map(|i| &self.refs[i])
    }
}

/// Reads typed fields of one object, collecting problems.
struct Fields<'f, 'a> {
    file: &'f ParsedFile<'a>,
    what: String,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl Fields<'_, '_> {
    fn tree(&self) -> &Tree<'_> {
        &self.file.tree
    }

    fn at(&self, node: NodeId) -> Location {
        self.file.location(node)
    }

    fn error(&mut self, node: NodeId, message: impl std::fmt::Display) {
        let d = Diagnostic::error(format!("{}: {message}", self.what)).at(self.at(node));
        self.errors.push(d);
    }

    /// Warn about keys of `map` not in `known`.
    fn known(&mut self, map: NodeId, field: &str, known: &[&str]) {
        let unknown: Vec<(String, NodeId)> = self
            .tree()
            .entries(map)
            .iter()
            .filter_map(|(k, _)| {
                let key = self.tree().scalar(*k)?;
                (!known.contains(&key)).then(|| (key.to_owned(), *k))
            })
            .collect();
        for (key, node) in unknown {
            let d = Diagnostic::warning(format!(
                "{}: unknown field {field}.{key} is ignored",
                self.what
            ))
            .at(self.at(node));
            self.warnings.push(d);
        }
    }

    fn map(&mut self, parent: NodeId, key: &str, field: &str) -> Option<NodeId> {
        let node = self.tree().get(parent, key)?;
        if self.tree().text_value(node).is_none()
            && !self.tree().is_map(node)
            && !self.tree().is_seq(node)
        {
            return None;
        }
        if self.tree().is_map(node) {
            Some(self.tree().resolve(node))
        } else {
            self.error(node, format!("{field} is not a mapping"));
            None
        }
    }

    /// A string field by the tree's one rule ([`Tree::string_field`]): a number, a boolean or
    /// a collection is refused at the field's position.
    fn string(&mut self, parent: NodeId, key: &str, field: &str) -> Option<Located<String>> {
        let node = self.tree().get(parent, key)?;
        match self.tree().string_field(node) {
            Ok(value) => {
                let value = value?.to_owned();
                Some(Located::new(value, self.at(node)))
            }
            Err(crate::yaml::tree::NotAString) => {
                self.error(node, format!("{field} is not a string"));
                None
            }
        }
    }

    fn boolean(&mut self, parent: NodeId, key: &str, field: &str) -> Option<bool> {
        let node = self.tree().get(parent, key)?;
        match self.tree().text_value(node) {
            None => None,
            Some("true" | "True" | "TRUE") => Some(true),
            Some("false" | "False" | "FALSE") => Some(false),
            Some(other) => {
                let message = format!("{field} is {other:?}, not true or false");
                self.error(node, message);
                None
            }
        }
    }

    fn strings(&mut self, parent: NodeId, key: &str, field: &str) -> Option<Vec<String>> {
        let node = self.tree().get(parent, key)?;
        if self.tree().text_value(node).is_none() && !self.tree().is_seq(node) {
            return None;
        }
        if !self.tree().is_seq(node) {
            self.error(node, format!("{field} is not a list"));
            return None;
        }
        let items: Vec<NodeId> = self.tree().items(node).to_vec();
        let mut out = Vec::new();
        for item in items {
            match self.tree().text_value(item) {
                Some(v) => out.push(v.to_owned()),
                None => self.error(item, format!("{field} holds a non-string")),
            }
        }
        Some(out)
    }

    fn settings(&mut self, parent: NodeId, field: &str) -> UpdateSettings {
        let Some(map) = self.map(
            parent,
            "commonUpdateSettings",
            &format!("{field}.commonUpdateSettings"),
        ) else {
            return UpdateSettings::default();
        };
        let f = format!("{field}.commonUpdateSettings");
        self.known(
            map,
            &f,
            &[
                "updateStrategy",
                "forceUpdate",
                "allowTags",
                "ignoreTags",
                "pullSecret",
                "platforms",
            ],
        );
        let s = UpdateSettings {
            update_strategy: self.string(map, "updateStrategy", &format!("{f}.updateStrategy")),
            force_update: self.boolean(map, "forceUpdate", &format!("{f}.forceUpdate")),
            allow_tags: self.string(map, "allowTags", &format!("{f}.allowTags")),
            ignore_tags: self.strings(map, "ignoreTags", &format!("{f}.ignoreTags")),
            pull_secret: self.string(map, "pullSecret", &format!("{f}.pullSecret")),
            platforms: self.strings(map, "platforms", &format!("{f}.platforms")),
        };
        if let Some(p) = &s.pull_secret
            && let Err(e) = PullSecret::parse(&p.value)
        {
            let d = Diagnostic::error(format!("{}: {e}", self.what)).at(p.location.clone());
            self.errors.push(d);
        }
        s
    }

    fn write_back(&mut self, parent: NodeId, field: &str) -> WriteBackSettings {
        let Some(map) = self.map(
            parent,
            "writeBackConfig",
            &format!("{field}.writeBackConfig"),
        ) else {
            return WriteBackSettings::default();
        };
        let f = format!("{field}.writeBackConfig");
        self.known(map, &f, &["method", "gitConfig"]);
        let mut w = WriteBackSettings {
            method: self.string(map, "method", &format!("{f}.method")),
            ..WriteBackSettings::default()
        };
        if let Some(git) = self.map(map, "gitConfig", &format!("{f}.gitConfig")) {
            let g = format!("{f}.gitConfig");
            self.known(
                git,
                &g,
                &["repository", "branch", "writeBackTarget", "pullRequest"],
            );
            w.repository = self.string(git, "repository", &format!("{g}.repository"));
            w.branch = self.string(git, "branch", &format!("{g}.branch"));
            w.target = self.string(git, "writeBackTarget", &format!("{g}.writeBackTarget"));
            w.pull_request = self.pull_request(git, &format!("{g}.pullRequest"));
        }
        w
    }

    /// `gitConfig.pullRequest`: exactly one provider (`github: {}` or `gitlab: {}`) and labels.
    fn pull_request(&mut self, git: NodeId, field: &str) -> Option<AppPullRequest> {
        let node = self.tree().get(git, "pullRequest")?;
        let map = self.map(git, "pullRequest", field)?;
        self.known(map, field, &["github", "gitlab", "labels"]);
        let providers: Vec<RequestProvider> = RequestProvider::ALL
            .into_iter()
            .filter(|p| self.tree().get(map, p.key()).is_some())
            .collect();
        let [provider] = providers[..] else {
            self.error(
                node,
                format!(
                    "{field} names {} providers; it needs exactly one, github or gitlab",
                    providers.len()
                ),
            );
            return None;
        };
        let mut labels: Vec<String> = Vec::new();
        for label in self
            .strings(map, "labels", &format!("{field}.labels"))
            .unwrap_or_default()
        {
            if !label.is_empty() && !labels.contains(&label) {
                labels.push(label);
            }
        }
        if labels.len() > MAX_PULL_REQUEST_LABELS {
            self.error(
                node,
                format!(
                    "{field}.labels gives {} labels; at most {MAX_PULL_REQUEST_LABELS} are allowed",
                    labels.len()
                ),
            );
            return None;
        }
        Some(AppPullRequest {
            location: self.at(node),
            provider,
            labels,
        })
    }

    /// `FIELD.imagesVerification`: `enabled` (default true when the block is present) and
    /// `cosignKey: {secretName, key}`, a Secret in the CR's namespace. As the CRD's rule says, a
    /// block that is not `enabled: false` names its key: a requirement without a key is an error,
    /// never dropped.
    fn verify(&mut self, parent: NodeId, field: &str, namespace: &str) -> Option<Verification> {
        let f = format!("{field}.imagesVerification");
        let map = self.map(parent, "imagesVerification", &f)?;
        self.known(map, &f, &["enabled", "cosignKey"]);
        let enabled = self.boolean(map, "enabled", &format!("{f}.enabled"));
        let cosign_key = self.cosign_key(map, &format!("{f}.cosignKey"), namespace);
        if enabled != Some(false) && self.tree().get(map, "cosignKey").is_none() {
            self.error(
                map,
                format!(
                    "{f} asks for signature verification without a key: give cosignKey {{secretName, key}}, or enabled: false to ask for none"
                ),
            );
        }
        Some(Verification {
            // The API server stores the CRD's default, true, in a block that does not say.
            enabled: Some(enabled.unwrap_or(true)),
            cosign_key,
        })
    }

    /// `cosignKey: {secretName, key}` of the `imagesVerification` block `map`.
    fn cosign_key(&mut self, map: NodeId, field: &str, namespace: &str) -> Option<CosignKeyRef> {
        let node = self.tree().get(map, "cosignKey")?;
        let key_map = self.map(map, "cosignKey", field)?;
        self.known(key_map, field, &["secretName", "key"]);
        let secret_name = self.string(key_map, "secretName", &format!("{field}.secretName"));
        let key = self.string(key_map, "key", &format!("{field}.key"));
        let (Some(secret_name), Some(key)) = (secret_name, key) else {
            self.error(node, format!("{field} needs secretName and key"));
            return None;
        };
        // Both name a file below --secrets-dir (SECRET/KEY): a Kubernetes name and a Secret's key,
        // never a path.
        if !crate::object::dns_subdomain(&secret_name.value) {
            let message = format!(
                "{field}.secretName {:?} is not a Kubernetes Secret name",
                secret_name.value
            );
            let d = Diagnostic::error(format!("{}: {message}", self.what))
                .at(secret_name.location.clone());
            self.errors.push(d);
            return None;
        }
        if !secret_key(&key.value) {
            let message = format!(
                "{field}.key {:?} is not a key a Secret can hold (letters, digits, '-', '_', '.'; not '.' or '..')",
                key.value
            );
            let d = Diagnostic::error(format!("{}: {message}", self.what)).at(key.location.clone());
            self.errors.push(d);
            return None;
        }
        Some(CosignKeyRef {
            namespace: namespace.to_owned(),
            secret_name: secret_name.value,
            key: key.value,
            location: self.at(node),
        })
    }

    fn target(&mut self, parent: NodeId, field: &str) -> ManifestTarget {
        let Some(map) = self.map(
            parent,
            "manifestTargets",
            &format!("{field}.manifestTargets"),
        ) else {
            return ManifestTarget::default();
        };
        let f = format!("{field}.manifestTargets");
        self.known(map, &f, &["helm", "kustomize", "plugin"]);
        let mut t = ManifestTarget::default();
        let mut count = 0;
        if let Some(helm) = self.map(map, "helm", &format!("{f}.helm")) {
            count += 1;
            self.known(helm, &format!("{f}.helm"), &["name", "tag", "spec"]);
            t.helm_name = self
                .string(helm, "name", &format!("{f}.helm.name"))
                .map(|l| l.value);
            t.helm_tag = self
                .string(helm, "tag", &format!("{f}.helm.tag"))
                .map(|l| l.value);
            t.helm_spec = self
                .string(helm, "spec", &format!("{f}.helm.spec"))
                .map(|l| l.value);
        }
        if let Some(k) = self.map(map, "kustomize", &format!("{f}.kustomize")) {
            count += 1;
            self.known(k, &format!("{f}.kustomize"), &["name"]);
            t.kustomize_name = self
                .string(k, "name", &format!("{f}.kustomize.name"))
                .map(|l| l.value);
        }
        if let Some(p) = self.map(map, "plugin", &format!("{f}.plugin")) {
            count += 1;
            self.known(p, &format!("{f}.plugin"), &["name", "tag", "spec"]);
            t.plugin_name = self
                .string(p, "name", &format!("{f}.plugin.name"))
                .map(|l| l.value);
            t.plugin_tag = self
                .string(p, "tag", &format!("{f}.plugin.tag"))
                .map(|l| l.value);
            t.plugin_spec = self
                .string(p, "spec", &format!("{f}.plugin.spec"))
                .map(|l| l.value);
        }
        if count > 1 {
            self.error(
                map,
                format!("{f}: set only one of helm, kustomize and plugin"),
            );
        }
        t
    }

    fn selector(&mut self, parent: NodeId, field: &str) -> Option<(Selector, usize)> {
        let map = self.map(parent, "labelSelectors", &format!("{field}.labelSelectors"))?;
        let f = format!("{field}.labelSelectors");
        self.known(map, &f, &["matchLabels", "matchExpressions"]);
        let tree = &self.file.tree;
        let mut selector = LabelSelector::default();
        if let Some(labels) = tree.get(map, "matchLabels") {
            for (k, v) in tree.entries(labels) {
                if let Some(k) = tree.scalar(*k) {
                    selector
                        .match_labels
                        .insert(k.to_owned(), tree.text_value(*v).unwrap_or("").to_owned());
                }
            }
        }
        if let Some(exprs) = tree.get(map, "matchExpressions") {
            for e in tree.items(exprs) {
                let text = |k: &str| {
                    tree.get(*e, k)
                        .and_then(|n| tree.text_value(n))
                        .unwrap_or("")
                        .to_owned()
                };
                let values = tree
                    .get(*e, "values")
                    .map(|v| {
                        tree.items(v)
                            .iter()
                            .filter_map(|i| tree.text_value(*i).map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                selector.match_expressions.push(LabelSelectorRequirement {
                    key: text("key"),
                    operator: text("operator"),
                    values,
                });
            }
        }
        let n = selector.match_labels.len() + selector.match_expressions.len();
        match Selector::from_label_selector(&selector) {
            Ok(s) => Some((s, n)),
            Err(e) => {
                self.error(map, e);
                None
            }
        }
    }

    /// One entry of `spec.applicationRefs` (at `field`), with its images;
    /// `None` when it cannot be used (its errors are recorded).
    fn app_ref(&mut self, r: NodeId, field: &str, updater: &ImageUpdater) -> Option<AppRef> {
        let file = self.file;
        self.known(
            r,
            field,
            &[
                "namePattern",
                "labelSelectors",
                "useAnnotations",
                "commonUpdateSettings",
                "writeBackConfig",
                "imagesVerification",
                "images",
            ],
        );
        let Some(pattern) = self.string(r, "namePattern", &format!("{field}.namePattern")) else {
            self.error(r, format!("{field}.namePattern is missing"));
            return None;
        };
        let glob = match Glob::new(&pattern.value) {
            Ok(g) => g,
            Err(e) => {
                let d = Diagnostic::error(format!(
                    "{}: {field}.namePattern {:?}: {e}",
                    self.what, pattern.value
                ))
                .at(pattern.location.clone());
                self.errors.push(d);
                return None;
            }
        };
        let selector = self.selector(r, field);
        let use_annotations = self
            .boolean(r, "useAnnotations", &format!("{field}.useAnnotations"))
            .unwrap_or(false);
        let settings = self.settings(r, field);
        let write_back = self.write_back(r, field);
        let verify = self.verify(r, field, &updater.namespace);
        let mut images = Vec::new();
        let mut aliases = HashSet::new();
        let image_nodes: Vec<NodeId> = file
            .tree
            .get(r, "images")
            .map(|n| file.tree.items(n).to_vec())
            .unwrap_or_default();
        if let Some(over) = image_nodes.get(MAX_IMAGES_PER_APPLICATION) {
            let message =
                too_many_images(&format!("{}: {field}.images", self.what), image_nodes.len());
            self.errors
                .push(Diagnostic::error(message).at(file.location(*over)));
            return None;
        }
        if !use_annotations && image_nodes.is_empty() {
            self.error(
                r,
                format!("{field}: set useAnnotations: true or list images"),
            );
        }
        let base = updater.settings.merged(&settings);
        for (j, img) in image_nodes.into_iter().enumerate() {
            let ifield = format!("{field}.images[{j}]");
            let img = file.tree.resolve(img);
            if let Some(image) = self.image(img, &ifield, &base, &updater.namespace, &mut aliases) {
                images.push(image);
            }
        }
        Some(AppRef {
            score: specificity(&pattern.value, selector.as_ref().map(|(_, n)| *n)),
            glob,
            selector,
            use_annotations,
            settings,
            write_back,
            verify,
            images,
            location: file.location(r),
        })
    }

    /// One entry of an application reference's `images` (at `ifield`), its
    /// settings merged over `base`; `None` when it cannot be used (its
    /// errors are recorded). `aliases` holds the reference's aliases so far.
    fn image(
        &mut self,
        img: NodeId,
        ifield: &str,
        base: &UpdateSettings,
        namespace: &str,
        aliases: &mut HashSet<String>,
    ) -> Option<CrImage> {
        self.known(
            img,
            ifield,
            &[
                "alias",
                "imageName",
                "commonUpdateSettings",
                "imagesVerification",
                "manifestTargets",
            ],
        );
        let alias = self.string(img, "alias", &format!("{ifield}.alias"));
        let image_name = self.string(img, "imageName", &format!("{ifield}.imageName"));
        let (Some(alias), Some(image_name)) = (alias, image_name) else {
            self.error(img, format!("{ifield} needs alias and imageName"));
            return None;
        };
        if let Err(e) = split_entry(&image_name.value) {
            let d = Diagnostic::error(format!("{}: {ifield}.imageName: {e}", self.what))
                .at(image_name.location.clone());
            self.errors.push(d);
            return None;
        }
        if aliases.contains(&alias.value) {
            let d = Diagnostic::error(format!(
                "{}: {ifield}.alias {:?} is listed twice",
                self.what, alias.value
            ))
            .at(alias.location.clone());
            self.errors.push(d);
            return None;
        }
        if alias.value.contains(':') || alias.value.is_empty() {
            let d = Diagnostic::error(format!(
                "{}: {ifield}.alias {:?} must be non-empty and without ':'",
                self.what, alias.value
            ))
            .at(alias.location.clone());
            self.errors.push(d);
            return None;
        }
        let image_settings = self.settings(img, ifield);
        // Checked where written, whether or not an Application is selected.
        let merged = base.merged(&image_settings);
        let mut config = None;
        if let Ok((_, _, constraint)) = split_entry(&image_name.value) {
            match policy_config(&merged, constraint.as_deref(), &image_name.location) {
                Ok(c) => config = Some(c),
                Err(e) => {
                    let d = Diagnostic::error(format!("{}: {ifield}: {}", self.what, e.message));
                    self.errors.push(match e.location {
                        Some(at) => d.at(at),
                        None => d,
                    });
                }
            }
        }
        aliases.insert(alias.value.clone());
        Some(CrImage {
            config,
            settings: image_settings,
            verify: self.verify(img, ifield, namespace),
            target: self.target(img, ifield),
            location: image_name.location.clone(),
            alias: alias.value,
            image_name: image_name.value,
        })
    }
}

/// Read the `ImageUpdater` at `node` of `file`; `default_namespace` is assumed when it has none.
///
/// # Errors
/// Every problem found; warnings (unknown fields) go to `warnings` either way.
pub(crate) fn read(
    file: &ParsedFile<'_>,
    node: NodeId,
    default_namespace: &str,
    warnings: &mut Vec<Diagnostic>,
) -> Result<ImageUpdater, Vec<Diagnostic>> {
    let (namespace, name) = namespace_name(&file.tree, node);
    let namespace = namespace.unwrap_or_else(|| default_namespace.to_owned());
    let mut f = Fields {
        file,
        what: format!("ImageUpdater {namespace}/{name}"),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let mut updater = ImageUpdater {
        namespace,
        name,
        settings: UpdateSettings::default(),
        write_back: WriteBackSettings::default(),
        verify: None,
        refs: Vec::new(),
        index: Box::default(),
    };
    let Some(spec) = f.map(node, "spec", "spec") else {
        f.error(node, "spec is missing");
        return Err(f.errors);
    };
    f.known(
        spec,
        "spec",
        &[
            "namespace",
            "commonUpdateSettings",
            "writeBackConfig",
            "imagesVerification",
            "applicationRefs",
        ],
    );
    updater.settings = f.settings(spec, "spec");
    updater.write_back = f.write_back(spec, "spec");
    updater.verify = f.verify(spec, "spec", &updater.namespace).map(Box::new);
    let refs = file
        .tree
        .get(spec, "applicationRefs")
        .filter(|r| file.tree.is_seq(*r));
    let ref_nodes: Vec<NodeId> = refs
        .map(|r| file.tree.items(r).to_vec())
        .unwrap_or_default();
    if ref_nodes.is_empty() {
        f.error(spec, "spec.applicationRefs needs at least one entry");
    }
    if let Some(over) = ref_nodes.get(MAX_APPLICATION_REFS) {
        let message = over_limit(
            &format!("{}: spec.applicationRefs", f.what),
            ref_nodes.len(),
            "references",
            MAX_APPLICATION_REFS,
            "ImageUpdater",
        );
        f.errors
            .push(Diagnostic::error(message).at(file.location(*over)));
        warnings.append(&mut f.warnings);
        return Err(f.errors);
    }
    for (i, r) in ref_nodes.into_iter().enumerate() {
        let field = format!("spec.applicationRefs[{i}]");
        if let Some(app_ref) = f.app_ref(file.tree.resolve(r), &field, &updater) {
            updater.refs.push(app_ref);
        }
    }
    warnings.append(&mut f.warnings);
    if f.errors.is_empty() {
        updater.index = Box::new(RefIndex::new(&updater.refs));
        Ok(updater)
    } else {
        Err(f.errors)
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::argocd::application::{self, ObjectRef};

    fn parsed(text: &str) -> ParsedFile<'_> {
        ParsedFile {
            origin: "t.yaml".into(),
            tree_path: None,
            tree: Tree::parse(text).unwrap(),
        }
    }

    /// The index finds what trying every reference in order finds: the most specific reference
    /// that selects the Application, the first written of those as specific.
    #[test]
    fn indexed_references_agree_with_trying_each() {
        let refs = [
            ("shop", ""),
            ("shop-*", ""),
            ("*-eu", ""),
            ("*", "matchLabels: {tier: web}"),
            (
                "*",
                "matchExpressions: [{key: team, operator: In, values: [a, b]}]",
            ),
            ("s?op-*", ""),
            ("*o*", ""),
            ("shop-*", "matchLabels: {tier: web}"),
            ("shop-*", ""),
            ("[a-z]*", ""),
            (
                "*",
                "matchExpressions: [{key: team, operator: NotIn, values: [a]}]",
            ),
            ("shop-eu", ""),
            ("\u{e9}*", ""),
            ("*u", "matchExpressions: [{key: tier, operator: Exists}]"),
            ("s*-eu", ""),
            ("sh*p-us", ""),
        ];
        let mut cr = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: argocd}\nspec:\n  applicationRefs:\n".to_owned();
        for (pattern, selector) in refs {
            cr.push_str(&format!(
                "  - namePattern: \"{pattern}\"\n    useAnnotations: true\n"
            ));
            if !selector.is_empty() {
                cr.push_str(&format!("    labelSelectors: {{{selector}}}\n"));
            }
        }
        let file = parsed(&cr);
        let root = file.tree.docs()[0].root.unwrap();
        let u = read(&file, root, "argocd", &mut Vec::new()).unwrap();
        let names = [
            // Kubernetes names only (an Application's is checked where it is read).
            "shop", "shop-eu", "shop-us", "xo", "e.a", "shop-1", "a-eu", "zzz", "s1op-x", "u",
        ];
        let labels = [
            "{}",
            "{tier: web}",
            "{team: a}",
            "{team: c}",
            "{tier: web, team: b}",
        ];
        let mut apps = String::new();
        for (i, name) in names.iter().enumerate() {
            for (j, l) in labels.iter().enumerate() {
                let ns = if (i + j) % 7 == 6 { "other" } else { "argocd" };
                apps.push_str(&format!(
                    "---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: \"{name}\", namespace: {ns}, labels: {l}}}\nspec: {{source: {{repoURL: https://x.test/r.git, path: p}}}}\n"
                ));
            }
        }
        let apps_file = parsed(&apps);
        let mut seen = 0;
        for (di, doc) in apps_file.tree.docs().iter().enumerate() {
            let Some(node) = doc.root else { continue };
            let app = application::read(
                &apps_file,
                ObjectRef {
                    file: 0,
                    document: di,
                    node,
                },
                "argocd",
            )
            .unwrap();
            let mut best: Option<&AppRef> = None;
            if app.id.namespace == u.namespace {
                for r in u.refs.iter().filter(|r| r.matches(&app)) {
                    if best.is_none_or(|b| r.score > b.score) {
                        best = Some(r);
                    }
                }
            }
            let found = u.best_ref(&app);
            assert_eq!(
                found.map(|r| r.location.to_string()),
                best.map(|r| r.location.to_string()),
                "{} {:?}",
                app.id,
                app.labels
            );
            seen += usize::from(found.is_some());
        }
        assert!(seen > 20, "{seen} Applications selected");
    }

    /// The errors reading the CR `text`.
    fn errors(text: &str) -> Vec<String> {
        let file = parsed(text);
        let root = file.tree.docs()[0].root.unwrap();
        let errors = read(&file, root, "argocd", &mut Vec::new()).unwrap_err();
        errors.iter().map(ToString::to_string).collect()
    }

    /// A string field holding a number is refused at its position, as the Flux automation's
    /// reader refuses it (one rule for plain scalars); quoted, it is text.
    #[test]
    fn a_number_where_a_string_is_meant_is_refused() {
        let cr = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: argocd}\nspec:\n  writeBackConfig:\n    method: git\n    gitConfig: {branch: 1}\n  applicationRefs:\n  - {namePattern: a, useAnnotations: true}\n";
        assert_eq!(
            errors(cr),
            [
                "t.yaml:7:25: error: ImageUpdater argocd/u: spec.writeBackConfig.gitConfig.branch is not a string"
            ]
        );
        let quoted = cr.replace("branch: 1", "branch: '1'");
        let file = parsed(&quoted);
        let root = file.tree.docs()[0].root.unwrap();
        assert!(read(&file, root, "argocd", &mut Vec::new()).is_ok());
    }

    /// More images in a reference, or more references, than the limits: an error at the first
    /// one over, nothing read.
    #[test]
    fn limits() {
        let head = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: argocd}\nspec:\n  applicationRefs:\n";
        let mut cr = format!("{head}  - namePattern: a\n    images:\n");
        for i in 0..=MAX_IMAGES_PER_APPLICATION {
            writeln!(cr, "    - {{alias: i{i}, imageName: ghcr.io/acme/i{i}}}").unwrap();
        }
        assert_eq!(
            errors(&cr),
            [
                "t.yaml:10008:7: error: ImageUpdater argocd/u: spec.applicationRefs[0].images lists 10001 images; at most 10000 are read per Application (split them over several)"
            ]
        );
        let mut cr = head.to_owned();
        for i in 0..=MAX_APPLICATION_REFS {
            writeln!(cr, "  - {{namePattern: a{i}, useAnnotations: true}}").unwrap();
        }
        assert_eq!(
            errors(&cr),
            [
                "t.yaml:10006:5: error: ImageUpdater argocd/u: spec.applicationRefs lists 10001 references; at most 10000 are read per ImageUpdater (split them over several)"
            ]
        );
    }

    /// `imagesVerification` at each scope: the most specific block's fields win, `enabled: false`
    /// opts an image out, and a block that asks for verification names its key (the CRD's rule).
    #[test]
    fn images_verification_merges_and_needs_a_key() {
        let cr = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: shop}\nspec:\n  imagesVerification:\n    cosignKey: {secretName: org-key, key: cosign.pub}\n  applicationRefs:\n  - namePattern: web\n    images:\n    - {alias: a, imageName: ghcr.io/acme/a}\n    - alias: b\n      imageName: ghcr.io/acme/b\n      imagesVerification: {enabled: false}\n    - alias: c\n      imageName: ghcr.io/acme/c\n      imagesVerification:\n        cosignKey: {secretName: c-key, key: c.pub}\n  - namePattern: api\n    imagesVerification: {enabled: false}\n    images:\n    - {alias: d, imageName: ghcr.io/acme/d}\n    - alias: e\n      imageName: ghcr.io/acme/e\n      imagesVerification: {cosignKey: {secretName: e-key, key: e.pub}}\n";
        let file = parsed(cr);
        let root = file.tree.docs()[0].root.unwrap();
        let u = read(&file, root, "argocd", &mut Vec::new()).unwrap();
        let required = |r: usize, i: usize| {
            Verification::required(&[
                u.verify.as_deref(),
                u.refs[r].verify.as_ref(),
                u.refs[r].images[i].verify.as_ref(),
            ])
            .map(|k| k.to_string())
        };
        assert_eq!(
            required(0, 0).as_deref(),
            Some("cosign.pub of Secret shop/org-key")
        );
        assert_eq!(required(0, 1), None);
        assert_eq!(
            required(0, 2).as_deref(),
            Some("c.pub of Secret shop/c-key")
        );
        assert_eq!(required(1, 0), None);
        // enabled again by the image's block (true unless it says otherwise), with its key.
        assert_eq!(
            required(1, 1).as_deref(),
            Some("e.pub of Secret shop/e-key")
        );
        let key = Verification::required(&[u.verify.as_deref()]).unwrap();
        assert_eq!(key.location.to_string(), "t.yaml:6:16");

        let bad = cr
            .replace(
                "      imagesVerification: {enabled: false}\n",
                "      imagesVerification: {enabled: true}\n",
            )
            .replace("secretName: c-key, key: c.pub", "secretName: ../c, key: ..")
            .replace("key: e.pub", "key: a/b");
        assert_eq!(
            errors(&bad),
            [
                "t.yaml:13:27: error: ImageUpdater shop/u: spec.applicationRefs[0].images[1].imagesVerification asks for signature verification without a key: give cosignKey {secretName, key}, or enabled: false to ask for none",
                "t.yaml:17:33: error: ImageUpdater shop/u: spec.applicationRefs[0].images[2].imagesVerification.cosignKey.secretName \"../c\" is not a Kubernetes Secret name",
                "t.yaml:24:64: error: ImageUpdater shop/u: spec.applicationRefs[1].images[1].imagesVerification.cosignKey.key \"a/b\" is not a key a Secret can hold (letters, digits, '-', '_', '.'; not '.' or '..')",
            ]
        );
        assert!(!secret_key(".."));
        assert!(secret_key("cosign.pub"));
    }

    #[test]
    fn specificity_scores() {
        assert_eq!(specificity("shop", None), 1_000_004);
        assert_eq!(specificity("shop-*", None), 5);
        assert_eq!(specificity("shop-[a-z]?", None), 5);
        assert_eq!(specificity("*", Some(2)), 10_200);
        assert!(specificity("shop-prod-*", None) > specificity("shop-*", None));
        assert!(specificity("*", Some(0)) > specificity("shop-prod-eu-*", None));
    }
}
