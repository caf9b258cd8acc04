//! Where marked YAML comes from besides a directory tree (which
//! [`crate::walk`] walks): a kpt ResourceList's text, laid out.

pub(crate) mod resource_list;
