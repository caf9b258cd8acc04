//! The one reader of a Flux git section: `spec.git` of an ImageUpdateAutomation, and the same
//! section at `spec.fluxcd.git` of a KubeSphere ImageUpdater (`crate::kubesphere`). Flux's API
//! types every field read here as a string, and `messageTemplateValues` and push `options` as
//! `map[string]string`: a number, a boolean or a collection where a string is meant is an error at
//! its file, line and column, whichever object holds the section.

use super::fields::Fields;
use super::{CommitSpec, GitRef, GitSpec, PushSpec, SigningKeyRef, SigningKind};

/// Read the git section at `prefix` (`/spec/git`, `/spec/fluxcd/git`), whose presence the caller
/// has checked; problems go to `fields`.
pub(crate) fn read(fields: &mut Fields<'_>, prefix: &str) -> GitSpec {
    let at = |field: &str| format!("{prefix}{field}");
    let checkout = fields.get(&at("/checkout/ref")).map(|_| GitRef {
        branch: fields.string(&at("/checkout/ref/branch")),
        tag: fields.string(&at("/checkout/ref/tag")),
        semver: fields.string(&at("/checkout/ref/semver")),
        name: fields.string(&at("/checkout/ref/name")),
        commit: fields.string(&at("/checkout/ref/commit")),
    });
    let signing_key = fields
        .get(&at("/commit/signingKey"))
        .map(|_| signing_key(fields, &at("/commit/signingKey")));
    let commit = CommitSpec {
        author_name: fields
            .string(&at("/commit/author/name"))
            .unwrap_or_default(),
        author_email: fields
            .string(&at("/commit/author/email"))
            .unwrap_or_default(),
        signing_key,
        message_template: fields
            .string(&at("/commit/messageTemplate"))
            .filter(|t| !t.is_empty()),
        message_template_values: fields.string_map(&at("/commit/messageTemplateValues")),
    };
    let push = fields.get(&at("/push")).map(|_| PushSpec {
        branch: fields.string(&at("/push/branch")).filter(|b| !b.is_empty()),
        refspec: fields
            .string(&at("/push/refspec"))
            .filter(|r| !r.is_empty()),
        options: fields.string_map(&at("/push/options")),
    });
    GitSpec {
        checkout,
        commit,
        push,
    }
}

/// `commit.signingKey` at `pointer`.
fn signing_key(fields: &mut Fields<'_>, pointer: &str) -> SigningKeyRef {
    let secret_name = fields
        .string(&format!("{pointer}/secretRef/name"))
        .unwrap_or_default();
    let kind_at = format!("{pointer}/type");
    let kind = match fields.string(&kind_at).as_deref() {
        None | Some("" | "gpg") => SigningKind::Gpg,
        Some("ssh") => SigningKind::Ssh,
        Some(other) => {
            let field = crate::yaml::dotted(&kind_at);
            fields.fail(
                &kind_at,
                format!("{field} {other:?} is neither gpg nor ssh"),
            );
            SigningKind::Gpg
        }
    };
    if secret_name.is_empty() {
        let field = crate::yaml::dotted(&format!("{pointer}/secretRef/name"));
        fields.fail(pointer, format!("{field} is missing"));
    }
    SigningKeyRef { secret_name, kind }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{Object, parse_one};

    fn read_at(text: &str, prefix: &str) -> Result<GitSpec, Vec<String>> {
        let doc = parse_one(text).unwrap();
        let mut fields = Fields::new(Object::root(&doc), "f.yaml", true);
        fields.name("X a/b".to_owned());
        let git = read(&mut fields, prefix);
        if fields.failed() {
            Err(fields
                .into_errors()
                .iter()
                .map(ToString::to_string)
                .collect())
        } else {
            Ok(git)
        }
    }

    /// The two prefixes read one section the same way, every error at its field.
    #[test]
    fn one_reader_for_both_prefixes() {
        let section = "checkout: {ref: {branch: main}}\n    commit:\n      author: {name: bot, email: b@example.com}\n      messageTemplateValues: {env: prod, n: 1, empty: ~}\n    push: {branch: 1}\n";
        let flux = read_at(&format!("spec:\n  git:\n    {section}"), "/spec/git").unwrap_err();
        let sphere = read_at(
            &format!("spec:\n fluxcd:\n  git:\n    {section}"),
            "/spec/fluxcd/git",
        )
        .unwrap_err();
        assert_eq!(
            flux,
            [
                "f.yaml:6:45: error: X a/b: spec.git.commit.messageTemplateValues.n is not a string",
                "f.yaml:7:20: error: X a/b: spec.git.push.branch is not a string",
            ]
        );
        assert_eq!(
            sphere,
            [
                "f.yaml:7:45: error: X a/b: spec.fluxcd.git.commit.messageTemplateValues.n is not a string",
                "f.yaml:8:20: error: X a/b: spec.fluxcd.git.push.branch is not a string",
            ]
        );
        let ok = read_at(
            "spec:\n  git:\n    commit:\n      messageTemplateValues: {env: prod, empty: ~, quoted: '1'}\n",
            "/spec/git",
        )
        .unwrap();
        let values = &ok.commit.message_template_values;
        assert_eq!(values["env"], "prod");
        assert_eq!(values["empty"], "");
        assert_eq!(values["quoted"], "1");
    }
}
