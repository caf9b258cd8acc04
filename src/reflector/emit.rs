//! `--emit-policies FILE`: the fetched policies as Flux ImagePolicy (v1)
//! objects with the computed status, as a multi-document YAML stream.
//!
//! A Flux ImagePolicy keeps its metadata and spec, and gets
//! `status.latestRef` and (when there is one) `status.observedPreviousRef`.
//! A KubeSphere ImageUpdater entry becomes an ImagePolicy named after its
//! alias in the updater's namespace, with no spec (its strategy may have no
//! Flux equivalent) and the annotation [`SOURCE_ANNOTATION`] naming the
//! updater. Either way the stream can be fed back with `--policies`.

use serde_json::{Map, Value, json};

use super::definitions::{Definition, Kind};
use super::fetch::Resolved;
use crate::reflector::selection::ImageRef;

/// Annotation naming the ImageUpdater an emitted ImagePolicy comes from.
pub(crate) const SOURCE_ANNOTATION: &str = "image-update.dev/image-updater";

fn image_ref(r: &ImageRef) -> Value {
    let mut m = Map::new();
    m.insert("name".to_owned(), Value::String(r.name.clone()));
    m.insert("tag".to_owned(), Value::String(r.tag.clone()));
    if !r.digest.is_empty() {
        m.insert("digest".to_owned(), Value::String(r.digest.clone()));
    }
    Value::Object(m)
}

/// The ImagePolicy object for one resolved definition.
#[must_use]
pub(crate) fn image_policy(definition: &Definition, resolved: &Resolved) -> Value {
    let mut object = match &definition.kind {
        Kind::FluxPolicy { object } => object.clone(),
        Kind::KubeSphere { updater } | Kind::ArgoCd { app: updater } => json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": "ImagePolicy",
            "metadata": {
                "name": definition.key.name,
                "namespace": definition.key.namespace,
                "annotations": {SOURCE_ANNOTATION: updater},
            },
        }),
    };
    let mut status = Map::new();
    status.insert("latestRef".to_owned(), image_ref(&resolved.latest_ref()));
    if let Some(prev) = &resolved.observed_previous {
        status.insert("observedPreviousRef".to_owned(), image_ref(prev));
    }
    if let Some(map) = object.as_object_mut() {
        if let Some(Value::Object(meta)) = map.get_mut("metadata")
            && !meta.contains_key("namespace")
        {
            meta.insert(
                "namespace".to_owned(),
                Value::String(definition.key.namespace.clone()),
            );
        }
        map.insert("status".to_owned(), Value::Object(status));
    }
    object
}

/// The whole stream: one document per policy, in key order.
///
/// # Errors
/// Only if YAML serialisation fails.
pub fn render(definitions: &[Definition], resolved: &[Resolved]) -> Result<String, String> {
    let mut pairs: Vec<(&Definition, &Resolved)> = resolved
        .iter()
        .filter_map(|r| definitions.iter().find(|d| d.key == r.key).map(|d| (d, r)))
        .collect();
    pairs.sort_by(|a, b| a.1.key.cmp(&b.1.key));
    let policies: Vec<Value> = pairs.into_iter().map(|(d, r)| image_policy(d, r)).collect();
    crate::yaml::to_stream(&policies)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::ImageRef;
    use crate::policies::PolicyDocument;
    use crate::policies::image_policy::{Role, read_supplied, role};
    use crate::reflector::definitions::collect;
    use crate::reflector::selection::{PolicySpec, TagInfo};

    #[test]
    fn emits_flux_and_kubesphere_policies() {
        let text = r"
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: flux-system}
spec: {image: ghcr.io/acme/app}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: flux-system}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: 1.x}}
status:
  latestRef: {name: ghcr.io/acme/app, tag: 1.0.0}
---
apiVersion: gitops.kubesphere.io/v1alpha1
kind: ImageUpdater
metadata: {name: demo, namespace: demo}
spec:
  images: [web=ghcr.io/acme/web]
  argocd: {update-strategy: {web: latest}}
";
        let docs: Vec<PolicyDocument> = crate::yaml::parse_documents(text)
            .unwrap()
            .into_iter()
            .map(|document| PolicyDocument {
                document,
                origin: "defs.yaml".into(),
                positions: true,
                dir: None,
                supplies: true,
            })
            .collect();
        let defs = collect(&docs).unwrap();
        let selection = PolicySpec::new(crate::reflector::selection::PolicyConfig::new(
            crate::reflector::selection::Strategy::Alphabetical {
                order: crate::reflector::selection::Order::Asc,
            },
        ))
        .unwrap()
        .select(&[TagInfo::new("1.1.0")], 1)
        .unwrap();
        let resolved: Vec<Resolved> = defs
            .iter()
            .map(|d| {
                let latest = ImageRef {
                    name: d.image.clone(),
                    tag: "1.1.0".into(),
                    digest: if d.key.namespace == "demo" {
                        format!("sha256:{}", "a".repeat(64))
                    } else {
                        String::new()
                    },
                };
                let new = ImageRef::new(&latest.name, &latest.tag).with_digest(&latest.digest);
                Resolved {
                    key: d.key.clone(),
                    source: d.source.clone(),
                    observed_previous: crate::reflector::selection::next_observed_previous(
                        d.previous.as_ref(),
                        &new,
                        d.observed_previous.as_ref(),
                    ),
                    previous: d.previous.clone(),
                    latest,
                    selection: selection.clone(),
                    gate: None,
                    lookup: None,
                }
            })
            .collect();
        let out = render(&defs, &resolved).unwrap();
        assert_eq!(
            out,
            format!(
                "---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: web
  namespace: demo
  annotations:
    image-update.dev/image-updater: demo/demo
status:
  latestRef:
    name: ghcr.io/acme/web
    tag: \"1.1.0\"
    digest: sha256:{}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: app
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: 1.x
status:
  latestRef:
    name: ghcr.io/acme/app
    tag: \"1.1.0\"
  observedPreviousRef:
    name: ghcr.io/acme/app
    tag: \"1.0.0\"
",
                "a".repeat(64)
            )
        );
        // The stream reads back as supplied results.
        let back_docs = crate::yaml::parse_documents(&out).unwrap();
        let back: Vec<_> = back_docs
            .iter()
            .flat_map(crate::yaml::objects)
            .filter(|o| role(o.value, false) == Role::Supplied)
            .map(|o| read_supplied(&o, "emitted", true).unwrap())
            .collect();
        assert_eq!(back.len(), 2);
        assert_eq!(
            back[1].latest.as_ref().unwrap().image(),
            "ghcr.io/acme/app:1.1.0"
        );
    }
}
