//! Target `policies`: policy files and policy definitions.
//!
//! Input: a YAML text, read as a `--policies` file: every document through
//! [`parse_documents`], every ImagePolicy as a supplied result
//! ([`read_supplied`]; a run that fetches reads only those without a spec,
//! the same way), every
//! ImageUpdateAutomation through [`read_automation`], and the whole stream
//! through [`collect_definitions`], whose policies are then compiled
//! ([`PolicySpec::new`]). Checks that none of them panics, and
//! that what they produce can be shown: every diagnostic renders, and a
//! supplied result's latest image is a valid reference.
//!
//! And that accepted definitions round-trip through `--emit-policies`: each
//! one whose policy chooses a tag from [`TAGS`] is resolved as a fetching
//! run resolves it (latest image, `observedPreviousRef`), the results are
//! emitted ([`emit::render`]), and the emitted stream, read back as a
//! `--policies` file is read, supplies exactly those policies with exactly
//! those latest images.

use image_update::api::emit::{
    self as emit, Definition, ImageRef, Resolved, TagInfo, next_observed_previous,
};
use image_update::api::policies::{
    PolicyDocument, Role, collect_definitions, is_flux_kind, read_automation, read_supplied, role,
};
use image_update::api::selection::PolicySpec;
use image_update::api::yaml::{self, parse_documents};

/// How the input is named in diagnostics.
const ORIGIN: &str = "policies.yaml";

/// The tags a registry lists for every definition's image in the
/// round trip: releases, pre-releases, `v` prefixes, CI build tags,
/// dates and words, so that most strategies choose one.
pub const TAGS: [&str; 10] = [
    "1.0.0",
    "1.2.3",
    "v2.0.0",
    "2.1.0-rc.1",
    "10",
    "20240101",
    "main-1700000000-0a1b2c3",
    "latest",
    "stable",
    "1.2.3.sig",
];

/// Run the target on one input.
pub fn run(data: &[u8]) {
    check(data);
}

/// The target's checks; how many policies went through the round trip.
pub fn check(data: &[u8]) -> usize {
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let Ok(documents) = parse_documents(text) else {
        return 0;
    };
    let documents: Vec<PolicyDocument> = documents
        .into_iter()
        .map(|document| PolicyDocument {
            document,
            origin: ORIGIN.to_owned(),
            positions: true,
            dir: None,
            supplies: true,
        })
        .collect();
    for doc in &documents {
        for object in yaml::objects(&doc.document) {
            // Supplied when not fetching covers the fetching case too (a
            // subset: an ImagePolicy without a spec), and the reader does
            // not depend on it.
            if role(object.value, false) == Role::Supplied {
                match read_supplied(&object, ORIGIN, true) {
                    Ok(supplied) => {
                        if let Some(latest) = &supplied.latest {
                            assert!(
                                latest.validate().is_ok(),
                                "an invalid latest image was accepted: {latest:?}"
                            );
                        }
                        assert!(!supplied.key.name.is_empty());
                    }
                    Err(diagnostic) => show(&diagnostic),
                }
            }
            if is_flux_kind(object.value, "ImageUpdateAutomation")
                && object.pointer.is_empty()
                && let Err(diagnostics) = read_automation(&doc.document, ORIGIN, true)
            {
                diagnostics.iter().for_each(show);
            }
        }
    }
    match collect_definitions(&documents) {
        Ok(found) => {
            let mut resolved = Vec::new();
            for definition in &found {
                assert!(!definition.key.name.is_empty());
                match PolicySpec::new(definition.config.clone()) {
                    Ok(spec) => resolved.extend(resolve(definition, &spec)),
                    Err(e) => show(&e),
                }
            }
            round_trip(&found, &resolved);
            resolved.len()
        }
        Err(diagnostics) => {
            diagnostics.iter().for_each(show);
            0
        }
    }
}

/// `definition` resolved against [`TAGS`], as a fetching run resolves it
/// (without the registry's digests); `None` when its policy chooses none.
fn resolve(definition: &Definition, spec: &PolicySpec) -> Option<Resolved> {
    let tags: Vec<TagInfo> = TAGS.iter().map(|t| TagInfo::new(*t)).collect();
    let selection = spec.select(&tags, 3).ok()?;
    let latest = ImageRef::new(&definition.image, &selection.tag);
    Some(Resolved {
        key: definition.key.clone(),
        source: definition.source.clone(),
        observed_previous: next_observed_previous(
            definition.previous.as_ref(),
            &latest,
            definition.observed_previous.as_ref(),
        ),
        previous: definition.previous.clone(),
        latest,
        selection,
        gate: None,
        lookup: None,
    })
}

/// The emitted stream, read back as a `--policies` file, supplies exactly
/// the resolved policies with their latest images.
fn round_trip(found: &[Definition], resolved: &[Resolved]) {
    if resolved.is_empty() {
        return;
    }
    let text = emit::render(found, resolved)
        .unwrap_or_else(|e| panic!("--emit-policies cannot render accepted policies: {e}"));
    let documents = parse_documents(&text)
        .unwrap_or_else(|e| panic!("the emitted policies are not YAML: {e}\n{text}"));
    let mut supplied = std::collections::BTreeMap::new();
    for document in &documents {
        for object in yaml::objects(document) {
            assert!(
                role(object.value, false) == Role::Supplied,
                "an emitted object is not a supplied ImagePolicy:\n{text}"
            );
            let policy = read_supplied(&object, "emitted.yaml", true).unwrap_or_else(|e| {
                panic!("an emitted ImagePolicy does not read back: {e}\n{text}")
            });
            let again = supplied.insert(policy.key.to_string(), policy.latest);
            assert!(again.is_none(), "a policy is emitted twice:\n{text}");
        }
    }
    let expected: std::collections::BTreeMap<String, Option<ImageRef>> = resolved
        .iter()
        .map(|r| (r.key.to_string(), Some(r.latest_ref())))
        .collect();
    assert_eq!(
        supplied, expected,
        "the emitted policies read back differently:\n{text}"
    );
}

fn show(diagnostic: &impl std::fmt::Display) {
    assert!(!diagnostic.to_string().is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed seeds exercise the round trip (so a change that makes
    /// every definition fail to resolve cannot leave it silently unchecked),
    /// and it covers both kinds of definitions.
    #[test]
    fn the_seeds_go_through_the_round_trip() {
        let dir = crate::replay::corpus("policies");
        let mut total = 0;
        for entry in fs_err::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            total += check(&fs_err::read(&path).unwrap_or_else(|e| panic!("{e}")));
        }
        assert!(
            total >= 5,
            "only {total} policies of the seeds round-tripped"
        );
        let both = "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: flux-system}
spec: {image: ghcr.io/acme/app}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: flux-system}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: '>=1.0.0'}}
status:
  latestRef: {name: ghcr.io/acme/app, tag: 1.0.0}
---
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: demo, namespace: demo}
spec:
  images: [web=ghcr.io/acme/web:^1.0]
";
        assert_eq!(check(both.as_bytes()), 2);
    }
}
