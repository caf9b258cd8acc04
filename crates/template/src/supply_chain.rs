//! image-update's addition to Flux's commit-message data: what the supply-chain gate found about
//! each image the commit writes, reached as `.SupplyChain`, a method of the template data (so that
//! printing the data itself, `{{ . }}`, stays as Flux prints it).
//!
//! `.SupplyChain` is a `[]supplychain.Image`, one per policy whose setter made a change, in policy
//! order; only policies the gate checked have one (a fetched policy with a signer, a minimum age or
//! an alias). Each `supplychain.Image` has the fields `Policy` (`NAMESPACE:NAME`), `Image`
//! (`NAME:TAG@DIGEST`), `Tag`, `Digest`, `SignedBy` (a `[]supplychain.Signer`), `Released`
//! (RFC 3339, empty when no minimum age applied), `ReleaseSource`, `BuilderControlled`, `Alias`,
//! `AliasDigest` and `Skipped` (a `[]supplychain.Skipped` of `Tag`, `Kind`, `Reason`). A
//! `supplychain.Signer` has `Kind` (`key` or `identity`), `Name`, `Fingerprint`, `Subject`,
//! `Issuer`, `LogIndex` (an `int64`) and `IntegratedTime`, and prints as `key NAME (FINGERPRINT)` or
//! `SUBJECT (issuer ISSUER; transparency log index N, TIME)`. For example:
//!
//! ```text
//! {{ range .SupplyChain }}{{ .Image }} signed by {{ range .SignedBy }}{{ . }}{{ end }}
//! {{ end }}
//! ```
//!
//! The Go mirror is `tools/template-oracle/supplychain`.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::value::{FieldDef, NamedType, Type, Underlying, Value};

/// One signer of a chosen image.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signer {
    /// `key` or `identity`.
    pub kind: String,
    /// A key's name.
    pub name: String,
    /// A key's fingerprint (`sha256:…`).
    pub fingerprint: String,
    /// A keyless identity's subject.
    pub subject: String,
    /// A keyless identity's OIDC issuer.
    pub issuer: String,
    /// The transparency-log entry's index (0 for a key without one).
    pub log_index: i64,
    /// When the log integrated the entry (RFC 3339).
    pub integrated_time: String,
}

/// A better candidate the gate passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// The tag.
    pub tag: String,
    /// `unsigned`, `too-young` or `no-trusted-time`.
    pub kind: String,
    /// Why.
    pub reason: String,
}

/// What the gate found about one policy's chosen image: one element of `.SupplyChain`, a method
/// of the template data giving a `[]supplychain.Image` with the fields `Policy`, `Image`, `Tag`,
/// `Digest`, `SignedBy` (`[]supplychain.Signer`: `Kind`, `Name`, `Fingerprint`, `Subject`,
/// `Issuer`, `LogIndex`, `IntegratedTime`; printed as `key NAME (FINGERPRINT)` or `SUBJECT (issuer
/// …; transparency log index N, TIME)`), `Released`, `ReleaseSource`, `BuilderControlled`,
/// `Alias`, `AliasDigest` and `Skipped` (`[]supplychain.Skipped`: `Tag`, `Kind`, `Reason`), for
/// the policies whose setters made a change, in policy order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageFindings {
    /// `NAMESPACE:NAME`.
    pub policy: String,
    /// `NAME:TAG@DIGEST`.
    pub image: String,
    /// Who signed it.
    pub signed_by: Vec<Signer>,
    /// When it was released (RFC 3339), if a minimum age applied.
    pub released: String,
    /// What said when.
    pub release_source: String,
    /// Whether that time is the builder's, not the registry's.
    pub builder_controlled: bool,
    /// The alias followed.
    pub alias: String,
    /// The alias's digest.
    pub alias_digest: String,
    /// Better candidates passed over.
    pub skipped: Vec<Skipped>,
}

impl ImageFindings {
    /// The tag of [`Self::image`].
    pub fn tag(&self) -> &str {
        let name = self.image.split('@').next().unwrap_or_default();
        let slash = name.rfind('/').map_or(0, |i| i + 1);
        name[slash..]
            .rfind(':')
            .map_or("", |i| &name[slash + i + 1..])
    }

    /// The digest of [`Self::image`].
    pub fn digest(&self) -> &str {
        self.image.split_once('@').map_or("", |(_, d)| d)
    }
}

/// The policy a setter (`NAMESPACE:NAME[:FIELD]`) belongs to.
pub(crate) fn setter_policy(setter: &str) -> &str {
    match setter.match_indices(':').nth(1) {
        Some((i, _)) => &setter[..i],
        None => setter,
    }
}

/// The Go types of the findings.
pub(crate) struct Types {
    image: Rc<NamedType>,
    signer: Rc<NamedType>,
    skipped: Rc<NamedType>,
}

fn signer_string(v: &Value) -> String {
    let field = |i: usize| match v {
        Value::Struct(s) => s.fields.get(i).cloned().unwrap_or(Value::Invalid),
        _ => Value::Invalid,
    };
    let text = |i: usize| field(i).as_str().unwrap_or_default().to_owned();
    if text(0) == "key" {
        format!("key {} ({})", text(1), text(2))
    } else {
        let index = match field(5) {
            Value::Int(i, _) => i,
            _ => 0,
        };
        format!(
            "{} (issuer {}; transparency log index {index}, {})",
            text(3),
            text(4),
            text(6)
        )
    }
}

impl Types {
    pub(crate) fn new() -> Types {
        let signer = Rc::new(NamedType {
            name: "supplychain.Signer".to_owned(),
            underlying: Underlying::Struct(vec![
                FieldDef::new("Kind", Type::String),
                FieldDef::new("Name", Type::String),
                FieldDef::new("Fingerprint", Type::String),
                FieldDef::new("Subject", Type::String),
                FieldDef::new("Issuer", Type::String),
                FieldDef::new("LogIndex", Type::Int64),
                FieldDef::new("IntegratedTime", Type::String),
            ]),
            methods: Vec::new(),
            stringer: Some(signer_string),
            promoted: std::cell::RefCell::default(),
        });
        let skipped = Rc::new(NamedType {
            name: "supplychain.Skipped".to_owned(),
            underlying: Underlying::Struct(vec![
                FieldDef::new("Tag", Type::String),
                FieldDef::new("Kind", Type::String),
                FieldDef::new("Reason", Type::String),
            ]),
            methods: Vec::new(),
            stringer: None,
            promoted: std::cell::RefCell::default(),
        });
        let image = Rc::new(NamedType {
            name: "supplychain.Image".to_owned(),
            underlying: Underlying::Struct(vec![
                FieldDef::new("Policy", Type::String),
                FieldDef::new("Image", Type::String),
                FieldDef::new("Tag", Type::String),
                FieldDef::new("Digest", Type::String),
                FieldDef::new("SignedBy", Type::slice_of(Type::Named(signer.clone()))),
                FieldDef::new("Released", Type::String),
                FieldDef::new("ReleaseSource", Type::String),
                FieldDef::new("BuilderControlled", Type::Bool),
                FieldDef::new("Alias", Type::String),
                FieldDef::new("AliasDigest", Type::String),
                FieldDef::new("Skipped", Type::slice_of(Type::Named(skipped.clone()))),
            ]),
            methods: Vec::new(),
            stringer: None,
            promoted: std::cell::RefCell::default(),
        });
        Types {
            image,
            signer,
            skipped,
        }
    }

    /// `[]supplychain.Image`.
    pub(crate) fn slice(&self) -> Type {
        Type::slice_of(Type::Named(self.image.clone()))
    }

    /// The findings of the policies in `changed` (a nil slice when there are none), as Go values.
    pub(crate) fn value(&self, findings: &[ImageFindings], changed: &BTreeSet<&str>) -> Value {
        let items: Vec<Value> = findings
            .iter()
            .filter(|f| changed.contains(f.policy.as_str()))
            .map(|f| self.image(f))
            .collect();
        if items.is_empty() {
            Value::Nil(self.slice())
        } else {
            Value::slice(self.slice(), items)
        }
    }

    fn image(&self, f: &ImageFindings) -> Value {
        let signers: Vec<Value> = f
            .signed_by
            .iter()
            .map(|s| {
                Value::structure(
                    &self.signer,
                    vec![
                        Value::str(&s.kind),
                        Value::str(&s.name),
                        Value::str(&s.fingerprint),
                        Value::str(&s.subject),
                        Value::str(&s.issuer),
                        Value::int64(s.log_index),
                        Value::str(&s.integrated_time),
                    ],
                    Vec::new(),
                )
            })
            .collect();
        let skipped: Vec<Value> = f
            .skipped
            .iter()
            .map(|k| {
                Value::structure(
                    &self.skipped,
                    vec![
                        Value::str(&k.tag),
                        Value::str(&k.kind),
                        Value::str(&k.reason),
                    ],
                    Vec::new(),
                )
            })
            .collect();
        let slice = |ty: &Rc<NamedType>, items: Vec<Value>| {
            let t = Type::slice_of(Type::Named(ty.clone()));
            if items.is_empty() {
                Value::Nil(t)
            } else {
                Value::slice(t, items)
            }
        };
        Value::structure(
            &self.image,
            vec![
                Value::str(&f.policy),
                Value::str(&f.image),
                Value::str(f.tag()),
                Value::str(f.digest()),
                slice(&self.signer, signers),
                Value::str(&f.released),
                Value::str(&f.release_source),
                Value::Bool(f.builder_controlled),
                Value::str(&f.alias),
                Value::str(&f.alias_digest),
                slice(&self.skipped, skipped),
            ],
            Vec::new(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_parts_and_setters() {
        let f = ImageFindings {
            image: "registry:5000/team/app:1.2.0@sha256:ab".into(),
            ..ImageFindings::default()
        };
        assert_eq!((f.tag(), f.digest()), ("1.2.0", "sha256:ab"));
        let f = ImageFindings {
            image: "registry:5000/team/app".into(),
            ..ImageFindings::default()
        };
        assert_eq!((f.tag(), f.digest()), ("", ""));
        assert_eq!(setter_policy("ns:app:tag"), "ns:app");
        assert_eq!(setter_policy("ns:app"), "ns:app");
    }
}
