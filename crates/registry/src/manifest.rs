//! Manifest media types, the JSON shapes the client reads, and platform
//! selection inside an image index / manifest list.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// The `Accept` header for manifest requests: indexes first, so a registry
/// that can convert never downgrades a multi-arch image.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.v2+json";

/// What a manifest document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestKind {
    /// OCI image index or Docker manifest list.
    Index,
    /// OCI image manifest or Docker v2 schema 2 manifest.
    Image,
}

impl ManifestKind {
    pub fn from_media_type(media_type: &str) -> Option<Self> {
        let mt = media_type.split(';').next().unwrap_or_default().trim();
        match mt {
            OCI_INDEX | DOCKER_LIST => Some(Self::Index),
            OCI_MANIFEST | DOCKER_MANIFEST => Some(Self::Image),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Descriptor {
    pub digest: String,
    #[serde(default)]
    pub platform: Option<DescriptorPlatform>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct DescriptorPlatform {
    #[serde(default)]
    pub os: String,
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub variant: Option<String>,
}

/// The fields of an index or image manifest that the client needs.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManifestDoc {
    #[serde(default)]
    pub media_type: Option<String>,
    #[serde(default)]
    pub manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    pub config: Option<Descriptor>,
}

/// The fields of an image config blob that the client needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ConfigDoc {
    #[serde(default)]
    pub created: Option<String>,
    #[serde(default)]
    pub os: Option<String>,
    #[serde(default)]
    pub architecture: Option<String>,
    #[serde(default)]
    pub variant: Option<String>,
}

/// An `os/architecture[/variant]` platform, e.g. `linux/arm64/v8`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

/// The platform used when the caller asks for none and an index must be
/// resolved to one image (for `created`).
pub fn default_platform() -> Platform {
    Platform {
        os: "linux".to_owned(),
        architecture: "amd64".to_owned(),
        variant: None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid platform {0:?}: expected os/architecture[/variant]")]
pub struct PlatformError(String);

impl FromStr for Platform {
    type Err = PlatformError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('/').collect();
        let ok = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        };
        match parts.as_slice() {
            [os, arch] if ok(os) && ok(arch) => Ok(Self {
                os: os.to_ascii_lowercase(),
                architecture: arch.to_ascii_lowercase(),
                variant: None,
            }),
            [os, arch, variant] if ok(os) && ok(arch) && ok(variant) => Ok(Self {
                os: os.to_ascii_lowercase(),
                architecture: arch.to_ascii_lowercase(),
                variant: Some(variant.to_ascii_lowercase()),
            }),
            _ => Err(PlatformError(s.to_owned())),
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

impl Platform {
    /// Does an image built for `os/architecture/variant` satisfy this request?
    ///
    /// * OS and architecture must be equal.
    /// * A request without a variant accepts any variant (`linux/arm64` takes
    ///   a `linux/arm64/v8` image).
    /// * A request with a variant needs that variant, except that `arm64/v8`
    ///   also accepts an arm64 image that states no variant, because v8 is the
    ///   only arm64 variant in use and most arm64 images omit it. A `linux/arm/v6`
    ///   request does not accept a plain `linux/arm` image.
    pub fn matches(&self, os: &str, architecture: &str, variant: Option<&str>) -> bool {
        if !self.os.eq_ignore_ascii_case(os)
            || !self.architecture.eq_ignore_ascii_case(architecture)
        {
            return false;
        }
        match (&self.variant, variant) {
            (None, _) => true,
            (Some(want), Some(have)) => want.eq_ignore_ascii_case(have),
            (Some(want), None) => self.architecture == "arm64" && want == "v8",
        }
    }
}

/// Choose the child manifest of an index for `platform`. Without a platform:
/// `linux/amd64` if present, else the first entry with a real platform
/// (attestation entries marked `unknown/unknown` are skipped).
pub(crate) fn select_child<'a>(
    children: &'a [Descriptor],
    platform: Option<&Platform>,
) -> Option<&'a Descriptor> {
    let matching = |p: &Platform| {
        children.iter().find(|d| {
            d.platform
                .as_ref()
                .is_some_and(|dp| p.matches(&dp.os, &dp.architecture, dp.variant.as_deref()))
        })
    };
    match platform {
        Some(p) => matching(p),
        None => matching(&default_platform()).or_else(|| {
            children.iter().find(|d| {
                d.platform
                    .as_ref()
                    .is_some_and(|p| p.os != "unknown" && !p.os.is_empty())
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(os: &str, arch: &str, variant: Option<&str>, digest: &str) -> Descriptor {
        Descriptor {
            digest: digest.to_owned(),
            platform: Some(DescriptorPlatform {
                os: os.to_owned(),
                architecture: arch.to_owned(),
                variant: variant.map(str::to_owned),
            }),
        }
    }

    #[test]
    fn parse_platform() {
        let p: Platform = "linux/arm64/v8".parse().unwrap();
        assert_eq!(p.variant.as_deref(), Some("v8"));
        assert_eq!(p.to_string(), "linux/arm64/v8");
        assert!("linux".parse::<Platform>().is_err());
        assert!("linux//v8".parse::<Platform>().is_err());
        assert!("a/b/c/d".parse::<Platform>().is_err());
    }

    #[test]
    fn variant_rules() {
        let arm64: Platform = "linux/arm64".parse().unwrap();
        assert!(arm64.matches("linux", "arm64", Some("v8")));
        assert!(arm64.matches("linux", "arm64", None));
        let arm64v8: Platform = "linux/arm64/v8".parse().unwrap();
        assert!(arm64v8.matches("linux", "arm64", Some("v8")));
        assert!(arm64v8.matches("linux", "arm64", None));
        let armv6: Platform = "linux/arm/v6".parse().unwrap();
        assert!(!armv6.matches("linux", "arm", None));
        assert!(!armv6.matches("linux", "arm", Some("v7")));
        assert!(armv6.matches("linux", "arm", Some("v6")));
        assert!(!arm64.matches("windows", "arm64", None));
    }

    #[test]
    fn select() {
        let kids = vec![
            desc("unknown", "unknown", None, "sha256:att"),
            desc("linux", "arm", Some("v7"), "sha256:armv7"),
            desc("linux", "arm64", Some("v8"), "sha256:arm64"),
            desc("linux", "amd64", None, "sha256:amd64"),
        ];
        let pick = |p: Option<&str>| {
            let p = p.map(|s| s.parse::<Platform>().unwrap());
            select_child(&kids, p.as_ref()).map(|d| d.digest.clone())
        };
        assert_eq!(pick(None).as_deref(), Some("sha256:amd64"));
        assert_eq!(pick(Some("linux/arm64")).as_deref(), Some("sha256:arm64"));
        assert_eq!(
            pick(Some("linux/arm64/v8")).as_deref(),
            Some("sha256:arm64")
        );
        assert_eq!(pick(Some("linux/arm/v7")).as_deref(), Some("sha256:armv7"));
        assert_eq!(pick(Some("linux/arm/v6")), None);
        assert_eq!(pick(Some("linux/s390x")), None);
        let no_amd = &kids[..3];
        assert_eq!(
            select_child(no_amd, None).map(|d| d.digest.as_str()),
            Some("sha256:armv7")
        );
    }

    #[test]
    fn kinds() {
        assert_eq!(
            ManifestKind::from_media_type(OCI_INDEX),
            Some(ManifestKind::Index)
        );
        assert_eq!(
            ManifestKind::from_media_type(&format!("{DOCKER_MANIFEST}; charset=utf-8")),
            Some(ManifestKind::Image)
        );
        assert_eq!(ManifestKind::from_media_type("text/html"), None);
    }
}
