//! Argo CD Image Updater's template data: the commit message (`.AppName`, `.AppChanges`) and the
//! write-branch name (`.Images`, `.SHA256`, `.TargetKey`, `.AppNamespace`, `.AppName`).
//!
//! Argo CD Image Updater renders both with Go's `text/template` and no function map (no Sprig), over
//! struct types declared inside its `argocd` package; they are rebuilt here with the same names, so
//! `{{ printf "%T" . }}` and Go's error texts come out as Argo's. Pure: no IO, no clock.
//!
//! * Commit message ([`render_commit_message`]): the template `commitMessage` over
//!   `commitMessageTemplate{AppName string; AppChanges []commitMessageChange}`, each change
//!   `{Image, OldTag, NewTag string; Labels map[string]string}`. `.Image` is the image's path without
//!   its registry, `.OldTag`/`.NewTag` the digest when there is one, else the tag; `.Labels` is never
//!   nil. When the template fails while executing, Argo falls back to
//!   `build: update of application <AppName>`; so does this, and the error is returned beside the
//!   message so the caller can warn.
//! * Write branch ([`render_branch`]): the template `branchName` over
//!   `branchNameTemplate{AppNamespace, AppName, TargetKey string; Images []imageChange; SHA256
//!   string}`, each image `{Name, Alias, OldTag, NewTag string}`. `.SHA256` is the hex SHA-256 of
//!   `<Name>-<OldTag>-<NewTag>,` over every change. The result is cut to 255 bytes (at a character
//!   boundary when the 255th byte falls inside one: Go cuts the bytes); a template that fails is an
//!   error, as in Argo.

use std::collections::BTreeMap;
use std::rc::Rc;

use sha2::{Digest, Sha256};

use crate::error::{ExecError, ParseError};
use crate::exec::{Limits, Template};
use crate::value::{FieldDef, NamedType, Type, Underlying, Value};

/// Argo CD Image Updater's default commit message template.
pub const DEFAULT_COMMIT_MESSAGE: &str = "build: automatic update of {{ .AppName }}\n\n{{ range .AppChanges -}}\nupdates image {{ .Image }} tag '{{ .OldTag }}' to '{{ .NewTag }}'\n{{ end -}}\n";

/// The commit template's name (it appears in Go's error messages).
pub const COMMIT_TEMPLATE_NAME: &str = "commitMessage";

/// The branch template's name.
pub const BRANCH_TEMPLATE_NAME: &str = "branchName";

/// Longest write-branch name; longer renderings are cut.
pub const MAX_BRANCH_LEN: usize = 255;

/// One image change in a commit message (`commitMessageChange`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppChange {
    /// The image's path without its registry (`acme/web`).
    pub image: String,
    /// The old digest, else the old tag.
    pub old_tag: String,
    /// The new digest, else the new tag.
    pub new_tag: String,
    /// The new image's config labels (`org.opencontainers.image.revision`...).
    pub labels: BTreeMap<String, String>,
}

/// What a commit message template sees (`commitMessageTemplate`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitData {
    /// The Application's name.
    pub app_name: String,
    /// Every image change, in the order they were made.
    pub changes: Vec<AppChange>,
}

/// One image change in a branch name (`imageChange`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BranchImage {
    /// The image's path without its registry.
    pub name: String,
    /// The alias it was configured with (`""` for none).
    pub alias: String,
    /// The old digest, else the old tag.
    pub old_tag: String,
    /// The new digest, else the new tag.
    pub new_tag: String,
}

/// What a write-branch template sees (`branchNameTemplate`), less `.SHA256`, which is computed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BranchData {
    /// The Application's namespace.
    pub app_namespace: String,
    /// The Application's name.
    pub app_name: String,
    /// The write-back target's key (8 hex digits of SHA-256 over `repo|branch|target`).
    pub target_key: String,
    /// Every image change.
    pub images: Vec<BranchImage>,
}

impl BranchData {
    /// `.SHA256`: hex SHA-256 over `<Name>-<OldTag>-<NewTag>,` for every change, in order.
    pub fn sha256(&self) -> String {
        let mut hasher = Sha256::new();
        for i in &self.images {
            hasher.update(format!("{}-{}-{},", i.name, i.old_tag, i.new_tag).as_bytes());
        }
        hex(&hasher.finalize())
    }

    /// The data as the Go value the template sees.
    pub fn to_value(&self) -> Value {
        let image = Rc::new(named(
            "argocd.imageChange",
            &["Name", "Alias", "OldTag", "NewTag"],
            Vec::new(),
        ));
        let images: Vec<Value> = self
            .images
            .iter()
            .map(|i| {
                Value::structure(
                    &image,
                    vec![
                        Value::str(&i.name),
                        Value::str(&i.alias),
                        Value::str(&i.old_tag),
                        Value::str(&i.new_tag),
                    ],
                    Vec::new(),
                )
            })
            .collect();
        let slice = Type::slice_of(Type::Named(image));
        let data = Rc::new(named(
            "argocd.branchNameTemplate",
            &["AppNamespace", "AppName", "TargetKey"],
            vec![
                FieldDef::new("Images", slice.clone()),
                FieldDef::new("SHA256", Type::String),
            ],
        ));
        Value::structure(
            &data,
            vec![
                Value::str(&self.app_namespace),
                Value::str(&self.app_name),
                Value::str(&self.target_key),
                Value::slice(slice, images),
                Value::string(self.sha256()),
            ],
            Vec::new(),
        )
    }
}

impl CommitData {
    /// The data as the Go value the template sees.
    pub fn to_value(&self) -> Value {
        let labels_type = Type::map_of(Type::String, Type::String);
        let change = Rc::new(named(
            "argocd.commitMessageChange",
            &["Image", "OldTag", "NewTag"],
            vec![FieldDef::new("Labels", labels_type.clone())],
        ));
        let changes: Vec<Value> = self
            .changes
            .iter()
            .map(|c| {
                let labels = c
                    .labels
                    .iter()
                    .map(|(k, v)| (Value::str(k), Value::str(v)))
                    .collect();
                Value::structure(
                    &change,
                    vec![
                        Value::str(&c.image),
                        Value::str(&c.old_tag),
                        Value::str(&c.new_tag),
                        Value::map(labels_type.clone(), labels),
                    ],
                    Vec::new(),
                )
            })
            .collect();
        let slice = Type::slice_of(Type::Named(change));
        let data = Rc::new(named(
            "argocd.commitMessageTemplate",
            &["AppName"],
            vec![FieldDef::new("AppChanges", slice.clone())],
        ));
        Value::structure(
            &data,
            vec![Value::str(&self.app_name), Value::slice(slice, changes)],
            Vec::new(),
        )
    }
}

fn named(name: &str, strings: &[&str], more: Vec<FieldDef>) -> NamedType {
    let mut fields: Vec<FieldDef> = strings
        .iter()
        .map(|f| FieldDef::new(f, Type::String))
        .collect();
    fields.extend(more);
    NamedType {
        name: name.to_owned(),
        underlying: Underlying::Struct(fields),
        methods: Vec::new(),
        stringer: None,
        promoted: std::cell::RefCell::default(),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Parse a commit message template as Argo CD Image Updater does at start-up (Go's builtins only);
/// `None` or an empty text is the default template.
pub fn parse_commit_template(text: Option<&str>) -> Result<Template, ParseError> {
    let text = match text {
        None | Some("") => DEFAULT_COMMIT_MESSAGE,
        Some(t) => t,
    };
    Template::parse_go(COMMIT_TEMPLATE_NAME, text)
}

/// A rendered commit message and, when the template failed, why (the message is then Argo's
/// fallback).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitMessage {
    /// The message.
    pub message: String,
    /// The execution error that made it the fallback.
    pub error: Option<ExecError>,
}

/// Render a commit message as Argo CD Image Updater does: on an execution error, the message is
/// `build: update of application <AppName>`.
pub fn render_commit_message(template: &Template, data: &CommitData) -> CommitMessage {
    match template.execute_with_limits(&data.to_value(), &Limits::default()) {
        Ok(bytes) => CommitMessage {
            message: String::from_utf8_lossy(&bytes).into_owned(),
            error: None,
        },
        Err(e) => CommitMessage {
            message: format!("build: update of application {}", data.app_name),
            error: Some(e),
        },
    }
}

/// Why no write-branch name could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BranchError {
    /// The template does not parse.
    #[error("git branch template does not parse: {0}")]
    Parse(#[source] ParseError),
    /// The template fails while executing.
    #[error("git branch template fails: {0}")]
    Execute(#[source] ExecError),
    /// The template renders nothing.
    #[error("git branch template renders an empty branch name")]
    Empty,
}

/// Render a write-branch name template (the part after `:` of `base:write`), cut to
/// [`MAX_BRANCH_LEN`] bytes.
pub fn render_branch(template: &str, data: &BranchData) -> Result<String, BranchError> {
    let t = Template::parse_go(BRANCH_TEMPLATE_NAME, template).map_err(BranchError::Parse)?;
    let bytes = t
        .execute_with_limits(&data.to_value(), &Limits::default())
        .map_err(BranchError::Execute)?;
    let mut name = String::from_utf8_lossy(&bytes).into_owned();
    if name.len() > MAX_BRANCH_LEN {
        let mut cut = MAX_BRANCH_LEN;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    if name.is_empty() {
        return Err(BranchError::Empty);
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(image: &str, old: &str, new: &str) -> AppChange {
        AppChange {
            image: image.into(),
            old_tag: old.into(),
            new_tag: new.into(),
            labels: BTreeMap::new(),
        }
    }

    fn image(name: &str, alias: &str, old: &str, new: &str) -> BranchImage {
        BranchImage {
            name: name.into(),
            alias: alias.into(),
            old_tag: old.into(),
            new_tag: new.into(),
        }
    }

    #[test]
    fn default_commit_message() {
        let data = CommitData {
            app_name: "storefront".into(),
            changes: vec![
                change("acme/web", "2.4.0", "2.5.1"),
                change("acme/worker", "0.9", "0.10"),
            ],
        };
        let t = parse_commit_template(None).unwrap();
        let m = render_commit_message(&t, &data);
        assert_eq!(
            m.message,
            "build: automatic update of storefront\n\nupdates image acme/web tag '2.4.0' to '2.5.1'\nupdates image acme/worker tag '0.9' to '0.10'\n"
        );
        assert!(m.error.is_none());
    }

    #[test]
    fn labels_are_an_empty_map_and_conditions_on_them_work() {
        let tpl = "{{ range .AppChanges }}{{ .Image }}{{ if index .Labels \"org.opencontainers.image.revision\" }} at {{ index .Labels \"org.opencontainers.image.revision\" }}{{ end }};{{ end }}{{ printf \"%T %v\" (index .AppChanges 0).Labels (index .AppChanges 0).Labels }}";
        let mut with = change("acme/api", "1", "2");
        with.labels
            .insert("org.opencontainers.image.revision".into(), "f00d".into());
        let data = CommitData {
            app_name: "a".into(),
            changes: vec![change("acme/cli", "1", "2"), with],
        };
        let t = parse_commit_template(Some(tpl)).unwrap();
        assert_eq!(
            render_commit_message(&t, &data).message,
            "acme/cli;acme/api at f00d;map[string]string map[]"
        );
    }

    #[test]
    fn failing_templates_fall_back_and_say_why() {
        let t = parse_commit_template(Some("{{ .Nope }}")).unwrap();
        let m = render_commit_message(
            &t,
            &CommitData {
                app_name: "billing".into(),
                changes: Vec::new(),
            },
        );
        assert_eq!(m.message, "build: update of application billing");
        let e = m.error.unwrap();
        assert!(
            e.message
                .contains("can't evaluate field Nope in type argocd.commitMessageTemplate"),
            "{e}"
        );
        // No Sprig: Argo parses without a function map.
        let Err(e) = parse_commit_template(Some("{{ upper .AppName }}")) else {
            panic!("Sprig functions must not parse");
        };
        assert!(e.message.contains("function \"upper\" not defined"), "{e}");
    }

    #[test]
    fn branch_names() {
        let data = BranchData {
            images: vec![
                image("acme/web", "web", "2.4.0", "2.5.1"),
                image("acme/worker", "", "0.9", "0.10"),
            ],
            ..BranchData::default()
        };
        assert_eq!(
            render_branch("bump{{range .Images}}-{{.Name}}-{{.NewTag}}{{end}}", &data).unwrap(),
            "bump-acme/web-2.5.1-acme/worker-0.10"
        );
        assert_eq!(
            render_branch("bump{{range .Images}}-{{.Alias}}{{end}}", &data).unwrap(),
            "bump-web-"
        );
        let one = BranchData {
            images: vec![image("acme/web", "", "2.4.0", "2.5.1")],
            ..BranchData::default()
        };
        // sha256 of "acme/web-2.4.0-2.5.1," (computed with Python's hashlib)
        assert_eq!(
            one.sha256(),
            "b04cdfc2ecc3807079b91bb5eac693bd2fae74f11526ee935830f5173ab50e58"
        );
        assert_eq!(
            render_branch("up-{{.SHA256}}", &one).unwrap(),
            format!("up-{}", one.sha256())
        );
        let long = "x".repeat(300);
        assert_eq!(render_branch(&long, &one).unwrap().len(), 255);
        let wide = format!("{}é", "x".repeat(254));
        assert_eq!(render_branch(&wide, &one).unwrap(), "x".repeat(254));
        assert!(matches!(
            render_branch("{{.Missing}}", &one),
            Err(BranchError::Execute(_))
        ));
        assert!(matches!(
            render_branch("{{", &one),
            Err(BranchError::Parse(_))
        ));
        assert_eq!(render_branch("", &one), Err(BranchError::Empty));
        let named = BranchData {
            app_namespace: "shop".into(),
            app_name: "web".into(),
            target_key: "0a1b2c3d".into(),
            images: Vec::new(),
        };
        assert_eq!(
            render_branch("{{.AppNamespace}}/{{.AppName}}/{{.TargetKey}}", &named).unwrap(),
            "shop/web/0a1b2c3d"
        );
    }
}
