//! Amazon ECR: `ecr:GetAuthorizationToken`, signed with the workload's AWS
//! credentials, found in the SDKs' order:
//!
//! 1. the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!    `AWS_SESSION_TOKEN`;
//! 2. web identity: `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`
//!    (`AWS_ROLE_SESSION_NAME`), exchanged with `sts:AssumeRoleWithWebIdentity`
//!    (IRSA, GitHub Actions' OIDC token);
//! 3. container credentials: `AWS_CONTAINER_CREDENTIALS_FULL_URI` (EKS Pod
//!    Identity) or `_RELATIVE_URI` (ECS), with the token of
//!    `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` or `_TOKEN`;
//! 4. the instance metadata service, IMDSv2 (a session token, then the
//!    role's credentials; 1 s per request), unless
//!    `AWS_EC2_METADATA_DISABLED` is true; `AWS_EC2_METADATA_SERVICE_ENDPOINT`
//!    moves it.
//!
//! A source that is configured and fails is the login's failure (as in the
//! SDKs); one that is not configured is skipped. The region and partition
//! come from the registry's host, so STS and ECR are asked in the
//! registry's own region and partition; `AWS_ENDPOINT_URL_ECR`,
//! `AWS_ENDPOINT_URL_STS` and `AWS_ENDPOINT_URL` move them (VPC endpoints,
//! emulators), `AWS_USE_FIPS_ENDPOINT` picks the FIPS ones.

use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine;
use regex::Regex;

use super::sigv4::{self, Keys};
use super::{Call, Ctx, Held, Value, endpoint, now, read_small};
use crate::transport::Response;
use crate::url::{self, Url};
use crate::{Result, Secret, Timestamp};

/// The domains of the AWS partitions whose registries are
/// `ACCOUNT.dkr.ecr.REGION.DOMAIN`: aws (and aws-us-gov), aws-cn, the ISO
/// partitions, and the European Sovereign Cloud.
const PARTITION_DOMAINS: [&str; 7] = [
    "amazonaws.com",
    "amazonaws.com.cn",
    "c2s.ic.gov",
    "sc2s.sgov.gov",
    "cloud.adc-e.uk",
    "csp.hci.ic.gov",
    "amazonaws.eu",
];

const ECR_TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";
const ECR_PUBLIC_TARGET: &str = "SpencerFrontendService.GetAuthorizationToken";
const JSON_11: &str = "application/x-amz-json-1.1";
/// One request to the instance metadata service, as the SDKs allow it.
const IMDS_TIMEOUT: Duration = Duration::from_secs(1);
const IMDS_DEFAULT: &str = "http://169.254.169.254";
const ECS_DEFAULT: &str = "http://169.254.170.2";

/// An ECR registry host, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EcrHost {
    pub account: String,
    pub region: String,
    /// The partition's domain (`amazonaws.com`, `amazonaws.com.cn`...).
    pub domain: String,
    pub fips: bool,
}

impl EcrHost {
    /// `ACCOUNT.dkr.ecr[-fips].REGION.DOMAIN`, `None` for any other host
    /// (a port included).
    pub(crate) fn parse(host: &str) -> Option<Self> {
        static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
        let pattern = PATTERN
            .get_or_init(|| {
                Regex::new(r"^([0-9]{12})\.dkr\.ecr(-fips)?\.([a-z]+(?:-[a-z]+)+-[0-9]+)\.(.+)$")
                    .ok()
            })
            .as_ref()?;
        let caps = pattern.captures(host)?;
        let domain = caps.get(4)?.as_str();
        PARTITION_DOMAINS.contains(&domain).then(|| Self {
            account: caps[1].to_owned(),
            fips: caps.get(2).is_some(),
            region: caps[3].to_owned(),
            domain: domain.to_owned(),
        })
    }
}

/// Log in to an ECR registry: the registry's `AWS` password.
pub(super) fn login(ctx: &Ctx<'_>, host: &EcrHost) -> Result<Held> {
    let keys = credentials(ctx, &host.region, &host.domain)?;
    let Value::Keys(k) = &keys.value else {
        return Err(ctx.failed(&keys.identity, "", "internal error: no AWS keys"));
    };
    let fips = host.fips || ctx.env.flag("AWS_USE_FIPS_ENDPOINT");
    let url = match endpoint(ctx, "AWS_ENDPOINT_URL_ECR", &keys.identity)? {
        Some(u) => u,
        None => match endpoint(ctx, "AWS_ENDPOINT_URL", &keys.identity)? {
            Some(u) => u,
            None => Url::new(
                "https",
                &if fips {
                    format!("ecr-fips.{}.{}", host.region, host.domain)
                } else {
                    format!("api.ecr.{}.{}", host.region, host.domain)
                },
                "/",
            ),
        },
    };
    authorization_token(
        ctx,
        k,
        &keys.identity,
        &url,
        &host.region,
        "ecr",
        ECR_TARGET,
    )
}

/// Log in to ECR Public (`public.ecr.aws`, whose API lives in us-east-1).
pub(super) fn login_public(ctx: &Ctx<'_>) -> Result<Held> {
    let keys = credentials(ctx, "us-east-1", "amazonaws.com")?;
    let Value::Keys(k) = &keys.value else {
        return Err(ctx.failed(&keys.identity, "", "internal error: no AWS keys"));
    };
    let url = match endpoint(ctx, "AWS_ENDPOINT_URL_ECR_PUBLIC", &keys.identity)? {
        Some(u) => u,
        None => endpoint(ctx, "AWS_ENDPOINT_URL", &keys.identity)?
            .unwrap_or_else(|| Url::new("https", "api.ecr-public.us-east-1.amazonaws.com", "/")),
    };
    authorization_token(
        ctx,
        k,
        &keys.identity,
        &url,
        "us-east-1",
        "ecr-public",
        ECR_PUBLIC_TARGET,
    )
}

/// `GetAuthorizationToken` at `url`, signed for `service` in `region`: the
/// `AWS:PASSWORD` it answers and its `expiresAt`.
fn authorization_token(
    ctx: &Ctx<'_>,
    keys: &Keys,
    identity: &str,
    url: &Url,
    region: &str,
    service: &str,
    target: &str,
) -> Result<Held> {
    let body = "{}";
    let host = host_header(url);
    let signed = sigv4::sign(
        &sigv4::Request {
            method: "POST",
            path: url.path(),
            query: &[],
            headers: &[("content-type", JSON_11), ("x-amz-target", target)],
            body: body.as_bytes(),
            host: &host,
        },
        keys,
        region,
        service,
        &Timestamp::now().basic_format(),
    );
    let authorization = Secret::new(signed.authorization);
    let (host, date, target) = (
        Secret::new(host),
        Secret::new(signed.amz_date),
        Secret::new(target),
    );
    let mut headers = vec![
        ("Host", &host),
        ("X-Amz-Date", &date),
        ("X-Amz-Target", &target),
    ];
    if let Some(token) = &keys.session_token {
        headers.push(("X-Amz-Security-Token", token));
    }
    let mut call = Call::new("POST", url.clone());
    call.accept = Some(JSON_11);
    call.authorization = Some(&authorization);
    call.headers = &headers;
    call.body = Some((JSON_11, Secret::new(body)));
    let resp = ctx.send(call, identity)?;
    if resp.status != 200 {
        let (code, message) = json_error(&resp);
        return Err(ctx.failed(
            identity,
            &code,
            format!(
                "{service}:GetAuthorizationToken at {url} answered HTTP {}: {message}",
                resp.status
            ),
        ));
    }
    let answer: serde_json::Value = serde_json::from_slice(&resp.body).map_err(|e| {
        ctx.failed(
            identity,
            "",
            format!(
                "{service}:GetAuthorizationToken at {url}: {}",
                crate::error::describe_json_error(&e)
            ),
        )
    })?;
    // ECR answers a list, ECR Public one object.
    let data = answer.get("authorizationData").map(|d| match d {
        serde_json::Value::Array(items) => items.first().unwrap_or(&serde_json::Value::Null),
        other => other,
    });
    let token = data
        .and_then(|d| d.get("authorizationToken"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    ctx.secret(token);
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
    let Some((username, password)) = decoded.split_once(':').filter(|(_, p)| !p.is_empty()) else {
        return Err(ctx.failed(
            identity,
            "",
            format!("{service}:GetAuthorizationToken at {url} answered no USER:PASSWORD token"),
        ));
    };
    ctx.secret(password);
    let expires = super::seconds(data.and_then(|d| d.get("expiresAt")));
    Ok(Held {
        value: Value::Login {
            username: username.to_owned(),
            password: Secret::new(password),
        },
        identity: identity.to_owned(),
        obtained: now(),
        expires: Some(expires.unwrap_or_else(|| now() + 12 * 3600)),
    })
}

/// The `Host` header ureq sends for `url`: its authority without a
/// default port.
fn host_header(url: &Url) -> String {
    let authority = url.authority();
    let default = if url.is_https() { ":443" } else { ":80" };
    authority
        .strip_suffix(default)
        .unwrap_or(authority)
        .to_ascii_lowercase()
}

/// An AWS JSON-protocol error: `__type` (its last part, as the SDKs name
/// it) and `message`.
fn json_error(resp: &Response) -> (String, String) {
    let value: serde_json::Value = serde_json::from_slice(&resp.body).unwrap_or_default();
    let kind = value
        .get("__type")
        .and_then(serde_json::Value::as_str)
        .or_else(|| resp.header("x-amzn-errortype"))
        .unwrap_or("");
    let code = kind
        .rsplit('#')
        .next()
        .unwrap_or(kind)
        .split(':')
        .next()
        .unwrap_or("")
        .to_owned();
    let message = ["message", "Message"]
        .iter()
        .find_map(|k| value.get(*k).and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            String::from_utf8_lossy(&resp.body[..resp.body.len().min(4096)])
                .trim()
                .to_owned()
        });
    (code, message)
}

/// The workload's AWS keys, from the first source configured.
fn credentials(ctx: &Ctx<'_>, region: &str, domain: &str) -> Result<Held> {
    let env = ctx.env;
    if let Some(id) = env.get("AWS_ACCESS_KEY_ID") {
        let identity = "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)";
        let secret = env.get("AWS_SECRET_ACCESS_KEY").ok_or_else(|| {
            ctx.failed(
                identity,
                "",
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
            )
        })?;
        let keys = Keys {
            access_key_id: id.trim().to_owned(),
            secret_access_key: Secret::new(secret.trim()),
            session_token: env.get("AWS_SESSION_TOKEN").map(|t| Secret::new(t.trim())),
        };
        register(ctx, &keys);
        return Ok(Held {
            value: Value::Keys(keys),
            identity: identity.to_owned(),
            obtained: now(),
            expires: None,
        });
    }
    if let Some(file) = env.get("AWS_WEB_IDENTITY_TOKEN_FILE") {
        let role = env.get("AWS_ROLE_ARN").unwrap_or("");
        let identity =
            format!("web identity (AWS_ROLE_ARN {role}, AWS_WEB_IDENTITY_TOKEN_FILE {file})");
        if role.is_empty() {
            return Err(ctx.failed(
                &identity,
                "",
                "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not",
            ));
        }
        return ctx.identity(&format!("aws web identity|{domain}|{role}"), || {
            web_identity(ctx, file, role, region, domain, &identity)
        });
    }
    if env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
        || env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
    {
        return ctx.identity("aws container", || container(ctx));
    }
    if env.flag("AWS_EC2_METADATA_DISABLED") {
        return Err(ctx.failed(
            "",
            "",
            "no AWS credentials: none of AWS_ACCESS_KEY_ID, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_CONTAINER_CREDENTIALS_FULL_URI is set, and the instance metadata service is off (AWS_EC2_METADATA_DISABLED)",
        ));
    }
    ctx.identity("aws imds", || imds(ctx))
}

/// Register every secret of `keys` for redaction.
fn register(ctx: &Ctx<'_>, keys: &Keys) {
    ctx.secret(keys.secret_access_key.expose());
    if let Some(t) = &keys.session_token {
        ctx.secret(t.expose());
    }
}

/// `sts:AssumeRoleWithWebIdentity` with the token in `file`.
fn web_identity(
    ctx: &Ctx<'_>,
    file: &str,
    role: &str,
    region: &str,
    domain: &str,
    identity: &str,
) -> Result<Held> {
    let token = read_small(file).map_err(|e| ctx.failed(identity, "", e))?;
    let token = Secret::new(token.trim());
    ctx.secret(token.expose());
    let session = ctx
        .env
        .get("AWS_ROLE_SESSION_NAME")
        .map_or_else(|| format!("image-update-{}", now()), str::to_owned);
    let url = match endpoint(ctx, "AWS_ENDPOINT_URL_STS", identity)? {
        Some(u) => u,
        None => match endpoint(ctx, "AWS_ENDPOINT_URL", identity)? {
            Some(u) => u,
            None => {
                let sts = if ctx.env.flag("AWS_USE_FIPS_ENDPOINT") {
                    "sts-fips"
                } else {
                    "sts"
                };
                Url::new("https", &format!("{sts}.{region}.{domain}"), "/")
            }
        },
    };
    let form = Secret::new(format!(
        "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName={}&WebIdentityToken={}",
        url::encode_unreserved(role),
        url::encode_unreserved(&session),
        url::encode_unreserved(token.expose())
    ));
    let mut call = Call::new("POST", url.clone()).form(form);
    call.accept = Some("text/xml");
    let resp = ctx.send(call, identity)?;
    let body = String::from_utf8_lossy(&resp.body);
    if resp.status != 200 {
        let code = xml_text(&body, "Code").unwrap_or_default();
        let message = xml_text(&body, "Message").unwrap_or_else(|| body.trim().to_owned());
        return Err(ctx.failed(
            identity,
            &code,
            format!(
                "sts:AssumeRoleWithWebIdentity at {url} answered HTTP {}: {message}",
                resp.status
            ),
        ));
    }
    let field = |tag: &str| xml_text(&body, tag).filter(|v| !v.is_empty());
    let (Some(id), Some(secret), Some(session_token)) = (
        field("AccessKeyId"),
        field("SecretAccessKey"),
        field("SessionToken"),
    ) else {
        return Err(ctx.failed(
            identity,
            "",
            format!("sts:AssumeRoleWithWebIdentity at {url} answered no credentials"),
        ));
    };
    let keys = Keys {
        access_key_id: id,
        secret_access_key: Secret::new(secret),
        session_token: Some(Secret::new(session_token)),
    };
    register(ctx, &keys);
    Ok(Held {
        value: Value::Keys(keys),
        identity: identity.to_owned(),
        obtained: now(),
        expires: field("Expiration").and_then(|t| rfc3339(&t)),
    })
}

/// Container credentials (EKS Pod Identity, ECS).
fn container(ctx: &Ctx<'_>) -> Result<Held> {
    let env = ctx.env;
    let (text, variable) = match env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI") {
        Some(full) => (full.trim().to_owned(), "AWS_CONTAINER_CREDENTIALS_FULL_URI"),
        None => (
            format!(
                "{ECS_DEFAULT}{}",
                env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                    .unwrap_or("")
                    .trim()
            ),
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        ),
    };
    let identity = format!("container credentials ({variable} {text})");
    let url = Url::parse(&text)
        .ok_or_else(|| ctx.failed(&identity, "", format!("{text:?} is not an http(s) URL")))?;
    // As the SDKs: plain HTTP only to the container agent's own addresses.
    let host = url.host().to_ascii_lowercase();
    let allowed = url.is_https()
        || url::is_loopback(url.authority())
        || ["169.254.170.2", "169.254.170.23", "fd00:ec2::23"].contains(&host.as_str());
    if !allowed {
        return Err(ctx.failed(
            &identity,
            "",
            format!(
                "{text} is plain HTTP to {host}, which is neither a loopback address nor the container agent's (169.254.170.2, 169.254.170.23, fd00:ec2::23)"
            ),
        ));
    }
    let token = match env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(file) => Some(read_small(file).map_err(|e| ctx.failed(&identity, "", e))?),
        None => env
            .get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
            .map(str::to_owned),
    }
    .map(|t| Secret::new(t.trim()));
    if let Some(t) = &token {
        ctx.secret(t.expose());
    }
    let mut call = Call::new("GET", url.clone());
    call.authorization = token.as_ref();
    call.metadata = true;
    call.timeout = Some(Duration::from_secs(5));
    call.retries = Some(2);
    let resp = ctx.send(call, &identity)?;
    credentials_document(ctx, &resp, &identity, &url)
}

/// The instance metadata service, IMDSv2.
fn imds(ctx: &Ctx<'_>) -> Result<Held> {
    let base = ctx
        .env
        .get("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .unwrap_or(IMDS_DEFAULT)
        .trim()
        .trim_end_matches('/')
        .to_owned();
    let identity = format!("the instance metadata service (IMDSv2 at {base})");
    let url = |path: &str| {
        Url::parse(&format!("{base}{path}")).ok_or_else(|| {
            ctx.failed(
                &identity,
                "",
                format!("AWS_EC2_METADATA_SERVICE_ENDPOINT {base:?} is not an http(s) URL"),
            )
        })
    };
    let none_found = |e: crate::Error| {
        ctx.failed(
            "",
            "",
            format!(
                "no AWS credentials: none of AWS_ACCESS_KEY_ID, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_CONTAINER_CREDENTIALS_FULL_URI is set, and {identity} did not answer: {}",
                match e {
                    crate::Error::Login { message, .. } => message,
                    other => other.to_string(),
                }
            ),
        )
    };
    let ttl = Secret::new("21600");
    let headers = [("X-aws-ec2-metadata-token-ttl-seconds", &ttl)];
    let mut call = Call::new("PUT", url("/latest/api/token")?);
    call.accept = None;
    call.headers = &headers;
    call.metadata = true;
    call.timeout = Some(IMDS_TIMEOUT);
    call.retries = Some(1);
    let resp = ctx.send(call, &identity).map_err(none_found)?;
    if resp.status != 200 {
        return Err(ctx.failed(
            &identity,
            "",
            format!("the session token request answered HTTP {}", resp.status),
        ));
    }
    let token = Secret::new(String::from_utf8_lossy(&resp.body).trim());
    ctx.secret(token.expose());
    let headers = [("X-aws-ec2-metadata-token", &token)];
    let get = |path: &str| -> Result<Response> {
        let mut call = Call::new("GET", url(path)?);
        call.accept = None;
        call.headers = &headers;
        call.metadata = true;
        call.timeout = Some(IMDS_TIMEOUT);
        call.retries = Some(1);
        ctx.send(call, &identity)
    };
    let roles = get("/latest/meta-data/iam/security-credentials/")?;
    let role = String::from_utf8_lossy(&roles.body)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    if roles.status != 200 || role.is_empty() || role.contains(['/', '?', '#']) {
        return Err(ctx.failed(
            &identity,
            "",
            format!(
                "the instance has no IAM role (security-credentials answered HTTP {})",
                roles.status
            ),
        ));
    }
    let identity = format!("{identity}, role {role}");
    let path = format!("/latest/meta-data/iam/security-credentials/{role}");
    let resp = get(&path)?;
    credentials_document(ctx, &resp, &identity, &url(&path)?)
}

/// The credentials document of IMDS and the container agents:
/// `AccessKeyId`, `SecretAccessKey`, `Token`, `Expiration` (and IMDS's
/// `Code`).
fn credentials_document(ctx: &Ctx<'_>, resp: &Response, identity: &str, url: &Url) -> Result<Held> {
    let value: serde_json::Value = serde_json::from_slice(&resp.body).unwrap_or_default();
    let text = |k: &str| {
        value
            .get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    // Register what came before anything of it is quoted.
    for k in ["SecretAccessKey", "Token"] {
        ctx.secret(&text(k));
    }
    let code = text("Code");
    if resp.status != 200 || (!code.is_empty() && code != "Success") {
        let (code, message) = match (text("code"), text("Code")) {
            (c, _) if !c.is_empty() => (c, text("message")),
            (_, c) => (c, text("Message")),
        };
        return Err(ctx.failed(
            identity,
            &code,
            format!("{url} answered HTTP {}: {message}", resp.status),
        ));
    }
    let (id, secret) = (text("AccessKeyId"), text("SecretAccessKey"));
    if id.is_empty() || secret.is_empty() {
        return Err(ctx.failed(identity, "", format!("{url} answered no credentials")));
    }
    let token = text("Token");
    Ok(Held {
        value: Value::Keys(Keys {
            access_key_id: id,
            secret_access_key: Secret::new(secret),
            session_token: (!token.is_empty()).then(|| Secret::new(token)),
        }),
        identity: identity.to_owned(),
        obtained: now(),
        expires: rfc3339(&text("Expiration")),
    })
}

/// Unix seconds of an RFC 3339 time (STS sends microseconds:
/// `2024-01-01T00:00:00.123456Z`).
fn rfc3339(text: &str) -> Option<i64> {
    Timestamp::parse_rfc3339(text.trim())
        .ok()
        .map(Timestamp::unix_seconds)
}

/// The text of the first `<tag>` element of an XML answer (STS's query
/// protocol), entities decoded. Why no XML crate: the answers are small
/// documents of a fixed shape whose few leaf elements are read by name.
fn xml_text(body: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = body.find(&open)? + open.len();
    let end = start + body[start..].find(&close)?;
    let raw = &body[start..end];
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(semi) = rest.find(';') else {
            break;
        };
        let entity = &rest[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            e => e
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| e.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Some(out.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_every_partition() {
        let h = EcrHost::parse("123456789012.dkr.ecr.eu-west-1.amazonaws.com").unwrap();
        assert_eq!(
            (
                h.account.as_str(),
                h.region.as_str(),
                h.domain.as_str(),
                h.fips
            ),
            ("123456789012", "eu-west-1", "amazonaws.com", false)
        );
        let h = EcrHost::parse("123456789012.dkr.ecr.cn-northwest-1.amazonaws.com.cn").unwrap();
        assert_eq!(
            (h.region.as_str(), h.domain.as_str()),
            ("cn-northwest-1", "amazonaws.com.cn")
        );
        let h = EcrHost::parse("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com").unwrap();
        assert!(h.fips);
        assert_eq!(h.region, "us-gov-west-1");
        for (host, domain) in [
            (
                "123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov",
                "c2s.ic.gov",
            ),
            (
                "123456789012.dkr.ecr.us-isob-east-1.sc2s.sgov.gov",
                "sc2s.sgov.gov",
            ),
            (
                "123456789012.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk",
                "cloud.adc-e.uk",
            ),
            (
                "123456789012.dkr.ecr.us-isof-south-1.csp.hci.ic.gov",
                "csp.hci.ic.gov",
            ),
            (
                "123456789012.dkr.ecr.eusc-de-east-1.amazonaws.eu",
                "amazonaws.eu",
            ),
        ] {
            assert_eq!(EcrHost::parse(host).unwrap().domain, domain, "{host}");
        }
        for host in [
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com:443",
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example",
            "123456789012.dkr.ecr.eu-west-1.example.com",
            "12345.dkr.ecr.eu-west-1.amazonaws.com",
            "public.ecr.aws",
            "ghcr.io",
            "123456789012.dkr.ecr.amazonaws.com",
        ] {
            assert_eq!(EcrHost::parse(host), None, "{host}");
        }
    }

    #[test]
    fn sts_answers_are_read() {
        let body = "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>a&amp;b&#47;c&#x2B;</SecretAccessKey><SessionToken>tok</SessionToken><Expiration>2026-11-29T10:22:52.790045Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
        assert_eq!(xml_text(body, "AccessKeyId").as_deref(), Some("ASIA1"));
        assert_eq!(xml_text(body, "SecretAccessKey").as_deref(), Some("a&b/c+"));
        assert_eq!(
            xml_text(body, "Expiration").and_then(|t| rfc3339(&t)),
            Some(1_795_947_772)
        );
        assert_eq!(xml_text(body, "Missing"), None);
        let error = "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>";
        assert_eq!(xml_text(error, "Code").as_deref(), Some("AccessDenied"));
        assert_eq!(
            xml_text("<a>x &unknown; y</a>", "a").as_deref(),
            Some("x &unknown; y")
        );
    }

    #[test]
    fn form_and_host() {
        assert_eq!(url::encode_unreserved("a b/c+d=e"), "a%20b%2Fc%2Bd%3De");
        assert_eq!(
            host_header(&Url::parse("https://api.ecr.eu-west-1.amazonaws.com:443/").unwrap()),
            "api.ecr.eu-west-1.amazonaws.com"
        );
        assert_eq!(
            host_header(&Url::parse("http://127.0.0.1:5000/").unwrap()),
            "127.0.0.1:5000"
        );
    }
}
