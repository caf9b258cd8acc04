//! `image-update fn`: the KRM function (kpt fn eval / kpt fn render).
//!
//! Reads one ResourceList from stdin and writes one to stdout; see
//! [`crate::krm`]. stdout always gets a complete ResourceList: the whole
//! output is planned before the first byte is written, and a failed write
//! exits 1 (never 0, which kpt would take as "delete everything").

use std::io::{Read, Write};

use super::Exit;
use crate::error::Error;
use crate::krm::{self, Output, Response};

/// Run the function on stdin.
///
/// # Errors
/// A terminal on stdin (usage), stdin that cannot be read, stdout that
/// cannot be written.
pub fn run() -> Result<Exit, Error> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Err(Error::Usage(
            "image-update fn reads a ResourceList on stdin: pipe one in, or run it from kpt \
             (see image-update fn --help)"
                .to_owned(),
        ));
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot read stdin: {e}")))?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let message = format!(
                "input is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            );
            return write_response(krm::not_utf8(&message));
        }
    };
    write_response(krm::process(&text))
}

fn write_response(mut response: Response<'_>) -> Result<Exit, Error> {
    let pieces = response
        .output
        .pieces()
        .map_err(|e| Error::Internal(e.to_string()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    pieces
        .iter()
        .try_for_each(|p| out.write_all(p.as_bytes()))
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the ResourceList",
            source,
        })?;
    if matches!(response.output, Output::Fresh(_)) || response.failed {
        Ok(Exit::Failed)
    } else {
        Ok(Exit::Success)
    }
}
