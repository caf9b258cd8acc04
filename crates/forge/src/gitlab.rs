//! GitLab's REST API (v4): gitlab.com and self-managed instances.
//!
//! Look-up: `GET /projects/{id}/merge_requests?source_branch=HEAD&target_branch=BASE` (every
//! state, newest first). Creation: `POST /projects/{id}/merge_requests` with the labels (GitLab
//! creates missing ones). Edit, reopen, close and labels: `PUT
//! /projects/{id}/merge_requests/{iid}` (`add_labels`, `state_event`). Assignees and reviewers
//! are user ids, found with `GET /users?username=NAME`. Auto-merge: `PUT
//! .../merge` with `merge_when_pipeline_succeeds`. Comments: `POST .../notes`. Drafts are titles
//! starting with `Draft: `. The project id is its URL-encoded path.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::client::Client;
use crate::error::{Error, ErrorKind};
use crate::http::{Http, Method, Repeat, Response};
use crate::remote::Repository;
use crate::request::{Api, Created, Edit, Edited, Found, MergeMethod, Options, Proposal, State};
use crate::status::{enc, invalid, says_exists};
use image_update_secret::Secret;

pub(crate) struct GitLab {
    client: Client,
}

impl GitLab {
    pub(crate) fn new(http: Arc<Http>, repo: Repository, token: &Secret) -> GitLab {
        GitLab {
            client: Client::new(http, repo, "Bearer", token),
        }
    }

    fn url(&self, tail: &str) -> String {
        format!(
            "{}/projects/{}{tail}",
            self.client.repo.api,
            enc(&self.client.repo.path)
        )
    }

    fn put(&self, found: &Found, body: &Value, operation: &str) -> Result<Response, Error> {
        let url = self.url(&format!("/merge_requests/{}", found.number));
        self.client
            .send(Method::Put, &url, Some(body), Repeat::Safe, operation)
    }

    /// The ids of users, by user name (one call each).
    fn user_ids(&self, names: &[String], operation: &str) -> Result<Vec<u64>, Error> {
        let mut ids = Vec::new();
        for name in names {
            let url = format!("{}/users?username={}", self.client.repo.api, enc(name));
            let response = self
                .client
                .send(Method::Get, &url, None, Repeat::Safe, operation)?;
            if !response.ok() {
                return Err(self.client.fail(&response, operation));
            }
            let id = response
                .json
                .as_array()
                .and_then(|users| users.first())
                .and_then(|user| user.get("id"))
                .and_then(Value::as_u64)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::NotFound,
                        Some(response.status),
                        format!("{operation}: GitLab has no user `{name}`"),
                    )
                })?;
            ids.push(id);
        }
        Ok(ids)
    }
}

fn ids(value: &Value, key: &str) -> Vec<u64> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|users| {
            users
                .iter()
                .filter_map(|u| u.get("id").and_then(Value::as_u64))
                .collect()
        })
        .unwrap_or_default()
}

fn found(value: &Value) -> Option<Found> {
    let state = match value.get("state")?.as_str()? {
        "opened" | "locked" => State::Open,
        "merged" => State::Merged,
        _ => State::Closed,
    };
    Some(Found {
        number: value.get("iid")?.as_u64()?,
        url: value.get("web_url")?.as_str()?.to_owned(),
        state,
        title: value.get("title")?.as_str()?.to_owned(),
        body: value
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        labels: value
            .get("labels")
            .and_then(Value::as_array)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|l| l.as_str().or_else(|| l.get("name")?.as_str()))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        assignees: value
            .get("assignees")
            .and_then(Value::as_array)
            .map(|users| {
                users
                    .iter()
                    .filter_map(|u| u.get("username").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        node_id: String::new(),
        assignee_ids: ids(value, "assignees"),
        reviewer_ids: ids(value, "reviewers"),
    })
}

impl Api for GitLab {
    fn find(&self, head: &str, base: &str) -> Result<Option<Found>, Error> {
        let operation = format!(
            "looking up the merge requests from `{head}` into `{base}` of {}",
            self.client.repo.path
        );
        let url = self.url(&format!(
            "/merge_requests?source_branch={}&target_branch={}&order_by=created_at&sort=desc&per_page=100",
            enc(head),
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
            .ok_or_else(|| invalid(&self.client.http, &response, &operation, "merge requests"))?;
        let open = all.iter().find(|f| f.state == State::Open);
        let closed = all.iter().find(|f| f.state == State::Closed);
        Ok(open.or(closed).cloned())
    }

    fn create_sets_labels(&self) -> bool {
        true
    }

    fn edit_adds_labels(&self) -> bool {
        true
    }

    fn create(&self, proposal: &Proposal, options: &Options) -> Result<Created, Error> {
        let operation = format!(
            "opening a merge request from `{}` into `{}` of {}",
            proposal.head, proposal.base, self.client.repo.path
        );
        let mut body = json!({
            "source_branch": proposal.head,
            "target_branch": proposal.base,
            "title": proposal.title,
            "description": proposal.body,
        });
        let labels = crate::request::missing(&options.labels, &[]);
        if !labels.is_empty() {
            body["labels"] = labels.join(",").into();
        }
        let response = self.client.send(
            Method::Post,
            &self.url("/merge_requests"),
            Some(&body),
            Repeat::Safe,
            &operation,
        )?;
        match response.status {
            201 => found(&response.json)
                .map(|f| Created::New(Box::new(f)))
                .ok_or_else(|| {
                    invalid(&self.client.http, &response, &operation, "a merge request")
                }),
            409 | 422 if says_exists(&self.client.http, &response) => Ok(Created::AlreadyExists),
            _ => Err(self.client.fail(&response, &operation)),
        }
    }

    fn edit(&self, found: &Found, edit: &Edit<'_>) -> Result<Edited, Error> {
        let operation = format!(
            "{} merge request !{} of {}",
            if edit.reopen { "reopening" } else { "updating" },
            found.number,
            self.client.repo.path
        );
        let mut body = json!({});
        if let Some(title) = edit.title {
            body["title"] = title.into();
        }
        if let Some(text) = edit.body {
            body["description"] = text.into();
        }
        if edit.reopen {
            body["state_event"] = "reopen".into();
        }
        if !edit.add_labels.is_empty() {
            body["add_labels"] = edit.add_labels.join(",").into();
        }
        let response = self.put(found, &body, &operation)?;
        match response.status {
            200 => Ok(Edited::Done),
            400 | 405 | 409 | 422 if edit.reopen => Ok(Edited::ReopenRefused),
            _ => Err(self.client.fail(&response, &operation)),
        }
    }

    fn add_labels(&self, found: &Found, labels: &[String]) -> Result<(), Error> {
        let operation = format!(
            "adding the labels {} to merge request !{} of {}",
            labels.join(", "),
            found.number,
            self.client.repo.path
        );
        let response = self.put(
            found,
            &json!({ "add_labels": labels.join(",") }),
            &operation,
        )?;
        if response.status == 200 {
            Ok(())
        } else {
            Err(self.client.fail(&response, &operation))
        }
    }

    fn add_assignees(&self, found: &Found, assignees: &[String]) -> Result<(), Error> {
        let operation = format!(
            "assigning {} to merge request !{} of {}",
            assignees.join(", "),
            found.number,
            self.client.repo.path
        );
        let mut ids = found.assignee_ids.clone();
        ids.extend(self.user_ids(assignees, &operation)?);
        let response = self.put(found, &json!({ "assignee_ids": ids }), &operation)?;
        if response.status == 200 {
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
        let operation = format!(
            "asking {} for a review of merge request !{} of {}",
            users.join(", "),
            found.number,
            self.client.repo.path
        );
        if !teams.is_empty() {
            return Err(Error::config(format!(
                "{operation}: GitLab has no team reviewers (asked for {})",
                teams.join(", ")
            )));
        }
        let mut ids = found.reviewer_ids.clone();
        ids.extend(self.user_ids(users, &operation)?);
        let response = self.put(found, &json!({ "reviewer_ids": ids }), &operation)?;
        if response.status == 200 {
            Ok(())
        } else {
            Err(self.client.fail(&response, &operation))
        }
    }

    fn auto_merge(&self, found: &Found, method: MergeMethod) -> Result<(), Error> {
        let operation = format!(
            "setting merge request !{} of {} to merge when its pipeline succeeds",
            found.number, self.client.repo.path
        );
        let mut body = json!({ "merge_when_pipeline_succeeds": true });
        match method {
            MergeMethod::Squash => body["squash"] = true.into(),
            MergeMethod::Merge => {}
            MergeMethod::Rebase => {
                return Err(Error::config(format!(
                    "{operation}: GitLab's merge method is the project's setting (merge commit \
                     or fast-forward); use merge or squash"
                )));
            }
        }
        let url = self.url(&format!("/merge_requests/{}/merge", found.number));
        self.client
            .call(
                Method::Put,
                &url,
                Some(&body),
                Repeat::Safe,
                &operation,
                |r| r.status == 200,
            )
            .map(drop)
    }

    fn comment(&self, found: &Found, text: &str) -> Result<(), Error> {
        let operation = format!(
            "commenting on merge request !{} of {}",
            found.number, self.client.repo.path
        );
        let url = self.url(&format!("/merge_requests/{}/notes", found.number));
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
            "closing merge request !{} of {}",
            found.number, self.client.repo.path
        );
        let response = self.put(found, &json!({ "state_event": "close" }), &operation)?;
        if response.status == 200 {
            Ok(())
        } else {
            Err(self.client.fail(&response, &operation))
        }
    }
}
