//! JSON Web Tokens as the logins need them: reading a token's claims (its
//! `exp`, an Entra token's `tid`) without checking it (the service that
//! issued it checks it; the client only needs to know when to renew it),
//! and signing a Google service-account assertion with RS256 (`ring`,
//! which TLS already links).

use base64::Engine;
use image_update_secret::Secret;

pub(crate) fn b64url(data: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

/// The claims of a compact JWT, unchecked; `None` when it is not one.
pub(crate) fn claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `header.claims.signature`, signed with RS256 by the PEM private key
/// `pem` (PKCS#8, as Google's key files hold it, or PKCS#1).
///
/// # Errors
/// A key that is not an RSA private key, or a failed signature.
pub(crate) fn sign_rs256(
    header: &serde_json::Value,
    claims: &serde_json::Value,
    pem: &Secret,
) -> Result<String, String> {
    use ring::signature::RsaKeyPair;
    let key = ureq::tls::PrivateKey::from_pem(pem.expose().as_bytes())
        .map_err(|_| "private_key is not a PEM private key".to_owned())?;
    // PKCS#8 (Google's key files), else PKCS#1.
    let pair = RsaKeyPair::from_pkcs8(key.der())
        .or_else(|_| RsaKeyPair::from_der(key.der()))
        .map_err(|e| format!("private_key is not a usable RSA key: {e}"))?;
    let input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let mut signature = vec![0; pair.public().modulus_len()];
    pair.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "signing the assertion failed".to_owned())?;
    Ok(format!("{input}.{}", b64url(&signature)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_read_without_a_check() {
        let token = format!(
            "{}.{}.sig",
            b64url(br#"{"alg":"RS256"}"#),
            b64url(br#"{"exp":1700000000,"tid":"t"}"#)
        );
        assert_eq!(claims(&token).unwrap()["exp"], 1_700_000_000);
        assert_eq!(claims("not a token"), None);
        assert_eq!(claims("a.!!!.c"), None);
    }

    #[test]
    fn rs256_signatures_verify() {
        let pem = Secret::new(include_str!("../../testdata/gcp/test-key.pem"));
        let jwt = sign_rs256(
            &serde_json::json!({"alg": "RS256", "typ": "JWT"}),
            &serde_json::json!({"iss": "a@b.iam.gserviceaccount.com"}),
            &pem,
        )
        .unwrap();
        let (input, signature) = jwt.rsplit_once('.').unwrap();
        let key = ureq::tls::PrivateKey::from_pem(pem.expose().as_bytes()).unwrap();
        let pair = ring::signature::RsaKeyPair::from_pkcs8(key.der()).unwrap();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            ring::signature::KeyPair::public_key(&pair)
                .as_ref()
                .to_vec(),
        );
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature)
            .unwrap();
        public.verify(input.as_bytes(), &signature).unwrap();
        assert!(
            sign_rs256(
                &serde_json::json!({}),
                &serde_json::json!({}),
                &Secret::new("x")
            )
            .is_err()
        );
    }
}
