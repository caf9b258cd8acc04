//! Prints the revision a remote ref resolves to, in Flux's `observedSourceRevision` form.
//!
//! `ls_remote URL [BRANCH]`, e.g. `ls_remote https://github.com/fluxcd/flux2 main`. Plain HTTP is
//! allowed to loopback only; set `GIT_USERNAME`/`GIT_PASSWORD` for Basic auth. Small on purpose:
//! it exists to check that the crate links into a static binary that runs with nothing around it.

use std::process::ExitCode;

use image_update_git::{Auth, CheckoutRef, Remote, RemoteSettings, Secret};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: ls_remote URL [BRANCH]");
        return ExitCode::from(2);
    };
    let reference = args
        .next()
        .map_or(CheckoutRef::DefaultBranch, CheckoutRef::Branch);
    let auth = match (std::env::var("GIT_USERNAME"), std::env::var("GIT_PASSWORD")) {
        (Ok(username), Ok(password)) => Auth::Basic {
            username,
            password: Secret::new(password),
        },
        _ => Auth::None,
    };
    let settings = RemoteSettings {
        auth,
        ..RemoteSettings::default()
    };
    match Remote::new(&url, settings).and_then(|remote| remote.resolve(&reference)) {
        Ok(revision) => {
            println!("{revision}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}
