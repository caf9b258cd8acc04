//! KubeSphere `ImageUpdater` objects (`gitops.kubesphere.io/v1alpha1`, the
//! design documents' CRD) as policy definitions: one per `spec.images`
//! entry `[ALIAS=]IMAGE[:CONSTRAINT]`, keyed `NAMESPACE:ALIAS` (an image
//! without an alias is named by [`ImageEntry::parse`]), with the strategy of
//! `spec.fluxcd.policy` or `spec.argocd`'s per-alias maps (`update-strategy`,
//! `allow-tags`, `ignore-tags`, `platforms`, `secret`). A constraint that
//! setting overrides is not applied, and the definition says so at the entry.

use serde_json::Value;

use super::definitions::{
    Definition, Kind, Problem, RegistryCredential, Secrets, credential_source, flux_strategy,
    gate_config, str_field,
};
use crate::argocd::config::{MAX_IMAGES_PER_APPLICATION, over_limit};
use crate::diagnostic::Diagnostic;
use crate::policies::{PolicyDocument, PolicyKey};
use crate::reflector::selection::spec::{GateConfig, Order, PolicyConfig, PolicySpec, Strategy};
use crate::yaml::{Object, labels, namespace_name};
use image_update_registry::Repository;

/// apiVersion group of the KubeSphere ImageUpdater.
pub(crate) const KUBESPHERE_GROUP: &str = "gitops.kubesphere.io";

/// Whether `value` is a KubeSphere ImageUpdater.
#[must_use]
pub(crate) fn is_image_updater(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("ImageUpdater")
        && value
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.split('/').next() == Some(KUBESPHERE_GROUP))
}

/// The engine an ImageUpdater names (`spec.kind`, default `argocd`): it decides the name of an
/// image written without an alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    ArgoCd,
    FluxCd,
}

impl Engine {
    /// `spec.kind`'s value; `None` for neither engine.
    #[must_use]
    pub(crate) fn from_kind(kind: &str) -> Option<Self> {
        match kind {
            "argocd" => Some(Self::ArgoCd),
            "fluxcd" => Some(Self::FluxCd),
            _ => None,
        }
    }
}

/// One `spec.images` entry: `[ALIAS=]IMAGE[:CONSTRAINT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageEntry {
    /// The name its policy is keyed by (`NAMESPACE:ALIAS`) and its per-alias settings are found
    /// under: the alias written, else derived from the image ([`ImageEntry::parse`]).
    pub alias: String,
    /// Whether the entry writes its alias (`ALIAS=IMAGE`).
    pub aliased: bool,
    pub image: String,
    pub constraint: Option<String>,
}

impl ImageEntry {
    /// Parse an entry of an updater of `engine`. Without `ALIAS=`, the alias is derived:
    /// * `argocd`: as Argo CD Image Updater names an image without an alias, its repository path
    ///   without the registry (`ghcr.io/acme/web` is `acme/web`, `nginx` stays `nginx`), which is
    ///   always a valid marker name (`NAMESPACE:acme/web`), so a registry with a port needs no
    ///   alias: the write-back uses no marker;
    /// * `fluxcd`: the image as written (seed 002's `nginx` for `nginx:^0.1`): a fluxcd updater's
    ///   images are the policies of `$imagepolicy` markers, named `NAMESPACE:ALIAS`, so an image
    ///   whose name holds a `:` (a registry with a port) needs an alias.
    ///
    /// # Errors
    /// An empty alias or image, a written alias with `:`, spaces or quotes, a fluxcd image
    /// without an alias whose name cannot be a marker's.
    pub(crate) fn parse(entry: &str, engine: Engine) -> Result<Self, String> {
        let entry = entry.trim();
        let (alias, rest) = match entry.split_once('=') {
            Some((a, r)) => (Some(a.trim()), r.trim()),
            None => (None, entry),
        };
        // The constraint follows the first `:` after the last `/`.
        let slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (image, constraint) = match rest[slash..].find(':') {
            Some(i) => (
                &rest[..slash + i],
                Some(rest[slash + i + 1..].trim().to_owned()).filter(|c| !c.is_empty()),
            ),
            None => (rest, None),
        };
        if image.is_empty() {
            return Err(format!("{entry:?}: the image is empty"));
        }
        let aliased = alias.is_some();
        let marker_safe = |name: &str| !name.is_empty() && !name.contains([':', ' ', '"']);
        let alias = match (alias, engine) {
            (Some(alias), _) if marker_safe(alias) => alias.to_owned(),
            (Some(alias), _) => {
                return Err(format!(
                    "{entry:?}: the alias {alias:?} cannot name a policy (NAMESPACE:ALIAS): an alias is not empty and has no `:`, space or quote"
                ));
            }
            (None, Engine::ArgoCd) => {
                let name = crate::argocd::image::ArgoImage::parse(image).name;
                if !marker_safe(&name) {
                    return Err(format!(
                        "{entry:?}: no name can be derived from the image ({name:?}); write ALIAS=IMAGE"
                    ));
                }
                name
            }
            (None, Engine::FluxCd) if marker_safe(image) => image.to_owned(),
            (None, Engine::FluxCd) => {
                return Err(format!(
                    "{entry:?}: a fluxcd updater's images are the policies of $imagepolicy markers, named NAMESPACE:ALIAS, and without an alias the image {image:?} would be the name, which cannot hold `:`; write ALIAS=IMAGE"
                ));
            }
        };
        Ok(Self {
            alias,
            aliased,
            image: image.to_owned(),
            constraint,
        })
    }

    /// The keys of the per-alias maps (`spec.argocd.update-strategy`...) that may hold this
    /// entry's settings: its alias, and for an entry written without one, also the image as
    /// written when the alias differs (`ghcr.io/acme/web`, whose alias is `acme/web`).
    pub(crate) fn setting_keys(&self) -> impl Iterator<Item = &str> {
        let written = (!self.aliased && self.image != self.alias).then_some(self.image.as_str());
        std::iter::once(self.alias.as_str()).chain(written)
    }
}

/// The definitions of the ImageUpdater `object` (into `out`), or its
/// problems (into `errors`).
pub(super) fn definitions(
    object: &Object<'_>,
    doc: &PolicyDocument,
    secrets: &Secrets<'_, '_>,
    out: &mut Vec<Definition>,
    errors: &mut Vec<Diagnostic>,
) {
    let value = object.value;
    let (namespace, name) = namespace_name(value);
    let what = format!("ImageUpdater {namespace}/{name}");
    let diagnostic = |p: &Problem, warning: bool| {
        let message = format!("{what}: {}", p.message);
        let d = if warning {
            Diagnostic::warning(message)
        } else {
            Diagnostic::error(message)
        };
        d.at(doc.location(object, &p.pointer))
    };
    let mut fail = |p: Problem| errors.push(diagnostic(&p, false));
    let spec = value.get("spec").unwrap_or(&Value::Null);
    let kind = match str_field(spec, "/spec", "/kind", "spec.kind") {
        Ok(k) => k.unwrap_or("argocd"),
        Err(e) => {
            fail(e);
            return;
        }
    };
    let Some(engine) = Engine::from_kind(kind) else {
        fail(Problem::at(
            format!("spec.kind {kind:?} is neither argocd nor fluxcd"),
            "/spec/kind",
        ));
        return;
    };
    let Some(images) = spec.get("images").and_then(Value::as_array) else {
        fail(Problem::at("spec.images is missing or not a list", "/spec"));
        return;
    };
    if images.len() > MAX_IMAGES_PER_APPLICATION {
        fail(Problem::at(
            over_limit(
                "spec.images",
                images.len(),
                "images",
                MAX_IMAGES_PER_APPLICATION,
                "ImageUpdater",
            ),
            &format!("/spec/images/{MAX_IMAGES_PER_APPLICATION}"),
        ));
        return;
    }
    for (i, entry) in images.iter().enumerate() {
        let pointer = format!("/spec/images/{i}");
        let Some(text) = entry.as_str() else {
            fail(Problem::at("spec.images holds a non-string", &pointer));
            continue;
        };
        // A problem of the entry: at the field that holds it, else at the entry.
        let at_entry = |p: Problem| {
            let field = if p.pointer.is_empty() {
                pointer.clone()
            } else {
                p.pointer
            };
            Problem::at(format!("image {text:?}: {}", p.message), &field)
        };
        match kubesphere_entry(text, engine, spec, &namespace, doc, secrets) {
            Ok(e) => out.push(Definition {
                gate: e.gate,
                source: format!(
                    "{} (ImageUpdater {namespace}/{name}, image {text:?})",
                    doc.origin
                ),
                location: doc.location(object, &pointer),
                key: e.key,
                image: e.image,
                repository: e.repository,
                config: e.config,
                insecure: false,
                provider: image_update_registry::Provider::Generic,
                credentials: e.credentials,
                previous: None,
                observed_previous: None,
                labels: labels(value),
                kind: Kind::KubeSphere {
                    updater: format!("{namespace}/{name}"),
                },
                notes: e
                    .warnings
                    .into_iter()
                    .map(|w| diagnostic(&at_entry(w), true))
                    .collect(),
            }),
            Err(e) => fail(at_entry(e)),
        }
    }
}

/// What one entry defines.
struct Entry {
    key: PolicyKey,
    image: String,
    repository: Repository,
    config: PolicyConfig,
    gate: GateConfig,
    credentials: Option<RegistryCredential>,
    /// What the run is told about the entry (a constraint another setting overrides).
    warnings: Vec<Problem>,
}

fn kubesphere_entry(
    text: &str,
    engine: Engine,
    spec: &Value,
    namespace: &str,
    doc: &PolicyDocument,
    secrets: &Secrets<'_, '_>,
) -> Result<Entry, Problem> {
    let entry = ImageEntry::parse(text, engine)?;
    let repository = Repository::parse(&entry.image).map_err(|e| e.to_string())?;
    let key = PolicyKey {
        namespace: namespace.to_owned(),
        name: entry.alias.clone(),
    };
    let mut warnings = Vec::new();
    let (config, gate, secret) = match engine {
        Engine::FluxCd => {
            let flux = spec.get("fluxcd").unwrap_or(&Value::Null);
            let strategy = if flux.get("policy").is_some_and(|p| !p.is_null()) {
                let policy = flux_strategy(flux, "/spec/fluxcd").map_err(|e| Problem {
                    message: e.message.replace("spec.policy", "spec.fluxcd.policy"),
                    pointer: e.pointer,
                })?;
                warnings.extend(overridden_by_policy(&entry, &policy));
                policy
            } else {
                semver_from(entry.constraint.as_deref())
            };
            let secret = str_field(flux, "/spec/fluxcd", "/secret", "spec.fluxcd.secret")?
                .map(str::to_owned);
            (PolicyConfig::new(strategy), GateConfig::default(), secret)
        }
        Engine::ArgoCd => {
            let (config, gate, secret, overridden) = argocd_config(&entry, spec)?;
            warnings.extend(overridden);
            (config, gate, secret)
        }
    };
    // The selection's own check, before any registry is asked, at the field that holds the
    // mistake (the entry itself for its constraint).
    if let Err(e) = PolicySpec::new(config.clone()) {
        let setting = |field: &str| {
            setting_key(spec, field, &entry).map_or_else(String::new, |k| {
                format!(
                    "/spec/argocd/{field}/{}",
                    k.replace('~', "~0").replace('/', "~1")
                )
            })
        };
        let pointer = match (engine, e.field) {
            (Engine::FluxCd, "semver range") if spec.pointer("/fluxcd/policy").is_some() => {
                "/spec/fluxcd/policy/semver/range".to_owned()
            }
            (Engine::ArgoCd, "allow-tags") => setting("allow-tags"),
            (Engine::ArgoCd, "ignore-tags glob") => setting("ignore-tags"),
            (Engine::ArgoCd, "platform") => setting("platforms"),
            _ => String::new(),
        };
        return Err(Problem::at(e.to_string(), &pointer));
    }
    let pointer = match engine {
        Engine::FluxCd => "/spec/fluxcd/secret",
        Engine::ArgoCd => "/spec/argocd",
    };
    let credentials = match secret.filter(|s| !s.is_empty()) {
        Some(secret) => Some(credential_source(
            &secret, pointer, namespace, doc, secrets,
        )?),
        None => None,
    };
    Ok(Entry {
        key,
        image: entry.image,
        repository,
        config,
        gate,
        credentials,
        warnings,
    })
}

fn semver_from(constraint: Option<&str>) -> Strategy {
    Strategy::SemVer {
        range: constraint.unwrap_or("*").to_owned(),
    }
}

/// The warning for an entry whose constraint `spec.fluxcd.policy` overrides (none when it has
/// none, or when the policy is the same semver range). The policy governs: a fluxcd updater
/// stands for one Flux ImagePolicy per image, and `spec.fluxcd.policy` is that ImagePolicy's
/// `spec.policy`, the one rule Flux applies; the constraint written after the image is Argo CD
/// Image Updater's convention, which Flux has no place for.
fn overridden_by_policy(entry: &ImageEntry, policy: &Strategy) -> Option<Problem> {
    let constraint = entry.constraint.as_deref()?;
    if matches!(policy, Strategy::SemVer { range } if range == constraint) {
        return None;
    }
    Some(Problem::at(
        format!(
            "its constraint {constraint} is not applied: spec.fluxcd.policy ({}) governs every image of a fluxcd updater, as the policy of the Flux ImagePolicy the image stands for, so it may choose a version the constraint excludes; remove one of the two, or give the image an updater of its own",
            describe(policy)
        ),
        "",
    ))
}

/// A strategy for messages: `semver range 5.0.x`, `alphabetical`.
fn describe(strategy: &Strategy) -> String {
    match strategy {
        Strategy::SemVer { range } => format!("semver range {range}"),
        other => other.name().to_owned(),
    }
}

/// The key of `spec.argocd.FIELD` that holds the settings of `entry` (one of
/// [`ImageEntry::setting_keys`]), when one does.
fn setting_key<'e>(spec: &Value, field: &str, entry: &'e ImageEntry) -> Option<&'e str> {
    let map = spec.get("argocd")?.get(field)?.as_object()?;
    entry
        .setting_keys()
        .find(|k| map.get(*k).is_some_and(|v| !v.is_null()))
}

/// `spec.argocd`'s selection and gate for one entry, its registry Secret, and the warnings: the
/// per-alias maps `update-strategy`, `allow-tags`, `ignore-tags`, `platforms`, `secret`, and the
/// supply-chain gate's settings (`min-age`, `verify-identity`…: `definitions::GATE_SETTINGS`).
fn argocd_config(
    entry: &ImageEntry,
    spec: &Value,
) -> Result<(PolicyConfig, GateConfig, Option<String>, Option<Problem>), Problem> {
    let argo = spec.get("argocd").unwrap_or(&Value::Null);
    // The entry's value of a per-alias map, and the key it is under.
    let per_alias = |field: &str| -> Result<Option<(&Value, &str)>, String> {
        match argo.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => {
                let mut found = entry
                    .setting_keys()
                    .filter_map(|k| map.get(k).filter(|v| !v.is_null()).map(|v| (v, k)));
                let first = found.next();
                if let (Some((_, a)), Some((_, b))) = (first, found.next()) {
                    return Err(format!(
                        "spec.argocd.{field} gives the image's setting twice, under {a:?} and {b:?}; keep one"
                    ));
                }
                Ok(first)
            }
            Some(_) => Err(format!(
                "spec.argocd.{field} is not a map of alias to value"
            )),
        }
    };
    let text = |field: &str| -> Result<Option<String>, String> {
        per_alias(field)?
            .map(|(v, key)| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("spec.argocd.{field}.{key} is not a string"))
            })
            .transpose()
    };
    let list = |field: &str| -> Result<Vec<String>, String> {
        match per_alias(field)? {
            None => Ok(Vec::new()),
            Some((Value::String(s), _)) => Ok(s
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()),
            Some((Value::Array(items), key)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("spec.argocd.{field}.{key} holds a non-string"))
                })
                .collect(),
            Some((_, key)) => Err(format!(
                "spec.argocd.{field}.{key} is not a string or a list"
            )),
        }
    };
    let written = text("update-strategy")?;
    let strategy = match written.as_deref().unwrap_or("semver") {
        "semver" => semver_from(entry.constraint.as_deref()),
        "newest-build" | "latest" => Strategy::NewestBuild,
        "alphabetical" | "name" => Strategy::Alphabetical { order: Order::Asc },
        "digest" => Strategy::Digest {
            tag: entry
                .constraint
                .clone()
                .ok_or("the digest strategy needs the tag to follow: write IMAGE:TAG")?,
        },
        other => {
            return Err(format!(
                "unknown update-strategy {other:?}: use semver, newest-build (latest), alphabetical (name) or digest"
            )
            .into());
        }
    };
    // A constraint the strategy does not read: Argo CD Image Updater reads it with semver (the
    // range) and digest (the tag) only, and ignores it otherwise; so does the selection, with a
    // warning.
    let overridden = match (&strategy, entry.constraint.as_deref(), written.as_deref()) {
        (Strategy::NewestBuild | Strategy::Alphabetical { .. }, Some(constraint), Some(name)) => {
            let key = setting_key(spec, "update-strategy", entry).unwrap_or(&entry.alias);
            Some(Problem::at(
                format!(
                    "its constraint {constraint} is not applied: spec.argocd.update-strategy.{key} ({name}) governs, and a {} strategy reads no constraint (as in Argo CD Image Updater), so it may choose a version the constraint excludes; remove the constraint, or filter the tags with allow-tags",
                    strategy.name()
                ),
                "",
            ))
        }
        _ => None,
    };
    let mut config = PolicyConfig::new(strategy);
    config.allow_tags = text("allow-tags")?;
    config.ignore_tags = list("ignore-tags")?;
    config.platforms = list("platforms")?;
    let alias = &entry.alias;
    let gate = gate_config(&|name: &str| text(name), &|name: &str| {
        let key = setting_key(spec, name, entry).unwrap_or(alias);
        format!("spec.argocd.{name}.{key}")
    })?;
    Ok((config, gate, text("secret")?, overridden))
}
