//! The KRM function's `functionConfig`, in the three accepted kinds, turned
//! into an [`UpdateConfig`].
//!
//! * `v1/ConfigMap` (what `kpt fn eval ... -- KEY=VALUE` sends): `data` keys
//!   with a `:` are policies, `NAMESPACE:NAME: IMAGE:TAG[@DIGEST]`; keys
//!   without one are the options below, as strings (`check: "true"`).
//! * [`IMAGE_UPDATE_API_VERSION`] `ImageUpdate`: `policies` (a map like the
//!   ConfigMap's), `policySelector` (kubectl `-l` syntax as a string, or a
//!   Kubernetes LabelSelector object), `path`, `check`, `dryRun`,
//!   `noDowngrade` (leave a change that moves a tag backwards alone) and
//!   `fetch` (compute policy results from the ImageRepository/ImagePolicy
//!   and ImageUpdater items, see docs/fetch.md; the ConfigMap takes
//!   `fetch: "true"` too) and `argocdNamespace` (the namespace Argo CD runs
//!   in, `argocd` by default; docs/argocd.md).
//! * Flux `ImageUpdateAutomation` (`image.toolkit.fluxcd.io`), read by
//!   [`crate::automation`] as in every mode: only the ImagePolicies among
//!   the items that live in the automation's namespace and match
//!   `spec.policySelector`; `spec.update.path` limits the edits;
//!   `spec.suspend: true` edits nothing.
//!
//! No functionConfig at all is the same as an empty ConfigMap.

use serde_json::Value;

use crate::automation::{self, normalise_path};
use crate::diagnostic::Diagnostic;
use crate::operation::{FetchSettings, PolicyValue, UpdateConfig};
use crate::outcome::Mode;
use crate::policies::image_policy::{FLUX_IMAGE_GROUP, is_flux_kind};
use crate::policies::selector::Selector;

/// apiVersion of the project's own functionConfig kind.
pub(crate) const IMAGE_UPDATE_API_VERSION: &str = "fn.image-update.dev/v1alpha1";
/// Kind of the project's own functionConfig.
pub(crate) const IMAGE_UPDATE_KIND: &str = "ImageUpdate";

/// Read the functionConfig `value` (`Null` when absent).
///
/// # Errors
/// Every problem found, each naming the field.
pub fn read(value: &Value) -> Result<UpdateConfig, Vec<Diagnostic>> {
    if value.is_null() {
        return Ok(UpdateConfig::default());
    }
    let Some(object) = value.as_object() else {
        return Err(vec![Diagnostic::error("functionConfig is not a mapping")]);
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
    let mut reader = Reader {
        config: UpdateConfig::default(),
        errors: Vec::new(),
    };
    match (api_version, kind) {
        ("v1", "ConfigMap") => reader.config_map(value, &format!("ConfigMap {name}")),
        (IMAGE_UPDATE_API_VERSION, IMAGE_UPDATE_KIND) => {
            reader.image_update(value, &format!("{IMAGE_UPDATE_KIND} {name}"));
        }
        _ if is_flux_kind(value, "ImageUpdateAutomation") => {
            let doc = crate::yaml::Document::from_value(value.clone());
            match automation::read(&doc, "", false) {
                Ok(a) => {
                    // The summary result carries the commit message the
                    // automation would make.
                    let message = crate::render::message::MessageConfig::from_automation(&a);
                    reader.config = reader.config.with_automation(a);
                    reader.config.message = Some(message);
                }
                Err(errors) => {
                    reader
                        .errors
                        .extend(errors.into_iter().map(|mut d| {
                            d.location = None;
                            d
                        }));
                }
            }
        }
        _ => reader.errors.push(Diagnostic::error(format!(
            "functionConfig {api_version}/{kind} is not supported: use a v1 ConfigMap, \
             {IMAGE_UPDATE_API_VERSION} {IMAGE_UPDATE_KIND}, or {FLUX_IMAGE_GROUP}/v1 ImageUpdateAutomation"
        ))),
    }
    if reader.errors.is_empty() {
        Ok(reader.config)
    } else {
        Err(reader.errors)
    }
}

struct Reader {
    config: UpdateConfig,
    errors: Vec<Diagnostic>,
}

impl Reader {
    fn fail(&mut self, message: String) {
        self.errors.push(Diagnostic::error(message));
    }

    fn config_map(&mut self, value: &Value, what: &str) {
        let data = match value.get("data") {
            None | Some(Value::Null) => return,
            Some(Value::Object(data)) => data,
            Some(_) => {
                self.fail(format!("{what}: data is not a mapping"));
                return;
            }
        };
        for (key, v) in data {
            let text = scalar_text(v);
            let field = format!("{what} data {key:?}");
            if key.contains(':') {
                self.policy(key, &text, &field);
                continue;
            }
            match key.as_str() {
                "policySelector" => match Selector::parse(&text) {
                    Ok(s) => self.select(&field, s),
                    Err(e) => self.fail(format!("{field}: {e}")),
                },
                "path" => self.config.update_path = normalise_path(&text),
                "argocdNamespace" => self.argocd_namespace(&text, &field),
                "check" | "dryRun" | "fetch" | "noDowngrade" => match text.as_str() {
                    "true" => self.set(key),
                    "false" | "" => {}
                    _ => self.fail(format!(
                        "{field}: expected \"true\" or \"false\", got {text:?}"
                    )),
                },
                _ => self.fail(format!(
                    "{field}: not NAMESPACE:NAME, nor one of the options policySelector, path, check, dryRun, fetch, noDowngrade, argocdNamespace"
                )),
            }
        }
    }

    fn image_update(&mut self, value: &Value, what: &str) {
        let Some(object) = value.as_object() else {
            return;
        };
        for (key, v) in object {
            let field = format!("{what} {key}");
            match key.as_str() {
                "apiVersion" | "kind" | "metadata" => {}
                "policies" => match v {
                    Value::Null => {}
                    Value::Object(map) => {
                        for (k, r) in map {
                            let field = format!("{what} policies {k:?}");
                            self.policy(k, &scalar_text(r), &field);
                        }
                    }
                    _ => self.fail(format!(
                        "{field}: expected a map of NAMESPACE:NAME to IMAGE:TAG"
                    )),
                },
                "policySelector" => match v {
                    Value::Null => {}
                    Value::String(expr) => match Selector::parse(expr) {
                        Ok(s) => self.select(&field, s),
                        Err(e) => self.fail(format!("{field}: {e}")),
                    },
                    Value::Object(_) => match Selector::from_value(v) {
                        Ok(s) => self.select(&field, s),
                        Err(e) => self.fail(format!("{field}: {e}")),
                    },
                    _ => self.fail(format!(
                        "{field}: expected a kubectl selector string or a LabelSelector"
                    )),
                },
                "path" => match v {
                    Value::Null => {}
                    Value::String(p) => self.config.update_path = normalise_path(p),
                    _ => self.fail(format!("{field}: expected a string")),
                },
                "argocdNamespace" => match v {
                    Value::Null => {}
                    Value::String(ns) => self.argocd_namespace(ns, &field),
                    _ => self.fail(format!("{field}: expected a string")),
                },
                "check" | "dryRun" | "fetch" | "noDowngrade" => match v {
                    Value::Bool(true) => self.set(key),
                    Value::Bool(false) | Value::Null => {}
                    _ => self.fail(format!("{field}: expected true or false")),
                },
                _ => self.fail(format!(
                    "{field}: unknown field; {IMAGE_UPDATE_KIND} has policies, policySelector, path, check, dryRun, fetch, noDowngrade and argocdNamespace"
                )),
            }
        }
    }

    fn argocd_namespace(&mut self, text: &str, what: &str) {
        match crate::operation::config::namespace(text) {
            Ok(ns) => self.config.argocd.controller_namespace = ns,
            Err(e) => self.fail(format!("{what}: {e}")),
        }
    }

    fn select(&mut self, what: &str, selector: Selector) {
        self.config.select(what, selector);
    }

    fn policy(&mut self, key: &str, reference: &str, what: &str) {
        match PolicyValue::from_entry(key, reference, what) {
            Ok(value) => self.config.values.push(value),
            Err(e) => self.fail(format!("{what}: {}", crate::diagnostic::one_line(&e))),
        }
    }

    fn set(&mut self, key: &str) {
        if key == "fetch" {
            self.config.fetch = Some(FetchSettings::default());
        } else if key == "noDowngrade" {
            self.config.plan.no_downgrade = true;
        } else if key == "check" {
            self.config.mode = Mode::Check;
        } else if self.config.mode == Mode::Apply {
            self.config.mode = Mode::DryRun;
        }
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(yaml: &str) -> Value {
        crate::yaml::parse_one(yaml).unwrap().value
    }

    fn messages(errors: &[Diagnostic]) -> Vec<String> {
        errors.iter().map(Diagnostic::full_message).collect()
    }

    #[test]
    fn config_map_policies_and_options() {
        let c = read(&value(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {'flux-system:podinfo': 'ghcr.io/a/b:1.0', policySelector: 'env=prod', path: ./apps/, dryRun: 'true'}\n",
        ))
        .unwrap();
        assert_eq!(c.values.len(), 1);
        assert_eq!(c.values[0].key.to_string(), "flux-system:podinfo");
        assert_eq!(
            c.values[0].source,
            "ConfigMap function-input data \"flux-system:podinfo\""
        );
        assert_eq!(c.update_path, "apps");
        assert_eq!(c.mode, Mode::DryRun);
        assert_eq!(c.scope.selectors.len(), 1);
        assert_eq!(c.argocd.controller_namespace, "argocd");
        let c = read(&value(
            "apiVersion: v1\nkind: ConfigMap\ndata: {argocdNamespace: gitops}\n",
        ))
        .unwrap();
        assert_eq!(c.argocd.controller_namespace, "gitops");
        let errors = read(&value(
            "apiVersion: v1\nkind: ConfigMap\ndata: {argocdNamespace: Not_A_Namespace}\n",
        ))
        .unwrap_err();
        assert!(
            messages(&errors)[0].contains("is not a namespace name"),
            "{errors:?}"
        );
    }

    #[test]
    fn config_map_errors_are_all_reported() {
        let errors = read(&value(
            "apiVersion: v1\nkind: ConfigMap\ndata: {'a:b:c': 'x:1', 'ns:p': 'UPPER:1', bogus: x, check: maybe}\n",
        ))
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{:?}", messages(&errors));
    }

    #[test]
    fn image_update_kind() {
        let c = read(&value(&format!(
            "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\nmetadata: {{name: x}}\npolicies:\n  ns:p: img:2\npolicySelector:\n  matchLabels: {{env: prod}}\ncheck: true\n"
        )))
        .unwrap();
        assert_eq!(c.mode, Mode::Check);
        assert_eq!(c.values.len(), 1);
        assert_eq!(c.scope.selectors.len(), 1);
        let errors = read(&value(&format!(
            "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\npolicy: {{}}\n"
        )))
        .unwrap_err();
        assert!(messages(&errors)[0].contains("unknown field"), "{errors:?}");
    }

    #[test]
    fn automation_kind() {
        let c = read(&value(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: a, namespace: flux-system}\nspec:\n  policySelector: {matchLabels: {team: a}}\n  update: {strategy: Setters, path: ./clusters/prod}\n",
        ))
        .unwrap();
        assert_eq!(
            c.scope.namespace.as_ref().map(|n| n.namespace.as_str()),
            Some("flux-system")
        );
        assert_eq!(c.update_path, "clusters/prod");
        assert!(c.suspended().is_none());
        let errors = read(&value(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: a}\nspec: {update: {strategy: Other}}\n",
        ))
        .unwrap_err();
        assert_eq!(
            messages(&errors),
            ["ImageUpdateAutomation default/a: unsupported update strategy: Other"]
        );
        assert!(errors[0].location.is_none());
        assert!(read(&value("apiVersion: v2\nkind: Foo\n")).is_err());
        assert!(read(&Value::Null).unwrap().values.is_empty());
    }
}
