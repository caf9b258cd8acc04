//! The floor plan holds: every module of `src/` has a layer, imports nothing
//! from a layer above its own, and appears in the map of `src/lib.rs` and in
//! the file map of `docs/architecture.md`.
//!
//! Layers, lowest first (`docs/architecture.md` explains each):
//! 0 the leaf vocabulary and infrastructure; 1 the domain (policies,
//! automations, the updater, the reflector, the run's outcome); 2 the views
//! the operation writes (the report, the commit message); 3 the operation
//! and deploy's generator;
//! 4 the Job; 5 the front ends' renderers and the KRM function; 6 the
//! command line and the public facade.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::path::{Path, PathBuf};

/// Each module (by path from the crate root) and its layer; a module not
/// listed has its closest listed ancestor's.
const LAYERS: &[(&str, u8)] = &[
    ("text", 0),
    ("object", 0),
    ("setter", 0),
    ("diagnostic", 0),
    ("error", 0),
    ("input", 0),
    ("yaml", 0),
    ("pool", 0),
    ("walk", 0),
    ("sink", 0),
    ("teardown", 0),
    ("policies", 1),
    ("automation", 1),
    ("git_repository", 1),
    ("kubesphere", 1),
    ("create", 1),
    ("updater", 1),
    ("reflector", 1),
    ("argocd", 1),
    ("outcome", 1),
    ("provenance", 1),
    ("render", 2),
    ("render::escape", 0),
    ("render::report", 2),
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
