//! Google Artifact Registry (`*-docker.pkg.dev`) and Container Registry
//! (`gcr.io`, `*.gcr.io`): an OAuth2 access token, sent as the password of
//! `oauth2accesstoken`, from the first of (Application Default Credentials'
//! order):
//!
//! 1. `GOOGLE_APPLICATION_CREDENTIALS`: a service-account key (a JWT
//!    signed with its key, exchanged at its `token_uri`), or an
//!    `external_account` file (workload identity federation: the subject
//!    token of its `credential_source`, a file or a URL, exchanged at its
//!    `token_url`, then, with `service_account_impersonation_url`, for the
//!    service account's own token);
//! 2. the metadata server (GKE Workload Identity, GCE, Cloud Run), with
//!    `Metadata-Flavor: Google`, retried while GKE's starts; at
//!    `GCE_METADATA_HOST`, else `metadata.google.internal`.
//!
//! One token serves every Google registry of the run.

use std::time::Duration;

use super::{Call, Ctx, Held, Value, jwt, now, read_small, seconds};
use crate::transport::Response;
use crate::url::Url;
use crate::{Result, Secret};

const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
const USERNAME: &str = "oauth2accesstoken";
const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const DEFAULT_STS: &str = "https://sts.googleapis.com/v1/token";
const METADATA_HOST: &str = "metadata.google.internal";
/// Retries of the metadata server: GKE's takes a few seconds to start
/// with the Pod.
const METADATA_RETRIES: u32 = 5;

/// `gcr.io`, `*.gcr.io` and `*-docker.pkg.dev`.
pub(crate) fn is_google_registry(host: &str) -> bool {
    let label = |s: &str| {
        !s.is_empty()
            && s.split('.')
                .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    host == "gcr.io"
        || host.strip_suffix(".gcr.io").is_some_and(label)
        || host
            .strip_suffix("-docker.pkg.dev")
            .is_some_and(|p| label(p) && !p.contains('.'))
}

/// Log in to a Google registry: its `oauth2accesstoken` password.
pub(super) fn login(ctx: &Ctx<'_>) -> Result<Held> {
    let token = ctx.identity("gcp", || access_token(ctx))?;
    let Value::Token(t) = token.value else {
        return Err(ctx.failed(&token.identity, "", "internal error: no access token"));
    };
    Ok(Held {
        value: Value::Login {
            username: USERNAME.to_owned(),
            password: t,
        },
        identity: token.identity,
        obtained: token.obtained,
        expires: token.expires,
    })
}

fn access_token(ctx: &Ctx<'_>) -> Result<Held> {
    match ctx.env.get("GOOGLE_APPLICATION_CREDENTIALS") {
        Some(path) => from_file(ctx, path),
        None => metadata(ctx),
    }
}

/// A token answer: `access_token` and `expires_in`.
fn token_answer(ctx: &Ctx<'_>, resp: &Response, identity: &str, url: &Url) -> Result<Held> {
    let (token, value) = ctx.token_field(identity, resp, "access_token", &url.to_string())?;
    let obtained = now();
    Ok(Held {
        value: Value::Token(Secret::new(token)),
        identity: identity.to_owned(),
        obtained,
        expires: Some(obtained + seconds(value.get("expires_in")).unwrap_or(3600)),
    })
}

/// The token of the metadata server.
fn metadata(ctx: &Ctx<'_>) -> Result<Held> {
    let host = ctx
        .env
        .get("GCE_METADATA_HOST")
        .unwrap_or(METADATA_HOST)
        .trim();
    let identity = format!("the metadata server ({host})");
    let url = Url::parse(&format!(
        "http://{host}/computeMetadata/v1/instance/service-accounts/default/token"
    ))
    .ok_or_else(|| {
        ctx.failed(
            &identity,
            "",
            format!("GCE_METADATA_HOST {host:?} is not a host"),
        )
    })?;
    let flavor = Secret::new("Google");
    let headers = [("Metadata-Flavor", &flavor)];
    let mut call = Call::new("GET", url.clone());
    call.headers = &headers;
    call.metadata = true;
    call.timeout = Some(Duration::from_secs(3));
    call.retries = Some(METADATA_RETRIES);
    let resp = ctx.send(call, &identity).map_err(|e| {
        let message = match e {
            crate::Error::Login { message, .. } => message,
            other => other.to_string(),
        };
        ctx.failed(
            &identity,
            "",
            format!("GOOGLE_APPLICATION_CREDENTIALS is not set and the metadata server did not answer: {message}"),
        )
    })?;
    if resp.header("metadata-flavor") != Some("Google") {
        return Err(ctx.failed(
            &identity,
            "",
            format!(
                "{url} answered without Metadata-Flavor: Google, so it is not a metadata server"
            ),
        ));
    }
    token_answer(ctx, &resp, &identity, &url)
}

/// The credentials of a `GOOGLE_APPLICATION_CREDENTIALS` file.
fn from_file(ctx: &Ctx<'_>, path: &str) -> Result<Held> {
    let text = Secret::new(
        read_small(path)
            .map_err(|e| ctx.failed(&format!("GOOGLE_APPLICATION_CREDENTIALS {path}"), "", e))?,
    );
    let file: serde_json::Value = serde_json::from_str(text.expose()).map_err(|e| {
        ctx.failed(
            &format!("GOOGLE_APPLICATION_CREDENTIALS {path}"),
            "",
            format!("invalid JSON: {}", crate::error::describe_json_error(&e)),
        )
    })?;
    let field = |k: &str| {
        file.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    match field("type").as_str() {
        "service_account" => service_account(ctx, path, &file),
        "external_account" => external_account(ctx, path, &file),
        other => Err(ctx.failed(
            &format!("GOOGLE_APPLICATION_CREDENTIALS {path}"),
            "",
            format!(
                "credentials of type {other:?} are not read (service_account and external_account are)"
            ),
        )),
    }
}

/// A service-account key: a signed assertion for a token.
fn service_account(ctx: &Ctx<'_>, path: &str, file: &serde_json::Value) -> Result<Held> {
    let field = |k: &str| {
        file.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    let email = field("client_email");
    let identity = format!("service account {email} (GOOGLE_APPLICATION_CREDENTIALS {path})");
    let key = Secret::new(field("private_key"));
    ctx.secret(key.expose());
    let token_uri = match field("token_uri") {
        "" => DEFAULT_TOKEN_URI,
        uri => uri,
    };
    let url = Url::parse(token_uri).ok_or_else(|| {
        ctx.failed(
            &identity,
            "",
            format!("token_uri {token_uri:?} is not a URL"),
        )
    })?;
    let issued = now();
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if !field("private_key_id").is_empty() {
        header["kid"] = serde_json::Value::from(field("private_key_id"));
    }
    let assertion = jwt::sign_rs256(
        &header,
        &serde_json::json!({
            "iss": email,
            "scope": SCOPE,
            "aud": token_uri,
            "iat": issued,
            "exp": issued + 3600,
        }),
        &key,
    )
    .map_err(|e| ctx.failed(&identity, "", e))?;
    ctx.secret(&assertion);
    let form = Secret::new(format!(
        "grant_type={}&assertion={}",
        crate::url::encode_unreserved("urn:ietf:params:oauth:grant-type:jwt-bearer"),
        assertion
    ));
    let resp = ctx.send(Call::new("POST", url.clone()).form(form), &identity)?;
    token_answer(ctx, &resp, &identity, &url)
}

/// Workload identity federation: the subject token exchanged at Google's
/// STS, then (optionally) for the service account's token.
fn external_account(ctx: &Ctx<'_>, path: &str, file: &serde_json::Value) -> Result<Held> {
    let field = |k: &str| {
        file.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    let audience = field("audience");
    let identity =
        format!("workload identity federation ({audience}, GOOGLE_APPLICATION_CREDENTIALS {path})");
    let subject = subject_token(ctx, file.get("credential_source"), &identity)?;
    let token_url = match field("token_url") {
        "" => DEFAULT_STS,
        u => u,
    };
    let url = Url::parse(token_url).ok_or_else(|| {
        ctx.failed(
            &identity,
            "",
            format!("token_url {token_url:?} is not a URL"),
        )
    })?;
    let subject_type = match field("subject_token_type") {
        "" => "urn:ietf:params:oauth:token-type:jwt",
        t => t,
    };
    let impersonation = field("service_account_impersonation_url");
    let scope = if impersonation.is_empty() {
        SCOPE
    } else {
        "https://www.googleapis.com/auth/iam"
    };
    let enc = crate::url::encode_unreserved;
    let form = Secret::new(format!(
        "grant_type={}&audience={}&scope={}&requested_token_type={}&subject_token_type={}&subject_token={}",
        enc("urn:ietf:params:oauth:grant-type:token-exchange"),
        enc(audience),
        enc(scope),
        enc("urn:ietf:params:oauth:token-type:access_token"),
        enc(subject_type),
        enc(subject.expose()),
    ));
    let resp = ctx.send(Call::new("POST", url.clone()).form(form), &identity)?;
    let federated = token_answer(ctx, &resp, &identity, &url)?;
    if impersonation.is_empty() {
        return Ok(federated);
    }
    let Value::Token(token) = federated.value else {
        return Err(ctx.failed(&identity, "", "internal error: no access token"));
    };
    let url = Url::parse(impersonation).ok_or_else(|| {
        ctx.failed(
            &identity,
            "",
            format!("service_account_impersonation_url {impersonation:?} is not a URL"),
        )
    })?;
    let bearer = Secret::new(format!("Bearer {}", token.expose()));
    let mut call = Call::new("POST", url.clone());
    call.authorization = Some(&bearer);
    call.body = Some((
        "application/json",
        Secret::new(serde_json::json!({"scope": [SCOPE], "lifetime": "3600s"}).to_string()),
    ));
    let resp = ctx.send(call, &identity)?;
    let (access, value) = ctx.token_field(
        &identity,
        &resp,
        "accessToken",
        &format!("impersonation at {url}"),
    )?;
    let obtained = now();
    let expires = value
        .get("expireTime")
        .and_then(serde_json::Value::as_str)
        .and_then(|t| crate::Timestamp::parse_rfc3339(t).ok())
        .map_or(obtained + 3600, crate::Timestamp::unix_seconds);
    Ok(Held {
        value: Value::Token(Secret::new(access)),
        identity,
        obtained,
        expires: Some(expires),
    })
}

/// The subject token of an external account's `credential_source`: a
/// `file` or a `url` (with its `headers`), as text or as a JSON field
/// (`format.subject_token_field_name`).
fn subject_token(
    ctx: &Ctx<'_>,
    source: Option<&serde_json::Value>,
    identity: &str,
) -> Result<Secret> {
    let source = source.unwrap_or(&serde_json::Value::Null);
    let text = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let raw = if !text(source, "file").is_empty() {
        read_small(&text(source, "file")).map_err(|e| ctx.failed(identity, "", e))?
    } else if !text(source, "url").is_empty() {
        let u = text(source, "url");
        let url = Url::parse(&u).ok_or_else(|| {
            ctx.failed(
                identity,
                "",
                format!("credential_source.url {u:?} is not a URL"),
            )
        })?;
        let pairs: Vec<(String, Secret)> = source
            .get("headers")
            .and_then(serde_json::Value::as_object)
            .map(|h| {
                h.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), Secret::new(v))))
                    .collect()
            })
            .unwrap_or_default();
        let headers: Vec<(&str, &Secret)> = pairs.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let mut call = Call::new("GET", url.clone());
        call.accept = None;
        call.headers = &headers;
        call.metadata =
            crate::url::is_loopback(url.authority()) || url.host().starts_with("169.254.");
        let resp = ctx.send(call, identity)?;
        if resp.status != 200 {
            return Err(ctx.failed(
                identity,
                "",
                format!("credential_source.url {url} answered HTTP {}", resp.status),
            ));
        }
        String::from_utf8_lossy(&resp.body).into_owned()
    } else {
        return Err(ctx.failed(
            identity,
            "",
            "credential_source has neither a file nor a url (the other sources are not read)",
        ));
    };
    let format = source.get("format").unwrap_or(&serde_json::Value::Null);
    let token = if text(format, "type") == "json" {
        let field = text(format, "subject_token_field_name");
        let value: serde_json::Value = serde_json::from_str(&raw).unwrap_or_default();
        value
            .get(&field)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    } else {
        raw.trim().to_owned()
    };
    if token.is_empty() {
        return Err(ctx.failed(identity, "", "the credential_source gave no subject token"));
    }
    ctx.secret(&token);
    Ok(Secret::new(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_registries() {
        for host in [
            "gcr.io",
            "eu.gcr.io",
            "us-docker.pkg.dev",
            "europe-west4-docker.pkg.dev",
        ] {
            assert!(is_google_registry(host), "{host}");
        }
        for host in [
            "gcr.io.evil.example",
            "evil.example/gcr.io",
            "docker.pkg.dev",
            "a.b-docker.pkg.dev",
            "-docker.pkg.dev",
            "gcr.io:443",
            "ghcr.io",
        ] {
            assert!(!is_google_registry(host), "{host}");
        }
    }
}
