//! Public keys: a signer's key (PEM), a certificate's key, a transparency
//! log's key. ECDSA P-256 and P-384, Ed25519 and RSA, read from their
//! SubjectPublicKeyInfo.

use std::fmt;

use p256::pkcs8::DecodePublicKey;
use sha2::{Digest, Sha256, Sha384, Sha512};

use spki::der::Decode;

/// A verifying key.
#[derive(Clone)]
pub struct PublicKey {
    kind: Kind,
    /// The DER SubjectPublicKeyInfo it was read from.
    spki: Vec<u8>,
    /// Its subjectPublicKey bits (an EC point, an Ed25519 key, a PKCS#1
    /// RSA key): what ring verifies with.
    raw: Vec<u8>,
}

#[derive(Clone)]
enum Kind {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
    /// Checked to be a valid point when read; verified by ring.
    Ed25519,
    Rsa(Box<rsa::RsaPublicKey>),
}

/// Which hash a prehashed message signature used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlg {
    Sha256,
    Sha384,
    Sha512,
}

/// Why a key cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

const OID_EC: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_P384: &str = "1.3.132.0.34";
const OID_ED25519: &str = "1.3.101.112";
const OID_RSA: &str = "1.2.840.113549.1.1.1";

impl PublicKey {
    /// Reads a DER SubjectPublicKeyInfo.
    ///
    /// # Errors
    /// An algorithm other than ECDSA P-256/P-384, Ed25519 or RSA, or a
    /// malformed key.
    pub fn from_spki_der(der: &[u8]) -> Result<Self, KeyError> {
        let info = spki::SubjectPublicKeyInfoRef::from_der(der)
            .map_err(|e| KeyError(format!("not a SubjectPublicKeyInfo: {e}")))?;
        let alg = info.algorithm.oid.to_string();
        let bad = |e: &dyn fmt::Display| KeyError(format!("invalid public key: {e}"));
        let kind = match alg.as_str() {
            OID_EC => {
                let curve = info
                    .algorithm
                    .parameters_oid()
                    .map_err(|e| bad(&e))?
                    .to_string();
                match curve.as_str() {
                    OID_P256 => Kind::P256(
                        p256::ecdsa::VerifyingKey::from_public_key_der(der).map_err(|e| bad(&e))?,
                    ),
                    OID_P384 => Kind::P384(
                        p384::ecdsa::VerifyingKey::from_public_key_der(der).map_err(|e| bad(&e))?,
                    ),
                    other => {
                        return Err(KeyError(format!(
                            "unsupported elliptic curve {other} (P-256 and P-384 are supported)"
                        )));
                    }
                }
            }
            OID_ED25519 => {
                ed25519_dalek::VerifyingKey::from_public_key_der(der).map_err(|e| bad(&e))?;
                Kind::Ed25519
            }
            OID_RSA => {
                let key = rsa::RsaPublicKey::from_public_key_der(der).map_err(|e| bad(&e))?;
                if rsa::traits::PublicKeyParts::size(&key) < 256 {
                    return Err(KeyError(
                        "RSA keys shorter than 2048 bits are refused".into(),
                    ));
                }
                Kind::Rsa(Box::new(key))
            }
            other => {
                return Err(KeyError(format!(
                    "unsupported key algorithm {other} (ECDSA P-256/P-384, Ed25519 and RSA are supported)"
                )));
            }
        };
        let raw = info
            .subject_public_key
            .as_bytes()
            .ok_or_else(|| KeyError("the key's bit string is not whole bytes".into()))?
            .to_vec();
        Ok(Self {
            kind,
            spki: der.to_vec(),
            raw,
        })
    }

    /// Reads a PEM `PUBLIC KEY` block (the format of `cosign.pub`).
    ///
    /// # Errors
    /// No `PUBLIC KEY` block, or as [`Self::from_spki_der`].
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        let der = pem_blocks(pem.as_bytes(), "PUBLIC KEY")
            .into_iter()
            .next()
            .ok_or_else(|| KeyError("no PEM PUBLIC KEY block".into()))?;
        Self::from_spki_der(&der)
    }

    /// The DER SubjectPublicKeyInfo.
    pub fn spki_der(&self) -> &[u8] {
        &self.spki
    }

    /// `sha256:` + hex of the SHA-256 of the DER SubjectPublicKeyInfo (the
    /// key's fingerprint, and a transparency log's ID).
    pub fn fingerprint(&self) -> String {
        format!("sha256:{}", hex(&Sha256::digest(&self.spki)))
    }

    /// The algorithm, for messages: `ECDSA P-256`, `Ed25519`, `RSA`.
    pub fn algorithm(&self) -> &'static str {
        match self.kind {
            Kind::P256(_) => "ECDSA P-256",
            Kind::P384(_) => "ECDSA P-384",
            Kind::Ed25519 => "Ed25519",
            Kind::Rsa(_) => "RSA",
        }
    }

    /// Verifies `sig` over `message`, with the hash cosign uses for the key:
    /// SHA-256 for P-256; SHA-384 for P-384 (and SHA-256, cosign's default
    /// for every imported key); Ed25519 over the message itself; RSA
    /// PKCS#1 v1.5 with SHA-256, SHA-384 or SHA-512, or PSS with SHA-256.
    /// ECDSA signatures are ASN.1 DER.
    ///
    /// Verification of whole messages goes through ring (already linked for
    /// TLS, and several times faster than the portable implementations,
    /// which a keyless check needs five times); digests through RustCrypto.
    pub fn verify(&self, message: &[u8], sig: &[u8]) -> bool {
        use ring::signature as r;
        let with = |alg: &'static dyn r::VerificationAlgorithm| {
            r::UnparsedPublicKey::new(alg, &self.raw)
                .verify(message, sig)
                .is_ok()
        };
        match &self.kind {
            Kind::Ed25519 => with(&r::ED25519),
            Kind::P256(_) => with(&r::ECDSA_P256_SHA256_ASN1),
            Kind::P384(_) => with(&r::ECDSA_P384_SHA384_ASN1) || with(&r::ECDSA_P384_SHA256_ASN1),
            Kind::Rsa(_) => {
                with(&r::RSA_PKCS1_2048_8192_SHA256)
                    || with(&r::RSA_PKCS1_2048_8192_SHA384)
                    || with(&r::RSA_PKCS1_2048_8192_SHA512)
                    || with(&r::RSA_PSS_2048_8192_SHA256)
            }
        }
    }

    /// Verifies `sig` over a message known only by its `digest` (a bundle's
    /// message signature). Ed25519 cannot verify a digest: false.
    pub fn verify_prehash(&self, alg: HashAlg, digest: &[u8], sig: &[u8]) -> bool {
        use p256::ecdsa::signature::hazmat::PrehashVerifier;
        let expected_len = match alg {
            HashAlg::Sha256 => 32,
            HashAlg::Sha384 => 48,
            HashAlg::Sha512 => 64,
        };
        if digest.len() != expected_len {
            return false;
        }
        match &self.kind {
            Kind::P256(k) => {
                alg == HashAlg::Sha256
                    && p256::ecdsa::Signature::from_der(sig)
                        .is_ok_and(|s| k.verify_prehash(digest, &s).is_ok())
            }
            Kind::P384(k) => {
                alg != HashAlg::Sha512
                    && p384::ecdsa::Signature::from_der(sig)
                        .is_ok_and(|s| k.verify_prehash(digest, &s).is_ok())
            }
            Kind::Ed25519 => false,
            Kind::Rsa(k) => {
                let pkcs1 = match alg {
                    HashAlg::Sha256 => rsa::Pkcs1v15Sign::new::<Sha256>(),
                    HashAlg::Sha384 => rsa::Pkcs1v15Sign::new::<Sha384>(),
                    HashAlg::Sha512 => rsa::Pkcs1v15Sign::new::<Sha512>(),
                };
                if k.verify(pkcs1, digest, sig).is_ok() {
                    return true;
                }
                alg == HashAlg::Sha256 && k.verify(rsa::Pss::new::<Sha256>(), digest, sig).is_ok()
            }
        }
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({} {})", self.algorithm(), self.fingerprint())
    }
}

/// The contents of every PEM block labelled `label` in `text` (blocks that
/// do not decode are left out). Written here: RFC 7468's armour is a few
/// lines of base64 between two marker lines, and the PEM crates in the tree
/// read one block, where chains and annotations hold several.
pub(crate) fn pem_blocks(text: &[u8], label: &str) -> Vec<Vec<u8>> {
    use base64::Engine;
    let Ok(text) = std::str::from_utf8(text) else {
        return Vec::new();
    };
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&begin) {
        let body = &rest[start + begin.len()..];
        let Some(stop) = body.find(&end) else {
            break;
        };
        let b64: String = body[..stop].split_whitespace().collect();
        if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64) {
            out.push(der);
        }
        rest = &body[stop + end.len()..];
    }
    out
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Decodes lower- or upper-case hex.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_cannot_be_used() {
        assert!(PublicKey::from_pem("no pem here").is_err());
        assert!(
            PublicKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
                .is_err()
        );
        // A secp256k1 key: a curve cosign does not use.
        let k1 = "-----BEGIN PUBLIC KEY-----\nMFYwEAYHKoZIzj0CAQYFK4EEAAoDQgAEjzGQfm7cn5Oy0I9pPFUMTpkfdFj0dVXk\nVbqbXKl8Xn5nNJZY9LrKrvXGjxK8e7O5MpXdPKGCq9uVvDJtAFEy8w==\n-----END PUBLIC KEY-----\n";
        let e = PublicKey::from_pem(k1).unwrap_err().to_string();
        assert!(
            e.contains("unsupported elliptic curve") || e.contains("invalid public key"),
            "{e}"
        );
    }

    #[test]
    fn hex_round_trip() {
        assert_eq!(hex(&[0, 171, 255]), "00abff");
        assert_eq!(unhex("00abFF"), Some(vec![0, 171, 255]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }
}
