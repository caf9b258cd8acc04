//! The fields of one object read for a reader that reports every problem: each value by the YAML
//! layer's one rule for plain scalars ([`crate::yaml::Object::string_field`]), each problem an
//! error at the field's file, line and column, its message led by the object it is about
//! (`ImageUpdater apps/u: spec.fluxcd.interval ...`). The Flux automation's reader, its git
//! section's ([`super::git`]) and the KubeSphere ImageUpdater's ([`crate::kubesphere`]) read
//! through it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Location};
use crate::yaml::{Object, dotted, pointer_step};

/// One object's fields, and the problems found reading them.
pub(crate) struct Fields<'a> {
    object: Object<'a>,
    origin: &'a str,
    positions: bool,
    /// What messages say the object is (`ImageUpdater apps/u`).
    what: String,
    errors: Vec<Diagnostic>,
}

impl<'a> Fields<'a> {
    /// The fields of `object`, read from `origin`; `positions` says whether the document's
    /// positions are lines of it.
    #[must_use]
    pub(crate) fn new(object: Object<'a>, origin: &'a str, positions: bool) -> Self {
        Self {
            object,
            origin,
            positions,
            what: String::new(),
            errors: Vec::new(),
        }
    }

    /// Messages name the object `what` from now on.
    pub(crate) fn name(&mut self, what: String) {
        self.what = what;
    }

    /// The object read.
    #[must_use]
    pub(crate) fn object(&self) -> &Object<'a> {
        &self.object
    }

    /// Where the field at `pointer` is (its nearest present ancestor when absent; the file's
    /// start when the document has no position for it).
    #[must_use]
    pub(crate) fn location(&self, pointer: &str) -> Location {
        let full = format!("{}{pointer}", self.object.pointer);
        Location::new(
            self.origin,
            self.object.document.position_if(self.positions, &full),
        )
    }

    /// The error `message` about the field at `pointer`.
    #[must_use]
    pub(crate) fn error(&self, pointer: &str, message: impl std::fmt::Display) -> Diagnostic {
        let message = if self.what.is_empty() {
            message.to_string()
        } else {
            format!("{}: {message}", self.what)
        };
        Diagnostic::error(message).at(self.location(pointer))
    }

    /// Record the error `message` about the field at `pointer`.
    pub(crate) fn fail(&mut self, pointer: &str, message: impl std::fmt::Display) {
        let d = self.error(pointer, message);
        self.errors.push(d);
    }

    /// The value at `pointer`; `None` when absent or null.
    #[must_use]
    pub(crate) fn get(&self, pointer: &str) -> Option<&'a Value> {
        self.object.field(pointer)
    }

    /// A string field, `None` when absent or null; anything else is an error.
    pub(crate) fn string(&mut self, pointer: &str) -> Option<String> {
        match self.object.string_field(pointer) {
            Ok(s) => s.map(str::to_owned),
            Err(_) => {
                self.fail(pointer, format!("{} is not a string", dotted(pointer)));
                None
            }
        }
    }

    /// A map of strings (Go's `map[string]string`, as Flux's API types `messageTemplateValues`
    /// and push `options`): empty when absent or null; a null entry is the empty string, as Go's
    /// decoder has it; anything else that is not a string is an error at the entry.
    pub(crate) fn string_map(&mut self, pointer: &str) -> BTreeMap<String, String> {
        let Some(value) = self.get(pointer) else {
            return BTreeMap::new();
        };
        let Some(map) = value.as_object() else {
            self.fail(
                pointer,
                format!("{} is not a map of strings", dotted(pointer)),
            );
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (k, v) in map {
            match v {
                Value::String(s) => {
                    out.insert(k.clone(), s.clone());
                }
                Value::Null => {
                    out.insert(k.clone(), String::new());
                }
                _ => {
                    let entry = format!("{pointer}/{}", pointer_step(k));
                    self.fail(&entry, format!("{}.{k} is not a string", dotted(pointer)));
                }
            }
        }
        out
    }

    /// The problems found, in the order of their lines.
    #[must_use]
    pub(crate) fn into_errors(self) -> Vec<Diagnostic> {
        let mut errors = self.errors;
        errors.sort_by_key(|d| {
            d.location
                .as_ref()
                .and_then(|l| l.position)
                .map(|p| (p.line, p.column))
        });
        errors
    }

    /// Whether a problem was found.
    #[must_use]
    pub(crate) fn failed(&self) -> bool {
        !self.errors.is_empty()
    }
}
