//! Where each changed image was built from, and who signed it: one model, written in the
//! ResultV2 report (`provenance` of a change), read back from it for the commit message
//! (`.Changed.Changes[i].Provenance`, a method of `update.Change`, so printing a change, `{{ . }}`,
//! stays as Flux prints it) and for the pull-request body.
//!
//! In templates `.Provenance` is a `provenance.Provenance`, the zero struct when nothing was
//! gathered (strings empty, `Notes` an empty `[]string`), so `{{ if .Provenance.CompareURL }}`
//! works on every change: `Old` and `New` (`provenance.Image`: `Image`, `Digest`, `Source`,
//! `Revision`, `Version`, `SourceFrom`, `RevisionFrom`, `VersionFrom`), `SourceURL`, `Forge`,
//! `CommitURL`, `CompareURL`, `CompareBy` (`revision` or `tag`), `Signer` (`provenance.Signer`:
//! `Kind`, `Name`, `Fingerprint`, `Subject`, `Issuer`, `SourceRepository`, `SourceDigest`,
//! `SourceDigestMatches`), `Released`, `ReleaseSource` and `Notes`.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::value::{FieldDef, NamedType, Type, Underlying, Value};

/// What one image (the old or the new) says of where it was built from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ImageSource {
    /// `NAME:TAG[@DIGEST]` as the field held it.
    pub image: String,
    /// The digest read (an index's, for a multi-platform image).
    pub digest: String,
    /// `org.opencontainers.image.source` (or Label Schema's `vcs-url`), as the image has it.
    pub source: String,
    /// `org.opencontainers.image.revision` (or `vcs-ref`).
    pub revision: String,
    /// `org.opencontainers.image.version` (or Label Schema's `version`).
    pub version: String,
    /// Where `source` was read: `descriptor`, `manifest`, `index` or `config`, and the key.
    pub source_from: String,
    /// Where `revision` was read.
    pub revision_from: String,
    /// Where `version` was read.
    pub version_from: String,
}

impl ImageSource {
    /// The image as read, else `fallback` (the field's value).
    #[must_use]
    pub fn image_or(&self, fallback: &str) -> String {
        if self.image.is_empty() {
            fallback.to_owned()
        } else {
            self.image.clone()
        }
    }
}

/// Who signed the new image, as the supply-chain gate verified it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Signer {
    /// `key` or `identity`; empty when no signature was required.
    pub kind: String,
    /// A key's name.
    pub name: String,
    /// A key's fingerprint (`sha256:…`).
    pub fingerprint: String,
    /// A keyless certificate's identity (its SAN).
    pub subject: String,
    /// A keyless certificate's OIDC issuer.
    pub issuer: String,
    /// Fulcio's source repository URI extension, when the certificate has it.
    pub source_repository: String,
    /// Fulcio's source repository digest extension (the commit signed from).
    pub source_digest: String,
    /// The certificate's source digest is the image's revision.
    pub source_digest_matches: bool,
}

impl Signer {
    /// Who signed, in one phrase (`None` when no signature was required): `key NAME FINGERPRINT`,
    /// or `SUBJECT (issuer ISSUER)`, then `, from REPOSITORY at DIGEST` and `, the image's own
    /// revision` when the certificate says so. `show` quotes each text (a code span, an escape).
    pub fn describe(&self, show: impl Fn(&str) -> String) -> Option<String> {
        let mut out = match self.kind.as_str() {
            "key" => format!("key {} {}", show(&self.name), show(&self.fingerprint)),
            "identity" => format!("{} (issuer {})", show(&self.subject), show(&self.issuer)),
            _ => return None,
        };
        if !self.source_repository.is_empty() {
            out.push_str(&format!(
                ", from {} at {}",
                show(&self.source_repository),
                show(&self.source_digest)
            ));
        }
        if self.source_digest_matches {
            out.push_str(", the image's own revision");
        }
        Some(out)
    }
}

/// The provenance of one change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Provenance {
    pub old: ImageSource,
    pub new: ImageSource,
    /// The new image's source, normalised to the repository's web address.
    #[serde(rename = "sourceURL")]
    pub source_url: String,
    /// The forge serving it: `github`, `gitlab`, `gitea`, `bitbucket`, `bitbucket-server`,
    /// `azure-devops`; empty when unknown (then no links).
    pub forge: String,
    /// The new revision's commit page.
    #[serde(rename = "commitURL")]
    pub commit_url: String,
    /// The changes between the old and the new image's sources.
    #[serde(rename = "compareURL")]
    pub compare_url: String,
    /// What the compare link compares: `revision`, or `tag` (versions) when a revision is missing.
    pub compare_by: String,
    pub signer: Signer,
    /// When the new image was released (RFC 3339), when the gate knew.
    pub released: String,
    /// What said so.
    pub release_source: String,
    /// What could not be found or linked, and why.
    pub notes: Vec<String>,
}

/// The Go types of the model.
pub(crate) struct Types {
    provenance: Rc<NamedType>,
    image: Rc<NamedType>,
    signer: Rc<NamedType>,
}

fn strings(names: &[&str]) -> Vec<FieldDef> {
    names
        .iter()
        .map(|n| FieldDef::new(n, Type::String))
        .collect()
}

impl Types {
    pub(crate) fn new() -> Types {
        let image = Rc::new(NamedType::new(
            "provenance.Image",
            Underlying::Struct(strings(&[
                "Image",
                "Digest",
                "Source",
                "Revision",
                "Version",
                "SourceFrom",
                "RevisionFrom",
                "VersionFrom",
            ])),
        ));
        let mut signer_fields = strings(&[
            "Kind",
            "Name",
            "Fingerprint",
            "Subject",
            "Issuer",
            "SourceRepository",
            "SourceDigest",
        ]);
        signer_fields.push(FieldDef::new("SourceDigestMatches", Type::Bool));
        let signer = Rc::new(NamedType::new(
            "provenance.Signer",
            Underlying::Struct(signer_fields),
        ));
        let mut fields = vec![
            FieldDef::new("Old", Type::Named(image.clone())),
            FieldDef::new("New", Type::Named(image.clone())),
        ];
        fields.extend(strings(&[
            "SourceURL",
            "Forge",
            "CommitURL",
            "CompareURL",
            "CompareBy",
        ]));
        fields.push(FieldDef::new("Signer", Type::Named(signer.clone())));
        fields.extend(strings(&["Released", "ReleaseSource"]));
        fields.push(FieldDef::new("Notes", Type::slice_of(Type::String)));
        let provenance = Rc::new(NamedType::new(
            "provenance.Provenance",
            Underlying::Struct(fields),
        ));
        Types {
            provenance,
            image,
            signer,
        }
    }

    /// `provenance.Provenance`.
    pub(crate) fn ty(&self) -> Type {
        Type::Named(self.provenance.clone())
    }

    fn image(&self, i: &ImageSource) -> Value {
        Value::structure(
            &self.image,
            [
                &i.image,
                &i.digest,
                &i.source,
                &i.revision,
                &i.version,
                &i.source_from,
                &i.revision_from,
                &i.version_from,
            ]
            .into_iter()
            .map(|s| Value::str(s))
            .collect(),
            Vec::new(),
        )
    }

    /// The Go value of `p` (the zero struct for `None`, with an empty, non-nil `Notes`).
    pub(crate) fn value(&self, p: Option<&Provenance>) -> Value {
        let zero = Provenance::default();
        let p = p.unwrap_or(&zero);
        let s = &p.signer;
        let mut signer: Vec<Value> = [
            &s.kind,
            &s.name,
            &s.fingerprint,
            &s.subject,
            &s.issuer,
            &s.source_repository,
            &s.source_digest,
        ]
        .into_iter()
        .map(|v| Value::str(v))
        .collect();
        signer.push(Value::Bool(s.source_digest_matches));
        let mut fields = vec![self.image(&p.old), self.image(&p.new)];
        fields.extend(
            [
                &p.source_url,
                &p.forge,
                &p.commit_url,
                &p.compare_url,
                &p.compare_by,
            ]
            .into_iter()
            .map(|v| Value::str(v)),
        );
        fields.push(Value::structure(&self.signer, signer, Vec::new()));
        fields.push(Value::str(&p.released));
        fields.push(Value::str(&p.release_source));
        fields.push(Value::strings(p.notes.clone()));
        Value::structure(&self.provenance, fields, Vec::new())
    }
}
