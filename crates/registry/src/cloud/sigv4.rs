//! AWS Signature Version 4 for the two calls a login makes (ECR's
//! `GetAuthorizationToken`, and nothing else signed: STS's
//! `AssumeRoleWithWebIdentity` is unsigned).
//!
//! Written by hand: the maintained signer, `aws-sigv4`, brings the AWS
//! SDK's runtime with it (tokio, futures, a second generation of the hash
//! crates, eleven `aws-smithy-*` crates) into a static binary that has no
//! async runtime; the algorithm itself is a canonical request, a string to
//! sign and four HMACs, over `ring`'s HMAC-SHA256, which TLS already links.
//! `testdata/sigv4/vectors.json`, made by botocore's own signer
//! (`scripts/sigv4-vectors.py`), checks every step; moto checks the result.

use image_update_secret::Secret;
use ring::{digest, hmac};

/// The keys a request is signed with.
#[derive(Clone)]
pub(crate) struct Keys {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    /// Temporary credentials' `X-Amz-Security-Token`.
    pub session_token: Option<Secret>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// One request to sign: everything that goes into its signature.
pub(crate) struct Request<'a> {
    pub method: &'a str,
    /// The path, already as sent (`/` for every call here).
    pub path: &'a str,
    /// Query parameters, not encoded.
    pub query: &'a [(&'a str, &'a str)],
    /// Headers other than `host`, `x-amz-date` and
    /// `x-amz-security-token`, which [`sign`] adds.
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
    /// The `Host` header as sent (no default port).
    pub host: &'a str,
}

/// The headers to send and how they were arrived at (the intermediate
/// strings are kept for the test vectors).
#[derive(Debug)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Signed {
    /// `X-Amz-Date`.
    pub amz_date: String,
    pub canonical_request: String,
    pub string_to_sign: String,
    /// The `Authorization` header's value.
    pub authorization: String,
}

/// Sign `req` for `service` in `region` at `amz_date` (`YYYYMMDDTHHMMSSZ`).
pub(crate) fn sign(
    req: &Request<'_>,
    keys: &Keys,
    region: &str,
    service: &str,
    amz_date: &str,
) -> Signed {
    let date = amz_date.get(..8).unwrap_or(amz_date);
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), canonical_value(v)))
        .collect();
    headers.push(("host".to_owned(), canonical_value(req.host)));
    headers.push(("x-amz-date".to_owned(), amz_date.to_owned()));
    if let Some(token) = &keys.session_token {
        headers.push((
            "x-amz-security-token".to_owned(),
            canonical_value(token.expose()),
        ));
    }
    headers.sort();
    // Headers given twice are one, their values joined by commas.
    let mut merged: Vec<(String, String)> = Vec::with_capacity(headers.len());
    for (k, v) in headers {
        match merged.last_mut() {
            Some((last, value)) if *last == k => {
                value.push(',');
                value.push_str(&v);
            }
            _ => merged.push((k, v)),
        }
    }
    let signed_headers = merged
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = merged.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let mut query: Vec<(String, String)> = req
        .query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    query.sort();
    let canonical_query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let canonical_request = format!(
        "{}\n{}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{}",
        req.method,
        uri_encode(req.path, false),
        hex(digest::digest(&digest::SHA256, req.body).as_ref())
    );
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let key = format!("AWS4{}", keys.secret_access_key.expose());
    let k_date = mac(key.as_bytes(), date.as_bytes());
    let k_region = mac(&k_date, region.as_bytes());
    let k_service = mac(&k_region, service.as_bytes());
    let k_signing = mac(&k_service, b"aws4_request");
    let signature = hex(&mac(&k_signing, string_to_sign.as_bytes()));
    Signed {
        amz_date: amz_date.to_owned(),
        authorization: format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            keys.access_key_id
        ),
        canonical_request,
        string_to_sign,
    }
}

fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A header value as SigV4 reads it: trimmed, inner runs of spaces made
/// one.
fn canonical_value(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Percent-encode all but the RFC 3986 unreserved characters (and `/`
/// unless `slash`), upper-case hex.
fn uri_encode(value: &str, slash: bool) -> String {
    if slash {
        return crate::url::encode_unreserved(value);
    }
    value
        .split('/')
        .map(crate::url::encode_unreserved)
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// One request signed by botocore (`scripts/sigv4-vectors.py`).
    #[derive(Deserialize)]
    struct Vector {
        name: String,
        method: String,
        path: String,
        #[serde(default)]
        query: Vec<(String, String)>,
        headers: Vec<(String, String)>,
        body: String,
        host: String,
        region: String,
        service: String,
        amz_date: String,
        access_key_id: String,
        secret_access_key: String,
        #[serde(default)]
        session_token: Option<String>,
        canonical_request: String,
        string_to_sign: String,
        authorization: String,
    }

    #[test]
    fn botocore_vectors() {
        let text = include_str!("../../testdata/sigv4/vectors.json");
        let vectors: Vec<Vector> = serde_json::from_str(text).unwrap();
        assert!(vectors.len() >= 8);
        for v in &vectors {
            let query: Vec<(&str, &str)> = v
                .query
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let headers: Vec<(&str, &str)> = v
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let keys = Keys {
                access_key_id: v.access_key_id.clone(),
                secret_access_key: Secret::new(v.secret_access_key.clone()),
                session_token: v.session_token.clone().map(Secret::new),
            };
            let signed = sign(
                &Request {
                    method: &v.method,
                    path: &v.path,
                    query: &query,
                    headers: &headers,
                    body: v.body.as_bytes(),
                    host: &v.host,
                },
                &keys,
                &v.region,
                &v.service,
                &v.amz_date,
            );
            assert_eq!(signed.canonical_request, v.canonical_request, "{}", v.name);
            assert_eq!(signed.string_to_sign, v.string_to_sign, "{}", v.name);
            assert_eq!(signed.authorization, v.authorization, "{}", v.name);
        }
    }

    #[test]
    fn keys_debug_shows_no_secret() {
        let keys = Keys {
            access_key_id: "AKIDEXAMPLE".to_owned(),
            secret_access_key: Secret::new("wJalrXUtnFEMI"),
            session_token: Some(Secret::new("FwoGZXIvYXdz")),
        };
        let text = format!("{keys:?}");
        assert!(text.contains("AKIDEXAMPLE") && !text.contains("wJal") && !text.contains("FwoG"));
    }
}
