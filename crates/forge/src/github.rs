//! GitHub's REST API (v3): github.com, GitHub Enterprise Cloud and Server.
//!
//! Look-up: `GET /repos/{owner}/{repo}/pulls?head=OWNER:BRANCH&base=BASE&state=all`, newest
//! first. Creation: `POST /repos/{owner}/{repo}/pulls` (with `draft`). Edit, reopen and close:
//! `PATCH /repos/{owner}/{repo}/pulls/{number}`. Labels, assignees and comments go through the
//! request's issue (`/issues/{number}/labels`, `/assignees`, `/comments`); reviewers through
//! `/pulls/{number}/requested_reviewers`. Auto-merge has no REST call: it is GraphQL's
//! `enablePullRequestAutoMerge`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::client::Client;
use crate::error::{Error, ErrorKind};
use crate::http::{Http, Method, Repeat, Response};
use crate::remote::Repository;
use crate::request::{Api, Created, Edit, Edited, Found, MergeMethod, Options, Proposal, State};
use crate::status::{enc, invalid, says_exists};
use image_update_secret::Secret;

pub(crate) struct GitHub {
    client: Client,
}

impl GitHub {
    pub(crate) fn new(http: Arc<Http>, repo: Repository, token: &Secret) -> GitHub {
        GitHub {
            client: Client::new(http, repo, "Bearer", token),
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

    /// The GraphQL endpoint: `https://api.github.com/graphql`, or GitHub Enterprise Server's
    /// `/api/graphql` beside its `/api/v3`.
    fn graphql_url(&self) -> String {
        match self.client.repo.api.strip_suffix("/api/v3") {
            Some(web) => format!("{web}/api/graphql"),
            None => format!("{}/graphql", self.client.repo.api),
        }
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
        _ if value.get("merged_at").is_some_and(|m| !m.is_null()) => State::Merged,
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
        node_id: value
            .get("node_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        ..Found::default()
    })
}

impl Api for GitHub {
    fn find(&self, head: &str, base: &str) -> Result<Option<Found>, Error> {
        let operation = format!(
            "looking up the pull requests from `{head}` into `{base}` of {}",
            self.client.repo.path
        );
        let url = self.url(&format!(
            "/pulls?state=all&head={}&base={}&sort=created&direction=desc&per_page=100",
            enc(&format!("{}:{head}", self.client.repo.owner())),
            enc(base)
        ));
        let response = self
            .client
            .send(Method::Get, &url, None, Repeat::Safe, &operation)?;
        if !response.ok() {
            return Err(self.client.fail(&response, &operation));
        }
        let Some(items) = response.json.as_array() else {
            return Err(invalid(&self.client.http, &response, &operation, "a list"));
        };
        let all = items
            .iter()
            .map(found)
            .collect::<Option<Vec<Found>>>()
            .ok_or_else(|| invalid(&self.client.http, &response, &operation, "pull requests"))?;
        let open = all.iter().find(|f| f.state == State::Open);
        let closed = all.iter().find(|f| f.state == State::Closed);
        Ok(open.or(closed).cloned())
    }

    fn create(&self, proposal: &Proposal, options: &Options) -> Result<Created, Error> {
        let operation = format!(
            "opening a pull request from `{}` into `{}` of {}",
            proposal.head, proposal.base, self.client.repo.path
        );
        let mut body = json!({
            "title": proposal.title,
            "head": proposal.head,
            "base": proposal.base,
            "body": proposal.body,
        });
        if options.draft {
            body["draft"] = Value::Bool(true);
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
            422 if says_exists(&self.client.http, &response) => Ok(Created::AlreadyExists),
            422 => Err(refused_creation(
                &self.client.http,
                &response,
                &operation,
                proposal,
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
        let url = self.url(&format!("/pulls/{}", found.number));
        let response =
            self.client
                .send(Method::Patch, &url, Some(&body), Repeat::Safe, &operation)?;
        match response.status {
            200 => Ok(Edited::Done),
            422 if edit.reopen => Ok(Edited::ReopenRefused),
            _ => Err(self.client.fail(&response, &operation)),
        }
    }

    fn add_labels(&self, found: &Found, labels: &[String]) -> Result<(), Error> {
        let operation = format!(
            "adding the labels {} to pull request #{} of {}",
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
                |r| r.status == 200,
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
        let url = self.url(&format!("/issues/{}/assignees", found.number));
        let body = json!({ "assignees": assignees });
        self.client
            .call(
                Method::Post,
                &url,
                Some(&body),
                Repeat::Safe,
                &operation,
                |r| r.status == 201,
            )
            .map(drop)
    }

    fn request_reviewers(
        &self,
        found: &Found,
        users: &[String],
        teams: &[String],
    ) -> Result<(), Error> {
        let url = self.url(&format!("/pulls/{}/requested_reviewers", found.number));
        self.client
            .request_reviewers(&url, found.number, users, teams, |r| r.status == 201)
    }

    fn auto_merge(&self, found: &Found, method: MergeMethod) -> Result<(), Error> {
        let operation = format!(
            "turning on auto-merge for pull request #{} of {}",
            found.number, self.client.repo.path
        );
        let method = match method {
            MergeMethod::Merge => "MERGE",
            MergeMethod::Squash => "SQUASH",
            MergeMethod::Rebase => "REBASE",
        };
        let body = json!({
            "query": "mutation($id: ID!, $method: PullRequestMergeMethod!) { \
                      enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method}) \
                      { clientMutationId } }",
            "variables": { "id": found.node_id, "method": method },
        });
        let response = self.client.send(
            Method::Post,
            &self.graphql_url(),
            Some(&body),
            Repeat::Safe,
            &operation,
        )?;
        if !response.ok() {
            return Err(self.client.fail(&response, &operation));
        }
        match response.json.get("errors") {
            Some(Value::Array(errors)) if !errors.is_empty() => Err(Error::new(
                ErrorKind::Rejected,
                Some(response.status),
                format!(
                    "{operation}: GitHub refused it ({}): auto-merge needs \"Allow auto-merge\" \
                     in the repository's settings and a branch protection rule on the base",
                    self.client.http.provider_message(&response)
                ),
            )),
            _ => Ok(()),
        }
    }

    fn comment(&self, found: &Found, text: &str) -> Result<(), Error> {
        let operation = format!(
            "commenting on pull request #{} of {}",
            found.number, self.client.repo.path
        );
        let url = self.url(&format!("/issues/{}/comments", found.number));
        let body = json!({ "body": text });
        self.client
            .call(
                Method::Post,
                &url,
                Some(&body),
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
        let url = self.url(&format!("/pulls/{}", found.number));
        let body = json!({ "state": "closed" });
        self.client
            .call(
                Method::Patch,
                &url,
                Some(&body),
                Repeat::Safe,
                &operation,
                |r| r.status == 200,
            )
            .map(drop)
    }
}

/// A 422 to a creation: a missing branch, nothing to propose, or what GitHub said.
fn refused_creation(
    http: &Http,
    response: &Response,
    operation: &str,
    proposal: &Proposal,
) -> Error {
    let said = http.provider_message(response);
    let errors = response
        .json
        .get("errors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let field = |name: &str| {
        errors
            .iter()
            .any(|e| e.get("field").and_then(Value::as_str) == Some(name))
    };
    let (kind, hint) = if field("base") {
        (
            ErrorKind::NotFound,
            format!("the base branch `{}` does not exist", proposal.base),
        )
    } else if field("head") {
        (
            ErrorKind::NotFound,
            format!(
                "the head branch `{}` does not exist (it is pushed before the request is opened)",
                proposal.head
            ),
        )
    } else if said.contains("No commits between") {
        (
            ErrorKind::Rejected,
            format!(
                "`{}` has no commit that `{}` lacks",
                proposal.head, proposal.base
            ),
        )
    } else {
        (ErrorKind::Rejected, "GitHub refused the request".to_owned())
    };
    Error::new(
        kind,
        Some(response.status),
        format!("{operation}: {hint} (422: {said})"),
    )
}
