//! Flux v0.x's image result (`update.Result`), which templates saw as `.Updated` and, from v0.38 on,
//! as `.Changed.ImageResult`. Flux v1 removed both (a template using them fails there); image-update
//! still renders them, and says so with a warning ([`crate::flux::RemovedFieldUse`]).
//!
//! The structure is file -> object -> image references: `Files map[string]update.FileResult`, each
//! `FileResult` with `Objects map[update.ObjectIdentifier][]update.ImageRef`, and the methods
//! `Images()` (every reference once) and `Objects()` (objects across files). An `update.ImageRef`
//! holds an `update.imageRef`: the policy's latest image parsed by go-containerregistry (a
//! `name.Tag` or `name.Digest`, see [`crate::refname`]) and the policy's namespaced name.
//!
//! What is recorded, as the design of Flux's `ResultV2` describes the structure ("partial image
//! updates (name or tag) are not recorded in the result", seed 003): only changes
//! made by a policy's whole-image setter (`NS:NAME`) add that policy's latest image to their object,
//! once per object; changes by `NS:NAME:tag`, `NS:NAME:name` and `NS:NAME:digest` add nothing (they
//! are in `.Changed`). The image is the policy's whole latest reference (`name:tag`, with `@digest`
//! when it has one). Flux's v0.x code recorded the partial setters too (`:tag` and `:name` from
//! v0.7.0, `:digest` from v0.41.0); image-update follows the design document, as issue 19 asks.
//!
//! Order: Go's maps print and range in sorted key order, so only the two methods' slices need an
//! order of their own. Flux built them by ranging over maps, in Go's random order; here
//! `Images()` walks files by path, objects in Go's key order and each object's references in the
//! order of its changes, keeping the first of equal references, and `Objects()` appends each
//! object's references file by file in path order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use foldhash::fast::RandomState as FastHash;

use crate::flux::{ObjectId, UpdateChange};
use crate::refname::{self, Reference};
use crate::value::{FieldDef, Method, NamedType, Type, Underlying, Value};

/// An image reference as Flux v0.x recorded it: the policy (`NAMESPACE`, `NAME`) and its parsed
/// latest image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// The ImagePolicy's namespace.
    pub policy_namespace: String,
    /// The ImagePolicy's name.
    pub policy_name: String,
    /// The parsed latest image.
    pub reference: Reference,
}

/// A latest image that go-containerregistry would not parse (Flux refused to run with it).
#[derive(Debug, thiserror::Error)]
#[error("encountered invalid image ref {image:?}: {reason}")]
pub struct InvalidImageRef {
    /// The image.
    pub image: String,
    /// go-containerregistry's reason.
    pub reason: String,
}

/// The policy key (`NAMESPACE:NAME`) of a whole-image setter (`NS:NAME`); `None` for a partial
/// setter (`NS:NAME:tag|name|digest`, not recorded) and for anything else.
fn setter_policy(setter: &str) -> Option<&str> {
    let (ns, name) = setter.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some(setter)
}

/// The references of a run, file -> object -> references, built from its changes and the latest
/// image of each policy (`NAMESPACE:NAME` -> image, the report's `observedPolicies`).
pub struct LegacyResult {
    /// By file path, then by object in Go's key order.
    pub files: BTreeMap<String, BTreeMap<ObjectId, Vec<Rc<ImageRef>>>>,
}

impl LegacyResult {
    /// Record every change of `file_changes` made by a whole-image setter: its policy's latest
    /// image, or, when the policy is not listed, the value it wrote (that value is the policy's
    /// latest image).
    pub fn build(
        file_changes: &BTreeMap<String, Vec<(ObjectId, Vec<UpdateChange>)>>,
        policies: &BTreeMap<String, String>,
    ) -> Result<LegacyResult, InvalidImageRef> {
        let mut refs: HashMap<String, Vec<Rc<ImageRef>>, FastHash> = HashMap::default();
        let mut files = BTreeMap::new();
        for (file, objects) in file_changes {
            let mut by_object: BTreeMap<ObjectId, Vec<Rc<ImageRef>>> = BTreeMap::new();
            // Objects in key order, as the oracle reads them (it decides which bad image is named).
            let mut sorted: Vec<&(ObjectId, Vec<UpdateChange>)> = objects.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            for (id, changes) in sorted {
                for change in changes {
                    let Some(key) = setter_policy(&change.setter) else {
                        continue;
                    };
                    let image: &str = policies.get(key).map_or(&change.new_value, String::as_str);
                    // One reference per policy and image (a policy has one latest image, so the
                    // lookup by policy alone almost always answers).
                    let known = refs
                        .get(key)
                        .and_then(|list| list.iter().find(|r| r.reference.original == image));
                    let r = match known {
                        Some(r) => r.clone(),
                        None => {
                            let reference = refname::parse_reference(image).map_err(|reason| {
                                InvalidImageRef {
                                    image: image.to_owned(),
                                    reason,
                                }
                            })?;
                            let (ns, name) = key.split_once(':').unwrap_or((key, ""));
                            let r = Rc::new(ImageRef {
                                policy_namespace: ns.to_owned(),
                                policy_name: name.to_owned(),
                                reference,
                            });
                            refs.entry(key.to_owned()).or_default().push(r.clone());
                            r
                        }
                    };
                    let list = by_object.entry(id.clone()).or_default();
                    if !list.iter().any(|x| Rc::ptr_eq(x, &r)) {
                        list.push(r);
                    }
                }
            }
            if !by_object.is_empty() {
                files.insert(file.clone(), by_object);
            }
        }
        Ok(LegacyResult { files })
    }

    /// `Images()`: every reference once, in the order the module documentation gives.
    pub fn images(&self) -> Vec<Rc<ImageRef>> {
        let mut seen: HashSet<*const ImageRef, FastHash> = HashSet::default();
        let mut out: Vec<Rc<ImageRef>> = Vec::new();
        for objects in self.files.values() {
            for refs in objects.values() {
                for r in refs {
                    if seen.insert(Rc::as_ptr(r)) {
                        out.push(r.clone());
                    }
                }
            }
        }
        out
    }
}

/// The Go types of Flux v0.x's `update` package that templates see.
pub struct LegacyTypes {
    /// `update.ImageRef` (an interface)
    pub image_ref_iface: Rc<NamedType>,
    /// `update.imageRef`
    pub image_ref: Rc<NamedType>,
    /// `update.FileResult`
    pub file_result: Rc<NamedType>,
    /// `update.Result`
    pub result: Rc<NamedType>,
    /// `types.NamespacedName`
    namespaced_name: Rc<NamedType>,
    /// `map[update.ObjectIdentifier][]update.ImageRef`
    objects: Type,
}

/// Calls the named method of a `name.Tag`/`name.Digest` value.
fn call(v: &Value, method: &str, args: &[Value]) -> Value {
    match v {
        Value::Struct(s) => {
            s.ty.methods
                .iter()
                .find(|m| m.name == method)
                .map_or(Value::Invalid, |m| (m.call)(v, args))
        }
        _ => Value::Invalid,
    }
}

fn m_reference(name: &'static str) -> fn(&Value, &[Value]) -> Value {
    match name {
        "Context" => |v, a| call(&v.field(0), "Context", a),
        "Identifier" => |v, a| call(&v.field(0), "Identifier", a),
        "Name" => |v, a| call(&v.field(0), "Name", a),
        "Scope" => |v, a| call(&v.field(0), "Scope", a),
        _ => |v, a| call(&v.field(0), "String", a),
    }
}

fn m_policy(v: &Value, _: &[Value]) -> Value {
    v.field(1)
}

fn m_repository(v: &Value, _: &[Value]) -> Value {
    call(&v.field(0), "RepositoryStr", &[])
}

fn m_registry(v: &Value, _: &[Value]) -> Value {
    call(&v.field(0), "RegistryStr", &[])
}

fn image_ref_string(v: &Value) -> String {
    call(&v.field(0), "String", &[])
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

impl LegacyTypes {
    /// The types, over the `update.ObjectIdentifier` and `types.NamespacedName` of the v1 data
    /// (Flux v0.x's were the same).
    pub fn new(object_id: &Rc<NamedType>, namespaced_name: &Rc<NamedType>) -> LegacyTypes {
        let names = refname::types();
        let image_ref_iface = Rc::new(NamedType::new("update.ImageRef", Underlying::Interface));
        let mut image_ref = NamedType::new(
            "update.imageRef",
            Underlying::Struct(vec![
                FieldDef {
                    name: "Reference".to_owned(),
                    ty: Type::Named(names.reference.clone()),
                    embedded: true,
                    json_name: None,
                    json_omitempty: false,
                },
                FieldDef::new("policy", Type::Named(namespaced_name.clone())),
            ]),
        );
        image_ref.stringer = Some(image_ref_string);
        let s = Type::String;
        image_ref.methods = vec![
            Method::niladic(
                "Context",
                Type::Named(names.repository.clone()),
                m_reference("Context"),
            ),
            Method::niladic("Identifier", s.clone(), m_reference("Identifier")),
            Method::niladic("Name", s.clone(), m_reference("Name")),
            Method::niladic("Policy", Type::Named(namespaced_name.clone()), m_policy),
            Method::niladic("Registry", s.clone(), m_registry),
            Method::niladic("Repository", s.clone(), m_repository),
            Method::with_params(
                "Scope",
                vec![s.clone()],
                false,
                s.clone(),
                m_reference("Scope"),
            ),
            Method::niladic("String", s, m_reference("String")),
        ];
        let image_ref = Rc::new(image_ref);
        let refs = Type::slice_of(Type::Named(image_ref_iface.clone()));
        let objects = Type::map_of(Type::Named(object_id.clone()), refs.clone());
        let file_result = Rc::new(NamedType::new(
            "update.FileResult",
            Underlying::Struct(vec![FieldDef::new("Objects", objects.clone())]),
        ));
        let mut result = NamedType::new(
            "update.Result",
            Underlying::Struct(vec![FieldDef::new(
                "Files",
                Type::map_of(Type::String, Type::Named(file_result.clone())),
            )]),
        );
        result.methods = vec![
            Method::niladic("Images", refs, |v, _| v.hidden(0)),
            Method::niladic("Objects", objects.clone(), |v, _| v.hidden(1)),
        ];
        LegacyTypes {
            image_ref_iface,
            image_ref,
            file_result,
            result: Rc::new(result),
            namespaced_name: namespaced_name.clone(),
            objects,
        }
    }

    /// The `update.Result` value of `result`; `object_id` makes the value of an object's identity.
    pub fn value(&self, result: &LegacyResult, object_id: &dyn Fn(&ObjectId) -> Value) -> Value {
        let names = refname::types();
        let mut values: HashMap<*const ImageRef, Value, FastHash> = HashMap::default();
        let mut value_of = |r: &Rc<ImageRef>| -> Value {
            let key = Rc::as_ptr(r);
            if let Some(v) = values.get(&key) {
                return v.clone();
            }
            let policy = Value::structure(
                &self.namespaced_name,
                vec![Value::str(&r.policy_namespace), Value::str(&r.policy_name)],
                Vec::new(),
            );
            let v = Value::structure(
                &self.image_ref,
                vec![names.value(&r.reference), policy],
                Vec::new(),
            );
            values.insert(key, v.clone());
            v
        };
        let refs_type = Type::slice_of(Type::Named(self.image_ref_iface.clone()));
        let objects_type = self.objects.clone();
        let mut ids: BTreeMap<&ObjectId, Value> = BTreeMap::new();
        let mut merged: BTreeMap<&ObjectId, Vec<Value>> = BTreeMap::new();
        let mut files = Vec::with_capacity(result.files.len());
        for (file, objects) in &result.files {
            let mut entries = Vec::with_capacity(objects.len());
            for (id, refs) in objects {
                let idv = ids.entry(id).or_insert_with(|| object_id(id)).clone();
                let list: Vec<Value> = refs.iter().map(&mut value_of).collect();
                merged.entry(id).or_default().extend(list.iter().cloned());
                entries.push((idv, Value::slice(refs_type.clone(), list)));
            }
            let fr = Value::structure(
                &self.file_result,
                vec![Value::map_sorted(objects_type.clone(), entries)],
                Vec::new(),
            );
            files.push((Value::str(file), fr));
        }
        let images: Vec<Value> = result.images().iter().map(&mut value_of).collect();
        let images = if images.is_empty() {
            Value::Nil(refs_type.clone())
        } else {
            Value::slice(refs_type.clone(), images)
        };
        let objects = Value::map_sorted(
            objects_type,
            merged
                .into_iter()
                .map(|(id, list)| {
                    let idv = ids.get(id).cloned().unwrap_or_else(|| object_id(id));
                    (idv, Value::slice(refs_type.clone(), list))
                })
                .collect(),
        );
        let files_type = Type::map_of(Type::String, Type::Named(self.file_result.clone()));
        Value::structure(
            &self.result,
            vec![Value::map_sorted(files_type, files)],
            vec![images, objects],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_image_setters_name_their_policy() {
        assert_eq!(setter_policy("ns:p"), Some("ns:p"));
        assert_eq!(setter_policy("ns:p:tag"), None);
        assert_eq!(setter_policy("ns:p:digest"), None);
        assert_eq!(setter_policy("ns:p:name"), None);
        assert_eq!(setter_policy("ns:p:other"), None);
        assert_eq!(setter_policy("ns"), None);
        assert_eq!(setter_policy(":p"), None);
        assert_eq!(setter_policy("ns:"), None);
    }

    fn change(setter: &str, new_value: &str) -> UpdateChange {
        UpdateChange {
            old_value: "".into(),
            new_value: new_value.into(),
            setter: setter.into(),
            provenance: None,
        }
    }

    #[test]
    fn partial_setters_record_nothing() {
        let id = ObjectId::default();
        let files = BTreeMap::from([
            (
                "tags.yaml".to_owned(),
                vec![(
                    id.clone(),
                    vec![change("ns:p:tag", "2"), change("ns:p:name", "app")],
                )],
            ),
            (
                "whole.yaml".to_owned(),
                vec![(
                    id,
                    vec![change("ns:p", "app:2"), change("ns:q:digest", "sha256:00")],
                )],
            ),
        ]);
        let policies = BTreeMap::from([("ns:p".to_owned(), "app:2".to_owned())]);
        let result = LegacyResult::build(&files, &policies).unwrap();
        assert_eq!(result.files.keys().collect::<Vec<_>>(), ["whole.yaml"]);
        let images = result.images();
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].reference.original, "app:2");
        assert_eq!(images[0].policy_name, "p");
    }
}
