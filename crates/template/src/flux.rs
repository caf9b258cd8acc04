//! Flux's commit-message data (`source.TemplateData`) and Flux's way of rendering a
//! `spec.git.commit.messageTemplate`.
//!
//! Templates see the data through Go types, so the Go types are rebuilt here with Flux's names:
//! `.AutomationObject` is a `types.NamespacedName` (prints `ns/name`), `.Changed` an `update.Result`
//! with `FileChanges map[string]update.ObjectChanges` and the methods `Changes` and `Objects`,
//! `.Values` a `map[string]string`. An `update.ObjectIdentifier` embeds kyaml's
//! `yaml.ResourceIdentifier{TypeMeta{APIVersion, Kind}; NameMeta{Name, Namespace}}`, which is why it
//! prints as `{{apps/v1 Deployment} {podinfo apps}}` and why `$id.Kind` works.
//!
//! Flux leaves the order of `.Changed.Changes` unspecified (Go map iteration); here it walks files and
//! objects in sorted order, so a message that prints or hashes all changes is reproducible.

use std::collections::{BTreeMap, HashMap, HashSet};

use foldhash::fast::RandomState as FastHash;
use std::rc::Rc;

use crate::error::{ExecError, ParseError};
use crate::exec::{Limits, Template};
use crate::value::{FieldDef, NamedType, Type, Underlying, Value};

/// Flux's message when `messageTemplate` is empty.
pub const DEFAULT_MESSAGE: &str = "Update from image update automation";

/// The template's name, as Flux names it (it appears in every error message).
pub const TEMPLATE_NAME: &str = "commit message";

const SEE: &str =
    "See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template";

/// The identity of a changed object (kyaml's `ResourceIdentifier`); any part may be empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId {
    /// `apiVersion`
    pub api_version: Rc<str>,
    /// `kind`
    pub kind: Rc<str>,
    /// `metadata.name`
    pub name: Rc<str>,
    /// `metadata.namespace`
    pub namespace: Rc<str>,
}

/// One field change (Flux's `update.Change`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UpdateChange {
    /// Value before.
    pub old_value: Rc<str>,
    /// Value after.
    pub new_value: Rc<str>,
    /// The setter (policy reference) that made the change.
    pub setter: Rc<str>,
}

/// The data a commit message template sees (Flux's `source.TemplateData`).
#[derive(Clone, Debug, Default)]
pub struct TemplateData {
    /// Namespace of the automation object.
    pub automation_namespace: String,
    /// Name of the automation object.
    pub automation_name: String,
    /// Changes by file path, then by object (in the order objects were first added), like Flux's
    /// `Result.FileChanges`.
    pub file_changes: BTreeMap<String, Vec<(ObjectId, Vec<UpdateChange>)>>,
    /// `spec.git.commit.messageTemplateValues`.
    pub values: BTreeMap<String, String>,
}

/// A report that cannot be read as template data.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A field has the wrong JSON type.
    #[error("report field {path}: expected {expected}")]
    Shape {
        /// JSON path of the field, e.g. `fileChanges["a.yaml"][0].object`.
        path: String,
        /// What was expected there.
        expected: &'static str,
    },
}

/// Why no commit message could be made, with Flux's wording.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    /// The template does not parse.
    #[error("unable to create commit message template from spec: {0}")]
    Parse(#[source] ParseError),
    /// The template fails while executing.
    #[error("failed to run template from spec: {0}")]
    Execute(#[source] ExecError),
    /// The template uses a field Flux removed (Flux marks the automation Stalled for this).
    #[error("{}", removed_message(.field))]
    RemovedField {
        /// `.Updated` or `.Changed.ImageResult`.
        field: &'static str,
        /// The execution error that revealed it.
        #[source]
        source: ExecError,
    },
}

fn removed_message(field: &str) -> String {
    match field {
        ".Updated" => {
            format!("template uses removed '.Updated' field. Please use '.Changed' instead. {SEE}")
        }
        ".Changed.ImageResult" => format!(
            "template uses removed '.Changed.ImageResult' field. Please use '.Changed.FileChanges' or '.Changed.Objects' instead. {SEE}"
        ),
        other => format!("template uses removed '{other}' field. {SEE}"),
    }
}

impl TemplateData {
    /// Data for the automation `namespace/name`, with no changes and no values.
    pub fn new(namespace: &str, name: &str) -> TemplateData {
        TemplateData {
            automation_namespace: namespace.to_owned(),
            automation_name: name.to_owned(),
            ..Default::default()
        }
    }

    /// Record changes to an object in a file (Flux's `Result.AddChange`: appended to the object's list).
    pub fn add_change(
        &mut self,
        file: &str,
        object: ObjectId,
        changes: impl IntoIterator<Item = UpdateChange>,
    ) {
        let objects = self.file_changes.entry(file.to_owned()).or_default();
        let idx = match objects.iter().position(|(o, _)| *o == object) {
            Some(i) => i,
            None => {
                objects.push((object, Vec::new()));
                objects.len() - 1
            }
        };
        objects[idx].1.extend(changes);
    }

    /// Set one `messageTemplateValues` entry.
    pub fn set_value(&mut self, key: &str, value: &str) {
        self.values.insert(key.to_owned(), value.to_owned());
    }

    /// Read the changes of a report shaped like image-update's ResultV2 JSON:
    /// `{"fileChanges": {"apps/a.yaml": [{"object": {"apiVersion", "kind", "name", "namespace"},
    /// "changes": [{"oldValue", "newValue", "setter"}]}]}}`. Unknown fields are ignored, missing strings
    /// are empty. Two optional top-level fields fill the rest: `"automationObject": {"namespace",
    /// "name"}` and `"values": {"key": "value"}`.
    pub fn from_report_json(report: &serde_json::Value) -> Result<TemplateData, ReportError> {
        let mut data = TemplateData::default();
        let obj = report.as_object().ok_or(ReportError::Shape {
            path: "$".to_owned(),
            expected: "an object",
        })?;
        if let Some(a) = obj.get("automationObject") {
            let a = a.as_object().ok_or(ReportError::Shape {
                path: "automationObject".to_owned(),
                expected: "an object",
            })?;
            data.automation_namespace = json_str(a.get("namespace"), "automationObject.namespace")?;
            data.automation_name = json_str(a.get("name"), "automationObject.name")?;
        }
        if let Some(v) = obj.get("values") {
            let v = v.as_object().ok_or(ReportError::Shape {
                path: "values".to_owned(),
                expected: "an object",
            })?;
            for (k, val) in v {
                data.values
                    .insert(k.clone(), json_str(Some(val), &format!("values[{k:?}]"))?);
            }
        }
        let Some(files) = obj.get("fileChanges") else {
            return Ok(data);
        };
        if files.is_null() {
            return Ok(data);
        }
        let files = files.as_object().ok_or(ReportError::Shape {
            path: "fileChanges".to_owned(),
            expected: "an object",
        })?;
        for (file, entries) in files {
            let path = format!("fileChanges[{file:?}]");
            let entries = entries.as_array().ok_or(ReportError::Shape {
                path: path.clone(),
                expected: "an array",
            })?;
            for (i, entry) in entries.iter().enumerate() {
                let epath = format!("{path}[{i}]");
                let o =
                    entry
                        .get("object")
                        .and_then(|o| o.as_object())
                        .ok_or(ReportError::Shape {
                            path: format!("{epath}.object"),
                            expected: "an object",
                        })?;
                let id = ObjectId {
                    api_version: json_str(
                        o.get("apiVersion"),
                        &format!("{epath}.object.apiVersion"),
                    )?
                    .into(),
                    kind: json_str(o.get("kind"), &format!("{epath}.object.kind"))?.into(),
                    name: json_str(o.get("name"), &format!("{epath}.object.name"))?.into(),
                    namespace: json_str(o.get("namespace"), &format!("{epath}.object.namespace"))?
                        .into(),
                };
                let changes = match entry.get("changes") {
                    None | Some(serde_json::Value::Null) => Vec::new(),
                    Some(c) => {
                        let arr = c.as_array().ok_or(ReportError::Shape {
                            path: format!("{epath}.changes"),
                            expected: "an array",
                        })?;
                        let mut out = Vec::new();
                        for (k, ch) in arr.iter().enumerate() {
                            let cp = format!("{epath}.changes[{k}]");
                            out.push(UpdateChange {
                                old_value: json_str(ch.get("oldValue"), &format!("{cp}.oldValue"))?
                                    .into(),
                                new_value: json_str(ch.get("newValue"), &format!("{cp}.newValue"))?
                                    .into(),
                                setter: json_str(ch.get("setter"), &format!("{cp}.setter"))?.into(),
                            });
                        }
                        out
                    }
                };
                data.add_change(file, id, changes);
            }
        }
        Ok(data)
    }

    /// Flux's `Result.Changes()`: every change once (by value), first seen, files and objects in
    /// sorted order.
    pub fn changes(&self) -> Vec<UpdateChange> {
        let mut seen: HashSet<&UpdateChange, FastHash> = HashSet::default();
        let mut out = Vec::new();
        for objects in self.file_changes.values() {
            let mut sorted: Vec<&(ObjectId, Vec<UpdateChange>)> = objects.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            for (_, changes) in sorted {
                for c in changes {
                    if seen.insert(c) {
                        out.push(c.clone());
                    }
                }
            }
        }
        out
    }

    /// Flux's `Result.Objects()`: objects across files, change lists concatenated in file order.
    pub fn objects(&self) -> BTreeMap<ObjectId, Vec<UpdateChange>> {
        let mut out: BTreeMap<ObjectId, Vec<UpdateChange>> = BTreeMap::new();
        for objects in self.file_changes.values() {
            for (id, changes) in objects {
                out.entry(id.clone())
                    .or_default()
                    .extend(changes.iter().cloned());
            }
        }
        out
    }

    /// The data as the Go value a template sees.
    pub fn to_value(&self) -> Value {
        let t = FluxTypes::new();
        let oc_type = Type::Named(t.object_changes.clone());
        let mut id_values: HashMap<&ObjectId, Value, FastHash> = HashMap::default();
        let mut objects: BTreeMap<&ObjectId, Vec<Value>> = BTreeMap::new();
        let mut seen: HashSet<&UpdateChange, FastHash> = HashSet::default();
        let mut all_changes: Vec<Value> = Vec::new();
        let mut files: Vec<(Value, Value)> = Vec::with_capacity(self.file_changes.len());
        // One value per change and per identity, shared by FileChanges, Objects() and Changes().
        for (file, objs) in &self.file_changes {
            let mut sorted: Vec<&(ObjectId, Vec<UpdateChange>)> = objs.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let mut entries = Vec::with_capacity(sorted.len());
            for (id, changes) in sorted {
                let idv = id_values
                    .entry(id)
                    .or_insert_with(|| t.object_id(id))
                    .clone();
                let values: Vec<Value> = changes.iter().map(|c| t.change(c)).collect();
                for (c, v) in changes.iter().zip(&values) {
                    if seen.insert(c) {
                        all_changes.push(v.clone());
                    }
                }
                objects
                    .entry(id)
                    .or_default()
                    .extend(values.iter().cloned());
                entries.push((idv, Value::slice(t.change_slice(), values)));
            }
            files.push((Value::str(file), Value::map(oc_type.clone(), entries)));
        }
        let fc_type = Type::map_of(Type::String, oc_type.clone());
        let file_changes = if files.is_empty() {
            Value::Nil(fc_type)
        } else {
            // file_changes is a BTreeMap by path: byte order, as Go sorts strings.
            Value::map_sorted(fc_type, files)
        };
        let changes_v = if all_changes.is_empty() {
            Value::Nil(t.change_slice())
        } else {
            Value::slice(t.change_slice(), all_changes)
        };
        // ObjectId's Ord is Go's order for the struct key (fields in order).
        let objects_v = Value::map_sorted(
            oc_type,
            objects
                .into_iter()
                .map(|(id, v)| {
                    let idv = id_values
                        .get(id)
                        .cloned()
                        .unwrap_or_else(|| t.object_id(id));
                    (idv, Value::slice(t.change_slice(), v))
                })
                .collect(),
        );
        let result = Value::structure(&t.result, vec![file_changes], vec![changes_v, objects_v]);
        let automation = Value::structure(
            &t.namespaced_name,
            vec![
                Value::str(&self.automation_namespace),
                Value::str(&self.automation_name),
            ],
            Vec::new(),
        );
        let values = if self.values.is_empty() {
            Value::Nil(Type::map_of(Type::String, Type::String))
        } else {
            Value::map(
                Type::map_of(Type::String, Type::String),
                self.values
                    .iter()
                    .map(|(k, v)| (Value::str(k), Value::str(v)))
                    .collect(),
            )
        };
        Value::structure(
            &t.template_data,
            vec![automation, result, values],
            Vec::new(),
        )
    }
}

fn json_str(v: Option<&serde_json::Value>, path: &str) -> Result<String, ReportError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(String::new()),
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ReportError::Shape {
            path: path.to_owned(),
            expected: "a string",
        }),
    }
}

struct FluxTypes {
    namespaced_name: Rc<NamedType>,
    type_meta: Rc<NamedType>,
    name_meta: Rc<NamedType>,
    resource_id: Rc<NamedType>,
    object_id: Rc<NamedType>,
    change: Rc<NamedType>,
    object_changes: Rc<NamedType>,
    result: Rc<NamedType>,
    template_data: Rc<NamedType>,
}

fn tagged(name: &str, json: &str) -> FieldDef {
    FieldDef {
        name: name.to_owned(),
        ty: Type::String,
        embedded: false,
        json_name: Some(json.to_owned()),
        json_omitempty: true,
    }
}

fn embedded(ty: &Rc<NamedType>) -> FieldDef {
    let short = ty.name.rsplit('.').next().unwrap_or(&ty.name).to_owned();
    FieldDef {
        name: short,
        ty: Type::Named(ty.clone()),
        embedded: true,
        json_name: None,
        json_omitempty: false,
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

fn hidden(v: &Value, i: usize) -> Value {
    match v {
        Value::Struct(s) => s.hidden.get(i).cloned().unwrap_or(Value::Invalid),
        _ => Value::Invalid,
    }
}

fn namespaced_name_string(v: &Value) -> String {
    match v {
        Value::Struct(s) => format!(
            "{}/{}",
            s.fields.first().and_then(Value::as_str).unwrap_or_default(),
            s.fields.get(1).and_then(Value::as_str).unwrap_or_default()
        ),
        _ => String::new(),
    }
}

impl FluxTypes {
    fn new() -> FluxTypes {
        let mut nn = named(
            "types.NamespacedName",
            Underlying::Struct(vec![
                FieldDef::new("Namespace", Type::String),
                FieldDef::new("Name", Type::String),
            ]),
        );
        nn.stringer = Some(namespaced_name_string);
        let namespaced_name = Rc::new(nn);
        let type_meta = Rc::new(named(
            "yaml.TypeMeta",
            Underlying::Struct(vec![
                tagged("APIVersion", "apiVersion"),
                tagged("Kind", "kind"),
            ]),
        ));
        let name_meta = Rc::new(named(
            "yaml.NameMeta",
            Underlying::Struct(vec![
                tagged("Name", "name"),
                tagged("Namespace", "namespace"),
            ]),
        ));
        let resource_id = Rc::new(named(
            "yaml.ResourceIdentifier",
            Underlying::Struct(vec![embedded(&type_meta), embedded(&name_meta)]),
        ));
        let object_id = Rc::new(named(
            "update.ObjectIdentifier",
            Underlying::Struct(vec![embedded(&resource_id)]),
        ));
        let change = Rc::new(named(
            "update.Change",
            Underlying::Struct(vec![
                FieldDef::new("OldValue", Type::String),
                FieldDef::new("NewValue", Type::String),
                FieldDef::new("Setter", Type::String),
            ]),
        ));
        let change_slice = Type::slice_of(Type::Named(change.clone()));
        let object_changes = Rc::new(named(
            "update.ObjectChanges",
            Underlying::Map(Type::Named(object_id.clone()), change_slice.clone()),
        ));
        let mut result = named(
            "update.Result",
            Underlying::Struct(vec![FieldDef::new(
                "FileChanges",
                Type::map_of(Type::String, Type::Named(object_changes.clone())),
            )]),
        );
        result.methods = vec![
            ("Changes".to_owned(), change_slice, |v: &Value| hidden(v, 0)),
            (
                "Objects".to_owned(),
                Type::Named(object_changes.clone()),
                |v: &Value| hidden(v, 1),
            ),
        ];
        let result = Rc::new(result);
        let template_data = Rc::new(named(
            "source.TemplateData",
            Underlying::Struct(vec![
                FieldDef::new("AutomationObject", Type::Named(namespaced_name.clone())),
                FieldDef::new("Changed", Type::Named(result.clone())),
                FieldDef::new("Values", Type::map_of(Type::String, Type::String)),
            ]),
        ));
        FluxTypes {
            namespaced_name,
            type_meta,
            name_meta,
            resource_id,
            object_id,
            change,
            object_changes,
            result,
            template_data,
        }
    }

    fn change_slice(&self) -> Type {
        Type::slice_of(Type::Named(self.change.clone()))
    }

    fn object_id(&self, id: &ObjectId) -> Value {
        let tm = Value::structure(
            &self.type_meta,
            vec![
                Value::Str(id.api_version.clone()),
                Value::Str(id.kind.clone()),
            ],
            Vec::new(),
        );
        let nm = Value::structure(
            &self.name_meta,
            vec![
                Value::Str(id.name.clone()),
                Value::Str(id.namespace.clone()),
            ],
            Vec::new(),
        );
        let ri = Value::structure(&self.resource_id, vec![tm, nm], Vec::new());
        Value::structure(&self.object_id, vec![ri], Vec::new())
    }

    fn change(&self, c: &UpdateChange) -> Value {
        Value::structure(
            &self.change,
            vec![
                Value::Str(c.old_value.clone()),
                Value::Str(c.new_value.clone()),
                Value::Str(c.setter.clone()),
            ],
            Vec::new(),
        )
    }
}

/// Render a commit message as Flux does: an absent or empty template gives [`DEFAULT_MESSAGE`]; the
/// template is named `commit message`; Go's output bytes are returned as text (invalid UTF-8, which
/// only byte-slicing functions such as `trunc` can produce, becomes U+FFFD).
pub fn render_commit_message(
    template: Option<&str>,
    data: &TemplateData,
) -> Result<String, MessageError> {
    render_commit_message_with_limits(template, data, &Limits::default())
}

/// [`render_commit_message`] with explicit resource limits.
pub fn render_commit_message_with_limits(
    template: Option<&str>,
    data: &TemplateData,
    limits: &Limits,
) -> Result<String, MessageError> {
    let text = match template {
        None | Some("") => DEFAULT_MESSAGE,
        Some(t) => t,
    };
    let tmpl = Template::parse(TEMPLATE_NAME, text).map_err(MessageError::Parse)?;
    let out = tmpl
        .execute_with_limits(&data.to_value(), limits)
        .map_err(|e| {
            if e.message
                .contains("can't evaluate field Updated in type source.TemplateData")
            {
                MessageError::RemovedField {
                    field: ".Updated",
                    source: e,
                }
            } else if e
                .message
                .contains("can't evaluate field ImageResult in type update.Result")
            {
                MessageError::RemovedField {
                    field: ".Changed.ImageResult",
                    source: e,
                }
            } else {
                MessageError::Execute(e)
            }
        })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}
