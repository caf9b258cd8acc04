//! Scanner tests for the ResourceList layout (the KRM function's input).

use super::*;

const LIST: &str = r#"apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: a
    namespace: apps
    annotations:
      config.kubernetes.io/path: 'legacy.yaml'
      internal.config.kubernetes.io/path: 'apps/a.yaml'
      config.kubernetes.io/index: '3'
  spec:
    containers:
    - image: app:1 # {"$imagepolicy": "ns:a"}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: flow, annotations: {config.kubernetes.io/path: ../up.yaml}}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: unnamed}}
- apiVersion: kustomize.config.k8s.io/v1beta1
  kind: Kustomization
  metadata:
    annotations:
      config.kubernetes.io/path: 'kustomization.yaml'
  images:
  - name: app
    newTag: "1" # {"$imagepolicy": "ns:a:tag"}
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  data:
    x: app:1 # {"$imagepolicy": "ns:a"}
    # {"$imagepolicy": "ns:b"}
results:
- message: old # {"$imagepolicy": "ns:c"}
"#;

#[test]
fn items_are_the_objects() {
    let scan = scan(LIST, Layout::ResourceList).unwrap();
    assert_eq!(scan.objects.len(), 3);
    let a = &scan.objects[0];
    assert_eq!(
        a.id,
        ObjectId {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "a".into(),
            namespace: "apps".into(),
        }
    );
    assert_eq!(a.item, Some(0));
    // The internal annotation wins over the legacy one, whatever the order.
    assert_eq!(a.annotations.path.as_deref(), Some("apps/a.yaml"));
    assert_eq!(a.annotations.index.as_deref(), Some("3"));
    assert_eq!(scan.objects[1].id.kind, "ConfigMap");
    assert_eq!(scan.objects[1].id.name, "flow");
    assert_eq!(scan.objects[1].item, Some(1));
    assert_eq!(&LIST[scan.objects[1].offset..][..1], "{");
    // The next item holds no marker and no finding: nothing names it.
    let k = &scan.objects[2];
    assert_eq!(k.item, Some(3));
    assert_eq!(k.id.name, "");
    assert_eq!(k.annotations.path.as_deref(), Some("kustomization.yaml"));
    assert_eq!(k.annotations.index, None);
}

#[test]
fn markers_on_the_last_line_of_an_item_belong_to_it() {
    let scan = scan(LIST, Layout::ResourceList).unwrap();
    let found: Vec<(usize, &str, &str, &str)> = scan
        .markers
        .iter()
        .map(|m| {
            (
                m.object,
                m.setter.as_str(),
                m.field_path.as_str(),
                m.value.as_str(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (0, "ns:a", "spec.containers[0].image", "app:1"),
            (2, "ns:a:tag", "images[0].newTag", "1"),
        ]
    );
    // Nothing outside the items: no marker, no finding.
    assert!(scan.findings.is_empty(), "{:?}", scan.findings);
}

#[test]
fn findings_inside_items_name_their_item() {
    let text = "kind: ResourceList\nitems:\n- kind: A\n  x:\n    # {\"$imagepolicy\": \"ns:a\"}\n    y: 1\n- kind: B\n  z: 1 # {'$imagepolicy': 'ns:a'}\n";
    let scan = scan(text, Layout::ResourceList).unwrap();
    assert!(scan.markers.is_empty());
    let objects: Vec<Option<usize>> = scan.findings.iter().map(|f| f.object).collect();
    assert_eq!(objects, [Some(0), Some(1)], "{:?}", scan.findings);
}

#[test]
fn crlf_and_flow_lists() {
    let text = LIST.replace('\n', "\r\n");
    let scan_crlf = scan(&text, Layout::ResourceList).unwrap();
    assert_eq!(scan_crlf.markers.len(), 2);
    let Slot::Scalar { range, .. } = &scan_crlf.markers[1].target else {
        panic!("expected a replacement");
    };
    assert_eq!(&text[range.clone()], "\"1\"");
    let flow = "{\"kind\": \"ResourceList\", \"items\": [{\"kind\": \"A\", \"metadata\": {\"name\": \"x\", \"annotations\": {\"config.kubernetes.io/path\": \"/abs.yaml\"}}}, {\"kind\": \"B\"}]}";
    let scan_flow = scan(flow, Layout::ResourceList).unwrap();
    let names: Vec<(&str, Option<usize>)> = scan_flow
        .objects
        .iter()
        .map(|o| (o.id.kind.as_str(), o.item))
        .collect();
    // B holds nothing to name; A's absolute path is kept for a path limit
    // to refuse.
    assert_eq!(names, [("A", Some(0))]);
    assert_eq!(scan_flow.objects[0].id.name, "x");
}

#[test]
fn documents_layout_is_unaffected_by_items_keys() {
    let text = "kind: List\nitems:\n- image: a:1 # {\"$imagepolicy\": \"ns:a\"}\n";
    let docs = scan(text, Layout::Documents).unwrap();
    assert_eq!(docs.objects.len(), 1);
    assert_eq!(docs.markers[0].field_path, "items[0].image");
    let list = scan(text, Layout::ResourceList).unwrap();
    assert_eq!(list.markers[0].field_path, "image");
    assert_eq!(list.markers[0].object, 0);
}
