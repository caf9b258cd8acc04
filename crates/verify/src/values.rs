//! Signers given as separate values, the way front ends take them: a flag
//! per key file, per identity and per issuer (`--verify-key`,
//! `--verify-identity`, `--verify-issuer-regexp`…), the Action's inputs,
//! the function config's keys, a policy's annotations. [`SignerValues`]
//! checks them together (every key parses, every pattern compiles, an
//! identity has its issuer, the trusted root reads) and makes one
//! self-contained [`VerifyConfig`] of them: keys and the trusted root are
//! read once, here, so nothing downstream touches a file again.

use std::path::PathBuf;

use crate::keys::PublicKey;
use crate::policy::{KeyConfig, Matcher, Require, VerifyConfig};
use crate::trust::TrustedRoot;

/// An exact value or a whole-value regular expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    Exact(String),
    Regexp(String),
}

/// How the values are called where they were given (`--verify-key`,
/// `input verify-key`, `annotation image-update.dev/verify-key`), for
/// messages.
#[derive(Debug, Clone, Copy)]
pub struct SignerNames<'a> {
    pub key: &'a str,
    pub identity: &'a str,
    pub identity_regexp: &'a str,
    pub issuer: &'a str,
    pub issuer_regexp: &'a str,
    pub trusted_root: &'a str,
    pub require: &'a str,
}

/// A key as given: a PEM file, or the PEM text itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    File(PathBuf),
    Pem(String),
}

/// The trusted root as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootSource {
    File(PathBuf),
    Json(String),
}

/// Signers as separate values. Every identity pattern is paired with the
/// one issuer pattern (a workflow of several repositories, one OIDC
/// issuer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignerValues {
    pub keys: Vec<KeySource>,
    pub identities: Vec<Pattern>,
    pub issuer: Option<Pattern>,
    pub trusted_root: Option<RootSource>,
    pub require: Option<Require>,
}

/// The most bytes read from a key file or a trusted root file.
const MAX_FILE: u64 = 4 << 20;

fn read(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read as _;
    let file = fs_err::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > MAX_FILE {
        return Err(format!(
            "{}: larger than {} MiB",
            path.display(),
            MAX_FILE >> 20
        ));
    }
    Ok(text)
}

impl SignerValues {
    /// Whether nothing was given.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The signers as one checked, self-contained `verify` section (keys
    /// as PEM text named after their file, the trusted root as JSON);
    /// `None` when nothing was given.
    ///
    /// # Errors
    /// A message naming the value at fault (with `names`): a key file that
    /// cannot be read or a key that does not parse, an invalid regular
    /// expression, an identity without an issuer or an issuer without an
    /// identity, a trusted root that does not read, a trusted root or
    /// `require` without any signer.
    pub fn into_config(self, names: &SignerNames<'_>) -> Result<Option<VerifyConfig>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        let signers = !self.keys.is_empty() || !self.identities.is_empty();
        if !signers {
            let given = if self.issuer.is_some() {
                names.issuer
            } else if self.trusted_root.is_some() {
                names.trusted_root
            } else {
                names.require
            };
            return Err(format!(
                "{given} needs a signer: {} or {} (or {})",
                names.key, names.identity, names.identity_regexp
            ));
        }
        let mut config = VerifyConfig {
            require: self.require.unwrap_or_default(),
            ..VerifyConfig::default()
        };
        for (i, key) in self.keys.into_iter().enumerate() {
            let (pem, name) = match key {
                KeySource::File(path) => {
                    let text = read(&path).map_err(|e| format!("{} {e}", names.key))?;
                    let name = path.file_name().map_or_else(
                        || path.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    (text, name)
                }
                KeySource::Pem(pem) => (pem, format!("key {}", i + 1)),
            };
            PublicKey::from_pem(&pem).map_err(|e| format!("{} {name}: {e}", names.key))?;
            config.keys.push(KeyConfig {
                pem: Some(pem),
                name: Some(name),
                ..KeyConfig::default()
            });
        }
        let pattern = |p: &Pattern, exact: &str, regexp: &str| match p {
            Pattern::Exact(v) if v.is_empty() => Err(format!("{exact} is empty")),
            Pattern::Exact(v) => Ok((Some(v.clone()), None)),
            Pattern::Regexp(r) => Matcher::regex(r)
                .map(|_| (None, Some(r.clone())))
                .map_err(|e| format!("{regexp}: {e}")),
        };
        if !self.identities.is_empty() {
            let Some(issuer) = &self.issuer else {
                return Err(format!(
                    "{} needs {} or {}",
                    names.identity, names.issuer, names.issuer_regexp
                ));
            };
            let (issuer, issuer_regexp) = pattern(issuer, names.issuer, names.issuer_regexp)?;
            for identity in &self.identities {
                let (subject, subject_regexp) =
                    pattern(identity, names.identity, names.identity_regexp)?;
                config.identities.push(crate::policy::IdentityConfig {
                    subject,
                    subject_regexp,
                    issuer: issuer.clone(),
                    issuer_regexp: issuer_regexp.clone(),
                });
            }
        } else if self.issuer.is_some() {
            return Err(format!(
                "{} needs {} or {}",
                names.issuer, names.identity, names.identity_regexp
            ));
        }
        config.trusted_root_json = match self.trusted_root {
            None => None,
            Some(RootSource::File(path)) => Some(
                read(&path)
                    .and_then(|json| {
                        TrustedRoot::from_json(json.as_bytes())
                            .map(|_| json)
                            .map_err(|e| format!("{}: {e}", path.display()))
                    })
                    .map_err(|e| format!("{} {e}", names.trusted_root))?,
            ),
            Some(RootSource::Json(json)) => {
                TrustedRoot::from_json(json.as_bytes())
                    .map_err(|e| format!("{}: {e}", names.trusted_root))?;
                Some(json)
            }
        };
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: SignerNames<'static> = SignerNames {
        key: "--verify-key",
        identity: "--verify-identity",
        identity_regexp: "--verify-identity-regexp",
        issuer: "--verify-issuer",
        issuer_regexp: "--verify-issuer-regexp",
        trusted_root: "--trusted-root",
        require: "--verify-require",
    };

    fn err(v: SignerValues) -> String {
        v.into_config(&NAMES).unwrap_err()
    }

    #[test]
    fn nothing_given_is_no_verify_section() {
        assert_eq!(SignerValues::default().into_config(&NAMES), Ok(None));
    }

    #[test]
    fn identities_take_the_one_issuer() {
        let c = SignerValues {
            identities: vec![
                Pattern::Exact("https://a".into()),
                Pattern::Regexp("https://b/.*".into()),
            ],
            issuer: Some(Pattern::Exact("https://issuer".into())),
            require: Some(Require::All),
            ..SignerValues::default()
        }
        .into_config(&NAMES)
        .unwrap()
        .unwrap();
        assert_eq!(c.require, Require::All);
        assert_eq!(c.identities.len(), 2);
        assert_eq!(
            c.identities[1].subject_regexp.as_deref(),
            Some("https://b/.*")
        );
        assert!(
            c.identities
                .iter()
                .all(|i| i.issuer.as_deref() == Some("https://issuer"))
        );
    }

    #[test]
    fn each_mistake_names_its_value() {
        let e = err(SignerValues {
            identities: vec![Pattern::Exact("a".into())],
            ..SignerValues::default()
        });
        assert_eq!(
            e,
            "--verify-identity needs --verify-issuer or --verify-issuer-regexp"
        );
        let e = err(SignerValues {
            issuer: Some(Pattern::Exact("i".into())),
            ..SignerValues::default()
        });
        assert!(e.starts_with("--verify-issuer needs a signer"), "{e}");
        let e = err(SignerValues {
            require: Some(Require::All),
            ..SignerValues::default()
        });
        assert!(e.starts_with("--verify-require needs a signer"), "{e}");
        let e = err(SignerValues {
            identities: vec![Pattern::Regexp("(".into())],
            issuer: Some(Pattern::Exact("i".into())),
            ..SignerValues::default()
        });
        assert!(
            e.starts_with("--verify-identity-regexp: invalid regular"),
            "{e}"
        );
        let e = err(SignerValues {
            keys: vec![KeySource::Pem("not a key".into())],
            ..SignerValues::default()
        });
        assert!(e.starts_with("--verify-key key 1: "), "{e}");
        let e = err(SignerValues {
            keys: vec![KeySource::File("/nonexistent/cosign.pub".into())],
            ..SignerValues::default()
        });
        assert!(
            e.starts_with("--verify-key ") && e.contains("cosign.pub"),
            "{e}"
        );
        let e = err(SignerValues {
            keys: vec![KeySource::Pem("x".into())],
            trusted_root: Some(RootSource::Json("{".into())),
            ..SignerValues::default()
        });
        assert!(e.starts_with("--verify-key key 1"), "{e}");
    }
}
