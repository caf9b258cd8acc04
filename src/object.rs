//! The identity of a Kubernetes object: `apiVersion`, `kind`, name and
//! namespace. A leaf of the vocabulary: the scanner finds objects, changes
//! and diagnostics name them, reports and kpt results print them.

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
