//! A KubeSphere `ImageUpdater` ([`crate::kubesphere`], read there once) as policy definitions:
//! one per `spec.images` entry `[ALIAS=]IMAGE[:CONSTRAINT]`, keyed `NAMESPACE:ALIAS`, with the
//! strategy of `spec.fluxcd.policy` or `spec.argocd`'s per-alias maps (`update-strategy`,
//! `allow-tags`, `ignore-tags`, `platforms`, `secret`, the gate's settings). A constraint that
//! setting overrides is not applied, and the definition says so at the entry.

use super::definitions::{
    Definition, Kind, Problem, RegistryCredential, Secrets, credential_source, flux_strategy,
    gate_config,
};
use crate::diagnostic::Diagnostic;
use crate::kubesphere::{Engine, Image, ImageEntry, Updater};
use crate::policies::{PolicyDocument, PolicyKey};
use crate::reflector::selection::spec::{GateConfig, Order, PolicyConfig, PolicySpec, Strategy};
use crate::yaml::{Object, labels};
use image_update_registry::Repository;

/// The definitions of the ImageUpdater `object` (into `out`), or its
/// problems (into `errors`, in the order of their lines).
pub(super) fn definitions(
    object: &Object<'_>,
    doc: &PolicyDocument,
    secrets: &Secrets<'_, '_>,
    out: &mut Vec<Definition>,
    errors: &mut Vec<Diagnostic>,
) {
    let mut mine = Vec::new();
    entries(object, doc, secrets, out, &mut mine);
    mine.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    errors.append(&mut mine);
}

/// [`definitions`], its problems in the order found: those of the reading, then those of each
/// entry's definition.
fn entries(
    object: &Object<'_>,
    doc: &PolicyDocument,
    secrets: &Secrets<'_, '_>,
    out: &mut Vec<Definition>,
    errors: &mut Vec<Diagnostic>,
) {
    let updater = crate::kubesphere::read(object, &doc.origin, doc.positions);
    let what = &updater.what;
    let diagnostic = |p: &Problem, warning: bool| {
        let message = format!("{what}: {}", p.message);
        let d = if warning {
            Diagnostic::warning(message)
        } else {
            Diagnostic::error(message)
        };
        d.at(doc.location(object, &p.pointer))
    };
    let Some(images) = updater.images_into(errors) else {
        return;
    };
    let Ok(engine) = updater.engine else {
        return;
    };
    for image in images {
        let text = &image.text;
        // A problem of the entry: at the field that holds it, else at the entry.
        let at_entry = |p: Problem| {
            let field = if p.pointer.is_empty() {
                image.pointer.clone()
            } else {
                p.pointer
            };
            Problem::at(format!("image {text:?}: {}", p.message), &field)
        };
        match kubesphere_entry(image, engine, &updater, doc, secrets) {
            Ok(e) => out.push(Definition {
                gate: e.gate,
                source: format!(
                    "{} (ImageUpdater {}/{}, image {text:?})",
                    doc.origin, updater.namespace, updater.name
                ),
                location: image.location.clone(),
                key: e.key,
                image: e.image,
                repository: e.repository,
                config: e.config,
                insecure: false,
                provider: image_update_registry::Provider::Generic,
                credentials: e.credentials,
                previous: None,
                observed_previous: None,
                labels: labels(object.value),
                kind: Kind::KubeSphere {
                    updater: format!("{}/{}", updater.namespace, updater.name),
                },
                notes: e
                    .warnings
                    .into_iter()
                    .map(|w| diagnostic(&at_entry(w), true))
                    .collect(),
            }),
            Err(e) => errors.push(diagnostic(&at_entry(e), false)),
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
    image: &Image,
    engine: Engine,
    updater: &Updater,
    doc: &PolicyDocument,
    secrets: &Secrets<'_, '_>,
) -> Result<Entry, Problem> {
    let entry = &image.entry;
    let repository = Repository::parse(&entry.image).map_err(|e| e.to_string())?;
    let namespace = &updater.namespace;
    let key = PolicyKey {
        namespace: namespace.clone(),
        name: entry.alias.clone(),
    };
    let mut warnings = Vec::new();
    let (config, gate, secret) = match engine {
        Engine::FluxCd => {
            let strategy = if let Some(policy) = &updater.fluxcd_policy {
                let policy = flux_strategy(policy, "/spec/fluxcd").map_err(|e| Problem {
                    message: e.message.replace("spec.policy", "spec.fluxcd.policy"),
                    pointer: e.pointer,
                })?;
                warnings.extend(overridden_by_policy(entry, &policy));
                policy
            } else {
                semver_from(entry.constraint.as_deref())
            };
            let secret = updater.fluxcd_secret.clone().map_err(|_| {
                Problem::at("spec.fluxcd.secret is not a string", "/spec/fluxcd/secret")
            })?;
            (PolicyConfig::new(strategy), GateConfig::default(), secret)
        }
        Engine::ArgoCd => {
            let (config, gate, secret, overridden) = argocd_config(entry, updater)?;
            warnings.extend(overridden);
            (config, gate, secret)
        }
    };
    // The selection's own check, before any registry is asked, at the field that holds the
    // mistake (the entry itself for its constraint).
    if let Err(e) = PolicySpec::new(config.clone()) {
        let setting = |field: &str| {
            updater
                .setting(entry, field)
                .ok()
                .flatten()
                .map_or_else(String::new, |s| s.pointer.clone())
        };
        let pointer = match (engine, e.field) {
            (Engine::FluxCd, "semver range") if updater.fluxcd_policy.is_some() => {
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
        image: entry.image.clone(),
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

/// `spec.argocd`'s selection and gate for one entry, its registry Secret, and the warnings: the
/// per-alias maps `update-strategy`, `allow-tags`, `ignore-tags`, `platforms`, `secret`, and the
/// supply-chain gate's settings (`min-age`, `verify-identity`…: `definitions::GATE_SETTINGS`),
/// as the one reader gives them ([`Updater::setting`]).
fn argocd_config(
    entry: &ImageEntry,
    updater: &Updater,
) -> Result<(PolicyConfig, GateConfig, Option<String>, Option<Problem>), Problem> {
    let text = |field: &str| -> Result<Option<String>, String> {
        updater
            .setting(entry, field)?
            .map(crate::kubesphere::Setting::text)
            .transpose()
    };
    let list = |field: &str| -> Result<Vec<String>, String> {
        Ok(updater
            .setting(entry, field)?
            .map(crate::kubesphere::Setting::list)
            .transpose()?
            .unwrap_or_default())
    };
    // The key a setting is under, for messages.
    let key_of = |field: &str| -> String {
        updater
            .setting(entry, field)
            .ok()
            .flatten()
            .map_or_else(|| entry.alias.clone(), |s| s.key.clone())
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
            let key = key_of("update-strategy");
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
    let gate = gate_config(&|name: &str| text(name), &|name: &str| {
        format!("spec.argocd.{name}.{}", key_of(name))
    })?;
    Ok((config, gate, text("secret")?, overridden))
}
