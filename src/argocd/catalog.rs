//! Every Application, every managed Application's configuration, and one selection per image:
//! read from a set of files (the tree being updated, and policy files).
//!
//! Which configuration governs an Application, in order:
//! 1. a KubeSphere `ImageUpdater` (`kind: argocd`) that names it;
//! 2. the most specific `applicationRefs` entry of an `ImageUpdater` CR in its namespace (with
//!    `useAnnotations: true`, the entry only selects, and the annotations say the rest);
//! 3. its own `image-list` annotation (Argo CD Image Updater before v1.0, and KubeSphere, which
//!    writes these annotations).
//!
//! An Application governed twice (two CRs, or a CR and a KubeSphere updater) is an error naming
//! both.

use std::collections::BTreeMap;

use image_update_registry::Repository;

use super::annotations;
use super::application::{self, AppId, Application, InputFile, ObjectRef, ParsedFile, kind_of};
use super::config::{AppConfig, ConfigOrigin, CosignKeyRef, ImageSpec, split_entry};
use super::crd::{self, ImageUpdater, Verification};
use super::kubesphere::{self, KubeSphereUpdater};
use super::settings::{PullSecret, policy_config};
use crate::argo_image::ArgoImage;
use crate::diagnostic::{Diagnostic, Location};
use crate::git_repository::same_repository;
use crate::policies::PolicyKey;
use crate::reflector::selection::PolicyConfig;
use crate::yaml::tree::{NodeId, Tree};

/// How inputs are read.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// The namespace Argo CD (and its image updater) runs in: Applications and CRs without a
    /// namespace are taken to be in it, and Applications in it get override files named
    /// `.argocd-source-APP.yaml` (others `.argocd-source-NAMESPACE_APP.yaml`).
    pub controller_namespace: String,
    /// A Job's repository and branch: Applications writing back to git elsewhere are left
    /// alone (with a warning naming both repositories).
    pub git_scope: Option<GitScope>,
    /// The run fetches its results, through the supply-chain gate: an image that must be signed
    /// (`imagesVerification`) is written back only then; with results supplied as values, which
    /// nothing checks, it is left alone with a warning.
    pub fetching: bool,
    /// The files are a part of what the run reads (a Job's `--policies` files, read before its
    /// clone for the repository to clone): a KubeSphere updater naming an Application that is
    /// not among them is passed over, not an error (the clone may hold it).
    pub partial: bool,
}

impl Default for CollectOptions {
    fn default() -> Self {
        Self {
            controller_namespace: "argocd".to_owned(),
            git_scope: None,
            fetching: false,
            partial: false,
        }
    }
}

/// The repository and branch one Job clones and pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitScope {
    /// The repository's URL.
    pub repository: String,
    /// The branch checked out (`None` for a tag or a detached commit).
    pub branch: Option<String>,
    /// The branch is the remote's default branch.
    pub default_branch: bool,
    /// The Applications push to their own branches (no `--push-branch` or `--pull-request` sends
    /// every change to one): a run writes back the Applications of one branch.
    pub own_branches: bool,
}

impl GitScope {
    /// Whether a git write-back to `repository`, checking out `checkout` (`None`: the remote's
    /// default branch), is this Job's.
    #[must_use]
    pub fn admits(&self, repository: &str, checkout: Option<&str>) -> bool {
        same_repository(&self.repository, repository)
            && match checkout {
                None => self.default_branch,
                Some(b) => self.branch.as_deref() == Some(b),
            }
    }
}

/// What to ask the registry for one image of one Application.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The policy key: `APP_NAMESPACE:APP/ALIAS` (KubeSphere: `NAMESPACE:ALIAS`).
    pub key: PolicyKey,
    pub app: AppId,
    /// The alias as configured (`""` for none).
    pub alias: String,
    /// The image to list tags of, as written (without its constraint).
    pub image: String,
    pub repository: Repository,
    pub config: PolicyConfig,
    pub pull_secret: Option<PullSecret>,
    pub force_update: bool,
    /// `FILE (Application NS/NAME, image "ALIAS")`, for messages and conflicts.
    pub source: String,
    pub location: Location,
    /// Who defines the policy the selection reads.
    pub defined_by: DefinedBy,
    /// The key its candidates must be signed with (`imagesVerification`).
    pub verify: Option<CosignKeyRef>,
}

/// Who defines the policy a [`Selection`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefinedBy {
    /// The selection: the catalog's definitions (`argocd::definitions`) make one of it.
    Selection,
    /// The reflector, from the KubeSphere ImageUpdater the image is an entry of (the object read
    /// once, by `crate::kubesphere::read`, under the same key `NAMESPACE:ALIAS`): the operation
    /// must not define it twice.
    KubeSphereUpdater,
}

/// Everything read.
#[derive(Debug)]
pub struct Catalog<'a> {
    pub files: Vec<ParsedFile<'a>>,
    pub apps: Vec<Application>,
    pub configs: Vec<AppConfig>,
    pub selections: Vec<Selection>,
    /// Warnings and notes (errors make [`collect`] fail).
    pub diagnostics: Vec<Diagnostic>,
    pub options: CollectOptions,
}

impl Catalog<'_> {
    /// The file an Application is in.
    #[must_use]
    pub fn file_of(&self, app: &Application) -> &ParsedFile<'_> {
        &self.files[app.object.file]
    }

    /// The selection of an image of a configured Application.
    #[must_use]
    pub fn key_of(&self, config: &AppConfig, image: &ImageSpec) -> PolicyKey {
        key_for(&self.apps[config.app], config, image)
    }
}

/// Substrings of a file that may hold something read here.
pub(crate) const SCREEN: [&str; 2] = ["argoproj.io", crate::kubesphere::GROUP];

/// Whether `text` may hold an Application or image updater configuration (a cheap test before
/// parsing).
#[must_use]
pub fn may_hold(text: &str) -> bool {
    may_hold_bytes(text.as_bytes())
}

/// [`may_hold`] over bytes (a walk's buffer).
#[must_use]
pub(crate) fn may_hold_bytes(bytes: &[u8]) -> bool {
    SCREEN
        .iter()
        .any(|s| memchr::memmem::find(bytes, s.as_bytes()).is_some())
}

fn key_for(app: &Application, config: &AppConfig, image: &ImageSpec) -> PolicyKey {
    match &config.origin {
        ConfigOrigin::KubeSphere { updater } => PolicyKey {
            namespace: updater.split_once('/').map_or("", |(ns, _)| ns).to_owned(),
            name: image.alias.clone(),
        },
        _ => PolicyKey {
            namespace: app.id.namespace.clone(),
            name: format!("{}/{}", app.id.name, image.key_alias()),
        },
    }
}

/// Read every Application and configuration in `files`.
///
/// # Errors
/// Every problem found (malformed annotations or CRs, unknown strategies or methods, an Application
/// governed twice, a KubeSphere updater naming an Application that is not there...), each at its
/// file, line and column.
pub fn collect<'a>(
    files: &[InputFile<'a>],
    options: &CollectOptions,
) -> Result<Catalog<'a>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    // Parsing and reading each file's objects is most of the work: files are read on every core,
    // each into its tree and its objects. An annotated Application's annotations are read there
    // too (they depend on nothing else); the result is used unless another configuration governs
    // the Application.
    let screened: Vec<&InputFile<'a>> = files.iter().filter(|f| may_hold(f.text)).collect();
    let threads = crate::pool::cores();
    let results = crate::pool::map(screened, threads, |f| read_file(f, options));
    // Sized for an Application a file, the usual layout (grown by doubling, these vectors of
    // large items kept up to twice what they hold).
    let mut parsed = Vec::with_capacity(results.len());
    let mut apps: Vec<Application> = Vec::with_capacity(results.len());
    let mut annotated: Vec<Option<Annotated>> = Vec::with_capacity(results.len());
    let mut app_index: std::collections::HashMap<AppId, usize> = std::collections::HashMap::new();
    let mut updaters: Vec<ImageUpdater> = Vec::new();
    let mut spheres: Vec<KubeSphereUpdater> = Vec::new();
    // Where each configuration object was first read (an object read from two places is one
    // when both are the same), and the values of the files such objects are compared in.
    let mut updater_index: std::collections::HashMap<(String, String), (usize, NodeId, Location)> =
        std::collections::HashMap::new();
    let mut sphere_index: std::collections::HashMap<(String, String), (usize, NodeId)> =
        std::collections::HashMap::new();
    let mut values = Values::default();
    for result in results {
        let (file, found) = match result {
            Ok(read) => read,
            Err(warning) => {
                warnings.extend(warning);
                continue;
            }
        };
        let fi = parsed.len();
        parsed.push(file);
        for object in found {
            match object {
                Found::App(Ok((mut app, annotations))) => {
                    app.object.file = fi;
                    if let Some(&first) = app_index.get(&app.id) {
                        let earlier = &apps[first];
                        let what = format!("Application {}", app.id);
                        let copies = [
                            (earlier.object.file, earlier.object.node, &earlier.location),
                            (fi, app.object.node, &app.location),
                        ];
                        match values.compare(&parsed, &what, copies) {
                            // One object: the tree's copy is kept, so that its write-back edits
                            // it in place.
                            Ok(()) => {
                                if parsed[earlier.object.file].tree_path.is_none()
                                    && parsed[fi].tree_path.is_some()
                                {
                                    apps[first] = app;
                                    annotated[first] = annotations;
                                }
                            }
                            Err(e) => errors.push(*e),
                        }
                    } else {
                        app_index.insert(app.id.clone(), apps.len());
                        apps.push(app);
                        annotated.push(annotations);
                    }
                }
                Found::App(Err(e)) => errors.push(e),
                Found::Updater(result, mut found_warnings, node) => match result {
                    Ok(u) => {
                        let key = (u.namespace.clone(), u.name.clone());
                        let here = Location::new(
                            parsed[fi].origin.clone(),
                            Some(parsed[fi].tree.node_position(node)),
                        );
                        if let Some((ufi, unode, at)) = updater_index.get(&key) {
                            let what = format!("ImageUpdater {}/{}", u.namespace, u.name);
                            let copies = [(*ufi, *unode, at), (fi, node, &here)];
                            if let Err(e) = values.compare(&parsed, &what, copies) {
                                errors.push(*e);
                            }
                        } else {
                            updater_index.insert(key, (fi, node, here));
                            warnings.append(&mut found_warnings);
                            updaters.push(u);
                        }
                    }
                    Err(mut e) => {
                        warnings.append(&mut found_warnings);
                        errors.append(&mut e);
                    }
                },
                Found::Sphere(Ok(Some(u)), node) => {
                    match sphere_index.get(&(u.namespace.clone(), u.name.clone())) {
                        Some(&(sfi, snode)) => {
                            let what =
                                format!("KubeSphere ImageUpdater {}/{}", u.namespace, u.name);
                            let first = Location::new(
                                parsed[sfi].origin.clone(),
                                Some(parsed[sfi].tree.node_position(snode)),
                            );
                            let copies = [(sfi, snode, &first), (fi, node, &u.location)];
                            if let Err(e) = values.compare(&parsed, &what, copies) {
                                errors.push(*e);
                            }
                        }
                        None => {
                            sphere_index.insert((u.namespace.clone(), u.name.clone()), (fi, node));
                            spheres.push(u);
                        }
                    }
                }
                Found::Sphere(Ok(None), _) => {}
                Found::Unread(warning) => warnings.push(warning),
                Found::Sphere(Err(mut e), _) => errors.append(&mut e),
            }
        }
    }
    // An Application's annotations, read by the worker that parsed its file.
    let mut annotations_of = |ai: usize, warnings: &mut Vec<Diagnostic>| {
        let (result, mut found_warnings) = annotated
            .get_mut(ai)
            .and_then(Option::take)
            .unwrap_or_else(|| {
                let mut w = Vec::new();
                let r = annotations::read(&apps[ai], &parsed[apps[ai].object.file].origin, &mut w);
                (r, w)
            });
        warnings.append(&mut found_warnings);
        result
    };
    let mut configs: Vec<AppConfig> = Vec::with_capacity(apps.len());
    let mut governed: BTreeMap<usize, String> = BTreeMap::new();
    let mut claim = |app: usize, by: String, at: &Location, errors: &mut Vec<Diagnostic>| -> bool {
        if let Some(first) = governed.get(&app) {
            errors.push(
                Diagnostic::error(format!(
                    "Application {} is configured by {first} and by {by}; keep one",
                    apps[app].id
                ))
                .at(at.clone()),
            );
            return false;
        }
        governed.insert(app, by);
        true
    };
    for s in &spheres {
        let Some(&ai) = app_index.get(&AppId {
            namespace: s.app_namespace.clone(),
            name: s.app_name.clone(),
        }) else {
            if options.partial {
                continue;
            }
            errors.push(
                Diagnostic::error(format!(
                    "KubeSphere ImageUpdater {}/{} names Application {}/{}, which is not among the files read",
                    s.namespace, s.name, s.app_namespace, s.app_name
                ))
                .at(s.app_location.clone())
                .with_hint("add the Application's manifest to the tree (or to --policies)"),
            );
            continue;
        };
        let origin = ConfigOrigin::KubeSphere {
            updater: format!("{}/{}", s.namespace, s.name),
        };
        if !claim(ai, origin.describe(), &s.location, &mut errors) {
            continue;
        }
        configs.push(AppConfig {
            app: ai,
            origin,
            images: s.images.clone(),
            write_back: super::settings::WriteBackSettings {
                method: s.write.clone(),
                ..annotation_write_back(&apps[ai], &parsed[apps[ai].object.file].origin)
            },
            location: s.location.clone(),
        });
    }
    for u in &updaters {
        for (ai, app) in apps.iter().enumerate() {
            let Some(r) = u.best_ref(app) else { continue };
            let origin = ConfigOrigin::ImageUpdater {
                updater: format!("{}/{}", u.namespace, u.name),
                use_annotations: r.use_annotations,
            };
            if !claim(ai, origin.describe(), &r.location, &mut errors) {
                continue;
            }
            if r.use_annotations {
                if !annotations::has_image_list(app) {
                    warnings.push(
                        Diagnostic::warning(format!(
                            "Application {} is selected by ImageUpdater {}/{} with useAnnotations, but has no {} annotation; it is left alone",
                            app.id, u.namespace, u.name, annotations::IMAGE_LIST
                        ))
                        .at(app.location.clone()),
                    );
                    continue;
                }
                match annotations_of(ai, &mut warnings) {
                    Ok(mut a) => {
                        // Only the reference's image verification applies in this mode.
                        let verify = Verification::required(&[r.verify.as_ref()]);
                        for i in &mut a.images {
                            i.verify.clone_from(&verify);
                        }
                        configs.push(AppConfig {
                            app: ai,
                            origin,
                            images: a.images,
                            write_back: a.write_back,
                            location: r.location.clone(),
                        });
                    }
                    Err(mut e) => errors.append(&mut e),
                }
                continue;
            }
            let settings = u.settings.merged(&r.settings);
            let mut images = Vec::new();
            for img in &r.images {
                let Ok((_, image_text, constraint)) = split_entry(&img.image_name) else {
                    continue;
                };
                let mut image = ArgoImage::parse(&image_text);
                image.alias.clone_from(&img.alias);
                image.tag = None;
                images.push(ImageSpec {
                    alias: img.alias.clone(),
                    entry: format!("{}={}", img.alias, img.image_name),
                    image_text,
                    image,
                    constraint,
                    settings: settings.merged(&img.settings),
                    target: img.target.clone(),
                    verify: Verification::required(&[
                        u.verify.as_deref(),
                        r.verify.as_ref(),
                        img.verify.as_ref(),
                    ]),
                    config: img.config.clone(),
                    location: img.location.clone(),
                });
            }
            configs.push(AppConfig {
                app: ai,
                origin,
                images,
                write_back: u.write_back.merged(&r.write_back),
                location: r.location.clone(),
            });
        }
    }
    for (ai, app) in apps.iter().enumerate() {
        if governed.contains_key(&ai) || !annotations::has_image_list(app) {
            continue;
        }
        match annotations_of(ai, &mut warnings) {
            Ok(a) => configs.push(AppConfig {
                app: ai,
                origin: ConfigOrigin::Annotations,
                images: a.images,
                write_back: a.write_back,
                location: a.location,
            }),
            Err(mut e) => errors.append(&mut e),
        }
    }
    configs.sort_by(|a, b| apps[a.app].id.cmp(&apps[b.app].id));
    // One selection per image, checked (its strategy and filters compiled) on every core.
    let threads = crate::pool::cores();
    let checked = crate::pool::map(&configs, threads, |config| {
        let mut selections = Vec::new();
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let app = &apps[config.app];
        let origin = &parsed[app.object.file].origin;
        for image in &config.images {
            if let Some(key) = image.verify.as_ref().filter(|_| !options.fetching) {
                warnings.push(
                    Diagnostic::warning(format!(
                        "image {:?} of Application {} must be signed with the key {key} (imagesVerification), which only a fetched result is checked against; without fetching it is left alone",
                        image.key_alias(),
                        app.id
                    ))
                    .at(image.location.clone()),
                );
                continue;
            }
            let repository = match Repository::parse(&image.image_text) {
                Ok(r) => r,
                Err(e) => {
                    errors.push(
                        Diagnostic::error(format!("image {:?}: {e}", image.entry))
                            .at(image.location.clone()),
                    );
                    continue;
                }
            };
            let checked = image.config.clone().map_or_else(
                || {
                    policy_config(
                        &image.settings,
                        image.constraint.as_deref(),
                        &image.location,
                    )
                },
                Ok,
            );
            let config_policy = match checked {
                Ok(c) => c,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            selections.push(Selection {
                key: key_for(app, config, image),
                app: app.id.clone(),
                alias: image.alias.clone(),
                image: image.image_text.clone(),
                repository,
                config: config_policy,
                pull_secret: image
                    .settings
                    .pull_secret
                    .as_ref()
                    .and_then(|p| PullSecret::parse(&p.value).ok()),
                force_update: image.settings.force_update.unwrap_or(false),
                source: format!(
                    "{origin} (Application {}, image {:?})",
                    app.id,
                    image.key_alias()
                ),
                location: image.location.clone(),
                defined_by: match config.origin {
                    ConfigOrigin::KubeSphere { .. } => DefinedBy::KubeSphereUpdater,
                    _ => DefinedBy::Selection,
                },
                verify: image.verify.clone(),
            });
        }
        (selections, errors, warnings)
    });
    let mut selections = Vec::with_capacity(checked.iter().map(|(s, _, _)| s.len()).sum());
    for (mut s, mut e, mut w) in checked {
        selections.append(&mut s);
        errors.append(&mut e);
        warnings.append(&mut w);
    }
    if errors.is_empty() {
        warnings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        Ok(Catalog {
            files: parsed,
            apps,
            configs,
            selections,
            diagnostics: warnings,
            options: options.clone(),
        })
    } else {
        errors.extend(warnings);
        errors.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        Err(errors)
    }
}

/// An Application's annotations as read (`annotations::read`), with the warnings reading them gave.
type Annotated = (
    Result<annotations::FromAnnotations, Vec<Diagnostic>>,
    Vec<Diagnostic>,
);

/// One object of a file, as read.
enum Found {
    /// An Application (its `object.file` is set when the file's index is known), with its
    /// annotations when it carries an image list.
    App(Result<(Application, Option<Annotated>), Diagnostic>),
    /// An Argo CD Image Updater CR, with the warnings reading it gave, and its node.
    Updater(
        Result<ImageUpdater, Vec<Diagnostic>>,
        Vec<Diagnostic>,
        NodeId,
    ),
    /// A KubeSphere `ImageUpdater` (`None`: not `kind: argocd`), and its node.
    Sphere(Result<Option<KubeSphereUpdater>, Vec<Diagnostic>>, NodeId),
    /// Objects of the file that could not be read, and why.
    Unread(Diagnostic),
}

/// Parse one file and read its Argo CD objects, in order; a file that is not YAML is a warning
/// (none for a template, which is not YAML until rendered).
fn read_file<'a>(
    f: &InputFile<'a>,
    options: &CollectOptions,
) -> Result<(ParsedFile<'a>, Vec<Found>), Option<Diagnostic>> {
    let tree = Tree::parse(f.text).map_err(|e| {
        (!f.text.contains("{{")).then(|| {
            Diagnostic::warning(format!(
                "not valid YAML, so the Argo CD objects in it are not read: {}",
                e.message
            ))
            .at(Location::new(f.origin.clone(), e.position))
        })
    })?;
    let file = ParsedFile {
        origin: f.origin.clone(),
        tree_path: f.tree_path.clone(),
        tree,
    };
    let mut found = Vec::new();
    // The file's values, for the one reader of a KubeSphere ImageUpdater: parsed when the file
    // holds one (`None` inside: the value reader refused the file).
    let mut values: Option<Result<Vec<crate::yaml::Document>, crate::yaml::SyntaxError>> = None;
    for (di, doc) in file.tree.docs().iter().enumerate() {
        let Some(root) = doc.root else { continue };
        for node in objects(&file.tree, root) {
            let (group, kind) = kind_of(&file.tree, node);
            if group == application::APPLICATION_GROUP && kind == "Application" {
                let object = ObjectRef {
                    file: 0,
                    document: di,
                    node,
                };
                found.push(Found::App(
                    application::read(&file, object, &options.controller_namespace).map(|app| {
                        let annotations = annotations::has_image_list(&app).then(|| {
                            let mut warnings = Vec::new();
                            let r = annotations::read(&app, &file.origin, &mut warnings);
                            (r, warnings)
                        });
                        (app, annotations)
                    }),
                ));
            } else if group == crd::GROUP && kind == "ImageUpdater" {
                let mut warnings = Vec::new();
                let read = crd::read(&file, node, &options.controller_namespace, &mut warnings);
                found.push(Found::Updater(read, warnings, node));
            } else if group == crate::kubesphere::GROUP && kind == crate::kubesphere::KIND {
                if let Some(screened) = screen_sphere(&file, node) {
                    found.extend(screened.map(|e| Found::Sphere(Err(vec![e]), node)));
                    continue;
                }
                let first = values.is_none();
                match values.get_or_insert_with(|| crate::yaml::parse_documents(f.text)) {
                    Ok(documents) => {
                        found.push(Found::Sphere(sphere(&file, documents, node), node))
                    }
                    // Told once a file, as a file the tree cannot read is.
                    Err(e) if first => found.push(Found::Unread(
                        Diagnostic::warning(format!(
                            "holds a KubeSphere {} but is not valid YAML, so it is not read: {}",
                            crate::kubesphere::KIND,
                            e.message
                        ))
                        .at(Location::new(f.origin.clone(), e.position)),
                    )),
                    Err(_) => {}
                }
            }
        }
    }
    Ok((file, found))
}

/// A screen of the KubeSphere ImageUpdater at `node` of `file` on its tree, before its file is
/// parsed as values for the one reader: `Some(None)` passes over an updater that is not of kind
/// `argocd` (the reflector's alone), `Some(Some(error))` refuses one that lists more images than
/// the reader reads (its error, at the first image over the limit), so that neither costs a
/// second parse of its file; `None` lets the reader read it.
fn screen_sphere(file: &ParsedFile<'_>, node: NodeId) -> Option<Option<Diagnostic>> {
    use crate::kubesphere::{Engine, MAX_IMAGES, too_many_images};
    let t = &file.tree;
    let kind = t.at(node, &["spec", "kind"]).and_then(|n| t.text_value(n));
    if kind.is_some_and(|k| k != "argocd") {
        return Some(None);
    }
    let images = t
        .at(node, &["spec", "images"])
        .map_or(&[][..], |n| t.items(n));
    let over = images.get(MAX_IMAGES)?;
    let (namespace, name) = application::namespace_name(t, node);
    let namespace = namespace.unwrap_or_else(|| "default".to_owned());
    Some(Some(
        Diagnostic::error(format!(
            "{} {namespace}/{name}: {}",
            crate::kubesphere::KIND,
            too_many_images(images.len(), Engine::ArgoCd)
        ))
        .at(file.location(*over)),
    ))
}

/// The KubeSphere ImageUpdater at `node` of `file`, read by the one reader from the file's
/// values, `documents` (the object that starts where the node does), and its write-back part.
fn sphere(
    file: &ParsedFile<'_>,
    documents: &[crate::yaml::Document],
    node: NodeId,
) -> Result<Option<KubeSphereUpdater>, Vec<Diagnostic>> {
    let position = file.tree.node_position(node);
    let Some(object) = documents
        .iter()
        .flat_map(crate::yaml::objects)
        .find(|o| o.position("") == Some(position))
    else {
        return Ok(None);
    };
    kubesphere::write_back(&crate::kubesphere::read(&object, &file.origin, true))
}

/// The values of the files read, for comparing the two definitions of an object read from two
/// places: each file is parsed (by the YAML reader every policy file goes through, with its
/// budgets) only when one of its objects is compared, and then once.
#[derive(Default)]
struct Values {
    /// By file index; `None`: the reader refused the file.
    files: std::collections::HashMap<usize, Option<Vec<crate::yaml::Document>>>,
}

impl Values {
    /// The two copies (file index, object node, where the object is) of `what` are one object
    /// (`crate::same_object`), or the error naming both places and the first field that
    /// differs. When a file cannot be read as values, the copies cannot be compared: an error
    /// naming both.
    fn compare(
        &mut self,
        files: &[ParsedFile<'_>],
        what: &str,
        copies: [(usize, NodeId, &Location); 2],
    ) -> Result<(), Box<Diagnostic>> {
        for (fi, _, _) in copies {
            self.files.entry(fi).or_insert_with(|| {
                files
                    .get(fi)
                    .and_then(|f| crate::yaml::parse_documents(f.tree.text()).ok())
            });
        }
        let [(fa, na, at_a), (fb, nb, at_b)] = copies;
        let (Some(a), Some(b)) = (self.object(files, fa, na), self.object(files, fb, nb)) else {
            return Err(Box::new(
                Diagnostic::error(format!("{what} is defined twice, also at {at_a}"))
                    .at(at_b.clone()),
            ));
        };
        match crate::same_object::difference(a.value, b.value) {
            None => Ok(()),
            Some(d) => {
                let at = |fi: usize, o: &crate::yaml::Object<'_>| {
                    Location::new(files[fi].origin.clone(), o.position(&d.pointer))
                };
                Err(Box::new(crate::same_object::conflict(
                    what,
                    &at(fa, &a),
                    at(fb, &b),
                    &d,
                )))
            }
        }
    }

    /// The object at `node` of file `fi` among its values: the one that starts where the node
    /// does (the two readers number a stream's empty documents differently, but agree on where
    /// each node is).
    fn object<'v>(
        &'v self,
        files: &[ParsedFile<'_>],
        fi: usize,
        node: NodeId,
    ) -> Option<crate::yaml::Object<'v>> {
        let position = files.get(fi)?.tree.node_position(node);
        self.files
            .get(&fi)?
            .as_ref()?
            .iter()
            .flat_map(crate::yaml::objects)
            .find(|o| o.position("") == Some(position))
    }
}

/// The write-back annotations of an Application (KubeSphere writes its method, the rest may be
/// annotated).
fn annotation_write_back(app: &Application, origin: &str) -> super::settings::WriteBackSettings {
    let value = |k: &str| {
        let key = format!("{}{k}", annotations::PREFIX);
        app.annotations.get(&key).and_then(|a| {
            let v = a.value.trim();
            (!v.is_empty()).then(|| {
                super::settings::Located::new(
                    v.to_owned(),
                    Location::new(origin.to_owned(), Some(a.value_position)),
                )
            })
        })
    };
    super::settings::WriteBackSettings {
        method: None,
        repository: value("git-repository"),
        branch: value("git-branch"),
        target: value("write-back-target"),
        pull_request: None,
    }
}

/// The objects of a document: the root, or the items of a `List` (recursively).
fn objects(tree: &Tree<'_>, root: NodeId) -> Vec<NodeId> {
    let root = tree.resolve(root);
    let (_, kind) = kind_of(tree, root);
    if kind.ends_with("List")
        && let Some(items) = tree.get(root, "items").filter(|i| tree.is_seq(*i))
    {
        return tree
            .items(items)
            .iter()
            .flat_map(|i| objects(tree, *i))
            .collect();
    }
    if tree.is_map(root) {
        vec![root]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=ghcr.io/acme/web:^1\nspec:\n  source: {repoURL: https://git.example.test/fleet, path: shop, kustomize: {}}\n";

    const UPDATER: &str = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: fleet, namespace: argocd}\nspec:\n  applicationRefs:\n  - namePattern: shop\n    images:\n    - {alias: web, imageName: 'ghcr.io/acme/web:^1'}\n";

    fn policy(text: &str) -> InputFile<'_> {
        InputFile {
            origin: "/config/shop.yaml".into(),
            tree_path: None,
            text,
        }
    }

    fn tree(text: &str) -> InputFile<'_> {
        InputFile {
            origin: "apps/shop.yaml".into(),
            tree_path: Some("apps/shop.yaml".into()),
            text,
        }
    }

    fn errors(files: &[InputFile<'_>]) -> Vec<String> {
        collect(files, &CollectOptions::default())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn an_application_from_two_places_is_one_the_trees() {
        // Written differently, the same object; the tree's copy is the one written back.
        let reordered = "# the clone's copy\nkind: Application\napiVersion: argoproj.io/v1alpha1\nmetadata:\n  namespace: argocd\n  name: shop\n  annotations: {argocd-image-updater.argoproj.io/image-list: 'web=ghcr.io/acme/web:^1'}\nspec:\n  source:\n    repoURL: https://git.example.test/fleet\n    path: shop\n    kustomize: {}\nstatus: {sync: {status: Synced}}\n";
        for files in [
            [policy(APP), tree(reordered)],
            [tree(reordered), policy(APP)],
        ] {
            let catalog = collect(&files, &CollectOptions::default()).unwrap();
            assert_eq!(catalog.apps.len(), 1);
            assert_eq!(
                catalog.file_of(&catalog.apps[0]).tree_path.as_deref(),
                Some("apps/shop.yaml")
            );
            assert_eq!(catalog.selections.len(), 1);
        }
    }

    #[test]
    fn an_application_that_differs_is_an_error_naming_both() {
        let other = APP.replace("web=ghcr.io/acme/web:^1", "web=ghcr.io/acme/web:^2");
        let errors = errors(&[policy(APP), tree(&other)]);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            errors[0].starts_with(
                "apps/shop.yaml:7:50: error: Application argocd/shop is defined twice, and the definitions differ: /metadata/annotations/argocd-image-updater.argoproj.io~1image-list is \"web=ghcr.io/acme/web:^1\" at /config/shop.yaml:7:50 but \"web=ghcr.io/acme/web:^2\" here"
            ),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn configuration_objects_from_two_places_are_one() {
        let both = format!("{APP}---\n{UPDATER}");
        let catalog = collect(&[policy(&both), tree(&both)], &CollectOptions::default()).unwrap();
        assert_eq!(
            catalog.configs.len(),
            1,
            "one ImageUpdater governs the Application once"
        );
        let other = UPDATER.replace("ghcr.io/acme/web:^1", "ghcr.io/acme/web:^3");
        let errors = errors(&[policy(&both), tree(&format!("{APP}---\n{other}"))]);
        assert!(
            errors.iter().any(|e| e.contains(
                "ImageUpdater argocd/fleet is defined twice, and the definitions differ: /spec/applicationRefs/0/images/0/imageName is \"ghcr.io/acme/web:^1\""
            )),
            "{errors:#?}"
        );
        let sphere = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: demo, namespace: argocd}\nspec:\n  kind: argocd\n  images: [web=ghcr.io/acme/web]\n  argocd:\n    app: {name: shop, namespace: argocd}\n";
        let with_sphere = format!("{APP}---\n{sphere}");
        let catalog = collect(
            &[policy(&with_sphere), tree(&with_sphere)],
            &CollectOptions::default(),
        )
        .unwrap();
        assert_eq!(catalog.configs.len(), 1);
    }
}
