//! Kubernetes and scripts: the Job's status, one JSON object on stdout, and
//! its termination message, the same object cut to fit what Kubernetes
//! keeps. Both are read in a terminal (`kubectl logs`, `kubectl describe
//! pod`): the characters JSON leaves raw that a terminal would act on are
//! written as JSON escapes ([`crate::escape::json`]), the same values.

use super::job_status::Status;

/// The most bytes Kubernetes keeps of a termination message.
pub(crate) const TERMINATION_MESSAGE_LIMIT: usize = 4096;

/// The status as printed on stdout: pretty JSON and a newline.
///
/// # Errors
/// Only if serialisation fails, which plain data does not.
pub(crate) fn json(status: &Status) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(status).map(|text| {
        let mut text = crate::escape::json(text);
        text.push('\n');
        text
    })
}

/// The status, compact, in at most [`TERMINATION_MESSAGE_LIMIT`] bytes:
/// whole when it fits, else without the change report, else without the
/// observed policies, the supply-chain findings and the message, else with
/// the error's message cut to 1 KiB, or shorter until it fits once escaped.
#[must_use]
pub(crate) fn termination_message(status: &Status) -> String {
    let text =
        |brief: &Status| crate::escape::json(serde_json::to_string(brief).unwrap_or_default());
    let mut brief = status.clone();
    let mut out = text(&brief);
    if out.len() > TERMINATION_MESSAGE_LIMIT {
        brief.changes = None;
        out = text(&brief);
    }
    if out.len() > TERMINATION_MESSAGE_LIMIT {
        brief.observed_policies.clear();
        brief.supply_chain.clear();
        brief.commit_message = None;
        out = text(&brief);
    }
    let mut keep = 1024;
    while out.len() > TERMINATION_MESSAGE_LIMIT {
        let Some(error) = &mut brief.error else {
            break;
        };
        if error.message.is_empty() {
            break;
        }
        // A message of escaped characters takes up to six times its bytes.
        let mut end = error.message.len().min(keep);
        while !error.message.is_char_boundary(end) {
            end -= 1;
        }
        error.message.truncate(end);
        keep = end / 2;
        out = text(&brief);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_escapes_what_a_terminal_would_act_on_and_keeps_the_values() {
        let value = "web\n::error::x\u{1b}[2J\u{0}\u{9b}2J\u{202e}end";
        let mut status = Status::failed_with(
            crate::failure::FailureKind::Failed,
            &std::io::Error::other("x"),
        );
        status.commit_message = Some(value.to_owned());
        for text in [json(&status).unwrap(), termination_message(&status)] {
            let raw = |c: char| c != '\n' && crate::escape::escaped(c);
            assert!(!text.contains(raw), "{text}");
            assert!(
                text.contains(r"web\n::error::x\u001b[2J\u0000\u009b2J\u202eend"),
                "{text}"
            );
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(back["commitMessage"], value);
        }
    }

    #[test]
    fn a_termination_message_of_escaped_characters_still_fits() {
        let error = std::io::Error::other("\u{1}".repeat(3000));
        let status = Status::failed_with(crate::failure::FailureKind::Failed, &error);
        let text = termination_message(&status);
        assert!(text.len() <= TERMINATION_MESSAGE_LIMIT, "{}", text.len());
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            back["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("\u{1}")
        );
    }
}
