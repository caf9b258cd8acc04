//! KubeSphere `ImageUpdater` objects (`gitops.kubesphere.io/v1alpha1`, the
//! design documents' CRD) as policy definitions: one per `spec.images`
//! entry `[ALIAS=]IMAGE[:CONSTRAINT]`, keyed `NAMESPACE:ALIAS`, with the
//! strategy of `spec.fluxcd.policy` or `spec.argocd`'s per-alias maps
//! (`update-strategy`, `allow-tags`, `ignore-tags`, `platforms`, `secret`).

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

/// One `spec.images` entry: `[ALIAS=]IMAGE[:CONSTRAINT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageEntry {
    pub alias: String,
    pub image: String,
    pub constraint: Option<String>,
}

impl ImageEntry {
    /// Parse an entry. Without `ALIAS=`, the alias is the image as written
    /// (without the constraint); it must then contain no `:` (a registry
    /// port), since markers are `NAMESPACE:ALIAS`.
    ///
    /// # Errors
    /// An empty alias or image, or an alias with `:` or spaces.
    pub(crate) fn parse(entry: &str) -> Result<Self, String> {
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
        let alias = alias.unwrap_or(image);
        if alias.is_empty() || alias.contains([':', ' ', '"']) {
            return Err(format!(
                "{entry:?}: the alias {alias:?} cannot name a marker (NAMESPACE:ALIAS); write ALIAS=IMAGE"
            ));
        }
        Ok(Self {
            alias: alias.to_owned(),
            image: image.to_owned(),
            constraint,
        })
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
    let mut fail = |p: Problem| {
        errors.push(
            Diagnostic::error(format!("{what}: {}", p.message))
                .at(doc.location(object, &p.pointer)),
        );
    };
    let spec = value.get("spec").unwrap_or(&Value::Null);
    let kind = match str_field(spec, "/spec", "/kind", "spec.kind") {
        Ok(k) => k.unwrap_or("argocd"),
        Err(e) => {
            fail(e);
            return;
        }
    };
    if kind != "argocd" && kind != "fluxcd" {
        fail(Problem::at(
            format!("spec.kind {kind:?} is neither argocd nor fluxcd"),
            "/spec/kind",
        ));
        return;
    }
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
        match kubesphere_entry(text, kind, spec, &namespace, doc, secrets) {
            Ok((key, image, repository, (config, gate), credentials)) => out.push(Definition {
                gate,
                source: format!(
                    "{} (ImageUpdater {namespace}/{name}, image {text:?})",
                    doc.origin
                ),
                location: doc.location(object, &pointer),
                key,
                image,
                repository,
                config,
                insecure: false,
                provider: image_update_registry::Provider::Generic,
                credentials,
                previous: None,
                observed_previous: None,
                labels: labels(value),
                kind: Kind::KubeSphere {
                    updater: format!("{namespace}/{name}"),
                },
            }),
            Err(e) => fail(Problem::at(
                format!("image {text:?}: {}", e.message),
                if e.pointer.is_empty() {
                    &pointer
                } else {
                    &e.pointer
                },
            )),
        }
    }
}

type Entry = (
    PolicyKey,
    String,
    Repository,
    (PolicyConfig, GateConfig),
    Option<RegistryCredential>,
);

fn kubesphere_entry(
    text: &str,
    kind: &str,
    spec: &Value,
    namespace: &str,
    doc: &PolicyDocument,
    secrets: &Secrets<'_, '_>,
) -> Result<Entry, Problem> {
    let entry = ImageEntry::parse(text)?;
    let repository = Repository::parse(&entry.image).map_err(|e| e.to_string())?;
    let key = PolicyKey {
        namespace: namespace.to_owned(),
        name: entry.alias.clone(),
    };
    let (config, secret) = if kind == "fluxcd" {
        let flux = spec.get("fluxcd").unwrap_or(&Value::Null);
        let strategy = if flux.get("policy").is_some_and(|p| !p.is_null()) {
            flux_strategy(flux, "/spec/fluxcd").map_err(|e| Problem {
                message: e.message.replace("spec.policy", "spec.fluxcd.policy"),
                pointer: e.pointer,
            })?
        } else {
            semver_from(entry.constraint.as_deref())
        };
        let secret =
            str_field(flux, "/spec/fluxcd", "/secret", "spec.fluxcd.secret")?.map(str::to_owned);
        ((PolicyConfig::new(strategy), GateConfig::default()), secret)
    } else {
        let (config, gate, secret) = argocd_config(&entry, spec)?;
        ((config, gate), secret)
    };
    // The selection's own check, before any registry is asked, at the field that holds the
    // mistake (the entry itself for its constraint).
    if let Err(e) = PolicySpec::new(config.0.clone()) {
        let alias = entry.alias.replace('~', "~0").replace('/', "~1");
        let pointer = match (kind, e.field) {
            ("fluxcd", "semver range") if spec.pointer("/fluxcd/policy").is_some() => {
                "/spec/fluxcd/policy/semver/range".to_owned()
            }
            ("argocd", "allow-tags") => format!("/spec/argocd/allow-tags/{alias}"),
            ("argocd", "ignore-tags glob") => format!("/spec/argocd/ignore-tags/{alias}"),
            ("argocd", "platform") => format!("/spec/argocd/platforms/{alias}"),
            _ => String::new(),
        };
        return Err(Problem::at(e.to_string(), &pointer));
    }
    let pointer = if kind == "fluxcd" {
        "/spec/fluxcd/secret"
    } else {
        "/spec/argocd"
    };
    let credentials = match secret.filter(|s| !s.is_empty()) {
        Some(secret) => Some(credential_source(
            &secret, pointer, namespace, doc, secrets,
        )?),
        None => None,
    };
    Ok((key, entry.image, repository, config, credentials))
}

fn semver_from(constraint: Option<&str>) -> Strategy {
    Strategy::SemVer {
        range: constraint.unwrap_or("*").to_owned(),
    }
}

/// `spec.argocd`: the per-alias maps `update-strategy`, `allow-tags`,
/// `ignore-tags`, `platforms`, `secret`, and the supply-chain gate's
/// settings (`min-age`, `verify-identity`…: `definitions::GATE_SETTINGS`).
fn argocd_config(
    entry: &ImageEntry,
    spec: &Value,
) -> Result<(PolicyConfig, GateConfig, Option<String>), String> {
    let argo = spec.get("argocd").unwrap_or(&Value::Null);
    let per_alias = |field: &str| -> Result<Option<&Value>, String> {
        match argo.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(map.get(&entry.alias).filter(|v| !v.is_null())),
            Some(_) => Err(format!(
                "spec.argocd.{field} is not a map of alias to value"
            )),
        }
    };
    let text = |field: &str| -> Result<Option<String>, String> {
        per_alias(field)?
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("spec.argocd.{field}.{} is not a string", entry.alias))
            })
            .transpose()
    };
    let list = |field: &str| -> Result<Vec<String>, String> {
        match per_alias(field)? {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(s
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        format!("spec.argocd.{field}.{} holds a non-string", entry.alias)
                    })
                })
                .collect(),
            Some(_) => Err(format!(
                "spec.argocd.{field}.{} is not a string or a list",
                entry.alias
            )),
        }
    };
    let strategy = match text("update-strategy")?.as_deref().unwrap_or("semver") {
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
            ));
        }
    };
    let mut config = PolicyConfig::new(strategy);
    config.allow_tags = text("allow-tags")?;
    config.ignore_tags = list("ignore-tags")?;
    config.platforms = list("platforms")?;
    let alias = &entry.alias;
    let gate = gate_config(&|name: &str| text(name), &|name: &str| {
        format!("spec.argocd.{name}.{alias}")
    })?;
    Ok((config, gate, text("secret")?))
}
