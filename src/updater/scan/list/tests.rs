//! Reading a list in parts finds exactly what one pass finds, and falls
//! back to one pass whenever a part could read differently on its own.

use super::*;

const M: &str = r#"# {"$imagepolicy": "ns:app"}"#;

/// Everything a read found, to compare two reads.
fn found(read: &Result<ListScan, ShapeError>) -> String {
    format!("{read:#?}")
}

/// Read `text` in `parts` parts (with no minimum size) and in one pass,
/// assert both find the same, and say whether the parts were used.
fn same_in_parts(text: &str, parts: usize) -> bool {
    let whole = one_pass(text);
    let split = read_in_parts(text, parts, 1);
    assert_eq!(
        found(&split),
        found(&whole),
        "{parts} parts differ from one pass on:\n{text}"
    );
    Plan::find(text, parts)
        .and_then(|plan| plan.read(text))
        .is_some()
}

/// A kpt-style list with `n` items of every kind the scanner reports on.
fn list(n: usize, eol: &str) -> String {
    let mut text =
        String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    for i in 0..n {
        let item = match i % 8 {
            0 => format!(
                "- # item {i}\n  apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: d{i}\n    annotations:\n      internal.config.kubernetes.io/path: 'apps/d{i}.yaml'\n      config.kubernetes.io/index: '{i}'\n  spec:\n    containers:\n    - name: a\n      image: app:1 {M}\n    - name: b\n      image: \"app:1\" # {{\"$imagepolicy\": \"ns:other:tag\"}}\n"
            ),
            1 => format!(
                "- kind: ConfigMap\n  metadata: {{name: c{i}}}\n  data:\n    a: x\n    a: y\n    b: app:1 # {{'$imagepolicy': 'ns:app'}}\n"
            ),
            2 => format!("- kind: List\n  images:\n  {M}\n  - app:1\n  - app:2 {M}\n  key: {M}\n"),
            3 => "- plain scalar item\n".to_owned(),
            4 => format!("- [a, {{b: app:1}}] {M}\n"),
            5 => format!(
                "- kind: Script\n  run: |\n    echo {M}\n    - not an item\n  image: app:1 {M}\n  empty: {M}\n"
            ),
            6 => format!(
                "- kind: Flow\n  spec: {{image: app:1, other: [1, 2]}}\n  multi: \"line one\n    line two\" {M}\n"
            ),
            _ => format!(
                "-   kind: Wide\n    metadata:\n      name: w{i}\n      namespace: ns\n    image: app:1 {M}\n    é: ü # {{\"$imagepolicy\": \"ns:app:name\"}}\n"
            ),
        };
        text.push_str(&item);
    }
    text.push_str("functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data:\n    ns:app: app:2\n    x: app:1 ");
    text.push_str(M);
    text.push_str("\nresults:\n- message: old\n");
    text.replace('\n', eol)
}

#[test]
fn parts_find_what_one_pass_finds() {
    for eol in ["\n", "\r\n"] {
        let text = list(24, eol);
        for parts in 2..=12 {
            assert!(
                same_in_parts(&text, parts),
                "{parts} parts were not used ({eol:?})"
            );
        }
    }
}

#[test]
fn parts_place_everything_in_the_whole_text() {
    let text = list(16, "\n");
    let read = read_in_parts(&text, 4, 1).unwrap();
    assert!(Plan::find(&text, 4).unwrap().cuts.len() >= 2);
    let items = read.layout.items.as_ref().unwrap();
    assert_eq!(items.len(), 16);
    for item in items {
        assert_eq!(
            crate::text::position_of(&text, item.range.start),
            item.start
        );
    }
    // Items nothing names are left out of the objects: the scalar item, and
    // the flow sequence whose marker comes after its end (one in four).
    assert_eq!(read.scan.objects.len(), 12);
    for object in &read.scan.objects {
        let item = &items[object.item.unwrap()];
        assert_eq!(object.offset, item.range.start, "{object:?}");
    }
    for m in &read.scan.markers {
        let offset = match &m.target {
            crate::yaml::edit::Slot::Scalar { range, .. } => range.start,
            crate::yaml::edit::Slot::Empty { at } => *at,
        };
        assert_eq!(crate::text::position_of(&text, offset), m.position, "{m:?}");
    }
    for f in &read.scan.findings {
        assert_eq!(
            crate::text::position_of(&text, f.offset),
            f.position,
            "{f:?}"
        );
    }
    assert!(
        read.scan
            .findings
            .iter()
            .any(|f| f.message.contains("duplicate key"))
    );
    let config = read.layout.function_config.as_ref().unwrap();
    assert_eq!(
        crate::text::position_of(&text, config.range.start),
        config.start
    );
}

#[test]
fn every_golden_input_reads_the_same_in_parts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/krm");
    let mut seen = 0;
    for entry in fs_err::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path().join("stdin.yaml");
        let Ok(text) = fs_err::read_to_string(&path) else {
            continue;
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        for parts in 2..=4 {
            same_in_parts(text, parts);
        }
        seen += 1;
    }
    assert!(seen > 10, "only {seen} golden inputs");
}

/// Lists a part could read differently on its own: they are read in one
/// pass (or, when every cut happens to avoid the doubt, in parts), with the
/// same result.
#[test]
fn doubtful_cuts_fall_back_to_one_pass() {
    let item = |i: usize| format!("- kind: A\n  metadata: {{name: a{i}}}\n  image: app:1 {M}\n");
    let items = |n: usize| (0..n).map(item).collect::<String>();
    let head = "apiVersion: v1\nkind: List\nitems:\n";
    let look_alikes = "- y\n".repeat(40);
    // (list, whether every cut is doubtful)
    let cases = [
        // An alias to an anchor in another part.
        (format!("{head}- &x {{kind: A}}\n{}- *x\n", items(6)), true),
        // A comment block before every item.
        (
            format!(
                "{head}{}",
                (0..8)
                    .map(|i| format!("# about {i}\n{}", item(i)))
                    .collect::<String>()
            ),
            true,
        ),
        // A quoted scalar, or a flow sequence, whose lines look like items.
        (
            format!(
                "{head}- kind: A\n  note: \"x\n{look_alikes}\"\n{}",
                items(1)
            ),
            true,
        ),
        (
            format!("{head}- [a,\n{look_alikes}- b]\n{}", items(1)),
            true,
        ),
        // Something else after the items than a plain root key.
        (format!("{head}{}---\nkind: Other\n", items(8)), true),
        (
            format!("{head}{}# the end\nfunctionConfig: {{}}\n", items(8)),
            true,
        ),
        (format!("{head}{}...\n", items(8)), true),
        (format!("{head}{} dangling: 1\n", items(8)), true),
        // A second `items` key after the first.
        (format!("{head}{}items:\n- kind: B\n", items(8)), true),
        // A directive.
        (format!("%YAML 1.2\n---\n{head}{}", items(8)), true),
        // Not YAML in the middle, or at the end.
        (format!("{head}{}- a: [\n{}", items(4), items(4)), true),
        (format!("{head}{}functionConfig: [\n", items(8)), true),
        // A carriage return alone ends lines.
        (
            format!("{head}{}", items(8).replace("\n  image", "\r  image")),
            true,
        ),
        // A byte-order mark, not at the start.
        (
            format!("{head}{}\u{feff}functionConfig: {{}}\n", items(8)),
            true,
        ),
        // Items nested as deep as the parser allows, or one level deeper:
        // a part, which lacks the root's levels, must not accept them.
        (
            format!(
                "{head}{}- {}x{}\n",
                items(4),
                "[".repeat(250),
                "]".repeat(250)
            ),
            false,
        ),
        (
            format!(
                "{head}{}- x:{}\n",
                items(4),
                (1..=253)
                    .map(|d| format!("\n{}k{d}:", "  ".repeat(d + 1)))
                    .collect::<String>(),
            ),
            false,
        ),
    ];
    for (i, (text, doubtful)) in cases.iter().enumerate() {
        for parts in 2..=6 {
            let used = same_in_parts(text, parts);
            assert!(
                !(used && *doubtful),
                "case {i} was read in {parts} parts:\n{text}"
            );
        }
    }
}

/// Lists the parts read as one pass does, in the layouts a user may write.
#[test]
fn unusual_but_sound_lists_are_read_in_parts() {
    let item =
        |i: usize| format!("  - kind: A\n    metadata: {{name: a{i}}}\n    image: app:1 {M}\n");
    let items = |n: usize| (0..n).map(item).collect::<String>();
    let cases = [
        // Items indented under their key, with a results entry after.
        format!(
            "kind: List\napiVersion: v1\nitems:\n{}results: []\n",
            items(8)
        ),
        // The whole root mapping indented.
        format!(
            "  kind: List\n  apiVersion: v1\n  items:\n{}  functionConfig: {{data: {{x: 1}}}}\n",
            items(8)
                .replace("\n  ", "\n    ")
                .replacen("  -", "    -", 1)
        ),
        // Blank lines and comments inside items, items up to the end.
        format!(
            "kind: List\napiVersion: v1\nitems: # the objects\n\n{}",
            items(8).replace("    image", "\n    # note\n    image")
        ),
        // Scalars and empty items.
        format!(
            "kind: List\napiVersion: v1\nitems:\n{}  -\n  - ~\n{}",
            items(4),
            items(4)
        ),
    ];
    for (i, text) in cases.iter().enumerate() {
        let mut used = false;
        for parts in 2..=6 {
            used |= same_in_parts(text, parts);
        }
        assert!(used, "case {i} was never read in parts:\n{text}");
    }
}

#[test]
fn small_lists_and_few_threads_take_one_pass() {
    let text = list(4, "\n");
    assert_eq!(found(&read_in_parts(&text, 1, 1)), found(&one_pass(&text)));
    assert_eq!(found(&read_list(&text)), found(&one_pass(&text)));
}

#[test]
fn line_breaks_are_counted_as_the_parser_counts_them() {
    assert_eq!(line_breaks(b"a\nb\r\nc\rd"), 3);
    assert_eq!(line_breaks(b""), 0);
    assert_eq!(line_breaks(b"\r"), 1);
}

/// Pieces of a list's `items` that read the same on their own.
const SOUND: [&str; 10] = [
    "- kind: A\n  metadata: {name: a}\n  image: app:1 # {\"$imagepolicy\": \"ns:app\"}\n",
    "- # head comment\n  kind: B\n  spec:\n    containers:\n    - image: app:1 # {\"$imagepolicy\": \"ns:app\"}\n",
    "- kind: C\n  a: 1\n  a: 2\n",
    "- plain\n",
    "-\n",
    "- run: |\n    - not an item\n  # {\"$imagepolicy\": \"ns:app\"}\n  x: y\n",
    "- images:\n  # {\"$imagepolicy\": \"ns:app\"}\n  - app:1\n",
    "- {kind: E} # {\"$imagepolicy\": \"ns:app\"}\n",
    "- kind: F\n  metadata:\n    annotations:\n      config.kubernetes.io/path: ../out.yaml\n",
    "- kind: G\n  note: \"one\n    two\" # {\"$imagepolicy\": \"ns:app\"}\n",
];

/// Pieces a part could read differently on its own, or not YAML.
const DOUBTFUL: [&str; 9] = [
    "- [a,\n- b]\n",
    "- note: \"one\n- two\"\n",
    "- &anchor {kind: D}\n",
    "- *anchor\n",
    "# between items\n",
    "\n",
    "  # indented comment\n",
    " - odd: indent\n",
    "- key: [unclosed\n",
];

const TAILS: [&str; 7] = [
    "",
    "functionConfig:\n  data: {ns:app: app:2}\n",
    "results:\n- message: old\n",
    "# last words\nfunctionConfig: {}\n",
    "---\nkind: Second\n",
    "items: []\n",
    "functionConfig: *anchor\n",
];

/// A piece of items: mostly sound, now and then doubtful.
fn piece() -> impl proptest::strategy::Strategy<Value = &'static str> {
    use proptest::prelude::*;
    prop_oneof![
        30 => (0..SOUND.len()).prop_map(|i| SOUND[i]),
        1 => (0..DOUBTFUL.len()).prop_map(|i| DOUBTFUL[i]),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    #[test]
    fn any_list_reads_the_same_in_parts(
        pieces in proptest::collection::vec(piece(), 1..48),
        tail in 0..TAILS.len(),
        crlf in proptest::bool::ANY,
        parts in 2usize..7,
    ) {
        let mut text = String::from("apiVersion: v1\nkind: List\nitems:\n");
        text.extend(pieces);
        text.push_str(TAILS[tail]);
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        proptest::prop_assert!(super::same_in_parts(&text, parts), "{parts} parts on:\n{text}");
    }
}
