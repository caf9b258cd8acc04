//! Pull and merge requests for image-update: open the one request from a head branch into a
//! base branch, or update the open one, on GitHub (REST v3), GitLab (REST v4), Gitea and
//! Forgejo (REST v1).
//!
//! ```no_run
//! use image_update_forge::{Credentials, Forge, HttpSettings, Options, Proposal, Repository, Secret};
//!
//! # fn main() -> Result<(), image_update_forge::Error> {
//! let repo = Repository::locate("https://github.com/acme/fleet.git", None, None)?;
//! let token = Credentials::Token(Secret::new(std::env::var("TOKEN").unwrap_or_default()));
//! let forge = Forge::connect(repo, &token, &HttpSettings::default())?;
//! let pr = forge.open_or_update(
//!     &Proposal {
//!         head: "image-update/flux-system-apps".into(),
//!         base: "main".into(),
//!         title: "Update images".into(),
//!         body: "...".into(),
//!     },
//!     &Options::default(),
//! )?;
//! // What the caller shows (the library prints nothing):
//! let _shown = format!("{} #{} {}", pr.url, pr.number, pr.action.as_str());
//! # Ok(())
//! # }
//! ```
//!
//! The flow (look up, then update, reopen or create; "already exists" races resolved by
//! updating the request the other run made) is in [`Forge::open_or_update`]; the head branch,
//! title and body come from [`Content`]. Every token lives in a [`Secret`] and no error or log
//! line carries one. Prints nothing.

mod app;
mod client;
mod error;
mod gitea;
mod github;
mod gitlab;
mod http;
mod remote;
mod render;
mod request;
mod status;

use std::sync::Arc;

pub use error::{Error, ErrorKind};
pub use http::{HttpSettings, RetryPolicy};
/// The workspace's one secret type: zeroised, never shown by `Debug` or `Display`.
pub use image_update_secret::Secret;
pub use remote::{Provider, Repository};
pub use render::{
    CHANGE_SET_BRANCH_TEMPLATE, Content, DEFAULT_BRANCH_TEMPLATE,
    DEFAULT_BRANCH_TEMPLATE_WITHOUT_AUTOMATION, MAX_BRANCH_LEN, Row, check_branch,
};
pub use request::{Action, MergeMethod, Options, Proposal, PullRequest, WhenNothingToDo};

/// How the client proves itself.
#[derive(Clone, Debug)]
pub enum Credentials {
    /// A token: a GitHub personal access token (classic or fine-grained) or an installation
    /// token, a GitLab personal, project or group access token, a Gitea or Forgejo access token.
    Token(Secret),
    /// A GitHub App: its ID (or client ID) and private key (PEM) are exchanged for an
    /// installation token of the repository.
    GitHubApp {
        /// The App's ID or client ID.
        app_id: String,
        /// The App's private key, PEM.
        private_key: Secret,
        /// The installation; found from the repository when `None`.
        installation_id: Option<u64>,
    },
}

/// A connection to one repository's forge.
pub struct Forge {
    repo: Repository,
    http: Arc<http::Http>,
    api: Box<dyn request::Api>,
    token: Secret,
}

impl std::fmt::Debug for Forge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forge")
            .field("repo", &self.repo)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Forge {
    /// Connects to `repo`'s forge. With a GitHub App, this exchanges the App's key for an
    /// installation token (two calls: the installation, the token).
    ///
    /// # Errors
    /// Bad settings (CA certificates, a GitHub App on another provider, an unreadable key), or
    /// a failed token exchange.
    pub fn connect(
        repo: Repository,
        credentials: &Credentials,
        settings: &HttpSettings,
    ) -> Result<Forge, Error> {
        let http = Arc::new(http::Http::new(repo.provider, settings)?);
        let token = match credentials {
            Credentials::Token(token) => {
                if token.is_empty() {
                    return Err(Error::config(format!(
                        "no {} token: it needs {}",
                        repo.provider,
                        status::permission(repo.provider)
                    )));
                }
                http.hide(token);
                token.clone()
            }
            Credentials::GitHubApp {
                app_id,
                private_key,
                installation_id,
            } => {
                if repo.provider != Provider::GitHub {
                    return Err(Error::config(format!(
                        "a GitHub App cannot sign in to {} ({})",
                        repo.provider, repo.api
                    )));
                }
                http.hide(private_key);
                app::installation_token(&http, &repo, app_id, private_key, *installation_id)?
            }
        };
        let api: Box<dyn request::Api> = match repo.provider {
            Provider::GitHub => {
                Box::new(github::GitHub::new(Arc::clone(&http), repo.clone(), &token))
            }
            Provider::GitLab => {
                Box::new(gitlab::GitLab::new(Arc::clone(&http), repo.clone(), &token))
            }
            Provider::Gitea | Provider::Forgejo => {
                Box::new(gitea::Gitea::new(Arc::clone(&http), repo.clone(), &token))
            }
        };
        Ok(Forge {
            repo,
            http,
            api,
            token,
        })
    }

    /// The repository.
    #[must_use]
    pub fn repository(&self) -> &Repository {
        &self.repo
    }

    /// The token the calls use: the given one, or the GitHub App's installation token (which
    /// may also push: as the HTTPS password of the user `x-access-token`).
    #[must_use]
    pub fn token(&self) -> &Secret {
        &self.token
    }

    /// The title and body limits of the provider, in characters.
    #[must_use]
    pub fn limits(&self) -> (usize, usize) {
        request::limits(self.repo.provider)
    }

    /// Opens the request from `proposal.head` into `proposal.base`, or updates the one that is
    /// open (never a second one), or reopens the newest closed one (a new one when the provider
    /// refuses). The head branch must have been pushed.
    ///
    /// # Errors
    /// Every refusal of the provider, with what it said and what to change.
    pub fn open_or_update(
        &self,
        proposal: &Proposal,
        options: &Options,
    ) -> Result<PullRequest, Error> {
        request::open_or_update(self.api.as_ref(), self.repo.provider, proposal, options)
    }

    /// A run with nothing to do: the open request from `head` into `base` (if any) is left as
    /// it is ([`Action::Unchanged`]) or closed with a comment ([`Action::Closed`]).
    ///
    /// # Errors
    /// Every refusal of the provider.
    pub fn nothing_to_do(
        &self,
        head: &str,
        base: &str,
        when: &WhenNothingToDo,
    ) -> Result<Option<PullRequest>, Error> {
        request::nothing_to_do(self.api.as_ref(), head, base, when)
    }

    /// API calls made so far, token exchange included (every attempt of a retried call counts).
    #[must_use]
    pub fn api_calls(&self) -> u32 {
        self.http.calls()
    }
}
