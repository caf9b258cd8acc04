//! The identity of a Kubernetes object: `apiVersion`, `kind`, name and
//! namespace. A leaf of the vocabulary: the scanner finds objects, changes
//! and diagnostics name them, reports and kpt results print them
//! (`crate::same_object`: whether two definitions of one object read from
//! two places are one).

/// A DNS-1123 label, as Kubernetes checks a namespace: 1 to 63 characters, lowercase letters,
/// digits and `-`, starting and ending with a letter or digit.
#[must_use]
pub fn dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len()) && dns_part(s)
}

/// A DNS-1123 subdomain, as Kubernetes checks most object names (an Argo CD Application's, a
/// Secret's): at most 253 characters, labels of lowercase letters, digits and `-` joined by `.`,
/// each starting and ending with a letter or digit.
#[must_use]
pub fn dns_subdomain(s: &str) -> bool {
    (1..=253).contains(&s.len()) && s.split('.').all(dns_part)
}

/// One dot-free part of a DNS-1123 name.
fn dns_part(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = s.as_bytes();
    bytes.first().copied().is_some_and(alnum)
        && bytes.last().copied().is_some_and(alnum)
        && bytes.iter().all(|&b| alnum(b) || b == b'-')
}

/// Why `name` is not a Kubernetes object name (a DNS-1123 subdomain), for an error at the field.
#[must_use]
pub(crate) fn name_problem(field: &str, name: &str) -> Option<String> {
    (!dns_subdomain(name)).then(|| {
        format!(
            "{field} {:?} is not a valid Kubernetes name (lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit, at most 253 characters)",
            name
        )
    })
}

/// Why `namespace` is not a Kubernetes namespace (a DNS-1123 label).
#[must_use]
pub(crate) fn namespace_problem(field: &str, namespace: &str) -> Option<String> {
    (!dns_label(namespace)).then(|| {
        format!(
            "{field} {:?} is not a valid Kubernetes namespace (lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters)",
            namespace
        )
    })
}

/// `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` of the
/// object (around a marker, in a report); `""` where absent.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(default)]
pub struct ObjectId {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

impl ObjectId {
    /// `Kind namespace/name` (`Kind name` without a namespace); `-` for a
    /// file that is no Kubernetes object (a Helm values file).
    #[must_use]
    pub fn describe(&self) -> String {
        let name = match (self.namespace.is_empty(), self.name.is_empty()) {
            (_, true) => String::new(),
            (true, false) => self.name.clone(),
            (false, false) => format!("{}/{}", self.namespace, self.name),
        };
        let text = format!("{} {name}", self.kind);
        let text = text.trim();
        if text.is_empty() {
            "-".to_owned()
        } else {
            text.to_owned()
        }
    }
}

/// Annotations a kpt orchestrator puts on items; empty outside ResourceLists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemAnnotations {
    /// `internal.config.kubernetes.io/path`, else `config.kubernetes.io/path`.
    pub path: Option<String>,
    /// `internal.config.kubernetes.io/index`, else `config.kubernetes.io/index`.
    pub index: Option<String>,
}
