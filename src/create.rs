//! The objects `image-update create` writes (the `tk-image` tool of the
//! image automation design, and `flux create image ... --export` without a
//! cluster): Flux `ImageRepository`, `ImagePolicy` and
//! `ImageUpdateAutomation` (`image.toolkit.fluxcd.io/v1`), and the KubeSphere
//! `ImageUpdater` (`gitops.kubesphere.io/v1alpha1`, `deploy/crds/`).
//!
//! Each builder checks its inputs as the API server (and Flux's CLI) would
//! and returns the object; [`to_yaml`] writes it as `flux ... --export`
//! does: a `---` line, then the object with its fields in API order. Every
//! object built here is read back by the commands that take such objects
//! (`--policies`, `--fetch`, `--automation`, the KRM function, `deploy`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::kubesphere::Interval;
use crate::kubesphere::{self, ImageEntry};

/// Flux's image API version.
pub(crate) const FLUX_IMAGE_API: &str = "image.toolkit.fluxcd.io/v1";

/// A usage mistake, as a sentence naming the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct CreateError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, CreateError> {
    Err(CreateError(message.into()))
}

/// `metadata`: name, namespace and labels.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meta {
    pub name: String,
    pub namespace: String,
    /// `--label KEY=VALUE`, in key order.
    pub labels: BTreeMap<String, String>,
}

impl Meta {
    fn value(&self) -> Result<Value, CreateError> {
        if !crate::object::dns_subdomain(&self.name) {
            return fail(format!(
                "NAME {:?} is not a valid object name (lower-case letters, digits, '-' and '.', at most 253 characters)",
                self.name
            ));
        }
        if !crate::object::dns_label(&self.namespace) {
            return fail(format!(
                "--namespace {:?} is not a valid namespace (lower-case letters, digits and '-', at most 63 characters)",
                self.namespace
            ));
        }
        let mut meta = Map::new();
        meta.insert("name".to_owned(), json!(self.name));
        meta.insert("namespace".to_owned(), json!(self.namespace));
        if !self.labels.is_empty() {
            for (k, v) in &self.labels {
                crate::policies::selector::Selector::parse(&format!("{k}={v}"))
                    .map_err(|e| CreateError(format!("--label {k}={v}: {e}")))?;
            }
            meta.insert("labels".to_owned(), json!(self.labels));
        }
        Ok(Value::Object(meta))
    }
}

/// Parse `--label` values: `KEY=VALUE`, several per flag separated by `,`
/// (as Flux's `--label` takes them).
///
/// # Errors
/// A label without `=`.
pub(crate) fn labels(flags: &[String]) -> Result<BTreeMap<String, String>, CreateError> {
    let mut out = BTreeMap::new();
    for flag in flags {
        for pair in flag.split(',').filter(|p| !p.is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                return fail(format!("--label {pair:?}: expected KEY=VALUE"));
            };
            out.insert(k.to_owned(), v.to_owned());
        }
    }
    Ok(out)
}

/// A duration as Go's `time.Duration.String()` writes it (`1m0s`,
/// `1h30m0s`, `500ms`, `1.5s`), the form Flux's exports use.
#[must_use]
pub(crate) fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    let fraction = |value: u128, unit: u128| -> String {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            return whole.to_string();
        }
        let digits = unit.to_string().len() - 1;
        let frac = format!("{rest:0digits$}");
        format!("{whole}.{}", frac.trim_end_matches('0'))
    };
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", fraction(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", fraction(nanos, 1_000_000));
    }
    let secs = nanos / 1_000_000_000;
    let sub = nanos % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let seconds = fraction(s * 1_000_000_000 + sub, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

/// Parse a duration flag (`1m`, `1h30m`, `500ms`).
///
/// # Errors
/// A sentence naming the flag.
pub(crate) fn duration(flag: &str, text: &str) -> Result<Interval, CreateError> {
    Interval::parse(text).ok_or_else(|| {
        CreateError(format!(
            "{flag} {text:?} is not a duration such as 1m, 30m or 1h30m (units ms, s, m, h)"
        ))
    })
}

fn object(api_version: &str, kind: &str, meta: &Meta, spec: Value) -> Result<Value, CreateError> {
    Ok(json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": meta.value()?,
        "spec": spec,
    }))
}

/// `create imagerepository`.
#[derive(Debug, Clone)]
pub(crate) struct ImageRepository {
    /// `--image`: the repository, without tag.
    pub image: String,
    /// `--interval`.
    pub interval: Interval,
    /// `--secret-ref`: a `kubernetes.io/dockerconfigjson` Secret.
    pub secret_ref: Option<String>,
    /// `--scan-timeout`.
    pub timeout: Option<Interval>,
}

/// An ImageRepository.
///
/// # Errors
/// An image that is not a repository name; an invalid name or label.
pub(crate) fn image_repository(meta: &Meta, a: &ImageRepository) -> Result<Value, CreateError> {
    if a.image.is_empty() {
        return fail("an image repository (--image) is required");
    }
    image_update_registry::reference::Repository::parse(&a.image)
        .map_err(|e| CreateError(format!("--image {:?}: {e}", a.image)))?;
    let mut spec = Map::new();
    spec.insert("image".to_owned(), json!(a.image));
    spec.insert(
        "interval".to_owned(),
        json!(go_duration(a.interval.duration)),
    );
    if let Some(secret) = &a.secret_ref {
        spec.insert("secretRef".to_owned(), json!({"name": secret}));
    }
    if let Some(t) = &a.timeout {
        spec.insert("timeout".to_owned(), json!(go_duration(t.duration)));
    }
    object(FLUX_IMAGE_API, "ImageRepository", meta, Value::Object(spec))
}

/// How a policy chooses a tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Select {
    /// `--select-semver RANGE`
    Semver(String),
    /// `--select-alpha asc|desc`
    Alphabetical(String),
    /// `--select-numeric asc|desc`
    Numerical(String),
}

impl Select {
    /// The one choice among the three flags.
    ///
    /// # Errors
    /// None or several given; an order other than `asc`/`desc`; a semver
    /// range that does not parse.
    pub(crate) fn from_flags(
        semver: Option<&str>,
        alpha: Option<&str>,
        numeric: Option<&str>,
        required: bool,
    ) -> Result<Option<Select>, CreateError> {
        let order = |flag: &str, o: &str| {
            if o == "asc" || o == "desc" {
                Ok(o.to_owned())
            } else {
                fail(format!("{flag} must be one of [\"asc\", \"desc\"]"))
            }
        };
        match (semver, alpha, numeric) {
            (None, None, None) if required => fail(
                "a policy must be provided with --select-semver, --select-alpha or --select-numeric",
            ),
            (None, None, None) => Ok(None),
            (Some(range), None, None) => {
                crate::reflector::selection::semver::Range::parse(range).map_err(|e| {
                    CreateError(format!(
                        "--select-semver {range:?} is not a semver range: {e}"
                    ))
                })?;
                Ok(Some(Select::Semver(range.to_owned())))
            }
            (None, Some(o), None) => Ok(Some(Select::Alphabetical(order("--select-alpha", o)?))),
            (None, None, Some(o)) => Ok(Some(Select::Numerical(order("--select-numeric", o)?))),
            _ => fail(
                "only one of --select-semver, --select-alpha or --select-numeric can be specified",
            ),
        }
    }

    fn value(&self) -> Value {
        match self {
            Select::Semver(range) => json!({"semver": {"range": range}}),
            Select::Alphabetical(order) => json!({"alphabetical": {"order": order}}),
            Select::Numerical(order) => json!({"numerical": {"order": order}}),
        }
    }
}

/// `create imagepolicy`.
#[derive(Debug, Clone)]
pub(crate) struct ImagePolicy {
    /// `--image-ref`: the ImageRepository's name.
    pub image_ref: String,
    pub select: Select,
    /// `--filter-regex`.
    pub filter_regex: Option<String>,
    /// `--filter-extract`.
    pub filter_extract: Option<String>,
    /// `--reflect-digest`: Never, IfNotPresent or Always.
    pub reflect_digest: Option<String>,
    /// `--interval` (only with `--reflect-digest Always`).
    pub interval: Option<Interval>,
}

/// An ImagePolicy.
///
/// # Errors
/// Flux's checks: a repository name, a valid filter (and an extract only
/// with a filter, naming its groups), a known reflection policy, an
/// interval only with `Always`.
pub(crate) fn image_policy(meta: &Meta, a: &ImagePolicy) -> Result<Value, CreateError> {
    if a.image_ref.is_empty() {
        return fail("the name of an ImageRepository in the namespace is required (--image-ref)");
    }
    let mut spec = Map::new();
    spec.insert(
        "imageRepositoryRef".to_owned(),
        json!({"name": a.image_ref}),
    );
    spec.insert("policy".to_owned(), a.select.value());
    match (&a.filter_regex, &a.filter_extract) {
        (Some(pattern), extract) => {
            let re = regex::Regex::new(pattern).map_err(|_| {
                CreateError("--filter-regex is an invalid regex pattern".to_owned())
            })?;
            let mut filter = Map::new();
            filter.insert("pattern".to_owned(), json!(pattern));
            if let Some(extract) = extract {
                check_extract(extract, &re)?;
                filter.insert("extract".to_owned(), json!(extract));
            }
            spec.insert("filterTags".to_owned(), Value::Object(filter));
        }
        (None, Some(_)) => {
            return fail("cannot specify --filter-extract without specifying --filter-regex");
        }
        (None, None) => {}
    }
    if let Some(p) = &a.reflect_digest {
        if !matches!(p.as_str(), "Never" | "IfNotPresent" | "Always") {
            return fail(
                "invalid value for --reflect-digest, must be one of 'Never', 'IfNotPresent', 'Always'",
            );
        }
        spec.insert("digestReflectionPolicy".to_owned(), json!(p));
    }
    if let Some(i) = &a.interval {
        if a.reflect_digest.as_deref() != Some("Always") {
            return fail(
                "the --interval flag can only be used with the 'Always' digest reflection policy, use --reflect-digest=Always",
            );
        }
        spec.insert("interval".to_owned(), json!(go_duration(i.duration)));
    }
    object(FLUX_IMAGE_API, "ImagePolicy", meta, Value::Object(spec))
}

/// `$name` and `${name}` references of an extract must name groups of the
/// pattern (numbered groups too).
fn check_extract(extract: &str, re: &regex::Regex) -> Result<(), CreateError> {
    let refs = regex::Regex::new(r"\$(?:\{([^}]*)\}|([A-Za-z0-9_]+))")
        .map_err(|e| CreateError(e.to_string()))?;
    let mut found = false;
    for c in refs.captures_iter(extract) {
        found = true;
        let name = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        let known = re.capture_names().flatten().any(|n| n == name)
            || name.parse::<usize>().is_ok_and(|i| i < re.captures_len());
        if !known {
            return fail(format!(
                "capture group {name:?} used in --filter-extract is not in --filter-regex"
            ));
        }
    }
    if !found {
        return fail(
            "--filter-extract must reference a capture group of --filter-regex ($name or ${name})",
        );
    }
    Ok(())
}

/// The git part of an automation: `create imageupdateautomation` and the
/// `fluxcd` section of `create imageupdater`.
#[derive(Debug, Clone, Default)]
pub(crate) struct GitAutomation {
    /// `--git-repo-ref`: the GitRepository.
    pub git_repo_ref: String,
    /// `--git-repo-namespace`.
    pub git_repo_namespace: Option<String>,
    /// `--git-repo-path`: `spec.update.path`.
    pub git_repo_path: Option<String>,
    /// `--checkout-branch`.
    pub checkout_branch: String,
    /// `--push-branch`.
    pub push_branch: Option<String>,
    /// `--commit-template`.
    pub commit_template: Option<String>,
    /// `--commit-value KEY=VALUE`: `messageTemplateValues`.
    pub commit_values: BTreeMap<String, String>,
    /// `--author-name`.
    pub author_name: String,
    /// `--author-email`.
    pub author_email: String,
    /// `--interval`.
    pub interval: Interval,
}

impl GitAutomation {
    fn check(&self) -> Result<(), CreateError> {
        if self.git_repo_ref.is_empty() {
            return fail("a reference to a GitRepository is required (--git-repo-ref)");
        }
        if self.checkout_branch.is_empty() {
            return fail("the Git repository branch is required (--checkout-branch)");
        }
        if self.author_name.is_empty() {
            return fail("the author name is required (--author-name)");
        }
        if self.author_email.is_empty() {
            return fail("the author email is required (--author-email)");
        }
        if let Some(t) = &self.commit_template {
            image_update_template::Template::parse(image_update_template::flux::TEMPLATE_NAME, t)
                .map_err(|e| CreateError(format!("--commit-template: {e}")))?;
        }
        Ok(())
    }

    fn source_ref(&self) -> Value {
        let mut r = Map::new();
        r.insert("kind".to_owned(), json!("GitRepository"));
        r.insert("name".to_owned(), json!(self.git_repo_ref));
        if let Some(ns) = &self.git_repo_namespace {
            r.insert("namespace".to_owned(), json!(ns));
        }
        Value::Object(r)
    }

    fn git(&self, signing: Option<Value>) -> Value {
        let mut author = Map::new();
        author.insert("email".to_owned(), json!(self.author_email));
        author.insert("name".to_owned(), json!(self.author_name));
        let mut commit = Map::new();
        commit.insert("author".to_owned(), Value::Object(author));
        if let Some(t) = self.commit_template.as_ref().filter(|t| !t.is_empty()) {
            commit.insert("messageTemplate".to_owned(), json!(t));
        }
        if !self.commit_values.is_empty() {
            commit.insert(
                "messageTemplateValues".to_owned(),
                json!(self.commit_values),
            );
        }
        if let Some(s) = signing {
            commit.insert("signingKey".to_owned(), s);
        }
        let mut git = Map::new();
        git.insert(
            "checkout".to_owned(),
            json!({"ref": {"branch": self.checkout_branch}}),
        );
        git.insert("commit".to_owned(), Value::Object(commit));
        if let Some(b) = &self.push_branch {
            git.insert("push".to_owned(), json!({"branch": b}));
        }
        Value::Object(git)
    }

    fn update(&self) -> Option<Value> {
        self.git_repo_path
            .as_ref()
            .map(|p| json!({"path": p, "strategy": "Setters"}))
    }
}

/// `create imageupdateautomation`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImageUpdateAutomation {
    pub git: GitAutomation,
    /// `--signing-key-secret`.
    pub signing_key_secret: Option<String>,
    /// `--signing-key-type`: gpg or ssh.
    pub signing_key_type: Option<String>,
}

/// An ImageUpdateAutomation (Flux's fields in Flux's order).
///
/// # Errors
/// Flux's required flags; a signing key type without a secret, or other
/// than gpg/ssh; a template that does not parse.
pub(crate) fn image_update_automation(
    meta: &Meta,
    a: &ImageUpdateAutomation,
) -> Result<Value, CreateError> {
    a.git.check()?;
    let signing = match (&a.signing_key_secret, &a.signing_key_type) {
        (None, Some(_)) => return fail("--signing-key-type requires --signing-key-secret"),
        (_, Some(t)) if t != "gpg" && t != "ssh" => {
            return fail("--signing-key-type must be one of: gpg, ssh");
        }
        (Some(secret), t) => {
            let mut s = Map::new();
            s.insert("secretRef".to_owned(), json!({"name": secret}));
            if let Some(t) = t {
                s.insert("type".to_owned(), json!(t));
            }
            Some(Value::Object(s))
        }
        (None, None) => None,
    };
    let mut spec = Map::new();
    spec.insert("git".to_owned(), a.git.git(signing));
    spec.insert(
        "interval".to_owned(),
        json!(go_duration(a.git.interval.duration)),
    );
    spec.insert("sourceRef".to_owned(), a.git.source_ref());
    if let Some(u) = a.git.update() {
        spec.insert("update".to_owned(), u);
    }
    object(
        FLUX_IMAGE_API,
        "ImageUpdateAutomation",
        meta,
        Value::Object(spec),
    )
}

/// The engine section of `create imageupdater`.
#[derive(Debug, Clone)]
pub(crate) enum Engine {
    /// `--kind fluxcd`.
    Fluxcd {
        git: GitAutomation,
        /// `--select-*`: one policy for every image.
        select: Option<Select>,
        /// `--secret-ref NAME`: registry credentials.
        secret: Option<String>,
    },
    /// `--kind argocd`.
    Argocd {
        /// `--app NAME`, `--app-namespace NS`.
        app: Option<(String, Option<String>)>,
        /// `--write built-in|git`.
        write: Option<String>,
        /// `--update-strategy ALIAS=STRATEGY`.
        update_strategy: BTreeMap<String, String>,
        /// `--allow-tags ALIAS=regexp:EXPR|any`.
        allow_tags: BTreeMap<String, String>,
        /// `--ignore-tags ALIAS=GLOB[,GLOB]`.
        ignore_tags: BTreeMap<String, String>,
        /// `--platforms ALIAS=OS/ARCH[,...]`.
        platforms: BTreeMap<String, String>,
        /// `--secret-ref ALIAS=NAME`.
        secret: BTreeMap<String, String>,
    },
}

/// `create imageupdater`.
#[derive(Debug, Clone)]
pub(crate) struct ImageUpdater {
    /// `--image [ALIAS=]IMAGE[:CONSTRAINT]` (repeatable).
    pub images: Vec<String>,
    pub engine: Engine,
}

/// A KubeSphere ImageUpdater (`deploy/crds/`).
///
/// # Errors
/// No image, an image entry that does not parse (or names an invalid
/// repository), an alias given twice; per engine, the automation's required
/// flags, or a map naming an alias the images do not have, an unknown
/// strategy, write-back method or allow-tags form.
pub(crate) fn image_updater(meta: &Meta, a: &ImageUpdater) -> Result<Value, CreateError> {
    if a.images.is_empty() {
        return fail("at least one image is required (--image [ALIAS=]IMAGE[:CONSTRAINT])");
    }
    let engine = match a.engine {
        Engine::Fluxcd { .. } => kubesphere::Engine::FluxCd,
        Engine::Argocd { .. } => kubesphere::Engine::ArgoCd,
    };
    let mut names = Vec::new();
    // What the per-alias flags may name: an alias, or an image written without one.
    let mut aliases = Vec::new();
    for entry in &a.images {
        let e =
            ImageEntry::parse(entry, engine).map_err(|m| CreateError(format!("--image {m}")))?;
        image_update_registry::reference::Repository::parse(&e.image)
            .map_err(|err| CreateError(format!("--image {entry:?}: {err}")))?;
        if names.contains(&e.alias) {
            return fail(format!(
                "--image {entry:?}: the alias {:?} is given twice",
                e.alias
            ));
        }
        aliases.extend(e.setting_keys().map(str::to_owned));
        names.push(e.alias);
    }
    let mut spec = Map::new();
    spec.insert("images".to_owned(), json!(a.images));
    match &a.engine {
        Engine::Fluxcd {
            git,
            select,
            secret,
        } => {
            git.check()?;
            spec.insert("kind".to_owned(), json!("fluxcd"));
            let mut flux = Map::new();
            flux.insert("interval".to_owned(), json!(git.interval.text));
            if let Some(s) = secret {
                flux.insert("secret".to_owned(), json!(s));
            }
            if let Some(s) = select {
                flux.insert("policy".to_owned(), s.value());
            }
            flux.insert("sourceRef".to_owned(), git.source_ref());
            flux.insert("git".to_owned(), git.git(None));
            if let Some(u) = git.update() {
                flux.insert("update".to_owned(), u);
            }
            spec.insert("fluxcd".to_owned(), Value::Object(flux));
        }
        Engine::Argocd {
            app,
            write,
            update_strategy,
            allow_tags,
            ignore_tags,
            platforms,
            secret,
        } => {
            spec.insert("kind".to_owned(), json!("argocd"));
            let mut argo = Map::new();
            if let Some((name, namespace)) = app {
                let mut a = Map::new();
                a.insert("name".to_owned(), json!(name));
                if let Some(ns) = namespace {
                    a.insert("namespace".to_owned(), json!(ns));
                }
                argo.insert("app".to_owned(), Value::Object(a));
            }
            if let Some(w) = write {
                if w != "built-in" && w != "git" {
                    return fail(format!("--write {w:?}: use built-in or git"));
                }
                argo.insert("write".to_owned(), json!(w));
            }
            let maps: [(&str, &str, &BTreeMap<String, String>); 5] = [
                ("update-strategy", "--update-strategy", update_strategy),
                ("allow-tags", "--allow-tags", allow_tags),
                ("ignore-tags", "--ignore-tags", ignore_tags),
                ("platforms", "--platforms", platforms),
                ("secret", "--secret-ref", secret),
            ];
            for (field, flag, map) in maps {
                for (alias, value) in map {
                    if !aliases.contains(alias) {
                        return fail(format!(
                            "{flag} {alias}={value}: no --image has the alias {alias:?}"
                        ));
                    }
                    let ok = match field {
                        "update-strategy" => matches!(
                            value.as_str(),
                            "semver"
                                | "newest-build"
                                | "latest"
                                | "alphabetical"
                                | "name"
                                | "digest"
                        ),
                        "allow-tags" => {
                            let v = value.to_ascii_lowercase();
                            v == "any" || v.starts_with("regexp:")
                        }
                        _ => !value.is_empty(),
                    };
                    if !ok {
                        return fail(format!(
                            "{flag} {alias}={value}: {}",
                            match field {
                                "update-strategy" =>
                                    "use semver, newest-build (latest), alphabetical (name) or digest",
                                "allow-tags" => "use regexp:EXPRESSION or any",
                                _ => "the value is empty",
                            }
                        ));
                    }
                }
                if !map.is_empty() {
                    argo.insert(field.to_owned(), json!(map));
                }
            }
            spec.insert("argocd".to_owned(), Value::Object(argo));
        }
    }
    object(
        crate::kubesphere::API_VERSION,
        crate::kubesphere::KIND,
        meta,
        Value::Object(spec),
    )
}

/// `ALIAS=VALUE` flags as a map.
///
/// # Errors
/// A value without `=`, or an alias given twice.
pub(crate) fn alias_map(
    flag: &str,
    values: &[String],
) -> Result<BTreeMap<String, String>, CreateError> {
    let mut out = BTreeMap::new();
    for v in values {
        let Some((alias, value)) = v.split_once('=') else {
            return fail(format!("{flag} {v:?}: expected ALIAS=VALUE"));
        };
        if out.insert(alias.to_owned(), value.to_owned()).is_some() {
            return fail(format!("{flag}: the alias {alias:?} is given twice"));
        }
    }
    Ok(out)
}

/// The object as `flux ... --export` prints it: `---`, then YAML.
///
/// # Errors
/// Only if YAML serialisation fails.
pub(crate) fn to_yaml(object: &Value) -> Result<String, CreateError> {
    crate::yaml::to_stream([object]).map_err(CreateError)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str) -> Meta {
        Meta {
            name: name.to_owned(),
            namespace: "flux-system".to_owned(),
            labels: BTreeMap::new(),
        }
    }

    fn interval(s: &str) -> Interval {
        Interval::parse(s).unwrap()
    }

    #[test]
    fn go_durations() {
        let d = |s: &str| go_duration(interval(s).duration);
        assert_eq!(d("1m"), "1m0s");
        assert_eq!(d("90m"), "1h30m0s");
        assert_eq!(d("30s"), "30s");
        assert_eq!(d("1.5s"), "1.5s");
        assert_eq!(d("500ms"), "500ms");
        assert_eq!(d("24h"), "24h0m0s");
        assert_eq!(d("1h0.25s"), "1h0m0.25s");
        assert_eq!(go_duration(Duration::from_nanos(1500)), "1.5µs");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn flux_s_export_of_an_automation() {
        let a = ImageUpdateAutomation {
            git: GitAutomation {
                git_repo_ref: "flux-system".into(),
                checkout_branch: "main".into(),
                author_name: "flux".into(),
                author_email: "flux@example.com".into(),
                interval: interval("1m"),
                ..GitAutomation::default()
            },
            ..ImageUpdateAutomation::default()
        };
        let text = to_yaml(&image_update_automation(&meta("flux-system"), &a).unwrap()).unwrap();
        assert_eq!(
            text,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  git:\n    checkout:\n      ref:\n        branch: main\n    commit:\n      author:\n        email: flux@example.com\n        name: flux\n  interval: 1m0s\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        );
    }

    #[test]
    fn flux_s_checks() {
        let err = |r: Result<Value, CreateError>| r.unwrap_err().to_string();
        assert_eq!(
            err(image_repository(
                &meta("a"),
                &ImageRepository {
                    image: String::new(),
                    interval: interval("1m"),
                    secret_ref: None,
                    timeout: None
                }
            )),
            "an image repository (--image) is required"
        );
        let policy = |select: Select, regex: Option<&str>, extract: Option<&str>| ImagePolicy {
            image_ref: "app".into(),
            select,
            filter_regex: regex.map(str::to_owned),
            filter_extract: extract.map(str::to_owned),
            reflect_digest: None,
            interval: None,
        };
        let semver = || Select::Semver("1.x".into());
        assert!(
            image_policy(
                &meta("p"),
                &policy(semver(), Some("^main-(?P<ts>[0-9]+)"), Some("$ts"))
            )
            .is_ok()
        );
        assert_eq!(
            err(image_policy(
                &meta("p"),
                &policy(semver(), Some("^main-(?P<ts>[0-9]+)"), Some("$nope"))
            )),
            "capture group \"nope\" used in --filter-extract is not in --filter-regex"
        );
        assert_eq!(
            err(image_policy(
                &meta("p"),
                &policy(semver(), None, Some("$ts"))
            )),
            "cannot specify --filter-extract without specifying --filter-regex"
        );
        assert_eq!(
            Select::from_flags(Some("1.x"), Some("asc"), None, true)
                .unwrap_err()
                .to_string(),
            "only one of --select-semver, --select-alpha or --select-numeric can be specified"
        );
        assert_eq!(
            Select::from_flags(None, Some("up"), None, true)
                .unwrap_err()
                .to_string(),
            "--select-alpha must be one of [\"asc\", \"desc\"]"
        );
        let mut p = policy(semver(), None, None);
        p.interval = Some(interval("5m"));
        assert!(
            err(image_policy(&meta("p"), &p)).starts_with("the --interval flag can only be used")
        );
        assert!(
            err(image_repository(
                &meta("Bad"),
                &ImageRepository {
                    image: "nginx".into(),
                    interval: interval("1m"),
                    secret_ref: None,
                    timeout: None
                }
            ))
            .starts_with("NAME \"Bad\" is not a valid object name")
        );
    }

    #[test]
    fn image_updaters_check_their_aliases() {
        let argo = |strategy: &[(&str, &str)]| ImageUpdater {
            images: vec!["nginx:^0.1".into(), "myalias=some/image".into()],
            engine: Engine::Argocd {
                app: Some(("demo".into(), Some("demo".into()))),
                write: Some("built-in".into()),
                update_strategy: strategy
                    .iter()
                    .map(|(a, s)| ((*a).to_owned(), (*s).to_owned()))
                    .collect(),
                allow_tags: BTreeMap::new(),
                ignore_tags: BTreeMap::new(),
                platforms: BTreeMap::new(),
                secret: BTreeMap::new(),
            },
        };
        assert!(
            image_updater(
                &meta("demo"),
                &argo(&[("nginx", "semver"), ("myalias", "latest")])
            )
            .is_ok()
        );
        assert_eq!(
            image_updater(&meta("demo"), &argo(&[("tomcat", "semver")]))
                .unwrap_err()
                .to_string(),
            "--update-strategy tomcat=semver: no --image has the alias \"tomcat\""
        );
        assert!(
            image_updater(&meta("demo"), &argo(&[("nginx", "fastest")]))
                .unwrap_err()
                .to_string()
                .contains("use semver, newest-build")
        );
        // An image without an alias, its registry with a port: named by its repository path
        // (or as written) for argocd; a marker name, so refused, for fluxcd.
        let mut ported = argo(&[("acme/web", "latest")]);
        ported.images = vec!["localhost:5000/acme/web:~1.2".into()];
        assert!(image_updater(&meta("demo"), &ported).is_ok());
        if let Engine::Argocd {
            update_strategy, ..
        } = &mut ported.engine
        {
            *update_strategy = [("localhost:5000/acme/web".to_owned(), "latest".to_owned())].into();
        }
        assert!(image_updater(&meta("demo"), &ported).is_ok());
    }
}
