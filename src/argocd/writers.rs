//! The four write-back targets, each planned as edits on one file's [`Editor`]:
//!
//! * [`override_file`]: `.argocd-source-APP.yaml` (or any override file): `kustomize.images`,
//!   `helm.parameters` or `plugin.env`, merged with what the file holds by Argo CD Image Updater's
//!   rules (kustomize images by name and registry, `docker.io` equal to none, an entry without a
//!   tag never replacing one with a tag; Helm parameters by name, only the managed ones, new ones
//!   in name order; plugin variables by name);
//! * [`kustomization`]: the `images:` entries of a kustomization, set as `kustomize edit set image`
//!   sets them (by `name`; `newName`, `newTag`, `digest` added, changed or removed);
//! * [`helm_values`]: Helm value paths in a values file (a literal dotted key first, else the
//!   nested path with `[N]` indices and through aliases; missing keys created);
//! * [`application`]: the Application manifest's own source (the `argocd` method).
//!
//! A writer first compares what the target holds with what it would write: when no image of the
//! Application changes, it plans nothing (and nothing is committed). Otherwise it writes every image
//! of the Application, as Argo CD Image Updater re-sets up-to-date images too, and returns the
//! images that changed.

use std::collections::{HashMap, HashSet};

use super::application::{HelmParam, Source};
use super::config::ImageSpec;
use super::spec_update::{
    HelmNames, KustomizeImages, current_helm, current_plugin, env_by_name, helm_by_name,
    helm_names, helm_params, kustomize_param, merge_env, merge_helm_params, parse_tag_value,
    plugin_env, plugin_names,
};
use crate::argo_image::{ArgoImage, ImageTag, has_registry_prefix, short_form};
use crate::policies::PolicyKey;
use crate::yaml::edit::{EditProblem, Editor, Handle, Shape};

/// One image of an Application, with the image it moves to.
#[derive(Debug, Clone)]
pub(crate) struct Planned<'c> {
    pub spec: &'c ImageSpec,
    pub key: PolicyKey,
    /// The configured image with the chosen tag and digest.
    pub new: ArgoImage,
}

/// A part of a changed field's path.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    Key(String),
    /// A path already written out (`spec.sources[1]`).
    Raw(String),
    /// The item's index in the sequence, computed when the file is finished.
    Item {
        seq: Handle,
        item: Handle,
    },
}

/// One value written.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub path: Vec<Part>,
    /// Index of the value in the editor's tracked scalars.
    pub tracked: usize,
    pub old: String,
    pub new: String,
    /// The policy key that owns the value: its image's, or the
    /// Application's (`NAMESPACE:APP`) when no image owns it.
    pub key: PolicyKey,
    pub alias: String,
}

/// An image whose value changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Moved {
    pub key: PolicyKey,
    pub alias: String,
    pub old: Option<ImageTag>,
    pub new: ImageTag,
}

/// A writer's problem: a message and where in the target file (`None`: not about a place).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub offset: Option<usize>,
    pub message: String,
}

impl From<EditProblem> for Problem {
    fn from(e: EditProblem) -> Self {
        Self {
            offset: Some(e.offset),
            message: e.message,
        }
    }
}

type Out = Result<Vec<Moved>, Problem>;

/// Shared by the writers: the editor and the records of one file.
pub(crate) struct Writer<'e, 't, 'a> {
    pub editor: &'e mut Editor<'t, 'a>,
    pub records: &'e mut Vec<Record>,
    /// The key of values that belong to no image (`NAMESPACE:APP`).
    pub app_key: PolicyKey,
}

impl Writer<'_, '_, '_> {
    fn record(
        &mut self,
        path: Vec<Part>,
        value: Handle,
        old: String,
        new: &str,
        key: &PolicyKey,
        alias: &str,
    ) {
        let tracked = self.editor.track(value);
        self.records.push(Record {
            path,
            tracked,
            old,
            new: new.to_owned(),
            key: key.clone(),
            alias: alias.to_owned(),
        });
    }

    /// The mapping at `key` of `map`, created when missing.
    fn map_at(&mut self, map: Handle, key: &str) -> Result<Handle, Problem> {
        self.collection_at(map, key, Shape::Map)
    }

    /// The sequence at `key` of `map`, created when missing.
    fn seq_at(&mut self, map: Handle, key: &str) -> Result<Handle, Problem> {
        self.collection_at(map, key, Shape::Seq)
    }

    fn collection_at(&mut self, map: Handle, key: &str, want: Shape) -> Result<Handle, Problem> {
        match self.editor.get(map, key) {
            Some(h)
                if matches!(self.editor.shape(h), Shape::Null) || self.editor.shape(h) == want =>
            {
                Ok(h)
            }
            Some(h) => Err(self.not(h, key, want.described())),
            None => {
                let c = if want == Shape::Map {
                    self.editor.new_map()
                } else {
                    self.editor.new_seq()
                };
                self.editor.insert(map, key, c)?;
                Ok(c)
            }
        }
    }

    fn not(&self, h: Handle, key: &str, what: &str) -> Problem {
        Problem {
            offset: match self.editor.resolve(h) {
                Handle::Real(id) => Some(self.editor.tree().node(id).range.start),
                Handle::New(_) => None,
            },
            message: format!(
                "{key} holds {}, not {what}",
                self.editor.shape(h).described()
            ),
        }
    }

    /// The scalar texts of a sequence's items (`""` for others).
    fn strings(&self, seq: Handle) -> Vec<(Handle, String)> {
        self.editor
            .items(seq)
            .into_iter()
            .map(|i| (i, self.editor.scalar(i).unwrap_or_default()))
            .collect()
    }

    /// The `name` → (item, `value`) of a sequence of `{name, value}` mappings.
    fn named(&self, seq: Handle) -> Vec<(Handle, String, Option<Handle>)> {
        self.editor
            .items(seq)
            .into_iter()
            .filter(|i| self.editor.shape(*i) == Shape::Map)
            .map(|i| {
                let name = self
                    .editor
                    .get(i, "name")
                    .and_then(|n| self.editor.scalar(n))
                    .unwrap_or_default();
                (i, name, self.editor.get(i, "value"))
            })
            .collect()
    }

    /// The `name` and `value` of the items of `SECTION.LIST` of `root` (`helm.parameters`,
    /// `plugin.env`).
    fn pairs(&self, root: Handle, section: &str, list: &str) -> Vec<(String, String)> {
        self.editor
            .get(root, section)
            .and_then(|h| self.editor.get(h, list))
            .map(|s| {
                self.named(s)
                    .into_iter()
                    .map(|(_, name, v)| {
                        (
                            name,
                            v.and_then(|v| self.editor.scalar(v)).unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A new `{name: NAME}` mapping at the end of a sequence.
    fn push_named(&mut self, seq: Handle, name: &str) -> Result<Handle, Problem> {
        let item = self.editor.new_map();
        let n = self.editor.new_scalar(name);
        self.editor.insert(item, "name", n)?;
        self.editor.push(seq, item)?;
        Ok(item)
    }

    /// The key and alias of a value: its image's, or the Application's when no image owns it.
    fn owner(&self, p: Option<&Planned<'_>>) -> (PolicyKey, String) {
        p.map_or((self.app_key.clone(), String::new()), |p| {
            (p.key.clone(), p.spec.alias.clone())
        })
    }

    /// Set `key` of mapping `map` to `value`: replace the scalar, or add the entry.
    fn set_field(
        &mut self,
        map: Handle,
        key: &str,
        value: &str,
    ) -> Result<(Handle, String), Problem> {
        match self.editor.get(map, key) {
            Some(h) => {
                let old = self.editor.scalar(h).unwrap_or_default();
                if old != value {
                    self.editor.set_scalar(h, value)?;
                }
                Ok((h, old))
            }
            None => {
                let v = self.editor.new_scalar(value);
                self.editor.insert(map, key, v)?;
                Ok((v, String::new()))
            }
        }
    }

    /// Make a boolean field (`forcestring`, matched in any case) hold `value`.
    fn set_flag(&mut self, map: Handle, key: &str, value: bool) -> Result<(), Problem> {
        let text = if value { "true" } else { "false" };
        let found = self
            .editor
            .entries(map)
            .into_iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key));
        match found {
            Some((_, h)) => {
                let now = self.editor.scalar(h).unwrap_or_default();
                if !now.eq_ignore_ascii_case(text) {
                    self.editor.set_raw(h, text)?;
                }
            }
            None => {
                let v = self.editor.new_raw(text);
                self.editor.insert(map, key, v)?;
            }
        }
        Ok(())
    }
}

/// The items of a sequence of `{name, ...}` mappings by name, the first of each, kept up to date
/// as items are added: a scan of the sequence for each value written made writing an
/// Application's N images take N² steps.
struct NamedItems {
    seq: Handle,
    /// By name: the item and its place ([`Place`]).
    named: HashMap<String, (Place, Handle)>,
    /// The first mapping without a `name` (a scan reading names as `""` found it for `""`).
    unnamed: Option<(Place, Handle)>,
    /// Items added at the end so far.
    pushed: usize,
}

/// Where an item is in its sequence, in order: an item of the file is `(index, 1)`, an item
/// inserted before it `(index, 0)`, the n-th item added at the end `(usize::MAX, n)`.
type Place = (usize, usize);

impl NamedItems {
    fn new(w: &Writer<'_, '_, '_>, seq: Handle) -> Self {
        let mut named = HashMap::new();
        let mut unnamed = None;
        for (i, item) in w.editor.items(seq).into_iter().enumerate() {
            if w.editor.shape(item) != Shape::Map {
                continue;
            }
            // Items are read before any is added: their places are their indexes.
            let place = (i, 1);
            match w.editor.get(item, "name").and_then(|n| w.editor.scalar(n)) {
                Some(name) => {
                    named.entry(name).or_insert((place, item));
                }
                None => {
                    unnamed.get_or_insert((place, item));
                }
            }
        }
        Self {
            seq,
            named,
            unnamed,
            pushed: 0,
        }
    }

    /// The first item whose `name` is `name` (items without a name left out).
    fn get(&self, name: &str) -> Option<Handle> {
        self.named.get(name).map(|(_, h)| *h)
    }

    /// The first item whose `name` is `name` (an item without a name counting as named `""`).
    fn find(&self, name: &str) -> Option<Handle> {
        let unnamed = self.unnamed.filter(|_| name.is_empty());
        match (self.named.get(name).copied(), unnamed) {
            (Some(a), Some(b)) => Some(if a.0 < b.0 { a.1 } else { b.1 }),
            (a, b) => a.or(b).map(|(_, h)| h),
        }
    }

    /// The first item named `name` ([`NamedItems::find`]), added at the end when missing.
    fn item(&mut self, w: &mut Writer<'_, '_, '_>, name: &str) -> Result<Handle, Problem> {
        if let Some(item) = self.find(name) {
            return Ok(item);
        }
        let item = w.push_named(self.seq, name)?;
        self.added(name, item, None);
        Ok(item)
    }

    /// `item`, named `name`, was added to the sequence: before the file's item at `before`, or
    /// at the end.
    fn added(&mut self, name: &str, item: Handle, before: Option<usize>) {
        let place = match before {
            Some(index) => (index, 0),
            None => {
                self.pushed += 1;
                (usize::MAX, self.pushed)
            }
        };
        self.named.entry(name.to_owned()).or_insert((place, item));
    }
}

/// The first item of a sequence of the file whose `name` sorts after a name (where a parameter
/// goes in a sorted list): the names sorted once, with the smallest place among those after each,
/// instead of a scan for every parameter added.
struct FirstAfter {
    /// Names in descending order, each with the first place of a name at or after it.
    sorted: Vec<(String, usize)>,
}

impl FirstAfter {
    fn new(w: &Writer<'_, '_, '_>, seq: Handle) -> Self {
        let mut sorted: Vec<(String, usize)> = match w.editor.resolve(seq) {
            Handle::Real(id) => w
                .editor
                .tree()
                .items(id)
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    w.editor
                        .get(Handle::Real(*r), "name")
                        .and_then(|n| w.editor.scalar(n))
                        .map(|n| (n, i))
                })
                .collect(),
            Handle::New(_) => Vec::new(),
        };
        sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut least = usize::MAX;
        for entry in &mut sorted {
            least = least.min(entry.1);
            entry.1 = least;
        }
        Self { sorted }
    }

    /// The first place whose name sorts after `name`.
    fn first_after(&self, name: &str) -> Option<usize> {
        let after = self.sorted.partition_point(|(n, _)| n.as_str() > name);
        after.checked_sub(1).map(|i| self.sorted[i].1)
    }
}

/// Whether an image's current value differs from what is written: the tag (by Argo's tag
/// equality), or, with a kustomize name, the name the entry replaces.
fn differs(current: Option<&str>, image: &ImageSpec, new: &ArgoImage) -> bool {
    let Some(current) = current else {
        return true;
    };
    let cur = ArgoImage::parse(current);
    let tag_differs = match (&cur.tag, &new.tag) {
        (Some(a), Some(b)) => !a.equals(b),
        (None, None) => false,
        _ => true,
    };
    let name_differs = match &image.target.kustomize_name {
        Some(k) => cur.alias != *k || cur.full_name() != new.full_name(),
        None => false,
    };
    tag_differs || name_differs
}

fn old_tag(current: Option<&str>) -> Option<ImageTag> {
    current.and_then(|c| ArgoImage::parse(c).tag)
}

/// The source's kustomize images with every image set (`SetKustomizeImage` for each).
fn kustomize_list(source: &Source, planned: &[Planned<'_>]) -> Vec<String> {
    let mut list = KustomizeImages::new(source.kustomize_images.clone());
    for p in planned {
        list.set(p.spec, &p.new);
    }
    list.into_items()
}

/// The image that writes each kustomize image value (the first one, as a scan would find it).
fn kustomize_owners<'p, 'c>(planned: &'p [Planned<'c>]) -> HashMap<String, &'p Planned<'c>> {
    let mut owners = HashMap::with_capacity(planned.len());
    for p in planned {
        owners.entry(kustomize_param(p.spec, &p.new)).or_insert(p);
    }
    owners
}

/// What an override file's kustomize images are matched by: the name and the registry, Docker
/// Hub written `docker.io` and left implicit being one ([`ArgoImage::same_name_and_registry`]).
fn name_and_registry(image: &ArgoImage) -> (String, String) {
    let registry = if image.registry == "docker.io" {
        ""
    } else {
        image.registry.as_str()
    };
    (image.name.clone(), registry.to_owned())
}

fn moved(p: &Planned<'_>, old: Option<ImageTag>) -> Moved {
    Moved {
        key: p.key.clone(),
        alias: p.spec.alias.clone(),
        old,
        new: p.new.tag.clone().unwrap_or_default(),
    }
}

/// The images whose Helm parameters (`params`: what Argo CD renders now) do not hold them yet.
fn helm_moved(params: &[HelmParam], planned: &[Planned<'_>]) -> Vec<Moved> {
    let params = helm_by_name(params);
    let params = &params;
    planned
        .iter()
        .filter(|p| {
            let new = match helm_names(p.spec) {
                HelmNames::Spec(_) => p.new.full_name_with_tag(),
                HelmNames::NameTag(..) => {
                    format!("{}:{}", p.new.full_name(), p.new.tag_with_digest())
                }
            };
            current_helm(params, p.spec).as_deref() != Some(new.as_str())
        })
        .map(|p| moved(p, helm_old_tag(params, p.spec)))
        .collect()
}

/// The images with plugin targets whose variables (`env`: what Argo CD renders now) do not hold
/// them yet.
fn plugin_moved(env: &[(String, String)], planned: &[Planned<'_>]) -> Vec<Moved> {
    let env = env_by_name(env);
    let env = &env;
    planned
        .iter()
        .filter(|p| p.spec.target.is_plugin())
        .filter_map(|p| {
            let current = current_plugin(env, p.spec);
            let new = match &p.spec.target.plugin_spec {
                Some(_) => p.new.full_name_with_tag(),
                None => format!("{}:{}", p.new.full_name(), p.new.tag_with_digest()),
            };
            (current.as_deref() != Some(new.as_str()))
                .then(|| moved(p, current.and_then(|c| ArgoImage::parse(&c).tag)))
        })
        .collect()
}

/// Which image each value (by name) belongs to: the first that writes it.
type Owners<'p, 'c> = HashMap<String, &'p Planned<'c>>;

/// `base` with the variables of every image with plugin targets set (`SetPluginImage`), and which
/// image each variable belongs to.
fn plugin_list<'p, 'c>(
    mut base: Vec<(String, String)>,
    planned: &'p [Planned<'c>],
) -> (Vec<(String, String)>, Owners<'p, 'c>) {
    let mut owners = HashMap::new();
    let mut all = Vec::new();
    for p in planned.iter().filter(|p| p.spec.target.is_plugin()) {
        let env = plugin_env(p.spec, &p.new);
        for (k, _) in &env {
            owners.entry(k.clone()).or_insert(p);
        }
        all.extend(env);
    }
    merge_env(&mut base, all);
    (base, owners)
}

/// Write `env` (the variables of every image with plugin targets, `names` the managed ones) into
/// the `env` sequence of `plugin` at `prefix`.
fn write_env(
    w: &mut Writer<'_, '_, '_>,
    seq: Handle,
    prefix: &[Part],
    env: Vec<(String, String)>,
    owners: &Owners<'_, '_>,
) -> Result<(), Problem> {
    let mut items = NamedItems::new(w, seq);
    for (name, value) in env {
        let (key, alias) = w.owner(owners.get(&name).copied());
        let item = items.item(w, &name)?;
        let (h, old) = w.set_field(item, "value", &value)?;
        if old != value {
            let mut path = prefix.to_vec();
            path.extend([
                Part::Key("plugin".into()),
                Part::Key("env".into()),
                Part::Item { seq, item },
                Part::Key("value".into()),
            ]);
            w.record(path, h, old, &value, &key, &alias);
        }
    }
    Ok(())
}

/// Which list an override file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OverrideKind {
    Kustomize,
    Helm,
    Plugin,
}

/// Plan `.argocd-source` (override file) edits for the Application's images.
///
/// # Errors
/// The file's structure is in the way (`kustomize` is a scalar...).
pub(crate) fn override_file(
    w: &mut Writer<'_, '_, '_>,
    kind: OverrideKind,
    source: &Source,
    all: &[&ImageSpec],
    planned: &[Planned<'_>],
) -> Out {
    let root = w.editor.root()?;
    match kind {
        OverrideKind::Kustomize => override_kustomize(w, root, source, planned),
        OverrideKind::Helm => override_helm(w, root, source, all, planned),
        OverrideKind::Plugin => override_plugin(w, root, source, all, planned),
    }
}

fn override_kustomize(
    w: &mut Writer<'_, '_, '_>,
    root: Handle,
    source: &Source,
    planned: &[Planned<'_>],
) -> Out {
    // The file's entries by name and registry, the first of each (looked up once per image).
    let mut in_file: HashMap<(String, String), String> = HashMap::new();
    if let Some(seq) = w
        .editor
        .get(root, "kustomize")
        .and_then(|k| w.editor.get(k, "images"))
    {
        for (_, e) in w.strings(seq) {
            in_file
                .entry(name_and_registry(&ArgoImage::parse(&e)))
                .or_insert(e);
        }
    }
    let source_images = KustomizeImages::new(source.kustomize_images.clone());
    let mut moved = Vec::new();
    for p in planned {
        let current = in_file
            .get(&name_and_registry(&p.new))
            .map(String::as_str)
            .or_else(|| source_images.current(p.spec));
        if differs(current, p.spec, &p.new) {
            moved.push(self::moved(p, old_tag(current)));
        }
    }
    if moved.is_empty() {
        return Ok(moved);
    }
    let list = kustomize_list(source, planned);
    let owners = kustomize_owners(planned);
    let kustomize = w.map_at(root, "kustomize")?;
    let images = w.seq_at(kustomize, "images")?;
    // The items by name and registry, the first of each; an item set keeps its name and registry,
    // an item added is the first of its own.
    let mut items: HashMap<(String, String), Handle> = HashMap::new();
    for (item, e) in w.strings(images) {
        items
            .entry(name_and_registry(&ArgoImage::parse(&e)))
            .or_insert(item);
    }
    for value in &list {
        let (owner, alias) = w.owner(owners.get(value).copied());
        let new = ArgoImage::parse(value);
        let key = name_and_registry(&new);
        let found = items
            .get(&key)
            .map(|&item| (item, w.editor.scalar(item).unwrap_or_default()));
        let path = |item| {
            vec![
                Part::Key("kustomize".into()),
                Part::Key("images".into()),
                Part::Item { seq: images, item },
            ]
        };
        match found {
            Some((item, old)) => {
                let existing = ArgoImage::parse(&old);
                let replace = match (&existing.tag, &new.tag) {
                    (None, _) => true,
                    (Some(a), Some(b)) => !a.equals(b),
                    (Some(_), None) => false,
                };
                if replace && old != *value {
                    w.editor.set_scalar(item, value)?;
                    w.record(path(item), item, old, value, &owner, &alias);
                }
            }
            None => {
                let item = w.editor.new_scalar(value);
                w.editor.push(images, item)?;
                items.insert(key, item);
                w.record(path(item), item, String::new(), value, &owner, &alias);
            }
        }
    }
    Ok(moved)
}

fn override_helm(
    w: &mut Writer<'_, '_, '_>,
    root: Handle,
    source: &Source,
    all: &[&ImageSpec],
    planned: &[Planned<'_>],
) -> Out {
    let in_file: Vec<HelmParam> = w
        .pairs(root, "helm", "parameters")
        .into_iter()
        .map(|(name, value)| HelmParam {
            name,
            value,
            force_string: true,
        })
        .collect();
    // What Argo CD renders now: the Application's parameters, overridden by the file's.
    let mut effective = source.helm_parameters.clone();
    merge_helm_params(&mut effective, in_file);
    let moved = helm_moved(&effective, planned);
    if moved.is_empty() {
        return Ok(moved);
    }
    let mut list = source.helm_parameters.clone();
    let mut owners: Owners<'_, '_> = HashMap::new();
    let mut set = Vec::new();
    for p in planned {
        let params = helm_params(p.spec, &p.new);
        for q in &params {
            owners.entry(q.name.clone()).or_insert(p);
        }
        set.extend(params);
    }
    merge_helm_params(&mut list, set);
    let names: HashSet<String> = all
        .iter()
        .flat_map(|i| {
            helm_names(i)
                .all()
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut params: Vec<HelmParam> = list
        .into_iter()
        .filter(|q| names.contains(&q.name))
        .collect();
    params.sort_by(|a, b| a.name.cmp(&b.name));
    let helm = w.map_at(root, "helm")?;
    let seq = w.seq_at(helm, "parameters")?;
    let mut items = NamedItems::new(w, seq);
    let before = FirstAfter::new(w, seq);
    for param in &params {
        let (key, alias) = w.owner(owners.get(&param.name).copied());
        match items.find(&param.name) {
            Some(item) => {
                let (h, old) = w.set_field(item, "value", &param.value)?;
                if old != param.value {
                    w.set_flag(item, "forcestring", param.force_string)?;
                    let path = vec![
                        Part::Key("helm".into()),
                        Part::Key("parameters".into()),
                        Part::Item { seq, item },
                        Part::Key("value".into()),
                    ];
                    w.record(path, h, old, &param.value, &key, &alias);
                }
            }
            None => {
                let item = w.editor.new_map();
                let n = w.editor.new_scalar(&param.name);
                w.editor.insert(item, "name", n)?;
                let v = w.editor.new_scalar(&param.value);
                w.editor.insert(item, "value", v)?;
                let f = w
                    .editor
                    .new_raw(if param.force_string { "true" } else { "false" });
                w.editor.insert(item, "forcestring", f)?;
                // Before the first parameter of the file named after it, so that a sorted list
                // stays sorted; existing parameters never move.
                let index = before.first_after(&param.name);
                match index {
                    Some(index) => w.editor.insert_before(seq, index, item)?,
                    None => w.editor.push(seq, item)?,
                }
                items.added(&param.name, item, index);
                let path = vec![
                    Part::Key("helm".into()),
                    Part::Key("parameters".into()),
                    Part::Item { seq, item },
                    Part::Key("value".into()),
                ];
                w.record(path, v, String::new(), &param.value, &key, &alias);
            }
        }
    }
    Ok(moved)
}

/// The old tag of an image held in Helm parameters: its tag parameter (`tag`, `tag@digest`), or
/// the tag of its spec parameter.
fn helm_old_tag(params: &HashMap<&str, &str>, spec: &ImageSpec) -> Option<ImageTag> {
    let get = |n: &str| params.get(n).copied();
    match helm_names(spec) {
        HelmNames::Spec(s) => get(&s).and_then(|v| ArgoImage::parse(v).tag),
        HelmNames::NameTag(_, t) => get(&t).map(parse_tag_value),
    }
}

fn override_plugin(
    w: &mut Writer<'_, '_, '_>,
    root: Handle,
    source: &Source,
    all: &[&ImageSpec],
    planned: &[Planned<'_>],
) -> Out {
    let in_file = w.pairs(root, "plugin", "env");
    let mut effective = source.plugin_env.clone();
    merge_env(&mut effective, in_file);
    let moved = plugin_moved(&effective, planned);
    if moved.is_empty() {
        return Ok(moved);
    }
    let (mut list, owners) = plugin_list(source.plugin_env.clone(), planned);
    let names: HashSet<String> = all.iter().flat_map(|i| plugin_names(i)).collect();
    let plugin = w.map_at(root, "plugin")?;
    let seq = w.seq_at(plugin, "env")?;
    list.retain(|(k, _)| names.contains(k));
    write_env(w, seq, &[], list, &owners)?;
    Ok(moved)
}

/// One `images:` entry of a kustomization (kustomize's `types.Image`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KustomizeImage {
    pub name: String,
    pub new_name: String,
    pub new_tag: String,
    pub digest: String,
}

impl KustomizeImage {
    /// The fields after `name`, in kustomize's order, with their values (`""`: absent).
    fn fields(&self) -> [(&'static str, &str); 3] {
        [
            ("newName", &self.new_name),
            ("newTag", &self.new_tag),
            ("digest", &self.digest),
        ]
    }
}

/// Argo CD Image Updater's `parseImageOverride`: a kustomize image string as an `images:` entry.
/// Without an alias, the image keeps its name and only the tag and digest are set.
#[must_use]
pub(crate) fn image_override(value: &str) -> KustomizeImage {
    let img = ArgoImage::parse(value);
    let (tag, digest) = img
        .tag
        .as_ref()
        .map_or((String::new(), String::new()), |t| {
            (t.name.clone(), t.digest.clone())
        });
    let full = if img.registry.is_empty() {
        img.name.clone()
    } else {
        format!("{}/{}", img.registry, img.name)
    };
    if img.alias.is_empty() {
        KustomizeImage {
            name: full,
            new_name: String::new(),
            new_tag: tag,
            digest,
        }
    } else {
        KustomizeImage {
            name: img.alias,
            new_name: full,
            new_tag: tag,
            digest,
        }
    }
}

/// Plan the `images:` entries of a kustomization.
///
/// # Errors
/// The file's structure is in the way (`images` is a mapping, an entry is not a mapping).
pub(crate) fn kustomization(
    w: &mut Writer<'_, '_, '_>,
    source: &Source,
    planned: &[Planned<'_>],
) -> Out {
    let root = w.editor.root()?;
    // The entries by name (the first of each).
    let entries = w
        .editor
        .get(root, "images")
        .map(|images| NamedItems::new(w, images));
    let mut moved = Vec::new();
    for p in planned {
        let want = image_override(&kustomize_param(p.spec, &p.new));
        let entry = entries.as_ref().and_then(|e| e.get(&want.name));
        let current = entry.map(|e| {
            let field = |k: &str| {
                w.editor
                    .get(e, k)
                    .and_then(|n| w.editor.scalar(n))
                    .unwrap_or_default()
            };
            KustomizeImage {
                name: want.name.clone(),
                new_name: field("newName"),
                new_tag: field("newTag"),
                digest: field("digest"),
            }
        });
        if current.as_ref() != Some(&want) {
            let old = current.map(|c| ImageTag {
                name: c.new_tag,
                digest: c.digest,
            });
            moved.push(self::moved(p, old));
        }
    }
    if moved.is_empty() {
        return Ok(moved);
    }
    let list = kustomize_list(source, planned);
    let owners = kustomize_owners(planned);
    let images = w.seq_at(root, "images")?;
    let mut entries = NamedItems::new(w, images);
    for value in &list {
        let want = image_override(value);
        let (key, alias) = w.owner(owners.get(value).copied());
        let item = match entries.get(&want.name) {
            Some(item) => item,
            None => entries.item(w, &want.name)?,
        };
        for (field, value) in want.fields() {
            let path = vec![
                Part::Key("images".into()),
                Part::Item { seq: images, item },
                Part::Key(field.to_owned()),
            ];
            match (w.editor.get(item, field), value.is_empty()) {
                (Some(_), true) => w.editor.remove(item, field),
                (None, true) => {}
                (_, false) => {
                    let (h, old) = w.set_field(item, field, value)?;
                    if old != value {
                        w.record(path, h, old, value, &key, &alias);
                    }
                }
            }
        }
    }
    Ok(moved)
}

/// A Helm value path's problem, in Go yaml.v3's words where Argo CD Image Updater has them.
fn path_problem(
    w: &Writer<'_, '_, '_>,
    at: Option<Handle>,
    path: &str,
    message: String,
) -> Problem {
    Problem {
        offset: at.and_then(|h| match w.editor.resolve(h) {
            Handle::Real(id) => Some(w.editor.tree().node(id).range.start),
            Handle::New(_) => None,
        }),
        message: format!("Helm value path {path:?}: {message}"),
    }
}

/// `key[N]`: the key and the index text.
fn split_index(segment: &str) -> Option<(&str, &str)> {
    let open = segment.rfind('[')?;
    segment
        .strip_suffix(']')
        .map(|s| (&s[..open], &s[open + 1..]))
}

/// Find the value at a Helm path for reading (Argo's `getHelmValue`): the nested path first, then
/// a literal top-level key.
fn helm_get(w: &Writer<'_, '_, '_>, root: Handle, path: &str) -> Option<String> {
    let mut node = root;
    let keys: Vec<&str> = path.split('.').collect();
    let mut nested = None;
    for (i, k) in keys.iter().enumerate() {
        let (key, index) = match split_index(k) {
            Some((key, idx)) => match idx.parse::<usize>() {
                Ok(n) => (key, Some(n)),
                Err(_) => break,
            },
            None => (*k, None),
        };
        let Some(child) = w.editor.get(node, key) else {
            break;
        };
        let mut child = w.editor.resolve(child);
        match (index, w.editor.shape(child)) {
            (Some(n), Shape::Seq) => match w.editor.items(child).get(n) {
                Some(item) => child = w.editor.resolve(*item),
                None => break,
            },
            (Some(_), _) | (None, Shape::Seq) => break,
            _ => {}
        }
        if i == keys.len() - 1 {
            if w.editor.shape(child) == Shape::Scalar {
                nested = w.editor.scalar(child);
            }
            break;
        }
        if w.editor.shape(child) != Shape::Map {
            break;
        }
        node = child;
    }
    nested.or_else(|| {
        w.editor
            .get(root, path)
            .filter(|h| w.editor.shape(*h) == Shape::Scalar)
            .and_then(|h| w.editor.scalar(h))
    })
}

/// The value at the place a Helm path is written (a literal top-level key first, then the nested
/// path), without creating anything; `None` when the path leads nowhere yet.
fn helm_locate(w: &Writer<'_, '_, '_>, root: Handle, path: &str) -> Option<String> {
    if let Some(h) = w.editor.get(root, path) {
        return w.editor.scalar(h);
    }
    let mut node = root;
    for k in path.split('.') {
        let (key, index) = match split_index(k) {
            Some((key, idx)) => (key, Some(idx.parse::<usize>().ok()?)),
            None => (k, None),
        };
        node = w.editor.resolve(w.editor.get(node, key)?);
        if let Some(n) = index {
            node = w.editor.resolve(*w.editor.items(node).get(n)?);
        }
    }
    w.editor.scalar(node)
}

/// Set the value at a Helm path (Argo's `setHelmValue`): a literal top-level key equal to the whole
/// path first; else the nested path, through one alias per level, `key[N]` selecting sequence
/// items, missing mappings and the last key created. Returns the written scalar, its field path
/// and the value it held.
fn helm_set(
    w: &mut Writer<'_, '_, '_>,
    root: Handle,
    path: &str,
    value: &str,
) -> Result<(Handle, Vec<Part>, String), Problem> {
    if let Some(h) = w.editor.get(root, path) {
        return match w.editor.shape(h) {
            Shape::Scalar | Shape::Null => {
                let old = w.editor.scalar(h).unwrap_or_default();
                let h = w.editor.set_scalar(h, value)?;
                Ok((h, vec![Part::Key(path.to_owned())], old))
            }
            shape => Err(path_problem(
                w,
                Some(h),
                path,
                format!("the key {path:?} holds {}, not a value", shape.described()),
            )),
        };
    }
    let keys: Vec<&str> = path.split('.').collect();
    let mut current = root;
    let mut parts = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let last = i == keys.len() - 1;
        let (key, index) = segment(w, current, path, k)?;
        let Some(child) = w.editor.get(current, key) else {
            // Missing: created, the whole segment as the key (as Argo CD Image Updater does).
            if last {
                let v = w.editor.new_scalar(value);
                w.editor.insert(current, k, v)?;
                parts.push(Part::Key((*k).to_owned()));
                return Ok((v, parts, String::new()));
            }
            let m = w.editor.new_map();
            w.editor.insert(current, k, m)?;
            parts.push(Part::Key((*k).to_owned()));
            current = m;
            continue;
        };
        let mut node = w.editor.resolve(child);
        parts.push(Part::Key(key.to_owned()));
        let shape = w.editor.shape(node);
        if let Some(n) = index {
            if shape != Shape::Seq {
                return Err(path_problem(
                    w,
                    Some(node),
                    path,
                    format!(
                        "index {n} given, but {key:?} holds {}, not a sequence",
                        shape.described()
                    ),
                ));
            }
            let items = w.editor.items(node);
            let Some(item) = items.get(n).copied() else {
                return Err(path_problem(
                    w,
                    Some(node),
                    path,
                    format!("index {n} of {key:?} is out of range [0, {})", items.len()),
                ));
            };
            parts.push(Part::Item { seq: node, item });
            node = w.editor.resolve(item);
        } else if shape == Shape::Seq {
            return Err(path_problem(
                w,
                Some(node),
                path,
                format!("{key:?} is a sequence: name an item with {key}[N]"),
            ));
        }
        let shape = w.editor.shape(node);
        if last {
            return match shape {
                Shape::Scalar | Shape::Null => {
                    let old = w.editor.scalar(node).unwrap_or_default();
                    let h = w.editor.set_scalar(node, value)?;
                    Ok((h, parts, old))
                }
                s => Err(path_problem(
                    w,
                    Some(node),
                    path,
                    format!("{key:?} holds {}, not a value", s.described()),
                )),
            };
        }
        match shape {
            Shape::Map => current = node,
            // An empty value on the way becomes a mapping.
            Shape::Null => current = node,
            s => {
                return Err(path_problem(
                    w,
                    Some(node),
                    path,
                    format!(
                        "{key:?} holds {} ({:?}), so the path cannot go through it",
                        s.described(),
                        w.editor.scalar(node).unwrap_or_default()
                    ),
                ));
            }
        }
    }
    Err(path_problem(w, None, path, "the path is empty".to_owned()))
}

/// One segment `k` of the Helm parameter `path` (under `current`): its key and the item index of
/// `KEY[N]`, if it has one.
fn segment<'k>(
    w: &Writer<'_, '_, '_>,
    current: Handle,
    path: &str,
    k: &'k str,
) -> Result<(&'k str, Option<usize>), Problem> {
    let Some((key, idx)) = split_index(k) else {
        return Ok((k, None));
    };
    match idx.parse::<usize>() {
        Ok(n) => Ok((key, Some(n))),
        Err(_) => {
            let at = w.editor.get(current, key).or(Some(current));
            Err(path_problem(
                w,
                at,
                path,
                format!("the index {idx:?} of {k:?} is not a number (write KEY[N])"),
            ))
        }
    }
}

/// The header of a values file created by a write-back.
pub(crate) const VALUES_HEADER: &str = "# auto generated by argocd image updater\n\n";

/// Plan Helm values file edits: per image its tag path (`tag@digest`; never an empty tag), then
/// its name path (kept in short form when the file holds a short-form name), or its spec path.
///
/// # Errors
/// A path that cannot be written (through a scalar, an index on a mapping, out of range...).
pub(crate) fn helm_values(w: &mut Writer<'_, '_, '_>, planned: &[Planned<'_>]) -> Out {
    w.editor.set_header(VALUES_HEADER);
    let root = w.editor.root()?;
    let mut writes: Vec<(&Planned<'_>, String, String)> = Vec::new();
    let mut moved = Vec::new();
    for p in planned {
        let mut differs = false;
        let mut old_tag = None;
        // Argo reads the original name with its getter (the nested path first) to keep a short
        // form.
        let name_write = |w: &Writer<'_, '_, '_>, path: String, mut value: String| {
            let original = helm_get(w, root, &path);
            if has_registry_prefix(&value)
                && original.as_deref().is_some_and(|o| !has_registry_prefix(o))
            {
                value = short_form(&value).to_owned();
            }
            (path, value)
        };
        match helm_names(p.spec) {
            HelmNames::NameTag(n, t) => {
                let tag = p.new.tag_with_digest();
                if !tag.is_empty() {
                    let current = helm_locate(w, root, &t);
                    differs |= current.as_deref() != Some(tag.as_str());
                    old_tag = current.map(|o| parse_tag_value(&o));
                    writes.push((p, t, tag));
                }
                let (path, value) = name_write(w, n, p.new.full_name());
                differs |= helm_locate(w, root, &path).as_deref() != Some(value.as_str());
                writes.push((p, path, value));
            }
            HelmNames::Spec(s) => {
                let (path, value) = name_write(w, s, p.new.full_name_with_tag());
                let current = helm_locate(w, root, &path);
                differs |= current.as_deref() != Some(value.as_str());
                old_tag = current.and_then(|o| ArgoImage::parse(&o).tag);
                writes.push((p, path, value));
            }
        }
        if differs {
            moved.push(Moved {
                key: p.key.clone(),
                alias: p.spec.alias.clone(),
                old: old_tag,
                new: p.new.tag.clone().unwrap_or_default(),
            });
        }
    }
    if moved.is_empty() {
        return Ok(moved);
    }
    for (p, path, value) in writes {
        let (h, parts, old) = helm_set(w, root, &path, &value)?;
        if old != value {
            w.record(parts, h, old, &value, &p.key, &p.spec.alias);
        }
    }
    Ok(moved)
}

/// Plan the `argocd` method: the Application's own source gets the images (`kustomize.images`,
/// `helm.parameters` with `forceString: true`, or `plugin.env`).
///
/// # Errors
/// The source's structure is in the way.
pub(crate) fn application(
    w: &mut Writer<'_, '_, '_>,
    source: &Source,
    kind: OverrideKind,
    planned: &[Planned<'_>],
) -> Out {
    let src = Handle::Real(source.node);
    let prefix: Vec<Part> = vec![Part::Raw(source.field.clone())];
    let source_images = KustomizeImages::new(match kind {
        OverrideKind::Kustomize => source.kustomize_images.clone(),
        OverrideKind::Helm | OverrideKind::Plugin => Vec::new(),
    });
    let moved = match kind {
        OverrideKind::Kustomize => planned
            .iter()
            .filter_map(|p| {
                let current = source_images.current(p.spec);
                differs(current, p.spec, &p.new).then(|| moved(p, old_tag(current)))
            })
            .collect(),
        OverrideKind::Helm => helm_moved(&source.helm_parameters, planned),
        OverrideKind::Plugin => plugin_moved(&source.plugin_env, planned),
    };
    if moved.is_empty() {
        return Ok(moved);
    }
    match kind {
        OverrideKind::Kustomize => {
            let list = kustomize_list(source, planned);
            let owners = kustomize_owners(planned);
            let k = w.map_at(src, "kustomize")?;
            let seq = w.seq_at(k, "images")?;
            let items = w.strings(seq);
            for (i, value) in list.iter().enumerate() {
                let (key, alias) = w.owner(owners.get(value).copied());
                let item = match items.get(i) {
                    Some((_, old)) if old == value => continue,
                    Some((item, _)) => {
                        w.editor.set_scalar(*item, value)?;
                        *item
                    }
                    None => {
                        let item = w.editor.new_scalar(value);
                        w.editor.push(seq, item)?;
                        item
                    }
                };
                let old = items.get(i).map(|(_, o)| o.clone()).unwrap_or_default();
                let mut path = prefix.clone();
                path.extend([
                    Part::Key("kustomize".into()),
                    Part::Key("images".into()),
                    Part::Item { seq, item },
                ]);
                w.record(path, item, old, value, &key, &alias);
            }
        }
        OverrideKind::Helm => {
            let h = w.map_at(src, "helm")?;
            let seq = w.seq_at(h, "parameters")?;
            let mut items = NamedItems::new(w, seq);
            for p in planned {
                for param in helm_params(p.spec, &p.new) {
                    let item = items.item(w, &param.name)?;
                    let (v, old) = w.set_field(item, "value", &param.value)?;
                    if old != param.value {
                        w.set_flag(item, "forceString", true)?;
                        let mut path = prefix.clone();
                        path.extend([
                            Part::Key("helm".into()),
                            Part::Key("parameters".into()),
                            Part::Item { seq, item },
                            Part::Key("value".into()),
                        ]);
                        w.record(path, v, old, &param.value, &p.key, &p.spec.alias);
                    }
                }
            }
        }
        OverrideKind::Plugin => {
            let pl = w.map_at(src, "plugin")?;
            let seq = w.seq_at(pl, "env")?;
            let (env, owners) = plugin_list(Vec::new(), planned);
            write_env(w, seq, &prefix, env, &owners)?;
        }
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str, new_name: &str, tag: &str, digest: &str) -> KustomizeImage {
        KustomizeImage {
            name: name.into(),
            new_name: new_name.into(),
            new_tag: tag.into(),
            digest: digest.into(),
        }
    }

    #[test]
    fn image_overrides() {
        let d = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
        for (text, want) in [
            (
                "registry.local:5443/team/api:77",
                k("registry.local:5443/team/api", "", "77", ""),
            ),
            (
                "registry.local:5443/team/api=mirror.local:9000/api",
                k(
                    "registry.local:5443/team/api",
                    "mirror.local:9000/api",
                    "",
                    "",
                ),
            ),
            (
                "old=mirror.local:9000/team/new:8",
                k("old", "mirror.local:9000/team/new", "8", ""),
            ),
            (
                "111122223333.dkr.ecr.us-east-2.amazonaws.com/api=444455556666.dkr.ecr.us-east-2.amazonaws.com/api",
                k(
                    "111122223333.dkr.ecr.us-east-2.amazonaws.com/api",
                    "444455556666.dkr.ecr.us-east-2.amazonaws.com/api",
                    "",
                    "",
                ),
            ),
            (
                &*format!("proxy=acme/proxy@{d}"),
                k("proxy", "acme/proxy", "", d),
            ),
            (&*format!("acme/proxy@{d}"), k("acme/proxy", "", "", d)),
            ("worker@sha1234", k("worker", "", "", "sha1234")),
            ("worker", k("worker", "", "", "")),
        ] {
            assert_eq!(image_override(text), want, "{text}");
        }
    }
}
