//! Policy definitions read from YAML documents: Flux `ImageRepository` +
//! `ImagePolicy` pairs, KubeSphere `ImageUpdater` entries (read by
//! [`super::kubesphere`]), and the dockerconfigjson `Secret`s they name.
//!
//! Pure: the caller parses the documents (with the file each came from) and
//! gets back one [`Definition`] per policy, or every problem found, each a
//! diagnostic at its file, line and column, naming the object.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine;
use image_update_registry::{Provider, Repository, Secret};
use serde_json::Value;

use super::kubesphere;
use crate::kubesphere::{GROUP as KUBESPHERE_GROUP, is_image_updater};

use crate::diagnostic::{Diagnostic, Location};
use crate::policies::image_policy::{Role, is_flux_kind, role};
use crate::policies::{ImageRef, PolicyDocument, PolicyKey};
use crate::reflector::selection::{
    AliasConfig, DEFAULT_ALIAS_REQUESTS, DigestReflection, FilterTagsConfig, GateConfig, Order,
    PolicyConfig, PolicySpec, Strategy,
};
use crate::yaml::{self, Object, labels, namespace_name};

/// The Secret type holding a Docker `config.json`.
pub(crate) const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";

/// Substrings that a file holding a definition (or a Secret one names)
/// must contain; files without any are not parsed.
pub(crate) const SCREEN: [&str; 3] = [
    "image.toolkit.fluxcd.io",
    KUBESPHERE_GROUP,
    "dockerconfigjson",
];

/// Whether `value` is an object policies are read from (a Flux image API
/// object or a KubeSphere ImageUpdater).
#[must_use]
pub(crate) fn may_hold(value: &Value) -> bool {
    let group = crate::yaml::api_group(value);
    group == crate::policies::image_policy::FLUX_IMAGE_GROUP || group == KUBESPHERE_GROUP
}

/// Whether `text` may hold a definition or a Secret (cheap substring test).
#[must_use]
pub(crate) fn may_define(text: &str) -> bool {
    SCREEN.iter().any(|s| text.contains(s))
}

/// Whether the text of one object of a ResourceList (valid YAML already) may be a definition or
/// a Secret of any type: a package's Secret may hold the key an Argo CD ImageUpdater's
/// `imagesVerification.cosignKey` names. A tree's files are not screened so: a chart's templated
/// Secret is no YAML, and would only be a warning.
#[must_use]
pub(crate) fn may_define_item(text: &str) -> bool {
    may_define(text)
        || text.lines().any(|line| {
            // `kind: Secret`, as an item's first line (`- kind: Secret`) too; a nested `kind`
            // only has one more object parsed.
            let line = line.trim();
            line.strip_prefix("- ")
                .unwrap_or(line)
                .trim_start()
                .strip_prefix("kind:")
                .map(|k| k.trim().trim_matches(['"', '\'']))
                == Some("Secret")
        })
}

/// A problem with a definition: a message and the field it is about (a
/// JSON pointer relative to the object; `""` is the object itself).
#[derive(Debug)]
pub(super) struct Problem {
    pub(super) message: String,
    pub(super) pointer: String,
}

impl From<String> for Problem {
    fn from(message: String) -> Self {
        Self {
            message,
            pointer: String::new(),
        }
    }
}

impl From<&str> for Problem {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

impl Problem {
    pub(super) fn at(message: impl Into<String>, pointer: &str) -> Self {
        Self {
            message: message.into(),
            pointer: pointer.to_owned(),
        }
    }
}

/// An object found in a document, with its document.
pub(super) type Found<'a> = (Object<'a>, &'a PolicyDocument);

/// Where a definition's registry credential comes from. Its `Debug` shows
/// no credential: the `config.json` text is a [`Secret`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryCredential {
    /// A `kubernetes.io/dockerconfigjson` Secret among the documents.
    Secret {
        /// `Secret NAMESPACE/NAME in FILE`.
        origin: String,
        /// The Docker `config.json` text.
        config_json: Secret,
    },
    /// A dockerconfigjson file.
    File(PathBuf),
    /// A program printing `USER:PASSWORD` (Argo CD Image Updater's
    /// `pull-secret: ext:PATH`), run only when the operator allows it.
    Program {
        /// The path as the definition gives it.
        given: String,
        /// The program, its symlinks resolved.
        path: PathBuf,
        /// `pull secret ext:PATH of ...`.
        origin: String,
    },
}

impl RegistryCredential {
    /// What the credential is, for messages and grouping (never the secret).
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Secret { origin, .. } => origin.clone(),
            Self::File(path) => format!("file {}", path.display()),
            Self::Program { given, .. } => format!("credential program {given}"),
        }
    }
}

/// What produced a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A Flux ImagePolicy; `object` is the whole original object.
    FluxPolicy { object: Value },
    /// An entry of a KubeSphere ImageUpdater.
    KubeSphere {
        /// `NAMESPACE/NAME` of the ImageUpdater.
        updater: String,
    },
    /// An image of an Argo CD Application (`crate::argocd`).
    ArgoCd {
        /// `NAMESPACE/NAME` of the Application.
        app: String,
    },
}

/// One policy to resolve against a registry.
#[derive(Debug, Clone)]
pub struct Definition {
    /// The marker name, `NAMESPACE:NAME` (KubeSphere: `NAMESPACE:ALIAS`).
    pub key: PolicyKey,
    /// `FILE (ImagePolicy NS/NAME)`, for messages and conflicts.
    pub source: String,
    /// The image as written (the latest ref's `name`, as Flux keeps it).
    pub image: String,
    pub repository: Repository,
    pub config: PolicyConfig,
    /// Where the definition is (the ImagePolicy, or the ImageUpdater).
    pub location: Location,
    /// The ImageRepository asks for plain HTTP.
    pub insecure: bool,
    /// The ImageRepository's `spec.provider`: who logs in to the registry
    /// (`generic`, the default, leaves it to the operator's settings).
    pub provider: Provider,
    pub credentials: Option<RegistryCredential>,
    /// `status.latestRef` already recorded (IfNotPresent, observedPreviousRef).
    pub previous: Option<ImageRef>,
    /// `status.observedPreviousRef` already recorded.
    pub observed_previous: Option<ImageRef>,
    /// Labels of the defining object (for `--selector`).
    pub labels: BTreeMap<String, String>,
    pub kind: Kind,
    /// The supply-chain gate settings of the definition (minimum age, alias).
    pub gate: GateConfig,
    /// Warnings about the definition, told once per run that fetches it (a
    /// constraint another setting overrides), each at its field.
    pub notes: Vec<Diagnostic>,
}

/// The prefix of a Flux ImagePolicy's annotations for the supply-chain
/// gate (Flux's schema has no field for them, and its API server would drop
/// unknown spec fields): `image-update.dev/min-age` and the other
/// [`GATE_SETTINGS`].
pub(crate) const GATE_ANNOTATION_PREFIX: &str = "image-update.dev/";

/// The gate settings a definition may carry, by name: as
/// `image-update.dev/NAME` annotations of an ImagePolicy, and as
/// `spec.argocd.NAME.ALIAS` maps of a KubeSphere ImageUpdater.
pub(crate) const GATE_SETTINGS: &[&str] = &[
    "min-age",
    "age-source",
    "alias",
    "alias-platform",
    "verify-key",
    "verify-identity",
    "verify-identity-regexp",
    "verify-issuer",
    "verify-issuer-regexp",
    "verify-require",
];

/// The gate settings of a definition: `get` gives a setting's value by its
/// name (one of [`GATE_SETTINGS`]), `what` how messages call it.
pub(super) fn gate_config(
    get: &dyn Fn(&str) -> Result<Option<String>, String>,
    what: &dyn Fn(&str) -> String,
) -> Result<GateConfig, String> {
    use image_update_verify::{KeySource, Pattern, SignerNames, SignerValues};
    let text = |name: &str| -> Result<Option<String>, String> {
        Ok(get(name)?.filter(|v| !v.trim().is_empty()))
    };
    let min_age = text("min-age")?
        .map(|v| {
            image_update_registry::settings::parse_duration(&v).ok_or_else(|| {
                format!(
                    "{} {v:?} is not a duration such as 72h or 7d",
                    what("min-age")
                )
            })
        })
        .transpose()?;
    let age_source = text("age-source")?
        .map(|v| v.parse().map_err(|e| format!("{} {e}", what("age-source"))))
        .transpose()?;
    let alias_platform = text("alias-platform")?;
    let alias = text("alias")?.map(|tag| AliasConfig {
        tag,
        platform: alias_platform.clone(),
        max_requests: DEFAULT_ALIAS_REQUESTS,
    });
    if alias.is_none() && alias_platform.is_some() {
        return Err(format!(
            "{} needs {}",
            what("alias-platform"),
            what("alias")
        ));
    }
    let require = text("verify-require")?
        .map(|v| {
            v.parse()
                .map_err(|e| format!("{} {e}", what("verify-require")))
        })
        .transpose()?;
    let identities = [
        text("verify-identity")?.map(Pattern::Exact),
        text("verify-identity-regexp")?.map(Pattern::Regexp),
    ];
    let issuer = match (text("verify-issuer")?, text("verify-issuer-regexp")?) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "give {} or {}, not both",
                what("verify-issuer"),
                what("verify-issuer-regexp")
            ));
        }
        (exact, regexp) => exact.map(Pattern::Exact).or(regexp.map(Pattern::Regexp)),
    };
    let names = [
        "verify-key",
        "verify-identity",
        "verify-identity-regexp",
        "verify-issuer",
        "verify-issuer-regexp",
        "trusted-root",
        "verify-require",
    ]
    .map(what);
    let mut verify = SignerValues {
        keys: text("verify-key")?
            .map(KeySource::Pem)
            .into_iter()
            .collect(),
        identities: identities.into_iter().flatten().collect(),
        issuer,
        trusted_root: None,
        require,
    }
    .into_config(&SignerNames {
        key: &names[0],
        identity: &names[1],
        identity_regexp: &names[2],
        issuer: &names[3],
        issuer_regexp: &names[4],
        trusted_root: &names[5],
        require: &names[6],
    })?;
    // Reports name the key after where it was given.
    for key in verify.iter_mut().flat_map(|v| &mut v.keys) {
        key.name = Some(names[0].clone());
    }
    Ok(GateConfig {
        min_age,
        age_source,
        alias,
        verify,
    })
}

fn flux_gate(value: &Value) -> Result<GateConfig, Problem> {
    let annotations = value.pointer("/metadata/annotations");
    let get = |name: &str| -> Result<Option<String>, String> {
        let key = format!("{GATE_ANNOTATION_PREFIX}{name}");
        match annotations.and_then(|a| a.get(&key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("annotation {key} is not a string")),
        }
    };
    // A misspelt security setting must not be ignored.
    if let Some(unknown) = annotations
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|a| a.keys())
        .filter_map(|k| k.strip_prefix(GATE_ANNOTATION_PREFIX))
        .find(|name| !GATE_SETTINGS.contains(name))
    {
        return Err(Problem::at(
            format!(
                "unknown annotation {GATE_ANNOTATION_PREFIX}{unknown}; the known ones are {GATE_ANNOTATION_PREFIX}{}",
                GATE_SETTINGS.join(", ")
            ),
            "/metadata/annotations",
        ));
    }
    let what = |name: &str| format!("{GATE_ANNOTATION_PREFIX}{name}");
    gate_config(&get, &what).map_err(|m| Problem::at(m, "/metadata/annotations"))
}

/// Read every definition in `documents` (List objects are opened).
///
/// An object defined twice (the same API group, kind, namespace and name,
/// read from two places) is one object when both definitions are the same
/// (`crate::same_object`: the first read is kept), and an error naming both
/// places and the first field that differs when they are not; for a Secret,
/// only when a definition uses it.
///
/// # Errors
/// Every problem found, each at its file, line and column.
pub fn collect(documents: &[PolicyDocument]) -> Result<Vec<Definition>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let (flat, conflicts) = distinct(documents, &mut errors);
    let mut repositories: BTreeMap<(String, String), &Found<'_>> = BTreeMap::new();
    let mut secrets = Secrets {
        found: BTreeMap::new(),
        conflicts,
    };
    for found in &flat {
        let value = found.0.value;
        let (namespace, name) = namespace_name(value);
        if is_flux_kind(value, "ImageRepository") {
            repositories.insert((namespace, name), found);
        } else if is_secret(value) {
            secrets.found.insert((namespace, name), found);
        }
    }
    let mut out = Vec::new();
    for found in &flat {
        let (object, doc) = found;
        let value = object.value;
        if role(value, true) == Role::Definition {
            match flux_policy(found, &repositories, &secrets) {
                Ok(d) => out.push(d),
                Err(e) => errors.push(e),
            }
        } else if is_image_updater(value) {
            kubesphere::definitions(object, doc, &secrets, &mut out, &mut errors);
        }
    }
    let mut seen: BTreeMap<&PolicyKey, &Definition> = BTreeMap::new();
    for d in &out {
        if let Some(first) = seen.insert(&d.key, d) {
            errors.push(
                Diagnostic::error(format!(
                    "policy {} is defined twice: by {} and by {}",
                    d.key, first.source, d.source
                ))
                .at(d.location.clone()),
            );
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The Secrets among the documents, by namespace and name: the first
/// definition of each, and the message for each one defined twice with
/// different content (an error where a definition uses it).
pub(super) struct Secrets<'f, 'a> {
    found: BTreeMap<(String, String), &'f Found<'a>>,
    conflicts: BTreeMap<(String, String), String>,
}

/// The objects of `documents`, each definition of an object once: a later
/// definition of an ImageRepository, an ImagePolicy with a spec, a
/// KubeSphere ImageUpdater or a Secret that is the same as the first is left
/// out; one that differs is left out too, with an error in `errors` (for a
/// Secret, its message in the map returned, by namespace and name).
fn distinct<'a>(
    documents: &'a [PolicyDocument],
    errors: &mut Vec<Diagnostic>,
) -> (Vec<Found<'a>>, BTreeMap<(String, String), String>) {
    use crate::same_object as same;
    let mut kept: Vec<Found<'a>> = Vec::new();
    let mut first: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
    let mut conflicts = BTreeMap::new();
    for doc in documents {
        for object in yaml::objects(&doc.document) {
            let value = object.value;
            let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
            let compared = is_flux_kind(value, "ImageRepository")
                || role(value, true) == Role::Definition
                || is_image_updater(value)
                || is_secret(value);
            if !compared {
                kept.push((object, doc));
                continue;
            }
            let (namespace, name) = namespace_name(value);
            let identity = (
                crate::yaml::api_group(value).to_owned(),
                kind.to_owned(),
                namespace,
                name,
            );
            let Some(&at) = first.get(&identity) else {
                first.insert(identity, kept.len());
                kept.push((object, doc));
                continue;
            };
            let (earlier, earlier_doc) = &kept[at];
            let Some(difference) = same::difference(earlier.value, value) else {
                continue;
            };
            let (_, _, namespace, name) = identity;
            let what = format!("{kind} {namespace}/{name}");
            let there = earlier_doc.location(earlier, &difference.pointer);
            let here = doc.location(&object, &difference.pointer);
            if is_secret(value) {
                conflicts
                    .entry((namespace, name))
                    .or_insert_with(|| same::message(&what, &there, Some(&here), &difference));
            } else {
                errors.push(same::conflict(&what, &there, here, &difference));
            }
        }
    }
    (kept, conflicts)
}

pub(crate) fn is_secret(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("Secret")
        && value.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// The string at `pointer` in `value`; `what` names it in the message,
/// and `base` is where `value` is in its object (for the position).
pub(super) fn str_field<'a>(
    value: &'a Value,
    base: &str,
    pointer: &str,
    what: &str,
) -> Result<Option<&'a str>, Problem> {
    match value.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(Problem::at(
            format!("{what} is not a string"),
            &format!("{base}{pointer}"),
        )),
    }
}

fn flux_policy(
    (object, doc): &Found<'_>,
    repositories: &BTreeMap<(String, String), &Found<'_>>,
    secrets: &Secrets<'_, '_>,
) -> Result<Definition, Diagnostic> {
    let value = object.value;
    let (namespace, name) = namespace_name(value);
    let what = format!("ImagePolicy {namespace}/{name}");
    let location = doc.location(object, "");
    let fail = |p: Problem| {
        Diagnostic::error(format!("{what}: {}", p.message)).at(doc.location(object, &p.pointer))
    };
    if name.is_empty() {
        return Err(Diagnostic::error("an ImagePolicy has no metadata.name").at(location));
    }
    let spec = value.get("spec").unwrap_or(&Value::Null);
    let repo_name = str_field(
        spec,
        "/spec",
        "/imageRepositoryRef/name",
        "spec.imageRepositoryRef.name",
    )
    .map_err(fail)?
    .filter(|s| !s.is_empty())
    .ok_or_else(|| {
        fail(Problem::at(
            "spec.imageRepositoryRef.name is missing",
            "/spec",
        ))
    })?;
    let repo_namespace = str_field(
        spec,
        "/spec",
        "/imageRepositoryRef/namespace",
        "spec.imageRepositoryRef.namespace",
    )
    .map_err(fail)?
    .filter(|s| !s.is_empty())
    .unwrap_or(&namespace);
    let Some(&&(ref repo_object, repo_doc)) =
        repositories.get(&(repo_namespace.to_owned(), repo_name.to_owned()))
    else {
        return Err(fail(Problem::at(
            format!("ImageRepository {repo_namespace}/{repo_name} is not among the definitions"),
            "/spec/imageRepositoryRef",
        )));
    };
    let repository = repo_object.value;
    let repo_what = format!("ImageRepository {repo_namespace}/{repo_name}");
    let repo_fail = |p: Problem| {
        Diagnostic::error(format!("{repo_what}: {}", p.message))
            .at(repo_doc.location(repo_object, &p.pointer))
    };
    let image = str_field(repository, "", "/spec/image", "spec.image")
        .map_err(repo_fail)?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| repo_fail(Problem::at("spec.image is missing", "/spec")))?
        .to_owned();
    let parsed = Repository::parse(&image).map_err(|e| {
        Diagnostic::error(format!("{repo_what}: spec.image"))
            .at(repo_doc.location(repo_object, "/spec/image"))
            .caused_by(e)
    })?;
    let strategy =
        flux_strategy(spec.get("policy").unwrap_or(&Value::Null), "/spec").map_err(fail)?;
    let mut config = PolicyConfig::new(strategy);
    if let Some(filter) = spec.get("filterTags").filter(|v| !v.is_null()) {
        config.filter = Some(FilterTagsConfig {
            pattern: str_field(
                filter,
                "/spec/filterTags",
                "/pattern",
                "spec.filterTags.pattern",
            )
            .map_err(fail)?
            .unwrap_or("")
            .to_owned(),
            extract: str_field(
                filter,
                "/spec/filterTags",
                "/extract",
                "spec.filterTags.extract",
            )
            .map_err(fail)?
            .unwrap_or("")
            .to_owned(),
        });
    }
    if let Some(reflection) = str_field(
        spec,
        "/spec",
        "/digestReflectionPolicy",
        "spec.digestReflectionPolicy",
    )
    .map_err(fail)?
    {
        config.digest_reflection = reflection
            .parse::<DigestReflection>()
            .map_err(|e| fail(Problem::at(e.to_string(), "/spec/digestReflectionPolicy")))?;
    }
    match repository.pointer("/spec/exclusionList") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let list: Vec<String> = list
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        repo_fail(Problem::at(
                            "spec.exclusionList holds a non-string",
                            "/spec/exclusionList",
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
            // An empty list means the default, as in Flux.
            if !list.is_empty() {
                config.exclude = list;
            }
        }
        Some(_) => {
            return Err(repo_fail(Problem::at(
                "spec.exclusionList is not a list",
                "/spec/exclusionList",
            )));
        }
    }
    // The selection's own check, now rather than after the registry is asked, so that a mistake
    // is reported at the field that holds it.
    check_selection(&config, &fail, &repo_fail)?;
    let insecure = match repository.pointer("/spec/insecure") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(repo_fail(Problem::at(
                "spec.insecure is not true or false",
                "/spec/insecure",
            )));
        }
    };
    let provider =
        match str_field(repository, "", "/spec/provider", "spec.provider").map_err(repo_fail)? {
            None => Provider::Generic,
            Some(text) => text.parse::<Provider>().map_err(|e| {
                repo_fail(Problem::at(format!("spec.provider: {e}"), "/spec/provider"))
            })?,
        };
    let credentials = match str_field(
        repository,
        "",
        "/spec/secretRef/name",
        "spec.secretRef.name",
    )
    .map_err(repo_fail)?
    {
        Some(secret) if !secret.is_empty() => Some(
            credential_source(
                secret,
                "/spec/secretRef/name",
                repo_namespace,
                repo_doc,
                secrets,
            )
            .map_err(|e| repo_fail(Problem::at(e.message, "/spec/secretRef/name")))?,
        ),
        _ => None,
    };
    let status_ref = |field: &str| -> Result<Option<ImageRef>, Diagnostic> {
        match value.pointer(&format!("/status/{field}")) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let get = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                let (name, tag) = (get("name"), get("tag"));
                if name.is_empty() || tag.is_empty() {
                    return Err(fail(Problem::at(
                        format!("status.{field} needs a name and a tag"),
                        &format!("/status/{field}"),
                    )));
                }
                Ok(Some(ImageRef::new(name, tag).with_digest(get("digest"))))
            }
        }
    };
    let gate = flux_gate(value).map_err(fail)?;
    Ok(Definition {
        gate,
        key: PolicyKey { namespace, name },
        source: format!("{} ({what})", doc.origin),
        location,
        image,
        repository: parsed,
        config,
        insecure,
        provider,
        credentials,
        previous: status_ref("latestRef")?,
        observed_previous: status_ref("observedPreviousRef")?,
        labels: labels(value),
        kind: Kind::FluxPolicy {
            object: value.clone(),
        },
        notes: Vec::new(),
    })
}

/// The selection's own check of `config`, its error placed at the field that holds the mistake:
/// the policy's (`fail`) or its repository's (`repo_fail`).
fn check_selection(
    config: &PolicyConfig,
    fail: &dyn Fn(Problem) -> Diagnostic,
    repo_fail: &dyn Fn(Problem) -> Diagnostic,
) -> Result<(), Diagnostic> {
    let Err(e) = PolicySpec::new(config.clone()) else {
        return Ok(());
    };
    Err(match e.field {
        "semver range" => fail(Problem::at(
            format!("spec.policy.semver.range: {e}"),
            "/spec/policy/semver/range",
        )),
        "filterTags.pattern" => fail(Problem::at(
            format!("spec.filterTags.pattern: {e}"),
            "/spec/filterTags/pattern",
        )),
        "exclude pattern" => {
            let pointer = config
                .exclude
                .iter()
                .position(|p| *p == e.value)
                .map_or_else(
                    || "/spec/exclusionList".to_owned(),
                    |i| format!("/spec/exclusionList/{i}"),
                );
            repo_fail(Problem::at(format!("spec.exclusionList: {e}"), &pointer))
        }
        _ => fail(Problem::at(format!("spec: {e}"), "/spec")),
    })
}

/// `policy` (at `{base}/policy` in its object): semver > alphabetical > numerical,
/// as Flux. Messages name the fields as `spec.policy...`.
pub(super) fn flux_strategy(policy: &Value, base: &str) -> Result<Strategy, Problem> {
    let policy_base = format!("{base}/policy");
    let present = |k: &str| policy.get(k).is_some_and(|v| !v.is_null());
    let order = |k: &str| -> Result<Order, Problem> {
        let pointer = format!("/{k}/order");
        str_field(
            policy,
            &policy_base,
            &pointer,
            &format!("spec.policy.{k}.order"),
        )?
        .unwrap_or("")
        .parse::<Order>()
        .map_err(|e| {
            Problem::at(
                format!("spec.policy.{k}: {e}"),
                &format!("{policy_base}{pointer}"),
            )
        })
    };
    if present("semver") {
        let range = str_field(
            policy,
            &policy_base,
            "/semver/range",
            "spec.policy.semver.range",
        )?
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            Problem::at(
                "spec.policy.semver.range is missing",
                &format!("{policy_base}/semver"),
            )
        })?;
        Ok(Strategy::SemVer {
            range: range.to_owned(),
        })
    } else if present("alphabetical") {
        Ok(Strategy::Alphabetical {
            order: order("alphabetical")?,
        })
    } else if present("numerical") {
        Ok(Strategy::Numerical {
            order: order("numerical")?,
        })
    } else {
        Err(Problem::at(
            "spec.policy has none of semver, alphabetical, numerical",
            &policy_base,
        ))
    }
}

/// A Secret manifest named `name` in `namespace` among the documents, else
/// a dockerconfigjson file at `name` (relative to the defining file).
pub(super) fn credential_source(
    name: &str,
    pointer: &str,
    namespace: &str,
    doc: &PolicyDocument,
    secrets: &Secrets<'_, '_>,
) -> Result<RegistryCredential, Problem> {
    let key = (namespace.to_owned(), name.to_owned());
    if let Some(conflict) = secrets.conflicts.get(&key) {
        return Err(Problem::at(conflict.clone(), pointer));
    }
    if let Some(&&(ref secret, secret_doc)) = secrets.found.get(&key) {
        let origin = format!("Secret {namespace}/{name} in {}", secret_doc.origin);
        return secret_config_json(secret.value, &origin)
            .map(|config_json| RegistryCredential::Secret {
                origin,
                config_json: Secret::new(config_json),
            })
            .map_err(Problem::from);
    }
    // The name comes from the repository: it names a Secret (a Kubernetes name, never a path),
    // or a file of that name beside the defining file, read through that directory's door (no
    // symlink out of it, regular files only).
    if !crate::object::dns_subdomain(name) {
        return Err(Problem::at(
            format!(
                "secret {name:?} is not a valid Kubernetes Secret name, so it is not looked for"
            ),
            pointer,
        ));
    }
    let Some(dir) = &doc.dir else {
        return Err(
            format!("secret {name:?}: no Secret {namespace}/{name} among the items").into(),
        );
    };
    let missing = || {
        format!(
            "secret {name:?}: no Secret {namespace}/{name} among the definitions, and no dockerconfigjson file {}",
            dir.join(name).display()
        )
    };
    let door = crate::sink::door::Door::new(dir).map_err(|_| missing())?;
    match door.resolve(name) {
        Ok(r) if r.exists => Ok(RegistryCredential::File(r.path)),
        Ok(_) => Err(missing().into()),
        Err(refusal) => Err(format!("secret {name:?}: {refusal}").into()),
    }
}

/// The `.dockerconfigjson` payload of a Secret: `data` (base64) or
/// `stringData`.
pub(crate) fn secret_config_json(secret: &Value, origin: &str) -> Result<String, String> {
    let kind = secret.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != DOCKER_CONFIG_JSON_TYPE {
        return Err(format!(
            "{origin} has type {kind:?}, expected {DOCKER_CONFIG_JSON_TYPE}"
        ));
    }
    if let Some(text) = secret
        .pointer("/stringData/.dockerconfigjson")
        .and_then(Value::as_str)
    {
        return Ok(text.to_owned());
    }
    let encoded = secret
        .pointer("/data/.dockerconfigjson")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{origin} has no data[.dockerconfigjson]"))?;
    let compact: String = encoded.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| format!("{origin}: data[.dockerconfigjson] is not base64 UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubesphere::ImageEntry;
    use crate::yaml::parse_values;

    fn docs(yaml: &str) -> Vec<PolicyDocument> {
        crate::yaml::parse_documents(yaml)
            .unwrap()
            .into_iter()
            .map(|document| PolicyDocument {
                document,
                origin: "defs.yaml".to_owned(),
                positions: true,
                dir: None,
                supplies: true,
            })
            .collect()
    }

    fn errors(yaml: &str) -> Vec<String> {
        collect(&docs(yaml))
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const FLUX: &str = r"
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: flux-system}
spec:
  image: ghcr.io/acme/app
  exclusionList: ['^.*-debug$']
  insecure: true
  secretRef: {name: regcred}
---
apiVersion: v1
kind: Secret
metadata: {name: regcred, namespace: flux-system}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{}'
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: flux-system, labels: {env: prod}}
spec:
  imageRepositoryRef: {name: app}
  policy:
    alphabetical: {order: desc}
    numerical: {}
  filterTags: {pattern: '^main-(\d+)$', extract: '$1'}
  digestReflectionPolicy: IfNotPresent
status:
  latestRef: {name: ghcr.io/acme/app, tag: main-1, digest: 'sha256:aa'}
";

    #[test]
    fn flux_pair() {
        let defs = collect(&docs(FLUX)).unwrap();
        assert_eq!(defs.len(), 1);
        let d = &defs[0];
        assert_eq!(d.key.to_string(), "flux-system:app");
        assert_eq!(d.image, "ghcr.io/acme/app");
        assert_eq!(
            d.config.strategy,
            Strategy::Alphabetical { order: Order::Desc },
            "alphabetical beats numerical"
        );
        assert_eq!(d.config.exclude, ["^.*-debug$"]);
        assert_eq!(d.config.digest_reflection, DigestReflection::IfNotPresent);
        assert_eq!(d.config.filter.as_ref().unwrap().extract, "$1");
        assert!(d.insecure);
        assert!(
            matches!(&d.credentials, Some(RegistryCredential::Secret { config_json, .. }) if config_json.expose() == "{}")
        );
        assert_eq!(d.previous.as_ref().unwrap().tag, "main-1");
        assert_eq!(d.labels.get("env").map(String::as_str), Some("prod"));
        assert_eq!(d.source, "defs.yaml (ImagePolicy flux-system/app)");
    }

    /// A range, pattern or exclusion the selection cannot compile is an error of the definitions,
    /// before any registry is asked, at the value that holds it.
    #[test]
    fn invalid_patterns_are_reported_at_their_value() {
        let text = "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: flux-system}
spec:
  image: ghcr.io/acme/app
  exclusionList: ['^ok$', '(']
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: web, namespace: flux-system}
spec: {image: ghcr.io/acme/web}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: webapp
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: web
  policy:
    semver:
      range: '>=1.0 <<2'
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: flux-system}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: '*'}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: filtered, namespace: flux-system}
spec:
  imageRepositoryRef: {name: web}
  filterTags:
    pattern: '^main-(['
  policy: {alphabetical: {}}
";
        let errors = errors(text);
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors.iter().any(|e| e.starts_with(
                "defs.yaml:23:14: error: ImagePolicy flux-system/webapp: spec.policy.semver.range: invalid semver range '>=1.0 <<2'"
            )),
            "{errors:#?}"
        );
        assert!(
            errors.iter().any(|e| e.starts_with(
                "defs.yaml:6:27: error: ImageRepository flux-system/app: spec.exclusionList: invalid exclude pattern '('"
            )),
            "{errors:#?}"
        );
        assert!(
            errors.iter().any(|e| e.starts_with(
                "defs.yaml:38:14: error: ImagePolicy flux-system/filtered: spec.filterTags.pattern: invalid filterTags.pattern"
            )),
            "{errors:#?}"
        );
    }

    #[test]
    fn flux_errors_name_file_and_object() {
        let text = r"
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: lost}
spec: {imageRepositoryRef: {name: nowhere}, policy: {semver: {range: '1.x'}}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: r}
spec: {image: 'ghcr.io/a/b:1.0'}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: tagged}
spec: {imageRepositoryRef: {name: r}, policy: {semver: {range: '1.x'}}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ok}
spec: {image: 'ghcr.io/a/b', secretRef: {name: missing}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: nopolicy}
spec: {imageRepositoryRef: {name: ok}, policy: {}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: status-only}
status: {latestRef: {name: a, tag: '1'}}
";
        let errors = errors(text);
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert_eq!(
            errors[0],
            "defs.yaml:5:28: error: ImagePolicy default/lost: ImageRepository default/nowhere is not among the definitions"
        );
        assert!(
            errors[1].starts_with("defs.yaml:10:15: error: ImageRepository default/r: spec.image: image 'ghcr.io/a/b:1.0' should not include a tag"),
            "{}",
            errors[1]
        );
        assert!(
            errors[2].contains("ImagePolicy default/nopolicy: spec.policy has none of"),
            "{}",
            errors[2]
        );
    }

    #[test]
    fn secret_payloads() {
        let base = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n";
        let data = base64::engine::general_purpose::STANDARD.encode(r#"{"auths":{}}"#);
        let v = parse_values(&format!(
            "{base}type: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: {data}}}\n"
        ))
        .unwrap();
        assert_eq!(secret_config_json(&v[0], "S").unwrap(), r#"{"auths":{}}"#);
        let v = parse_values(&format!("{base}type: Opaque\n")).unwrap();
        assert!(
            secret_config_json(&v[0], "S")
                .unwrap_err()
                .contains("expected kubernetes.io/dockerconfigjson")
        );
        let v = parse_values(&format!(
            "{base}type: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: '!!'}}\n"
        ))
        .unwrap();
        assert!(
            secret_config_json(&v[0], "S")
                .unwrap_err()
                .contains("not base64")
        );
    }

    #[test]
    fn package_secrets_are_screened_in() {
        for item in [
            "- apiVersion: v1\n  kind: Secret\n  metadata: {name: k}\n",
            "- kind: \"Secret\"\n  apiVersion: v1\n",
            "apiVersion: v1\nkind: 'Secret'\n",
        ] {
            assert!(may_define_item(item), "{item}");
            assert!(!may_define(item), "{item}");
        }
        for item in [
            "- apiVersion: v1\n  kind: ConfigMap\n",
            "kind: SecretStore\n",
            "spec: {imagePullSecrets: [{name: Secret}]}\n",
        ] {
            assert!(!may_define_item(item), "{item}");
        }
    }

    #[test]
    fn image_entries() {
        use crate::kubesphere::Engine::{ArgoCd, FluxCd};
        for engine in [ArgoCd, FluxCd] {
            let e = ImageEntry::parse("nginx:^0.1", engine).unwrap();
            assert_eq!((e.alias.as_str(), e.image.as_str()), ("nginx", "nginx"));
            assert_eq!(e.constraint.as_deref(), Some("^0.1"));
            assert!(!e.aliased);
            let e = ImageEntry::parse("myalias=some/image", engine).unwrap();
            assert_eq!(
                (e.alias.as_str(), e.image.as_str()),
                ("myalias", "some/image")
            );
            assert_eq!(e.constraint, None);
            assert_eq!(e.setting_keys().collect::<Vec<_>>(), ["myalias"]);
            let e = ImageEntry::parse("web=localhost:5000/team/web:>=1.0 <2", engine).unwrap();
            assert_eq!(e.image, "localhost:5000/team/web");
            assert_eq!(e.constraint.as_deref(), Some(">=1.0 <2"));
            assert!(ImageEntry::parse("a=", engine).is_err());
            assert!(
                ImageEntry::parse("a:b=ghcr.io/acme/web", engine)
                    .unwrap_err()
                    .contains("the alias \"a:b\" cannot name a policy")
            );
        }
        // Without an alias, an argocd updater's image is named as Argo CD Image Updater names
        // it, by its repository path without the registry, whatever the registry's port.
        let e = ImageEntry::parse("localhost:5000/team/web:~1.2", ArgoCd).unwrap();
        assert_eq!(
            (e.alias.as_str(), e.image.as_str()),
            ("team/web", "localhost:5000/team/web")
        );
        assert_eq!(
            e.setting_keys().collect::<Vec<_>>(),
            ["team/web", "localhost:5000/team/web"]
        );
        let e = ImageEntry::parse("docker.io/library/nginx", ArgoCd).unwrap();
        assert_eq!(e.alias, "nginx");
        // A fluxcd updater's images are marker names: the image as written, which then cannot
        // hold a registry's port.
        let e = ImageEntry::parse("ghcr.io/acme/web", FluxCd).unwrap();
        assert_eq!(e.alias, "ghcr.io/acme/web");
        assert_eq!(e.setting_keys().collect::<Vec<_>>(), ["ghcr.io/acme/web"]);
        assert!(
            ImageEntry::parse("localhost:5000/team/web", FluxCd)
                .unwrap_err()
                .contains("write ALIAS=IMAGE")
        );
    }

    #[test]
    fn kubesphere_updater() {
        let text = r"
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: demo, namespace: demo}
spec:
  images:
  - nginx:^0.1
  - myalias=some/image
  - pinned=ghcr.io/a/b:stable
  - abc=ghcr.io/a/c
  kind: argocd
  argocd:
    update-strategy: {nginx: semver, myalias: latest, pinned: digest, abc: name}
    allow-tags: {myalias: 'regexp:^main-'}
    ignore-tags: {myalias: '*-dev, *-old'}
    platforms: {myalias: [linux/amd64, linux/arm64]}
---
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: flux}
spec:
  kind: fluxcd
  images: [podinfo=ghcr.io/stefanprodan/podinfo]
  fluxcd:
    policy: {semver: {range: 5.0.x}}
";
        let defs = collect(&docs(text)).unwrap();
        let by = |k: &str| defs.iter().find(|d| d.key.to_string() == k).unwrap();
        assert_eq!(
            by("demo:nginx").config.strategy,
            Strategy::SemVer {
                range: "^0.1".into()
            }
        );
        let m = &by("demo:myalias").config;
        assert_eq!(m.strategy, Strategy::NewestBuild);
        assert_eq!(m.allow_tags.as_deref(), Some("regexp:^main-"));
        assert_eq!(m.ignore_tags, ["*-dev", "*-old"]);
        assert_eq!(m.platforms, ["linux/amd64", "linux/arm64"]);
        assert_eq!(
            by("demo:pinned").config.strategy,
            Strategy::Digest {
                tag: "stable".into()
            }
        );
        assert_eq!(
            by("demo:abc").config.strategy,
            Strategy::Alphabetical { order: Order::Asc }
        );
        assert_eq!(
            by("default:podinfo").config.strategy,
            Strategy::SemVer {
                range: "5.0.x".into()
            }
        );
        let bad = r"
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: bad}
spec:
  images: [x=ghcr.io/a/x, 'y=ghcr.io/a/y']
  argocd:
    update-strategy: {x: fastest, y: digest}
    secret: {x: nope}
";
        let errors = errors(bad);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(errors[0].starts_with("defs.yaml:6:12: error: ImageUpdater default/bad: image \"x=ghcr.io/a/x\": unknown update-strategy \"fastest\""), "{}", errors[0]);
        assert!(
            errors[1].contains("needs the tag to follow"),
            "{}",
            errors[1]
        );
    }

    /// A constraint another setting overrides is not applied silently: the definition carries a
    /// warning at the image entry naming both and the one that governs.
    #[test]
    fn overridden_constraints_are_warned_at_the_entry() {
        let text = r"
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: flux, namespace: demo}
spec:
  kind: fluxcd
  images:
  - nginx:^0.1
  - same=ghcr.io/a/same:5.0.x
  - free=ghcr.io/a/free
  fluxcd:
    policy: {semver: {range: 5.0.x}}
---
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: argo, namespace: demo}
spec:
  kind: argocd
  images:
  - nb=ghcr.io/a/nb:~1.2
  - name=ghcr.io/a/name:^2
  - ver=ghcr.io/a/ver:~1.2
  - pin=ghcr.io/a/pin:stable
  - ghcr.io/a/plain:^3
  argocd:
    update-strategy: {nb: latest, name: alphabetical, ver: semver, pin: digest, ghcr.io/a/plain: newest-build}
";
        let defs = collect(&docs(text)).unwrap();
        let notes = |k: &str| -> Vec<String> {
            defs.iter()
                .find(|d| d.key.to_string() == k)
                .unwrap()
                .notes
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(
            notes("demo:nginx"),
            [
                "defs.yaml:8:5: warning: ImageUpdater demo/flux: image \"nginx:^0.1\": its constraint ^0.1 is not applied: spec.fluxcd.policy (semver range 5.0.x) governs every image of a fluxcd updater, as the policy of the Flux ImagePolicy the image stands for, so it may choose a version the constraint excludes; remove one of the two, or give the image an updater of its own"
            ]
        );
        assert_eq!(
            by_key(&defs, "demo:nginx").config.strategy,
            Strategy::SemVer {
                range: "5.0.x".into()
            }
        );
        for quiet in ["demo:same", "demo:free", "demo:ver", "demo:pin"] {
            assert_eq!(notes(quiet), Vec::<String>::new(), "{quiet}");
        }
        assert_eq!(
            notes("demo:nb"),
            [
                "defs.yaml:20:5: warning: ImageUpdater demo/argo: image \"nb=ghcr.io/a/nb:~1.2\": its constraint ~1.2 is not applied: spec.argocd.update-strategy.nb (latest) governs, and a newest-build strategy reads no constraint (as in Argo CD Image Updater), so it may choose a version the constraint excludes; remove the constraint, or filter the tags with allow-tags"
            ]
        );
        assert!(
            notes("demo:name")[0]
                .contains("spec.argocd.update-strategy.name (alphabetical) governs")
        );
        // Found under the image as written, keyed by its repository path.
        assert!(notes("demo:a/plain")[0].contains(
            "its constraint ^3 is not applied: spec.argocd.update-strategy.ghcr.io/a/plain (newest-build) governs"
        ));
    }

    fn by_key<'d>(defs: &'d [Definition], key: &str) -> &'d Definition {
        defs.iter().find(|d| d.key.to_string() == key).unwrap()
    }

    /// An argocd updater's image without an alias is keyed by its repository path; its
    /// settings may be written under that name or the image as written, not both.
    #[test]
    fn an_image_without_an_alias_is_keyed_as_argo_names_it() {
        let text = r"
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: demo, namespace: demo}
spec:
  images: ['localhost:5000/team/web:~1.2', 'ghcr.io/acme/api']
  argocd:
    ignore-tags: {team/web: '*-rc', ghcr.io/acme/api: '*-dev'}
";
        let defs = collect(&docs(text)).unwrap();
        let web = by_key(&defs, "demo:team/web");
        assert_eq!(web.image, "localhost:5000/team/web");
        assert_eq!(web.config.ignore_tags, ["*-rc"]);
        assert_eq!(by_key(&defs, "demo:acme/api").config.ignore_tags, ["*-dev"]);
        let twice = text.replace(
            "ghcr.io/acme/api: '*-dev'}",
            "ghcr.io/acme/api: '*-dev', acme/api: x}",
        );
        let found = errors(&twice);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].contains("spec.argocd.ignore-tags gives the image's setting twice, under \"acme/api\" and \"ghcr.io/acme/api\""),
            "{}",
            found[0]
        );
        // A fluxcd updater names markers: an image with a port needs an alias.
        let flux = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: f}\nspec:\n  kind: fluxcd\n  images: ['localhost:5000/team/web']\n";
        let flux_errors = errors(flux);
        assert!(
            flux_errors[0].starts_with("defs.yaml:6:12: error: ImageUpdater default/f: image \"localhost:5000/team/web\": \"localhost:5000/team/web\": a fluxcd updater's images are the policies of $imagepolicy markers"),
            "{}",
            flux_errors[0]
        );
    }

    fn docs_in(files: &[(&str, &str)]) -> Vec<PolicyDocument> {
        files
            .iter()
            .flat_map(|(origin, yaml)| {
                docs(yaml).into_iter().map(|mut d| {
                    (*origin).clone_into(&mut d.origin);
                    d
                })
            })
            .collect()
    }

    #[test]
    fn the_same_object_from_two_places_is_one() {
        // A Job's ConfigMap and its clone: the same objects, written differently.
        let clone = FLUX
            .replace(
                "metadata: {name: app, namespace: flux-system}",
                "metadata:\n  namespace: flux-system\n  name: app\n  resourceVersion: '7'",
            )
            .replace(
                "exclusionList: ['^.*-debug$']",
                "exclusionList: [\"^.*-debug$\"]",
            );
        let defs = collect(&docs_in(&[
            ("/config/policies.yaml", FLUX),
            ("clone/flux.yaml", &clone),
        ]))
        .unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(
            defs[0].source, "/config/policies.yaml (ImagePolicy flux-system/app)",
            "the first read is kept"
        );
        // The same file read twice.
        assert_eq!(
            collect(&docs_in(&[("a.yaml", FLUX), ("a.yaml", FLUX)]))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn two_definitions_that_differ_are_an_error_naming_both() {
        let other = FLUX.replace("ghcr.io/acme/app", "ghcr.io/acme/other");
        let errors: Vec<String> = collect(&docs_in(&[
            ("/config/policies.yaml", FLUX),
            ("clone/flux.yaml", &other),
        ]))
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            errors.len(),
            2,
            "the ImageRepository and its ImagePolicy: {errors:#?}"
        );
        assert!(
            errors[0].starts_with(
                "clone/flux.yaml:6:10: error: ImageRepository flux-system/app is defined twice, and the definitions differ: /spec/image is \"ghcr.io/acme/app\" at /config/policies.yaml:6:10 but \"ghcr.io/acme/other\" here"
            ),
            "{}",
            errors[0]
        );
        // An ImagePolicy's status is compared: it is the previous result.
        let later = FLUX.replace("tag: main-1", "tag: main-2");
        let errors = collect(&docs_in(&[("a.yaml", FLUX), ("b.yaml", &later)])).unwrap_err();
        assert!(
            errors[0].to_string().contains("ImagePolicy flux-system/app is defined twice, and the definitions differ: /status/latestRef/tag is \"main-1\" at a.yaml:29:44 but \"main-2\" here"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn a_secret_that_differs_is_an_error_where_it_is_used() {
        let secret = |payload: &str| {
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata: {{name: regcred, namespace: flux-system}}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{payload}'\n"
            )
        };
        let used =
            collect(&docs_in(&[("a.yaml", FLUX), ("b.yaml", &secret("s3cr3t"))])).unwrap_err();
        let text = used[0].to_string();
        assert!(
            text.starts_with("a.yaml:9:21: error: ImageRepository flux-system/app: Secret flux-system/regcred is defined twice, and the definitions differ: /stringData/.dockerconfigjson is (hidden) at a.yaml:16:22 but (hidden) at b.yaml:6:22"),
            "{text}"
        );
        assert!(!text.contains("s3cr3t"), "{text}");
        // The same Secret twice is one; a Secret no definition uses is not looked at.
        assert!(collect(&docs_in(&[("a.yaml", FLUX), ("b.yaml", &secret("{}"))])).is_ok());
        let unused = FLUX.replace("  secretRef: {name: regcred}\n", "");
        assert!(
            collect(&docs_in(&[
                ("a.yaml", &unused),
                ("b.yaml", &secret("s3cr3t"))
            ]))
            .is_ok()
        );
    }

    #[test]
    fn two_objects_with_one_policy_key_are_an_error() {
        let updater = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: flux-system}\nspec:\n  kind: fluxcd\n  images: [app=ghcr.io/acme/app]\n  fluxcd: {policy: {semver: {range: 1.x}}}\n";
        let errors = errors(&format!("{FLUX}---\n{updater}"));
        assert!(
            errors
                .iter()
                .any(|e| e.contains("policy flux-system:app is defined twice: by defs.yaml (ImagePolicy flux-system/app) and by defs.yaml")),
            "{errors:?}"
        );
    }

    #[test]
    fn gate_settings_from_annotations_and_argocd_maps() {
        let annotated = FLUX.replace(
            "metadata: {name: app, namespace: flux-system, labels: {env: prod}}",
            "metadata: {name: app, namespace: flux-system, labels: {env: prod}, annotations: {image-update.dev/min-age: 7d, image-update.dev/age-source: builder, image-update.dev/alias: latest, image-update.dev/alias-platform: linux/arm64}}",
        );
        let defs = collect(&docs(&annotated)).unwrap();
        let g = &defs[0].gate;
        assert_eq!(g.min_age, Some(std::time::Duration::from_secs(7 * 86_400)));
        assert_eq!(
            g.age_source,
            Some(image_update_registry::settings::AgeSource::Builder)
        );
        let alias = g.alias.as_ref().unwrap();
        assert_eq!(
            (alias.tag.as_str(), alias.platform.as_deref()),
            ("latest", Some("linux/arm64"))
        );
        assert!(g.verify.is_none());
        assert!(collect(&docs(FLUX)).unwrap()[0].gate.is_empty());

        let signers = FLUX.replace(
            "labels: {env: prod}}",
            "labels: {env: prod}, annotations: {image-update.dev/verify-identity-regexp: 'https://github.com/acme/.*', image-update.dev/verify-issuer: 'https://token.actions.githubusercontent.com', image-update.dev/verify-require: all}}",
        );
        let v = collect(&docs(&signers)).unwrap()[0]
            .gate
            .verify
            .clone()
            .unwrap();
        assert_eq!(v.require, image_update_registry::settings::Require::All);
        assert_eq!(
            v.identities[0].subject_regexp.as_deref(),
            Some("https://github.com/acme/.*")
        );
        assert_eq!(
            v.identities[0].issuer.as_deref(),
            Some("https://token.actions.githubusercontent.com")
        );
        for (annotations, message) in [
            (
                "image-update.dev/verify-identity: x",
                "image-update.dev/verify-identity needs image-update.dev/verify-issuer or image-update.dev/verify-issuer-regexp",
            ),
            (
                "image-update.dev/verify-key: not-a-key",
                "image-update.dev/verify-key key 1: ",
            ),
            (
                "image-update.dev/verify-issuer: a, image-update.dev/verify-issuer-regexp: b, image-update.dev/verify-identity: x",
                "give image-update.dev/verify-issuer or image-update.dev/verify-issuer-regexp, not both",
            ),
            (
                "image-update.dev/minage: 1d",
                "unknown annotation image-update.dev/minage",
            ),
            (
                "image-update.dev/min-age: a week",
                "image-update.dev/min-age \"a week\" is not a duration",
            ),
        ] {
            let bad = FLUX.replace(
                "labels: {env: prod}}",
                &format!("labels: {{env: prod}}, annotations: {{{annotations}}}}}"),
            );
            assert!(
                errors_of(&bad).contains(message),
                "{annotations}: {}",
                errors_of(&bad)
            );
        }

        let bad = FLUX.replace(
            "labels: {env: prod}}",
            "labels: {env: prod}, annotations: {image-update.dev/min-age: soon}}",
        );
        let errors = errors(&bad);
        assert!(
            errors[0].contains("image-update.dev/min-age \"soon\" is not a duration"),
            "{errors:?}"
        );
        let orphan = FLUX.replace(
            "labels: {env: prod}}",
            "labels: {env: prod}, annotations: {image-update.dev/alias-platform: linux/amd64}}",
        );
        assert!(errors_of(&orphan).contains("needs image-update.dev/alias"));

        let updater = r"
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: u, namespace: demo}
spec:
  images: [web=ghcr.io/acme/web, api=ghcr.io/acme/api]
  argocd:
    min-age: {web: 72h}
    age-source: {api: registry}
    alias: {api: stable}
    verify-identity: {web: 'https://github.com/acme/web/.github/workflows/release.yml@refs/heads/main'}
    verify-issuer: {web: 'https://token.actions.githubusercontent.com'}
";
        let defs = collect(&docs(updater)).unwrap();
        let web = defs.iter().find(|d| d.key.name == "web").unwrap();
        let api = defs.iter().find(|d| d.key.name == "api").unwrap();
        assert_eq!(
            web.gate.min_age,
            Some(std::time::Duration::from_secs(72 * 3600))
        );
        assert!(web.gate.alias.is_none());
        assert_eq!(web.gate.verify.as_ref().unwrap().identities.len(), 1);
        assert!(api.gate.verify.is_none());
        assert_eq!(api.gate.alias.as_ref().unwrap().tag, "stable");
        let bad = updater.replace("age-source: {api: registry}", "age-source: {api: sundial}");
        assert!(
            errors_of(&bad)
                .contains("spec.argocd.age-source.api \"sundial\" is neither registry nor builder")
        );
    }

    /// A KubeSphere updater's bad constraint is reported at its entry, a bad per-alias setting
    /// at the alias's value.
    #[test]
    fn kubesphere_patterns_are_reported_at_their_value() {
        let updater = "apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: u, namespace: demo}
spec:
  images:
  - web=ghcr.io/acme/web:>=1.0 <<2
  - api=ghcr.io/acme/api
  argocd:
    allow-tags:
      api: 'regexp:(('
";
        let errors = errors_of(updater);
        assert!(
            errors.contains(
                "defs.yaml:6:5: error: ImageUpdater demo/u: image \"web=ghcr.io/acme/web:>=1.0 <<2\": invalid semver range '>=1.0 <<2'"
            ),
            "{errors}"
        );
        assert!(
            errors.contains(
                "defs.yaml:10:12: error: ImageUpdater demo/u: image \"api=ghcr.io/acme/api\": invalid allow-tags 'regexp:(('"
            ),
            "{errors}"
        );
    }

    fn errors_of(yaml: &str) -> String {
        errors(yaml).join("\n")
    }
}
