//! `image-update fn`: the KRM function (kpt fn eval / kpt fn render).
//!
//! Reads one ResourceList from stdin and writes one to stdout; see
//! [`crate::krm`]. stdout always gets a complete ResourceList: the whole
//! output is planned before the first byte is written, and a failed write
//! exits 1 (never 0, which kpt would take as "delete everything"). stdin is
//! read up to a limit ([`MAX_INPUT_SIZE`], 1 GiB by default); a larger input
//! is answered with an error result.

use std::io::Write;

use super::Exit;
use crate::error::Error;
use crate::input::{ReadError, SizeLimit, read_capped};
use crate::krm::{self, Output, Response};

/// The environment variable that sets the most bytes read from stdin
/// (default 1 GiB): the function has no flags.
pub const MAX_INPUT_SIZE: &str = "IMAGE_UPDATE_MAX_INPUT_SIZE";

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
    let limit = match std::env::var(MAX_INPUT_SIZE) {
        Ok(v) => match SizeLimit::parse(&v) {
            Ok(limit) => limit,
            Err(e) => return write_response(krm::unreadable(&format!("{MAX_INPUT_SIZE}: {e}"))),
        },
        Err(_) => SizeLimit::RESOURCE_LIST_DEFAULT,
    };
    let mut bytes = Vec::new();
    match read_capped(
        std::io::stdin().lock(),
        "stdin",
        limit,
        "raise it with the environment variable IMAGE_UPDATE_MAX_INPUT_SIZE",
        &mut bytes,
    ) {
        Ok(()) => {}
        Err(e @ ReadError::TooLarge { .. }) => {
            return write_response(krm::unreadable(&e.to_string()));
        }
        Err(e) => return Err(e.into()),
    }
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
