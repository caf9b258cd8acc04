//! What the forge tests and the calls bench share.

use image_update_forge::{Options, Provider};
use image_update_testkit::forge::Flavor;

/// The fakes' head branch (it exists in every fake).
pub const HEAD: &str = "image-update/flux-system-apps";

pub fn provider(flavor: Flavor) -> Provider {
    Provider::parse(flavor.name()).unwrap()
}

/// Two labels, an assignee and a reviewer the fakes know.
pub fn options() -> Options {
    Options {
        labels: vec!["dependencies".into(), "images".into()],
        assignees: vec!["alice".into()],
        reviewers: vec!["bob".into()],
        ..Options::default()
    }
}
