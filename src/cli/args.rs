//! The command line's arguments, and their conversion into the settings of
//! a run: every `*Args` struct shared by several subcommands is defined
//! here, next to the one function that turns it into library settings
//! (ripgrep's low-level arguments becoming high-level ones), so that no
//! subcommand imports another. Each raw value goes through the one parser
//! of its kind in [`crate::operation::config`].

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::automation::Automation;
use crate::error::Error;
use crate::input::SizeLimit;
use crate::operation::config::{self, FetchSettings, Mode, Outputs, PolicyValue, UpdateConfig};
use crate::policies::selector::Selector;
use crate::render::message::MessageConfig;

/// `image-update completions SHELL`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `image-update man [COMMAND]`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// A subcommand whose page to print (image-update-COMMAND(1)) instead
    /// of the program's.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// `image-update action` takes no arguments: its inputs come from the
/// runner's `INPUT_*` variables.
#[derive(Debug, Args)]
pub(crate) struct ActionArgs {}

/// Registry client options (`update --fetch`, `policy`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct RegistryArgs {
    /// Registry settings file (per-registry insecure, CA file, page size,
    /// concurrency, rate; retries; cache; exclusion list); see docs/registry.md.
    #[arg(long, value_name = "FILE", help_heading = "Registry")]
    pub registry_config: Option<PathBuf>,

    /// Cache tag lists under DIR (overrides the settings file).
    #[arg(long, value_name = "DIR", help_heading = "Registry")]
    pub cache_dir: Option<PathBuf>,

    /// How long a cached tag list is used, e.g. 5m, 1h (default 5m).
    #[arg(long, value_name = "DURATION", help_heading = "Registry", value_parser = parse_duration)]
    pub cache_ttl: Option<std::time::Duration>,

    /// Give up fetching after DURATION in all (every registry, every
    /// retry), e.g. 2m; 0 for no limit (default 5m, or the settings file's
    /// `deadline`).
    #[arg(long, value_name = "DURATION", help_heading = "Registry", value_parser = parse_duration)]
    pub fetch_timeout: Option<std::time::Duration>,

    /// Log in to the registry HOST with the workload's cloud identity:
    /// aws (ECR), gcp (Artifact Registry, GCR), azure (ACR), or generic
    /// (its own credentials); repeatable. A definition's spec.provider
    /// other than generic wins for its repository.
    #[arg(long, value_name = "HOST=PROVIDER", help_heading = "Registry", value_parser = parse_registry_provider)]
    pub registry_provider: Vec<(String, image_update_registry::Provider)>,

    /// Allow an Argo CD `pull-secret: ext:PATH` to run this program
    /// (an absolute path, outside the tree), for the registry HOST only
    /// when given; repeatable.
    #[arg(long, value_name = "[HOST=]PATH", help_heading = "Registry", value_parser = parse_allowed_program)]
    pub allow_credential_program: Vec<image_update_registry::credentials::AllowedProgram>,

    /// Gather where each changed image was built from (source, revision,
    /// version, commit and compare links, signer, release time) for the
    /// report and the commit message: up to 3 more registry requests per
    /// image. On by itself for a pull request and for a commit template
    /// that uses `.Provenance`.
    #[arg(long, help_heading = "Registry")]
    pub provenance: bool,

    #[command(flatten)]
    pub supply_chain: SupplyChainArgs,
}

pub(crate) fn parse_registry_provider(
    text: &str,
) -> Result<(String, image_update_registry::Provider), String> {
    image_update_registry::cloud::parse_host_provider(text)
}

fn parse_allowed_program(
    text: &str,
) -> Result<image_update_registry::credentials::AllowedProgram, String> {
    text.parse()
}

/// The supply-chain gate's options (`update --fetch`, `policy`, `job
/// --fetch`): required signers and a minimum release age for every
/// fetched policy. Each one given replaces the same setting of every
/// `supply_chain` rule of the registry settings file (docs/security.md).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct SupplyChainArgs {
    /// Require a signature by this public key (PEM: ECDSA P-256/P-384,
    /// Ed25519, RSA; cosign.pub); repeatable.
    #[arg(
        long = "verify-key",
        value_name = "FILE",
        help_heading = "Supply chain"
    )]
    pub keys: Vec<PathBuf>,

    /// Require a keyless (Fulcio) signature whose certificate identity is
    /// SUBJECT, e.g. a workflow URL; repeatable (with --verify-issuer).
    #[arg(
        long = "verify-identity",
        value_name = "SUBJECT",
        help_heading = "Supply chain"
    )]
    pub identities: Vec<String>,

    /// As --verify-identity, with a regular expression matching the whole
    /// identity; repeatable.
    #[arg(
        long = "verify-identity-regexp",
        value_name = "RE",
        help_heading = "Supply chain"
    )]
    pub identity_regexps: Vec<String>,

    /// The OIDC issuer of the keyless identities (GitHub Actions:
    /// `https://token.actions.githubusercontent.com`).
    #[arg(long, value_name = "ISSUER", help_heading = "Supply chain")]
    pub verify_issuer: Option<String>,

    /// As --verify-issuer, with a regular expression matching the whole
    /// issuer.
    #[arg(
        long,
        value_name = "RE",
        help_heading = "Supply chain",
        conflicts_with = "verify_issuer"
    )]
    pub verify_issuer_regexp: Option<String>,

    /// Sigstore trusted_root.json for keyless signatures (its Fulcio CAs and
    /// transparency-log keys); default: the settings file's.
    #[arg(long, value_name = "FILE", help_heading = "Supply chain")]
    pub trusted_root: Option<PathBuf>,

    /// Whether any one signer suffices or all must have signed (default
    /// any).
    #[arg(long, value_name = "any|all", help_heading = "Supply chain", value_parser = parse_require)]
    pub verify_require: Option<image_update_registry::settings::Require>,

    /// Skip candidates released less than DURATION ago (e.g. 72h, 7d), by a
    /// trusted time (--age-source).
    #[arg(long, value_name = "DURATION", help_heading = "Supply chain", value_parser = parse_duration)]
    pub min_age: Option<std::time::Duration>,

    /// Where release times come from: registry (the vendor's push-time
    /// API, see docs/registry.md; default) or builder (the image's own
    /// creation time, set by whoever built it).
    #[arg(long, value_name = "registry|builder", help_heading = "Supply chain", value_parser = parse_age_source)]
    pub age_source: Option<image_update_registry::settings::AgeSource>,
}

/// A `--verify-require` flag ([`config::verify_require`]), for clap.
fn parse_require(s: &str) -> Result<image_update_registry::settings::Require, String> {
    config::verify_require(s).map_err(|e| e.to_string())
}

/// An `--age-source` flag ([`config::age_source`]), for clap.
fn parse_age_source(s: &str) -> Result<image_update_registry::settings::AgeSource, String> {
    config::age_source(s).map_err(|e| e.to_string())
}

impl SupplyChainArgs {
    /// The first of these flags given, if any (they act on fetched
    /// policies only).
    #[must_use]
    pub(crate) fn first_given(&self) -> Option<&'static str> {
        [
            (!self.keys.is_empty(), "--verify-key"),
            (!self.identities.is_empty(), "--verify-identity"),
            (
                !self.identity_regexps.is_empty(),
                "--verify-identity-regexp",
            ),
            (self.verify_issuer.is_some(), "--verify-issuer"),
            (
                self.verify_issuer_regexp.is_some(),
                "--verify-issuer-regexp",
            ),
            (self.trusted_root.is_some(), "--trusted-root"),
            (self.verify_require.is_some(), "--verify-require"),
            (self.min_age.is_some(), "--min-age"),
            (self.age_source.is_some(), "--age-source"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// The settings these flags give (key files and the trusted root read
    /// and checked; relative paths from the current directory).
    ///
    /// # Errors
    /// A usage error naming the flag: a key or trusted root that does not
    /// read, an invalid regular expression, an identity without an issuer.
    pub(crate) fn overrides(
        &self,
    ) -> Result<image_update_registry::settings::SupplyChainOverrides, Error> {
        use image_update_verify::{KeySource, Pattern, RootSource, SignerNames, SignerValues};
        let signers = SignerValues {
            keys: self.keys.iter().cloned().map(KeySource::File).collect(),
            identities: self
                .identities
                .iter()
                .cloned()
                .map(Pattern::Exact)
                .chain(self.identity_regexps.iter().cloned().map(Pattern::Regexp))
                .collect(),
            issuer: self
                .verify_issuer
                .clone()
                .map(Pattern::Exact)
                .or_else(|| self.verify_issuer_regexp.clone().map(Pattern::Regexp)),
            trusted_root: self.trusted_root.clone().map(RootSource::File),
            require: self.verify_require,
        };
        let names = SignerNames {
            key: "--verify-key",
            identity: "--verify-identity",
            identity_regexp: "--verify-identity-regexp",
            issuer: "--verify-issuer",
            issuer_regexp: "--verify-issuer-regexp",
            trusted_root: "--trusted-root",
            require: "--verify-require",
        };
        config::supply_chain(
            signers,
            &names,
            self.min_age,
            self.age_source,
            "the --verify-* flags",
        )
        .map_err(|e| Error::Usage(e.to_string()))
    }
}

/// A duration flag ([`crate::operation::config::duration`]), for clap.
pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crate::operation::config::duration(s).map_err(|e| e.to_string())
}

/// `image-update policy IMAGE`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PolicyCommandArgs {
    /// The image repository, without tag (e.g. ghcr.io/acme/app, nginx).
    pub image: String,

    #[command(flatten)]
    pub policy: super::policy_args::PolicyArgs,

    #[command(flatten)]
    pub registry: RegistryArgs,

    /// Follow this alias (latest, stable): choose the tag, among those the
    /// policy admits, with the alias's digest, and show which candidates
    /// match it.
    #[arg(long, value_name = "TAG", help_heading = "Supply chain")]
    pub alias: Option<String>,

    /// Compare the alias's and the candidates' images for this platform
    /// (os/arch[/variant]) instead of their indexes.
    #[arg(
        long,
        value_name = "PLATFORM",
        help_heading = "Supply chain",
        requires = "alias"
    )]
    pub alias_platform: Option<String>,

    /// The most bytes read from --tags-file.
    #[arg(long, value_name = "SIZE", env = "IMAGE_UPDATE_MAX_FILE_SIZE", default_value = "64MiB", value_parser = SizeLimit::parse)]
    pub max_file_size: SizeLimit,
}

/// `image-update fn` takes no arguments: everything comes in the
/// ResourceList's functionConfig.
#[derive(Debug, Args)]
pub(crate) struct FnArgs {}

/// `image-update update`.
#[derive(Debug, Args)]
pub(crate) struct UpdateArgs {
    /// Directory or file to update.
    #[arg(default_value = ".")]
    pub path: PathBuf,

    #[command(flatten)]
    pub source: PolicySourceArgs,

    /// Follow a Flux ImageUpdateAutomation (v1 or v1beta2): its namespace
    /// scopes the ImagePolicies, spec.policySelector selects them,
    /// spec.update.path (under PATH) limits the edits, spec.suspend edits
    /// nothing.
    #[arg(long, value_name = "FILE")]
    pub automation: Option<PathBuf>,

    /// Write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print a unified diff of every change on stdout.
    #[arg(long)]
    pub diff: bool,

    /// Write nothing; exit 3 if any field would change.
    #[arg(long)]
    pub check: bool,

    /// Write changed files under DIR (same relative paths) instead of in place.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dry_run", "check"])]
    pub output_dir: Option<PathBuf>,

    /// Write the change report to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE|-")]
    pub report: Option<PathBuf>,

    /// Format of the change report.
    #[arg(long, value_enum, default_value_t = ReportFormat::Json)]
    pub report_format: ReportFormat,

    /// Print only warnings and errors (and, with --check, the pending
    /// changes).
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,

    /// Leave a marker alone, with a warning, when its change would move a
    /// tag backwards (a lower semver); without it such a change is made,
    /// with a warning.
    #[arg(long)]
    pub no_downgrade: bool,

    /// Exit 1, writing nothing, when any warning is raised.
    #[arg(long)]
    pub fail_on_warnings: bool,

    /// Colour stderr (and a --diff on a terminal): auto (when it is a
    /// terminal and NO_COLOR is unset), always or never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Also print skipped files and counts.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// The most bytes read from one file (under PATH, --policies, --automation,
    /// stdin): a larger one is an error. Units KiB, MiB, GiB.
    #[arg(long, value_name = "SIZE", env = "IMAGE_UPDATE_MAX_FILE_SIZE", default_value = "64MiB", value_parser = SizeLimit::parse)]
    pub max_file_size: SizeLimit,

    /// Compute policy results from registries: ImageRepository/ImagePolicy
    /// and KubeSphere ImageUpdater definitions in PATH and --policies files
    /// (see docs/fetch.md).
    #[arg(long, help_heading = "Fetching")]
    pub fetch: bool,

    /// Write the fetched ImagePolicies with their computed status to FILE
    /// (multi-document YAML; `-` for stdout).
    #[arg(
        long,
        value_name = "FILE|-",
        requires = "fetch",
        help_heading = "Fetching"
    )]
    pub emit_policies: Option<PathBuf>,

    #[command(flatten)]
    pub registry: RegistryArgs,

    #[command(flatten)]
    pub message: MessageArgs,

    /// Write the rendered commit message to FILE (`-` for stdout; empty
    /// when nothing changed).
    #[arg(long, value_name = "FILE|-", help_heading = "Commit message")]
    pub commit_message_file: Option<PathBuf>,

    #[command(flatten)]
    pub argocd: ArgoArgs,
}

/// Argo CD Applications (`update`, `job`; docs/argocd.md).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ArgoArgs {
    /// The namespace Argo CD runs in: Applications and ImageUpdaters
    /// without a namespace are in it, and it names the override files
    /// (.argocd-source-APP.yaml for Applications in it,
    /// .argocd-source-NAMESPACE_APP.yaml for others). Default: argocd.
    #[arg(long, value_name = "NAMESPACE", value_parser = parse_namespace, help_heading = "Argo CD")]
    pub argocd_namespace: Option<String>,

    /// Argo CD Image Updater's commit message template (Go text/template
    /// over .AppName and .AppChanges), rendered for each Argo CD Application
    /// that changes when no --commit-template is given; default: Argo CD
    /// Image Updater's default message.
    #[arg(long, value_name = "FILE", help_heading = "Argo CD")]
    pub argocd_commit_template: Option<PathBuf>,

    /// Where Kubernetes Secrets are mounted, each at DIR/NAME (a Secret
    /// volume): an ImageUpdater's imagesVerification.cosignKey {secretName,
    /// key} is read from DIR/SECRETNAME/KEY when no Secret manifest in the
    /// --policies files holds it. Needs --fetch.
    #[arg(long, value_name = "DIR", help_heading = "Argo CD")]
    pub secrets_dir: Option<PathBuf>,
}

/// A namespace flag ([`crate::operation::config::namespace`]), for clap.
pub(crate) fn parse_namespace(s: &str) -> Result<String, String> {
    crate::operation::config::namespace(s).map_err(|e| e.to_string())
}

impl ArgoArgs {
    /// Sets the Argo CD settings of `config` (whose fetch settings are set
    /// already).
    ///
    /// # Errors
    /// An unreadable template file (or one over `limit`); `--secrets-dir`
    /// without `--fetch`.
    pub(crate) fn apply(&self, config: &mut UpdateConfig, limit: SizeLimit) -> Result<(), Error> {
        if let Some(namespace) = &self.argocd_namespace {
            config.argocd.controller_namespace.clone_from(namespace);
        }
        if let Some(file) = &self.argocd_commit_template {
            config.argocd.commit_template = Some(crate::input::read_text(file, limit)?);
        }
        if let Some(dir) = &self.secrets_dir {
            // Only a fetched result is checked against the key it gives.
            if config.fetch.is_none() {
                return Err(Error::Usage(
                    "--secrets-dir gives the keys fetched images are checked against: add --fetch"
                        .to_owned(),
                ));
            }
            config.argocd.secrets_dir = Some(dir.clone());
        }
        Ok(())
    }
}

/// Where the policy results come from (`update`, `job`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct PolicySourceArgs {
    /// A policy result, `NAMESPACE:NAME=IMAGE:TAG[@DIGEST]` (repeatable).
    #[arg(long = "policy", value_name = "NS:NAME=IMAGE:TAG[@DIGEST]")]
    pub policies: Vec<String>,

    /// Flux ImagePolicy objects with status (YAML; `-` reads stdin; repeatable).
    #[arg(long = "policies", value_name = "FILE")]
    pub policy_files: Vec<PathBuf>,

    /// Label selector over the ImagePolicies (from --policies, and the
    /// definitions with --fetch; kubectl -l syntax). --policy values are
    /// always used.
    #[arg(long, short = 'l', value_name = "EXPR")]
    pub selector: Option<String>,
}

/// What a commit message is made of (`update`, `message`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct MessageArgs {
    /// Go text/template for the commit message, as Flux's
    /// spec.git.commit.messageTemplate (`-` reads stdin); default: the
    /// automation's template, else Flux's default message.
    #[arg(
        long = "commit-template",
        visible_alias = "template",
        value_name = "FILE|-",
        help_heading = "Commit message"
    )]
    pub template: Option<PathBuf>,

    /// A `.Values` entry, KEY=VALUE (repeatable; added to, or replacing,
    /// the automation's messageTemplateValues).
    #[arg(
        long = "commit-value",
        visible_alias = "value",
        value_name = "KEY=VALUE",
        help_heading = "Commit message"
    )]
    pub values: Vec<String>,

    /// `.AutomationObject` when no --automation gives it: NAMESPACE/NAME.
    #[arg(long, value_name = "NAMESPACE/NAME", help_heading = "Commit message")]
    pub automation_object: Option<String>,
}

/// `image-update message`.
#[derive(Debug, Args)]
pub(crate) struct MessageCommandArgs {
    /// A report saved by `update --report` (JSON or YAML; `-` reads stdin).
    #[arg(long, value_name = "FILE|-")]
    pub report: PathBuf,

    /// The most bytes read from one file (the report, the template, the
    /// automation). Units KiB, MiB, GiB.
    #[arg(long, value_name = "SIZE", env = "IMAGE_UPDATE_MAX_FILE_SIZE", default_value = "64MiB", value_parser = SizeLimit::parse)]
    pub max_file_size: SizeLimit,

    /// The ImageUpdateAutomation whose template, values and name are used
    /// (flags override them).
    #[arg(long, value_name = "FILE")]
    pub automation: Option<PathBuf>,

    #[command(flatten)]
    pub message: MessageArgs,
}

/// An ImageUpdater's `images` are its policies: its file (`--automation`)
/// is read with the policy files too (for `--fetch`).
pub(crate) fn add_updater_definitions(config: &mut UpdateConfig, file: &std::path::Path) {
    if config
        .automation
        .as_ref()
        .is_some_and(|a| a.kind == crate::automation::AutomationKind::KubeSphere)
        && !config.policy_files.iter().any(|f| f == file)
    {
        config.policy_files.push(file.to_path_buf());
    }
}

/// `update --help`, after the options.
pub(crate) const UPDATE_AFTER_HELP: &str = "\
Exit status:
  0  done (with or without changes; warnings included unless --fail-on-warnings)
  1  error: invalid input or policies, a registry failure, a write failure, or
     --fail-on-warnings with warnings (nothing is written then)
  2  usage error (a malformed flag)
  3  --check found fields that would change

Examples:
  image-update update ./clusters/prod --policy flux-system:app=ghcr.io/acme/app:1.4.2
  kubectl get imagepolicies -A -o yaml | image-update update . --policies - --selector env=prod
  image-update update . --fetch --check -q           # CI gate: fail when manifests lag behind
  image-update update . --automation flux/automation.yaml --policies flux/policies.yaml \\
      --commit-message-file msg.txt --report report.json";

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour a stream that is (or is not) a terminal: `auto`
    /// colours terminals when `NO_COLOR` is unset or empty.
    #[must_use]
    pub(crate) fn enabled(self, is_terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }

    /// The `--color` of the command line, read before clap runs (the log
    /// subscriber is set up first): `auto` when absent or unreadable.
    #[must_use]
    pub(crate) fn from_args() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let value = args.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix("--color=")
                .map(str::to_owned)
                .or_else(|| (a == "--color").then(|| args.get(i + 1).cloned()).flatten())
        });
        match value.as_deref() {
            Some("always") => ColorChoice::Always,
            Some("never") => ColorChoice::Never,
            _ => ColorChoice::Auto,
        }
    }
}

/// Formats of the change report on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReportFormat {
    #[default]
    Json,
    Yaml,
}

impl From<ReportFormat> for crate::render::report::Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Json => Self::Json,
            ReportFormat::Yaml => Self::Yaml,
        }
    }
}

impl UpdateArgs {
    /// The run's settings.
    ///
    /// # Errors
    /// Usage errors (malformed `--policy`, `--selector`, several outputs on
    /// stdout); an unreadable or invalid `--automation` file.
    pub(crate) fn config(&self) -> Result<UpdateConfig, Error> {
        let stdout = Path::new("-");
        let on_stdout: Vec<&str> = [
            (self.diff, "--diff"),
            (self.report.as_deref() == Some(stdout), "--report -"),
            (
                self.emit_policies.as_deref() == Some(stdout),
                "--emit-policies -",
            ),
            (
                self.commit_message_file.as_deref() == Some(stdout),
                "--commit-message-file -",
            ),
            (
                self.message.template.as_deref() == Some(stdout)
                    && self.source.policy_files.iter().any(|f| f == stdout),
                "--commit-template - and --policies -",
            ),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if on_stdout.len() > 1 {
            return Err(Error::Usage(format!(
                "{} all write to stdout; pick one",
                on_stdout.join(" and ")
            )));
        }
        let mut config = UpdateConfig {
            fetch: self.registry.fetch_settings_if(self.fetch)?,
            mode: if self.check {
                Mode::Check
            } else if self.dry_run {
                Mode::DryRun
            } else {
                Mode::Apply
            },
            plan: crate::updater::plan::PlanOptions {
                no_downgrade: self.no_downgrade,
            },
            fail_on_warnings: self.fail_on_warnings,
            outputs: Outputs {
                report: self
                    .report
                    .clone()
                    .map(|path| (path, self.report_format.into())),
                emit_policies: self.emit_policies.clone(),
                commit_message: self.commit_message_file.clone(),
                output_dir: self.output_dir.clone(),
                keep_old_text: self.diff,
            },
            max_file_size: self.max_file_size,
            ..UpdateConfig::default()
        };
        self.source.apply(&mut config)?;
        self.argocd.apply(&mut config, self.max_file_size)?;
        if let Some(file) = &self.automation {
            config = config
                .with_automation(crate::automation_file::read_file(file, self.max_file_size)?);
            add_updater_definitions(&mut config, file);
        }
        if self.commit_message_file.is_some() {
            config.message = Some(
                self.message
                    .message_config(config.automation.as_ref(), self.max_file_size)?,
            );
        }
        Ok(config)
    }
}

impl PolicySourceArgs {
    /// Sets the policy values, the policy files and the `--selector` of
    /// `config`.
    ///
    /// # Errors
    /// A malformed `--policy` or `--selector`.
    pub(crate) fn apply(&self, config: &mut UpdateConfig) -> Result<(), Error> {
        config.values = self
            .policies
            .iter()
            .map(|flag| {
                PolicyValue::parse(flag, format!("--policy {flag}")).map_err(|e| {
                    Error::Usage(format!(
                        "--policy {flag:?}: {}",
                        crate::diagnostic::one_line(&e)
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        config.policy_files.clone_from(&self.policy_files);
        if let Some(expr) = &self.selector {
            let selector =
                Selector::parse(expr).map_err(|e| Error::Usage(format!("--selector: {e}")))?;
            config.select("--selector", selector);
        }
        Ok(())
    }
}

impl RegistryArgs {
    /// The registry settings of `--fetch`.
    ///
    /// # Errors
    /// Supply-chain flags that are wrong ([`SupplyChainArgs::overrides`]).
    pub(crate) fn fetch_settings(&self) -> Result<FetchSettings, Error> {
        self.fetch_settings_if(true).map(Option::unwrap_or_default)
    }

    /// The registry settings of a run that fetches when `fetch` (`--fetch`).
    ///
    /// # Errors
    /// Supply-chain flags without `--fetch` (they act on fetched policies
    /// only), or wrong ([`SupplyChainArgs::overrides`]).
    pub(crate) fn fetch_settings_if(&self, fetch: bool) -> Result<Option<FetchSettings>, Error> {
        if !fetch {
            let registry_flag = if !self.registry_provider.is_empty() {
                Some("--registry-provider")
            } else if !self.allow_credential_program.is_empty() {
                Some("--allow-credential-program")
            } else if self.provenance {
                Some("--provenance")
            } else {
                None
            };
            return match registry_flag.or(self.supply_chain.first_given()) {
                Some(flag) => Err(Error::Usage(format!(
                    "{flag} applies to the policies fetched from registries: add --fetch"
                ))),
                None => Ok(None),
            };
        }
        Ok(Some(FetchSettings {
            registry_config: self.registry_config.clone(),
            cache_dir: self.cache_dir.clone(),
            cache_ttl: self.cache_ttl,
            deadline: self.fetch_timeout,
            observer: None,
            supply_chain: self.supply_chain.overrides()?,
            providers: self.registry_provider.clone(),
            allowed_programs: self.allow_credential_program.clone(),
            provenance: self.provenance,
        }))
    }
}

impl MessageArgs {
    /// The message settings from the flags, over the automation's.
    ///
    /// # Errors
    /// A malformed `--commit-value` or `--automation-object`; an unreadable
    /// template file (or one over `limit`).
    pub(crate) fn message_config(
        &self,
        automation: Option<&Automation>,
        limit: SizeLimit,
    ) -> Result<MessageConfig, Error> {
        let mut message = automation
            .map(MessageConfig::from_automation)
            .unwrap_or_default();
        if let Some(file) = &self.template {
            message.template = Some(crate::input::read_text(file, limit)?);
        }
        for pair in &self.values {
            let (k, v) = config::commit_value(pair)
                .map_err(|e| Error::Usage(format!("--commit-value {pair:?}: {e}")))?;
            message.values.insert(k, v);
        }
        if message.automation_object.is_none()
            && let Some(object) = &self.automation_object
        {
            message.automation_object = Some(
                config::namespaced_name(object)
                    .map_err(|e| Error::Usage(format!("--automation-object {object:?}: {e}")))?,
            );
        }
        Ok(message)
    }
}
