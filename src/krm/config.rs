//! The KRM function's `functionConfig`, in each accepted kind, turned
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
//!   `fetch: "true"` too). With `fetch`, the supply-chain gate's settings
//!   for every fetched policy: `verify` (`keys`: PEM texts; `identities`
//!   and `identityRegexps` with one `issuer` or `issuerRegexp`;
//!   `trustedRoot`: the `trusted_root.json`, as a JSON string or as YAML;
//!   `require`: `any` or `all`), `minAge` and `ageSource` (`registry` or
//!   `builder`). The ConfigMap takes them as `verifyKey`,
//!   `verifyIdentity`, `verifyIdentityRegexp`, `verifyIssuer`,
//!   `verifyIssuerRegexp`, `trustedRoot` (JSON text), `verifyRequire`,
//!   `minAge` and `ageSource`. Both kinds take `argocdNamespace` (the
//!   namespace Argo CD runs in, `argocd` by default; docs/argocd.md), and,
//!   with `fetch`, who logs in to which registry with the cloud identity
//!   the function runs with: `registryProviders` (a map of host to `aws`,
//!   `azure`, `gcp` or `generic`), in the ConfigMap `registryProvider`
//!   (`HOST=PROVIDER`, comma-separated). No functionConfig can allow a
//!   credential program: it may come from the package being updated.
//! * Flux `ImageUpdateAutomation` (`image.toolkit.fluxcd.io`), read by
//!   [`crate::automation`] as in every mode: only the ImagePolicies among
//!   the items that live in the automation's namespace and match
//!   `spec.policySelector`; `spec.update.path` limits the edits;
//!   `spec.suspend: true` edits nothing.
//! * KubeSphere `ImageUpdater` (`kind: fluxcd`), read by
//!   [`crate::kubesphere`]: the same automation, and its `images` are
//!   definitions like the items' (fetched when fetching).
//!
//! The two automation kinds take `fetch` as the annotation
//! [`FETCH_ANNOTATION`]: `"true"`.
//!
//! No functionConfig at all is the same as an empty ConfigMap.

use serde_json::Value;

use crate::automation::{self, normalise_path};
use crate::diagnostic::Diagnostic;
use crate::operation::{FetchSettings, PolicyValue, UpdateConfig};
use crate::outcome::Mode;
use crate::policies::PolicyDocument;
use crate::policies::image_policy::{FLUX_IMAGE_GROUP, is_flux_kind};
use crate::policies::selector::Selector;
use image_update_verify::SignerNames;

/// apiVersion of the project's own functionConfig kind.
pub(crate) const IMAGE_UPDATE_API_VERSION: &str = "fn.image-update.dev/v1alpha1";
/// Kind of the project's own functionConfig.
pub(crate) const IMAGE_UPDATE_KIND: &str = "ImageUpdate";
/// The annotation that turns fetching on for a functionConfig of another
/// project's kind (an ImageUpdateAutomation, an ImageUpdater).
pub(crate) const FETCH_ANNOTATION: &str = "fn.image-update.dev/fetch";

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
        supply_chain: SupplyChainValues::default(),
        providers: Vec::new(),
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
        _ if crate::kubesphere::is_image_updater(value) => {
            // A KubeSphere ImageUpdater (kind: fluxcd) is an automation too,
            // and its images are definitions (fetched when fetching).
            let doc = crate::yaml::Document::from_value(value.clone());
            match crate::kubesphere::automation(&doc, "", false) {
                Ok(u) => {
                    let message = crate::render::message::MessageConfig::from_automation(&u.automation);
                    reader.config = reader.config.with_automation(u.automation);
                    reader.config.message = Some(message);
                    reader.config.documents.push(PolicyDocument {
                        document: doc,
                        origin: "functionConfig".to_owned(),
                        positions: false,
                        dir: None,
                        supplies: true,
                    });
                }
                Err(errors) => reader.errors.extend(errors.into_iter().map(|mut d| {
                    d.location = None;
                    d
                })),
            }
        }
        _ => reader.errors.push(Diagnostic::error(format!(
            "functionConfig {api_version}/{kind} is not supported: use a v1 ConfigMap, \
             {IMAGE_UPDATE_API_VERSION} {IMAGE_UPDATE_KIND}, {FLUX_IMAGE_GROUP}/v1 ImageUpdateAutomation \
             or {} {} (kind: fluxcd)",
            crate::kubesphere::API_VERSION,
            crate::kubesphere::KIND
        ))),
    }
    if is_flux_kind(value, "ImageUpdateAutomation") || crate::kubesphere::is_image_updater(value) {
        reader.fetch_annotation(value, &format!("{kind} {name}"));
    }
    reader.supply_chain(kind);
    reader.providers();
    if reader.errors.is_empty() {
        Ok(reader.config)
    } else {
        Err(reader.errors)
    }
}

struct Reader {
    config: UpdateConfig,
    errors: Vec<Diagnostic>,
    supply_chain: SupplyChainValues,
    /// `registryProvider(s)`: who logs in to which registry, and where it
    /// was given (they need `fetch`).
    providers: Vec<(String, image_update_registry::Provider, String)>,
}

/// The supply-chain settings of a functionConfig, as read.
#[derive(Default)]
struct SupplyChainValues {
    signers: image_update_verify::SignerValues,
    min_age: Option<std::time::Duration>,
    age_source: Option<image_update_registry::settings::AgeSource>,
    /// Where the first one was given (they need `fetch`).
    first: Option<String>,
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
                "verifyKey" | "verifyIdentity" | "verifyIdentityRegexp" | "verifyIssuer"
                | "verifyIssuerRegexp" | "trustedRoot" | "verifyRequire" | "minAge"
                | "ageSource" => {
                    if !text.trim().is_empty() {
                        self.supply_chain_value(key, &text, &field);
                    }
                }
                "argocdNamespace" => self.argocd_namespace(&text, &field),
                "registryProvider" => {
                    for pair in text.split([',', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
                        match image_update_registry::cloud::parse_host_provider(pair) {
                            Ok((host, provider)) => {
                                self.providers.push((host, provider, field.clone()));
                            }
                            Err(e) => self.fail(format!("{field}: {e}")),
                        }
                    }
                }
                "check" | "dryRun" | "fetch" | "noDowngrade" => match text.as_str() {
                    "true" => self.set(key),
                    "false" | "" => {}
                    _ => self.fail(format!(
                        "{field}: expected \"true\" or \"false\", got {text:?}"
                    )),
                },
                _ => self.fail(format!(
                    "{field}: not NAMESPACE:NAME, nor one of the options policySelector, path, check, dryRun, fetch, noDowngrade, verifyKey, verifyIdentity, verifyIdentityRegexp, verifyIssuer, verifyIssuerRegexp, trustedRoot, verifyRequire, minAge, ageSource, argocdNamespace, registryProvider"
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
                "verify" => self.verify(v, &field),
                "registryProviders" => match v {
                    Value::Null => {}
                    Value::Object(map) => {
                        for (host, p) in map {
                            let field = format!("{what} registryProviders {host:?}");
                            match image_update_registry::cloud::parse_host_provider(&format!(
                                "{host}={}",
                                scalar_text(p)
                            )) {
                                Ok((host, provider)) => self.providers.push((host, provider, field)),
                                Err(e) => self.fail(format!("{field}: {e}")),
                            }
                        }
                    }
                    _ => self.fail(format!(
                        "{field}: expected a map of registry host to aws, azure, gcp or generic"
                    )),
                },
                "minAge" | "ageSource" => match v {
                    Value::Null => {}
                    Value::String(text) => self.supply_chain_value(key, text, &field),
                    _ => self.fail(format!("{field}: expected a string")),
                },
                _ => self.fail(format!(
                    "{field}: unknown field; {IMAGE_UPDATE_KIND} has policies, policySelector, path, check, dryRun, fetch, noDowngrade, verify, minAge, ageSource, argocdNamespace and registryProviders"
                )),
            }
        }
    }

    /// An automation's kinds have no field of the function's own: `fetch`
    /// is the annotation [`FETCH_ANNOTATION`] (`"true"` or `"false"`).
    fn fetch_annotation(&mut self, value: &Value, what: &str) {
        match value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(FETCH_ANNOTATION))
        {
            None | Some(Value::Null) => {}
            Some(v) => match scalar_text(v).as_str() {
                "true" => self.set("fetch"),
                "false" | "" => {}
                other => self.fail(format!(
                    "{what} annotation {FETCH_ANNOTATION}: expected \"true\" or \"false\", got {other:?}"
                )),
            },
        }
    }

    /// `verify` of an ImageUpdate: `keys`, `identities`, `identityRegexps`,
    /// `issuer`, `issuerRegexp`, `trustedRoot`, `require`.
    fn verify(&mut self, v: &Value, what: &str) {
        let map = match v {
            Value::Null => return,
            Value::Object(map) => map,
            _ => {
                self.fail(format!("{what}: expected a mapping"));
                return;
            }
        };
        for (key, v) in map {
            let field = format!("{what}.{key}");
            let list = |v: &Value| -> Option<Vec<String>> {
                match v {
                    Value::Null => Some(Vec::new()),
                    Value::String(s) => Some(vec![s.clone()]),
                    Value::Array(items) => items
                        .iter()
                        .map(|i| i.as_str().map(str::to_owned))
                        .collect(),
                    _ => None,
                }
            };
            let name = match key.as_str() {
                "keys" => "verifyKey",
                "identities" => "verifyIdentity",
                "identityRegexps" => "verifyIdentityRegexp",
                "issuer" => "verifyIssuer",
                "issuerRegexp" => "verifyIssuerRegexp",
                "require" => "verifyRequire",
                "trustedRoot" => {
                    match v {
                        Value::Null => {}
                        Value::String(json) => self.supply_chain_value("trustedRoot", json, &field),
                        Value::Object(_) => {
                            // trusted_root.json written as YAML.
                            self.supply_chain_value("trustedRoot", &v.to_string(), &field);
                        }
                        _ => self.fail(format!(
                            "{field}: expected the trusted_root.json, as a string or a mapping"
                        )),
                    }
                    continue;
                }
                _ => {
                    self.fail(format!(
                        "{field}: unknown field; verify has keys, identities, identityRegexps, issuer, issuerRegexp, trustedRoot and require"
                    ));
                    continue;
                }
            };
            match list(v) {
                Some(values)
                    if values.len() > 1
                        && !matches!(key.as_str(), "keys" | "identities" | "identityRegexps") =>
                {
                    self.fail(format!("{field}: expected one string"));
                }
                Some(values) => {
                    for value in values {
                        self.supply_chain_value(name, &value, &field);
                    }
                }
                None => self.fail(format!("{field}: expected a string or a list of strings")),
            }
        }
    }

    /// One supply-chain value (by its ConfigMap key), parsed by the
    /// operation's parser of its kind; `what` names it.
    fn supply_chain_value(&mut self, key: &str, text: &str, what: &str) {
        use crate::operation::config;
        use image_update_verify::{KeySource, Pattern, RootSource};
        let s = &mut self.supply_chain;
        s.first.get_or_insert_with(|| what.to_owned());
        let signers = &mut s.signers;
        let one = |slot: &Option<Pattern>| {
            if slot.is_some() {
                Err(format!(
                    "{what}: give verifyIssuer or verifyIssuerRegexp, once"
                ))
            } else {
                Ok(())
            }
        };
        let result = match key {
            "verifyKey" => {
                signers.keys.push(KeySource::Pem(text.to_owned()));
                Ok(())
            }
            "verifyIdentity" => {
                signers.identities.push(Pattern::Exact(text.to_owned()));
                Ok(())
            }
            "verifyIdentityRegexp" => {
                signers.identities.push(Pattern::Regexp(text.to_owned()));
                Ok(())
            }
            "verifyIssuer" => one(&signers.issuer).map(|()| {
                signers.issuer = Some(Pattern::Exact(text.to_owned()));
            }),
            "verifyIssuerRegexp" => one(&signers.issuer).map(|()| {
                signers.issuer = Some(Pattern::Regexp(text.to_owned()));
            }),
            "trustedRoot" => {
                signers.trusted_root = Some(RootSource::Json(text.to_owned()));
                Ok(())
            }
            "verifyRequire" => config::verify_require(text)
                .map(|r| signers.require = Some(r))
                .map_err(|e| format!("{what}: {e}")),
            "minAge" => config::duration(text)
                .map(|d| s.min_age = Some(d))
                .map_err(|e| format!("{what}: {e}")),
            "ageSource" => config::age_source(text)
                .map(|a| s.age_source = Some(a))
                .map_err(|e| format!("{what}: {e}")),
            _ => Err(format!("{what}: not a supply-chain setting")),
        };
        if let Err(e) = result {
            self.fail(e);
        }
    }

    /// The supply-chain values read, checked together and set on the
    /// fetch settings (`kind` names the functionConfig in messages).
    fn supply_chain(&mut self, kind: &str) {
        let values = std::mem::take(&mut self.supply_chain);
        let Some(first) = values.first else {
            return;
        };
        let Some(fetch) = self.config.fetch.as_mut() else {
            self.fail(format!(
                "{first}: the supply-chain settings apply to fetched policies: set fetch"
            ));
            return;
        };
        let configmap = kind == "ConfigMap";
        let names = if configmap {
            SignerNames {
                key: "verifyKey",
                identity: "verifyIdentity",
                identity_regexp: "verifyIdentityRegexp",
                issuer: "verifyIssuer",
                issuer_regexp: "verifyIssuerRegexp",
                trusted_root: "trustedRoot",
                require: "verifyRequire",
            }
        } else {
            SignerNames {
                key: "verify.keys",
                identity: "verify.identities",
                identity_regexp: "verify.identityRegexps",
                issuer: "verify.issuer",
                issuer_regexp: "verify.issuerRegexp",
                trusted_root: "verify.trustedRoot",
                require: "verify.require",
            }
        };
        match crate::operation::config::supply_chain(
            values.signers,
            &names,
            values.min_age,
            values.age_source,
            &format!(
                "the functionConfig's {}",
                if configmap { "verify* keys" } else { "verify" }
            ),
        ) {
            Ok(overrides) => fetch.supply_chain = overrides,
            Err(e) => self.fail(format!("functionConfig: {e}")),
        }
    }

    /// The providers read, set on the fetch settings.
    fn providers(&mut self) {
        let providers = std::mem::take(&mut self.providers);
        let Some((_, _, first)) = providers.first() else {
            return;
        };
        match self.config.fetch.as_mut() {
            Some(fetch) => fetch
                .providers
                .extend(providers.into_iter().map(|(h, p, _)| (h, p))),
            None => {
                let first = first.clone();
                self.fail(format!(
                    "{first}: a registry provider applies to fetched policies: set fetch"
                ));
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
    fn registry_providers_in_both_kinds() {
        use image_update_registry::Provider;
        let c = read(&value(
            "apiVersion: v1\nkind: ConfigMap\ndata: {fetch: 'true', registryProvider: '1.dkr.ecr.eu-west-1.amazonaws.com=aws, us-docker.pkg.dev=gcp'}\n",
        ))
        .unwrap();
        assert_eq!(
            c.fetch.unwrap().providers,
            [
                (
                    "1.dkr.ecr.eu-west-1.amazonaws.com".to_owned(),
                    Provider::Aws
                ),
                ("us-docker.pkg.dev".to_owned(), Provider::Gcp)
            ]
        );
        let c = read(&value(&format!(
            "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\nfetch: true\nregistryProviders: {{myreg.azurecr.io: azure}}\n"
        )))
        .unwrap();
        assert_eq!(
            c.fetch.unwrap().providers,
            [("myreg.azurecr.io".to_owned(), Provider::Azure)]
        );
        let errors = read(&value(
            "apiVersion: v1\nkind: ConfigMap\ndata: {registryProvider: 'x.io=aws'}\n",
        ))
        .unwrap_err();
        assert!(messages(&errors)[0].contains("set fetch"), "{errors:?}");
        let errors = read(&value(
            "apiVersion: v1\nkind: ConfigMap\ndata: {fetch: 'true', registryProvider: 'x.io=amazon'}\n",
        ))
        .unwrap_err();
        assert!(
            messages(&errors)[0].contains("is not a registry provider"),
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
    fn image_updater_kind_gives_its_document_and_takes_the_fetch_annotation() {
        let updater = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: apps, annotations: {fn.image-update.dev/fetch: 'true'}}\nspec:\n  kind: fluxcd\n  images: [app=nginx]\n  fluxcd: {interval: 5m, sourceRef: {name: fleet}}\n";
        let c = read(&value(updater)).unwrap();
        assert!(c.fetch.is_some());
        assert_eq!(c.documents.len(), 1);
        assert_eq!(c.documents[0].origin, "functionConfig");
        let c = read(&value(&updater.replace("'true'", "'false'"))).unwrap();
        assert!(c.fetch.is_none());
        let errors = read(&value(&updater.replace("'true'", "maybe"))).unwrap_err();
        assert_eq!(
            messages(&errors),
            [
                "ImageUpdater u annotation fn.image-update.dev/fetch: expected \"true\" or \"false\", got \"maybe\""
            ]
        );
    }

    #[test]
    fn supply_chain_settings() {
        let c = read(&value(&format!(
            "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\nfetch: true\nverify:\n  identities: [a, b]\n  identityRegexps: 'c.*'\n  issuer: https://i\n  require: all\n  trustedRoot: {{mediaType: x}}\nminAge: 3d\nageSource: builder\n"
        )));
        // The trusted root is checked: this one is not a Sigstore root.
        let errors = c.unwrap_err();
        assert!(
            messages(&errors)[0].starts_with("functionConfig: verify.trustedRoot: "),
            "{errors:?}"
        );
        let c = read(&value(&format!(
            "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\nfetch: true\nverify:\n  identities: [a, b]\n  identityRegexps: 'c.*'\n  issuer: https://i\n  require: all\nminAge: 3d\nageSource: builder\n"
        )))
        .unwrap();
        let over = &c.fetch.unwrap().supply_chain;
        let verify = over.verify.as_ref().unwrap();
        assert_eq!(verify.identities.len(), 3);
        assert_eq!(
            verify.require,
            image_update_registry::settings::Require::All
        );
        assert_eq!(
            over.min_age,
            Some(std::time::Duration::from_secs(3 * 86_400))
        );
        assert_eq!(
            over.age_source,
            Some(image_update_registry::settings::AgeSource::Builder)
        );
        for (yaml, message) in [
            (
                "fetch: true\nverify: {identities: [a]}\n",
                "functionConfig: verify.identities needs verify.issuer or verify.issuerRegexp",
            ),
            (
                "fetch: true\nverify: {issuer: [a, b]}\n",
                "ImageUpdate  verify.issuer: expected one string",
            ),
            (
                "fetch: true\nverify: {key: x}\n",
                "ImageUpdate  verify.key: unknown field",
            ),
            (
                "fetch: true\nverify: {keys: [x]}\n",
                "functionConfig: verify.keys key 1: ",
            ),
            (
                "fetch: true\nminAge: soon\n",
                "ImageUpdate  minAge: \"soon\" is not a duration",
            ),
            (
                "minAge: 1d\n",
                "ImageUpdate  minAge: the supply-chain settings apply to fetched policies: set fetch",
            ),
        ] {
            let errors = read(&value(&format!(
                "apiVersion: {IMAGE_UPDATE_API_VERSION}\nkind: ImageUpdate\n{yaml}"
            )))
            .unwrap_err();
            assert!(
                messages(&errors)[0].starts_with(message),
                "{yaml}: {errors:?}"
            );
        }
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
