//! SSH host key checking against a `known_hosts` text, as Flux's Secrets carry it.
//!
//! The Job must check the key an SSH server presents against the `known_hosts` it was given (not
//! a user's `~/.ssh/known_hosts`, absent in a container), so a man in the middle cannot collect
//! pushes; the SSH transport asks [`KnownHosts::check`] before it authenticates. The text format is
//! OpenSSH's: plain host patterns with `*`/`?` globs and `!` negation, `[host]:port` for other
//! ports, hashed `|1|salt|hash` names (HMAC-SHA1 of the host), and `@revoked` markers.
//! ssh-key parses the lines; matching hosts and keys is done here because ssh-key does not do it.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use ssh_key::known_hosts::{Entry, HostPatterns, Marker};

use crate::error::Error;

/// How the server's SSH host key is checked.
#[derive(Debug, Clone)]
pub enum HostKeyCheck {
    /// Accept only keys listed for the host in this `known_hosts` text (the default, with an
    /// empty list: every SSH connection fails until known hosts are given).
    KnownHosts(KnownHosts),
    /// Accept any host key. An explicit opt-out for tests and trusted networks.
    AcceptAny,
}

impl Default for HostKeyCheck {
    fn default() -> Self {
        Self::KnownHosts(KnownHosts::default())
    }
}

/// Parsed `known_hosts` entries.
#[derive(Debug, Clone, Default)]
pub struct KnownHosts {
    entries: Vec<Entry>,
}

/// Why a host key was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyProblem {
    /// No `known_hosts` entry names the host.
    UnknownHost,
    /// Entries name the host, but none holds the presented key.
    Mismatch {
        /// Key types listed for the host.
        known_types: Vec<String>,
    },
    /// The presented key is listed as `@revoked`.
    Revoked,
}

/// The key a server presented, for messages: its type and OpenSSH-style SHA-256 fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedKey {
    /// Key type name, e.g. `ssh-ed25519`.
    pub key_type: String,
    /// `SHA256:` followed by unpadded base64, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
}

impl fmt::Display for PresentedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.key_type, self.fingerprint)
    }
}

impl KnownHosts {
    /// Parses a `known_hosts` text. Blank lines and `#` comments are skipped; a line that does not
    /// parse is an error naming its line number.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut entries = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.split_once('#').map_or(raw, |(before, _)| before).trim();
            if line.is_empty() {
                continue;
            }
            let entry = line.parse::<Entry>().map_err(|source| Error::KnownHosts {
                line: index + 1,
                source,
            })?;
            entries.push(entry);
        }
        Ok(Self { entries })
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks the key blob (SSH wire encoding) a server at `host`/`port` presented.
    pub(crate) fn check(
        &self,
        host: &str,
        port: Option<u16>,
        blob_sha256: &[u8; 32],
    ) -> Result<(), HostKeyProblem> {
        let name = host_lookup_name(host, port);
        let mut known_types = Vec::new();
        let mut matched = false;
        for entry in &self.entries {
            if !patterns_match(entry.host_patterns(), &name) {
                continue;
            }
            let same_key = entry
                .public_key()
                .to_bytes()
                .is_ok_and(|blob| Sha256::digest(&blob).as_slice() == blob_sha256);
            match entry.marker() {
                Some(Marker::Revoked) if same_key => return Err(HostKeyProblem::Revoked),
                // Host certificates are not supported; such lines cannot vouch for a plain key.
                Some(Marker::Revoked | Marker::CertAuthority) => {}
                None if same_key => matched = true,
                None => known_types.push(entry.public_key().algorithm().as_str().to_owned()),
            }
        }
        if matched {
            Ok(())
        } else if known_types.is_empty() {
            Err(HostKeyProblem::UnknownHost)
        } else {
            known_types.sort();
            known_types.dedup();
            Err(HostKeyProblem::Mismatch { known_types })
        }
    }
}

/// OpenSSH's name for a host in `known_hosts`: `host`, or `[host]:port` off port 22.
fn host_lookup_name(host: &str, port: Option<u16>) -> String {
    match port {
        Some(port) if port != 22 => format!("[{host}]:{port}"),
        _ => host.to_owned(),
    }
}

fn patterns_match(patterns: &HostPatterns, name: &str) -> bool {
    match patterns {
        HostPatterns::HashedName { salt, hash } => {
            let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(salt) else {
                return false;
            };
            mac.update(name.as_bytes());
            mac.verify_slice(hash).is_ok()
        }
        HostPatterns::Patterns(list) => {
            let name = name.to_ascii_lowercase();
            let mut positive = false;
            for pattern in list {
                let pattern = pattern.to_ascii_lowercase();
                if let Some(negated) = pattern.strip_prefix('!') {
                    if glob(negated.as_bytes(), name.as_bytes()) {
                        return false;
                    }
                } else if glob(pattern.as_bytes(), name.as_bytes()) {
                    positive = true;
                }
            }
            positive
        }
    }
}

/// OpenSSH host pattern globbing: `*` any run, `?` one character.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match (pattern.first(), text.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], text) || (!text.is_empty() && glob(pattern, &text[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &text[1..]),
        (Some(p), Some(t)) if p == t => glob(&pattern[1..], &text[1..]),
        _ => false,
    }
}

/// The type name and `SHA256:` fingerprint of a key from its SHA-256 digest.
pub(crate) fn presented_key(key_type: &str, blob_sha256: &[u8; 32]) -> PresentedKey {
    PresentedKey {
        key_type: key_type.to_owned(),
        fingerprint: format!("SHA256:{}", STANDARD_NO_PAD.encode(blob_sha256)),
    }
}

impl fmt::Display for HostKeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownHost => f.write_str("the host is not in known_hosts"),
            Self::Mismatch { known_types } => write!(
                f,
                "it does not match the key(s) known_hosts lists for the host ({})",
                known_types.join(", ")
            ),
            Self::Revoked => f.write_str("known_hosts marks this key @revoked"),
        }
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use hmac::{Hmac, Mac};
    use sha1::Sha1;
    use sha2::{Digest, Sha256};

    use super::{HostKeyProblem, KnownHosts, glob};
    use crate::error::Error;

    const KEY_A: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK5We4p+LbzKnVY6C/HBp+/Ob2kXjSpPUWQIludlraKa";
    const KEY_B: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFU+DXKlY9Mqt4iGrZ3CZZBifjq9gRClwylNFhhMqhwC";

    fn digest(key: &str) -> [u8; 32] {
        let blob = STANDARD.decode(key.split(' ').nth(1).unwrap()).unwrap();
        Sha256::digest(blob).into()
    }

    fn hashed(host: &str, salt: &[u8]) -> String {
        let mut mac = Hmac::<Sha1>::new_from_slice(salt).unwrap();
        mac.update(host.as_bytes());
        format!(
            "|1|{}|{}",
            STANDARD.encode(salt),
            STANDARD.encode(mac.finalize().into_bytes())
        )
    }

    #[test]
    fn plain_hashed_and_bracketed_entries_match() {
        let text = format!(
            "# comment\n\ngithub.com,*.example.org {KEY_A}\n[127.0.0.1]:2222 {KEY_B}\n{} {KEY_B}\n",
            hashed("gitlab.com", b"0123456789abcdefghij")
        );
        let known = KnownHosts::parse(&text).unwrap();
        assert_eq!(known.len(), 3);
        assert_eq!(known.check("github.com", None, &digest(KEY_A)), Ok(()));
        assert_eq!(
            known.check("git.example.org", Some(22), &digest(KEY_A)),
            Ok(())
        );
        assert_eq!(known.check("127.0.0.1", Some(2222), &digest(KEY_B)), Ok(()));
        assert_eq!(known.check("gitlab.com", None, &digest(KEY_B)), Ok(()));
        assert_eq!(
            known.check("127.0.0.1", None, &digest(KEY_B)),
            Err(HostKeyProblem::UnknownHost)
        );
        assert_eq!(
            known.check("github.com", None, &digest(KEY_B)),
            Err(HostKeyProblem::Mismatch {
                known_types: vec!["ssh-ed25519".to_owned()]
            })
        );
    }

    #[test]
    fn negation_and_revocation() {
        let text = format!(
            "*.example.org,!evil.example.org {KEY_A}\n@revoked * {KEY_B}\ngit.example.org {KEY_B}\n"
        );
        let known = KnownHosts::parse(&text).unwrap();
        assert_eq!(
            known.check("evil.example.org", None, &digest(KEY_A)),
            Err(HostKeyProblem::UnknownHost)
        );
        assert_eq!(
            known.check("git.example.org", None, &digest(KEY_B)),
            Err(HostKeyProblem::Revoked)
        );
    }

    #[test]
    fn a_bad_line_is_reported_with_its_number() {
        let err = KnownHosts::parse(&format!("github.com {KEY_A}\n\ngarbage line\n")).unwrap_err();
        assert!(matches!(err, Error::KnownHosts { line: 3, .. }), "{err:?}");
    }

    #[test]
    fn globbing() {
        assert!(glob(b"*.example.org", b"a.example.org"));
        assert!(glob(b"host?", b"host1"));
        assert!(!glob(b"host?", b"host"));
        assert!(!glob(b"*.example.org", b"example.org"));
    }
}
