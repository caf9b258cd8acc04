//! The request's head branch, title and body, from the run's report.
//!
//! Templates are Go `text/template` with Sprig (the engine of commit messages) over
//! [`Content`]: the commit message's data (`.AutomationObject`, `.Changed`, `.Values`, promoted
//! from an embedded Flux `TemplateData`, so a commit message template works unchanged as a
//! title template) plus `.CommitMessage`, `.Head`, `.Base`, `.Rows` (one per changed field:
//! `.File`, `.APIVersion`, `.Kind`, `.Namespace`, `.Name`, `.Object`, `.Field`, `.OldValue`,
//! `.NewValue`, `.Setter`), `.Table` (the default body's Markdown table), `.Report` (the report
//! as indented JSON), `.SHA256` and `.TargetKey`.
//!
//! Defaults: the title is the commit message's first line; the body is a Markdown table of the
//! changes with the report in a collapsed block, cut to fit the provider's limit (the report
//! goes first, then rows); the head branch is `image-update/NAMESPACE-NAME` of the automation
//! (`image-update/BASE` without one), one stable branch per automation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::rc::Rc;

use image_update_template::provenance::Provenance;
use image_update_template::{FieldDef, NamedType, TemplateData, Type, Underlying, Value};
use sha2::{Digest as _, Sha256};

use crate::error::Error;

/// The default head branch: one per automation.
pub const DEFAULT_BRANCH_TEMPLATE: &str =
    "image-update/{{ .AutomationObject.Namespace }}-{{ .AutomationObject.Name }}";

/// The default head branch of a run without an automation object.
pub const DEFAULT_BRANCH_TEMPLATE_WITHOUT_AUTOMATION: &str = "image-update/{{ .Base }}";

/// Argo CD Image Updater's form: one branch (and request) per target and change set.
pub const CHANGE_SET_BRANCH_TEMPLATE: &str = "image-update-{{ .TargetKey }}-{{ .SHA256 }}";

/// The longest branch name made (Argo CD Image Updater's limit).
pub const MAX_BRANCH_LEN: usize = 255;

/// One changed field, as the body's table shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// The file, relative to the updated directory.
    pub file: String,
    /// The object's `apiVersion`.
    pub api_version: String,
    /// The object's `kind`.
    pub kind: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The field's path in the object.
    pub field: String,
    /// The value before.
    pub old_value: String,
    /// The value after.
    pub new_value: String,
    /// The marker's policy reference.
    pub setter: String,
    /// Where the old and new images were built from, when the run gathered it.
    pub provenance: Option<Provenance>,
}

impl Row {
    /// `Kind namespace/name` (parts that are empty left out).
    #[must_use]
    pub fn object(&self) -> String {
        let id = match (self.namespace.as_str(), self.name.as_str()) {
            ("", name) => name.to_owned(),
            (ns, name) => format!("{ns}/{name}"),
        };
        match (self.kind.as_str(), id.as_str()) {
            ("", id) => id.to_owned(),
            (kind, "") => kind.to_owned(),
            (kind, id) => format!("{kind} {id}"),
        }
    }
}

/// What the templates see.
#[derive(Clone, Debug, Default)]
pub struct Content {
    /// The commit message's data.
    pub data: TemplateData,
    /// One row per changed field, in report order.
    pub rows: Vec<Row>,
    /// The rendered commit message.
    pub commit_message: String,
    /// The report, as indented JSON.
    pub report: String,
    /// The head branch (empty while the head branch itself is rendered).
    pub head: String,
    /// The base branch.
    pub base: String,
    /// The repository (its URL without credentials) and the updated path, for `.TargetKey`.
    pub repository: String,
    /// The updated path in the repository (empty: all of it).
    pub path: String,
}

impl Content {
    /// The content of a run from its report (ResultV2 JSON: `fileChanges` -> objects ->
    /// changes with `oldValue`, `newValue`, `setter` and `fieldPath`), the automation object
    /// (namespace, name), the template values and the commit message.
    ///
    /// # Errors
    /// A report of the wrong shape.
    pub fn from_report(
        report: &serde_json::Value,
        automation: Option<(&str, &str)>,
        values: &BTreeMap<String, String>,
        commit_message: &str,
    ) -> Result<Content, Error> {
        let mut data = TemplateData::from_report_json(report)
            .map_err(|e| Error::config(format!("reading the report: {e}")))?;
        if let Some((namespace, name)) = automation {
            namespace.clone_into(&mut data.automation_namespace);
            name.clone_into(&mut data.automation_name);
        }
        for (key, value) in values {
            data.set_value(key, value);
        }
        let text = |v: Option<&serde_json::Value>| {
            v.and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let mut rows = Vec::new();
        if let Some(files) = report.get("fileChanges").and_then(|f| f.as_object()) {
            for (file, objects) in files {
                for entry in objects.as_array().into_iter().flatten() {
                    let object = entry.get("object");
                    let field = |key: &str| text(object.and_then(|o| o.get(key)));
                    for change in entry
                        .get("changes")
                        .and_then(|c| c.as_array())
                        .into_iter()
                        .flatten()
                    {
                        rows.push(Row {
                            file: file.clone(),
                            api_version: field("apiVersion"),
                            kind: field("kind"),
                            namespace: field("namespace"),
                            name: field("name"),
                            field: text(change.get("fieldPath")),
                            old_value: text(change.get("oldValue")),
                            new_value: text(change.get("newValue")),
                            setter: text(change.get("setter")),
                            provenance: change
                                .get("provenance")
                                .and_then(|p| serde_json::from_value(p.clone()).ok()),
                        });
                    }
                }
            }
        }
        Ok(Content {
            data,
            rows,
            commit_message: commit_message.to_owned(),
            report: serde_json::to_string_pretty(report).unwrap_or_default(),
            ..Content::default()
        })
    }

    /// The change set's hash, as Argo CD Image Updater's `.SHA256`: hex SHA-256 over
    /// `SETTER-OLD-NEW,` for every distinct change (files, then objects, in sorted order).
    #[must_use]
    pub fn sha256(&self) -> String {
        let mut hasher = Sha256::new();
        for change in self.data.changes() {
            hasher.update(format!(
                "{}-{}-{},",
                change.setter, change.old_value, change.new_value
            ));
        }
        hex(&hasher.finalize())
    }

    /// The target's key, as Argo CD Image Updater's: the first 8 hex digits of SHA-256 over
    /// `REPOSITORY|BASE|PATH`, so that automations writing the same target share a branch.
    #[must_use]
    pub fn target_key(&self) -> String {
        let digest = Sha256::digest(format!("{}|{}|{}", self.repository, self.base, self.path));
        hex(&digest)[..8].to_owned()
    }

    /// The Markdown table of the changes (the first `limit` rows, then a row counting the rest).
    #[must_use]
    pub fn table(&self, limit: usize) -> String {
        let mut out = String::from("| File | Object | Field | Change | Policy |\n");
        out.push_str("| --- | --- | --- | --- | --- |\n");
        for row in self.rows.iter().take(limit) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} → {} | {} |",
                code(&row.file),
                cell(&row.object()),
                code(&row.field),
                code(&row.old_value),
                code(&row.new_value),
                code(&row.setter)
            );
        }
        if self.rows.len() > limit {
            let rest = self.rows.len() - limit;
            let noun = if rest == 1 { "change" } else { "changes" };
            let _ = writeln!(out, "| … | {rest} more {noun} | | | |");
        }
        out
    }

    fn files(&self) -> usize {
        let mut files: Vec<&str> = self.rows.iter().map(|r| r.file.as_str()).collect();
        files.dedup();
        files.len()
    }

    /// The Go value templates see.
    fn value(&self, table: &str) -> Value {
        let flux = self.data.to_value();
        let flux_type = match &flux {
            Value::Struct(s) => s.ty.clone(),
            _ => Rc::new(named("source.TemplateData", Underlying::Struct(Vec::new()))),
        };
        let row_type = Rc::new(named(
            "pullrequest.Row",
            Underlying::Struct(
                [
                    "File",
                    "APIVersion",
                    "Kind",
                    "Namespace",
                    "Name",
                    "Object",
                    "Field",
                    "OldValue",
                    "NewValue",
                    "Setter",
                ]
                .into_iter()
                .map(|name| FieldDef::new(name, Type::String))
                .collect(),
            ),
        ));
        let rows = self
            .rows
            .iter()
            .map(|row| {
                Value::structure(
                    &row_type,
                    [
                        row.file.clone(),
                        row.api_version.clone(),
                        row.kind.clone(),
                        row.namespace.clone(),
                        row.name.clone(),
                        row.object(),
                        row.field.clone(),
                        row.old_value.clone(),
                        row.new_value.clone(),
                        row.setter.clone(),
                    ]
                    .into_iter()
                    .map(Value::string)
                    .collect(),
                    Vec::new(),
                )
            })
            .collect();
        let mut fields = vec![FieldDef {
            name: "TemplateData".to_owned(),
            ty: Type::Named(flux_type),
            embedded: true,
            json_name: None,
            json_omitempty: false,
        }];
        let strings = [
            ("CommitMessage", self.commit_message.clone()),
            ("Head", self.head.clone()),
            ("Base", self.base.clone()),
            ("Table", table.to_owned()),
            ("Report", self.report.clone()),
            ("SHA256", self.sha256()),
            ("TargetKey", self.target_key()),
        ];
        fields.extend(
            strings
                .iter()
                .map(|(name, _)| FieldDef::new(name, Type::String)),
        );
        let row_slice = Type::slice_of(Type::Named(row_type));
        fields.push(FieldDef::new("Rows", row_slice.clone()));
        let ty = Rc::new(named(
            "pullrequest.TemplateData",
            Underlying::Struct(fields),
        ));
        let mut values = vec![flux];
        values.extend(strings.into_iter().map(|(_, v)| Value::string(v)));
        values.push(Value::slice(row_slice, rows));
        Value::structure(&ty, values, Vec::new())
    }

    fn render(&self, name: &str, template: &str) -> Result<String, Error> {
        let parsed = image_update_template::Template::parse(name, template)
            .map_err(|e| Error::config(format!("the {name} template does not parse: {e}")))?;
        let out = parsed
            .execute(&self.value(&self.table(usize::MAX)))
            .map_err(|e| Error::config(format!("the {name} template failed: {e}")))?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The title: `template`'s first line, or the commit message's.
    ///
    /// # Errors
    /// A template that does not parse or fails, or renders an empty title.
    pub fn title(&self, template: Option<&str>) -> Result<String, Error> {
        let text = match template {
            Some(t) if !t.trim().is_empty() => self.render("pull request title", t)?,
            _ => self.commit_message.clone(),
        };
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        first.map(str::to_owned).ok_or_else(|| {
            Error::config(
                "the pull request title is empty (the template or commit message gave no text)",
            )
        })
    }

    /// The body: `template`'s output, or the default Markdown, within `max` characters.
    ///
    /// # Errors
    /// A template that does not parse or fails.
    pub fn body(&self, template: Option<&str>, max: usize) -> Result<String, Error> {
        if let Some(t) = template.filter(|t| !t.trim().is_empty()) {
            return Ok(crate::request::cut(
                &self.render("pull request body", t)?,
                max,
            ));
        }
        let mut rows = self.rows.len();
        let mut with_report = true;
        let mut images = self.images().len();
        loop {
            let body = self.default_body(rows, with_report, images);
            if body.chars().count() <= max || (rows == 0 && !with_report && images == 0) {
                return Ok(crate::request::cut(&body, max));
            }
            if with_report {
                with_report = false;
            } else if images > 0 {
                images /= 2;
            } else {
                rows /= 2;
            }
        }
    }

    /// The distinct image changes with provenance, in row order: `(old, new, provenance)`.
    fn images(&self) -> Vec<(&str, &str, &Provenance)> {
        let mut out: Vec<(&str, &str, &Provenance)> = Vec::new();
        for row in &self.rows {
            if let Some(p) = &row.provenance
                && !out
                    .iter()
                    .any(|(o, n, _)| *o == row.old_value && *n == row.new_value)
            {
                out.push((&row.old_value, &row.new_value, p));
            }
        }
        out
    }

    /// Per image (the first `limit`): old -> new, where it was built from with the commit and
    /// compare links, who signed it, when it was released, and what is missing. Every text an
    /// image or a registry gave is in a code span (no Markdown, HTML or mention of its own); the
    /// links are the ones `provenance::links` built.
    fn images_section(&self, limit: usize) -> String {
        let images = self.images();
        if images.is_empty() || limit == 0 {
            return String::new();
        }
        let mut out = String::from("\n### Images\n");
        for (old, new, p) in images.iter().take(limit) {
            let _ = write!(
                out,
                "\n- {} → {}\n",
                code(&p.old.image_or(old)),
                code(&p.new.image_or(new))
            );
            if !p.source_url.is_empty() {
                let _ = write!(out, "  - Source: <{}>", p.source_url);
                if !p.new.revision.is_empty() {
                    let rev: String = p.new.revision.chars().take(12).collect();
                    if p.commit_url.is_empty() {
                        let _ = write!(out, " at {}", code(&rev));
                    } else {
                        let _ = write!(out, " at [{}]({})", code(&rev), p.commit_url);
                    }
                }
                if !p.compare_url.is_empty() {
                    let what = if p.compare_by == "tag" {
                        "tags"
                    } else {
                        "commits"
                    };
                    let _ = write!(out, " ([compare {what}]({}))", p.compare_url);
                }
                out.push('\n');
            }
            if let Some(who) = p.signer.describe(code) {
                let _ = writeln!(out, "  - Signed by: {who}");
            }
            if !p.released.is_empty() {
                let _ = writeln!(
                    out,
                    "  - Released: {} ({})",
                    code(&p.released),
                    cell(&p.release_source)
                );
            }
            for note in &p.notes {
                let _ = writeln!(out, "  - Note: {}", code(note));
            }
        }
        if images.len() > limit {
            let rest = images.len() - limit;
            let noun = if rest == 1 { "image" } else { "images" };
            let _ = writeln!(out, "\n{rest} more {noun} not shown (the report has them).");
        }
        out
    }

    fn default_body(&self, rows: usize, with_report: bool, images: usize) -> String {
        let mut out = format!(
            "This {} updates {} in {} to the latest images of their policies.\n\n",
            "request",
            plural(self.rows.len(), "field"),
            plural(self.files(), "file")
        );
        out.push_str(&self.table(rows));
        out.push_str(&self.images_section(images));
        out.push_str("\n<details>\n<summary>Report</summary>\n\n");
        if with_report {
            let fence = if self.report.contains("```") {
                "````"
            } else {
                "```"
            };
            let _ = write!(out, "{fence}json\n{}\n{fence}\n", self.report);
        } else {
            out.push_str(
                "The report is too long for this description; the run's status carries it.\n",
            );
        }
        out.push_str("\n</details>\n\n---\n\n");
        let who = if self.data.automation_name.is_empty() {
            String::new()
        } else {
            format!(
                " for the automation `{}/{}`",
                self.data.automation_namespace, self.data.automation_name
            )
        };
        let _ = writeln!(
            out,
            "<sub>Opened by image-update{who}. Every run rewrites the branch `{}` from `{}`: \
             commits pushed to it by hand are lost.</sub>",
            self.head, self.base
        );
        out
    }

    /// The head branch: `template` (default [`DEFAULT_BRANCH_TEMPLATE`], or
    /// [`DEFAULT_BRANCH_TEMPLATE_WITHOUT_AUTOMATION`] without an automation object), cut to
    /// [`MAX_BRANCH_LEN`] characters, checked as git checks branch names.
    ///
    /// # Errors
    /// A template that does not parse or fails, or a name git refuses.
    pub fn head_branch(&self, template: Option<&str>) -> Result<String, Error> {
        let template = match template {
            Some(t) if !t.trim().is_empty() => t,
            _ if self.data.automation_name.is_empty() => DEFAULT_BRANCH_TEMPLATE_WITHOUT_AUTOMATION,
            _ => DEFAULT_BRANCH_TEMPLATE,
        };
        let name = self.render("head branch", template)?;
        let name: String = name.trim().chars().take(MAX_BRANCH_LEN).collect();
        let name = name.trim_end_matches(['/', '.']).to_owned();
        check_branch(&name)?;
        Ok(name)
    }
}

fn named(name: &str, underlying: Underlying) -> NamedType {
    NamedType {
        name: name.to_owned(),
        underlying,
        methods: Vec::new(),
        stringer: None,
        promoted: std::cell::RefCell::default(),
    }
}

/// Git's rules for a branch name (`git check-ref-format --branch`).
///
/// # Errors
/// The rule the name breaks.
pub fn check_branch(name: &str) -> Result<(), Error> {
    let bad = |why: &str| {
        Err(Error::config(format!(
            "`{name}` is not a valid branch name: {why}"
        )))
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name == "@" || name.contains("@{") {
        return bad("`@` alone and `@{` are reserved");
    }
    if name.starts_with('-') {
        return bad("it starts with `-`");
    }
    if name.contains("..") {
        return bad("it contains `..`");
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_control() || " ~^:?*[\\".contains(*c))
    {
        return bad(&format!("it contains {c:?}"));
    }
    for part in name.split('/') {
        if part.is_empty() {
            return bad("it has an empty path component (`//`, or a leading or trailing `/`)");
        }
        if part.starts_with('.') {
            return bad("a component starts with `.`");
        }
        if part.ends_with(".lock") {
            return bad("a component ends with `.lock`");
        }
    }
    if name.ends_with('.') {
        return bad("it ends with `.`");
    }
    Ok(())
}

/// A table cell as a code span: `|` escaped (tables split on it even inside code), line breaks
/// as spaces, and a longer fence when the text holds a backtick.
fn code(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let text = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// A plain table cell.
fn cell(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "\\|")
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::{Content, check_branch, code};
    use std::collections::BTreeMap;

    fn content() -> Content {
        let report = serde_json::json!({
            "version": "image-update.dev/v1",
            "fileChanges": {"apps/web.yaml": [{
                "object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "shop"},
                "changes": [{"oldValue": "ghcr.io/acme/web:1.2.0", "newValue": "ghcr.io/acme/web:1.3.0",
                             "setter": "flux-system:web", "line": 20, "column": 18,
                             "fieldPath": "spec.template.spec.containers[0].image"}]
            }]},
            "observedPolicies": {}, "warnings": []
        });
        let mut c = Content::from_report(
            &report,
            Some(("flux-system", "apps")),
            &BTreeMap::new(),
            "Update web to 1.3.0\n\nmore",
        )
        .unwrap();
        c.base = "main".into();
        c.head = "image-update/flux-system-apps".into();
        c
    }

    #[test]
    fn defaults() {
        let c = content();
        assert_eq!(c.title(None).unwrap(), "Update web to 1.3.0");
        assert_eq!(
            c.head_branch(None).unwrap(),
            "image-update/flux-system-apps"
        );
        let body = c.body(None, 65_536).unwrap();
        assert!(body.contains("| `apps/web.yaml` | Deployment shop/web | `spec.template.spec.containers[0].image` | `ghcr.io/acme/web:1.2.0` → `ghcr.io/acme/web:1.3.0` | `flux-system:web` |"), "{body}");
        assert!(
            body.contains("<details>\n<summary>Report</summary>\n\n```json\n{"),
            "{body}"
        );
    }

    #[test]
    fn templates_see_the_commit_data_and_more() {
        let c = content();
        let title = c
            .title(Some("{{ .AutomationObject }}: {{ range .Changed.Changes }}{{ .NewValue }}{{ end }} ({{ len .Rows }} on {{ .Base }})"))
            .unwrap();
        assert_eq!(
            title,
            "flux-system/apps: ghcr.io/acme/web:1.3.0 (1 on main)"
        );
        let branch = c
            .head_branch(Some(super::CHANGE_SET_BRANCH_TEMPLATE))
            .unwrap();
        assert_eq!(branch.len(), "image-update-".len() + 8 + 1 + 64);
        assert!(c.title(Some("{{ .Nope }}")).is_err());
    }

    #[test]
    fn long_bodies_lose_the_report_then_rows() {
        let mut c = content();
        let row = c.rows[0].clone();
        c.rows = vec![row; 400];
        let body = c.body(None, 20_000).unwrap();
        assert!(body.chars().count() <= 20_000);
        assert!(body.contains("too long for this description"));
        assert!(body.contains("more changes |"));
    }

    #[test]
    fn default_body_in_full() {
        let body = content().body(None, 65_536).unwrap();
        let expected_start = "This request updates 1 field in 1 file to the latest images of their policies.\n\n\
            | File | Object | Field | Change | Policy |\n\
            | --- | --- | --- | --- | --- |\n\
            | `apps/web.yaml` | Deployment shop/web | `spec.template.spec.containers[0].image` | `ghcr.io/acme/web:1.2.0` → `ghcr.io/acme/web:1.3.0` | `flux-system:web` |\n\
            \n<details>\n<summary>Report</summary>\n\n```json\n{\n";
        assert!(body.starts_with(expected_start), "{body}");
        assert!(
            body.ends_with(
                "```\n\n</details>\n\n---\n\n<sub>Opened by image-update for the automation \
             `flux-system/apps`. Every run rewrites the branch `image-update/flux-system-apps` \
             from `main`: commits pushed to it by hand are lost.</sub>\n"
            ),
            "{body}"
        );
    }

    /// The default body of the report `update --provenance` wrote (`tests/report_schema.rs`,
    /// `cli::fetch_provenance`): per image, old -> new, the source with its commit and compare
    /// links, the signer, the notes; against `testdata/provenance/body.md`.
    #[test]
    fn default_body_with_provenance() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/provenance");
        let report: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(root.join("report.json")).unwrap())
                .unwrap();
        let mut c = Content::from_report(&report, None, &BTreeMap::new(), "Update images").unwrap();
        c.base = "main".into();
        c.head = "image-update/main".into();
        let body = c.body(None, 65_536).unwrap();
        let golden = root.join("body.md");
        if image_update_testkit::golden::updating().unwrap() {
            image_update_testkit::golden::write(&golden, &body).unwrap();
        } else {
            assert_eq!(
                body,
                fs_err::read_to_string(&golden).unwrap(),
                "UPDATE_EXPECT=1 rewrites it"
            );
        }
        // Within a small limit the report goes first, then the images, then rows.
        let short = c.body(None, 1_500).unwrap();
        assert!(short.chars().count() <= 1_500, "{short}");
        assert!(!short.contains("```json"), "{short}");
        assert!(
            short.contains("1 more image not shown (the report has them)."),
            "{short}"
        );
        let shorter = c.body(None, 1_000).unwrap();
        assert!(
            !shorter.contains("### Images") && shorter.chars().count() <= 1_000,
            "{shorter}"
        );
    }

    /// What a registry serves is untrusted: in the body it is code, never Markdown, HTML or a
    /// mention.
    #[test]
    fn provenance_text_stays_code() {
        let mut c = content();
        c.rows[0].provenance = Some(image_update_template::provenance::Provenance {
            signer: image_update_template::provenance::Signer {
                kind: "identity".into(),
                subject: "@admin <img src=x> [x](javascript:y)".into(),
                issuer: "`x`".into(),
                ..Default::default()
            },
            notes: vec!["<!-- hidden --> @team".into()],
            ..Default::default()
        });
        let body = c.body(None, 65_536).unwrap();
        assert!(
            body.contains(
                "  - Signed by: `@admin <img src=x> [x](javascript:y)` (issuer `` `x` ``)\n"
            ),
            "{body}"
        );
        assert!(
            body.contains("  - Note: `<!-- hidden --> @team`\n"),
            "{body}"
        );
    }

    #[test]
    fn branch_names() {
        assert!(check_branch("image-update/a-b").is_ok());
        for bad in [
            "", "a..b", "a b", "-a", "a/.b", "a.lock", "a//b", "a@{b", "a:b",
        ] {
            assert!(check_branch(bad).is_err(), "{bad}");
        }
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("a`b"), "`` a`b ``");
    }
}
