//! `image-update fn`: the KRM function (kpt fn eval / kpt fn render).
//!
//! Reads one ResourceList from stdin and writes one to stdout; see
//! [`crate::krm`]. stdout always gets a complete ResourceList: the
//! whole output is planned before the first byte is written, and a failed
//! write exits 1 (never 0, which kpt would take as "delete everything").

use std::io::{Read, Write};

use anyhow::anyhow;

use super::{Exit, UsageError};
use crate::krm::{self, Output};

/// Run the function on stdin.
///
/// # Errors
/// When stdout cannot be written (the message carries no IO error, so the
/// exit status is 1 even for a closed pipe).
pub fn run() -> anyhow::Result<Exit> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Err(UsageError(
            "image-update fn reads a ResourceList on stdin: pipe one in, or run it from kpt \
             (see image-update fn --help)"
                .to_owned(),
        )
        .into());
    }
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
        return Err(anyhow!("cannot read the ResourceList from stdin: {e}"));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let message = format!(
                "input is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            );
            return write_outcome(krm::not_utf8(&message));
        }
    };
    write_outcome(krm::process(&text))
}

fn write_outcome(mut outcome: krm::Outcome<'_>) -> anyhow::Result<Exit> {
    let pieces = outcome
        .output
        .pieces()
        .map_err(|e| anyhow!("internal error: {e}"))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = pieces
        .iter()
        .try_for_each(|p| out.write_all(p.as_bytes()))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        return Err(anyhow!("cannot write the ResourceList to stdout: {e}"));
    }
    if matches!(outcome.output, Output::Fresh(_)) || outcome.failed {
        Ok(Exit::Failed)
    } else {
        Ok(Exit::Success)
    }
}
