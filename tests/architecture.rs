//! The floor plan holds: every module of `src/` has a layer, imports nothing
//! from a layer above its own, and appears in the map of `src/lib.rs` and in
//! the file map of `docs/architecture.md`; no top-level modules import each
//! other in a circle; no renderer imports a front end or a planner; the
//! outcome imports no planner; the leaves import nothing but leaves.
//!
//! Layers, lowest first (`docs/architecture.md` explains each):
//! 0 the leaf vocabulary and infrastructure; 1 the domain (policies,
//! automations, the updater, the reflector, the run's outcome); 2 the views
//! the operation writes (the report, the commit message); 3 the operation
//! and deploy's generator;
//! 4 the Job; 5 the front ends' renderers and the KRM function; 6 the
//! command line and the public facade.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each module (by path from the crate root) and its layer; a module not
/// listed has its closest listed ancestor's.
const LAYERS: &[(&str, u8)] = &[
    ("text", 0),
    ("object", 0),
    ("setter", 0),
    ("diagnostic", 0),
    ("error", 0),
    ("failure", 0),
    ("limits", 0),
    ("argo_image", 0),
    ("input", 0),
    ("yaml", 0),
    ("pool", 0),
    ("walk", 0),
    ("sink", 0),
    ("teardown", 0),
    ("policies", 1),
    ("automation", 1),
    ("automation_file", 1),
    ("git_repository", 1),
    ("kubesphere", 1),
    ("create", 1),
    ("updater", 1),
    ("reflector", 1),
    ("argocd", 1),
    ("outcome", 1),
    ("provenance", 1),
    ("render", 2),
    ("escape", 0),
    ("same_object", 0),
    ("render::report", 2),
    ("render::job_status", 2),
    ("render::message", 2),
    ("operation", 3),
    ("deploy", 3),
    ("job", 4),
    ("krm", 5),
    ("render::terminal", 5),
    ("render::github", 5),
    ("render::kpt", 5),
    ("render::status", 5),
    ("render::progress", 5),
    ("render::tests", 6),
    ("cli", 6),
    ("api", 6),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b/mod.rs` -> `["a", "b"]`, `src/a/c.rs` -> `["a", "c"]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn layer(parts: &[String]) -> Option<u8> {
    (1..=parts.len()).rev().find_map(|n| {
        let key = parts[..n].join("::");
        LAYERS.iter().find(|(m, _)| *m == key).map(|(_, l)| *l)
    })
}

/// The code of a file without its comments (doc links are not imports).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path the code names: `crate::a::b` and `super::x`,
/// resolved from the file's module.
fn references(me: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let starts = i == 0 || !ident(bytes[i - 1]);
        if starts && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let path: Vec<&str> = rest[..end].split("::").filter(|s| !s.is_empty()).collect();
            let mut base: Vec<String> = if path[0] == "crate" {
                Vec::new()
            } else {
                // `super` is the parent module, whether the file is a
                // module's `mod.rs` or a module of its own.
                let mut b = me.to_vec();
                b.pop();
                b
            };
            let mut segments = path.iter().skip(1).peekable();
            while segments.peek() == Some(&&"super") {
                base.pop();
                segments.next();
            }
            base.extend(
                segments
                    .take_while(|s| s.chars().next().is_some_and(char::is_lowercase))
                    .map(|s| (*s).to_owned()),
            );
            out.push(base);
            i += end;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// Every `.rs` file of `src/` but the crate roots, in path order, with its
/// module path and its code (comments removed).
fn modules() -> Vec<(PathBuf, Vec<String>, String)> {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|file| {
            let name = file.file_name().unwrap().to_string_lossy();
            name != "main.rs" && name != "lib.rs"
        })
        .map(|file| {
            let me = module_of(&file);
            let text = code(&fs_err::read_to_string(&file).unwrap());
            (file, me, text)
        })
        .collect()
}

/// Whether a file is test code only (`tests.rs`, `*_tests.rs`): tests drive
/// the layers above the module they test, so their imports are no edges of
/// the floor plan.
fn is_test_file(file: &Path) -> bool {
    let stem = file.file_stem().unwrap().to_string_lossy();
    stem == "tests" || stem.ends_with("_tests")
}

/// `code` without its unit tests: everything from a `#[cfg(test)]` that
/// opens a module on the next line (the tests close a file).
fn without_tests(code: &str) -> &str {
    let mut at = 0;
    for line in code.split_inclusive('\n') {
        if line.trim() == "#[cfg(test)]" && code[at + line.len()..].trim_start().starts_with("mod ")
        {
            return &code[..at];
        }
        at += line.len();
    }
    code
}

/// Every use of one module by another: `(user, used, file)`, the module
/// paths as the code names them, once per file and used path. Test code
/// (test files, unit test modules) is left out, and so are paths that name
/// no module of the crate.
fn uses() -> Vec<(Vec<String>, Vec<String>, PathBuf)> {
    let top = declared_modules();
    let mut out = Vec::new();
    for (file, me, code) in modules() {
        if is_test_file(&file) {
            continue;
        }
        let code = without_tests(&code);
        let mut seen = std::collections::BTreeSet::new();
        for used in references(&me, code) {
            if used.first().is_some_and(|m| top.contains(m)) && seen.insert(used.clone()) {
                out.push((me.clone(), used, file.clone()));
            }
        }
    }
    out
}

/// The strongly connected sets of more than one node of the graph `next`
/// (Tarjan's algorithm), each sorted, in the order found.
fn circles(next: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        next: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, v: &'g str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        for u in w.next.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.stack.contains(&u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut set = Vec::new();
            while let Some(u) = w.stack.pop() {
                set.push(u.to_owned());
                if u == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                w.found.push(set);
            }
        }
    }
    let mut walk = Walk {
        next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in next.keys() {
        if !walk.index.contains_key(v.as_str()) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

#[test]
fn circles_are_found() {
    let graph = |edges: &[(&str, &str)]| {
        let mut next: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            next.entry((*a).to_owned())
                .or_default()
                .insert((*b).to_owned());
            next.entry((*b).to_owned()).or_default();
        }
        next
    };
    assert!(circles(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    assert_eq!(
        circles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
    );
    assert_eq!(
        circles(&graph(&[("x", "y"), ("y", "x"), ("p", "q"), ("q", "p")])).len(),
        2
    );
}

#[test]
fn no_circle_of_top_level_modules() {
    let uses = uses();
    let mut next: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (user, used, _) in &uses {
        if let (Some(a), Some(b)) = (user.first(), used.first())
            && a != b
        {
            next.entry(a.clone()).or_default().insert(b.clone());
            next.entry(b.clone()).or_default();
        }
    }
    let problems: Vec<String> = circles(&next)
        .into_iter()
        .map(|set| {
            let within: Vec<String> = uses
                .iter()
                .filter(|(user, used, _)| {
                    user.first() != used.first()
                        && user.first().is_some_and(|m| set.contains(m))
                        && used.first().is_some_and(|m| set.contains(m))
                })
                .map(|(user, used, file)| {
                    format!(
                        "  {}: {} uses {}",
                        file.display(),
                        user.join("::"),
                        used.join("::")
                    )
                })
                .collect();
            format!(
                "a circle of modules: {}\n{}",
                set.join(", "),
                within.join("\n")
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The front ends (they read the command line, stdin or the Action's
/// inputs, run the operation and choose what to show) and what they drive
/// (the operation, deploy's generator): a renderer is given what to show.
const FRONT_ENDS: &[&str] = &["cli", "krm", "job", "api", "operation", "deploy"];

/// The planners: they decide what changes in a file.
const PLANNERS: &[&str] = &["updater", "argocd"];

/// Whether `module` is `prefix` or under it.
fn under(module: &[String], prefix: &str) -> bool {
    module.first().is_some_and(|m| m == prefix)
}

/// Fails with every use `forbidden` picks, each as `FILE: the ROLE USER
/// uses USED`.
fn refuse(role: &str, forbidden: impl Fn(&[String], &[String]) -> bool) {
    let problems: Vec<String> = uses()
        .into_iter()
        .filter(|(user, used, _)| forbidden(user, used))
        .map(|(user, used, file)| {
            format!(
                "{}: the {role} {} uses {}",
                file.display(),
                user.join("::"),
                used.join("::")
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_renderer_imports_a_front_end_or_a_planner() {
    refuse("renderer", |user, used| {
        under(user, "render") && FRONT_ENDS.iter().chain(PLANNERS).any(|m| under(used, m))
    });
}

#[test]
fn the_outcome_imports_no_planner() {
    refuse("outcome", |user, used| {
        under(user, "outcome") && PLANNERS.iter().any(|m| under(used, m))
    });
}

/// The leaves: the vocabulary every module may use. Each imports nothing
/// of the crate but other leaves.
const LEAVES: &[&str] = &[
    "text",
    "object",
    "setter",
    "diagnostic",
    "error",
    "failure",
    "escape",
    "limits",
    "argo_image",
];

#[test]
fn no_leaf_imports_anything_above_the_leaves() {
    refuse("leaf", |user, used| {
        LEAVES.iter().any(|l| under(user, l)) && !LEAVES.iter().any(|l| under(used, l))
    });
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        if name == "main.rs" || name == "lib.rs" {
            continue;
        }
        let me = module_of(file);
        let Some(mine) = layer(&me) else {
            problems.push(format!(
                "{}: no layer for {}",
                file.display(),
                me.join("::")
            ));
            continue;
        };
        let text = fs_err::read_to_string(file).unwrap();
        for used in references(&me, &code(&text)) {
            if let Some(theirs) = layer(&used)
                && theirs > mine
            {
                problems.push(format!(
                    "{}: {} (layer {mine}) uses {} (layer {theirs})",
                    file.display(),
                    me.join("::"),
                    used.join("::")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The top-level modules `src/lib.rs` declares.
fn declared_modules() -> Vec<String> {
    let lib = fs_err::read_to_string(root().join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').to_owned())
        })
        .collect()
}

#[test]
fn every_module_is_on_the_maps() {
    let lib = fs_err::read_to_string(root().join("src/lib.rs")).unwrap();
    let doc: String = lib
        .lines()
        .filter(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let architecture = fs_err::read_to_string(root().join("docs/architecture.md")).unwrap();
    let modules = declared_modules();
    assert!(modules.len() > 10, "{modules:?}");
    for m in &modules {
        assert!(
            doc.contains(&format!("[`{m}`]")),
            "src/lib.rs's map does not name module {m}"
        );
        assert!(
            LAYERS.iter().any(|(l, _)| l == m),
            "module {m} has no layer in tests/architecture.rs"
        );
    }
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    for file in files {
        let rel = file
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let parts = module_of(&file);
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        // A module's file, or its directory for the files under it.
        let dir_entry = parts
            .first()
            .map(|top| format!("`src/{top}/`"))
            .unwrap_or_default();
        let named = architecture.contains(&format!("`{rel}`"))
            || architecture.contains(&format!("`{name}`"))
            || (rel.ends_with("tests.rs") && architecture.contains(&dir_entry));
        assert!(
            named,
            "docs/architecture.md's file map does not name {rel} (as `{rel}` or `{name}`)"
        );
    }
    for (module, _) in LAYERS {
        let path: PathBuf = module.split("::").collect();
        let exists = root().join("src").join(&path).with_extension("rs").exists()
            || root().join("src").join(&path).join("mod.rs").exists();
        assert!(
            exists,
            "tests/architecture.rs names module {module}, which does not exist"
        );
    }
}

/// The longest a function in `src/` may be, in lines from its `fn` line to
/// its closing brace.
const MAX_FUNCTION_LINES: usize = 120;

/// Functions still longer than [`MAX_FUNCTION_LINES`], each with the length
/// it may not exceed: a ratchet that only goes down. Split one and remove it
/// from this list (the test says when); none may be added.
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[
    ("src/argocd/catalog.rs", "collect", 371),
    ("src/cli/job.rs", "config", 283),
    ("src/operation/mod.rs", "run_then", 264),
    ("src/reflector/definitions.rs", "flux_policy", 203),
    ("src/deploy/mod.rs", "generate", 202),
    ("src/job/mod.rs", "run_in", 198),
    ("src/deploy/mod.rs", "fleet_objects", 185),
    ("src/reflector/fetch.rs", "resolve", 178),
    ("src/deploy/mod.rs", "unit", 160),
    ("src/yaml/tree.rs", "parse", 154),
    ("src/reflector/gate.rs", "pass", 146),
    ("src/walk.rs", "walk", 143),
    ("src/sink/dir.rs", "commit_staged", 143),
    ("src/operation/policies.rs", "gather", 141),
    ("src/reflector/selection/select.rs", "filter_tags", 135),
    ("src/create.rs", "image_updater", 131),
    ("src/job/pull_request.rs", "propose", 128),
    (
        "src/reflector/emit.rs",
        "emits_flux_and_kubesphere_policies",
        126,
    ),
    ("src/updater/scan/mod.rs", "event", 124),
    (
        "src/reflector/selection/reflection.rs",
        "flux_digest_reflection_matrix",
        123,
    ),
    ("src/cli/action_pull_request.rs", "job_config", 123),
];

/// The name of the function a line declares (`pub(crate) async fn name<...>(`),
/// if it declares one.
fn declared_function(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end]).filter(|name| !name.is_empty())
}

/// Every function with a body in `text` as (name, first line, lines). The
/// sources are rustfmt's: a body opens on a line at the `fn` line's
/// indentation that ends with `{` (or `{}`), and closes on the first later
/// line that is that indentation and `}`; a line ending with `;` first is a
/// declaration without a body.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = declared_function(line) else {
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        let opening = lines[start..].iter().position(|l| {
            let at_indent = l.starts_with(indent) && !l[indent.len()..].starts_with(' ');
            (std::ptr::eq(*l, *line) || at_indent)
                && (l.ends_with('{') || l.ends_with("{}") || l.ends_with(';'))
        });
        let Some(opening) = opening.map(|o| start + o) else {
            continue;
        };
        if lines[opening].ends_with(';') {
            continue;
        }
        let length = if lines[opening].ends_with("{}") {
            opening - start + 1
        } else {
            let closing = format!("{indent}}}");
            match lines[opening + 1..].iter().position(|l| *l == closing) {
                Some(c) => opening + 1 + c - start + 1,
                None => continue,
            }
        };
        found.push((name.to_owned(), start + 1, length));
    }
    found
}

#[test]
fn functions_are_measured() {
    let text = "fn a() {}\n\
                pub(crate) fn b(\n    x: u8,\n) -> u8 {\n    x\n}\n\
                trait T {\n    fn c(&self);\n    fn d(&self) {\n        let _ = 1;\n    }\n}\n";
    assert_eq!(
        functions(text),
        vec![
            ("a".to_owned(), 1, 1),
            ("b".to_owned(), 2, 5),
            ("d".to_owned(), 9, 3),
        ]
    );
}

#[test]
fn no_function_is_over_the_limit() {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for file in &files {
        let rel = file
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = fs_err::read_to_string(file).unwrap();
        for (name, line, length) in functions(&text) {
            let allowed = LONG_FUNCTIONS
                .iter()
                .find(|(f, n, _)| *f == rel && *n == name)
                .map(|(_, _, l)| *l);
            if allowed.is_some() {
                seen.insert((rel.clone(), name.clone()));
            }
            match allowed {
                Some(limit) if length > limit => problems.push(format!(
                    "{rel}:{line}: {name} has {length} lines, more than the {limit} it had: split it"
                )),
                Some(_) if length <= MAX_FUNCTION_LINES => problems.push(format!(
                    "{rel}:{line}: {name} has {length} lines now: remove it from LONG_FUNCTIONS"
                )),
                None if length > MAX_FUNCTION_LINES => problems.push(format!(
                    "{rel}:{line}: {name} has {length} lines, over {MAX_FUNCTION_LINES}: split it"
                )),
                _ => {}
            }
        }
    }
    for (file, name, _) in LONG_FUNCTIONS {
        if !seen.contains(&((*file).to_owned(), (*name).to_owned())) {
            problems.push(format!(
                "{file}: no function {name}: remove it from LONG_FUNCTIONS"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
