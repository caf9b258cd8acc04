//! The reference material the binary prints: `completions SHELL`, `man
//! [COMMAND]` and `--version`, run as a user would; and the `LICENSE` file.
//!
//! The bash trial sources the script in a real bash and asks it to
//! complete; the man trial renders every page with groff and fails on any
//! warning; the version trial, built from a git checkout, asks git for the
//! commit. Each is ignored, with the reason, when its program is missing,
//! and fails then when `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use image_update_testkit::{self as testkit, Unmet, trial};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const SUBCOMMANDS: [&str; 6] = ["update", "fn", "policy", "message", "completions", "man"];

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn every_shell_script_names_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&["completions", shell]);
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: {sub} missing");
        }
        // fish writes `-l selector`, the others `--selector`.
        for flag in ["selector", "semver", "platform", "report-format"] {
            assert!(script.contains(flag), "{shell}: {flag} missing");
        }
    }
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Runs the completion function the script registers for `image-update`
/// (`complete -F FUNCTION image-update`) for the words typed so far, as
/// bash calls it: `FUNCTION COMMAND CURRENT_WORD PREVIOUS_WORD`.
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let program = format!(
        "source '{script}'\nCOMP_WORDS=({words})\nCOMP_CWORD={cword}\nCOMP_LINE='{line}'\n\
         COMP_POINT=${{#COMP_LINE}}\nset -- $(complete -p image-update)\n\
         while [ \"$1\" != -F ]; do shift; done\n\
         \"$2\" image-update {current} {previous}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = script.display(),
        words = quoted.join(" "),
        line = words.join(" "),
        current = quoted[cword],
        previous = quoted[cword.saturating_sub(1)],
    );
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &program])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn bash_completes_subcommands_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("image-update.bash");
    fs_err::write(&script, stdout(&["completions", "bash"])).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    let words = bash_complete(&script, &["image-update", ""]);
    for sub in SUBCOMMANDS {
        assert!(words.iter().any(|w| w == sub), "{sub} not in {words:?}");
    }
    assert_eq!(
        bash_complete(&script, &["image-update", "comp"]),
        ["completions"]
    );
    // Options of subcommands, and their values.
    let flags = bash_complete(&script, &["image-update", "update", "--sel"]);
    assert_eq!(flags, ["--selector"]);
    let flags = bash_complete(&script, &["image-update", "policy", "--newest"]);
    assert_eq!(flags, ["--newest-build"]);
    let formats = bash_complete(&script, &["image-update", "update", "--report-format", ""]);
    assert_eq!(formats, ["json", "yaml"]);
    let shells = bash_complete(&script, &["image-update", "completions", ""]);
    for shell in ["bash", "zsh", "fish"] {
        assert!(
            shells.iter().any(|w| w == shell),
            "{shell} not in {shells:?}"
        );
    }
}

fn man_pages_render_without_warnings() {
    let mut pages = vec![(None, "image-update".to_owned())];
    pages.extend(
        SUBCOMMANDS
            .iter()
            .map(|s| (Some(*s), format!("image-update-{s}"))),
    );
    for (command, title) in pages {
        let mut args = vec!["man"];
        args.extend(command);
        let page = stdout(&args);
        assert!(
            page.lines()
                .any(|l| l.starts_with(&format!(".TH {title} 1 "))),
            "{args:?}: no .TH header for {title}\n{page}"
        );
        assert!(page.contains("\n.SH NAME\n"), "{args:?}");
        assert!(page.contains("\n.SH SYNOPSIS\n"), "{args:?}");
        // -ww: every warning; -z: parse and format, print nothing.
        let mut groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(groff.stdin.as_mut().unwrap(), page.as_bytes()).unwrap();
        let out = groff.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "{args:?}: groff warnings"
        );
        // And the text a reader sees names what the page is about.
        let text = Command::new("groff")
            .args(["-man", "-Tutf8"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut text = text;
        std::io::Write::write_all(text.stdin.as_mut().unwrap(), page.as_bytes()).unwrap();
        let rendered = String::from_utf8_lossy(&text.wait_with_output().unwrap().stdout)
            .replace(['\u{2010}', '\u{2212}'], "-");
        let plain = strip_overstrike(&rendered);
        assert!(plain.contains(&title), "{args:?}: {plain}");
    }
    let out = run(&["man", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no command \"nope\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// groff's terminal output marks bold as `c\bc` and underline as `_\bc`.
fn strip_overstrike(text: &str) -> String {
    let mut out: Vec<char> = Vec::new();
    for c in text.chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out.into_iter().collect()
}

/// Whether the crate is built from a git checkout (a `.git` directory, or
/// the `.git` file of a worktree), as `build.rs` decides; git is then
/// needed to know the commit `--version` must name.
fn checkout() -> Result<bool, Unmet> {
    if Path::new(env!("CARGO_MANIFEST_DIR")).join(".git").exists() {
        Unmet::programs(&["git"])?;
        Ok(true)
    } else {
        Ok(false)
    }
}

/// From a checkout, `--version` names its commit and the commit's date;
/// from anything else (a crate tarball), the plain version.
fn version_names_the_commit_of_a_checkout(checkout: bool) {
    let version = stdout(&["--version"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let expected = if checkout {
        format!(
            "image-update {} (commit {}, {})\n",
            env!("CARGO_PKG_VERSION"),
            git(&["rev-parse", "--short=7", "HEAD"]),
            git(&["log", "-1", "--format=%cd", "--date=short", "HEAD"])
        )
    } else {
        format!("image-update {}\n", env!("CARGO_PKG_VERSION"))
    };
    assert_eq!(version, expected);
    assert_eq!(stdout(&["-V"]), version);
}

/// `LICENSE` is the Apache License 2.0, word for word (the SHA-256 of the
/// text the Apache Software Foundation publishes), as `Cargo.toml` says.
fn license_is_apache_2() {
    use sha2::Digest as _;
    let text = fs_err::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("LICENSE")).unwrap();
    let digest: String = sha2::Sha256::digest(&text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        digest,
        "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
    );
    assert_eq!(env!("CARGO_PKG_LICENSE"), "Apache-2.0");
}

fn main() {
    testkit::run(vec![
        trial(
            "every_shell_script_names_the_subcommands",
            &[],
            every_shell_script_names_the_subcommands,
        ),
        trial(
            "bash_completes_subcommands_and_flags",
            &["bash"],
            bash_completes_subcommands_and_flags,
        ),
        trial(
            "man_pages_render_without_warnings",
            &["groff"],
            man_pages_render_without_warnings,
        ),
        trial("license_is_apache_2", &[], license_is_apache_2),
        testkit::gated(
            "version_names_the_commit_of_a_checkout",
            checkout,
            |checkout| {
                version_names_the_commit_of_a_checkout(checkout);
                Ok(())
            },
        ),
    ]);
}
