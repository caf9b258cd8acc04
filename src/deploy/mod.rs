//! Automations as Kubernetes workloads, without a controller (`image-update
//! deploy`): the bridge the image automation design asks for, built on
//! Kubernetes's own batch engine.
//!
//! In: Flux `ImageUpdateAutomation`s and KubeSphere `ImageUpdater`s
//! (`kind: fluxcd`), the `GitRepository` each names in its `sourceRef`, and
//! the `ImageRepository`/`ImagePolicy` definitions of their namespaces.
//! Secrets are named, never read: a GitRepository's `spec.secretRef` becomes
//! the container's git credentials (`IMAGE_UPDATE_GIT_*` from the Secret's
//! Flux keys), and a registry Secret (an ImageRepository's `spec.secretRef`,
//! an ImageUpdater's `fluxcd.secret`) is projected next to the definitions as
//! the dockerconfigjson file the reflector looks for.
//!
//! Out, per automation (in its namespace, or `--namespace`):
//! * a ConfigMap with the objects (`automation.yaml`, `gitrepository.yaml`
//!   without its `secretRef`, `policies.yaml`), mounted at `/config`;
//! * a CronJob: the schedule from the interval ([`schedule`]),
//!   `concurrencyPolicy: Forbid`, the hardened Pod of `deploy/cronjob.yaml`
//!   (user 65534, read-only root, no capabilities, no service account
//!   token, the clone in an `emptyDir`), and a `podFailurePolicy` keyed to
//!   the Job's exit codes (2 configuration: fail at once; 4 push conflict:
//!   count; a disruption: ignore);
//! * with `state`, a PersistentVolumeClaim for `--state`.
//!
//! A fleet (`fleet: Some(NAME)`) is one Indexed CronJob for every
//! automation: index `i` runs the automation whose objects are under
//! `/config/i/` (Kubernetes puts `JOB_COMPLETION_INDEX` into the arguments),
//! on the schedule of the shortest interval, with one `podFailurePolicy`
//! rule per index (`FailIndex` on a configuration error, so one broken
//! automation does not stop the others). The objects are split over as many
//! ConfigMaps as their size needs. A fleet shares one namespace and one git
//! Secret, because a Pod template has one environment.
//!
//! Pure: documents in, manifests out; every problem is a diagnostic at its
//! file, line and column, and nothing is produced when there is one.

pub(crate) mod fleet;
pub(crate) mod schedule;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::automation::{self, Automation, AutomationKind, SigningKind};
use crate::diagnostic::{Diagnostic, Location};
use crate::failure::FailureKind;
use crate::git_repository::{self, GitRepository};
use crate::kubesphere::{self, Interval};
use crate::yaml::Document;

/// The container's name.
pub(crate) const CONTAINER: &str = "image-update";
/// Where the objects are mounted.
pub(crate) const CONFIG_MOUNT: &str = "/config";
/// The most bytes of objects one ConfigMap holds (Kubernetes allows 1 MiB
/// for the whole object).
const CONFIGMAP_BUDGET: usize = 900 * 1024;
/// The longest CronJob name (its Jobs add 11 characters to it).
const MAX_NAME: usize = 52;

/// The image the manifests run: the release of this binary.
#[must_use]
pub(crate) fn default_image() -> String {
    format!(
        "ghcr.io/image-update/image-update:{}",
        env!("CARGO_PKG_VERSION")
    )
}

/// The kinds `deploy` reads, by API group: automations, their
/// GitRepositories, the definitions of their policies.
const INPUTS: [(&str, &str); 5] = [
    ("image.toolkit.fluxcd.io", "ImageUpdateAutomation"),
    (kubesphere::GROUP, kubesphere::KIND),
    (git_repository::GROUP, git_repository::KIND),
    ("image.toolkit.fluxcd.io", "ImageRepository"),
    ("image.toolkit.fluxcd.io", "ImagePolicy"),
];

/// Whether `value` is of a kind `deploy` reads (the KRM generator leaves
/// the other items of a package alone).
#[must_use]
pub(crate) fn reads(value: &Value) -> bool {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let group = crate::yaml::api_group(value);
    INPUTS.contains(&(group, kind))
}

/// One input file.
pub(crate) struct Source<'a> {
    /// Its name, for diagnostics.
    pub origin: &'a str,
    pub documents: &'a [Document],
}

/// How to deploy.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The container image.
    pub image: String,
    /// Put every workload in this namespace (default: each automation's).
    pub namespace: Option<String>,
    /// One Indexed CronJob of this name for every automation.
    pub fleet: Option<String>,
    /// A PersistentVolumeClaim for `--state` (ReadWriteMany for a fleet).
    pub state: bool,
    /// Pods of a fleet run at once.
    pub parallelism: u32,
    /// The cloud identity the workloads' Pods log in to registries with:
    /// a ServiceAccount of their own, annotated for it.
    pub cloud_identity: Option<CloudIdentity>,
    /// `--registry-provider HOST=PROVIDER` for every Job.
    pub registry_providers: Vec<(String, image_update_registry::Provider)>,
}

/// A workload identity for the Pods (`--cloud-identity PROVIDER=ID`): the
/// ServiceAccount annotation (and Pod label) each cloud's Kubernetes
/// integration reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CloudIdentity {
    /// EKS IAM roles for service accounts: the role's ARN.
    AwsRole(String),
    /// EKS Pod Identity: the association names the ServiceAccount, which
    /// needs no annotation.
    AwsPodIdentity,
    /// GKE Workload Identity with a Google service account: its e-mail.
    GcpServiceAccount(String),
    /// GKE Workload Identity Federation granting the Kubernetes
    /// ServiceAccount itself: no annotation.
    GcpDirect,
    /// AKS workload identity: the managed identity's or application's
    /// client ID.
    AzureClient(String),
}

impl std::str::FromStr for CloudIdentity {
    type Err = String;

    /// `aws=ROLE_ARN`, `aws=pod-identity`, `gcp=GSA_EMAIL`, `gcp=direct`,
    /// `azure=CLIENT_ID`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (provider, id) = text.split_once('=').ok_or_else(|| {
            format!("{text:?} is not PROVIDER=ID (aws=ROLE_ARN, aws=pod-identity, gcp=GSA_EMAIL, gcp=direct, azure=CLIENT_ID)")
        })?;
        let id = id.trim();
        let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic());
        match provider.trim() {
            "aws" if id == "pod-identity" => Ok(Self::AwsPodIdentity),
            "aws" if id.starts_with("arn:") && id.contains(":role/") && plain(id) => {
                Ok(Self::AwsRole(id.to_owned()))
            }
            "aws" => Err(format!(
                "{text:?}: aws takes an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME) or pod-identity"
            )),
            "gcp" if id == "direct" => Ok(Self::GcpDirect),
            "gcp" if id.ends_with(".gserviceaccount.com") && id.contains('@') && plain(id) => {
                Ok(Self::GcpServiceAccount(id.to_owned()))
            }
            "gcp" => Err(format!(
                "{text:?}: gcp takes a Google service account's e-mail (NAME@PROJECT.iam.gserviceaccount.com) or direct"
            )),
            "azure" if id.len() == 36 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') => {
                Ok(Self::AzureClient(id.to_ascii_lowercase()))
            }
            "azure" => Err(format!("{text:?}: azure takes a client ID (a GUID)")),
            other => Err(format!("{text:?}: {other:?} is not aws, gcp or azure")),
        }
    }
}

impl CloudIdentity {
    /// The ServiceAccount's annotations.
    fn annotations(&self) -> Map<String, Value> {
        let mut out = Map::new();
        match self {
            Self::AwsRole(arn) => {
                out.insert("eks.amazonaws.com/role-arn".to_owned(), json!(arn));
            }
            Self::GcpServiceAccount(email) => {
                out.insert("iam.gke.io/gcp-service-account".to_owned(), json!(email));
            }
            Self::AzureClient(id) => {
                out.insert("azure.workload.identity/client-id".to_owned(), json!(id));
            }
            Self::AwsPodIdentity | Self::GcpDirect => {}
        }
        out
    }

    /// The workload's ServiceAccount.
    fn service_account(&self, name: &str, namespace: &str) -> Value {
        let mut metadata = meta(name, namespace);
        let annotations = self.annotations();
        if !annotations.is_empty() {
            metadata["annotations"] = Value::Object(annotations);
        }
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata,
            // The clouds' webhooks project their own tokens.
            "automountServiceAccountToken": false,
        })
    }

    /// The Pod template runs as the ServiceAccount (AKS's webhook also
    /// wants a label on the Pod).
    fn apply(&self, template: &mut Value, name: &str) {
        template["spec"]["serviceAccountName"] = json!(name);
        if matches!(self, Self::AzureClient(_)) {
            template["metadata"]["labels"]["azure.workload.identity/use"] = json!("true");
        }
    }
}

/// The Job's `--registry-provider` arguments.
fn provider_args(options: &Options) -> Vec<String> {
    options
        .registry_providers
        .iter()
        .flat_map(|(host, p)| ["--registry-provider".to_owned(), format!("{host}={p}")])
        .collect()
}

impl Default for Options {
    fn default() -> Self {
        Options {
            image: default_image(),
            namespace: None,
            fleet: None,
            state: false,
            parallelism: 1,
            cloud_identity: None,
            registry_providers: Vec::new(),
        }
    }
}

/// The manifests, and notes about them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Output {
    /// Every object, in the order they should be applied.
    pub objects: Vec<Value>,
    /// Notes (a schedule that differs from an interval).
    pub notes: Vec<Diagnostic>,
}

impl Output {
    /// The objects as one YAML stream.
    ///
    /// # Errors
    /// Only if YAML serialisation fails.
    pub(crate) fn to_yaml(&self) -> Result<String, String> {
        crate::yaml::to_stream(&self.objects)
    }
}

/// A GitRepository of the inputs.
struct GitRepo {
    namespace: String,
    name: String,
    url: String,
    secret: Option<String>,
    /// The object without `spec.secretRef` (the credentials come from the
    /// environment).
    object: Value,
}

/// An automation of the inputs, resolved.
struct Entry<'a> {
    automation: Automation,
    interval: Interval,
    object: &'a Value,
    at: Location,
    /// Where the source reference is, for errors about it.
    source_at: Location,
    registry_secrets: BTreeSet<String>,
}

/// Generate the workloads for the automations of `sources`.
///
/// # Errors
/// Every problem, each at its place: an object of another kind (a Secret
/// among them), an automation that cannot be read, a `sourceRef` to a
/// GitRepository that is not among the inputs, an interval that does not
/// parse or is under a minute, no policy definitions for an automation,
/// Secrets in another namespace than the workload's, two workloads with one
/// name, a fleet whose automations use different namespaces or git Secrets.
pub(crate) fn generate(
    sources: &[Source<'_>],
    options: &Options,
) -> Result<Output, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut entries = Vec::new();
    let mut repos: Vec<GitRepo> = Vec::new();
    let mut rejected: BTreeSet<(String, String)> = BTreeSet::new();
    let mut definitions: Vec<(&Value, Location)> = Vec::new();
    // Where each object was first read: an object given twice (the same file twice, or a copy)
    // is one object when both are the same, an error naming both when they differ.
    let mut first: BTreeMap<(&str, &str, String, String), (&Document, &str)> = BTreeMap::new();
    let mut notes = Vec::new();
    for source in sources {
        // The objects of this file that deploy does not read, and where the first is.
        let mut passed_over: Vec<String> = Vec::new();
        let mut passed_over_at = None;
        for doc in source.documents {
            let at = |pointer: &str| Location::new(source.origin, doc.position(pointer));
            let value = &doc.value;
            let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
            let group = crate::yaml::api_group(value);
            if reads(value) {
                let (namespace, name) = crate::yaml::namespace_name(value);
                let identity = (group, kind, namespace, name);
                if let Some(&(earlier, origin)) = first.get(&identity) {
                    if let Some(d) = crate::same_object::difference(&earlier.value, value) {
                        let (_, _, namespace, name) = identity;
                        errors.push(crate::same_object::conflict(
                            &format!("{kind} {namespace}/{name}"),
                            &Location::new(origin, earlier.position(&d.pointer)),
                            at(&d.pointer),
                            &d,
                        ));
                    }
                    continue;
                }
                first.insert(identity, (doc, source.origin));
            }
            match (group, kind) {
                ("image.toolkit.fluxcd.io", "ImageUpdateAutomation") => {
                    match automation::read(doc, source.origin, true) {
                        Ok(a) => {
                            let interval = match value.pointer("/spec/interval") {
                                Some(Value::String(text)) => Interval::parse(text),
                                _ => None,
                            };
                            match interval {
                                Some(interval) => entries.push(Entry {
                                    source_at: at("/spec/sourceRef"),
                                    automation: a,
                                    interval,
                                    object: value,
                                    at: at(""),
                                    registry_secrets: BTreeSet::new(),
                                }),
                                None => errors.push(
                                    Diagnostic::error(format!(
                                        "{}: spec.interval is missing or is not a duration such as 1m, 30m or 1h30m",
                                        a.describe()
                                    ))
                                    .at(at("/spec/interval")),
                                ),
                            }
                        }
                        Err(e) => errors.extend(e),
                    }
                }
                (kubesphere::GROUP, kubesphere::KIND) => {
                    match kubesphere::automation(doc, source.origin, true) {
                        Ok(u) => entries.push(Entry {
                            source_at: at("/spec/fluxcd/sourceRef"),
                            automation: u.automation,
                            interval: u.interval,
                            object: value,
                            at: at(""),
                            registry_secrets: u.registry_secret.into_iter().collect(),
                        }),
                        Err(e) => errors.extend(e),
                    }
                }
                (git_repository::GROUP, git_repository::KIND) => {
                    match git_repository::read(doc, source.origin) {
                        Ok(r) => repos.push(git_repo(r, value)),
                        Err(e) => {
                            // Said once: its automations do not add that it is missing.
                            let (namespace, name) = crate::yaml::namespace_name(value);
                            rejected.insert((
                                if namespace.is_empty() { "default".to_owned() } else { namespace },
                                name,
                            ));
                            errors.extend(e);
                        }
                    }
                }
                ("image.toolkit.fluxcd.io", "ImageRepository" | "ImagePolicy") => {
                    definitions.push((value, at("")));
                }
                ("", "Secret") => errors.push(
                    Diagnostic::error(
                        "a Secret: deploy writes no Secret into manifests; create it in the cluster (kubectl create secret ...), the workloads name it",
                    )
                    .at(at("")),
                ),
                // A kind of the image API that does not exist: a misspelt kind, never passed over.
                ("image.toolkit.fluxcd.io", _) => errors.push(
                    Diagnostic::error(format!(
                        "{} {kind}: deploy reads ImageUpdateAutomations, ImageUpdaters (kind: fluxcd), GitRepositories, ImageRepositories and ImagePolicies",
                        value.get("apiVersion").and_then(Value::as_str).unwrap_or("")
                    ))
                    .at(at("")),
                ),
                // Anything else (the Kustomization beside a Flux repository's GitRepository in
                // gotk-sync.yaml, the manifests of a directory given whole) is passed over, with
                // a note per file.
                _ => {
                    let (namespace, name) = crate::yaml::namespace_name(value);
                    let id = if namespace.is_empty() { name } else { format!("{namespace}/{name}") };
                    passed_over.push(format!("{kind} {id}").trim_end().to_owned());
                    passed_over_at.get_or_insert_with(|| at(""));
                }
            }
        }
        if let Some(at) = passed_over_at {
            notes.push(passed_over_note(&passed_over).at(at));
        }
    }
    if entries.is_empty() && errors.is_empty() {
        errors.push(Diagnostic::error(
            "no automation among the inputs: give an ImageUpdateAutomation or an ImageUpdater (kind: fluxcd), with its GitRepository",
        ));
    }
    let mut units = Vec::new();
    for entry in &entries {
        if entry
            .automation
            .source_ref
            .as_ref()
            .is_some_and(|r| rejected.contains(&(r.namespace.clone(), r.name.clone())))
        {
            continue;
        }
        match unit(entry, &repos, &definitions, options) {
            Ok(u) => units.push(u),
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut output = Output {
        notes,
        ..Output::default()
    };
    match &options.fleet {
        None => {
            let mut names: BTreeMap<(String, String), &Location> = BTreeMap::new();
            for (u, entry) in units.iter().zip(&entries) {
                let name = object_name(
                    &format!("image-update-{}", entry.automation.name),
                    &entry.automation.namespace,
                );
                if let Some(first) = names.insert((u.namespace.clone(), name.clone()), &entry.at) {
                    errors.push(
                        Diagnostic::error(format!(
                            "{}: its workload would be {}/{name}, as the automation at {first}'s (give them different names, or deploy them into different namespaces)",
                            entry.automation.describe(),
                            u.namespace
                        ))
                        .at(entry.at.clone()),
                    );
                    continue;
                }
                match single(u, &name, options) {
                    Ok((objects, note)) => {
                        output.objects.extend(objects);
                        output.notes.extend(note.map(|n| {
                            Diagnostic::note(format!("{}: {n}", entry.automation.describe()))
                                .at(entry.at.clone())
                        }));
                    }
                    Err(e) => errors.push(
                        Diagnostic::error(format!("{}: {e}", entry.automation.describe()))
                            .at(entry.at.clone()),
                    ),
                }
            }
        }
        Some(fleet) => match fleet_objects(fleet, &units, &entries, options) {
            Ok(out) => {
                output.objects = out.objects;
                output.notes.extend(out.notes);
            }
            Err(e) => errors.extend(e),
        },
    }
    if errors.is_empty() {
        Ok(output)
    } else {
        Err(errors)
    }
}

/// The note for the objects of one file that `deploy` does not read (at most three named).
fn passed_over_note(objects: &[String]) -> Diagnostic {
    const NAMED: usize = 3;
    let mut named = objects
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if objects.len() > NAMED {
        named.push_str(&format!(" and {} more", objects.len() - NAMED));
    }
    Diagnostic::note(format!(
        "passed over {named}: deploy reads ImageUpdateAutomations, ImageUpdaters (kind: fluxcd), GitRepositories, ImageRepositories and ImagePolicies"
    ))
}

/// What one automation's workload needs.
struct Unit {
    namespace: String,
    /// `automation.yaml`, `gitrepository.yaml`, `policies.yaml`.
    files: Vec<(&'static str, String)>,
    git_secret: Option<String>,
    ssh: bool,
    registry_secrets: BTreeSet<String>,
    /// The commit signing key's Secret and kind.
    signing: Option<(String, SigningKind)>,
    interval: Interval,
    key: String,
}

fn yaml_text(value: &Value) -> Result<String, String> {
    serde_saphyr::to_string(value).map_err(|e| e.to_string())
}

fn unit(
    entry: &Entry<'_>,
    repos: &[GitRepo],
    definitions: &[(&Value, Location)],
    options: &Options,
) -> Result<Unit, Vec<Diagnostic>> {
    let a = &entry.automation;
    let what = a.describe();
    let mut errors = Vec::new();
    let namespace = options
        .namespace
        .clone()
        .unwrap_or_else(|| a.namespace.clone());
    let Some(source) = &a.source_ref else {
        return Err(vec![
            Diagnostic::error(format!(
                "{what}: no sourceRef: name the GitRepository to update"
            ))
            .at(entry.at.clone()),
        ]);
    };
    let Some(repo) = repos
        .iter()
        .find(|r| r.namespace == source.namespace && r.name == source.name)
    else {
        return Err(vec![
            Diagnostic::error(format!(
                "{what}: sourceRef names GitRepository {}/{}, which is not among the inputs (give its file too)",
                source.namespace, source.name
            ))
            .at(entry.source_at.clone()),
        ]);
    };
    if repo.secret.is_some() && repo.namespace != namespace {
        errors.push(
            Diagnostic::error(format!(
                "{what}: GitRepository {}/{}'s Secret lives in namespace {}, but the workload goes into {namespace}, where a Pod cannot read it",
                repo.namespace, repo.name, repo.namespace
            ))
            .at(entry.source_at.clone()),
        );
    }
    // The definitions in scope: ImagePolicies of the automation's namespace
    // and the ImageRepositories they name.
    let mut policies: Vec<&Value> = Vec::new();
    let mut registry_secrets = entry.registry_secrets.clone();
    for (d, _) in definitions {
        let (ns, _) = crate::yaml::namespace_name(d);
        if d["kind"] == "ImagePolicy" && ns == a.namespace {
            policies.push(d);
        }
    }
    let mut repositories: Vec<&Value> = Vec::new();
    for p in &policies {
        let (ns, _) = crate::yaml::namespace_name(p);
        let name = p
            .pointer("/spec/imageRepositoryRef/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let repo_ns = p
            .pointer("/spec/imageRepositoryRef/namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(&ns)
            .to_owned();
        for (d, at) in definitions {
            let (dns, dname) = crate::yaml::namespace_name(d);
            if d["kind"] == "ImageRepository"
                && dns == repo_ns
                && dname == name
                && !repositories.iter().any(|r| std::ptr::eq(*r, *d))
            {
                if let Some(secret) = d.pointer("/spec/secretRef/name").and_then(Value::as_str) {
                    if dns != namespace {
                        errors.push(
                            Diagnostic::error(format!(
                                "ImageRepository {dns}/{dname}'s Secret {secret} lives in namespace {dns}, but {what}'s workload goes into {namespace}"
                            ))
                            .at(at.clone()),
                        );
                    }
                    registry_secrets.insert(secret.to_owned());
                }
                repositories.push(d);
            }
        }
    }
    let signing = a
        .git
        .as_ref()
        .and_then(|g| g.commit.signing_key.as_ref())
        .map(|k| (k.secret_name.clone(), k.kind));
    if signing.is_some() && a.namespace != namespace {
        errors.push(
            Diagnostic::error(format!(
                "{what}: its signing key Secret lives in namespace {}, but the workload goes into {namespace}, where a Pod cannot read it",
                a.namespace
            ))
            .at(entry.at.clone()),
        );
    }
    if policies.is_empty() && a.kind != AutomationKind::KubeSphere {
        errors.push(
            Diagnostic::error(format!(
                "{what}: no ImagePolicy of namespace {} among the inputs: give the ImageRepository and ImagePolicy definitions its markers name",
                a.namespace
            ))
            .at(entry.at.clone()),
        );
    }
    for s in &registry_secrets {
        if [
            fleet::AUTOMATION,
            fleet::GIT_REPOSITORY,
            fleet::POLICIES,
            fleet::FILE,
        ]
        .contains(&s.as_str())
        {
            errors.push(
                Diagnostic::error(format!(
                    "{what}: a registry Secret named {s} would hide the objects' file {s}"
                ))
                .at(entry.at.clone()),
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let fail = |e: String| vec![Diagnostic::error(format!("{what}: {e}")).at(entry.at.clone())];
    let mut files = vec![
        (fleet::AUTOMATION, yaml_text(entry.object).map_err(fail)?),
        (
            fleet::GIT_REPOSITORY,
            yaml_text(&repo.object).map_err(fail)?,
        ),
    ];
    if !repositories.is_empty() || !policies.is_empty() {
        let mut text = String::new();
        for (i, d) in repositories.iter().chain(policies.iter()).enumerate() {
            if i > 0 {
                text.push_str("---\n");
            }
            text.push_str(&yaml_text(d).map_err(fail)?);
        }
        files.push((fleet::POLICIES, text));
    }
    Ok(Unit {
        namespace,
        files,
        git_secret: repo.secret.clone(),
        ssh: repo.url.starts_with("ssh://")
            || (!repo.url.contains("://") && repo.url.contains('@')),
        registry_secrets,
        signing,
        interval: entry.interval.clone(),
        key: format!("{}/{}", a.namespace, a.name),
    })
}

/// A GitRepository the Job's reader accepted ([`git_repository::read`]),
/// with its object for the ConfigMap.
fn git_repo(read: GitRepository, value: &Value) -> GitRepo {
    let mut object = value.clone();
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("secretRef");
    }
    GitRepo {
        namespace: read.namespace,
        name: read.name,
        url: read.url,
        secret: read.secret_name,
        object,
    }
}

/// A valid object name from `base`: lower-case, at most [`MAX_NAME`]
/// characters (a hash of `base` and `namespace` keeps long names apart).
fn object_name(base: &str, namespace: &str) -> String {
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_matches('-').to_owned();
    if clean.len() <= MAX_NAME {
        return clean;
    }
    let hash = Sha256::digest(format!("{namespace}/{base}").as_bytes());
    let suffix: String = hash.iter().take(3).map(|b| format!("{b:02x}")).collect();
    format!("{}-{suffix}", clean[..MAX_NAME - 7].trim_end_matches('-'))
}

fn labels(name: &str) -> Value {
    json!({"app.kubernetes.io/name": "image-update", "app.kubernetes.io/instance": name})
}

fn meta(name: &str, namespace: &str) -> Value {
    json!({"name": name, "namespace": namespace, "labels": labels(name)})
}

/// The git credentials from the GitRepository's Secret, by Flux's keys (all
/// optional, so one Secret shape serves HTTPS and SSH).
fn git_env(secret: Option<&str>, ssh: bool) -> Vec<Value> {
    let mut env = Vec::new();
    if let Some(secret) = secret {
        let keys: &[(&str, &str)] = if ssh {
            &[
                ("IMAGE_UPDATE_GIT_SSH_KEY", "identity"),
                ("IMAGE_UPDATE_GIT_SSH_KEY_PASSPHRASE", "password"),
                ("IMAGE_UPDATE_GIT_KNOWN_HOSTS", "known_hosts"),
            ]
        } else {
            &[
                ("IMAGE_UPDATE_GIT_USERNAME", "username"),
                ("IMAGE_UPDATE_GIT_PASSWORD", "password"),
                ("IMAGE_UPDATE_GIT_BEARER_TOKEN", "bearerToken"),
                ("IMAGE_UPDATE_GIT_CA_CERT", "ca.crt"),
            ]
        };
        for (var, key) in keys {
            env.push(json!({
                "name": var,
                "valueFrom": {"secretKeyRef": {"name": secret, "key": key, "optional": true}},
            }));
        }
    }
    env.push(json!({"name": "TMPDIR", "value": "/tmp"}));
    env
}

/// The signing key's file (Flux's key, `git.asc` or `identity`), projected
/// at `path`.
fn signing_source(secret: &str, kind: SigningKind, path: &str) -> Value {
    let key = match kind {
        SigningKind::Gpg => "git.asc",
        SigningKind::Ssh => "identity",
    };
    json!({"secret": {"name": secret, "items": [{"key": key, "path": path}]}})
}

/// The signing key's passphrase from its Secret (Flux's key, optional).
fn signing_env(signing: Option<&(String, SigningKind)>) -> Option<Value> {
    signing.map(|(secret, kind)| {
        let key = match kind {
            SigningKind::Gpg => "passphrase",
            SigningKind::Ssh => "password",
        };
        json!({
            "name": "IMAGE_UPDATE_SIGNING_PASSPHRASE",
            "valueFrom": {"secretKeyRef": {"name": secret, "key": key, "optional": true}},
        })
    })
}

/// The environment and projected file a unit adds for its signing key (its
/// flag is [`JobCommand::signing_key`]).
fn with_signing(
    env: &mut Vec<Value>,
    sources: &mut Vec<Value>,
    signing: Option<&(String, SigningKind)>,
) {
    if let Some((secret, kind)) = signing {
        sources.push(signing_source(secret, *kind, "signing-key"));
    }
    env.extend(signing_env(signing));
}

/// The hardened Pod of `deploy/cronjob.yaml`, running `args`.
fn pod(
    image: &str,
    args: Vec<String>,
    env: Vec<Value>,
    volumes: Vec<Value>,
    state: bool,
    name: &str,
) -> Value {
    let mut mounts = vec![
        json!({"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": true}),
        json!({"name": "tmp", "mountPath": "/tmp"}),
    ];
    let mut all_volumes = volumes;
    all_volumes.push(json!({"name": "tmp", "emptyDir": {"sizeLimit": "2Gi"}}));
    if state {
        mounts.push(json!({"name": "state", "mountPath": "/state"}));
        all_volumes.push(json!({
            "name": "state",
            "persistentVolumeClaim": {"claimName": format!("{name}-state")},
        }));
    }
    json!({
        "metadata": {"labels": labels(name)},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": 65534,
                "runAsGroup": 65534,
                "fsGroup": 65534,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [{
                "name": CONTAINER,
                "image": image,
                "args": args,
                "env": env,
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "securityContext": {
                    "runAsNonRoot": true,
                    "runAsUser": 65534,
                    "readOnlyRootFilesystem": true,
                    "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "resources": {
                    "requests": {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "256Mi"},
                    "limits": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "2Gi"},
                },
                "volumeMounts": mounts,
            }],
            "volumes": all_volumes,
        },
    })
}

/// Where a deployed Job reads its objects from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobObjects {
    /// One automation's files (its GitRepository's, its policies' when it
    /// has some) in the mounted configuration.
    Automation {
        /// The automation has a policies file.
        policies: bool,
    },
    /// The fleet's index, whose entry `JOB_COMPLETION_INDEX` picks.
    Fleet,
}

/// The command line of a deployed Job, each flag typed: [`JobCommand::args`]
/// is the one place that spells `image-update job`'s flags for `deploy`.
#[derive(Debug, Clone)]
struct JobCommand<'o> {
    objects: JobObjects,
    /// `--state FILE`.
    state: Option<String>,
    /// `--signing-key`: the key mounted at `CONFIG_MOUNT/signing-key`.
    signing_key: bool,
    /// The deploy options: `--registry-provider HOST=PROVIDER` for each of
    /// their registry providers.
    options: &'o Options,
}

impl JobCommand<'_> {
    /// The container's arguments: `job`, the objects, `--fetch`, the state
    /// file, the termination log, the signing key, the registry providers.
    fn args(&self) -> Vec<String> {
        let mut args = vec!["job".to_owned()];
        let at = |file: &str| format!("{CONFIG_MOUNT}/{file}");
        match self.objects {
            JobObjects::Automation { policies } => {
                args.extend([
                    "--automation".to_owned(),
                    at(fleet::AUTOMATION),
                    "--git-repository".to_owned(),
                    at(fleet::GIT_REPOSITORY),
                ]);
                if policies {
                    args.extend(["--policies".to_owned(), at(fleet::POLICIES)]);
                }
            }
            JobObjects::Fleet => args.extend(["--fleet".to_owned(), at(fleet::FILE)]),
        }
        args.push("--fetch".to_owned());
        if let Some(state) = &self.state {
            args.extend(["--state".to_owned(), state.clone()]);
        }
        args.extend([
            "--termination-log".to_owned(),
            "/dev/termination-log".to_owned(),
        ]);
        if self.signing_key {
            args.extend(["--signing-key".to_owned(), at("signing-key")]);
        }
        args.extend(provider_args(self.options));
        args
    }
}

/// The Job's `podFailurePolicy`: fail at once on the exit status of a
/// configuration error, count a lost push race as a retry.
fn failure_rules(per_index: bool) -> Value {
    let configuration = FailureKind::Configuration.exit_code();
    let conflict = FailureKind::Conflict.exit_code();
    json!({"rules": [
        {
            "action": if per_index { "FailIndex" } else { "FailJob" },
            "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": [configuration]},
        },
        {
            "action": "Count",
            "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": [conflict]},
        },
        // `status` defaults to "True", but the API's OpenAPI schemas of Kubernetes 1.30 to 1.34
        // require it.
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    ]})
}

fn state_claim(name: &str, namespace: &str, many: bool) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        // Labelled as its workload's.
        "metadata": {"name": format!("{name}-state"), "namespace": namespace, "labels": labels(name)},
        "spec": {
            "accessModes": [if many { "ReadWriteMany" } else { "ReadWriteOnce" }],
            "resources": {"requests": {"storage": "64Mi"}},
        },
    })
}

fn cron_job(name: &str, namespace: &str, schedule: &schedule::Schedule, job: Value) -> Value {
    let period = schedule.period.as_secs();
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta(name, namespace),
        "spec": {
            "schedule": schedule.cron,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": period.min(300),
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"metadata": {"labels": labels(name)}, "spec": job},
        },
    })
}

/// The period's seconds, at least ten minutes, for `activeDeadlineSeconds`:
/// a run ends before the next is due, or within ten minutes for short
/// periods (Forbid skips the runs it overlaps).
fn deadline(schedule: &schedule::Schedule) -> u64 {
    schedule.period.as_secs().max(600)
}

/// One automation's ConfigMap, claim and CronJob; the schedule's note.
fn single(u: &Unit, name: &str, options: &Options) -> Result<(Vec<Value>, Option<String>), String> {
    let schedule = schedule::schedule(u.interval.duration, &u.key)?;
    let data: Map<String, Value> = u
        .files
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
        .collect();
    let config = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(name, &u.namespace),
        "data": data,
    });
    let mut sources = vec![json!({"configMap": {"name": name}})];
    for s in &u.registry_secrets {
        sources.push(
            json!({"secret": {"name": s, "items": [{"key": ".dockerconfigjson", "path": s}]}}),
        );
    }
    let args = JobCommand {
        objects: JobObjects::Automation {
            policies: u.files.iter().any(|(k, _)| *k == fleet::POLICIES),
        },
        state: options.state.then(|| "/state/state.json".to_owned()),
        signing_key: u.signing.is_some(),
        options,
    }
    .args();
    let mut env = git_env(u.git_secret.as_deref(), u.ssh);
    with_signing(&mut env, &mut sources, u.signing.as_ref());
    let volumes = vec![json!({"name": "config", "projected": {"sources": sources}})];
    let mut template = pod(&options.image, args, env, volumes, options.state, name);
    if let Some(identity) = &options.cloud_identity {
        identity.apply(&mut template, name);
    }
    let job = json!({
        "backoffLimit": 2,
        "activeDeadlineSeconds": deadline(&schedule),
        "podFailurePolicy": failure_rules(false),
        "template": template,
    });
    let mut objects = vec![config];
    if options.state {
        objects.push(state_claim(name, &u.namespace, false));
    }
    if let Some(identity) = &options.cloud_identity {
        objects.push(identity.service_account(name, &u.namespace));
    }
    objects.push(cron_job(name, &u.namespace, &schedule, job));
    Ok((objects, schedule.note))
}

/// How a diagnostic names a unit's git credentials.
fn secret_name(u: &Unit) -> String {
    let kind = if u.ssh { "SSH" } else { "HTTPS" };
    match &u.git_secret {
        Some(s) => format!("{s} ({kind})"),
        None => format!("none ({kind})"),
    }
}

fn fleet_objects(
    fleet: &str,
    units: &[Unit],
    entries: &[Entry<'_>],
    options: &Options,
) -> Result<Output, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let name = object_name(fleet, "");
    if !crate::object::dns_subdomain(&name) || name != fleet {
        errors.push(Diagnostic::error(format!(
            "--fleet {fleet:?} is not a valid name (lower-case letters, digits and '-', at most {MAX_NAME} characters)"
        )));
    }
    let (Some(first), Some(first_entry)) = (units.first(), entries.first()) else {
        return Err(errors);
    };
    for (u, e) in units.iter().zip(entries).skip(1) {
        if u.namespace != first.namespace {
            errors.push(
                Diagnostic::error(format!(
                    "{}: a fleet runs in one namespace, and this automation's is {} where {}'s is {} (give --namespace)",
                    e.automation.describe(),
                    u.namespace,
                    first_entry.automation.describe(),
                    first.namespace
                ))
                .at(e.at.clone()),
            );
        }
        if u.signing != first.signing {
            errors.push(
                Diagnostic::error(format!(
                    "{}: a fleet's Pods share one signing key, and this automation's signingKey differs from {}'s (deploy them without --fleet, or in two fleets)",
                    e.automation.describe(),
                    first_entry.automation.describe(),
                ))
                .at(e.at.clone()),
            );
        }
        if u.git_secret != first.git_secret || u.ssh != first.ssh {
            errors.push(
                Diagnostic::error(format!(
                    "{}: a fleet's Pods share one environment, so one git Secret, and its GitRepository's is {} where {}'s is {} (deploy them without --fleet, or in two fleets)",
                    e.automation.describe(),
                    secret_name(u),
                    first_entry.automation.describe(),
                    secret_name(first)
                ))
                .at(e.at.clone()),
            );
        }
    }
    let shortest = units
        .iter()
        .map(|u| u.interval.duration)
        .min()
        .unwrap_or_default();
    let schedule = match schedule::schedule(shortest, &format!("{}/{name}", first.namespace)) {
        Ok(s) => s,
        Err(e) => {
            errors.push(Diagnostic::error(format!(
                "--fleet {fleet}: the shortest interval, {e}"
            )));
            return Err(errors);
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    // The objects, index by index, over as many ConfigMaps as needed. An
    // index without definitions of its own gets an empty policies file, so
    // that one argument list serves every index.
    // The fleet's index comes first: the Job checks its JOB_COMPLETION_INDEX
    // against it.
    let described: Vec<String> = entries.iter().map(|e| e.automation.describe()).collect();
    let index = yaml_text(&fleet::index(&name, &first.namespace, &described))
        .map_err(|e| vec![Diagnostic::error(format!("--fleet {fleet}: {e}"))])?;
    let mut size = index.len() + fleet::FILE.len() + 8;
    let mut maps: Vec<(Map<String, Value>, Vec<Value>)> = vec![(
        Map::from_iter([(fleet::FILE.to_owned(), Value::String(index))]),
        vec![json!({"key": fleet::FILE, "path": fleet::FILE})],
    )];
    for (i, u) in units.iter().enumerate() {
        let mut files: Vec<(&str, &str)> = u.files.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if !files.iter().any(|(k, _)| *k == fleet::POLICIES) {
            files.push((fleet::POLICIES, ""));
        }
        let bytes: usize = files.iter().map(|(k, v)| k.len() + v.len() + 8).sum();
        if size + bytes > CONFIGMAP_BUDGET && !maps.last().is_some_and(|m| m.0.is_empty()) {
            maps.push((Map::new(), Vec::new()));
            size = 0;
        }
        size += bytes;
        if let Some((data, items)) = maps.last_mut() {
            for (file, text) in files {
                let key = format!("{i}.{file}");
                items.push(json!({"key": key, "path": format!("{i}/{file}")}));
                data.insert(key, Value::String(text.to_owned()));
            }
        }
    }
    let map_name = |k: usize| {
        if maps.len() == 1 {
            name.clone()
        } else {
            format!("{name}-{k}")
        }
    };
    let mut objects = Vec::new();
    let mut sources = Vec::new();
    for (k, (data, items)) in maps.iter().enumerate() {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(&map_name(k), &first.namespace),
            "data": data,
        }));
        sources.push(json!({"configMap": {"name": map_name(k), "items": items}}));
    }
    let mut secrets: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        for s in &u.registry_secrets {
            secrets
                .entry(s)
                .or_default()
                .push(json!({"key": ".dockerconfigjson", "path": format!("{i}/{s}")}));
        }
    }
    for (s, items) in secrets {
        sources.push(json!({"secret": {"name": s, "items": items}}));
    }
    // The Job reads JOB_COMPLETION_INDEX (in the environment of every Pod
    // of an Indexed Job) and runs that entry of the index; Kubernetes
    // expands $(JOB_COMPLETION_INDEX) in the state file's name.
    let state = options
        .state
        .then(|| "/state/$(JOB_COMPLETION_INDEX).json".to_owned());
    let fleet_args = JobCommand {
        objects: JobObjects::Fleet,
        state,
        signing_key: first.signing.is_some(),
        options,
    }
    .args();
    let mut env = git_env(first.git_secret.as_deref(), first.ssh);
    with_signing(&mut env, &mut sources, first.signing.as_ref());
    let volumes = vec![json!({"name": "config", "projected": {"sources": sources}})];
    let mut template = pod(
        &options.image,
        fleet_args,
        env,
        volumes,
        options.state,
        &name,
    );
    if let Some(identity) = &options.cloud_identity {
        identity.apply(&mut template, &name);
    }
    let job = json!({
        "completionMode": "Indexed",
        "completions": units.len(),
        "parallelism": options.parallelism.max(1),
        "backoffLimitPerIndex": 2,
        "activeDeadlineSeconds": deadline(&schedule),
        "podFailurePolicy": failure_rules(true),
        "template": template,
    });
    if options.state {
        objects.push(state_claim(&name, &first.namespace, true));
    }
    if let Some(identity) = &options.cloud_identity {
        objects.push(identity.service_account(&name, &first.namespace));
    }
    objects.push(cron_job(&name, &first.namespace, &schedule, job));
    let notes = schedule
        .note
        .iter()
        .map(|n| Diagnostic::note(format!("fleet {name}: {n}")))
        .chain(std::iter::once(Diagnostic::note(format!(
            "fleet {name}: {} automation(s), every one on the schedule of the shortest interval",
            units.len()
        ))))
        .collect();
    Ok(Output { objects, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUTOMATION: &str = r"apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit:
      author: {name: bot, email: bot@example.com}
  update: {path: ./apps, strategy: Setters}
";
    const REPO: &str = r"apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system}
spec:
  url: https://github.com/example/fleet
  ref: {branch: main}
  secretRef: {name: git-token}
";
    const POLICIES: &str = r"apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: flux-system}
spec: {image: ghcr.io/acme/app, secretRef: {name: regcred}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: flux-system}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: '>=1.0.0'}}
";

    fn run(texts: &[(&str, &str)], options: &Options) -> Result<Output, Vec<String>> {
        let docs: Vec<(String, Vec<Document>)> = texts
            .iter()
            .map(|(o, t)| ((*o).to_owned(), crate::yaml::parse_documents(t).unwrap()))
            .collect();
        let sources: Vec<Source<'_>> = docs
            .iter()
            .map(|(o, d)| Source {
                origin: o,
                documents: d,
            })
            .collect();
        generate(&sources, options).map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_cloud_identity_is_a_service_account_of_the_workload() {
        let policies = POLICIES.replace("secretRef: {name: regcred}", "provider: aws");
        for (flag, annotation, label) in [
            (
                "aws=arn:aws:iam::123456789012:role/image-update",
                Some((
                    "eks.amazonaws.com/role-arn",
                    "arn:aws:iam::123456789012:role/image-update",
                )),
                false,
            ),
            ("aws=pod-identity", None, false),
            (
                "gcp=updater@proj.iam.gserviceaccount.com",
                Some((
                    "iam.gke.io/gcp-service-account",
                    "updater@proj.iam.gserviceaccount.com",
                )),
                false,
            ),
            (
                "azure=0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0",
                Some((
                    "azure.workload.identity/client-id",
                    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
                )),
                true,
            ),
        ] {
            let out = run(
                &[
                    ("auto.yaml", AUTOMATION),
                    ("repo.yaml", REPO),
                    ("defs.yaml", &policies),
                ],
                &Options {
                    cloud_identity: Some(flag.parse().unwrap()),
                    registry_providers: vec![(
                        "123456789012.dkr.ecr.eu-west-1.amazonaws.com".to_owned(),
                        image_update_registry::Provider::Aws,
                    )],
                    ..Options::default()
                },
            )
            .unwrap();
            let kinds: Vec<&str> = out
                .objects
                .iter()
                .map(|o| o["kind"].as_str().unwrap())
                .collect();
            assert_eq!(kinds, ["ConfigMap", "ServiceAccount", "CronJob"], "{flag}");
            let sa = &out.objects[1];
            assert_eq!(sa["metadata"]["name"], "image-update-apps");
            assert_eq!(sa["automountServiceAccountToken"], false);
            match annotation {
                Some((k, v)) => assert_eq!(sa["metadata"]["annotations"][k], v, "{flag}"),
                None => assert!(sa["metadata"].get("annotations").is_none(), "{flag}"),
            }
            let template = &out.objects[2]["spec"]["jobTemplate"]["spec"]["template"];
            assert_eq!(template["spec"]["serviceAccountName"], "image-update-apps");
            assert_eq!(
                template["metadata"]["labels"]["azure.workload.identity/use"] == "true",
                label,
                "{flag}"
            );
            let args = template["spec"]["containers"][0]["args"]
                .as_array()
                .unwrap();
            assert!(args.windows(2).any(|w| w[0] == "--registry-provider"
                && w[1] == "123456789012.dkr.ecr.eu-west-1.amazonaws.com=aws"));
            // No registry Secret is projected: the identity logs in.
            let sources = template["spec"]["volumes"][0]["projected"]["sources"]
                .as_array()
                .unwrap();
            assert_eq!(sources.len(), 1, "{flag}");
        }
        for bad in [
            "aws=role",
            "gcp=someone@example.com",
            "azure=not-a-guid",
            "ibm=x",
            "aws",
        ] {
            assert!(bad.parse::<CloudIdentity>().is_err(), "{bad}");
        }
    }

    #[test]
    fn one_automation_one_cronjob() {
        let out = run(
            &[
                ("auto.yaml", AUTOMATION),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
            ],
            &Options::default(),
        )
        .unwrap();
        let kinds: Vec<&str> = out
            .objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "CronJob"]);
        let cron = &out.objects[1];
        assert_eq!(cron["metadata"]["name"], "image-update-apps");
        assert_eq!(cron["metadata"]["namespace"], "flux-system");
        assert!(
            cron["spec"]["schedule"]
                .as_str()
                .unwrap()
                .ends_with("-59/10 * * * *")
        );
        assert_eq!(cron["spec"]["concurrencyPolicy"], "Forbid");
        let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        let env = pod["containers"][0]["env"].as_array().unwrap();
        assert!(env.iter().any(|e| e["name"] == "IMAGE_UPDATE_GIT_PASSWORD"
            && e["valueFrom"]["secretKeyRef"]["name"] == "git-token"));
        let sources = pod["volumes"][0]["projected"]["sources"]
            .as_array()
            .unwrap();
        assert_eq!(sources[1]["secret"]["name"], "regcred");
        let config = &out.objects[0]["data"];
        assert!(
            !config["gitrepository.yaml"]
                .as_str()
                .unwrap()
                .contains("secretRef")
        );
        assert!(
            config["policies.yaml"]
                .as_str()
                .unwrap()
                .contains("kind: ImagePolicy")
        );
        assert!(out.notes.is_empty());
    }

    #[test]
    fn objects_given_twice_are_one_when_the_same() {
        let once = run(
            &[
                ("auto.yaml", AUTOMATION),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
            ],
            &Options::default(),
        )
        .unwrap();
        // The same files twice, or a copy written differently: the same manifests.
        let copy = POLICIES.replace(
            "{name: app, namespace: flux-system}",
            "{namespace: flux-system, name: app}",
        );
        let twice = run(
            &[
                ("auto.yaml", AUTOMATION),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
                ("auto.yaml", AUTOMATION),
                ("flux/copy.yaml", &copy),
            ],
            &Options::default(),
        )
        .unwrap();
        assert_eq!(once.to_yaml(), twice.to_yaml());
        assert_eq!(
            once.objects[0]["data"]["policies.yaml"]
                .as_str()
                .unwrap()
                .matches("kind: ImageRepository")
                .count(),
            1
        );
        // A copy that differs: an error naming both places and the field, nothing made.
        let other = POLICIES.replace("'>=1.0.0'", "'>=2.0.0'");
        let errors = run(
            &[
                ("auto.yaml", AUTOMATION),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
                ("flux/other.yaml", &other),
            ],
            &Options::default(),
        )
        .unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            errors[0].starts_with(
                "flux/other.yaml:11:28: error: ImagePolicy flux-system/app is defined twice, and the definitions differ: /spec/policy/semver/range is \">=1.0.0\" at defs.yaml:11:28 but \">=2.0.0\" here"
            ),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn bad_input_is_an_error_at_its_place_and_nothing_is_made() {
        let missing_repo = run(
            &[("auto.yaml", AUTOMATION), ("defs.yaml", POLICIES)],
            &Options::default(),
        )
        .unwrap_err();
        assert_eq!(
            missing_repo,
            [
                "auto.yaml:6:14: error: ImageUpdateAutomation flux-system/apps: sourceRef names GitRepository flux-system/fleet, which is not among the inputs (give its file too)"
            ]
        );
        let bad_interval = AUTOMATION.replace("interval: 10m", "interval: 10 minutes");
        let errors = run(
            &[
                ("auto.yaml", &bad_interval),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
            ],
            &Options::default(),
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "auto.yaml:5:13: error: ImageUpdateAutomation flux-system/apps: spec.interval is missing or is not a duration such as 1m, 30m or 1h30m"
            ]
        );
        let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n";
        let errors = run(&[("s.yaml", secret)], &Options::default()).unwrap_err();
        assert!(
            errors[0].starts_with("s.yaml:1:1: error: a Secret: deploy writes no Secret"),
            "{errors:?}"
        );
        let fast = AUTOMATION.replace("interval: 10m", "interval: 30s");
        let errors = run(
            &[
                ("auto.yaml", &fast),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
            ],
            &Options::default(),
        )
        .unwrap_err();
        assert!(errors[0].contains("30s is under a minute"), "{errors:?}");
    }

    #[test]
    fn a_fleet_is_one_indexed_cronjob() {
        let second = AUTOMATION
            .replace("name: apps", "name: web")
            .replace("interval: 10m", "interval: 7m");
        let out = run(
            &[
                ("a.yaml", AUTOMATION),
                ("b.yaml", &second),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
            ],
            &Options {
                fleet: Some("fleet".to_owned()),
                state: true,
                ..Options::default()
            },
        )
        .unwrap();
        let kinds: Vec<&str> = out
            .objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "PersistentVolumeClaim", "CronJob"]);
        let job = &out.objects[2]["spec"]["jobTemplate"]["spec"];
        assert_eq!(job["completionMode"], "Indexed");
        assert_eq!(job["completions"], 2);
        let args = job["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap();
        assert_eq!(
            args[..3],
            [json!("job"), json!("--fleet"), json!("/config/fleet.yaml")]
        );
        assert!(args.contains(&json!("/state/$(JOB_COMPLETION_INDEX).json")));
        // The index lists the automations in their order, with their files.
        let index =
            crate::yaml::parse_one(out.objects[0]["data"]["fleet.yaml"].as_str().unwrap()).unwrap();
        assert_eq!(
            index.value["automations"][1]["automation"],
            "1/automation.yaml"
        );
        assert_eq!(index.value["automations"].as_array().map(Vec::len), Some(2));
        assert!(
            out.objects[2]["spec"]["schedule"]
                .as_str()
                .unwrap()
                .ends_with("/6 * * * *")
        );
        assert!(out.objects[0]["data"].get("1.automation.yaml").is_some());
        let other_secret = REPO
            .replace("name: fleet, namespace", "name: other, namespace")
            .replace("git-token", "other-token");
        let third = AUTOMATION
            .replace("name: apps", "name: db")
            .replace("name: fleet}", "name: other}");
        let errors = run(
            &[
                ("a.yaml", AUTOMATION),
                ("c.yaml", &third),
                ("repo.yaml", REPO),
                ("other.yaml", &other_secret),
                ("defs.yaml", POLICIES),
            ],
            &Options {
                fleet: Some("fleet".to_owned()),
                ..Options::default()
            },
        )
        .unwrap_err();
        assert!(errors[0].starts_with("c.yaml:1:1: error: ImageUpdateAutomation flux-system/db: a fleet's Pods share one environment"), "{errors:?}");
    }

    #[test]
    fn signing_keys_are_projected_with_their_passphrase() {
        let signed = AUTOMATION.replace(
            "      author: {name: bot, email: bot@example.com}\n",
            "      author: {name: bot, email: bot@example.com}\n      signingKey: {secretRef: {name: sign}, type: ssh}\n",
        );
        let out = run(
            &[
                ("auto.yaml", &signed),
                ("repo.yaml", REPO),
                ("defs.yaml", POLICIES),
            ],
            &Options::default(),
        )
        .unwrap();
        let pod = &out.objects[1]["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        let args = pod["containers"][0]["args"].as_array().unwrap();
        assert!(
            args.windows(2)
                .any(|w| w[0] == "--signing-key" && w[1] == "/config/signing-key")
        );
        let sources = pod["volumes"][0]["projected"]["sources"]
            .as_array()
            .unwrap();
        assert!(
            sources
                .iter()
                .any(|s| s["secret"]["name"] == "sign"
                    && s["secret"]["items"][0]["key"] == "identity")
        );
        let env = pod["containers"][0]["env"].as_array().unwrap();
        assert!(
            env.iter()
                .any(|e| e["name"] == "IMAGE_UPDATE_SIGNING_PASSPHRASE"
                    && e["valueFrom"]["secretKeyRef"]["key"] == "password")
        );
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let n = object_name(&format!("image-update-{}", "a".repeat(80)), "ns");
        assert!(n.len() <= MAX_NAME, "{n}");
        assert_ne!(
            n,
            object_name(&format!("image-update-{}", "a".repeat(81)), "ns")
        );
        assert_eq!(
            object_name("image-update-Web_App", "ns"),
            "image-update-web-app"
        );
    }
}
