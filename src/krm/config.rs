//! The KRM function's `functionConfig`, in the three accepted kinds.
//!
//! * `v1/ConfigMap` (what `kpt fn eval ... -- KEY=VALUE` sends): `data` keys
//!   with a `:` are policies, `NAMESPACE:NAME: IMAGE:TAG[@DIGEST]`; keys
//!   without one are the options below, as strings (`check: "true"`).
//! * [`IMAGE_UPDATE_API_VERSION`] `ImageUpdate`: `policies` (a map like the
//!   ConfigMap's), `policySelector` (kubectl `-l` syntax as a string, or a
//!   Kubernetes LabelSelector object), `path`, `check`, `dryRun` and
//!   `fetch` (compute policy results from the ImageRepository/ImagePolicy
//!   and ImageUpdater items, see docs/fetch.md; the ConfigMap takes
//!   `fetch: "true"` too).
//! * Flux `ImageUpdateAutomation` (`image.toolkit.fluxcd.io`): only the
//!   ImagePolicies among the items that live in the automation's namespace
//!   and match `spec.policySelector`; `spec.update.path` limits the edits;
//!   `spec.suspend: true` edits nothing.
//!
//! No functionConfig at all is the same as an empty ConfigMap.

use serde_json::Value;

use crate::policies::image_policy::{FLUX_IMAGE_GROUP, is_flux_kind};
use crate::policies::selector::{LabelSelector, Selector};
use crate::policies::{LatestRef, PolicyKey};

/// apiVersion of the project's own functionConfig kind.
pub const IMAGE_UPDATE_API_VERSION: &str = "fn.image-update.dev/v1alpha1";
/// Kind of the project's own functionConfig.
pub const IMAGE_UPDATE_KIND: &str = "ImageUpdate";

/// Whether fields are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Write the new values.
    #[default]
    Apply,
    /// Write nothing; report what would change.
    DryRun,
    /// Write nothing; every pending change is an error (exit 1).
    Check,
}

/// The function's settings, whatever kind they came from.
#[derive(Debug, Clone, Default)]
pub struct FnConfig {
    /// What the config is, for messages: `ConfigMap function-input`.
    pub name: String,
    /// Policies given in the config itself, with their source.
    pub policies: Vec<(PolicyKey, LatestRef, String)>,
    /// Selects among the ImagePolicies in the items.
    pub selector: Option<Selector>,
    /// Only ImagePolicies of this namespace are used (an automation's).
    pub namespace: Option<String>,
    /// Only items whose path annotation lies under this path are edited
    /// (normalised: no `.`/`..`, no leading or trailing `/`; `""` is all).
    pub path: Option<String>,
    pub mode: Mode,
    /// An ImageUpdateAutomation with `spec.suspend: true`.
    pub suspended: bool,
    /// Compute policy results from the definitions among the items
    /// (`fetch: true`; needs network access).
    pub fetch: bool,
}

/// Read the functionConfig `value` (`Null` when absent).
///
/// # Errors
/// Every problem found, each a sentence naming the field.
pub fn read(value: &Value) -> Result<FnConfig, Vec<String>> {
    if value.is_null() {
        return Ok(FnConfig {
            name: "no functionConfig".to_owned(),
            ..FnConfig::default()
        });
    }
    let Some(object) = value.as_object() else {
        return Err(vec!["functionConfig is not a mapping".to_owned()]);
    };
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut errors = Vec::new();
    let config = match (api_version, kind) {
        ("v1", "ConfigMap") => config_map(value, name, &mut errors),
        (IMAGE_UPDATE_API_VERSION, IMAGE_UPDATE_KIND) => image_update(value, name, &mut errors),
        _ if is_flux_kind(value, "ImageUpdateAutomation") => automation(value, name, &mut errors),
        _ => {
            errors.push(format!(
                "functionConfig {api_version}/{kind} is not supported: use a v1 ConfigMap, \
                 {IMAGE_UPDATE_API_VERSION} {IMAGE_UPDATE_KIND}, or {FLUX_IMAGE_GROUP}/v1 ImageUpdateAutomation"
            ));
            FnConfig::default()
        }
    };
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

fn config_map(value: &Value, name: &str, errors: &mut Vec<String>) -> FnConfig {
    let mut config = FnConfig {
        name: format!("ConfigMap {name}"),
        ..FnConfig::default()
    };
    let data = match value.get("data") {
        None | Some(Value::Null) => return config,
        Some(Value::Object(data)) => data,
        Some(_) => {
            errors.push(format!("{}: data is not a mapping", config.name));
            return config;
        }
    };
    for (key, v) in data {
        let text = scalar_text(v);
        let what = format!("{} data {key:?}", config.name);
        if key.contains(':') {
            policy(&mut config, key, &text, &what, errors);
            continue;
        }
        match key.as_str() {
            "policySelector" => match Selector::parse(&text) {
                Ok(s) => config.selector = Some(s),
                Err(e) => errors.push(format!("{what}: {e}")),
            },
            "path" => config.path = Some(normalise_path(&text)),
            "check" | "dryRun" | "fetch" => match text.as_str() {
                "true" => set_mode(&mut config, key),
                "false" | "" => {}
                _ => errors.push(format!("{what}: expected \"true\" or \"false\", got {text:?}")),
            },
            _ => errors.push(format!(
                "{what}: not NAMESPACE:NAME, nor one of the options policySelector, path, check, dryRun, fetch"
            )),
        }
    }
    config
}

fn image_update(value: &Value, name: &str, errors: &mut Vec<String>) -> FnConfig {
    let mut config = FnConfig {
        name: format!("{IMAGE_UPDATE_KIND} {name}"),
        ..FnConfig::default()
    };
    let Some(object) = value.as_object() else {
        return config;
    };
    for (key, v) in object {
        let what = format!("{} {key}", config.name);
        match key.as_str() {
            "apiVersion" | "kind" | "metadata" => {}
            "policies" => match v {
                Value::Null => {}
                Value::Object(map) => {
                    for (k, r) in map {
                        let what = format!("{} policies {k:?}", config.name);
                        policy(&mut config, k, &scalar_text(r), &what, errors);
                    }
                }
                _ => errors.push(format!("{what}: expected a map of NAMESPACE:NAME to IMAGE:TAG")),
            },
            "policySelector" => match v {
                Value::Null => {}
                Value::String(expr) => match Selector::parse(expr) {
                    Ok(s) => config.selector = Some(s),
                    Err(e) => errors.push(format!("{what}: {e}")),
                },
                Value::Object(_) => match label_selector(v) {
                    Ok(s) => config.selector = Some(s),
                    Err(e) => errors.push(format!("{what}: {e}")),
                },
                _ => errors.push(format!(
                    "{what}: expected a kubectl selector string or a LabelSelector"
                )),
            },
            "path" => match v {
                Value::Null => {}
                Value::String(p) => config.path = Some(normalise_path(p)),
                _ => errors.push(format!("{what}: expected a string")),
            },
            "check" | "dryRun" | "fetch" => match v {
                Value::Bool(true) => set_mode(&mut config, key),
                Value::Bool(false) | Value::Null => {}
                _ => errors.push(format!("{what}: expected true or false")),
            },
            _ => errors.push(format!(
                "{what}: unknown field; {IMAGE_UPDATE_KIND} has policies, policySelector, path, check, dryRun and fetch"
            )),
        }
    }
    config
}

fn automation(value: &Value, name: &str, errors: &mut Vec<String>) -> FnConfig {
    let namespace = value
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let mut config = FnConfig {
        name: format!("ImageUpdateAutomation {namespace}/{name}"),
        namespace: Some(namespace.to_owned()),
        ..FnConfig::default()
    };
    let spec = value.get("spec").unwrap_or(&Value::Null);
    if let Some(selector) = spec.get("policySelector").filter(|v| !v.is_null()) {
        match label_selector(selector) {
            Ok(s) => config.selector = Some(s),
            Err(e) => errors.push(format!("{}: spec.policySelector: {e}", config.name)),
        }
    }
    if let Some(update) = spec.get("update").filter(|v| !v.is_null()) {
        match update.get("strategy").and_then(Value::as_str) {
            None | Some("Setters") => {}
            Some(other) => errors.push(format!(
                "{}: unsupported update strategy: {other}",
                config.name
            )),
        }
        match update.get("path") {
            None | Some(Value::Null) => {}
            Some(Value::String(p)) => config.path = Some(normalise_path(p)),
            Some(_) => errors.push(format!("{}: spec.update.path is not a string", config.name)),
        }
    }
    config.suspended = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    config
}

fn label_selector(value: &Value) -> Result<Selector, String> {
    let selector: LabelSelector =
        serde_json::from_value(value.clone()).map_err(|e| format!("not a LabelSelector: {e}"))?;
    Selector::from_label_selector(&selector)
}

fn policy(config: &mut FnConfig, key: &str, reference: &str, what: &str, errors: &mut Vec<String>) {
    let Some(parsed) = PolicyKey::parse(key) else {
        errors.push(format!("{what}: {key:?} is not NAMESPACE:NAME"));
        return;
    };
    match LatestRef::parse(reference) {
        Ok(latest) => config.policies.push((parsed, latest, what.to_owned())),
        Err(e) => errors.push(format!("{what}: {e}")),
    }
}

fn set_mode(config: &mut FnConfig, key: &str) {
    if key == "fetch" {
        config.fetch = true;
    } else if key == "check" {
        config.mode = Mode::Check;
    } else if config.mode == Mode::Apply {
        config.mode = Mode::DryRun;
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `./a//b/../c/` -> `a/c`; `..` never climbs above the root, as Flux joins
/// `spec.update.path` securely.
#[must_use]
pub fn normalise_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Whether the item path `item` lies under the normalised `base`.
#[must_use]
pub fn is_under(base: &str, item: &str) -> bool {
    if base.is_empty() {
        return true;
    }
    let item = normalise_path(item);
    item == base
        || item
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::image_policy::parse_documents;

    fn value(yaml: &str) -> Value {
        parse_documents(yaml).unwrap().remove(0)
    }

    #[test]
    fn config_map_policies_and_options() {
        let c = read(&value(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {'flux-system:podinfo': 'ghcr.io/a/b:1.0', policySelector: 'env=prod', path: ./apps/, dryRun: 'true'}\n",
        ))
        .unwrap();
        assert_eq!(c.policies.len(), 1);
        assert_eq!(c.policies[0].0.to_string(), "flux-system:podinfo");
        assert_eq!(
            c.policies[0].2,
            "ConfigMap function-input data \"flux-system:podinfo\""
        );
        assert_eq!(c.path.as_deref(), Some("apps"));
        assert_eq!(c.mode, Mode::DryRun);
        assert!(c.selector.is_some());
    }

    #[test]
    fn config_map_errors_are_all_reported() {
        let errors = read(&value(
            "apiVersion: v1\nkind: ConfigMap\ndata: {'a:b:c': 'x:1', 'ns:p': 'UPPER:1', bogus: x, check: maybe}\n",
        ))
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
    }

    #[test]
    fn image_update_kind() {
        let c = read(&value(&format!(
            "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\nmetadata: {{name: x}}\npolicies:\n  ns:p: img:2\npolicySelector:\n  matchLabels: {{env: prod}}\ncheck: true\n"
        )))
        .unwrap();
        assert_eq!(c.mode, Mode::Check);
        assert_eq!(c.policies.len(), 1);
        assert!(c.selector.is_some());
        let errors = read(&value(&format!(
            "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\npolicy: {{}}\n"
        )))
        .unwrap_err();
        assert!(errors[0].contains("unknown field"), "{errors:?}");
    }

    #[test]
    fn automation_kind() {
        let c = read(&value(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: a, namespace: flux-system}\nspec:\n  policySelector: {matchLabels: {team: a}}\n  update: {strategy: Setters, path: ./clusters/prod}\n",
        ))
        .unwrap();
        assert_eq!(c.namespace.as_deref(), Some("flux-system"));
        assert_eq!(c.path.as_deref(), Some("clusters/prod"));
        assert!(!c.suspended);
        let errors = read(&value(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: a}\nspec: {update: {strategy: Other}}\n",
        ))
        .unwrap_err();
        assert_eq!(
            errors,
            ["ImageUpdateAutomation default/a: unsupported update strategy: Other"]
        );
        assert!(read(&value("apiVersion: v2\nkind: Foo\n")).is_err());
        assert!(read(&Value::Null).unwrap().policies.is_empty());
    }

    #[test]
    fn paths() {
        assert_eq!(normalise_path("./a//b/../c/"), "a/c");
        assert_eq!(normalise_path("../../x"), "x");
        assert!(is_under("", "anything.yaml"));
        assert!(is_under("apps", "apps/a.yaml"));
        assert!(is_under("apps", "./apps/sub/a.yaml"));
        assert!(!is_under("apps", "apps2/a.yaml"));
        assert!(!is_under("apps", "other/apps/a.yaml"));
    }
}
