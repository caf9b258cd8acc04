//! `deploy` as a KRM function: a generator. With the functionConfig
//! [`IMAGE_UPDATE_API_VERSION`] [`DEPLOY_KIND`], the items of the kinds
//! `deploy` reads (automations, their GitRepositories, the definitions) are
//! its input and stay in the list; the workloads [`crate::deploy`] makes
//! for them (ConfigMaps, PersistentVolumeClaims, CronJobs) are added, one
//! file per workload under `path` (`PATH/NAMESPACE/NAME.yaml`), each marked
//! with the annotation [`GENERATED_BY`]. The items a previous run added
//! (so marked) are replaced, so that running it again gives the same
//! package; every other item is left as it is, byte for byte.
//!
//! ```yaml
//! apiVersion: fn.image-update.dev/v1alpha1
//! kind: Deploy
//! metadata: {name: deploy}
//! image: ghcr.io/image-update/image-update:0.1.0   # deploy's options
//! namespace: automation
//! fleet: images
//! state: true
//! parallelism: 2
//! cloudIdentity: aws=arn:aws:iam::123456789012:role/image-update  # a ServiceAccount for it
//! registryProviders: {123456789012.dkr.ecr.eu-west-1.amazonaws.com: aws}
//! path: image-update           # where the workloads' files go
//! ```
//!
//! Errors (a bad option, an input `deploy` refuses) are error results and
//! the list is answered unchanged. Pure: no registry and no cluster is
//! asked.

use std::ops::Range;

use serde_json::Value;

use super::config::IMAGE_UPDATE_API_VERSION;
use super::{Output, Response, failed, results_edit};
use crate::deploy::{self, Options, Source};
use crate::diagnostic::Diagnostic;
use crate::render::kpt::{self as results, KptResult, Severity};
use crate::updater::source::resource_list::{ListLayout, parse_node};
use crate::yaml::Document;
use crate::yaml::edit::Edit;
use crate::yaml::edit::list::{Items, NewItem};

/// The functionConfig kind that runs `deploy`.
pub(crate) const DEPLOY_KIND: &str = "Deploy";
/// The annotation on every item the generator adds (value `deploy`).
pub(crate) const GENERATED_BY: &str = "fn.image-update.dev/generated-by";
/// The directory of the generated files when `path` is not given.
const DEFAULT_PATH: &str = "image-update";
/// The annotations kpt puts on items (path, index, ids), which are not part
/// of the objects the workloads carry.
const KPT_ANNOTATIONS: [&str; 3] = [
    "config.kubernetes.io/",
    "internal.config.kubernetes.io/",
    "config.k8s.io/",
];

/// Whether the functionConfig `config` is a [`DEPLOY_KIND`].
pub(super) fn asks(config: &Value) -> bool {
    config.get("apiVersion").and_then(Value::as_str) == Some(IMAGE_UPDATE_API_VERSION)
        && config.get("kind").and_then(Value::as_str) == Some(DEPLOY_KIND)
}

/// The answer to `text` whose functionConfig `config` is a
/// [`DEPLOY_KIND`] (see [`asks`]).
pub(super) fn answer<'a>(text: &'a str, layout: &ListLayout, config: &Value) -> Response<'a> {
    match generate(text, layout, config) {
        Ok((results, edits)) => {
            let mut edits = edits;
            edits.push(results_edit(text, layout, &results));
            Response {
                output: Output::Spliced {
                    prefix: "",
                    text,
                    edits,
                },
                results,
                failed: false,
            }
        }
        Err(errors) => failed(text, layout, errors),
    }
}

/// The functionConfig's options.
struct Settings {
    options: Options,
    path: String,
}

fn settings(config: &Value) -> Result<Settings, Vec<String>> {
    let name = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let what = format!("{DEPLOY_KIND} {name}");
    let mut options = Options::default();
    let mut path = DEFAULT_PATH.to_owned();
    let mut errors = Vec::new();
    let Some(object) = config.as_object() else {
        return Err(vec![format!("{what}: not a mapping")]);
    };
    for (key, v) in object {
        let field = format!("{what} {key}");
        let text = || v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        match key.as_str() {
            "apiVersion" | "kind" | "metadata" => {}
            "image" => match text() {
                Some(image) => options.image = image,
                None => errors.push(format!("{field}: expected an image reference")),
            },
            "namespace" => match text() {
                Some(ns) if crate::object::dns_label(&ns) => options.namespace = Some(ns),
                _ => errors.push(format!("{field}: expected a namespace name")),
            },
            "fleet" => match text() {
                Some(fleet) => options.fleet = Some(fleet),
                None => errors.push(format!("{field}: expected the fleet's name")),
            },
            "state" => match v {
                Value::Bool(b) => options.state = *b,
                _ => errors.push(format!("{field}: expected true or false")),
            },
            "parallelism" => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n > 0 => options.parallelism = n,
                _ => errors.push(format!("{field}: expected a number of Pods, at least 1")),
            },
            "cloudIdentity" => match text().map(|t| t.parse::<deploy::CloudIdentity>()) {
                Some(Ok(identity)) => options.cloud_identity = Some(identity),
                Some(Err(e)) => errors.push(format!("{field}: {e}")),
                None => errors.push(format!("{field}: expected PROVIDER=ID")),
            },
            "registryProviders" => match v {
                Value::Object(map) => {
                    for (host, p) in map {
                        match image_update_registry::cloud::parse_host_provider(&format!(
                            "{host}={}",
                            p.as_str().unwrap_or("")
                        )) {
                            Ok(pair) => options.registry_providers.push(pair),
                            Err(e) => errors.push(format!("{field}: {e}")),
                        }
                    }
                }
                _ => errors.push(format!(
                    "{field}: expected a map of registry host to aws, azure, gcp or generic"
                )),
            },
            "path" => match text() {
                Some(p) if !p.starts_with('/') && !p.split('/').any(|s| s == "..") => {
                    path = crate::automation::normalise_path(&p);
                }
                _ => errors.push(format!(
                    "{field}: expected a directory of the package (relative, without ..)"
                )),
            },
            _ => errors.push(format!(
                "{field}: unknown field; {DEPLOY_KIND} has image, namespace, fleet, state, parallelism, cloudIdentity, registryProviders and path"
            )),
        }
    }
    if errors.is_empty() {
        Ok(Settings { options, path })
    } else {
        Err(errors)
    }
}

/// An input item: its origin (path annotation, else `items[i]`) and the
/// object without kpt's annotations.
fn input(value: &Value, i: usize) -> (String, Value) {
    let annotation = |key: &str| {
        value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let origin = annotation("internal.config.kubernetes.io/path")
        .or_else(|| annotation("config.kubernetes.io/path"))
        .unwrap_or_else(|| format!("items[{i}]"));
    let mut object = value.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            annotations.retain(|k, _| !KPT_ANNOTATIONS.iter().any(|p| k.starts_with(p)));
        }
        if metadata
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(serde_json::Map::is_empty)
        {
            metadata.remove("annotations");
        }
    }
    (origin, object)
}

fn generated(value: &Value) -> bool {
    value
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(GENERATED_BY))
        .is_some()
}

fn generate(
    text: &str,
    layout: &ListLayout,
    config: &Value,
) -> Result<(Vec<KptResult>, Vec<Edit>), Vec<String>> {
    let settings = settings(config)?;
    let items = layout.items.as_deref().unwrap_or(&[]);
    let mut previous = Vec::new();
    let mut inputs: Vec<(String, Vec<Document>)> = Vec::new();
    let mut errors = Vec::new();
    for (i, node) in items.iter().enumerate() {
        let value = match parse_node(text, node) {
            Ok(v) => v,
            Err(e) => {
                errors.push(format!("items[{i}]: {e}"));
                continue;
            }
        };
        if generated(&value) {
            previous.push(i);
        } else if deploy::reads(&value) {
            let (origin, object) = input(&value, i);
            inputs.push((origin, vec![Document::from_value(object)]));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let sources: Vec<Source<'_>> = inputs
        .iter()
        .map(|(origin, documents)| Source { origin, documents })
        .collect();
    let output = deploy::generate(&sources, &settings.options)
        .map_err(|errors| results::messages(&errors))?;
    let objects = annotated(output.objects, &settings.path);
    let workloads = objects.iter().filter(|o| o["kind"] == "CronJob").count();
    let mut found: Vec<KptResult> = vec![KptResult::new(
        Severity::Info,
        format!(
            "generated {} objects ({workloads} CronJob{}) for {} automation{}",
            objects.len(),
            if workloads == 1 { "" } else { "s" },
            automations(&inputs),
            if automations(&inputs) == 1 { "" } else { "s" },
        ),
    )];
    found.extend(output.notes.iter().map(|n: &Diagnostic| {
        KptResult::new(
            Severity::Info,
            results::messages(std::slice::from_ref(n)).concat(),
        )
    }));
    let ranges: Vec<Range<usize>> = items.iter().map(|node| node.range.clone()).collect();
    let edits = splice(text, &ranges, &previous, &objects)?;
    Ok((found, edits))
}

fn automations(inputs: &[(String, Vec<Document>)]) -> usize {
    inputs
        .iter()
        .flat_map(|(_, d)| d)
        .filter(|d| {
            matches!(
                d.value.get("kind").and_then(Value::as_str),
                Some("ImageUpdateAutomation" | "ImageUpdater")
            )
        })
        .count()
}

/// The objects with their file (`PATH/NAMESPACE/WORKLOAD.yaml`, the
/// workload named by its `app.kubernetes.io/instance` label), their index
/// in it, and [`GENERATED_BY`].
fn annotated(objects: Vec<Value>, path: &str) -> Vec<Value> {
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    objects
        .into_iter()
        .map(|mut o| {
            let namespace = o
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_owned();
            let workload = o
                .pointer("/metadata/labels/app.kubernetes.io~1instance")
                .and_then(Value::as_str)
                .unwrap_or("image-update")
                .to_owned();
            let file = if path.is_empty() {
                format!("{namespace}/{workload}.yaml")
            } else {
                format!("{path}/{namespace}/{workload}.yaml")
            };
            let index = counts.entry(file.clone()).or_default();
            let ours = [
                (GENERATED_BY, "deploy".to_owned()),
                ("config.kubernetes.io/path", file.clone()),
                ("internal.config.kubernetes.io/path", file),
                ("config.kubernetes.io/index", index.to_string()),
                ("internal.config.kubernetes.io/index", index.to_string()),
            ];
            *index += 1;
            // Added to the object's own annotations (a ServiceAccount's
            // cloud identity), which stay.
            if let Some(metadata) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                let annotations = metadata
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Some(annotations) = annotations.as_object_mut() {
                    for (key, value) in ours {
                        annotations.insert(key.to_owned(), Value::from(value));
                    }
                }
            }
            o
        })
        .collect()
}

/// The edits that drop the `previous` items and add `objects` after the last item, in the
/// list's style ([`Items::edits`]: block lines, kpt writes the style it gets, or JSON in a flow
/// sequence).
fn splice(
    text: &str,
    items: &[Range<usize>],
    previous: &[usize],
    objects: &[Value],
) -> Result<Vec<Edit>, Vec<String>> {
    let add = objects
        .iter()
        .map(NewItem::object)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| vec![e])?;
    Items {
        text,
        ranges: items,
    }
    .edits(previous, &add)
    // No items: deploy found no automation and said so.
    .ok_or_else(|| vec!["no items to add the workloads to".to_owned()])
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUTOMATION: &str = "- apiVersion: gitops.kubesphere.io/v1alpha1
  kind: ImageUpdater
  metadata:
    name: demo
    namespace: apps
    annotations:
      config.kubernetes.io/path: 'flux/demo.yaml'
      internal.config.kubernetes.io/path: 'flux/demo.yaml'
  spec:
    kind: fluxcd
    images: [app=ghcr.io/acme/app]
    fluxcd:
      interval: 10m
      policy: {semver: {range: 1.x}}
      sourceRef: {name: fleet}
      git:
        commit:
          author: {name: bot, email: bot@example.com}
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: GitRepository
  metadata:
    name: fleet
    namespace: apps
    annotations:
      config.kubernetes.io/path: 'flux/fleet.yaml'
  spec:
    url: https://example.com/fleet
";
    const OTHER: &str = "- apiVersion: v1
  kind: Secret # left alone
  metadata: {name: token, namespace: apps}
";

    fn list(items: &str, config: &str) -> String {
        let config: String = config.lines().map(|l| format!("  {l}\n")).collect();
        format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{items}functionConfig:\n  apiVersion: fn.image-update.dev/v1alpha1\n  kind: Deploy\n  metadata: {{name: d}}\n{config}"
        )
    }

    fn run(text: &str) -> (String, bool) {
        let mut response = super::super::process(text);
        (response.output.pieces().unwrap().concat(), response.failed)
    }

    fn items(text: &str) -> Vec<Value> {
        let doc = crate::yaml::parse_one(text).unwrap();
        doc.value["items"].as_array().unwrap().clone()
    }

    #[test]
    fn adds_the_workloads_and_keeps_every_item() {
        let input = list(&format!("{AUTOMATION}{OTHER}"), "");
        let (out, failed) = run(&input);
        assert!(!failed, "{out}");
        // The input's items, byte for byte, then the new ones.
        assert!(out.starts_with(&input[..input.find("functionConfig:").unwrap() - 1]));
        let all = items(&out);
        let kinds: Vec<&str> = all.iter().map(|i| i["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "ImageUpdater",
                "GitRepository",
                "Secret",
                "ConfigMap",
                "CronJob"
            ]
        );
        let cron = &all[4];
        assert_eq!(
            cron["metadata"]["annotations"]["config.kubernetes.io/path"],
            "image-update/apps/image-update-demo.yaml"
        );
        assert_eq!(
            cron["metadata"]["annotations"]["config.kubernetes.io/index"],
            "1"
        );
        assert_eq!(cron["metadata"]["annotations"][GENERATED_BY], "deploy");
        // The ConfigMap carries the objects without kpt's annotations.
        let automation = all[3]["data"]["automation.yaml"].as_str().unwrap();
        assert!(!automation.contains("config.kubernetes.io"), "{automation}");
        assert!(
            out.contains("results:\n- message: generated 2 objects (1 CronJob) for 1 automation\n"),
            "{out}"
        );
        // Run again on the output: the same list.
        let again_input = out[..out.find("functionConfig:").unwrap()].to_owned()
            + &input[input.find("functionConfig:").unwrap()..];
        let (again, failed) = run(&again_input);
        assert!(!failed, "{again}");
        assert_eq!(again, out, "a second run changes nothing");
    }

    #[test]
    fn previous_items_in_the_middle_are_removed() {
        let input = list(&format!("{AUTOMATION}{OTHER}"), "path: ops\n");
        let (out, _) = run(&input);
        let generated_items = &out[out.find("- apiVersion: v1\n  kind: ConfigMap").unwrap()
            ..out.find("functionConfig:").unwrap()];
        // The generated items first, then the inputs.
        let reordered = list(
            &format!("{generated_items}{AUTOMATION}{OTHER}"),
            "path: ops\n",
        );
        let (again, failed) = run(&reordered);
        assert!(!failed, "{again}");
        let all = items(&again);
        let kinds: Vec<String> = all
            .iter()
            .map(|i| i["kind"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            all[4]["metadata"]["annotations"]["config.kubernetes.io/path"],
            "ops/apps/image-update-demo.yaml"
        );
        assert_eq!(
            kinds,
            [
                "ImageUpdater",
                "GitRepository",
                "Secret",
                "ConfigMap",
                "CronJob"
            ]
        );
    }

    #[test]
    fn flow_style_lists_get_json_items() {
        let input = "{\"apiVersion\": \"config.kubernetes.io/v1\", \"kind\": \"ResourceList\", \"items\": [{\"apiVersion\": \"image.toolkit.fluxcd.io/v1\", \"kind\": \"ImageUpdateAutomation\", \"metadata\": {\"name\": \"a\", \"namespace\": \"ns\"}, \"spec\": {\"interval\": \"1h\", \"sourceRef\": {\"kind\": \"GitRepository\", \"name\": \"r\"}, \"update\": {\"strategy\": \"Setters\"}}}, {\"apiVersion\": \"source.toolkit.fluxcd.io/v1\", \"kind\": \"GitRepository\", \"metadata\": {\"name\": \"r\", \"namespace\": \"ns\"}, \"spec\": {\"url\": \"https://example.com/r\"}}, {\"apiVersion\": \"image.toolkit.fluxcd.io/v1\", \"kind\": \"ImagePolicy\", \"metadata\": {\"name\": \"p\", \"namespace\": \"ns\"}, \"spec\": {\"imageRepositoryRef\": {\"name\": \"p\"}}}], \"functionConfig\": {\"apiVersion\": \"fn.image-update.dev/v1alpha1\", \"kind\": \"Deploy\", \"metadata\": {\"name\": \"d\"}}}";
        let (out, failed) = run(input);
        assert!(!failed, "{out}");
        let value: Value = serde_json::from_str(&out).unwrap();
        let kinds: Vec<&str> = value["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "ImageUpdateAutomation",
                "GitRepository",
                "ImagePolicy",
                "ConfigMap",
                "CronJob"
            ]
        );
    }

    #[test]
    fn errors_leave_the_list_unchanged() {
        let input = list(
            &format!("{AUTOMATION}{OTHER}").replace("url: https://example.com/fleet", "url: ''"),
            "parallelism: 0\nbogus: 1\n",
        );
        let (out, failed) = run(&input);
        assert!(failed);
        assert!(out.starts_with(&input), "{out}");
        assert!(
            out.contains("Deploy d parallelism: expected a number of Pods, at least 1"),
            "{out}"
        );
        assert!(out.contains("Deploy d bogus: unknown field"), "{out}");
        let input = list(
            &format!("{AUTOMATION}{OTHER}").replace("url: https://example.com/fleet", "url: ''"),
            "",
        );
        let (out, failed) = run(&input);
        assert!(failed);
        assert!(
            out.contains("flux/fleet.yaml: GitRepository apps/fleet: spec.url is missing"),
            "{out}"
        );
    }
}
