//! Signed checkpoints: the transparency log's signed tree heads, in the
//! signed-note format (a text body, a blank line, then one signature line
//! per signer: `— NAME BASE64(KEY_HINT[4] || SIGNATURE)`).
//!
//! The body's first three lines are the log's origin, the tree size and
//! the base64 root hash; further lines are extensions and are ignored.

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::keys::PublicKey;

/// Largest checkpoint read.
pub const MAX_NOTE: usize = 16 * 1024;
/// Most signature lines read.
pub const MAX_SIGNATURES: usize = 16;

/// A parsed checkpoint (signatures not yet verified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The signed text: every line of the body, each ending in `\n`.
    pub body: String,
    pub origin: String,
    pub size: u64,
    pub root_hash: Vec<u8>,
    pub signatures: Vec<NoteSignature>,
}

/// One signature line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    pub name: String,
    pub hint: [u8; 4],
    pub signature: Vec<u8>,
}

impl Checkpoint {
    /// Parses a checkpoint.
    ///
    /// # Errors
    /// A message naming what is malformed.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_NOTE {
            return Err(format!("checkpoint larger than {MAX_NOTE} bytes"));
        }
        let split = text
            .find("\n\n")
            .ok_or("checkpoint has no blank line before its signatures")?;
        let body = &text[..=split];
        let sigs = &text[split + 2..];
        let mut lines = body.lines();
        let origin = lines
            .next()
            .filter(|l| !l.is_empty())
            .ok_or("checkpoint has no origin line")?;
        let size = lines
            .next()
            .and_then(|l| {
                (!l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| l.parse::<u64>().ok())
                    .flatten()
            })
            .ok_or("checkpoint tree size is not a number")?;
        let root_hash = lines
            .next()
            .and_then(|l| base64::engine::general_purpose::STANDARD.decode(l).ok())
            .filter(|h| h.len() == 32)
            .ok_or("checkpoint root hash is not 32 bytes of base64")?;
        if !sigs.ends_with('\n') {
            return Err("checkpoint does not end with a newline".to_owned());
        }
        let mut signatures = Vec::new();
        for line in sigs.lines() {
            if signatures.len() == MAX_SIGNATURES {
                return Err(format!("more than {MAX_SIGNATURES} checkpoint signatures"));
            }
            let rest = line
                .strip_prefix("\u{2014} ")
                .ok_or("checkpoint signature line does not start with an em dash")?;
            let (name, encoded) = rest
                .split_once(' ')
                .filter(|(n, e)| !n.is_empty() && !e.contains(' '))
                .ok_or("checkpoint signature line is not `— NAME SIGNATURE`")?;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|_| "checkpoint signature is not base64")?;
            if raw.len() < 5 {
                return Err("checkpoint signature is too short".to_owned());
            }
            let mut hint = [0u8; 4];
            hint.copy_from_slice(&raw[..4]);
            signatures.push(NoteSignature {
                name: name.to_owned(),
                hint,
                signature: raw[4..].to_vec(),
            });
        }
        if signatures.is_empty() {
            return Err("checkpoint has no signature".to_owned());
        }
        Ok(Self {
            body: body.to_owned(),
            origin: origin.to_owned(),
            size,
            root_hash,
            signatures,
        })
    }

    /// Whether a signature line whose key hint names `key`, and whose
    /// signer name is part of the log's `base_url` (a log signs with its
    /// host name), verifies the body with it.
    pub fn signed_by(&self, key: &PublicKey, base_url: &str) -> bool {
        self.signatures.iter().any(|s| {
            base_url.contains(&s.name)
                && key_hints(key, &s.name).contains(&s.hint)
                && key.verify(self.body.as_bytes(), &s.signature)
        })
    }
}

/// The key hints a signature line by `key` may carry: the first four bytes
/// of SHA-256 of the key's DER (Rekor's ECDSA checkpoints), and of the
/// signed-note key hash `name \n 0x01 key` (Ed25519 notes).
pub fn key_hints(key: &PublicKey, name: &str) -> Vec<[u8; 4]> {
    let first4 = |d: &[u8]| {
        let mut h = [0u8; 4];
        h.copy_from_slice(&d[..4]);
        h
    };
    let mut hints = vec![first4(&Sha256::digest(key.spki_der()))];
    if key.algorithm() == "Ed25519" && key.spki_der().len() >= 32 {
        let raw = &key.spki_der()[key.spki_der().len() - 32..];
        let mut h = Sha256::new();
        h.update(name.as_bytes());
        h.update(b"\n\x01");
        h.update(raw);
        hints.push(first4(&h.finalize()));
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let root = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let sig = base64::engine::general_purpose::STANDARD.encode([1u8, 2, 3, 4, 5, 6]);
        let text = format!("log - 1\n12\n{root}\nextra\n\n\u{2014} log {sig}\n");
        let c = Checkpoint::parse(&text).unwrap();
        assert_eq!(c.origin, "log - 1");
        assert_eq!(c.size, 12);
        assert_eq!(c.root_hash, vec![7u8; 32]);
        assert_eq!(c.body, format!("log - 1\n12\n{root}\nextra\n"));
        assert_eq!(c.signatures[0].hint, [1, 2, 3, 4]);
        assert_eq!(c.signatures[0].signature, vec![5, 6]);
        for bad in [
            format!("log\n12\n{root}\n\u{2014} log {sig}\n"),
            format!("log\n-1\n{root}\n\n\u{2014} log {sig}\n"),
            format!("log\n12\nAAAA\n\n\u{2014} log {sig}\n"),
            format!("log\n12\n{root}\n\n- log {sig}\n"),
            format!("log\n12\n{root}\n\n\u{2014} log {sig}"),
            format!("log\n12\n{root}\n\n"),
            format!("\n12\n{root}\n\n\u{2014} log {sig}\n"),
            format!("log\n12\n{root}\n\n\u{2014} log AQ==\n"),
        ] {
            assert!(Checkpoint::parse(&bad).is_err(), "{bad:?}");
        }
    }
}
