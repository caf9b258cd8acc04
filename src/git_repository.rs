//! A Flux GitRepository (`source.toolkit.fluxcd.io` v1 or v1beta2) as the
//! Job runs it: its URL, checkout ref and Secret name, so a Flux user runs
//! the same automation as a Job with no controller. The one reader and the
//! one check, for the Job's `--git-repository` and for `deploy` (whose
//! workloads run the Job).
//!
//! Only what the Job can honour is accepted: a field it cannot (a
//! `provider` other than `generic` and `github`, a proxy, verification, submodules, a sparse checkout...) is
//! an error at its line, never silently ignored.
//!
//! Also the one rule saying whether two URLs name the same repository
//! ([`same_repository`]), for every place that compares them (the Job's
//! clone against Argo CD Applications' `repoURL`s, Applications against each
//! other).

use std::path::Path;

use serde_json::Value;

use crate::automation::GitRef;
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::SizeLimit;
use crate::yaml::Document;

/// The API group of a GitRepository.
pub(crate) const GROUP: &str = "source.toolkit.fluxcd.io";
/// Its kind.
pub(crate) const KIND: &str = "GitRepository";

/// A Flux GitRepository, as far as the Job uses it.
#[derive(Debug, Clone)]
pub(crate) struct GitRepository {
    /// `metadata.namespace` (default `default`): where its Secret lives.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.url`.
    pub url: String,
    /// Where `spec.url` is written (the Job names it when it refuses the
    /// URL).
    #[cfg_attr(not(feature = "job"), allow(dead_code))]
    pub url_location: Location,
    /// `spec.ref`, when given (the Job's checkout ref).
    #[cfg_attr(not(feature = "job"), allow(dead_code))]
    pub reference: Option<GitRef>,
    /// `spec.secretRef.name`.
    pub secret_name: Option<String>,
    /// `spec.provider: github`: the Secret holds a GitHub App
    /// (`githubAppID`, `githubAppPrivateKey`, `githubAppInstallationID`,
    /// `githubAppBaseURL`), whose installation token clones and pushes.
    /// Read by the Job only.
    #[cfg_attr(not(feature = "job"), allow(dead_code))]
    pub github_app: bool,
}

/// The `spec` fields of a GitRepository the Job honours (or that do not
/// concern a single clone: `interval`, `timeout`, `suspend`, `ignore`).
const SPEC_FIELDS: [&str; 7] = [
    "url",
    "ref",
    "secretRef",
    "interval",
    "timeout",
    "suspend",
    "ignore",
];

/// Whether `value` is a GitRepository.
#[must_use]
#[cfg_attr(not(feature = "job"), allow(dead_code))] // used by read_file
pub(crate) fn is_git_repository(value: &Value) -> bool {
    crate::yaml::is_kind(value, GROUP, KIND)
}

fn located(origin: &str, doc: &Document, pointer: &str, message: String) -> Diagnostic {
    Diagnostic::error(message).at(Location::new(origin, doc.position(pointer)))
}

fn string_at(doc: &Document, pointer: &str) -> Option<String> {
    doc.value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The one GitRepository in `file`.
///
/// # Errors
/// An unreadable file, invalid YAML, no or several GitRepositories, and
/// every problem [`read`] finds, at its line.
#[cfg_attr(not(feature = "job"), allow(dead_code))] // the Job's --git-repository
pub(crate) fn read_file(file: &Path, limit: SizeLimit) -> Result<GitRepository, Error> {
    let (origin, documents) = crate::input::read_yaml(file, limit)?;
    let found: Vec<&Document> = documents
        .iter()
        .filter(|d| is_git_repository(&d.value))
        .collect();
    match found.as_slice() {
        [one] => read(one, &origin).map_err(Error::invalid),
        [] => Err(Error::invalid(vec![
            Diagnostic::error("holds no GitRepository (source.toolkit.fluxcd.io)")
                .at(Location::new(origin, None)),
        ])),
        [_, second, ..] => Err(Error::invalid(vec![located(
            &origin,
            second,
            "",
            format!("holds {} GitRepositories; give one", found.len()),
        )])),
    }
}

/// The GitRepository `doc` (of `origin`).
///
/// # Errors
/// A missing or empty `spec.url`, a `spec.secretRef` without a name, and
/// every field the Job cannot honour; each at its line.
pub(crate) fn read(doc: &Document, origin: &str) -> Result<GitRepository, Vec<Diagnostic>> {
    let (namespace, name) = crate::yaml::namespace_name(&doc.value);
    let namespace = if namespace.is_empty() {
        "default".to_owned()
    } else {
        namespace
    };
    let what = format!("GitRepository {namespace}/{name}");
    let mut errors = Vec::new();
    if let Some(Value::Object(spec)) = doc.value.get("spec") {
        for (field, value) in spec {
            if SPEC_FIELDS.contains(&field.as_str()) {
                continue;
            }
            let harmless = match field.as_str() {
                "provider" => value
                    .as_str()
                    .is_some_and(|p| p == "generic" || p == "github"),
                "recurseSubmodules" => value == &Value::Bool(false),
                _ => false,
            };
            if !harmless {
                errors.push(located(
                    origin,
                    doc,
                    &format!("/spec/{field}"),
                    format!("{what}: spec.{field} is not supported by `image-update job`"),
                ));
            }
        }
    }
    let url = string_at(doc, "/spec/url").filter(|u| !u.is_empty());
    if url.is_none() {
        errors.push(located(
            origin,
            doc,
            "/spec",
            format!("{what}: spec.url is missing"),
        ));
    }
    let secret_name = match doc.value.pointer("/spec/secretRef") {
        None | Some(Value::Null) => None,
        Some(r) => {
            let name = r
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty());
            if name.is_none() {
                errors.push(located(
                    origin,
                    doc,
                    "/spec/secretRef",
                    format!("{what}: spec.secretRef.name is missing"),
                ));
            }
            name.map(str::to_owned)
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let reference = doc.value.pointer("/spec/ref").map(|r| {
        let field = |name: &str| r.get(name).and_then(Value::as_str).map(str::to_owned);
        GitRef {
            branch: field("branch"),
            tag: field("tag"),
            semver: field("semver"),
            name: field("name"),
            commit: field("commit"),
        }
    });
    Ok(GitRepository {
        namespace,
        name,
        url: url.unwrap_or_default(),
        url_location: Location::new(origin, doc.position("/spec/url")),
        reference,
        secret_name,
        github_app: doc.value.pointer("/spec/provider").and_then(Value::as_str) == Some("github"),
    })
}

/// The repository `url` names, spelling aside: `HOST/PATH`, the host in
/// lower case, without the scheme, the user, the port, a query or fragment,
/// leading and trailing `/` and a final `.git`. `https://Git.example/o/r`,
/// `http://git.example:8080/o/r.git/`, `git@git.example:o/r.git`,
/// `ssh://git@git.example:22/o/r` all give `git.example/o/r`. A `file://`
/// URL or a path on this machine has no host: `/srv/r.git` and
/// `file:///srv/r` give `/srv/r`.
///
/// The port is dropped because a forge serves one repository on several
/// (HTTPS on 443, SSH on 22 or 2222): the host and path name it. The path
/// keeps its case (most servers tell `o/R` from `o/r`).
#[must_use]
pub(crate) fn repository_identity(url: &str) -> String {
    let url = url.trim();
    let (authority, path) = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/').unwrap_or((rest, "")),
        // git's rule for the scp-like `[user@]host:path`: a colon before any `/`.
        None => match url.split_once(':') {
            Some((authority, path)) if !authority.contains('/') && !authority.is_empty() => {
                (authority, path)
            }
            _ => ("", url),
        },
    };
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(bracketed) => bracketed.split_once(']').map_or(bracketed, |(h, _)| h),
        None => host_port
            .rsplit_once(':')
            .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
            .map_or(host_port, |(h, _)| h),
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    if host.is_empty() {
        format!("/{path}")
    } else {
        format!("{}/{path}", host.to_ascii_lowercase())
    }
}

/// Whether `a` and `b` name the same repository (the same
/// [`repository_identity`]).
#[must_use]
pub(crate) fn same_repository(a: &str, b: &str) -> bool {
    repository_identity(a) == repository_identity(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_repository_spelt_every_way_is_one() {
        let table = [
            ("https://git.example/o/r", "git.example/o/r"),
            ("https://git.example/o/r.git", "git.example/o/r"),
            ("https://Git.Example/o/r/", "git.example/o/r"),
            ("https://git.example/o/r.git/", "git.example/o/r"),
            ("http://git.example/o/r", "git.example/o/r"),
            ("https://git.example:8443/o/r.git", "git.example/o/r"),
            ("https://user@git.example/o/r", "git.example/o/r"),
            ("git@git.example:o/r.git", "git.example/o/r"),
            ("git@GIT.example:o/r", "git.example/o/r"),
            ("git.example:o/r.git", "git.example/o/r"),
            ("git@git.example:/o/r.git", "git.example/o/r"),
            ("ssh://git@git.example/o/r", "git.example/o/r"),
            ("ssh://git@git.example:22/o/r", "git.example/o/r"),
            ("ssh://git@git.example:2222/o/r.git", "git.example/o/r"),
            ("SSH://git@git.example/o/r", "git.example/o/r"),
            ("git://git.example/o/r.git", "git.example/o/r"),
            ("  https://git.example/o/r  ", "git.example/o/r"),
            ("https://git.example/o/r?ref=x#y", "git.example/o/r"),
            ("https://[::1]:8080/o/r.git", "::1/o/r"),
            ("ssh://git@[::1]/o/r", "::1/o/r"),
            (
                "https://git.example/group/sub/r.git",
                "git.example/group/sub/r",
            ),
            // The path keeps its case.
            ("https://git.example/O/R", "git.example/O/R"),
            // Local repositories: no host.
            ("file:///srv/git/r.git", "/srv/git/r"),
            ("/srv/git/r.git", "/srv/git/r"),
            ("/srv/git/r/", "/srv/git/r"),
        ];
        for (url, identity) in table {
            assert_eq!(repository_identity(url), identity, "{url}");
        }
    }

    #[test]
    fn same_repository_tells_repositories_apart() {
        let same = [
            "https://git.example/o/r",
            "https://git.example/o/r.git",
            "git@git.example:o/r.git",
            "ssh://git@git.example/o/r",
            "ssh://git@GIT.EXAMPLE:22/o/r/",
            "http://git.example/o/r",
        ];
        for a in same {
            for b in same {
                assert!(same_repository(a, b), "{a} {b}");
            }
        }
        for (a, b) in [
            ("https://git.example/o/r", "https://git.example/o/s"),
            ("https://git.example/o/r", "https://other.example/o/r"),
            ("https://git.example/o/r", "https://git.example/x/o/r"),
            ("https://git.example/o/r", "https://git.example/O/r"),
            (
                "file:///srv/git/r.git",
                "http://127.0.0.1:8080/srv/git/r.git",
            ),
            ("file:///srv/git/r.git", "/srv/git/other.git"),
        ] {
            assert!(!same_repository(a, b), "{a} {b}");
        }
    }

    fn read_text(text: &str) -> Result<GitRepository, Vec<String>> {
        let doc = crate::yaml::parse_one(text).unwrap();
        read(&doc, "repo.yaml").map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn reads_what_the_job_honours() {
        let r = read_text(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet}\nspec:\n  url: https://example.com/fleet\n  ref: {branch: main}\n  secretRef: {name: token}\n  provider: generic\n  interval: 1m\n",
        )
        .unwrap();
        assert_eq!(r.namespace, "default");
        assert_eq!(r.url, "https://example.com/fleet");
        assert_eq!(r.secret_name.as_deref(), Some("token"));
        assert_eq!(r.reference.and_then(|g| g.branch).as_deref(), Some("main"));
    }

    #[test]
    fn every_problem_at_its_line() {
        let errors = read_text(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet, namespace: ns}\nspec:\n  url: ''\n  secretRef: {}\n  proxySecretRef: {name: proxy}\n  recurseSubmodules: true\n",
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "repo.yaml:7:19: error: GitRepository ns/fleet: spec.proxySecretRef is not supported by `image-update job`",
                "repo.yaml:8:22: error: GitRepository ns/fleet: spec.recurseSubmodules is not supported by `image-update job`",
                "repo.yaml:5:3: error: GitRepository ns/fleet: spec.url is missing",
                "repo.yaml:6:14: error: GitRepository ns/fleet: spec.secretRef.name is missing",
            ]
        );
    }
}
