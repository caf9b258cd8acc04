use super::*;

const M: &str = r#"# {"$imagepolicy": "ns:p"}"#;

fn docs(text: &str) -> Scan {
    scan(text, Layout::Documents).unwrap()
}

fn replaced<'t>(text: &'t str, m: &Marker) -> &'t str {
    match &m.target {
        Slot::Scalar { range, .. } => &text[range.clone()],
        Slot::Empty { .. } => "",
    }
}

fn only_finding(s: &Scan) -> &str {
    assert!(s.markers.is_empty(), "{:?}", s.markers);
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    &s.findings[0].message
}

#[test]
fn mapping_values_in_every_quote_style() {
    let text = format!("a: app:1 {M}\nb: 'app:1' {M}\nc: \"app:1\" {M}\nd: x\n");
    let s = docs(&text);
    assert_eq!(s.markers.len(), 3);
    assert_eq!(replaced(&text, &s.markers[0]), "app:1");
    assert_eq!(replaced(&text, &s.markers[1]), "'app:1'");
    assert_eq!(replaced(&text, &s.markers[2]), "\"app:1\"");
    let styles: Vec<_> = s
        .markers
        .iter()
        .map(|m| match m.target {
            Slot::Scalar { style, .. } => style,
            Slot::Empty { .. } => panic!(),
        })
        .collect();
    assert_eq!(
        styles,
        [Style::Plain, Style::SingleQuoted, Style::DoubleQuoted]
    );
    assert!(
        s.markers
            .iter()
            .all(|m| m.value == "app:1" && m.setter == "ns:p")
    );
    assert!(s.findings.is_empty());
}

#[test]
fn object_identity_and_field_paths() {
    let text = format!(
        "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: app:1 {M}\nmetadata:\n  namespace: ns\n  name: web\n"
    );
    let s = docs(&text);
    assert_eq!(s.markers.len(), 1);
    let m = &s.markers[0];
    assert_eq!(m.field_path, "spec.template.spec.containers[0].image");
    let id = &s.objects[m.object].id;
    assert_eq!(
        (
            id.api_version.as_str(),
            id.kind.as_str(),
            id.name.as_str(),
            id.namespace.as_str()
        ),
        ("apps/v1", "Deployment", "web", "ns")
    );
}

#[test]
fn keys_with_dots_are_bracketed() {
    let text = format!("values:\n  image.repository: app {M}\n");
    assert_eq!(
        docs(&text).markers[0].field_path,
        "values[\"image.repository\"]"
    );
}

#[test]
fn sequence_items_and_head_comments() {
    let text = format!("images:\n  - app:1 {M}\n  {M}\n  - app:2\n  - app:3\n");
    let s = docs(&text);
    let values: Vec<_> = s
        .markers
        .iter()
        .map(|m| (m.value.as_str(), m.field_path.as_str()))
        .collect();
    assert_eq!(values, [("app:1", "images[0]"), ("app:2", "images[1]")]);
    assert!(s.findings.is_empty());
}

#[test]
fn head_comment_must_be_directly_above_and_alone() {
    let text = format!("images:\n  {M}\n\n  - app:2\n");
    assert!(only_finding(&docs(&text)).contains("applies only to a scalar sequence item"));
    let text = format!("images:\n  # about\n  {M}\n  - app:2\n");
    assert!(only_finding(&docs(&text)).contains("multi-line comment block"));
}

/// Found by the `plan` fuzz target: an item with a head marker and a line
/// marker got two overlapping edits, and planning its file failed. As in
/// Flux, the line comment is read, and the head comment only without one.
#[test]
fn a_line_comment_is_read_instead_of_a_head_marker() {
    let q = r#"# {"$imagepolicy": "ns:q"}"#;
    let text = format!("images:\n{M}\n- app:1 {q}\n");
    let s = docs(&text);
    let setters: Vec<_> = s.markers.iter().map(|m| m.setter.as_str()).collect();
    assert_eq!(setters, ["ns:q"]);
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    assert!(s.findings[0].message.contains("is not used"));
    assert_eq!(s.findings[0].offset, text.find(M).unwrap());

    let text = format!("images:\n{M}\n- app:1 # pinned by hand\n");
    assert!(only_finding(&docs(&text)).contains("is read instead"));

    let text = format!("images:\n{M}\n- app:1\n# about the next one\n- app:2 {q}\n");
    let s = docs(&text);
    let values: Vec<_> = s
        .markers
        .iter()
        .map(|m| (m.setter.as_str(), m.field_path.as_str()))
        .collect();
    assert_eq!(values, [("ns:p", "images[0]"), ("ns:q", "images[1]")]);
    assert!(s.findings.is_empty(), "{:?}", s.findings);

    let rl = format!("kind: ResourceList\nitems:\n- kind: A\n  images:\n  {M}\n  - app:1 {q}\n");
    let s = scan(&rl, Layout::ResourceList).unwrap();
    assert_eq!(s.markers.len(), 1);
    assert_eq!(s.markers[0].setter, "ns:q");
}

#[test]
fn marker_above_a_key_is_reported() {
    let text = format!("spec:\n  {M}\n  image: app:1\n");
    assert!(only_finding(&docs(&text)).contains("above a key"));
}

#[test]
fn markers_that_cannot_be_applied() {
    let cases = [
        (format!("a: |  {M}\n  text\n"), "block scalar"),
        (format!("a: >-  {M}\n  text\n"), "block scalar"),
        (format!("a: [x, 'y'] {M}\n"), "flow collection"),
        (format!("a: {{x: 1}} {M}\n"), "flow collection"),
        (format!("a: &x app:1\nb: *x {M}\n"), "alias"),
        (format!("a: {M}\n  b: 1\n"), "not on this line"),
        (format!("a: !!int 10 {M}\n"), "non-string tag"),
        (format!("app:1 {M}\n"), "single scalar"),
        (format!("- {M}\n"), "applies to nothing"),
        (format!("{M}\na: 1\n"), "above a key"),
    ];
    for (text, why) in cases {
        let s = docs(&text);
        let got = only_finding(&s);
        assert!(got.contains(why), "{text:?}: {got}");
    }
}

#[test]
fn anchored_values_explicit_str_tags_and_empty_values_apply() {
    let text = format!("a: &x app:1 {M}\nb: !!str 1.0 {M}\nc: {M}\n");
    let s = docs(&text);
    assert_eq!(s.markers.len(), 3);
    assert_eq!(replaced(&text, &s.markers[0]), "app:1");
    assert_eq!(replaced(&text, &s.markers[1]), "1.0");
    assert_eq!(
        s.markers[2].target,
        Slot::Empty {
            at: text.find("c:").unwrap() + 2
        }
    );
    assert_eq!(s.markers[2].value, "");
}

#[test]
fn look_alikes_are_reported_everywhere() {
    let text = "a: x # {'$imagepolicy': 'ns:p'}\n# {\"$ImagePolicy\": \"ns:p\"}\nb: y\n";
    let s = docs(text);
    assert!(s.markers.is_empty());
    assert_eq!(s.findings.len(), 2);
    assert!(s.findings[0].message.contains("single quotes"));
    assert!(s.findings[1].message.contains("spelled exactly"));
}

#[test]
fn multi_document_streams() {
    let text = format!(
        "---\nkind: A\nmetadata: {{name: a}}\n---\n# only a comment\n---\nkind: B\nmetadata: {{name: b}}\nimage: x {M}\n...\n---\n- y {M}\n"
    );
    let s = docs(&text);
    assert_eq!(s.markers.len(), 2);
    let first = &s.objects[s.markers[0].object];
    assert_eq!(
        (
            first.id.kind.as_str(),
            first.id.name.as_str(),
            first.document
        ),
        ("B", "b", 2)
    );
    let second = &s.objects[s.markers[1].object];
    assert_eq!((second.id.kind.as_str(), second.document), ("", 3));
    assert_eq!(s.markers[1].field_path, "[0]");
}

#[test]
fn crlf_bom_and_multibyte_offsets_are_exact() {
    let text = format!("\u{feff}# é ✓\r\na: 'é:1' {M}\r\nb: x\r\n");
    let s = docs(&text);
    assert_eq!(replaced(&text, &s.markers[0]), "'é:1'");
    let multiline = format!("a: one\n  two {M}\n");
    let s = docs(&multiline);
    assert_eq!(replaced(&multiline, &s.markers[0]), "one\n  two");
    assert_eq!(s.markers[0].value, "one two");
}

#[test]
fn flow_context_is_recorded() {
    let text = "a: [\n  app:1, # {\"$imagepolicy\": \"ns:p\"}\n]\n";
    let s = docs(text);
    assert_eq!(s.markers.len(), 1);
    assert!(s.markers[0].in_flow);
}

#[test]
fn parse_errors_carry_a_position() {
    let text = "a: b\nc: [unclosed\nd: e\n";
    let err = scan(text, Layout::Documents).unwrap_err();
    assert!(err.offset.is_some_and(|o| o > 4), "{err:?}");
    assert!(!err.message.is_empty());
}

#[test]
fn resource_list_items_are_the_objects() {
    let text = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n    annotations:\n      config.kubernetes.io/path: a.yaml\n      internal.config.kubernetes.io/path: b.yaml\n      config.kubernetes.io/index: '1'\n  spec:\n    containers:\n    - image: app:1 {M}\n- kind: Other\n  x: y {M}\nfunctionConfig:\n  data:\n    x: app:1 {M}\n    y: z # {{'$imagepolicy': 1}}\n"
    );
    let s = scan(&text, Layout::ResourceList).unwrap();
    assert_eq!(s.markers.len(), 2, "{:?}", s.markers);
    assert!(s.findings.is_empty(), "{:?}", s.findings);
    let pod = &s.objects[s.markers[0].object];
    assert_eq!((pod.id.kind.as_str(), pod.item), ("Pod", Some(0)));
    assert_eq!(pod.annotations.path.as_deref(), Some("b.yaml"));
    assert_eq!(pod.annotations.index.as_deref(), Some("1"));
    assert_eq!(s.markers[0].field_path, "spec.containers[0].image");
    let other = &s.objects[s.markers[1].object];
    assert_eq!((other.id.kind.as_str(), other.item), ("Other", Some(1)));
    assert_eq!(s.markers[1].field_path, "x");
}
