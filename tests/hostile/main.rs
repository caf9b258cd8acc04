//! image-update against a hostile repository, image publisher and registry: every attack on the
//! surfaces a pull request can reach (write-back targets, names that are paths, templates from the
//! repository, oversized or endless inputs, control characters) must neither write outside the
//! tree, nor hang, nor take more memory than the documented limits (docs/security.md).
//!
//! Each trial runs the real binary (`IMAGE_UPDATE_BIN` runs the suite against another build)
//! under a time limit and, where memory is the attack, under an address-space limit
//! (`prlimit --as`, from util-linux), so a regression is a failure, not an exhausted machine.
//! One module per surface; each adds its trials to the list.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod cloud;
mod escape;
mod inputs;
mod limits;
mod provenance;
mod readers;
mod seams;
#[allow(dead_code)] // each surface uses some of the helpers
mod support;
mod templates;
mod writes;

fn main() {
    let mut trials = Vec::new();
    trials.extend(writes::trials());
    trials.extend(escape::trials());
    trials.extend(templates::trials());
    trials.extend(seams::trials());
    trials.extend(limits::trials());
    trials.extend(inputs::trials());
    trials.extend(cloud::trials());
    trials.extend(readers::trials());
    trials.extend(provenance::trials());
    image_update_testkit::run(trials)
}
