//! Setters: what a marker's `$imagepolicy` value names (`NS:NAME`,
//! `NS:NAME:tag`, `NS:NAME:name`, `NS:NAME:digest`). A leaf of the
//! vocabulary: the scanner reads them, the policy table resolves them.

use std::fmt;

/// Which part of the latest image a setter writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `NS:NAME`: `name:tag`, plus `@digest` when the policy has one.
    Image,
    /// `NS:NAME:tag`
    Tag,
    /// `NS:NAME:name`
    Name,
    /// `NS:NAME:digest`
    Digest,
}

impl Field {
    #[must_use]
    pub fn suffix(self) -> &'static str {
        match self {
            Field::Image => "",
            Field::Tag => ":tag",
            Field::Name => ":name",
            Field::Digest => ":digest",
        }
    }
}

/// A parsed setter: the policy it names and the field it writes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Setter<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub field: Field,
}

impl<'a> Setter<'a> {
    /// Parse `NS:NAME`, `NS:NAME:tag`, `NS:NAME:name` or `NS:NAME:digest`.
    /// Anything else names no setter (Flux leaves such fields alone).
    #[must_use]
    pub fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.split(':');
        let namespace = parts.next()?;
        let name = parts.next()?;
        let field = match parts.next() {
            None => Field::Image,
            Some("tag") => Field::Tag,
            Some("name") => Field::Name,
            Some("digest") => Field::Digest,
            Some(_) => return None,
        };
        if parts.next().is_some() || namespace.is_empty() || name.is_empty() {
            return None;
        }
        Some(Self {
            namespace,
            name,
            field,
        })
    }
}

impl fmt::Display for Setter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}{}", self.namespace, self.name, self.field.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters() {
        let s = Setter::parse("flux-system:podinfo").unwrap();
        assert_eq!(
            (s.namespace, s.name, s.field),
            ("flux-system", "podinfo", Field::Image)
        );
        assert_eq!(Setter::parse("a:b:tag").unwrap().field, Field::Tag);
        assert_eq!(Setter::parse("a:b:name").unwrap().field, Field::Name);
        assert_eq!(Setter::parse("a:b:digest").unwrap().field, Field::Digest);
        for bad in ["a", "a:b:registry", "a:b:tag:digest", ":b", "a:", "a:b:Tag"] {
            assert_eq!(Setter::parse(bad), None, "{bad}");
        }
        assert_eq!(Setter::parse("a:b:tag").unwrap().to_string(), "a:b:tag");
    }
}
