//! Flux ImagePolicy objects: supplied results, or definitions to fetch.
//!
//! Accepted: `image.toolkit.fluxcd.io/v1` with `status.latestRef`
//! `{name, tag, digest}`, and `v1beta2`/`v1beta1` with `status.latestImage`
//! (`name:tag[@digest]`); as single documents, multi-document streams, or
//! `List`/`ImagePolicyList` objects (what `kubectl get imagepolicies -A -o
//! yaml` prints).
//!
//! [`role`] is the one place that decides what an ImagePolicy is for: its
//! status is a supplied result, unless image-update fetches results itself
//! and the object has a spec, which then makes it a definition.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{ImageRef, PolicyKey};
use crate::diagnostic::{Diagnostic, Location};
use crate::yaml::{self, Object};

/// The API group of Flux image automation objects.
pub(crate) const FLUX_IMAGE_GROUP: &str = "image.toolkit.fluxcd.io";

/// Whether `value` is an object of `kind` in the Flux image API group.
#[must_use]
pub fn is_flux_kind(value: &Value, kind: &str) -> bool {
    yaml::is_kind(value, FLUX_IMAGE_GROUP, kind)
}

/// What an object is for, as far as policies are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An ImagePolicy whose status is a policy result.
    Supplied,
    /// An ImagePolicy with a spec, to resolve against its registry.
    Definition,
    /// Anything else (ImageRepositories and Secrets are read by the
    /// definitions reader when a definition names them).
    Other,
}

/// The role of `value` in a run that fetches (`fetching`) or not.
#[must_use]
pub fn role(value: &Value, fetching: bool) -> Role {
    if !is_flux_kind(value, "ImagePolicy") {
        return Role::Other;
    }
    if fetching && value.get("spec").is_some_and(|s| !s.is_null()) {
        Role::Definition
    } else {
        Role::Supplied
    }
}

/// One ImagePolicy read as a supplied result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuppliedPolicy {
    pub key: PolicyKey,
    /// `None` when the status has no latest image.
    pub latest: Option<ImageRef>,
    pub labels: BTreeMap<String, String>,
    /// `FILE (ImagePolicy NS/NAME)`, for conflicts and notes.
    pub source: String,
}

/// Read one ImagePolicy object as a supplied result. `origin` is the file
/// it comes from as the user knows it; `positions` says whether the
/// object's positions are lines of that file.
///
/// # Errors
/// A diagnostic at the offending field: no name, a malformed or invalid
/// latest image.
pub fn read_supplied(
    object: &Object<'_>,
    origin: &str,
    positions: bool,
) -> Result<SuppliedPolicy, Box<Diagnostic>> {
    let value = object.value;
    let at =
        |field: &str| Location::new(origin, positions.then(|| object.position(field)).flatten());
    let (namespace, name) = yaml::namespace_name(value);
    if name.is_empty() {
        return Err(Box::new(
            Diagnostic::error("an ImagePolicy has no metadata.name").at(at("/metadata")),
        ));
    }
    let what = format!("ImagePolicy {namespace}/{name}");
    let key = PolicyKey { namespace, name };
    let status = value.get("status");
    let latest = if let Some(latest_ref) = status
        .and_then(|s| s.get("latestRef"))
        .filter(|v| !v.is_null())
    {
        let field = "/status/latestRef";
        let latest: ImageRef = serde_json::from_value(latest_ref.clone()).map_err(|e| {
            Diagnostic::error(format!("{what}: status.latestRef is malformed"))
                .at(at(field))
                .caused_by(e)
        })?;
        latest.validate().map_err(|e| {
            Diagnostic::error(format!("{what}: status.latestRef"))
                .at(at(field))
                .caused_by(e)
        })?;
        Some(latest)
    } else if let Some(image) = status
        .and_then(|s| s.get("latestImage"))
        .and_then(Value::as_str)
    {
        let field = "/status/latestImage";
        Some(ImageRef::parse(image).map_err(|e| {
            Diagnostic::error(format!("{what}: status.latestImage"))
                .at(at(field))
                .caused_by(e)
        })?)
    } else {
        None
    };
    Ok(SuppliedPolicy {
        source: format!("{origin} ({what})"),
        key,
        latest,
        labels: yaml::labels(value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Position;

    fn supplied(text: &str) -> Vec<Result<SuppliedPolicy, Box<Diagnostic>>> {
        let docs = yaml::parse_documents(text).unwrap();
        docs.iter()
            .flat_map(yaml::objects)
            .filter(|o| role(o.value, false) == Role::Supplied)
            .map(|o| read_supplied(&o, "p.yaml", true))
            .collect()
    }

    #[test]
    fn reads_v1_v1beta2_and_lists() {
        let text = r"
apiVersion: v1
kind: List
items:
- apiVersion: image.toolkit.fluxcd.io/v1
  kind: ImagePolicy
  metadata: {name: a, namespace: flux-system, labels: {env: prod}}
  status:
    latestRef: {name: ghcr.io/org/a, tag: 1.2.0}
- apiVersion: image.toolkit.fluxcd.io/v1beta2
  kind: ImagePolicy
  metadata: {name: b, namespace: apps}
  status: {latestImage: 'nginx:1.25'}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: c}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ignored}
";
        let policies: Vec<SuppliedPolicy> =
            supplied(text).into_iter().map(Result::unwrap).collect();
        assert_eq!(policies.len(), 3);
        assert_eq!(policies[0].key.to_string(), "flux-system:a");
        assert_eq!(
            policies[0].latest.as_ref().unwrap().image(),
            "ghcr.io/org/a:1.2.0"
        );
        assert_eq!(
            policies[0].labels.get("env").map(String::as_str),
            Some("prod")
        );
        assert_eq!(policies[1].latest.as_ref().unwrap().image(), "nginx:1.25");
        assert_eq!(policies[2].key.to_string(), "default:c");
        assert_eq!(policies[2].latest, None);
        assert_eq!(policies[2].source, "p.yaml (ImagePolicy default/c)");
    }

    #[test]
    fn invalid_latest_image_names_the_policy_and_the_line() {
        let text = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: bad, namespace: ns}\nstatus:\n  latestRef: {name: Upper/App, tag: '1'}\n";
        let err = supplied(text).remove(0).unwrap_err();
        assert_eq!(
            err.location.as_ref().and_then(|l| l.position),
            Some(Position {
                line: 5,
                column: 14
            })
        );
        let text = err.to_string();
        assert!(
            text.starts_with(
                "p.yaml:5:14: error: ImagePolicy ns/bad: status.latestRef: invalid image reference \"Upper/App:1\": invalid repository"
            ),
            "{text}"
        );
    }

    #[test]
    fn roles() {
        let status_only = serde_json::json!({"apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy", "status": {}});
        let with_spec = serde_json::json!({"apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImagePolicy", "spec": {}});
        assert_eq!(role(&status_only, true), Role::Supplied);
        assert_eq!(role(&with_spec, false), Role::Supplied);
        assert_eq!(role(&with_spec, true), Role::Definition);
        assert_eq!(
            role(&serde_json::json!({"kind": "ImagePolicy"}), true),
            Role::Other
        );
    }
}
