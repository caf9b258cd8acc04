//! Flux ImagePolicy objects as supplied policy results.
//!
//! Accepted: `image.toolkit.fluxcd.io/v1` with `status.latestRef`
//! `{name, tag, digest}`, and `v1beta2`/`v1beta1` with `status.latestImage`
//! (`name:tag[@digest]`); as single documents, multi-document streams, or
//! `List`/`ImagePolicyList` objects (what `kubectl get imagepolicies -A -o
//! yaml` prints). Other objects in the stream are ignored.

use std::collections::BTreeMap;

use serde_json::Value;

use super::PolicyKey;
use super::image_ref::LatestRef;

/// The API group of Flux image automation objects.
pub const FLUX_IMAGE_GROUP: &str = "image.toolkit.fluxcd.io";

/// One ImagePolicy read from a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuppliedPolicy {
    pub key: PolicyKey,
    /// `None` when the status has no latest image.
    pub latest: Option<LatestRef>,
    pub labels: BTreeMap<String, String>,
}

/// A stream could not be read as ImagePolicies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PoliciesError {
    pub message: String,
}

/// Parse every YAML document in `text` into JSON values.
///
/// # Errors
/// The YAML parser's message, which names line and column.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: usize::MAX,
        },
    };
    serde_saphyr::from_multiple_with_options::<Value>(text, options).map_err(|e| e.to_string())
}

/// Read the ImagePolicies in a YAML stream.
///
/// # Errors
/// When the stream is not YAML, or an ImagePolicy has a malformed status or
/// an invalid latest image (named by namespace and name).
pub fn read_image_policies(text: &str) -> Result<Vec<SuppliedPolicy>, PoliciesError> {
    let documents = parse_documents(text).map_err(|message| PoliciesError { message })?;
    let mut out = Vec::new();
    for doc in &documents {
        collect(doc, &mut out)?;
    }
    Ok(out)
}

/// Whether `value` is an object of `kind` in the Flux image API group.
#[must_use]
pub fn is_flux_kind(value: &Value, kind: &str) -> bool {
    value.get("kind").and_then(Value::as_str) == Some(kind)
        && value
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.split('/').next() == Some(FLUX_IMAGE_GROUP))
}

fn collect(doc: &Value, out: &mut Vec<SuppliedPolicy>) -> Result<(), PoliciesError> {
    if let Some(items) = doc.get("items").and_then(Value::as_array) {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind == "List" || kind.ends_with("List") {
            for item in items {
                collect(item, out)?;
            }
            return Ok(());
        }
    }
    if is_flux_kind(doc, "ImagePolicy") {
        out.push(image_policy(doc)?);
    }
    Ok(())
}

/// `metadata.namespace` (`default` when absent, as kubectl has it) and
/// `metadata.name` (`""` when absent) of an object.
#[must_use]
pub fn namespace_name(value: &Value) -> (String, String) {
    let text = |p: &str| {
        value
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut namespace = text("/metadata/namespace");
    if namespace.is_empty() {
        "default".clone_into(&mut namespace);
    }
    (namespace, text("/metadata/name"))
}

/// `metadata.labels` of an object; non-string values are kept as JSON text.
#[must_use]
pub fn labels(value: &Value) -> BTreeMap<String, String> {
    value
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Read one ImagePolicy object (status only; the spec is for fetching).
///
/// # Errors
/// On a missing name, or a malformed or invalid latest image.
pub fn image_policy(doc: &Value) -> Result<SuppliedPolicy, PoliciesError> {
    let (namespace, name) = namespace_name(doc);
    if name.is_empty() {
        return Err(PoliciesError {
            message: "an ImagePolicy has no metadata.name".to_owned(),
        });
    }
    let key = PolicyKey { namespace, name };
    let fail = |what: String| PoliciesError {
        message: format!("ImagePolicy {}/{}: {what}", key.namespace, key.name),
    };
    let labels = labels(doc);
    let status = doc.get("status");
    let latest = if let Some(latest_ref) = status
        .and_then(|s| s.get("latestRef"))
        .filter(|v| !v.is_null())
    {
        let latest: LatestRef = serde_json::from_value(latest_ref.clone())
            .map_err(|e| fail(format!("status.latestRef is malformed: {e}")))?;
        latest.validate().map_err(|e| fail(e.to_string()))?;
        Some(latest)
    } else if let Some(image) = status
        .and_then(|s| s.get("latestImage"))
        .and_then(Value::as_str)
    {
        Some(LatestRef::parse(image).map_err(|e| fail(e.to_string()))?)
    } else {
        None
    };
    Ok(SuppliedPolicy {
        key,
        latest,
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let policies = read_image_policies(text).unwrap();
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
    }

    #[test]
    fn invalid_latest_image_names_the_policy() {
        let text = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: bad, namespace: ns}\nstatus: {latestRef: {name: Upper/App, tag: '1'}}\n";
        let err = read_image_policies(text).unwrap_err();
        assert!(
            err.message
                .starts_with("ImagePolicy ns/bad: invalid image reference"),
            "{}",
            err.message
        );
    }
}
