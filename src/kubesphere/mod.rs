//! A KubeSphere `ImageUpdater` (`gitops.kubesphere.io/v1alpha1`, the API of the KubeSphere image
//! update design, `deploy/crds/`), read once, by [`read`], into one [`Updater`] that every consumer
//! takes its part of:
//!
//! * the automation (`kind: fluxcd`): `spec.images` and `spec.fluxcd.policy`/`secret` are its
//!   image policies, and the rest is an ImageUpdateAutomation: `fluxcd.sourceRef` (the
//!   GitRepository), `git` (read by the one reader of a Flux git section,
//!   [`crate::automation::git`]), `update.path` and `update.strategy`, and `interval` (the
//!   schedule). [`Updater::automation`] is what every mode follows; every field is read or
//!   refused: a field image-update cannot honour is an error at its line, never ignored.
//! * the images (`[ALIAS=]IMAGE[:CONSTRAINT]`, [`images`](mod@images)), keyed `NAMESPACE:ALIAS`: the reflector
//!   defines one policy per image (`crate::reflector::kubesphere`);
//! * the Argo CD part (`kind: argocd`): the Application (`spec.argocd.app`), the write-back method
//!   (`write`), and the per-alias maps (`update-strategy`, `allow-tags`, `ignore-tags`,
//!   `platforms`, `secret`, the supply-chain gate's) read by [`Updater::setting`]: the Argo CD
//!   catalog (`crate::argocd::catalog`) writes the Application back.
//!
//! Every field is read by the YAML layer's one rule for plain scalars: a number or a boolean where
//! a string is meant is an error at its file, line and column.

pub(crate) mod images;
pub(crate) mod interval;

use std::collections::BTreeMap;

use serde_json::Value;

pub(crate) use self::images::{Engine, ImageEntry};
pub(crate) use self::interval::Interval;
use crate::automation::fields::Fields;
use crate::automation::{self, Automation, AutomationKind};
use crate::diagnostic::{Diagnostic, Location};
pub(crate) use crate::limits::MAX_IMAGES_PER_APPLICATION as MAX_IMAGES;
use crate::limits::over_limit;
use crate::yaml::{Document, Object, dotted, pointer_step};

/// The group of the ImageUpdater API.
pub(crate) const GROUP: &str = "gitops.kubesphere.io";
/// Its only version.
pub(crate) const API_VERSION: &str = "gitops.kubesphere.io/v1alpha1";
/// Its kind.
pub(crate) const KIND: &str = "ImageUpdater";

/// The `spec` fields of an ImageUpdater read as an automation, dotted
/// (the CRD must declare each: `tests/crd.rs`). `images`, `argocd` and the
/// `fluxcd` fields `secret` and `policy` belong to the reflector.
pub const FIELDS: &[&str] = &[
    "kind",
    "images",
    "argocd",
    "fluxcd",
    "fluxcd.interval",
    "fluxcd.secret",
    "fluxcd.policy",
    "fluxcd.sourceRef",
    "fluxcd.sourceRef.kind",
    "fluxcd.sourceRef.name",
    "fluxcd.sourceRef.namespace",
    "fluxcd.git",
    "fluxcd.git.checkout",
    "fluxcd.git.checkout.ref",
    "fluxcd.git.checkout.ref.branch",
    "fluxcd.git.checkout.ref.tag",
    "fluxcd.git.checkout.ref.semver",
    "fluxcd.git.checkout.ref.name",
    "fluxcd.git.checkout.ref.commit",
    "fluxcd.git.commit",
    "fluxcd.git.commit.author",
    "fluxcd.git.commit.author.email",
    "fluxcd.git.commit.author.name",
    "fluxcd.git.commit.messageTemplate",
    "fluxcd.git.commit.messageTemplateValues",
    "fluxcd.git.push",
    "fluxcd.git.push.branch",
    "fluxcd.update",
    "fluxcd.update.path",
    "fluxcd.update.strategy",
];

/// Fields whose contents are free (maps of the user's keys) or read by the
/// reflector.
const OPAQUE: &[&str] = &[
    "images",
    "argocd",
    "fluxcd.secret",
    "fluxcd.policy",
    "fluxcd.git.commit.messageTemplateValues",
];

/// Whether `value` is a KubeSphere ImageUpdater (any version of the group).
#[must_use]
pub(crate) fn is_image_updater(value: &Value) -> bool {
    crate::yaml::is_kind(value, GROUP, KIND)
}

/// A KubeSphere ImageUpdater, as read once.
#[derive(Debug, Clone)]
pub(crate) struct Updater {
    pub namespace: String,
    pub name: String,
    /// `ImageUpdater NAMESPACE/NAME`, how messages name it.
    pub what: String,
    /// Where `metadata.name` is (the object when it has none).
    pub location: Location,
    /// `spec.kind` (default `argocd`), or the error for one that names neither engine.
    pub engine: Result<Engine, Diagnostic>,
    /// `spec.images`, each entry parsed for its engine (or its error); the error for a list that
    /// is missing, is not a list, or is over [`MAX_IMAGES`].
    pub images: Result<Vec<Result<Image, Diagnostic>>, Diagnostic>,
    /// The automation of a `kind: fluxcd` updater, or every reason it is not one.
    pub automation: Result<FluxAutomation, Vec<Diagnostic>>,
    /// `spec.fluxcd.secret`: the registry credentials' Secret (`None`: none or empty).
    pub fluxcd_secret: Result<Option<String>, Diagnostic>,
    /// `spec.fluxcd.policy` as written: the policy of every image, read as a Flux ImagePolicy's
    /// `spec.policy` is (by the reflector, which reads both).
    pub fluxcd_policy: Option<Value>,
    /// `spec.argocd`.
    pub argocd: Argocd,
}

/// One entry of `spec.images`.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    /// As written.
    pub text: String,
    /// Parsed for the updater's engine.
    pub entry: ImageEntry,
    /// Its JSON pointer in the object (`/spec/images/3`).
    pub pointer: String,
    pub location: Location,
}

/// The automation a `kind: fluxcd` updater is.
#[derive(Debug, Clone)]
pub(crate) struct FluxAutomation {
    /// What every mode follows (`kind` [`AutomationKind::KubeSphere`]).
    pub automation: Automation,
    /// `spec.fluxcd.interval`.
    pub interval: Interval,
    /// `spec.fluxcd.secret`: the registry credentials' Secret, if any.
    pub registry_secret: Option<String>,
}

/// `spec.argocd`: the Application written back, how, and the per-alias settings.
#[derive(Debug, Clone)]
pub(crate) struct Argocd {
    /// `app`: the Application (its namespace defaults to the updater's); `None` when it names
    /// none (the updater writes nothing back: its images are policies for markers only).
    pub app: Option<AppRef>,
    /// Where `app` is (or `spec.argocd`, or the object).
    pub app_location: Location,
    /// `write` (`built-in` or `git`), when written, and where.
    pub write: Option<(String, Location)>,
    /// A field of the part that is not a string where one is meant.
    pub problems: Vec<Diagnostic>,
    /// The per-alias maps, by field.
    maps: BTreeMap<String, AliasMap>,
}

/// The Application an updater names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppRef {
    pub namespace: String,
    pub name: String,
}

/// One per-alias map of `spec.argocd` (`update-strategy: {nginx: semver}`).
#[derive(Debug, Clone)]
enum AliasMap {
    /// Not a map (nor null).
    NotAMap,
    /// Its entries, by key (null values left out).
    Map(BTreeMap<String, Setting>),
}

/// One image's value in a per-alias map.
#[derive(Debug, Clone)]
pub(crate) struct Setting {
    /// `spec.argocd.FIELD`'s name, for messages.
    field: String,
    /// The key it is under (the image's alias, or its image as written).
    pub key: String,
    value: Value,
    /// Its JSON pointer in the object.
    pub pointer: String,
    pub location: Location,
}

impl Setting {
    /// The value as one string.
    ///
    /// # Errors
    /// It is not a string.
    pub(crate) fn text(&self) -> Result<String, String> {
        self.value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("spec.argocd.{}.{} is not a string", self.field, self.key))
    }

    /// The value as a list: a string's comma-separated items (trimmed, empty ones left out), or
    /// a list of strings.
    ///
    /// # Errors
    /// Neither, or a list holding something else.
    pub(crate) fn list(&self) -> Result<Vec<String>, String> {
        match &self.value {
            Value::String(s) => Ok(s
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()),
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        format!("spec.argocd.{}.{} holds a non-string", self.field, self.key)
                    })
                })
                .collect(),
            _ => Err(format!(
                "spec.argocd.{}.{} is not a string or a list",
                self.field, self.key
            )),
        }
    }
}

impl Updater {
    /// The value of `entry` in the per-alias map `spec.argocd.FIELD`, under one of its setting
    /// keys ([`ImageEntry::setting_keys`]); `None` when the map or the entry's value is absent.
    ///
    /// # Errors
    /// The map is not a map, or gives the image's setting under two keys.
    pub(crate) fn setting(
        &self,
        entry: &ImageEntry,
        field: &str,
    ) -> Result<Option<&Setting>, String> {
        match self.argocd.maps.get(field) {
            None => Ok(None),
            Some(AliasMap::NotAMap) => Err(format!(
                "spec.argocd.{field} is not a map of alias to value"
            )),
            Some(AliasMap::Map(map)) => {
                let mut found = entry.setting_keys().filter_map(|k| map.get(k));
                let first = found.next();
                if let (Some(a), Some(b)) = (first, found.next()) {
                    return Err(format!(
                        "spec.argocd.{field} gives the image's setting twice, under {:?} and {:?}; keep one",
                        a.key, b.key
                    ));
                }
                Ok(first)
            }
        }
    }

    /// The images read; the errors of the others (or of the list) go to `errors`, and `None`
    /// says the list itself could not be read.
    pub(crate) fn images_into(&self, errors: &mut Vec<Diagnostic>) -> Option<Vec<&Image>> {
        match &self.images {
            Err(e) => {
                errors.push(e.clone());
                None
            }
            Ok(list) => Some(
                list.iter()
                    .filter_map(|i| i.as_ref().map_err(|e| errors.push(e.clone())).ok())
                    .collect(),
            ),
        }
    }

    /// `spec.kind` names Argo CD (the default).
    #[must_use]
    pub(crate) fn is_argocd(&self) -> bool {
        matches!(self.engine, Ok(Engine::ArgoCd))
    }
}

/// Read the ImageUpdater `object`; `origin` names its file and `positions` says whether the
/// document's positions are lines of it. Nothing fails as a whole: each part holds what it is,
/// or the errors that keep it from being read, and each consumer reports those of the parts it
/// takes.
#[must_use]
pub(crate) fn read(object: &Object<'_>, origin: &str, positions: bool) -> Updater {
    let value = object.value;
    let (namespace, name) = crate::yaml::namespace_name(value);
    let what = format!("{KIND} {namespace}/{name}");
    let mut fields = Fields::new(object.clone(), origin, positions);
    fields.name(what.clone());
    let location = fields.location(if fields.get("/metadata/name").is_some() {
        "/metadata/name"
    } else {
        ""
    });
    let engine = match object.string_field("/spec/kind") {
        Ok(kind) => {
            let kind = kind.unwrap_or("argocd");
            Engine::from_kind(kind).ok_or_else(|| {
                fields.error(
                    "/spec/kind",
                    format!("spec.kind {kind:?} is neither argocd nor fluxcd"),
                )
            })
        }
        Err(_) => Err(fields.error("/spec/kind", "spec.kind is not a string")),
    };
    let images = match &engine {
        Ok(engine) => images(&fields, *engine),
        Err(e) => Err(e.clone()),
    };
    let fluxcd_secret = match object.string_field("/spec/fluxcd/secret") {
        Ok(s) => Ok(s.filter(|s| !s.is_empty()).map(str::to_owned)),
        Err(_) => Err(fields.error("/spec/fluxcd/secret", "spec.fluxcd.secret is not a string")),
    };
    let argocd = argocd(&fields, &namespace);
    let automation = as_automation(fields, &namespace, &name);
    Updater {
        namespace,
        name,
        what,
        location,
        engine,
        images,
        automation,
        fluxcd_secret,
        fluxcd_policy: object.field("/spec/fluxcd/policy").cloned(),
        argocd,
    }
}

/// The automation of the ImageUpdater `doc` (the whole document).
///
/// # Errors
/// Every reason it is not one ([`Updater::automation`]).
pub(crate) fn automation(
    doc: &Document,
    origin: &str,
    positions: bool,
) -> Result<FluxAutomation, Vec<Diagnostic>> {
    read(&Object::root(doc), origin, positions).automation
}

/// `spec.images`, each entry parsed for `engine`.
fn images(
    fields: &Fields<'_>,
    engine: Engine,
) -> Result<Vec<Result<Image, Diagnostic>>, Diagnostic> {
    let Some(list) = fields.get("/spec/images").and_then(Value::as_array) else {
        return Err(fields.error("/spec", "spec.images is missing or not a list"));
    };
    if list.len() > MAX_IMAGES {
        return Err(fields.error(
            &format!("/spec/images/{MAX_IMAGES}"),
            too_many_images(list.len(), engine),
        ));
    }
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let pointer = format!("/spec/images/{i}");
            let Some(text) = item.as_str() else {
                return Err(fields.error(&pointer, "spec.images holds a non-string"));
            };
            let entry = ImageEntry::parse(text, engine)
                .map_err(|m| fields.error(&pointer, format!("image {text:?}: {m}")))?;
            Ok(Image {
                text: text.to_owned(),
                entry,
                location: fields.location(&pointer),
                pointer,
            })
        })
        .collect())
}

/// The error for `count` images (more than [`MAX_IMAGES`]) listed by an updater of `engine`, at
/// the first image over the limit (`/spec/images/MAX_IMAGES`).
#[must_use]
pub(crate) fn too_many_images(count: usize, engine: Engine) -> String {
    // An argocd updater writes back one Application.
    let per = match engine {
        Engine::ArgoCd => "Application",
        Engine::FluxCd => KIND,
    };
    over_limit("spec.images", count, "images", MAX_IMAGES, per)
}

/// `spec.argocd`.
fn argocd(fields: &Fields<'_>, namespace: &str) -> Argocd {
    let mut problems = Vec::new();
    let object = fields.object();
    let mut text = |pointer: &str| match object.string_field(pointer) {
        Ok(s) => s.map(str::to_owned),
        Err(_) => {
            problems.push(fields.error(pointer, format!("{} is not a string", dotted(pointer))));
            None
        }
    };
    let name = text("/spec/argocd/app/name").unwrap_or_default();
    let app_namespace = text("/spec/argocd/app/namespace")
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| namespace.to_owned());
    let write = text("/spec/argocd/write").map(|w| (w, fields.location("/spec/argocd/write")));
    let mut maps = BTreeMap::new();
    for (field, map) in fields
        .get("/spec/argocd")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if matches!(field.as_str(), "app" | "write") || map.is_null() {
            continue;
        }
        let read = match map.as_object() {
            None => AliasMap::NotAMap,
            Some(entries) => AliasMap::Map(
                entries
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(key, v)| {
                        let pointer =
                            format!("/spec/argocd/{}/{}", pointer_step(field), pointer_step(key));
                        let setting = Setting {
                            field: field.clone(),
                            key: key.clone(),
                            value: v.clone(),
                            location: fields.location(&pointer),
                            pointer,
                        };
                        (key.clone(), setting)
                    })
                    .collect(),
            ),
        };
        maps.insert(field.clone(), read);
    }
    Argocd {
        app: (!name.is_empty()).then_some(AppRef {
            namespace: app_namespace,
            name,
        }),
        app_location: fields.location("/spec/argocd/app"),
        write,
        problems,
        maps,
    }
}

/// The automation of a `kind: fluxcd` updater, or every reason it is not one: another version,
/// `kind: argocd` (not an automation), both engines' sections, a field that cannot be honoured,
/// a wrong type, an interval that does not parse, a source that is not a GitRepository, an update
/// strategy other than `Setters`.
fn as_automation(
    mut r: Fields<'_>,
    namespace: &str,
    name: &str,
) -> Result<FluxAutomation, Vec<Diagnostic>> {
    let value = r.object().value;
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if !is_image_updater(value) {
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        r.fail(
            "",
            format!("{api_version}/{kind} is not an {KIND} ({API_VERSION})"),
        );
        return Err(r.into_errors());
    }
    if api_version != API_VERSION {
        r.fail(
            "/apiVersion",
            format!("apiVersion {api_version} is not supported: use {API_VERSION}"),
        );
    }
    if r.get("/spec").is_none() {
        r.fail("", "spec is missing");
        return Err(r.into_errors());
    }
    known_fields(&mut r, "/spec", "");
    let kind = r.string("/spec/kind");
    let has_flux = r.get("/spec/fluxcd").is_some();
    if r.get("/spec/argocd").is_some() && has_flux {
        r.fail(
            "/spec/argocd",
            "has both spec.argocd and spec.fluxcd: an ImageUpdater uses one engine, the one spec.kind names",
        );
        return Err(r.into_errors());
    }
    match kind.as_deref() {
        Some("fluxcd") => {}
        Some("argocd") | None => {
            r.fail(
                if kind.is_some() { "/spec/kind" } else { "/spec" },
                "kind argocd (the default) updates an Argo CD Application (spec.argocd.app, write: built-in or git), which is not an automation: its write-back is done by `update --fetch` over the repository and by `job --url REPOSITORY --fetch` (the ImageUpdater and its Application in the repository, or in --policies files; docs/argocd.md); an automation needs kind fluxcd with spec.fluxcd (interval, sourceRef, git, update)",
            );
            return Err(r.into_errors());
        }
        Some(other) => {
            r.fail(
                "/spec/kind",
                format!("spec.kind {other:?} is neither argocd nor fluxcd"),
            );
            return Err(r.into_errors());
        }
    }
    if !has_flux {
        r.fail(
            "/spec",
            "kind fluxcd needs spec.fluxcd (interval, sourceRef, git, update)",
        );
        return Err(r.into_errors());
    }
    let interval = match r.string("/spec/fluxcd/interval") {
        Some(text) => Interval::parse(&text).or_else(|| {
            r.fail(
                "/spec/fluxcd/interval",
                format!("spec.fluxcd.interval {text:?} is not a duration such as 1m, 30m or 1h30m (units ms, s, m, h)"),
            );
            None
        }),
        None => {
            r.fail(
                "/spec/fluxcd",
                "spec.fluxcd.interval is missing (how often to run, e.g. 5m)",
            );
            None
        }
    };
    let source_ref = source_ref(&mut r, namespace);
    let git = r
        .get("/spec/fluxcd/git")
        .is_some()
        .then(|| automation::git::read(&mut r, "/spec/fluxcd/git"));
    let update_path = if r.get("/spec/fluxcd/update").is_some() {
        automation::update(&mut r, "/spec/fluxcd/update", |s| {
            format!("unsupported update strategy {s:?}: only Setters")
        })
    } else {
        String::new()
    };
    let registry_secret = r.string("/spec/fluxcd/secret").filter(|s| !s.is_empty());
    match interval {
        Some(interval) if !r.failed() => Ok(FluxAutomation {
            automation: Automation {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                selector: None,
                update_path,
                suspend: false,
                source_ref,
                git,
                kind: AutomationKind::KubeSphere,
            },
            interval,
            registry_secret,
        }),
        _ => Err(r.into_errors()),
    }
}

/// Every field below `pointer` (a mapping) must be one of [`FIELDS`].
fn known_fields(r: &mut Fields<'_>, pointer: &str, dotted_name: &str) {
    let Some(value) = r.get(pointer) else {
        return;
    };
    let Some(map) = value.as_object() else {
        r.fail(pointer, format!("{} is not a mapping", dotted(pointer)));
        return;
    };
    for (key, child_value) in map {
        let child = if dotted_name.is_empty() {
            key.clone()
        } else {
            format!("{dotted_name}.{key}")
        };
        let p = format!("{pointer}/{}", pointer_step(key));
        if !FIELDS.contains(&child.as_str()) {
            r.fail(
                &p,
                format!(
                    "spec.{child} is not a field of the ImageUpdater API that image-update can honour (deploy/crds/)"
                ),
            );
        } else if !OPAQUE.contains(&child.as_str()) && child_value.is_object() {
            known_fields(r, &p, &child);
        }
    }
}

/// `spec.fluxcd.sourceRef`: it must be there, name a GitRepository, and have a name.
fn source_ref(r: &mut Fields<'_>, namespace: &str) -> Option<automation::SourceRef> {
    if r.get("/spec/fluxcd/sourceRef").is_none() {
        r.fail(
            "/spec/fluxcd",
            "spec.fluxcd.sourceRef is missing: name the GitRepository to update",
        );
        return None;
    }
    let source = automation::source_ref(r, "/spec/fluxcd/sourceRef", namespace);
    if source.kind != "GitRepository" {
        r.fail(
            "/spec/fluxcd/sourceRef/kind",
            format!(
                "spec.fluxcd.sourceRef.kind {:?} is not GitRepository",
                source.kind
            ),
        );
    }
    if source.name.is_empty() {
        r.fail(
            "/spec/fluxcd/sourceRef",
            "spec.fluxcd.sourceRef.name is missing",
        );
    }
    Some(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 002's sample with `kind: fluxcd`.
    const SEED: &str = include_str!("../../testdata/crd/valid/seed-002-fluxcd.yaml");

    fn read_text(text: &str) -> Result<FluxAutomation, Vec<String>> {
        let doc = crate::yaml::parse_one(text).unwrap();
        automation(&doc, "updater.yaml", true)
            .map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn seed_002_is_an_automation() {
        let u = read_text(SEED).unwrap();
        let a = &u.automation;
        assert_eq!(a.describe(), "ImageUpdater default/demo");
        assert_eq!(a.update_path, "clusters/my-cluster");
        assert_eq!(
            a.source_ref,
            Some(crate::automation::SourceRef {
                kind: "GitRepository".into(),
                name: "podinfo".into(),
                namespace: "default".into()
            })
        );
        let git = a.git.as_ref().unwrap();
        assert_eq!(
            git.checkout.as_ref().unwrap().branch.as_deref(),
            Some("main")
        );
        assert_eq!(git.commit.author_name, "fluxcdbot");
        assert_eq!(
            git.commit.author_email,
            "fluxcdbot@users.noreply.github.com"
        );
        assert_eq!(
            git.commit.message_template.as_deref(),
            Some("{{range .Updated.Images}}{{println .}}{{end}}")
        );
        assert_eq!(git.push.as_ref().unwrap().branch.as_deref(), Some("main"));
        assert_eq!(u.interval.duration, std::time::Duration::from_secs(60));
        assert_eq!(u.registry_secret.as_deref(), Some("docker-hub-secret"));
    }

    #[test]
    fn errors_are_at_their_line() {
        let errors = read_text(
            "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: apps}\nspec:\n  kind: fluxcd\n  images: [nginx]\n  fluxcd:\n    interval: 1 minute\n    sourceRef: {kind: Bucket, name: b}\n    suspend: true\n    update: {strategy: Regex}\n",
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "updater.yaml:8:15: error: ImageUpdater apps/u: spec.fluxcd.interval \"1 minute\" is not a duration such as 1m, 30m or 1h30m (units ms, s, m, h)",
                "updater.yaml:9:23: error: ImageUpdater apps/u: spec.fluxcd.sourceRef.kind \"Bucket\" is not GitRepository",
                "updater.yaml:10:14: error: ImageUpdater apps/u: spec.fluxcd.suspend is not a field of the ImageUpdater API that image-update can honour (deploy/crds/)",
                "updater.yaml:11:24: error: ImageUpdater apps/u: unsupported update strategy \"Regex\": only Setters",
            ]
        );
    }

    #[test]
    fn both_sections_and_argocd_are_refused() {
        let both = SEED.replace(
            "  kind: fluxcd\n",
            "  kind: fluxcd\n  argocd: {write: git}\n",
        );
        let errors = read_text(&both).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("updater.yaml:13:11: error: ImageUpdater default/demo: has both spec.argocd and spec.fluxcd"),
            "{}",
            errors[0]
        );
        let argo = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: a}\nspec:\n  kind: argocd\n  images: [nginx]\n  argocd: {app: {name: demo}}\n";
        let errors = read_text(argo).unwrap_err();
        assert!(
            errors[0].starts_with("updater.yaml:5:9: error: ImageUpdater default/a: kind argocd (the default) updates an Argo CD Application"),
            "{}",
            errors[0]
        );
        assert!(errors[0].contains("needs kind fluxcd with spec.fluxcd"));
        let no_source = SEED.replace(
            "    sourceRef:\n      kind: GitRepository\n      name: podinfo\n",
            "",
        );
        let errors = read_text(&no_source).unwrap_err();
        assert!(
            errors[0].contains("spec.fluxcd.sourceRef is missing"),
            "{errors:?}"
        );
        let errors = read_text("apiVersion: v1\nkind: ConfigMap\n").unwrap_err();
        assert!(errors[0].contains("is not an ImageUpdater"), "{errors:?}");
    }

    /// A `messageTemplateValues` entry that is not a string (Flux's API types the map
    /// `map[string]string`) is refused at its line by both kinds of automation, which read their
    /// git section with one reader; a null entry is the empty string in both.
    #[test]
    fn message_template_values_are_strings_in_both_kinds() {
        let sphere = SEED.replace(
            "        messageTemplate: '{{range .Updated.Images}}{{println .}}{{end}}'\n",
            "        messageTemplateValues:\n          env: prod\n          replicas: 3\n          empty:\n",
        );
        let errors = read_text(&sphere).unwrap_err();
        assert_eq!(
            errors,
            [
                "updater.yaml:32:21: error: ImageUpdater default/demo: spec.fluxcd.git.commit.messageTemplateValues.replicas is not a string"
            ]
        );
        let flux = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: demo}\nspec:\n  git:\n    commit:\n      messageTemplateValues:\n        env: prod\n        replicas: 3\n        empty:\n";
        let doc = crate::yaml::parse_one(flux).unwrap();
        let errors: Vec<String> = crate::automation::read(&doc, "updater.yaml", true)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "updater.yaml:9:19: error: ImageUpdateAutomation default/demo: spec.git.commit.messageTemplateValues.replicas is not a string"
            ]
        );
        // Quoted, the number is text, and an empty entry the empty string, in both.
        let quoted = |t: &str| t.replace("replicas: 3", "replicas: '3'");
        let a = read_text(&quoted(&sphere)).unwrap().automation;
        let doc = crate::yaml::parse_one(&quoted(flux)).unwrap();
        let b = crate::automation::read(&doc, "updater.yaml", true).unwrap();
        for git in [a.git.unwrap(), b.git.unwrap()] {
            let values = git.commit.message_template_values;
            assert_eq!(values["replicas"], "3");
            assert_eq!(values["empty"], "");
        }
    }

    const ARGO: &str = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: demo, namespace: demo}\nspec:\n  images:\n  - nginx:^0.1\n  - myalias=some/image\n  - edge=ghcr.io/acme/edge:stable\n  - localhost:5000/acme/api:~1.2\n  - ghcr.io/acme/jobs\n  kind: argocd\n  argocd:\n    app: {name: shop}\n    write: git\n    update-strategy: {nginx: semver, myalias: latest, edge: digest, ghcr.io/acme/jobs: latest}\n    allow-tags: {nginx: any, acme/api: 'regexp:^1'}\n    ignore-tags: {myalias: '*-dev, *-old', edge: [a, b]}\n    platforms: {nginx: 1}\n";

    fn read_argo(text: &str) -> Updater {
        let doc = crate::yaml::parse_one(text).unwrap();
        read(&Object::root(&doc), "ks.yaml", true)
    }

    /// One reading gives every part: the images with their aliases, the Application, the
    /// method, each image's settings under its alias or its image as written.
    #[test]
    fn the_argocd_part_and_the_images() {
        let u = read_argo(ARGO);
        assert!(u.is_argocd());
        assert_eq!(
            u.argocd.app,
            Some(AppRef {
                namespace: "demo".into(),
                name: "shop".into()
            })
        );
        assert_eq!(u.argocd.write.as_ref().unwrap().0, "git");
        assert_eq!(
            u.argocd.write.as_ref().unwrap().1.to_string(),
            "ks.yaml:14:12"
        );
        let images: Vec<Image> = u
            .images
            .clone()
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let aliases: Vec<&str> = images.iter().map(|i| i.entry.alias.as_str()).collect();
        assert_eq!(
            aliases,
            ["nginx", "myalias", "edge", "acme/api", "acme/jobs"]
        );
        let setting = |i: usize, field: &str| u.setting(&images[i].entry, field).unwrap();
        assert_eq!(
            setting(1, "update-strategy").unwrap().text().unwrap(),
            "latest"
        );
        assert_eq!(
            setting(4, "update-strategy").unwrap().key,
            "ghcr.io/acme/jobs"
        );
        assert_eq!(
            setting(3, "allow-tags").unwrap().text().unwrap(),
            "regexp:^1"
        );
        assert_eq!(
            setting(1, "ignore-tags").unwrap().list().unwrap(),
            ["*-dev", "*-old"]
        );
        assert_eq!(
            setting(2, "ignore-tags").unwrap().list().unwrap(),
            ["a", "b"]
        );
        assert!(setting(1, "platforms").is_none());
        // A number where a string is meant, by the one plain-scalar rule.
        assert_eq!(
            setting(0, "platforms").unwrap().list().unwrap_err(),
            "spec.argocd.platforms.nginx is not a string or a list"
        );
        assert_eq!(
            setting(0, "platforms").unwrap().location.to_string(),
            "ks.yaml:18:24"
        );
        // Not an automation: the automation part says why, at its line.
        let errors = u.automation.unwrap_err();
        assert!(
            errors[0].to_string().starts_with(
                "ks.yaml:11:9: error: ImageUpdater demo/demo: kind argocd (the default)"
            ),
            "{errors:?}"
        );
    }

    #[test]
    fn argocd_part_problems() {
        let twice = ARGO.replace(
            "acme/api: 'regexp:^1'",
            "acme/api: x, localhost:5000/acme/api: y",
        );
        let u = read_argo(&twice);
        let images: Vec<Image> = u
            .images
            .clone()
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            u.setting(&images[3].entry, "allow-tags").unwrap_err(),
            "spec.argocd.allow-tags gives the image's setting twice, under \"acme/api\" and \"localhost:5000/acme/api\"; keep one"
        );
        let not_a_map = ARGO.replace("platforms: {nginx: 1}", "platforms: linux/amd64");
        let u = read_argo(&not_a_map);
        assert_eq!(
            u.setting(&images[0].entry, "platforms").unwrap_err(),
            "spec.argocd.platforms is not a map of alias to value"
        );
        let number = ARGO.replace("app: {name: shop}", "app: {name: 1}");
        let u = read_argo(&number);
        assert_eq!(u.argocd.app, None);
        assert_eq!(
            u.argocd.problems[0].to_string(),
            "ks.yaml:13:17: error: ImageUpdater demo/demo: spec.argocd.app.name is not a string"
        );
        let bad = ARGO.replace("  - nginx:^0.1\n", "  - 1\n  - a:b=c\n");
        let u = read_argo(&bad);
        let images = u.images.unwrap();
        assert_eq!(
            images[0].as_ref().unwrap_err().to_string(),
            "ks.yaml:6:5: error: ImageUpdater demo/demo: spec.images holds a non-string"
        );
        assert!(
            images[1]
                .as_ref()
                .unwrap_err()
                .to_string()
                .starts_with("ks.yaml:7:5: error: ImageUpdater demo/demo: image \"a:b=c\": ")
        );
        let kind = ARGO.replace("kind: argocd", "kind: helm");
        let u = read_argo(&kind);
        assert_eq!(
            u.engine.unwrap_err().to_string(),
            "ks.yaml:11:9: error: ImageUpdater demo/demo: spec.kind \"helm\" is neither argocd nor fluxcd"
        );
    }
}
