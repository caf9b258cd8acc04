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
//!
//! Flux v1 removed `.Updated` and `.Changed.ImageResult` (Flux v0.x's file -> object -> image
//! result, `legacy.rs`); templates written for Flux v0.x use them, so they still render here,
//! as methods (`TemplateData.Updated()`, `Result.ImageResult()`) so that everything a Flux v1
//! template prints stays byte for byte as in Flux v1. [`render`] returns a [`RemovedFieldUse`]
//! warning for each, naming the `.Changed` form to move to. `.AutomationObject` has the methods of
//! `types.NamespacedName` (`String`, `MarshalLog`).

use std::collections::{BTreeMap, HashMap, HashSet};

use foldhash::fast::RandomState as FastHash;
use std::rc::Rc;

use crate::error::{ExecError, ParseError};
use crate::exec::{Limits, Template};
use crate::legacy::{LegacyResult, LegacyTypes};
use crate::supply_chain::{self, ImageFindings};
use crate::value::{FieldDef, Method, NamedType, Type, Underlying, Value};

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
#[derive(Clone, Debug, Default)]
pub struct UpdateChange {
    /// Value before.
    pub old_value: Rc<str>,
    /// Value after.
    pub new_value: Rc<str>,
    /// The setter (policy reference) that made the change.
    pub setter: Rc<str>,
    /// Where the images were built from (image-update's, not Flux's: `.Provenance`, a method);
    /// not part of the change's identity.
    pub provenance: Option<Rc<crate::provenance::Provenance>>,
}

/// A change is its three values, as in Flux (`Changes()` de-duplicates by them).
impl PartialEq for UpdateChange {
    fn eq(&self, other: &Self) -> bool {
        self.old_value == other.old_value
            && self.new_value == other.new_value
            && self.setter == other.setter
    }
}

impl Eq for UpdateChange {}

impl std::hash::Hash for UpdateChange {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.old_value.hash(state);
        self.new_value.hash(state);
        self.setter.hash(state);
    }
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
    /// The latest image of each policy in scope, `NAMESPACE:NAME` -> `NAME:TAG[@DIGEST]` (the
    /// report's `observedPolicies`): the image references of `.Updated`.
    pub policies: BTreeMap<String, String>,
    /// What the supply-chain gate found about the chosen images, by policy (image-update's
    /// addition, `.SupplyChain`: see [`ImageFindings`]).
    pub supply_chain: Vec<ImageFindings>,
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
    /// A template using `.Updated` needs every policy's latest image parsed, and one does not parse
    /// (Flux v0.x refused to run with it).
    #[error(transparent)]
    InvalidImageRef(#[from] crate::legacy::InvalidImageRef),
}

/// A use of a field Flux v1 removed from the template data: `.Updated` or `.Changed.ImageResult`.
/// It renders here as in Flux v0.x, but Flux v1 fails on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemovedFieldUse {
    /// `.Updated` or `.Changed.ImageResult`.
    pub field: &'static str,
    /// 1-based line in the template.
    pub line: usize,
    /// 1-based column (in characters) in the template.
    pub column: usize,
}

impl std::fmt::Display for RemovedFieldUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let instead = match self.field {
            ".Updated" => {
                "'.Changed' (e.g. '.Changed.FileChanges', '.Changed.Objects', '.Changed.Changes')"
            }
            _ => "'.Changed.FileChanges' or '.Changed.Objects'",
        };
        write!(
            f,
            "the commit message template uses '{}' (line {}, column {}), which Flux v1 removed: it renders here as in Flux v0.x, but Flux's image-automation-controller v1 fails on it. Please use {instead} instead. {SEE}",
            self.field, self.line, self.column
        )
    }
}

/// A rendered message and the warnings about its template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// The message.
    pub message: String,
    /// Uses of fields Flux v1 removed, in template order.
    pub warnings: Vec<RemovedFieldUse>,
}

/// The uses of `.Updated` and `.Changed.ImageResult` in a parsed template: any field named
/// `Updated` or `ImageResult` (field names are static in Go templates, so no other use can reach
/// them). The first use of each is given.
pub fn removed_field_uses(template: &Template) -> Vec<RemovedFieldUse> {
    let mut out: Vec<RemovedFieldUse> = [
        ("Updated", ".Updated"),
        ("ImageResult", ".Changed.ImageResult"),
    ]
    .into_iter()
    .filter_map(|(ident, field)| {
        template
            .field_position(ident)
            .map(|(line, column)| RemovedFieldUse {
                field,
                line,
                column,
            })
    })
    .collect();
    out.sort_by_key(|u| (u.line, u.column));
    out
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

    /// Record the latest image of the policy `NAMESPACE:NAME` (for `.Updated`).
    pub fn set_policy(&mut self, key: &str, name: &str, tag: &str, digest: &str) {
        self.policies
            .insert(key.to_owned(), latest_image(name, tag, digest));
    }

    /// Read the changes of a report shaped like image-update's ResultV2 JSON:
    /// `{"fileChanges": {"apps/a.yaml": [{"object": {"apiVersion", "kind", "name", "namespace"},
    /// "changes": [{"oldValue", "newValue", "setter"}]}]}}`. Unknown fields are ignored, missing strings
    /// are empty. Three optional top-level fields fill the rest: `"automationObject": {"namespace",
    /// "name"}`, `"values": {"key": "value"}` and `"observedPolicies": {"NS:NAME": {"name", "tag",
    /// "digest"}}`.
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
        if let Some(p) = obj.get("observedPolicies").filter(|p| !p.is_null()) {
            let p = p.as_object().ok_or(ReportError::Shape {
                path: "observedPolicies".to_owned(),
                expected: "an object",
            })?;
            for (key, r) in p {
                let path = format!("observedPolicies[{key:?}]");
                if r.is_null() {
                    continue;
                }
                if !r.is_object() {
                    return Err(ReportError::Shape {
                        path,
                        expected: "an object",
                    });
                }
                let part = |f: &str| json_str(r.get(f), &format!("{path}.{f}"));
                data.policies.insert(
                    key.clone(),
                    latest_image(&part("name")?, &part("tag")?, &part("digest")?),
                );
            }
        }
        if let Some(chain) = obj.get("supplyChain") {
            data.supply_chain = supply_chain_from_json(chain)?;
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
                                provenance: match ch.get("provenance") {
                                    None | Some(serde_json::Value::Null) => None,
                                    Some(p) => {
                                        Some(Rc::new(serde_json::from_value(p.clone()).map_err(
                                            |_| ReportError::Shape {
                                                path: format!("{cp}.provenance"),
                                                expected: "a provenance object",
                                            },
                                        )?))
                                    }
                                },
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

    /// The data as the Go value a template sees, without Flux v0.x's `.Updated` (which then has no
    /// value).
    pub fn to_value(&self) -> Value {
        // Without the legacy result nothing can fail.
        self.value(false).unwrap_or(Value::Invalid)
    }

    /// The data as the Go value a template sees; with `legacy`, `.Updated` and
    /// `.Changed.ImageResult` hold Flux v0.x's image result.
    ///
    /// # Errors
    /// With `legacy`, a policy's latest image that go-containerregistry would not parse.
    pub fn value(&self, legacy: bool) -> Result<Value, MessageError> {
        let t = FluxTypes::new();
        let legacy_value = if legacy {
            let result = LegacyResult::build(&self.file_changes, &self.policies)?;
            let types = LegacyTypes::new(&t.object_id, &t.namespaced_name);
            types.value(&result, &|id| t.object_id(id))
        } else {
            Value::Invalid
        };
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
        let result = Value::structure(
            &t.result,
            vec![file_changes],
            vec![changes_v, objects_v, legacy_value.clone()],
        );
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
        let changed: std::collections::BTreeSet<&str> = self
            .file_changes
            .values()
            .flatten()
            .flat_map(|(_, changes)| changes)
            .map(|c| supply_chain::setter_policy(&c.setter))
            .collect();
        Ok(Value::structure(
            &t.template_data,
            vec![automation, result, values],
            vec![
                legacy_value,
                t.supply_chain.value(&self.supply_chain, &changed),
            ],
        ))
    }
}

/// An ImagePolicy's latest reference as text, as Flux's `ImageRef.String()` writes it.
fn latest_image(name: &str, tag: &str, digest: &str) -> String {
    let mut s = name.to_owned();
    if !tag.is_empty() {
        s.push(':');
        s.push_str(tag);
    }
    if !digest.is_empty() {
        s.push('@');
        s.push_str(digest);
    }
    s
}

/// The report's `supplyChain`: `{"NS:NAME": {"image", "signedBy": [{"kind", "name", "fingerprint",
/// "subject", "issuer", "logIndex", "integratedTime"}], "released": {"at", "source",
/// "builderControlled"}, "alias", "aliasDigest", "skipped": [{"tag", "kind", "reason"}]}}`, in
/// policy order.
fn supply_chain_from_json(v: &serde_json::Value) -> Result<Vec<ImageFindings>, ReportError> {
    use crate::supply_chain::{Signer, Skipped};
    let shape = |path: String, expected: &'static str| ReportError::Shape { path, expected };
    fn object<'a>(
        v: &'a serde_json::Value,
        path: &str,
    ) -> Result<&'a serde_json::Map<String, serde_json::Value>, ReportError> {
        v.as_object().ok_or_else(|| ReportError::Shape {
            path: path.to_owned(),
            expected: "an object",
        })
    }
    let array = |v: Option<&serde_json::Value>, path: &str| match v {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(items)) => Ok(items.clone()),
        Some(_) => Err(shape(path.to_owned(), "an array")),
    };
    let mut out = Vec::new();
    for (policy, entry) in object(v, "supplyChain")? {
        let p = format!("supplyChain[{policy:?}]");
        let e = object(entry, &p)?;
        let mut findings = ImageFindings {
            policy: policy.clone(),
            image: json_str(e.get("image"), &format!("{p}.image"))?,
            alias: json_str(e.get("alias"), &format!("{p}.alias"))?,
            alias_digest: json_str(e.get("aliasDigest"), &format!("{p}.aliasDigest"))?,
            ..ImageFindings::default()
        };
        for (i, s) in array(e.get("signedBy"), &format!("{p}.signedBy"))?
            .iter()
            .enumerate()
        {
            let sp = format!("{p}.signedBy[{i}]");
            let s = object(s, &sp)?;
            let text = |k: &str| json_str(s.get(k), &format!("{sp}.{k}"));
            findings.signed_by.push(Signer {
                kind: text("kind")?,
                name: text("name")?,
                fingerprint: text("fingerprint")?,
                subject: text("subject")?,
                issuer: text("issuer")?,
                log_index: match s.get("logIndex") {
                    None | Some(serde_json::Value::Null) => 0,
                    Some(n) => n
                        .as_i64()
                        .ok_or_else(|| shape(format!("{sp}.logIndex"), "an integer"))?,
                },
                integrated_time: text("integratedTime")?,
            });
        }
        if let Some(r) = e.get("released").filter(|r| !r.is_null()) {
            let rp = format!("{p}.released");
            let r = object(r, &rp)?;
            findings.released = json_str(r.get("at"), &format!("{rp}.at"))?;
            findings.release_source = json_str(r.get("source"), &format!("{rp}.source"))?;
            findings.builder_controlled = match r.get("builderControlled") {
                None | Some(serde_json::Value::Null) => false,
                Some(b) => b
                    .as_bool()
                    .ok_or_else(|| shape(format!("{rp}.builderControlled"), "a boolean"))?,
            };
        }
        for (i, k) in array(e.get("skipped"), &format!("{p}.skipped"))?
            .iter()
            .enumerate()
        {
            let kp = format!("{p}.skipped[{i}]");
            let k = object(k, &kp)?;
            let text = |f: &str| json_str(k.get(f), &format!("{kp}.{f}"));
            findings.skipped.push(Skipped {
                tag: text("tag")?,
                kind: text("kind")?,
                reason: text("reason")?,
            });
        }
        out.push(findings);
    }
    out.sort_by(|a, b| a.policy.cmp(&b.policy));
    Ok(out)
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
    supply_chain: supply_chain::Types,
    provenance: crate::provenance::Types,
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

/// `types.NamespacedName.MarshalLog()`: an anonymous struct with json tags (apimachinery v0.33).
fn marshal_log(v: &Value, _: &[Value]) -> Value {
    let (namespace, name) = match v {
        Value::Struct(s) => (
            s.fields.first().cloned().unwrap_or(Value::str("")),
            s.fields.get(1).cloned().unwrap_or(Value::str("")),
        ),
        _ => (Value::str(""), Value::str("")),
    };
    let ty = Rc::new(NamedType::new(
        "struct { Name string \"json:\\\"name\\\"\"; Namespace string \"json:\\\"namespace,omitempty\\\"\" }",
        Underlying::Struct(vec![
            FieldDef {
                name: "Name".to_owned(),
                ty: Type::String,
                embedded: false,
                json_name: Some("name".to_owned()),
                json_omitempty: false,
            },
            FieldDef {
                name: "Namespace".to_owned(),
                ty: Type::String,
                embedded: false,
                json_name: Some("namespace".to_owned()),
                json_omitempty: true,
            },
        ]),
    ));
    Value::structure(&ty, vec![name, namespace], Vec::new())
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
        let mut nn = NamedType::new(
            "types.NamespacedName",
            Underlying::Struct(vec![
                FieldDef::new("Namespace", Type::String),
                FieldDef::new("Name", Type::String),
            ]),
        );
        nn.stringer = Some(namespaced_name_string);
        nn.methods = vec![
            Method::niladic("MarshalLog", Type::Any, marshal_log),
            Method::niladic("String", Type::String, |v, _| {
                Value::string(namespaced_name_string(v))
            }),
        ];
        let namespaced_name = Rc::new(nn);
        let type_meta = Rc::new(NamedType::new(
            "yaml.TypeMeta",
            Underlying::Struct(vec![
                tagged("APIVersion", "apiVersion"),
                tagged("Kind", "kind"),
            ]),
        ));
        let name_meta = Rc::new(NamedType::new(
            "yaml.NameMeta",
            Underlying::Struct(vec![
                tagged("Name", "name"),
                tagged("Namespace", "namespace"),
            ]),
        ));
        let resource_id = Rc::new(NamedType::new(
            "yaml.ResourceIdentifier",
            Underlying::Struct(vec![
                FieldDef::embedded(&type_meta),
                FieldDef::embedded(&name_meta),
            ]),
        ));
        let object_id = Rc::new(NamedType::new(
            "update.ObjectIdentifier",
            Underlying::Struct(vec![FieldDef::embedded(&resource_id)]),
        ));
        let provenance = crate::provenance::Types::new();
        let mut change = NamedType::new(
            "update.Change",
            Underlying::Struct(vec![
                FieldDef::new("OldValue", Type::String),
                FieldDef::new("NewValue", Type::String),
                FieldDef::new("Setter", Type::String),
            ]),
        );
        change.methods = vec![Method::niladic("Provenance", provenance.ty(), |v, _| {
            v.hidden(0)
        })];
        let change = Rc::new(change);
        let change_slice = Type::slice_of(Type::Named(change.clone()));
        let object_changes = Rc::new(NamedType::new(
            "update.ObjectChanges",
            Underlying::Map(Type::Named(object_id.clone()), change_slice.clone()),
        ));
        let mut result = NamedType::new(
            "update.Result",
            Underlying::Struct(vec![FieldDef::new(
                "FileChanges",
                Type::map_of(Type::String, Type::Named(object_changes.clone())),
            )]),
        );
        let legacy_result = || {
            Type::Named(Rc::new(NamedType::new(
                "update.Result",
                Underlying::Struct(Vec::new()),
            )))
        };
        result.methods = vec![
            Method::niladic("Changes", change_slice, |v, _| v.hidden(0)),
            Method::niladic("ImageResult", legacy_result(), |v, _| v.hidden(2)),
            Method::niladic("Objects", Type::Named(object_changes.clone()), |v, _| {
                v.hidden(1)
            }),
        ];
        let result = Rc::new(result);
        let supply_chain = supply_chain::Types::new();
        let mut template_data = NamedType::new(
            "source.TemplateData",
            Underlying::Struct(vec![
                FieldDef::new("AutomationObject", Type::Named(namespaced_name.clone())),
                FieldDef::new("Changed", Type::Named(result.clone())),
                FieldDef::new("Values", Type::map_of(Type::String, Type::String)),
            ]),
        );
        template_data.methods = vec![
            Method::niladic("Updated", legacy_result(), |v, _| v.hidden(0)),
            Method::niladic("SupplyChain", supply_chain.slice(), |v, _| v.hidden(1)),
        ];
        let template_data = Rc::new(template_data);
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
            supply_chain,
            provenance,
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
            vec![self.provenance.value(c.provenance.as_deref())],
        )
    }
}

/// Render a commit message as Flux does: an absent or empty template gives [`DEFAULT_MESSAGE`]; the
/// template is named `commit message`; Go's output bytes are returned as text (invalid UTF-8, which
/// only byte-slicing functions such as `trunc` can produce, becomes U+FFFD). A template using
/// `.Updated` or `.Changed.ImageResult` renders as in Flux v0.x (see [`render`] for the warnings).
pub fn render_commit_message(
    template: Option<&str>,
    data: &TemplateData,
) -> Result<String, MessageError> {
    render(template, data, &Limits::default()).map(|r| r.message)
}

/// [`render_commit_message`] with explicit resource limits.
pub fn render_commit_message_with_limits(
    template: Option<&str>,
    data: &TemplateData,
    limits: &Limits,
) -> Result<String, MessageError> {
    render(template, data, limits).map(|r| r.message)
}

/// Render a commit message (as [`render_commit_message`]) and say which fields Flux v1 removed the
/// template uses.
pub fn render(
    template: Option<&str>,
    data: &TemplateData,
    limits: &Limits,
) -> Result<Rendered, MessageError> {
    let text = match template {
        None | Some("") => DEFAULT_MESSAGE,
        Some(t) => t,
    };
    let tmpl = Template::parse(TEMPLATE_NAME, text).map_err(MessageError::Parse)?;
    let warnings = removed_field_uses(&tmpl);
    let value = data.value(!warnings.is_empty())?;
    let out = tmpl
        .execute_with_limits(&value, limits)
        .map_err(MessageError::Execute)?;
    Ok(Rendered {
        message: String::from_utf8_lossy(&out).into_owned(),
        warnings,
    })
}
