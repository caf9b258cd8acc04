//! Where YAML comes from: a directory tree (or one file) on disk. The
//! ResourceList source of the KRM function lives with the function.

pub mod dir;
pub mod resource_list;
