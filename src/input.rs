//! Reading the files a run is given (policy files, automations, tag lists),
//! or stdin for `-`.

use std::io::Read;
use std::path::Path;

use crate::error::Error;

/// Read `path` as UTF-8 text; `-` reads stdin.
///
/// # Errors
/// An IO error or invalid UTF-8, naming the file.
pub fn read_text(path: &Path) -> Result<String, Error> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot read stdin: {e}")))?;
        return Ok(text);
    }
    Ok(fs_err::read_to_string(path)?)
}

/// `stdin` for `-`, else the path as given.
#[must_use]
pub fn name(path: &Path) -> String {
    if path == Path::new("-") {
        "stdin".to_owned()
    } else {
        path.display().to_string()
    }
}
