//! What every provider's calls share: the HTTP client, the repository and the `Authorization`
//! header (a [`Secret`], hidden from every message the client writes).

use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;
use crate::http::{Http, Method, Repeat, Response};
use crate::remote::Repository;
use crate::status::fail;
use image_update_secret::Secret;

pub(crate) struct Client {
    pub(crate) http: Arc<Http>,
    pub(crate) repo: Repository,
    /// `SCHEME TOKEN`.
    auth: Secret,
}

impl Client {
    /// A client sending `Authorization: SCHEME TOKEN` (`Bearer`, or Gitea's `token`).
    pub(crate) fn new(http: Arc<Http>, repo: Repository, scheme: &str, token: &Secret) -> Client {
        let auth = Secret::new(format!("{scheme} {}", token.expose()));
        http.hide(&auth);
        Client { http, repo, auth }
    }

    pub(crate) fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        repeat: Repeat,
        operation: &str,
    ) -> Result<Response, Error> {
        self.http
            .send(method, url, &self.auth, body, repeat, operation)
    }

    /// [`Client::send`], failing unless `accepted` takes the answer.
    pub(crate) fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        repeat: Repeat,
        operation: &str,
        accepted: impl Fn(&Response) -> bool,
    ) -> Result<Response, Error> {
        let response = self.send(method, url, body, repeat, operation)?;
        if accepted(&response) {
            Ok(response)
        } else {
            Err(self.fail(&response, operation))
        }
    }

    /// Ask `users` and `teams` to review pull request `number`, as GitHub and Gitea (whose API
    /// copies GitHub's here) take it: `POST {pulls}/NUMBER/requested_reviewers` at `url`.
    pub(crate) fn request_reviewers(
        &self,
        url: &str,
        number: u64,
        users: &[String],
        teams: &[String],
        accepted: impl Fn(&Response) -> bool,
    ) -> Result<(), Error> {
        let names: Vec<&str> = users.iter().chain(teams).map(String::as_str).collect();
        let operation = format!(
            "asking {} for a review of pull request #{number} of {}",
            names.join(", "),
            self.repo.path
        );
        let mut body = serde_json::json!({});
        if !users.is_empty() {
            body["reviewers"] = serde_json::json!(users);
        }
        if !teams.is_empty() {
            body["team_reviewers"] = serde_json::json!(teams);
        }
        self.call(
            Method::Post,
            url,
            Some(&body),
            Repeat::Safe,
            &operation,
            accepted,
        )
        .map(drop)
    }

    /// The error of an answer that is not the one asked for.
    pub(crate) fn fail(&self, response: &Response, operation: &str) -> Error {
        fail(&self.http, response, operation, &self.repo.path)
    }
}
