//! Links to an image's source: the source URL an image records, normalised to the repository's
//! web address, and the commit and compare pages in each forge's own form. Pure functions.

use std::collections::BTreeMap;

/// A forge that serves a source repository, for its links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forge {
    GitHub,
    GitLab,
    /// Gitea and Forgejo (Codeberg): the same pages.
    Gitea,
    BitbucketCloud,
    BitbucketServer,
    AzureDevOps,
}

impl Forge {
    /// The name reports use.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Forge::GitHub => "github",
            Forge::GitLab => "gitlab",
            Forge::Gitea => "gitea",
            Forge::BitbucketCloud => "bitbucket",
            Forge::BitbucketServer => "bitbucket-server",
            Forge::AzureDevOps => "azure-devops",
        }
    }

    /// A forge named in the settings (`github`, `gitlab`, `gitea`, `forgejo`, `bitbucket`,
    /// `bitbucket-server`, `azure-devops`).
    pub(crate) fn parse(name: &str) -> Option<Forge> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "github" => Forge::GitHub,
            "gitlab" => Forge::GitLab,
            "gitea" | "forgejo" => Forge::Gitea,
            "bitbucket" | "bitbucket-cloud" => Forge::BitbucketCloud,
            "bitbucket-server" | "bitbucket-data-center" => Forge::BitbucketServer,
            "azure-devops" => Forge::AzureDevOps,
            _ => return None,
        })
    }

    /// The forge of a well-known host; others only by the settings.
    fn of_host(host: &str) -> Option<Forge> {
        Some(match host {
            "github.com" => Forge::GitHub,
            "gitlab.com" => Forge::GitLab,
            "codeberg.org" | "gitea.com" => Forge::Gitea,
            "bitbucket.org" => Forge::BitbucketCloud,
            "dev.azure.com" => Forge::AzureDevOps,
            _ => return None,
        })
    }
}

/// A source repository's web address and its forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceRepo {
    /// `https://HOST/PATH` without `.git`, a trailing `/`, credentials, a query or a page path.
    pub url: String,
    pub host: String,
    pub forge: Option<Forge>,
}

/// The repository a source URL names: `https://host/o/r`, `http://`, `git://`, `ssh://[user@]host[:port]/o/r`,
/// scp-like `git@host:o/r.git`, or `host/o/r`; without `.git`, a trailing `/`, user information,
/// a query, a fragment, and the page paths (`/tree/…`, `/blob/…`, `/-/…`, `/src/…`, `/commit/…`).
/// `forges` names the forge of other hosts (`HOST: KIND`). `None` for what names no repository
/// (a path of one segment, spaces or control characters, another scheme).
pub(crate) fn normalise(source: &str, forges: &BTreeMap<String, Forge>) -> Option<SourceRepo> {
    let s = source.trim();
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (host_part, path) = if let Some((scheme, rest)) = s.split_once("://") {
        if !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "https" | "http" | "git" | "ssh" | "git+ssh" | "ssh+git"
        ) {
            return None;
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        (authority, path)
    } else if let Some((before, path)) = s.split_once(':').filter(|(b, p)| {
        // scp-like: `[user@]host:path` (not `host:port/…`).
        !b.contains('/')
            && !p.starts_with("//")
            && !p
                .split('/')
                .next()
                .is_some_and(|x| x.chars().all(|c| c.is_ascii_digit()) && !x.is_empty())
    }) {
        (before, path)
    } else {
        s.split_once('/')?
    };
    let authority = host_part.rsplit('@').next().unwrap_or(host_part);
    let host = authority
        .split(':')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let host_ok = !host.is_empty()
        && host.contains('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    if !host_ok {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let mut segments: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let forge = forges
        .get(&host)
        .copied()
        .or_else(|| Forge::of_host(&host))
        .or_else(|| {
            (host == "ssh.dev.azure.com" || host.ends_with(".visualstudio.com"))
                .then_some(Forge::AzureDevOps)
        });
    // Page paths: everything from the first page keyword on.
    let cut_at = segments.iter().position(|s| {
        matches!(
            *s,
            "-" | "tree"
                | "blob"
                | "src"
                | "commit"
                | "commits"
                | "releases"
                | "tags"
                | "compare"
                | "browse"
        )
    });
    if let Some(i) = cut_at {
        segments.truncate(i);
    }
    let (host, segments) = match forge {
        Some(Forge::AzureDevOps) => azure(&host, segments)?,
        Some(Forge::BitbucketServer) => bitbucket_server(segments).map(|s| (host.clone(), s))?,
        Some(Forge::GitHub | Forge::BitbucketCloud) => {
            segments.truncate(2);
            (host, segments.into_iter().map(str::to_owned).collect())
        }
        _ => (host, segments.into_iter().map(str::to_owned).collect()),
    };
    let mut segments: Vec<String> = segments;
    if let Some(last) = segments.last_mut()
        && let Some(stripped) = last.strip_suffix(".git")
    {
        *last = stripped.to_owned();
    }
    segments.retain(|s| !s.is_empty());
    if segments.len() < 2
        || segments.iter().any(|s| {
            s == "."
                || s == ".."
                || s.contains(['<', '>', '"', '\'', '`', '\\', '(', ')', '[', ']'])
        })
    {
        return None;
    }
    Some(SourceRepo {
        url: format!("https://{host}/{}", segments.join("/")),
        host,
        forge,
    })
}

/// Azure DevOps: `dev.azure.com/ORG/PROJECT/_git/REPO`, from the web or HTTPS clone form, the
/// SSH form `ssh.dev.azure.com:v3/ORG/PROJECT/REPO`, or `ORG.visualstudio.com/PROJECT/_git/REPO`.
fn azure(host: &str, segments: Vec<&str>) -> Option<(String, Vec<String>)> {
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    if host == "ssh.dev.azure.com" {
        let [_v3, org, project, repo, ..] = segments.as_slice() else {
            return None;
        };
        return Some((
            "dev.azure.com".to_owned(),
            owned(&[org, project, "_git", repo]),
        ));
    }
    if let Some(org) = host.strip_suffix(".visualstudio.com") {
        let [project, "_git", repo, ..] = segments.as_slice() else {
            return None;
        };
        return Some((
            "dev.azure.com".to_owned(),
            owned(&[org, project, "_git", repo]),
        ));
    }
    let [org, project, "_git", repo, ..] = segments.as_slice() else {
        return None;
    };
    Some((host.to_owned(), owned(&[org, project, "_git", repo])))
}

/// Bitbucket Server: `projects/P/repos/R`, from the web form or the clone form `scm/p/r.git`.
fn bitbucket_server(segments: Vec<&str>) -> Option<Vec<String>> {
    let (project, repo) = match segments.as_slice() {
        ["projects", p, "repos", r, ..] => ((*p).to_owned(), (*r).to_owned()),
        ["scm", p, r, ..] => (p.to_ascii_uppercase(), (*r).to_owned()),
        [p, r] => (p.to_ascii_uppercase(), (*r).to_owned()),
        _ => return None,
    };
    let repo = repo.strip_suffix(".git").unwrap_or(&repo).to_owned();
    Some(vec![
        "projects".to_owned(),
        project,
        "repos".to_owned(),
        repo,
    ])
}

/// Whether `revision` is a commit id (hex, 7 to 64 characters).
pub(crate) fn is_commit(revision: &str) -> bool {
    (7..=64).contains(&revision.len()) && revision.chars().all(|c| c.is_ascii_hexdigit())
}

/// `ref` made safe in a URL path or query: characters outside `A-Za-z0-9._-` percent-encoded
/// (a `/` in a tag too).
fn encode(r: &str) -> String {
    let mut out = String::with_capacity(r.len());
    for b in r.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The page of commit `revision`.
pub(crate) fn commit_url(forge: Forge, repo: &str, revision: &str) -> String {
    let r = encode(revision);
    match forge {
        Forge::GitHub | Forge::Gitea | Forge::AzureDevOps => format!("{repo}/commit/{r}"),
        Forge::GitLab => format!("{repo}/-/commit/{r}"),
        Forge::BitbucketCloud | Forge::BitbucketServer => format!("{repo}/commits/{r}"),
    }
}

/// The page comparing `old` with `new` (commits, or tags with `tags`).
pub(crate) fn compare_url(forge: Forge, repo: &str, old: &str, new: &str, tags: bool) -> String {
    let (o, n) = (encode(old), encode(new));
    match forge {
        Forge::GitHub | Forge::Gitea => format!("{repo}/compare/{o}...{n}"),
        Forge::GitLab => format!("{repo}/-/compare/{o}...{n}"),
        Forge::BitbucketCloud => format!("{repo}/branches/compare/{n}%0D{o}"),
        Forge::BitbucketServer => {
            format!("{repo}/compare/commits?sourceBranch={n}&targetBranch={o}")
        }
        Forge::AzureDevOps => {
            let kind = if tags { "GT" } else { "GC" };
            format!("{repo}/branchCompare?baseVersion={kind}{o}&targetVersion={kind}{n}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source URL as written, and what it normalises to (`None`: refused).
    type Row = (&'static str, Option<(&'static str, Option<Forge>)>);

    const NORMALISED: &[Row] = &[
        (
            "https://github.com/acme/web",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "https://github.com/acme/web.git",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "https://github.com/acme/web/",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "https://github.com/acme/web/tree/main/cmd",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "https://github.com/acme/web/blob/v1/Dockerfile",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "git@github.com:acme/web.git",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "ssh://git@github.com/acme/web.git",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "git://github.com/acme/web",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "github.com/acme/web",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "https://user:token@github.com/acme/web?x=1#y",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "https://GitHub.com/acme/web",
            Some(("https://github.com/acme/web", Some(Forge::GitHub))),
        ),
        (
            "https://gitlab.com/acme/group/web/-/tree/main",
            Some(("https://gitlab.com/acme/group/web", Some(Forge::GitLab))),
        ),
        (
            "git@gitlab.com:acme/group/web.git",
            Some(("https://gitlab.com/acme/group/web", Some(Forge::GitLab))),
        ),
        (
            "https://codeberg.org/acme/web/src/branch/main",
            Some(("https://codeberg.org/acme/web", Some(Forge::Gitea))),
        ),
        (
            "https://bitbucket.org/acme/web/src/main/",
            Some((
                "https://bitbucket.org/acme/web",
                Some(Forge::BitbucketCloud),
            )),
        ),
        (
            "https://dev.azure.com/acme/shop/_git/web",
            Some((
                "https://dev.azure.com/acme/shop/_git/web",
                Some(Forge::AzureDevOps),
            )),
        ),
        (
            "https://acme@dev.azure.com/acme/shop/_git/web",
            Some((
                "https://dev.azure.com/acme/shop/_git/web",
                Some(Forge::AzureDevOps),
            )),
        ),
        (
            "git@ssh.dev.azure.com:v3/acme/shop/web",
            Some((
                "https://dev.azure.com/acme/shop/_git/web",
                Some(Forge::AzureDevOps),
            )),
        ),
        (
            "https://acme.visualstudio.com/shop/_git/web",
            Some((
                "https://dev.azure.com/acme/shop/_git/web",
                Some(Forge::AzureDevOps),
            )),
        ),
        (
            "https://git.acme.internal/team/web.git",
            Some(("https://git.acme.internal/team/web", Some(Forge::GitLab))),
        ),
        (
            "ssh://git@bitbucket.acme.internal:7999/shop/web.git",
            Some((
                "https://bitbucket.acme.internal/projects/SHOP/repos/web",
                Some(Forge::BitbucketServer),
            )),
        ),
        (
            "https://bitbucket.acme.internal/scm/shop/web.git",
            Some((
                "https://bitbucket.acme.internal/projects/SHOP/repos/web",
                Some(Forge::BitbucketServer),
            )),
        ),
        (
            "https://bitbucket.acme.internal/projects/SHOP/repos/web/browse",
            Some((
                "https://bitbucket.acme.internal/projects/SHOP/repos/web",
                Some(Forge::BitbucketServer),
            )),
        ),
        (
            "https://example.org/acme/web",
            Some(("https://example.org/acme/web", None)),
        ),
        (
            "https://example.org:8443/acme/web",
            Some(("https://example.org/acme/web", None)),
        ),
        ("test", None),
        ("https://github.com/acme", None),
        ("file:///src/web", None),
        ("javascript:alert(1)", None),
        ("https://github.com/acme/web extra", None),
        ("https://github.com/acme/<script>", None),
        ("", None),
    ];

    #[test]
    fn sources_normalised() {
        let mut forges = BTreeMap::new();
        forges.insert("git.acme.internal".to_owned(), Forge::GitLab);
        forges.insert("bitbucket.acme.internal".to_owned(), Forge::BitbucketServer);
        for (input, want) in NORMALISED {
            let got = normalise(input, &forges).map(|r| (r.url, r.forge));
            let want = want.map(|(u, f)| (u.to_owned(), f));
            assert_eq!(got, want, "{input}");
        }
    }

    #[test]
    fn links_in_each_forges_form() {
        let (o, n) = ("3f2a1b0", "9c1d2e3");
        let table: &[(Forge, &str, &str, &str)] = &[
            (
                Forge::GitHub,
                "https://github.com/a/b",
                "https://github.com/a/b/commit/9c1d2e3",
                "https://github.com/a/b/compare/3f2a1b0...9c1d2e3",
            ),
            (
                Forge::GitLab,
                "https://gitlab.com/a/b",
                "https://gitlab.com/a/b/-/commit/9c1d2e3",
                "https://gitlab.com/a/b/-/compare/3f2a1b0...9c1d2e3",
            ),
            (
                Forge::Gitea,
                "https://codeberg.org/a/b",
                "https://codeberg.org/a/b/commit/9c1d2e3",
                "https://codeberg.org/a/b/compare/3f2a1b0...9c1d2e3",
            ),
            (
                Forge::BitbucketCloud,
                "https://bitbucket.org/a/b",
                "https://bitbucket.org/a/b/commits/9c1d2e3",
                "https://bitbucket.org/a/b/branches/compare/9c1d2e3%0D3f2a1b0",
            ),
            (
                Forge::BitbucketServer,
                "https://bb.acme/projects/A/repos/b",
                "https://bb.acme/projects/A/repos/b/commits/9c1d2e3",
                "https://bb.acme/projects/A/repos/b/compare/commits?sourceBranch=9c1d2e3&targetBranch=3f2a1b0",
            ),
            (
                Forge::AzureDevOps,
                "https://dev.azure.com/a/p/_git/b",
                "https://dev.azure.com/a/p/_git/b/commit/9c1d2e3",
                "https://dev.azure.com/a/p/_git/b/branchCompare?baseVersion=GC3f2a1b0&targetVersion=GC9c1d2e3",
            ),
        ];
        for (forge, repo, commit, compare) in table {
            assert_eq!(commit_url(*forge, repo, n), *commit, "{forge:?}");
            assert_eq!(
                compare_url(*forge, repo, o, n, false),
                *compare,
                "{forge:?}"
            );
        }
        assert_eq!(
            compare_url(
                Forge::AzureDevOps,
                "https://dev.azure.com/a/p/_git/b",
                "v1.0",
                "v1.1",
                true
            ),
            "https://dev.azure.com/a/p/_git/b/branchCompare?baseVersion=GTv1.0&targetVersion=GTv1.1"
        );
        assert_eq!(
            compare_url(
                Forge::GitHub,
                "https://github.com/a/b",
                "release/1 x",
                "v2+b",
                true
            ),
            "https://github.com/a/b/compare/release%2F1%20x...v2%2Bb"
        );
        assert!(is_commit("3f2a1b0") && is_commit(&"a".repeat(40)));
        assert!(!is_commit("3f2a1b") && !is_commit("v1.0.0") && !is_commit(&"a".repeat(65)));
    }
}
