//! [`UpdateConfig`]: the settings of one run, whatever front end built them,
//! and the one parser of each raw value they are made of.
//!
//! Each front end converts its own input into this one type (flags, a KRM
//! functionConfig, Action inputs, Job settings), calling the same parsers
//! for the same kind of value ([`PolicyValue::parse`],
//! [`PolicyValue::from_entry`], [`UpdateConfig::select`],
//! [`commit_value`], [`namespaced_name`], [`duration`]) and adding only
//! its own name for the value to their errors, so nothing downstream checks
//! its input again. No clap types here.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use image_update_registry::settings::{AgeSource, Require, SupplyChainOverrides};
use image_update_verify::{SignerNames, SignerValues};

use crate::automation::Automation;
pub(crate) use crate::outcome::Mode;
use crate::policies::{ImageRef, PolicyKey, Scope, ScopeNamespace};
use crate::render::message::MessageConfig;
use crate::render::report::Format;

/// Everything one run needs besides its input.
#[derive(Debug, Clone, Default)]
pub struct UpdateConfig {
    /// Policy results given as values (`--policy`, a functionConfig's
    /// `policies`); always in scope.
    pub values: Vec<PolicyValue>,
    /// Files of Flux ImagePolicy objects (and, when fetching, definitions);
    /// `-` is stdin.
    pub policy_files: Vec<PathBuf>,
    /// Policy documents given with the settings themselves: a KRM
    /// functionConfig that is a KubeSphere ImageUpdater, whose `images` are
    /// definitions. One that is also among the input's documents (the same
    /// object, with the same content: `crate::same_object`) is read once;
    /// with other content, it is an error.
    pub documents: Vec<crate::policies::PolicyDocument>,
    /// Which ImagePolicies are used.
    pub scope: Scope,
    /// Only files (or ResourceList items) under this path, relative to the
    /// input and normalised, are edited; `""` is everything.
    pub update_path: String,
    /// The automation the run follows, if any (for the commit message and
    /// the Job; its scope, path and suspension are already applied).
    pub automation: Option<Automation>,
    /// Compute policy results from registries.
    pub fetch: Option<FetchSettings>,
    /// Render a commit message for the changes (when there are some).
    pub message: Option<MessageConfig>,
    pub mode: Mode,
    /// How markers are applied (`--no-downgrade`).
    pub plan: crate::updater::plan::PlanOptions,
    /// Write nothing at all (not even the outputs) when any warning is
    /// raised; the front end then fails.
    pub fail_on_warnings: bool,
    pub outputs: Outputs,
    /// The most bytes one input file may have (tree files, policy files,
    /// stdin as a file).
    pub max_file_size: crate::input::SizeLimit,
    /// Results fetched by an earlier run and given again as `values` (the
    /// Job's retry after a lost push race), with what the supply-chain gate
    /// found then: the report and the commit message still say it.
    pub carried: Vec<crate::reflector::Resolved>,
    /// How Argo CD Applications are read and written back.
    pub argocd: ArgoSettings,
}

impl UpdateConfig {
    /// Whether each change's provenance is gathered: fetching, when asked
    /// (`--provenance`, a pull request) or when the commit template uses
    /// `.Provenance`.
    #[must_use]
    pub fn wants_provenance(&self) -> bool {
        self.fetch.as_ref().is_some_and(|f| {
            f.provenance
                || self
                    .message
                    .as_ref()
                    .and_then(|m| m.template.as_deref())
                    .is_some_and(|t| t.contains("Provenance"))
        })
    }
}

/// The settings of Argo CD Applications' write-back (`docs/argocd.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgoSettings {
    /// The namespace Argo CD runs in (`--argocd-namespace`): Applications
    /// without a namespace are in it, and it names the override files.
    pub controller_namespace: String,
    /// Argo CD Image Updater's commit message template
    /// (`--argocd-commit-template`); `None` is its default message.
    pub commit_template: Option<String>,
    /// The repository and branch a Job writes: Applications that write back
    /// to git elsewhere are left alone.
    pub git_scope: Option<crate::argocd::catalog::GitScope>,
    /// Where Kubernetes Secrets are mounted (`--secrets-dir`), each at
    /// `DIR/NAME` with its keys as files: the ImageUpdater CRD's
    /// `imagesVerification.cosignKey` is read from `DIR/NAME/KEY` when no
    /// Secret manifest among the policy documents holds it.
    pub secrets_dir: Option<PathBuf>,
}

impl Default for ArgoSettings {
    fn default() -> Self {
        Self {
            controller_namespace: DEFAULT_ARGOCD_NAMESPACE.to_owned(),
            commit_template: None,
            git_scope: None,
            secrets_dir: None,
        }
    }
}

/// The namespace Argo CD runs in unless told otherwise.
pub(crate) const DEFAULT_ARGOCD_NAMESPACE: &str = "argocd";

/// A Kubernetes namespace name (`--argocd-namespace`, a functionConfig's
/// `argocdNamespace`): a DNS label, 1 to 63 lowercase letters, digits and
/// `-`, starting and ending with a letter or digit.
///
/// # Errors
/// Anything else.
pub(crate) fn namespace(text: &str) -> Result<String, ValueError> {
    if crate::object::dns_label(text) {
        Ok(text.to_owned())
    } else {
        Err(ValueError::NotNamespace(text.to_owned()))
    }
}

impl UpdateConfig {
    /// Follow `automation`: its namespace scopes the policies, its
    /// `spec.policySelector` selects them (together with any selector
    /// already set), its `spec.update.path` limits the edits.
    #[must_use]
    pub fn with_automation(mut self, automation: Automation) -> Self {
        self.scope.namespace = Some(ScopeNamespace {
            namespace: automation.namespace.clone(),
            owner: automation.describe(),
        });
        if let Some(selector) = &automation.selector {
            self.scope.selectors.push((
                format!("{} spec.policySelector", automation.describe()),
                selector.clone(),
            ));
        }
        self.update_path.clone_from(&automation.update_path);
        self.automation = Some(automation);
        self
    }

    /// Use only the ImagePolicies `selector` matches (besides any selector
    /// already set); `source` names it in messages.
    pub fn select(
        &mut self,
        source: impl Into<String>,
        selector: crate::policies::selector::Selector,
    ) {
        self.scope.selectors.push((source.into(), selector));
    }

    /// The automation, when it is suspended (nothing is edited then).
    #[must_use]
    pub fn suspended(&self) -> Option<&Automation> {
        self.automation.as_ref().filter(|a| a.suspend)
    }
}

/// One policy result given as a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyValue {
    pub key: PolicyKey,
    pub image: ImageRef,
    /// `--policy ns:p=img:1`, `ConfigMap fn data "ns:p"`.
    pub source: String,
}

impl PolicyValue {
    /// `NAMESPACE:NAME=IMAGE:TAG[@DIGEST]` (a flag, an Action input line),
    /// given by `source`.
    ///
    /// # Errors
    /// Not `KEY=REFERENCE`, or as [`PolicyValue::from_entry`].
    pub fn parse(spec: &str, source: impl Into<String>) -> Result<Self, ValueError> {
        let (key, reference) = spec.split_once('=').ok_or(ValueError::NotPolicyValue)?;
        Self::from_entry(key, reference, source)
    }

    /// A policy key and an image reference (a functionConfig's map entry),
    /// given by `source`.
    ///
    /// # Errors
    /// A key that is not `NAMESPACE:NAME`; an invalid image reference.
    pub fn from_entry(
        key: &str,
        reference: &str,
        source: impl Into<String>,
    ) -> Result<Self, ValueError> {
        let parsed =
            PolicyKey::parse(key).ok_or_else(|| ValueError::NotPolicyKey(key.to_owned()))?;
        let image = ImageRef::parse(reference).map_err(ValueError::Image)?;
        Ok(Self {
            key: parsed,
            image,
            source: source.into(),
        })
    }
}

/// A raw value that does not parse. Front ends say which value it was
/// (`--policy "x"`, `input commit-values`, `ConfigMap fn data "x"`) before
/// this message.
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("expected NAMESPACE:NAME=IMAGE:TAG[@DIGEST]")]
    NotPolicyValue,
    #[error("{0:?} is not NAMESPACE:NAME")]
    NotPolicyKey(String),
    #[error(transparent)]
    Image(crate::policies::image_ref::RefError),
    #[error("expected KEY=VALUE")]
    NotKeyValue,
    #[error("expected NAMESPACE/NAME")]
    NotNamespacedName,
    #[error("{0:?} is not a duration like 30s, 5m or 1h")]
    NotDuration(String),
    #[error("{0}")]
    Setting(String),
    #[error("{0:?} is not a namespace name (lowercase letters, digits and `-`, at most 63)")]
    NotNamespace(String),
}

/// A commit message value, `KEY=VALUE` (the value may hold `=`).
///
/// # Errors
/// No `=`.
pub(crate) fn commit_value(pair: &str) -> Result<(String, String), ValueError> {
    pair.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or(ValueError::NotKeyValue)
}

/// `NAMESPACE/NAME`, both parts non-empty.
///
/// # Errors
/// Anything else.
pub(crate) fn namespaced_name(text: &str) -> Result<(String, String), ValueError> {
    text.split_once('/')
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains('/'))
        .map(|(ns, name)| (ns.to_owned(), name.to_owned()))
        .ok_or(ValueError::NotNamespacedName)
}

/// A duration such as `30s`, `5m`, `1h30m` (as the registry settings file
/// writes them).
///
/// # Errors
/// Anything else.
pub(crate) fn duration(text: &str) -> Result<Duration, ValueError> {
    image_update_registry::settings::parse_duration(text)
        .ok_or_else(|| ValueError::NotDuration(text.to_owned()))
}

/// Where a minimum release age is measured: `registry` (the vendor's push
/// time) or `builder` (the image's own, builder-controlled, creation time).
///
/// # Errors
/// Anything else.
pub(crate) fn age_source(text: &str) -> Result<AgeSource, ValueError> {
    text.parse().map_err(ValueError::Setting)
}

/// Whether `any` required signer suffices or `all` must have signed.
///
/// # Errors
/// Anything else.
pub(crate) fn verify_require(text: &str) -> Result<Require, ValueError> {
    text.parse().map_err(ValueError::Setting)
}

/// The supply-chain settings of a front end (flags, function config keys,
/// Action inputs), which apply to every fetched policy over the registry
/// settings file's rules: `signers` (named as the front end calls them),
/// a minimum release age and where it is measured. `origin` says where
/// they were given, in later messages.
///
/// # Errors
/// A signer value that is wrong ([`SignerValues::into_config`]).
pub(crate) fn supply_chain(
    signers: SignerValues,
    names: &SignerNames<'_>,
    min_age: Option<Duration>,
    age_source: Option<AgeSource>,
    origin: &str,
) -> Result<SupplyChainOverrides, ValueError> {
    let verify = signers
        .into_config(names)
        .map_err(ValueError::Setting)?
        .map(|mut v| {
            v.origin = Some(origin.to_owned());
            v
        });
    Ok(SupplyChainOverrides {
        verify,
        min_age,
        age_source,
    })
}

/// Registry settings of a fetching run.
#[derive(Debug, Clone, Default)]
pub struct FetchSettings {
    /// The registry settings file.
    pub registry_config: Option<PathBuf>,
    pub cache_dir: Option<PathBuf>,
    pub cache_ttl: Option<Duration>,
    /// A deadline for all the fetching of the run (overrides the settings
    /// file's `deadline`).
    pub deadline: Option<Duration>,
    /// Told what the registry client does (a front end's progress display).
    pub observer: Option<Observer>,
    /// The front end's supply-chain settings, over the settings file's.
    pub supply_chain: SupplyChainOverrides,
    /// Who logs in to which registry (`--registry-provider HOST=PROVIDER`),
    /// over the settings file's `provider`s.
    pub providers: Vec<(String, image_update_registry::Provider)>,
    /// Credential programs allowed (`--allow-credential-program`), besides
    /// the settings file's.
    pub allowed_programs: Vec<image_update_registry::credentials::AllowedProgram>,
    /// Gather each change's provenance (a request body, a commit template
    /// or a report asks for it): up to 3 more registry requests per image.
    pub provenance: bool,
}

/// An observer of the registry client, shared.
#[derive(Clone)]
pub struct Observer(pub Arc<dyn image_update_registry::Observer>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// Where the results go besides the input itself. A path of `-` means
/// stdout: the operation renders it into the outcome for the front end to
/// print. These are written under `DryRun` and `Check` too: they were asked
/// for, and are not changes to the input.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The change report and its format.
    pub report: Option<(PathBuf, Format)>,
    /// The fetched policies as ImagePolicy objects with their status.
    pub emit_policies: Option<PathBuf>,
    /// The rendered commit message (empty when nothing changed).
    pub commit_message: Option<PathBuf>,
    /// Write changed files under this directory (same relative paths)
    /// instead of in place.
    pub output_dir: Option<PathBuf>,
    /// Keep each changed file's old text in the outcome (for a diff).
    pub keep_old_text: bool,
}
