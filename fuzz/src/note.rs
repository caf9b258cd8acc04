//! Target `note`: a transparency log checkpoint (signed note). Checks,
//! besides "never panics": an accepted checkpoint's body is the input's
//! prefix up to the blank line and ends with a newline; its first three
//! lines give back the origin, size and root hash; it has 1 to 16
//! signatures; no signature verifies with a key that signed nothing.

use base64::Engine;
use image_update_verify::PublicKey;
use image_update_verify::note::{Checkpoint, MAX_SIGNATURES};

const KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEXBO983V7qNmas2P8371Q85p33WZN
lD47vyupoNCqw/IlxZOw6es4pL3HtudrW1IwBDhlycbPtzuzxoq57mrZng==
-----END PUBLIC KEY-----
";

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cp) = Checkpoint::parse(text) else {
        return;
    };
    assert!(text.starts_with(&cp.body), "body is not a prefix");
    assert!(cp.body.ends_with('\n'));
    assert!(!cp.signatures.is_empty() && cp.signatures.len() <= MAX_SIGNATURES);
    let mut lines = cp.body.lines();
    assert_eq!(lines.next(), Some(cp.origin.as_str()));
    assert_eq!(
        lines.next().and_then(|l| l.parse::<u64>().ok()),
        Some(cp.size)
    );
    assert_eq!(
        lines
            .next()
            .and_then(|l| base64::engine::general_purpose::STANDARD.decode(l).ok()),
        Some(cp.root_hash.clone())
    );
    let key = PublicKey::from_pem(KEY).unwrap_or_else(|e| panic!("the fixed key: {e}"));
    for name in cp.signatures.iter().map(|s| s.name.clone()) {
        assert!(
            !cp.signed_by(&key, &name),
            "a signature verified with an unused key"
        );
    }
}
