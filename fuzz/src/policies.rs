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

use image_update::api::policies::PolicyDocument;
use image_update::api::policies::{
    Role, collect_definitions, is_flux_kind, read_automation, read_supplied, role,
};
use image_update::api::selection::PolicySpec;
use image_update::api::yaml::{self, parse_documents};

/// How the input is named in diagnostics.
const ORIGIN: &str = "policies.yaml";

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(documents) = parse_documents(text) else {
        return;
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
            for definition in &found {
                assert!(!definition.key.name.is_empty());
                if let Err(e) = PolicySpec::new(definition.config.clone()) {
                    show(&e);
                }
            }
        }
        Err(diagnostics) => diagnostics.iter().for_each(show),
    }
}

fn show(diagnostic: &impl std::fmt::Display) {
    assert!(!diagnostic.to_string().is_empty());
}
