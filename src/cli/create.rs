//! `image-update create KIND NAME [flags]`: write an object as YAML on
//! stdout, ready to commit (the `tk-image` tool of the image automation
//! design; `flux create image ... --export` without a cluster). The objects
//! are built and checked by [`crate::create`].

use std::io::Write;

use clap::{Args, Subcommand};

use super::Exit;
use crate::create::{self, Engine, GitAutomation, Meta, Select};
use crate::error::Error;

/// `image-update create`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CreateArgs {
    #[command(subcommand)]
    pub kind: CreateKind,
}

/// What to create.
#[derive(Debug, Clone, Subcommand)]
#[allow(clippy::enum_variant_names)] // the kinds' own names
pub(crate) enum CreateKind {
    /// A Flux ImageRepository: an image repository to scan.
    #[command(name = "imagerepository", visible_alias = "image-repository")]
    ImageRepository(ImageRepositoryArgs),
    /// A Flux ImagePolicy: how to choose a tag of an ImageRepository.
    #[command(name = "imagepolicy", visible_alias = "image-policy")]
    ImagePolicy(ImagePolicyArgs),
    /// A Flux ImageUpdateAutomation: which repository to update, how to
    /// commit and push.
    #[command(
        name = "imageupdateautomation",
        visible_alias = "image-update-automation"
    )]
    ImageUpdateAutomation(ImageUpdateAutomationArgs),
    /// A KubeSphere ImageUpdater (gitops.kubesphere.io/v1alpha1,
    /// deploy/crds/): images and, for --kind fluxcd, their automation.
    #[command(name = "imageupdater", visible_alias = "image-updater")]
    ImageUpdater(Box<ImageUpdaterArgs>),
}

/// Flags every kind takes (Flux's `create` flags).
#[derive(Debug, Clone, Args)]
pub(crate) struct CommonArgs {
    /// The object's name.
    pub name: String,

    /// The object's namespace.
    #[arg(long, short = 'n', default_value = "flux-system")]
    pub namespace: String,

    /// Labels, KEY=VALUE (repeatable, or comma-separated).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,

    /// Accepted for `flux create ... --export` command lines: the object is
    /// always printed, never applied.
    #[arg(long)]
    pub export: bool,
}

impl CommonArgs {
    fn meta(&self) -> Result<Meta, Error> {
        Ok(Meta {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            labels: create::labels(&self.labels).map_err(usage)?,
        })
    }
}

/// `create imagerepository`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ImageRepositoryArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The image repository to scan, e.g. ghcr.io/stefanprodan/podinfo.
    #[arg(long)]
    pub image: String,
    /// How often to scan.
    #[arg(long, default_value = "1m", value_name = "DURATION")]
    pub interval: String,
    /// A kubernetes.io/dockerconfigjson Secret with registry credentials.
    #[arg(long, value_name = "NAME")]
    pub secret_ref: Option<String>,
    /// A timeout for scanning (default: the interval).
    #[arg(long, value_name = "DURATION")]
    pub scan_timeout: Option<String>,
}

/// The policy flags (Flux's `--select-*`).
#[derive(Debug, Clone, Args)]
pub(crate) struct SelectArgs {
    /// A semver range for the tags, e.g. '>=1.0.0' or '5.0.x'.
    #[arg(long, value_name = "RANGE")]
    pub select_semver: Option<String>,
    /// Alphabetical order: asc selects the last tag, desc the first.
    #[arg(long, value_name = "ORDER")]
    pub select_alpha: Option<String>,
    /// Numerical order: asc selects the highest number, desc the lowest.
    #[arg(long, value_name = "ORDER")]
    pub select_numeric: Option<String>,
}

impl SelectArgs {
    fn select(&self, required: bool) -> Result<Option<Select>, Error> {
        Select::from_flags(
            self.select_semver.as_deref(),
            self.select_alpha.as_deref(),
            self.select_numeric.as_deref(),
            required,
        )
        .map_err(usage)
    }
}

/// `create imagepolicy`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ImagePolicyArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The ImageRepository (in the namespace) whose tags are chosen from.
    #[arg(long, value_name = "NAME")]
    pub image_ref: String,
    #[command(flatten)]
    pub select: SelectArgs,
    /// A regular expression the tags must match.
    #[arg(long, value_name = "REGEX")]
    pub filter_regex: Option<String>,
    /// What to sort by, from --filter-regex's groups, e.g. '$ts'.
    #[arg(long, value_name = "PATTERN")]
    pub filter_extract: Option<String>,
    /// Digest reflection: Never, IfNotPresent or Always.
    #[arg(long, value_name = "POLICY")]
    pub reflect_digest: Option<String>,
    /// How often to check the digest (only with --reflect-digest Always).
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
}

/// The automation flags (Flux's `create image update` flags).
#[derive(Debug, Clone, Args)]
pub(crate) struct GitArgs {
    /// The GitRepository to update.
    #[arg(long, value_name = "NAME")]
    pub git_repo_ref: Option<String>,
    /// The GitRepository's namespace (default: the object's).
    #[arg(long, value_name = "NAMESPACE")]
    pub git_repo_namespace: Option<String>,
    /// Only update files under this path of the repository.
    #[arg(long, value_name = "PATH")]
    pub git_repo_path: Option<String>,
    /// The branch to check out.
    #[arg(long, value_name = "BRANCH")]
    pub checkout_branch: Option<String>,
    /// The branch to push to (default: the checkout branch).
    #[arg(long, value_name = "BRANCH")]
    pub push_branch: Option<String>,
    /// The commit message template (Go text/template over Flux's data).
    #[arg(long, value_name = "TEMPLATE")]
    pub commit_template: Option<String>,
    /// A messageTemplateValues entry, KEY=VALUE (repeatable).
    #[arg(long = "commit-value", value_name = "KEY=VALUE")]
    pub commit_values: Vec<String>,
    /// The commit author's name.
    #[arg(long, value_name = "NAME")]
    pub author_name: Option<String>,
    /// The commit author's email.
    #[arg(long, value_name = "EMAIL")]
    pub author_email: Option<String>,
    /// How often to run.
    #[arg(long, default_value = "1m", value_name = "DURATION")]
    pub interval: String,
}

impl GitArgs {
    fn automation(&self) -> Result<GitAutomation, Error> {
        let mut values = std::collections::BTreeMap::new();
        for v in &self.commit_values {
            let (k, val) = v
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("--commit-value {v:?}: expected KEY=VALUE")))?;
            values.insert(k.to_owned(), val.to_owned());
        }
        Ok(GitAutomation {
            git_repo_ref: self.git_repo_ref.clone().unwrap_or_default(),
            git_repo_namespace: self.git_repo_namespace.clone(),
            git_repo_path: self.git_repo_path.clone(),
            checkout_branch: self.checkout_branch.clone().unwrap_or_default(),
            push_branch: self.push_branch.clone(),
            commit_template: self.commit_template.clone(),
            commit_values: values,
            author_name: self.author_name.clone().unwrap_or_default(),
            author_email: self.author_email.clone().unwrap_or_default(),
            interval: create::duration("--interval", &self.interval).map_err(usage)?,
        })
    }
}

/// `create imageupdateautomation`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ImageUpdateAutomationArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub git: GitArgs,
    /// The Secret holding the commit signing key.
    #[arg(long, value_name = "NAME")]
    pub signing_key_secret: Option<String>,
    /// The signing key's kind: gpg or ssh (default gpg).
    #[arg(long, value_name = "TYPE")]
    pub signing_key_type: Option<String>,
}

/// `create imageupdater`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ImageUpdaterArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// An image, ALIAS=IMAGE:CONSTRAINT (ALIAS= and :CONSTRAINT optional;
    /// repeatable), e.g. nginx:^0.1
    /// or myalias=some/image.
    #[arg(long = "image", value_name = "ENTRY")]
    pub images: Vec<String>,
    /// The engine: fluxcd (an automation: needs --git-repo-ref,
    /// --checkout-branch and the author) or argocd.
    #[arg(long, value_name = "KIND")]
    pub kind: String,
    #[command(flatten)]
    pub git: GitArgs,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Registry credentials: fluxcd, one Secret NAME; argocd, ALIAS=NAME
    /// (repeatable).
    #[arg(long = "secret-ref", value_name = "NAME|ALIAS=NAME")]
    pub secret_ref: Vec<String>,
    /// argocd: the Application whose images are updated.
    #[arg(long, value_name = "NAME", help_heading = "Argo CD")]
    pub app: Option<String>,
    /// argocd: the Application's namespace.
    #[arg(long, value_name = "NAMESPACE", help_heading = "Argo CD")]
    pub app_namespace: Option<String>,
    /// argocd: the write-back method, built-in or git.
    #[arg(long, value_name = "METHOD", help_heading = "Argo CD")]
    pub write: Option<String>,
    /// argocd: ALIAS=STRATEGY (semver, newest-build, alphabetical, digest).
    #[arg(long, value_name = "ALIAS=STRATEGY", help_heading = "Argo CD")]
    pub update_strategy: Vec<String>,
    /// argocd: ALIAS=regexp:EXPRESSION or ALIAS=any.
    #[arg(long, value_name = "ALIAS=VALUE", help_heading = "Argo CD")]
    pub allow_tags: Vec<String>,
    /// argocd: ALIAS=GLOB[,GLOB...].
    #[arg(long, value_name = "ALIAS=GLOBS", help_heading = "Argo CD")]
    pub ignore_tags: Vec<String>,
    /// argocd: ALIAS=OS/ARCH[,OS/ARCH...].
    #[arg(long, value_name = "ALIAS=PLATFORMS", help_heading = "Argo CD")]
    pub platforms: Vec<String>,
}

fn usage(e: create::CreateError) -> Error {
    Error::Usage(e.0)
}

fn interval(
    flag: &str,
    text: Option<&String>,
) -> Result<Option<crate::kubesphere::Interval>, Error> {
    text.map(|t| create::duration(flag, t).map_err(usage))
        .transpose()
}

fn build(kind: &CreateKind) -> Result<serde_json::Value, Error> {
    match kind {
        CreateKind::ImageRepository(a) => create::image_repository(
            &a.common.meta()?,
            &create::ImageRepository {
                image: a.image.clone(),
                interval: create::duration("--interval", &a.interval).map_err(usage)?,
                secret_ref: a.secret_ref.clone(),
                timeout: interval("--scan-timeout", a.scan_timeout.as_ref())?,
            },
        ),
        CreateKind::ImagePolicy(a) => create::image_policy(
            &a.common.meta()?,
            &create::ImagePolicy {
                image_ref: a.image_ref.clone(),
                select: a
                    .select
                    .select(true)?
                    .unwrap_or(Select::Semver("*".to_owned())),
                filter_regex: a.filter_regex.clone(),
                filter_extract: a.filter_extract.clone(),
                reflect_digest: a.reflect_digest.clone(),
                interval: interval("--interval", a.interval.as_ref())?,
            },
        ),
        CreateKind::ImageUpdateAutomation(a) => create::image_update_automation(
            &a.common.meta()?,
            &create::ImageUpdateAutomation {
                git: a.git.automation()?,
                signing_key_secret: a.signing_key_secret.clone(),
                signing_key_type: a.signing_key_type.clone(),
            },
        ),
        CreateKind::ImageUpdater(a) => {
            let engine = match a.kind.as_str() {
                "fluxcd" => {
                    let secret = match a.secret_ref.as_slice() {
                        [] => None,
                        [one] if !one.contains('=') => Some(one.clone()),
                        _ => {
                            return Err(Error::Usage(
                                "--kind fluxcd takes one --secret-ref NAME (for every image)"
                                    .to_owned(),
                            ));
                        }
                    };
                    Engine::Fluxcd {
                        git: a.git.automation()?,
                        select: a.select.select(false)?,
                        secret,
                    }
                }
                "argocd" => {
                    let map = |flag: &str, v: &[String]| create::alias_map(flag, v).map_err(usage);
                    Engine::Argocd {
                        app: a.app.clone().map(|n| (n, a.app_namespace.clone())),
                        write: a.write.clone(),
                        update_strategy: map("--update-strategy", &a.update_strategy)?,
                        allow_tags: map("--allow-tags", &a.allow_tags)?,
                        ignore_tags: map("--ignore-tags", &a.ignore_tags)?,
                        platforms: map("--platforms", &a.platforms)?,
                        secret: map("--secret-ref", &a.secret_ref)?,
                    }
                }
                other => {
                    return Err(Error::Usage(format!(
                        "--kind {other:?}: use fluxcd or argocd"
                    )));
                }
            };
            create::image_updater(
                &a.common.meta()?,
                &create::ImageUpdater {
                    images: a.images.clone(),
                    engine,
                },
            )
        }
    }
    .map_err(usage)
}

/// Run `create`.
///
/// # Errors
/// Usage errors for missing or invalid flags; stdout that cannot be
/// written.
pub(crate) fn run(args: &CreateArgs) -> Result<Exit, Error> {
    let object = build(&args.kind)?;
    let text = create::to_yaml(&object).map_err(|e| Error::Internal(e.0))?;
    let mut out = super::stdio::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the object",
            source,
        })?;
    Ok(Exit::Success)
}
