//! Target `certificate`: a signing certificate (DER) as a bundle or an
//! annotation carries it. `read_leaf` reads its key and identity (SAN,
//! Fulcio's issuer extensions); the path check against a trusted root
//! with no authority must refuse it. Checks, besides "never panics": an
//! accepted certificate has a key, and no path is ever found without an
//! authority.

use image_update_verify::{TrustedRoot, cert};

pub fn run(data: &[u8]) {
    if let Ok(leaf) = cert::read_leaf(data) {
        assert!(!leaf.key.spki_der().is_empty());
        assert!(
            leaf.identity
                .subjects
                .iter()
                .all(|s| !s.contains('\0') || s.len() < 1 << 16)
        );
    }
    let empty = TrustedRoot::default();
    assert!(cert::verify_path(data, &empty, 1_700_000_000).is_err());
}
