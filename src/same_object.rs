//! One object read from two places: a file named on the command line that the tree holds a copy
//! of, a Job's ConfigMap and the clone it updates, a KRM functionConfig that is also an item.
//!
//! The same object is the same API group, kind, namespace and name (the caller's identity, with
//! its namespace default). Two definitions of it with the same content are one object; two that
//! differ are an error naming both places and the first field that differs ([`difference`],
//! [`conflict`]).
//!
//! The content is the parsed value, so formatting, comments, key order and quoting never count.
//! Left out of the comparison is only what cannot change what image-update does with the object:
//! * `status`, except a Flux ImagePolicy's (its `latestRef` is the previous result);
//! * `metadata.namespace` (the identity already holds it, with its default), and the fields the
//!   API server sets (`uid`, `resourceVersion`, `generation`, `creationTimestamp`,
//!   `deletionTimestamp`, `deletionGracePeriodSeconds`, `managedFields`, `selfLink`);
//! * the bookkeeping annotations of the tools that carry objects around: kubectl's
//!   `kubectl.kubernetes.io/last-applied-configuration`, kpt's `config.kubernetes.io/*`,
//!   `internal.config.kubernetes.io/*` and `config.k8s.io/*`, and the KRM function's own
//!   `fn.image-update.dev/*` settings.
//!
//! An absent field and a `null` one are the same (every reader takes `null` as absent), and so
//! are absent, `null` and empty `metadata.labels` and `metadata.annotations`.

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Location};

/// The API group of Flux's image objects (`crate::policies` has it too, a layer above).
const FLUX_IMAGE_GROUP: &str = "image.toolkit.fluxcd.io";

/// The fields of `metadata` the API server sets.
const SERVER_FIELDS: [&str; 8] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// Annotations of the tools that carry objects, by prefix.
const BOOKKEEPING_PREFIXES: [&str; 4] = [
    "config.kubernetes.io/",
    "internal.config.kubernetes.io/",
    "config.k8s.io/",
    "fn.image-update.dev/",
];

/// kubectl's copy of the object it last applied (a Secret's values among them).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The longest value a message shows (in characters), before `…`.
const SHOWN: usize = 60;

/// Where two definitions of one object first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// JSON pointer of the field, relative to the object (`""` for the object itself).
    pub pointer: String,
    /// The first definition's value there, as a message shows it: compact JSON cut at
    /// [`SHOWN`] characters, `absent`, or `(hidden)` in a Secret's `data` and `stringData`.
    pub first: String,
    /// The second definition's value there, shown as `first`.
    pub second: String,
}

/// The first field (in the first definition's key order, then the second's) where `first` and
/// `second`, two definitions of one object, differ; `None` when they are one object.
#[must_use]
pub(crate) fn difference(first: &Value, second: &Value) -> Option<Difference> {
    let rules = Rules {
        status: crate::yaml::is_kind(first, FLUX_IMAGE_GROUP, "ImagePolicy"),
        secret: crate::yaml::is_kind(first, "", "Secret"),
    };
    let mut path = Vec::new();
    let (a, b) = first_difference(Some(first), Some(second), &mut path, &rules)?;
    let pointer: String = path
        .iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect();
    let hidden = rules.secret
        && matches!(
            path.first().map(String::as_str),
            Some("data" | "stringData")
        );
    Some(Difference {
        first: show(a, hidden),
        second: show(b, hidden),
        pointer,
    })
}

/// The error for two definitions of `what` (`ImageRepository flux-system/web`) that differ, at
/// the second (`second`: where its differing field is), naming the first (`first`: where its
/// field is).
#[must_use]
pub(crate) fn conflict(
    what: &str,
    first: &Location,
    second: Location,
    difference: &Difference,
) -> Diagnostic {
    Diagnostic::error(message(what, first, None, difference))
        .at(second)
        .with_hint(HINT)
}

/// What to do about two definitions that differ.
pub(crate) const HINT: &str = "an object read from two places (a file named on the command line and the tree, a Job's ConfigMap and its clone) must be the same in both; keep one definition, or make them equal";

/// The message of [`conflict`]: `second` names the second place (`None`: the diagnostic is at
/// it, `here`).
#[must_use]
pub(crate) fn message(
    what: &str,
    first: &Location,
    second: Option<&Location>,
    difference: &Difference,
) -> String {
    let field = if difference.pointer.is_empty() {
        "the object"
    } else {
        &difference.pointer
    };
    let there = second.map_or_else(|| "here".to_owned(), |at| format!("at {at}"));
    format!(
        "{what} is defined twice, and the definitions differ: {field} is {} at {first} but {} {there}",
        difference.first, difference.second
    )
}

/// What the comparison leaves out.
struct Rules {
    /// `status` is compared (an ImagePolicy's).
    status: bool,
    /// The object is a Secret: its values are never shown.
    secret: bool,
}

impl Rules {
    /// Whether the field at `path` + `key` is left out.
    fn ignored(&self, path: &[String], key: &str) -> bool {
        match path {
            [] => key == "status" && !self.status,
            [m] if m == "metadata" => key == "namespace" || SERVER_FIELDS.contains(&key),
            [m, a] if m == "metadata" && a == "annotations" => {
                key == LAST_APPLIED || BOOKKEEPING_PREFIXES.iter().any(|p| key.starts_with(p))
            }
            _ => false,
        }
    }
}

/// A map whose absence, `null` and emptiness are the same (`metadata.labels`,
/// `metadata.annotations`).
fn empty_is_absent(path: &[String]) -> bool {
    matches!(path, [m, f] if m == "metadata" && (f == "labels" || f == "annotations"))
}

/// The values where `a` and `b` first differ, with `path` left at that field. Recursion is as
/// deep as the values, which the YAML reader's depth budget bounds.
fn first_difference<'v>(
    a: Option<&'v Value>,
    b: Option<&'v Value>,
    path: &mut Vec<String>,
    rules: &Rules,
) -> Option<(Option<&'v Value>, Option<&'v Value>)> {
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    // A map, or `Some(None)` for an absent map that counts as an empty one.
    let as_map = |v: Option<&'v Value>| match v {
        Some(Value::Object(m)) => Some(Some(m)),
        None if empty_is_absent(path) => Some(None),
        _ => None,
    };
    match (as_map(a), as_map(b)) {
        (Some(ma), Some(mb)) => {
            let in_a = |k: &String| ma.is_some_and(|m| m.contains_key(k));
            let keys = ma.into_iter().flat_map(serde_json::Map::keys).chain(
                mb.into_iter()
                    .flat_map(serde_json::Map::keys)
                    .filter(|k| !in_a(k)),
            );
            for key in keys {
                if rules.ignored(path, key) {
                    continue;
                }
                path.push(key.clone());
                let (x, y) = (ma.and_then(|m| m.get(key)), mb.and_then(|m| m.get(key)));
                if let Some(found) = first_difference(x, y, path, rules) {
                    return Some(found);
                }
                path.pop();
            }
            return None;
        }
        (None, None) => {}
        _ => return (a != b).then_some((a, b)),
    }
    if let (Some(Value::Array(la)), Some(Value::Array(lb))) = (a, b) {
        for i in 0..la.len().max(lb.len()) {
            path.push(i.to_string());
            match (la.get(i), lb.get(i)) {
                (Some(x), Some(y)) => {
                    if let Some(found) = first_difference(Some(x), Some(y), path, rules) {
                        return Some(found);
                    }
                }
                (x, y) => return Some((x, y)),
            }
            path.pop();
        }
        return None;
    }
    (a != b).then_some((a, b))
}

/// A value as a message shows it.
fn show(value: Option<&Value>, hidden: bool) -> String {
    match value {
        None => "absent".to_owned(),
        Some(_) if hidden => "(hidden)".to_owned(),
        Some(v) => {
            let text = v.to_string();
            match text.char_indices().nth(SHOWN) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repo(image: &str) -> Value {
        json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": "ImageRepository",
            "metadata": {"name": "web", "namespace": "flux-system"},
            "spec": {"image": image, "interval": "5m"},
        })
    }

    #[test]
    fn equal_content_is_one_object() {
        assert_eq!(difference(&repo("a/web"), &repo("a/web")), None);
        // Key order, absent and null, server and tool bookkeeping do not count.
        let mut other = json!({
            "kind": "ImageRepository",
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "metadata": {
                "name": "web",
                "uid": "0b9c",
                "resourceVersion": "42",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {
                    "config.kubernetes.io/index": "0",
                    "internal.config.kubernetes.io/path": "flux/images.yaml",
                    "kubectl.kubernetes.io/last-applied-configuration": "{}",
                },
                "labels": null,
            },
            "spec": {"interval": "5m", "image": "a/web", "secretRef": null},
            "status": {"lastScanResult": {"tagCount": 3}},
        });
        assert_eq!(difference(&repo("a/web"), &other), None);
        other["metadata"]["labels"] = json!({"team": "a"});
        let d = difference(&repo("a/web"), &other).unwrap();
        assert_eq!(
            (d.pointer.as_str(), d.first.as_str(), d.second.as_str()),
            ("/metadata/labels/team", "absent", "\"a\"")
        );
    }

    #[test]
    fn first_difference_is_named_with_both_values() {
        let d = difference(&repo("a/web"), &repo("a/api")).unwrap();
        assert_eq!(d.pointer, "/spec/image");
        assert_eq!(
            (d.first.as_str(), d.second.as_str()),
            ("\"a/web\"", "\"a/api\"")
        );
        let mut versions = repo("a/web");
        versions["apiVersion"] = json!("image.toolkit.fluxcd.io/v1beta2");
        assert_eq!(
            difference(&repo("a/web"), &versions).unwrap().pointer,
            "/apiVersion"
        );
        // Lists item by item; a missing item is absent.
        let mut a = repo("a/web");
        a["spec"]["exclusionList"] = json!(["^x", "^y"]);
        let mut b = a.clone();
        b["spec"]["exclusionList"] = json!(["^x"]);
        let d = difference(&a, &b).unwrap();
        assert_eq!(
            (d.pointer.as_str(), d.first.as_str(), d.second.as_str()),
            ("/spec/exclusionList/1", "\"^y\"", "absent")
        );
        // Keys with `/` and `~` are escaped as in a JSON pointer.
        let mut b = repo("a/web");
        b["metadata"]["annotations"] = json!({"image-update.dev/min-age": "7d"});
        assert_eq!(
            difference(&repo("a/web"), &b).unwrap().pointer,
            "/metadata/annotations/image-update.dev~1min-age"
        );
        // Long values are cut.
        let long = "x".repeat(200);
        let d = difference(&repo("a/web"), &repo(&long)).unwrap();
        assert_eq!(d.second.chars().count(), SHOWN + 1);
        assert!(d.second.ends_with('…'));
    }

    #[test]
    fn an_image_policys_status_counts() {
        let policy = |tag: &str| {
            json!({
                "apiVersion": "image.toolkit.fluxcd.io/v1",
                "kind": "ImagePolicy",
                "metadata": {"name": "web"},
                "spec": {"imageRepositoryRef": {"name": "web"}, "policy": {"semver": {"range": "1.x"}}},
                "status": {"latestRef": {"name": "a/web", "tag": tag}},
            })
        };
        assert_eq!(difference(&policy("1.0"), &policy("1.0")), None);
        let d = difference(&policy("1.0"), &policy("1.1")).unwrap();
        assert_eq!(d.pointer, "/status/latestRef/tag");
    }

    #[test]
    fn a_secrets_values_are_hidden() {
        let secret = |payload: &str| {
            json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "regcred"},
                "type": "kubernetes.io/dockerconfigjson",
                "stringData": {".dockerconfigjson": payload},
            })
        };
        assert_eq!(difference(&secret("{}"), &secret("{}")), None);
        let d = difference(&secret("{\"auths\":{}}"), &secret("s3cr3t")).unwrap();
        assert_eq!(d.pointer, "/stringData/.dockerconfigjson");
        assert_eq!(
            (d.first.as_str(), d.second.as_str()),
            ("(hidden)", "(hidden)")
        );
        let mut data = secret("{}");
        data["stringData"] = Value::Null;
        data["data"] = json!({".dockerconfigjson": "czNjcjN0"});
        let d = difference(&secret("{}"), &data).unwrap();
        assert!(!format!("{d:?}").contains("czNjcjN0"), "{d:?}");
        let message = conflict(
            "Secret default/regcred",
            &Location::new("a.yaml", None),
            Location::new("b.yaml", None),
            &d,
        )
        .to_string();
        assert!(!message.contains("czNjcjN0"), "{message}");
    }

    #[test]
    fn the_error_names_both_places_and_the_field() {
        let d = difference(&repo("a/web"), &repo("a/api")).unwrap();
        let first = Location::new(
            "/config/policies.yaml",
            Some(crate::text::Position {
                line: 4,
                column: 10,
            }),
        );
        let second = Location::new(
            "clone/flux/images.yaml",
            Some(crate::text::Position {
                line: 7,
                column: 10,
            }),
        );
        let text = conflict("ImageRepository flux-system/web", &first, second, &d).to_string();
        assert!(
            text.starts_with(
                "clone/flux/images.yaml:7:10: error: ImageRepository flux-system/web is defined twice, and the definitions differ: /spec/image is \"a/web\" at /config/policies.yaml:4:10 but \"a/api\" here"
            ),
            "{text}"
        );
    }
}
