//! The automation a file names (`--automation FILE`, the Action's `automation` input, the Job's
//! and `message`'s): a Flux ImageUpdateAutomation ([`crate::automation`]) or a KubeSphere
//! ImageUpdater with `kind: fluxcd` ([`crate::kubesphere`]). It sits above both readers, which
//! know nothing of each other.

use std::path::Path;

use crate::automation::{self, Automation};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::SizeLimit;
use crate::kubesphere;
use crate::policies::image_policy::is_flux_kind;
use crate::yaml::Document;

/// Whether `doc` holds an automation of either kind.
fn is_automation(doc: &Document) -> bool {
    is_flux_kind(&doc.value, "ImageUpdateAutomation") || kubesphere::is_image_updater(&doc.value)
}

/// The automation in `file`: a Flux ImageUpdateAutomation, or a KubeSphere ImageUpdater with
/// `kind: fluxcd`; the file may hold other objects too, such as its GitRepository; exactly one
/// automation is needed.
///
/// # Errors
/// An unreadable file (or one over `limit`), invalid YAML, no or several automations, or an
/// invalid automation; each at its line and column.
pub(crate) fn read_file(file: &Path, limit: SizeLimit) -> Result<Automation, Error> {
    let (origin, documents) = crate::input::read_yaml(file, limit)?;
    let found: Vec<&Document> = documents.iter().filter(|d| is_automation(d)).collect();
    match found.as_slice() {
        [one] if kubesphere::is_image_updater(&one.value) => {
            kubesphere::automation(one, &origin, true)
                .map(|u| u.automation)
                .map_err(Error::invalid)
        }
        [one] => automation::read(one, &origin, true).map_err(Error::invalid),
        [] => Err(Error::invalid(vec![
            Diagnostic::error(
                "holds no ImageUpdateAutomation (image.toolkit.fluxcd.io/v1) or ImageUpdater (gitops.kubesphere.io/v1alpha1)",
            )
            .at(Location::new(origin, None)),
        ])),
        [_, second, ..] => Err(Error::invalid(vec![
            Diagnostic::error(format!(
                "holds {} automations (ImageUpdateAutomations or ImageUpdaters); give one",
                found.len()
            ))
            .at(Location::new(origin, second.position(""))),
        ])),
    }
}

/// Where the automation in `file` names its source (`spec.sourceRef`, or an ImageUpdater's
/// `spec.fluxcd.sourceRef`), for an error about it; the file alone when it cannot be read again.
#[cfg_attr(not(feature = "job"), allow(dead_code))] // the Job's check
pub(crate) fn source_ref_location(file: &Path, limit: SizeLimit) -> Location {
    let origin = crate::input::name(file);
    let position = crate::input::read_yaml(file, limit)
        .ok()
        .and_then(|(_, documents)| {
            documents.iter().find_map(|d| {
                if is_flux_kind(&d.value, "ImageUpdateAutomation") {
                    d.position("/spec/sourceRef")
                } else if kubesphere::is_image_updater(&d.value) {
                    d.position("/spec/fluxcd/sourceRef")
                } else {
                    None
                }
            })
        });
    Location::new(origin, position)
}
