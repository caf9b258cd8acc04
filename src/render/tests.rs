//! Every audience is told the same warnings: one run that raises every kind
//! of warning the operation can raise over a tree, rendered for the
//! terminal, the ResultV2 report, kpt results and GitHub annotations, must
//! give the same set in each (`tests/warnings.rs` checks the same through
//! the binary).

use std::collections::BTreeSet;
use std::path::Path;

use crate::operation::{self, FetchSettings, Input, PolicyValue, UpdateConfig};
use crate::outcome::Outcome;
use crate::render::kpt::Severity;
use crate::render::report::Report;
use crate::render::{github, kpt, terminal};

/// One warning as every audience can give it: its message (with causes and
/// hint, as the audience words them, normalised here) and its line and
/// column when it has a position.
type Seen = BTreeSet<(String, Option<(usize, usize)>)>;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

/// A tree that raises every kind of warning the operation raises over a
/// tree, and the settings that make it: a policy file that holds no policy,
/// an unparsable definitions file (fetching), a skipped file (not YAML, not
/// UTF-8, UTF-16), a symlink out of the tree, a killed run's journal whose
/// original cannot be put back, and the planned warnings
/// (unknown policy, look-alike marker, marker on a block scalar, downgrade,
/// `:digest` without a digest, a template), and a policy value no marker
/// uses.
pub(crate) fn every_warning(dir: &Path) -> (UpdateConfig, std::path::PathBuf) {
    let tree = dir.join("tree");
    let marker = |p: &str| format!("# {{\"$imagepolicy\": \"{p}\"}}");
    write(
        &tree,
        "apps/deploy.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: apps}}\nspec:\n  a: nginx:1.25.0 {}\n  b: nginx:1.25.0 {}\n  c: nginx:9.0.0 {}\n  d: sha256:00 {}\n  e: |\n    x {}\n  f: nginx:1.0 # {{\"$imagePolicy\": \"ns:p\"}}\n  g: '{{{{ .Values.tag }}}}' {}\n",
            marker("ns:p"),
            marker("ns:unknown"),
            marker("ns:p"),
            marker("ns:p:digest"),
            marker("ns:p"),
            marker("ns:p:tag"),
        ),
    );
    write(
        &tree,
        "apps/broken.yaml",
        &format!("a: [\nb: x {}\n", marker("ns:p")),
    );
    fs_err::write(
        tree.join("apps/latin1.yaml"),
        b"a: caf\xe9 # {\"$imagepolicy\": \"ns:p\"}\n",
    )
    .unwrap();
    let utf16: Vec<u8> = "\u{feff}a: x # {\"$imagepolicy\": \"ns:p\"}\n"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    fs_err::write(tree.join("apps/wide.yaml"), utf16).unwrap();
    write(
        &tree,
        "charts/app/templates/policy.yaml",
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: x}\nspec: {{ .Values.policy }}\n",
    );
    write(
        dir,
        "outside/target.yaml",
        &format!("image: nginx:1.25.0 {}\n", marker("ns:p")),
    );
    std::os::unix::fs::symlink(
        dir.join("outside/target.yaml"),
        tree.join("apps/escape.yaml"),
    )
    .unwrap();
    write(
        dir,
        "not-policies.yaml",
        "apiVersion: v1\nkind: ConfigMap\n",
    );
    // The journal of a run killed during its commit, whose target was
    // changed by someone else since: its original cannot be put back.
    write(&tree, "apps/changed.yaml", "a: 1\n");
    write(
        &tree,
        "apps/.image-update.999999999-0badcafe.0.orig",
        "a: 0\n",
    );
    write(
        &tree,
        ".image-update.999999999-0badcafe.journal",
        &format!(
            "{{\"step\":\"begin\",\"pid\":999999999,\"id\":\"999999999-0badcafe\"}}\n{{\"step\":\"target\",\"n\":0,\"path\":{:?},\"existed\":true}}\n{{\"step\":\"staged\",\"n\":0,\"staged\":[1,1],\"original\":[1,2]}}\n",
            tree.join("apps/changed.yaml").display().to_string()
        ),
    );
    let config = UpdateConfig {
        values: vec![
            PolicyValue::parse("ns:p=nginx:1.27.1", "--policy ns:p").unwrap(),
            PolicyValue::parse("ns:pp=nginx:1.27.1", "--policy ns:pp").unwrap(),
        ],
        policy_files: vec![dir.join("not-policies.yaml")],
        fetch: Some(FetchSettings::default()),
        ..UpdateConfig::default()
    };
    (config, tree)
}

/// The kinds `every_warning` must raise, by a piece of their message.
pub(crate) const KINDS: [&str; 12] = [
    "holds no ImagePolicy",
    "so its definitions are skipped",
    "file is not valid YAML, so it is skipped",
    "not valid UTF-8",
    "only UTF-8 is read",
    "so it is not written",
    "no policy ns:unknown",
    "$imagepolicy",
    "backwards",
    "no digest",
    "changed by someone else meanwhile",
    "is used by no marker",
];

/// `path:line:col: warning: message` and `  hint: ...` lines.
fn from_terminal(text: &str) -> Seen {
    let mut seen = Seen::new();
    let mut last: Option<(String, Option<(usize, usize)>)> = None;
    for line in text.lines() {
        if let Some(hint) = line.strip_prefix("  hint: ") {
            if let Some((m, at)) = last.take() {
                seen.remove(&(m.clone(), at));
                seen.insert((format!("{m}\nhint: {hint}"), at));
            }
            continue;
        }
        // A warning about no place (a flag's value) has no `path:line:col: `.
        let Some((head, message)) = line
            .split_once(": warning: ")
            .or_else(|| line.strip_prefix("warning: ").map(|m| ("", m)))
        else {
            continue;
        };
        let parts: Vec<&str> = head.rsplitn(3, ':').collect();
        let at = match parts.as_slice() {
            [col, line, _] => col.parse().ok().zip(line.parse().ok()).map(|(c, l)| (l, c)),
            _ => None,
        };
        seen.insert((message.to_owned(), at));
        last = Some((message.to_owned(), at));
    }
    seen
}

fn from_report(report: &Report) -> Seen {
    report
        .warnings
        .iter()
        .map(|w| {
            let message = match &w.hint {
                Some(hint) => format!("{}\nhint: {hint}", w.message),
                None => w.message.clone(),
            };
            (message, w.line.zip(w.column))
        })
        .collect()
}

/// `::warning file=F,line=L,col=C::MESSAGE` (escaped).
fn from_github(text: &str) -> Seen {
    text.lines()
        .filter_map(|line| line.strip_prefix("::warning"))
        .map(|rest| {
            let (properties, message) = rest.split_once("::").unwrap();
            let field = |name: &str| {
                properties
                    .trim()
                    .split(',')
                    .find_map(|p| p.strip_prefix(&format!("{name}=")))
                    .and_then(|v| v.parse::<usize>().ok())
            };
            let message = message
                .replace("%0A", "\n")
                .replace("%0D", "\r")
                .replace("%25", "%");
            (message, field("line").zip(field("col")))
        })
        .collect()
}

/// kpt results carry no line (the item's path instead) and no hint.
fn from_kpt(outcome: &Outcome) -> BTreeSet<String> {
    kpt::results(outcome)
        .into_iter()
        .filter(|r| r.severity == Severity::Warning)
        .map(|r| r.message)
        .collect()
}

fn messages(seen: &Seen) -> BTreeSet<String> {
    seen.iter()
        .map(|(m, _)| m.split("\nhint: ").next().unwrap_or(m).to_owned())
        .collect()
}

#[test]
fn every_audience_is_told_every_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (config, tree) = every_warning(dir.path());
    let outcome = operation::run(
        &UpdateConfig {
            mode: crate::outcome::Mode::Apply,
            ..config
        },
        Input::Tree(&tree),
    )
    .unwrap();
    let lines = terminal::Lines {
        quiet: false,
        verbose: false,
        check: false,
        paint: terminal::Paint(false),
    };
    let terminal = from_terminal(&lines.before(&outcome));
    let report = from_report(&outcome.report());
    let github = from_github(&github::log(&outcome, dir.path()));
    let kpt = from_kpt(&outcome);
    let count = outcome.warnings().count();
    assert_eq!(terminal.len(), count, "{terminal:#?}");
    assert_eq!(terminal, report, "terminal and report");
    assert_eq!(terminal, github, "terminal and annotations");
    assert_eq!(messages(&terminal), kpt, "terminal and kpt results");
    for kind in KINDS {
        assert!(
            terminal.iter().any(|(m, _)| m.contains(kind)),
            "no warning mentions {kind:?}: {terminal:#?}"
        );
    }
    // Each warning once, not once per audience: the report's count is the
    // outcome's.
    assert_eq!(outcome.report().warnings.len(), count);
}
