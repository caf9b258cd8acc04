//! Kubernetes and scripts: the Job's status, one JSON object on stdout, and
//! its termination message, the same object cut to fit what Kubernetes
//! keeps.

use crate::job::Status;

/// The most bytes Kubernetes keeps of a termination message.
pub(crate) const TERMINATION_MESSAGE_LIMIT: usize = 4096;

/// The status as printed on stdout: pretty JSON and a newline.
///
/// # Errors
/// Only if serialisation fails, which plain data does not.
pub(crate) fn json(status: &Status) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(status).map(|mut text| {
        text.push('\n');
        text
    })
}

/// The status, compact, in at most [`TERMINATION_MESSAGE_LIMIT`] bytes:
/// whole when it fits, else without the change report, else without the
/// observed policies and the message, else with the error's message cut to
/// 1 KiB.
#[must_use]
pub(crate) fn termination_message(status: &Status) -> String {
    let mut brief = status.clone();
    let mut text = serde_json::to_string(&brief).unwrap_or_default();
    if text.len() > TERMINATION_MESSAGE_LIMIT {
        brief.changes = None;
        text = serde_json::to_string(&brief).unwrap_or_default();
    }
    if text.len() > TERMINATION_MESSAGE_LIMIT {
        brief.observed_policies.clear();
        brief.commit_message = None;
        text = serde_json::to_string(&brief).unwrap_or_default();
    }
    if text.len() > TERMINATION_MESSAGE_LIMIT {
        if let Some(error) = &mut brief.error {
            let mut end = error.message.len().min(1024);
            while !error.message.is_char_boundary(end) {
                end -= 1;
            }
            error.message.truncate(end);
        }
        text = serde_json::to_string(&brief).unwrap_or_default();
    }
    text
}
