//! The settings every Argo CD Image Updater front end spells its own way (annotations, the
//! `ImageUpdater` CRD, KubeSphere's `kind: argocd`), in one model, and their translation to the
//! selection engine's [`PolicyConfig`].
//!
//! Settings merge field by field, the later layer winning: the CRD's global `commonUpdateSettings`,
//! then its `applicationRefs[]` entry, then the image's own; for annotations, the app-wide keys, then
//! `<alias>.` keys. A list (`ignoreTags`, `platforms`) replaces the inherited one.

use crate::diagnostic::{Diagnostic, Location};
use crate::outcome::AppPullRequest;
use crate::reflector::selection::{Order, PolicyConfig, PolicySpec, Strategy};

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    pub value: T,
    pub location: Location,
}

impl<T> Located<T> {
    pub fn new(value: T, location: Location) -> Self {
        Self { value, location }
    }
}

/// `commonUpdateSettings` (and the annotations that spell it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateSettings {
    pub update_strategy: Option<Located<String>>,
    pub force_update: Option<bool>,
    pub allow_tags: Option<Located<String>>,
    pub ignore_tags: Option<Vec<String>>,
    pub pull_secret: Option<Located<String>>,
    pub platforms: Option<Vec<String>>,
}

impl UpdateSettings {
    /// `self` with every field `over` sets replaced.
    #[must_use]
    pub fn merged(&self, over: &UpdateSettings) -> UpdateSettings {
        UpdateSettings {
            update_strategy: over
                .update_strategy
                .clone()
                .or_else(|| self.update_strategy.clone()),
            force_update: over.force_update.or(self.force_update),
            allow_tags: over.allow_tags.clone().or_else(|| self.allow_tags.clone()),
            ignore_tags: over
                .ignore_tags
                .clone()
                .or_else(|| self.ignore_tags.clone()),
            pull_secret: over
                .pull_secret
                .clone()
                .or_else(|| self.pull_secret.clone()),
            platforms: over.platforms.clone().or_else(|| self.platforms.clone()),
        }
    }
}

/// Where an image's new value goes in the Application's source (`manifestTargets`, or the
/// `<alias>.helm.*` / `<alias>.kustomize.image-name` annotations).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestTarget {
    pub helm_name: Option<String>,
    pub helm_tag: Option<String>,
    /// One parameter holding the whole reference; wins over name and tag.
    pub helm_spec: Option<String>,
    /// The kustomize image to replace (`kustomize.image-name`).
    pub kustomize_name: Option<String>,
    pub plugin_name: Option<String>,
    pub plugin_tag: Option<String>,
    pub plugin_spec: Option<String>,
}

impl ManifestTarget {
    /// Whether the image writes plugin environment variables.
    #[must_use]
    pub fn is_plugin(&self) -> bool {
        self.plugin_name.is_some() || self.plugin_spec.is_some() || self.plugin_tag.is_some()
    }
}

/// How an Argo CD update strategy is chosen, from its name.
///
/// # Errors
/// An unknown name. (Argo CD Image Updater falls back to semver with a warning; a typo here is an
/// error instead.)
pub(crate) fn strategy(name: &str, constraint: Option<&str>) -> Result<Strategy, String> {
    match name.to_ascii_lowercase().as_str() {
        "semver" => Ok(Strategy::SemVer {
            range: constraint
                .filter(|c| !c.is_empty())
                .unwrap_or("*")
                .to_owned(),
        }),
        "newest-build" | "latest" => Ok(Strategy::NewestBuild),
        "alphabetical" | "name" => Ok(Strategy::Alphabetical { order: Order::Asc }),
        "digest" => match constraint.filter(|c| !c.is_empty()) {
            Some(tag) => Ok(Strategy::Digest {
                tag: tag.to_owned(),
            }),
            None => Err(
                "the digest strategy needs the tag to follow: write the image as IMAGE:TAG"
                    .to_owned(),
            ),
        },
        _ => Err(format!(
            "unknown update strategy {name:?}: use semver, newest-build (or latest), alphabetical (or name) or digest"
        )),
    }
}

/// The selection engine's configuration for one image: its strategy (from `settings` and the
/// constraint written after the image), `allow-tags`, `ignore-tags` and platforms, validated by
/// compiling it.
///
/// # Errors
/// A diagnostic at the setting that is wrong (the strategy, or the image entry for its constraint).
pub(crate) fn policy_config(
    settings: &UpdateSettings,
    constraint: Option<&str>,
    image_location: &Location,
) -> Result<PolicyConfig, Diagnostic> {
    let (name, at) = match &settings.update_strategy {
        Some(s) => (s.value.as_str(), s.location.clone()),
        None => ("semver", image_location.clone()),
    };
    let strategy = strategy(name, constraint).map_err(|e| Diagnostic::error(e).at(at.clone()))?;
    let mut config = PolicyConfig::new(strategy);
    config.allow_tags = settings.allow_tags.as_ref().map(|a| a.value.clone());
    config.ignore_tags = settings
        .ignore_tags
        .iter()
        .flatten()
        .filter(|g| !g.is_empty())
        .cloned()
        .collect();
    config.platforms = settings.platforms.clone().unwrap_or_default();
    // Validated by compiling it, less the default exclusion (a constant that compiles).
    let check = PolicyConfig {
        exclude: Vec::new(),
        ..config.clone()
    };
    if let Err(e) = PolicySpec::new(check) {
        let location = match e.field {
            "allow-tags" => settings
                .allow_tags
                .as_ref()
                .map_or(at, |a| a.location.clone()),
            "semver range" => image_location.clone(),
            _ => at,
        };
        return Err(Diagnostic::error(e.to_string()).at(location));
    }
    Ok(config)
}

/// A pull secret as Argo CD Image Updater names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullSecret {
    /// `pullsecret:NAMESPACE/NAME`: a dockerconfigjson Secret.
    DockerConfig { namespace: String, name: String },
    /// `secret:NAMESPACE/NAME#FIELD`: one Secret field holding `user:password`.
    SecretField {
        namespace: String,
        name: String,
        field: String,
    },
    /// `env:VAR`: `user:password` in an environment variable.
    Env(String),
    /// `ext:/path`: a program printing `user:password`.
    Ext(String),
}

impl PullSecret {
    /// Parse a pull secret reference.
    ///
    /// # Errors
    /// A reference that is none of the four forms.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let ns_name = |s: &str| -> Result<(String, String), String> {
            match s.split_once('/') {
                Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                    Ok((ns.to_owned(), name.to_owned()))
                }
                _ => Err(format!(
                    "pull secret {text:?}: expected NAMESPACE/NAME after the prefix"
                )),
            }
        };
        if let Some(rest) = text.strip_prefix("pullsecret:") {
            let (namespace, name) = ns_name(rest)?;
            Ok(Self::DockerConfig { namespace, name })
        } else if let Some(rest) = text.strip_prefix("secret:") {
            let (secret, field) = rest
                .split_once('#')
                .filter(|(_, f)| !f.is_empty())
                .ok_or_else(|| {
                    format!("pull secret {text:?}: expected secret:NAMESPACE/NAME#FIELD")
                })?;
            let (namespace, name) = ns_name(secret)?;
            Ok(Self::SecretField {
                namespace,
                name,
                field: field.to_owned(),
            })
        } else if let Some(var) = text.strip_prefix("env:") {
            if var.is_empty() {
                return Err(format!("pull secret {text:?}: expected env:VARIABLE"));
            }
            Ok(Self::Env(var.to_owned()))
        } else if let Some(path) = text.strip_prefix("ext:") {
            if !path.starts_with('/') {
                return Err(format!("pull secret {text:?}: ext: needs an absolute path"));
            }
            Ok(Self::Ext(path.to_owned()))
        } else {
            Err(format!(
                "pull secret {text:?}: expected pullsecret:NS/NAME, secret:NS/NAME#FIELD, env:VAR or ext:/PATH"
            ))
        }
    }
}

/// Go's `strconv.ParseBool`.
///
/// # Errors
/// Any other text.
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "{text:?} is not a boolean (true, false, 1, 0, t, f)"
        )),
    }
}

/// `writeBackConfig` (and the annotations that spell it), before it is resolved for one
/// Application.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBackSettings {
    pub method: Option<Located<String>>,
    pub repository: Option<Located<String>>,
    pub branch: Option<Located<String>>,
    pub target: Option<Located<String>>,
    /// `gitConfig.pullRequest` (opening the request is the Job's business).
    pub pull_request: Option<AppPullRequest>,
}

/// The most labels `gitConfig.pullRequest.labels` may give (Argo CD Image Updater's limit).
pub(crate) const MAX_PULL_REQUEST_LABELS: usize = 100;

impl WriteBackSettings {
    /// `self` with every field `over` sets replaced.
    #[must_use]
    pub fn merged(&self, over: &WriteBackSettings) -> WriteBackSettings {
        WriteBackSettings {
            method: over.method.clone().or_else(|| self.method.clone()),
            repository: over.repository.clone().or_else(|| self.repository.clone()),
            branch: over.branch.clone().or_else(|| self.branch.clone()),
            target: over.target.clone().or_else(|| self.target.clone()),
            pull_request: over
                .pull_request
                .clone()
                .or_else(|| self.pull_request.clone()),
        }
    }
}

/// Which credentials a git write-back uses (the part after `git:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitCredentials {
    /// `repocreds` (the default): Argo CD's repository credentials.
    RepoCreds,
    /// `secret:NAME` or `secret:NAMESPACE/NAME`.
    Secret {
        namespace: Option<String>,
        name: String,
    },
}

/// How changes are written back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// `argocd` (Argo CD Image Updater's default), KubeSphere's `built-in`: the Application itself.
    Application,
    /// `git`, `git:CREDENTIALS`.
    Git(GitCredentials),
}

impl Method {
    /// Parse a write-back method; `kubesphere` also accepts `built-in`.
    ///
    /// # Errors
    /// An unknown method or credentials form.
    pub fn parse(text: &str, kubesphere: bool) -> Result<Self, String> {
        let text = text.trim();
        if text == "argocd" || (kubesphere && text == "built-in") {
            return Ok(Self::Application);
        }
        let (method, creds) = match text.split_once(':') {
            Some((m, c)) if !m.is_empty() => (m, Some(c)),
            _ => (text, None),
        };
        if method != "git" {
            return Err(if kubesphere {
                format!("unknown write method {text:?}: use built-in or git")
            } else {
                format!("unknown write-back method {text:?}: use argocd, git or git:CREDENTIALS")
            });
        }
        let creds = match creds {
            None | Some("repocreds") => GitCredentials::RepoCreds,
            Some(c) => {
                let Some(secret) = c.strip_prefix("secret:") else {
                    return Err(format!(
                        "write-back method {text:?}: credentials must be repocreds, secret:NAME or secret:NAMESPACE/NAME"
                    ));
                };
                match secret.split_once('/') {
                    None if !secret.is_empty() => GitCredentials::Secret {
                        namespace: None,
                        name: secret.to_owned(),
                    },
                    Some((ns, name)) if !ns.is_empty() && !name.is_empty() => {
                        GitCredentials::Secret {
                            namespace: Some(ns.to_owned()),
                            name: name.to_owned(),
                        }
                    }
                    _ => {
                        return Err(format!(
                            "write-back method {text:?}: secret:NAME or secret:NAMESPACE/NAME"
                        ));
                    }
                }
            }
        };
        Ok(Self::Git(creds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Location {
        Location::new("app.yaml", None)
    }

    fn located(s: &str) -> Located<String> {
        Located::new(s.to_owned(), at())
    }

    #[test]
    fn strategies_by_name() {
        assert_eq!(
            strategy("SemVer", Some("~3.1")).unwrap(),
            Strategy::SemVer {
                range: "~3.1".into()
            }
        );
        assert_eq!(
            strategy("semver", None).unwrap(),
            Strategy::SemVer { range: "*".into() }
        );
        assert_eq!(strategy("latest", None).unwrap(), Strategy::NewestBuild);
        assert_eq!(
            strategy("Newest-Build", None).unwrap(),
            Strategy::NewestBuild
        );
        assert_eq!(
            strategy("name", None).unwrap(),
            Strategy::Alphabetical { order: Order::Asc }
        );
        assert_eq!(
            strategy("digest", Some("edge")).unwrap(),
            Strategy::Digest { tag: "edge".into() }
        );
        assert!(strategy("digest", None).unwrap_err().contains("IMAGE:TAG"));
        assert!(
            strategy("fastest", None)
                .unwrap_err()
                .contains("unknown update strategy \"fastest\"")
        );
    }

    #[test]
    fn later_layers_win_field_by_field() {
        let global = UpdateSettings {
            update_strategy: Some(located("digest")),
            ignore_tags: Some(vec!["*-rc".into()]),
            platforms: Some(vec!["linux/amd64".into()]),
            ..UpdateSettings::default()
        };
        let image = UpdateSettings {
            ignore_tags: Some(vec!["nightly".into()]),
            force_update: Some(true),
            ..UpdateSettings::default()
        };
        let m = global.merged(&image);
        assert_eq!(m.update_strategy.unwrap().value, "digest");
        assert_eq!(m.ignore_tags.unwrap(), ["nightly"], "lists replace");
        assert_eq!(m.platforms.unwrap(), ["linux/amd64"]);
        assert_eq!(m.force_update, Some(true));
    }

    #[test]
    fn configs_are_validated_where_written() {
        let mut s = UpdateSettings {
            allow_tags: Some(Located::new(
                "regexp:^v[".into(),
                Location::new(
                    "app.yaml",
                    Some(crate::text::Position { line: 7, column: 9 }),
                ),
            )),
            ..UpdateSettings::default()
        };
        let e = policy_config(&s, None, &at()).unwrap_err();
        assert_eq!(e.location.unwrap().position.unwrap().line, 7);
        s.allow_tags = Some(located("regexp:^v\\d"));
        s.ignore_tags = Some(vec!["".into(), "*-dev".into()]);
        let c = policy_config(&s, Some("^2"), &at()).unwrap();
        assert_eq!(c.strategy, Strategy::SemVer { range: "^2".into() });
        assert_eq!(c.ignore_tags, ["*-dev"]);
        assert!(policy_config(&UpdateSettings::default(), Some("latest"), &at()).is_err());
    }

    #[test]
    fn pull_secrets() {
        assert_eq!(
            PullSecret::parse("pullsecret:shop/regcred").unwrap(),
            PullSecret::DockerConfig {
                namespace: "shop".into(),
                name: "regcred".into()
            }
        );
        assert_eq!(
            PullSecret::parse("secret:shop/token#creds").unwrap(),
            PullSecret::SecretField {
                namespace: "shop".into(),
                name: "token".into(),
                field: "creds".into()
            }
        );
        assert_eq!(
            PullSecret::parse("env:REG").unwrap(),
            PullSecret::Env("REG".into())
        );
        assert_eq!(
            PullSecret::parse("ext:/bin/creds").unwrap(),
            PullSecret::Ext("/bin/creds".into())
        );
        for bad in [
            "secret:shop/token",
            "secret:shop/token#",
            "pullsecret:shop",
            "pullsecret:/x",
            "ext:creds.sh",
            "env:",
            "vault:x",
        ] {
            assert!(PullSecret::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn methods_and_booleans() {
        assert_eq!(Method::parse("argocd", false).unwrap(), Method::Application);
        assert!(Method::parse("built-in", false).is_err());
        assert_eq!(
            Method::parse("built-in", true).unwrap(),
            Method::Application
        );
        assert_eq!(
            Method::parse("git", false).unwrap(),
            Method::Git(GitCredentials::RepoCreds)
        );
        assert_eq!(
            Method::parse("git:repocreds", false).unwrap(),
            Method::Git(GitCredentials::RepoCreds)
        );
        assert_eq!(
            Method::parse("git:secret:argocd/push", false).unwrap(),
            Method::Git(GitCredentials::Secret {
                namespace: Some("argocd".into()),
                name: "push".into()
            })
        );
        assert!(Method::parse("git:token", false).is_err());
        assert!(
            Method::parse("svn", false)
                .unwrap_err()
                .contains("unknown write-back method")
        );
        assert_eq!(parse_bool("True"), Ok(true));
        assert!(parse_bool("yes").is_err());
    }
}
