//! `image-update completions SHELL` and `image-update man [COMMAND]`: shell
//! completion scripts and manual pages.
//!
//! Both are generated at run time from the same clap definition that parses
//! the command line ([`super::Cli`]), so they always list the flags this
//! binary really has; packagers run them once at install time:
//!
//! ```sh
//! image-update completions bash > /usr/share/bash-completion/completions/image-update
//! image-update man > /usr/share/man/man1/image-update.1
//! image-update man update > /usr/share/man/man1/image-update-update.1
//! ```

use std::io::Write;

use clap::CommandFactory;

use super::{Cli, CompletionsArgs, Exit, ManArgs};
use crate::error::Error;

/// The name the binary is installed under, used in the generated scripts.
const BIN: &str = "image-update";

fn stdout_error(source: std::io::Error) -> Error {
    Error::Stdout {
        what: "the generated text",
        source,
    }
}

/// Write `bytes` to stdout.
fn emit(bytes: &[u8]) -> Result<Exit, Error> {
    let mut out = super::stdio::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(stdout_error)?;
    Ok(Exit::Success)
}

/// The completion script for `shell`.
#[must_use]
pub(crate) fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, BIN, &mut out);
    if shell == clap_complete::Shell::Bash {
        out = respell_bash_states(&out);
    }
    out
}

/// clap_complete 4.6 spells a subcommand's state two ways in bash scripts
/// for a binary whose name has a hyphen (clap-rs/clap#6421): the loop over
/// the words typed reaches `image__update__subcmd__update`, but the case
/// arms read `image__subcmd__update__subcmd__update`, so no option of any
/// subcommand would ever complete. The arms are respelled the loop's way;
/// once clap_complete spells them alike this finds nothing to replace.
/// `tests/cli_reference.rs` completes in a real bash to keep this honest.
fn respell_bash_states(script: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(script);
    let wrong = format!("{}__subcmd__", BIN.replace('-', "__subcmd__"));
    let right = format!("{}__subcmd__", BIN.replace('-', "__"));
    text.replace(&wrong, &right).into_bytes()
}

/// The manual page (roff) of the whole program, or of one subcommand
/// (`image-update-update(1)` and so on).
///
/// # Errors
/// [`Error::Usage`] for an unknown subcommand; rendering into memory does
/// not otherwise fail, but its IO error is passed on.
pub(crate) fn man_page(command: Option<&str>) -> Result<Vec<u8>, Error> {
    let mut root = Cli::command();
    root.build();
    let page = match command {
        None => root,
        Some(name) => {
            let names: Vec<String> = root
                .get_subcommands()
                .filter(|c| c.get_name() != "help")
                .map(|c| c.get_name().to_owned())
                .collect();
            // `build` named it: display name `image-update-NAME`, binary
            // name `image-update NAME`.
            // The page's footer shows the program's version.
            root.find_subcommand(name)
                .cloned()
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "no command {name:?}; the manual has pages for {}",
                        names.join(", ")
                    ))
                })?
                .version(super::VERSION)
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(stdout_error)?;
    Ok(out)
}

/// Run `completions`.
///
/// # Errors
/// Only when stdout cannot be written.
pub(crate) fn run_completions(args: &CompletionsArgs) -> Result<Exit, Error> {
    emit(&completion_script(args.shell))
}

/// Run `man`.
///
/// # Errors
/// An unknown subcommand, or stdout that cannot be written.
pub(crate) fn run_man(args: &ManArgs) -> Result<Exit, Error> {
    emit(&man_page(args.command.as_deref())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap_complete::Shell;

    #[test]
    fn bash_states_are_spelled_alike() {
        let script = String::from_utf8(completion_script(Shell::Bash)).unwrap();
        assert!(!script.contains("image__subcmd__update"), "{script}");
        // The loop's spelling and an arm with the same spelling.
        assert!(script.contains("image__update,update)"), "{script}");
        assert!(
            script.contains("cmd=\"image__update__subcmd__update\""),
            "{script}"
        );
        assert!(script.contains("\n        image__update__subcmd__update)\n"));
        // Other shells are left as generated.
        let zsh = String::from_utf8(completion_script(Shell::Zsh)).unwrap();
        let mut command = Cli::command();
        let mut plain = Vec::new();
        clap_complete::generate(Shell::Zsh, &mut command, BIN, &mut plain);
        assert_eq!(zsh.as_bytes(), plain.as_slice());
    }

    #[test]
    fn man_pages_are_roff() {
        let page = String::from_utf8(man_page(None).unwrap()).unwrap();
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
        assert!(page.contains("\n.TH image-update 1 "), "{page}");
        let update = String::from_utf8(man_page(Some("update")).unwrap()).unwrap();
        assert!(update.contains("\n.TH image-update-update 1 "), "{update}");
        assert!(update.contains("selector"), "{update}");
        let err = man_page(Some("nope")).unwrap_err();
        assert!(err.is_usage());
        assert!(
            err.to_string().contains("update, fn, policy, message"),
            "{err}"
        );
    }
}
