//! Commit signing in-process: OpenPGP (Flux's `git.asc` + `passphrase`) and SSH signatures (Flux's
//! `identity` + `password`), as the `gpgsig` header git verifies with `git verify-commit`.
//!
//! The git CLI would need `gpg` or `ssh-keygen` binaries, an agent and a pinentry for protected
//! keys; the Job image has none of them. The keys are parsed and unlocked when the [`Signer`] is
//! made, so a wrong passphrase fails before anything is cloned.

use std::fmt;

use pgp::composed::{ArmorOptions, Deserializable as _, DetachedSignature, SignedSecretKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::types::Password;
use ssh_key::private::{KeypairData, RsaKeypair};
use ssh_key::{Algorithm, HashAlg, LineEnding, Mpint, PrivateKey, SshSig};

use crate::error::{Error, KeyKind};
use image_update_secret::Secret;

/// A commit signer holding an unlocked key. Its `Debug` shows only the kind of key.
pub struct Signer {
    key: SignerKey,
}

enum SignerKey {
    OpenPgp {
        key: Box<SignedSecretKey>,
        password: Password,
        /// `None` signs with the primary key, `Some(i)` with `secret_subkeys[i]`.
        subkey: Option<usize>,
    },
    Ssh {
        key: Box<PrivateKey>,
    },
}

impl Signer {
    /// An OpenPGP signer from an ASCII-armored secret key (as `gpg --export-secret-keys --armor`
    /// writes it) and its passphrase. Signs with the newest subkey that may sign, else with the
    /// primary key, as gpg does. Key expiry and revocation are not checked.
    pub fn openpgp(
        armored_secret_key: &Secret,
        passphrase: Option<&Secret>,
    ) -> Result<Self, Error> {
        let unusable = |reason: String| Error::SigningKey {
            kind: KeyKind::OpenPgp,
            reason,
        };
        let (key, _headers) = SignedSecretKey::from_string(armored_secret_key.expose())
            .map_err(|err| unusable(format!("not an armored OpenPGP secret key ({err})")))?;
        let signing_subkeys: Vec<usize> = key
            .secret_subkeys
            .iter()
            .enumerate()
            .filter(|(_, subkey)| subkey.signatures.iter().any(|sig| sig.key_flags().sign()))
            .map(|(index, _)| index)
            .collect();
        let primary_flags: Vec<bool> = key
            .details
            .users
            .iter()
            .flat_map(|user| user.signatures.iter())
            .chain(key.details.direct_signatures.iter())
            .map(|sig| sig.key_flags().sign())
            .collect();
        let subkey = match signing_subkeys.last() {
            Some(index) => Some(*index),
            None if primary_flags.is_empty() || primary_flags.contains(&true) => None,
            None => {
                return Err(unusable(
                    "neither the primary key nor a subkey may sign".to_owned(),
                ));
            }
        };
        let password =
            passphrase.map_or_else(Password::empty, |secret| Password::from(secret.expose()));
        let signer = Self {
            key: SignerKey::OpenPgp {
                key: Box::new(key),
                password,
                subkey,
            },
        };
        // Unlock once now: a wrong passphrase is a configuration error, not a failed commit.
        signer
            .sign(b"")
            .map_err(|_| unusable("wrong passphrase, or the key cannot sign".to_owned()))?;
        Ok(signer)
    }

    /// An SSH signer from an OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`; ed25519,
    /// ECDSA P-256/384/521 or RSA) and its password, signing in namespace `git` with SHA-512 as
    /// `git commit -S` with `gpg.format=ssh` does.
    pub fn ssh(openssh_private_key: &Secret, password: Option<&Secret>) -> Result<Self, Error> {
        let unusable = |reason: String| Error::SigningKey {
            kind: KeyKind::Ssh,
            reason,
        };
        let key = PrivateKey::from_openssh(openssh_private_key.expose())
            .map_err(|err| unusable(format!("not an OpenSSH private key ({err})")))?;
        let key = if key.is_encrypted() {
            let password = password.ok_or_else(|| {
                unusable("the key is encrypted and no password was given".to_owned())
            })?;
            key.decrypt(password.expose())
                .map_err(|_| unusable("wrong password".to_owned()))?
        } else {
            key
        };
        let signer = Self {
            key: SignerKey::Ssh { key: Box::new(key) },
        };
        signer
            .sign(b"")
            .map_err(|err| unusable(format!("the key cannot sign ({err})")))?;
        Ok(signer)
    }

    /// The kind of key.
    #[must_use]
    pub fn kind(&self) -> KeyKind {
        match self.key {
            SignerKey::OpenPgp { .. } => KeyKind::OpenPgp,
            SignerKey::Ssh { .. } => KeyKind::Ssh,
        }
    }

    /// The armored signature of `payload` (a commit object without its `gpgsig` header), without
    /// a trailing newline: libgit2 would otherwise leave a `" \n"` continuation line in the
    /// commit, which git accepts but does not write itself.
    pub(crate) fn sign(&self, payload: &[u8]) -> Result<String, Error> {
        let failed = |reason: String| Error::Signing {
            kind: self.kind(),
            reason,
        };
        let armored = match &self.key {
            SignerKey::OpenPgp {
                key,
                password,
                subkey,
            } => {
                let rng = rand::thread_rng();
                let signature = match subkey.and_then(|index| key.secret_subkeys.get(index)) {
                    Some(subkey) => DetachedSignature::sign_binary_data(
                        rng,
                        &subkey.key,
                        password,
                        HashAlgorithm::Sha256,
                        payload,
                    ),
                    None => DetachedSignature::sign_binary_data(
                        rng,
                        &key.primary_key,
                        password,
                        HashAlgorithm::Sha256,
                        payload,
                    ),
                }
                .map_err(|err| failed(err.to_string()))?;
                signature
                    .to_armored_string(ArmorOptions::default())
                    .map_err(|err| failed(err.to_string()))?
            }
            SignerKey::Ssh { key } => {
                let signature = match key.key_data() {
                    KeypairData::Rsa(keypair) => sign_rsa(key, keypair, payload),
                    _ => key.sign(SSH_NAMESPACE, HashAlg::Sha512, payload),
                };
                signature
                    .and_then(|signature| signature.to_pem(LineEnding::LF))
                    .map_err(|err| failed(err.to_string()))?
            }
        };
        Ok(armored.trim_end_matches(['\n', '\r']).to_owned())
    }
}

/// The SSHSIG namespace git uses for commits and tags.
const SSH_NAMESPACE: &str = "git";

/// An SSHSIG with an RSA key (`rsa-sha2-512`), made here because ssh-key 0.6.7's own RSA signer
/// rebuilds the private key with the first prime twice (`[p, p]` instead of `[p, q]`), which the
/// rsa crate rejects, so every RSA signature fails with "cryptographic error". The fix is only in
/// ssh-key's 0.7 pre-releases. The format is unchanged: sign SSHSIG's signed-data blob with
/// PKCS#1 v1.5 over SHA-512 and wrap it like ssh-key would.
fn sign_rsa(key: &PrivateKey, keypair: &RsaKeypair, payload: &[u8]) -> ssh_key::Result<SshSig> {
    use rsa::signature::{SignatureEncoding as _, Signer as _};

    let uint = |mpint: &Mpint| {
        mpint
            .as_positive_bytes()
            .map(rsa::BigUint::from_bytes_be)
            .ok_or(ssh_key::Error::Crypto)
    };
    let private = rsa::RsaPrivateKey::from_components(
        uint(&keypair.public.n)?,
        uint(&keypair.public.e)?,
        uint(&keypair.private.d)?,
        vec![uint(&keypair.private.p)?, uint(&keypair.private.q)?],
    )
    .map_err(|_| ssh_key::Error::Crypto)?;
    let signed_data = SshSig::signed_data(SSH_NAMESPACE, HashAlg::Sha512, payload)?;
    let signing_key = rsa::pkcs1v15::SigningKey::<sha2::Sha512>::new(private);
    let signature = signing_key
        .try_sign(&signed_data)
        .map_err(|_| ssh_key::Error::Crypto)?;
    let signature = ssh_key::Signature::new(
        Algorithm::Rsa {
            hash: Some(HashAlg::Sha512),
        },
        signature.to_vec(),
    )?;
    SshSig::new(
        key.public_key().key_data().clone(),
        SSH_NAMESPACE,
        HashAlg::Sha512,
        signature,
    )
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signer({}, <redacted>)", self.kind())
    }
}
