//! Gitea's and Forgejo's REST API (v1; Forgejo keeps Gitea's).
//!
//! Look-up: `GET /repos/{owner}/{repo}/pulls/{base}/{head}` (one call). That call returns one
//! request for the pair in no stated order, so when it is not open all requests are listed
//! (`GET /repos/{owner}/{repo}/pulls?state=all`, 50 a page) for an open one, else the newest
//! closed one; likewise for a base branch with a `/`, which the call's route cannot hold. Creation: `POST .../pulls` (with
//! the assignees). Edit, reopen, close and assignees: `PATCH .../pulls/{index}`. Labels and
//! comments through the issue (`/issues/{index}/labels`, `/comments`; labels by name must
//! exist). Reviewers: `POST .../pulls/{index}/requested_reviewers`. Auto-merge: `POST
//! .../pulls/{index}/merge` with `merge_when_checks_succeed`. Drafts are titles starting with
//! `WIP: `.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::client::Client;
use crate::error::{Error, ErrorKind};
use crate::http::{Http, Method, Repeat, Response};
use crate::remote::Repository;
use crate::request::{Api, Created, Edit, Edited, Found, MergeMethod, Options, Proposal, State};
use crate::status::{enc, invalid, says_exists};
use image_update_secret::Secret;

/// Pages of open requests read when looking for one by head and base.
const MAX_PAGES: u32 = 20;

pub(crate) struct Gitea {
    client: Client,
}

impl Gitea {
    pub(crate) fn new(http: Arc<Http>, repo: Repository, token: &Secret) -> Gitea {
        Gitea {
            client: Client::new(http, repo, "token", token),
        }
    }

    fn url(&self, tail: &str) -> String {
        format!(
            "{}/repos/{}/{}{tail}",
            self.client.repo.api,
            enc(self.client.repo.owner()),
            enc(self.client.repo.name())
        )
    }

    fn noun(&self) -> &'static str {
        "pull request"
    }

    fn patch(&self, found: &Found, body: &Value, operation: &str) -> Result<Response, Error> {
        let url = self.url(&format!("/pulls/{}", found.number));
        self.client
            .send(Method::Patch, &url, Some(body), Repeat::Safe, operation)
    }

    /// The request from `head` into `base` in the list of requests in `state` (`open` or
    /// `all`): an open one, else the newest closed one that was not merged.
    fn list(&self, head: &str, base: &str, state: &str) -> Result<Option<Found>, Error> {
        let operation = format!(
            "listing the {} pull requests of {} (looking for `{head}` into `{base}`)",
            if state == "open" { "open" } else { "" },
            self.client.repo.path
        )
        .replace("the  pull", "the pull");
        let mut closed: Option<Found> = None;
        for page in 1..=MAX_PAGES {
            let url = self.url(&format!("/pulls?state={state}&page={page}&limit=50"));
            let response = self
                .client
                .send(Method::Get, &url, None, Repeat::Safe, &operation)?;
            if !response.ok() {
                return Err(self.client.fail(&response, &operation));
            }
            let Some(items) = response.json.as_array() else {
                return Err(invalid(&self.client.http, &response, &operation, "a list"));
            };
            for item in items {
                let refs = |side: &str| {
                    item.get(side)
                        .and_then(|s| s.get("ref"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                if refs("head").as_deref() == Some(head) && refs("base").as_deref() == Some(base) {
                    let one = found(item).ok_or_else(|| {
                        invalid(&self.client.http, &response, &operation, "pull requests")
                    })?;
                    match one.state {
                        State::Open => return Ok(Some(one)),
                        State::Closed if closed.as_ref().is_none_or(|c| c.number < one.number) => {
                            closed = Some(one);
                        }
                        _ => {}
                    }
                }
            }
            if items.len() < 50 {
                break;
            }
        }
        Ok(closed)
    }
}

fn found(value: &Value) -> Option<Found> {
    let strings = |key: &str, field: &str| -> Vec<String> {
        value
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.get(field).and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let state = match value.get("state")?.as_str()? {
        "open" => State::Open,
        _ if value.get("merged").and_then(Value::as_bool) == Some(true) => State::Merged,
        _ => State::Closed,
    };
    Some(Found {
        number: value.get("number")?.as_u64()?,
        url: value.get("html_url")?.as_str()?.to_owned(),
        state,
        title: value.get("title")?.as_str()?.to_owned(),
        body: value
            .get("body")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        labels: strings("labels", "name"),
        assignees: strings("assignees", "login"),
        ..Found::default()
    })
}

impl Api for Gitea {
    fn find(&self, head: &str, base: &str) -> Result<Option<Found>, Error> {
        if base.contains('/') {
            return self.list(head, base, "all");
        }
        let operation = format!(
            "looking up the pull request from `{head}` into `{base}` of {}",
            self.client.repo.path
        );
        let url = self.url(&format!("/pulls/{}/{}", enc(base), enc(head)));
        let response = self
            .client
            .send(Method::Get, &url, None, Repeat::Safe, &operation)?;
        if response.status == 404 {
            return Ok(None);
        }
        if !response.ok() {
            return Err(self.client.fail(&response, &operation));
        }
        let one = found(&response.json)
            .ok_or_else(|| invalid(&self.client.http, &response, &operation, "a pull request"))?;
        if one.state == State::Open {
            return Ok(Some(one));
        }
        self.list(head, base, "all")
    }

    fn find_open(&self, head: &str, base: &str) -> Result<Option<Found>, Error> {
        self.list(head, base, "open")
    }

    fn create_sets_assignees(&self) -> bool {
        true
    }

    fn create(&self, proposal: &Proposal, options: &Options) -> Result<Created, Error> {
        let operation = format!(
            "opening a {} from `{}` into `{}` of {}",
            self.noun(),
            proposal.head,
            proposal.base,
            self.client.repo.path
        );
        let mut body = json!({
            "head": proposal.head,
            "base": proposal.base,
            "title": proposal.title,
            "body": proposal.body,
        });
        let assignees = crate::request::missing(&options.assignees, &[]);
        if !assignees.is_empty() {
            body["assignees"] = json!(assignees);
        }
        let response = self.client.send(
            Method::Post,
            &self.url("/pulls"),
            Some(&body),
            Repeat::Safe,
            &operation,
        )?;
        match response.status {
            201 => found(&response.json)
                .map(|f| Created::New(Box::new(f)))
                .ok_or_else(|| invalid(&self.client.http, &response, &operation, "a pull request")),
            409 | 422 if says_exists(&self.client.http, &response) => Ok(Created::AlreadyExists),
            404 => Err(Error::new(
                ErrorKind::NotFound,
                Some(404),
                format!(
                    "{operation}: {} answered 404 Not Found ({}): the repository {}, or its \
                     branch `{}` or `{}`, does not exist, or the token cannot see it",
                    self.client.http.provider,
                    self.client.http.provider_message(&response),
                    self.client.repo.path,
                    proposal.base,
                    proposal.head
                ),
            )),
            _ => Err(self.client.fail(&response, &operation)),
        }
    }

    fn edit(&self, found: &Found, edit: &Edit<'_>) -> Result<Edited, Error> {
        let operation = format!(
            "{} pull request #{} of {}",
            if edit.reopen { "reopening" } else { "updating" },
            found.number,
            self.client.repo.path
        );
        let mut body = json!({});
        if let Some(title) = edit.title {
            body["title"] = title.into();
        }
        if let Some(text) = edit.body {
            body["body"] = text.into();
        }
        if edit.reopen {
            body["state"] = "open".into();
        }
        let response = self.patch(found, &body, &operation)?;
        match response.status {
            200 | 201 => Ok(Edited::Done),
            409 | 412 | 422 if edit.reopen => Ok(Edited::ReopenRefused),
            _ => Err(self.client.fail(&response, &operation)),
        }
    }

    fn add_labels(&self, found: &Found, labels: &[String]) -> Result<(), Error> {
        let operation = format!(
            "adding the labels {} to pull request #{} of {} (they must exist in the repository \
             or its organisation)",
            labels.join(", "),
            found.number,
            self.client.repo.path
        );
        let url = self.url(&format!("/issues/{}/labels", found.number));
        let body = json!({ "labels": labels });
        self.client
            .call(
                Method::Post,
                &url,
                Some(&body),
                Repeat::Safe,
                &operation,
                Response::ok,
            )
            .map(drop)
    }

    fn add_assignees(&self, found: &Found, assignees: &[String]) -> Result<(), Error> {
        let operation = format!(
            "assigning {} to pull request #{} of {}",
            assignees.join(", "),
            found.number,
            self.client.repo.path
        );
        let mut all = found.assignees.clone();
        all.extend(assignees.iter().cloned());
        let response = self.patch(found, &json!({ "assignees": all }), &operation)?;
        if response.ok() {
            Ok(())
        } else {
            Err(self.client.fail(&response, &operation))
        }
    }

    fn request_reviewers(
        &self,
        found: &Found,
        users: &[String],
        teams: &[String],
    ) -> Result<(), Error> {
        let url = self.url(&format!("/pulls/{}/requested_reviewers", found.number));
        self.client
            .request_reviewers(&url, found.number, users, teams, Response::ok)
    }

    fn auto_merge(&self, found: &Found, method: MergeMethod) -> Result<(), Error> {
        let operation = format!(
            "setting pull request #{} of {} to merge when its checks succeed",
            found.number, self.client.repo.path
        );
        let method = match method {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        };
        let url = self.url(&format!("/pulls/{}/merge", found.number));
        let body = json!({ "Do": method, "merge_when_checks_succeed": true });
        self.client
            .call(
                Method::Post,
                &url,
                Some(&body),
                Repeat::Safe,
                &operation,
                Response::ok,
            )
            .map(drop)
    }

    fn comment(&self, found: &Found, text: &str) -> Result<(), Error> {
        let operation = format!(
            "commenting on pull request #{} of {}",
            found.number, self.client.repo.path
        );
        let url = self.url(&format!("/issues/{}/comments", found.number));
        self.client
            .call(
                Method::Post,
                &url,
                Some(&json!({ "body": text })),
                Repeat::Once,
                &operation,
                |r| r.status == 201,
            )
            .map(drop)
    }

    fn close(&self, found: &Found) -> Result<(), Error> {
        let operation = format!(
            "closing pull request #{} of {}",
            found.number, self.client.repo.path
        );
        let response = self.patch(found, &json!({ "state": "closed" }), &operation)?;
        if response.ok() {
            Ok(())
        } else {
            Err(self.client.fail(&response, &operation))
        }
    }
}
