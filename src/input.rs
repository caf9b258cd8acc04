//! Reading the files a run is given (policy files, automations, tag lists),
//! or stdin for `-`, and the tree's candidate files: always with a cap on
//! the size, so that `/dev/zero`, a runaway generator or a huge file ends
//! in a clear error instead of exhausting memory.
//!
//! Defaults: [`SizeLimit::FILE_DEFAULT`] (64 MiB) for every file read and
//! for stdin as `--policies -`/`--tags-file -` (`--max-file-size`, or the
//! environment variable `IMAGE_UPDATE_MAX_FILE_SIZE`), and
//! [`SizeLimit::RESOURCE_LIST_DEFAULT`] (1 GiB) for the KRM function's
//! ResourceList (`IMAGE_UPDATE_MAX_INPUT_SIZE`).

use std::io::Read;
use std::path::Path;

use crate::error::Error;

/// The most bytes one input may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeLimit(pub u64);

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

impl SizeLimit {
    /// One file (a tree's file, a policy file, stdin as a file): 64 MiB.
    pub const FILE_DEFAULT: SizeLimit = SizeLimit(64 * MIB);
    /// The KRM function's ResourceList on stdin: 1 GiB.
    pub const RESOURCE_LIST_DEFAULT: SizeLimit = SizeLimit(GIB);

    /// Parse `64MiB`, `1GiB`, `512KiB`, `100M` (binary units; `K`, `M`,
    /// `G` mean the same as `KiB`, `MiB`, `GiB`), or a number of bytes.
    ///
    /// # Errors
    /// A message saying what is accepted.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (digits, unit) = t.split_at(split);
        let unit_size = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => KIB,
            "m" | "mb" | "mib" => MIB,
            "g" | "gb" | "gib" => GIB,
            _ => 0,
        };
        digits
            .parse::<u64>()
            .ok()
            .filter(|_| unit_size > 0)
            .and_then(|n| n.checked_mul(unit_size))
            .filter(|&n| n > 0)
            .map(SizeLimit)
            .ok_or_else(|| {
                format!("{s:?} is not a size like 64MiB, 1GiB, 512KiB or a number of bytes")
            })
    }

    /// The limit in bytes.
    #[must_use]
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl Default for SizeLimit {
    fn default() -> Self {
        SizeLimit::FILE_DEFAULT
    }
}

impl std::fmt::Display for SizeLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0;
        for (unit, size) in [("GiB", GIB), ("MiB", MIB), ("KiB", KIB)] {
            if n >= size && n.is_multiple_of(size) {
                return write!(f, "{} {unit}", n / size);
            }
        }
        write!(f, "{n} bytes")
    }
}

/// An input that could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("cannot read {name}")]
    Io {
        name: String,
        #[source]
        source: std::io::Error,
    },
    /// More bytes than the limit.
    #[error("{name} is larger than {limit}, the most image-update reads from one input ({knob})")]
    TooLarge {
        name: String,
        limit: SizeLimit,
        /// How to raise the limit.
        knob: &'static str,
    },
    #[error("{name} is not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 { name: String, offset: usize },
}

/// How to raise the per-file limit.
pub(crate) const FILE_KNOB: &str = "raise it with --max-file-size or IMAGE_UPDATE_MAX_FILE_SIZE";

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Self {
        match e {
            // fs-err's error already names the file.
            ReadError::Io { source, .. } => Error::Io(source),
            other => Error::Other(Box::new(other)),
        }
    }
}

/// Read all of `reader` (called `name` in errors) into `buf`, failing when
/// it holds more than `limit` bytes. Works for pipes, FIFOs and devices:
/// at most `limit + 1` bytes are ever read.
///
/// # Errors
/// [`ReadError::TooLarge`], or the IO error.
pub(crate) fn read_capped(
    reader: impl Read,
    name: &str,
    limit: SizeLimit,
    knob: &'static str,
    buf: &mut Vec<u8>,
) -> Result<(), ReadError> {
    let mut capped = reader.take(limit.bytes().saturating_add(1));
    buf.clear();
    capped.read_to_end(buf).map_err(|source| ReadError::Io {
        name: name.to_owned(),
        source,
    })?;
    if buf.len() as u64 > limit.bytes() {
        buf.clear();
        buf.shrink_to_fit();
        return Err(ReadError::TooLarge {
            name: name.to_owned(),
            limit,
            knob,
        });
    }
    Ok(())
}

/// Open `path` for reading if it is a regular file (following a symlink);
/// `None` when it is something else. The open does not block, so a FIFO
/// cannot hang the caller. `known_regular` skips the check (one `fstat`
/// per file) when the walk already saw a regular file: if something else
/// was swapped in since, the open still does not block, reading a FIFO
/// ends at once, and reading a device stops at the size cap.
///
/// # Errors
/// When the file cannot be opened or its metadata read.
fn open_regular(
    path: &Path,
    known_regular: bool,
) -> std::io::Result<Option<(fs_err::File, Option<u64>)>> {
    let mut options = fs_err::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if known_regular {
        return Ok(Some((file, None)));
    }
    let meta = file.metadata()?;
    let len = meta.len();
    Ok(meta.is_file().then_some((file, Some(len))))
}

/// The one bounded reader of a repository's files (the walk's candidates, write-back targets,
/// definitions): `path` is opened without blocking (a FIFO cannot hang the run), read only if it
/// is a regular file (following a symlink; `known_regular` skips the check when the walk already
/// saw one), and only up to `limit` bytes. The bytes go to `buf[..n]`, `n` returned; `None` when
/// it is not a regular file. `buf` is only ever grown, never cleared: a reused buffer costs
/// neither an allocation nor a fill per file.
///
/// # Errors
/// [`ReadError::TooLarge`] past the limit, or the IO error, naming the file.
pub(crate) fn read_regular(
    path: &Path,
    known_regular: bool,
    limit: SizeLimit,
    buf: &mut Vec<u8>,
) -> Result<Option<usize>, ReadError> {
    let too_large = || ReadError::TooLarge {
        name: path.display().to_string(),
        limit,
        knob: FILE_KNOB,
    };
    let io = |source| ReadError::Io {
        name: path.display().to_string(),
        source,
    };
    let Some((file, size)) = open_regular(path, known_regular).map_err(io)? else {
        return Ok(None);
    };
    if size.is_some_and(|size| size > limit.bytes()) {
        return Err(too_large());
    }
    // Read into the buffer's own length (grown by doubling) rather than through
    // `read_to_end`, whose small probing reads cost a system call each on a fresh buffer.
    let mut file = file.take(limit.bytes().saturating_add(1));
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize((buf.len() * 2).max(64 * 1024), 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    if len as u64 > limit.bytes() {
        return Err(too_large());
    }
    Ok(Some(len))
}

/// [`read_regular`] into a buffer of its own, returned holding the bytes read.
///
/// # Errors
/// As [`read_regular`].
pub(crate) fn read_regular_owned(
    path: &Path,
    known_regular: bool,
    limit: SizeLimit,
) -> Result<Option<Vec<u8>>, ReadError> {
    let mut buf = Vec::new();
    Ok(
        read_regular(path, known_regular, limit, &mut buf)?.map(|n| {
            buf.truncate(n);
            buf.shrink_to_fit();
            buf
        }),
    )
}

/// The size of stdin when it is a regular file (`< FILE`) no larger than
/// `limit`: reading it into a buffer of exactly that capacity keeps one
/// copy of it in memory, with no room to spare.
pub(crate) fn stdin_file_size(limit: SizeLimit) -> Option<usize> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let metadata = std::fs::File::from(fd).metadata().ok()?;
    (metadata.is_file() && metadata.len() <= limit.bytes())
        .then(|| usize::try_from(metadata.len()).ok())
        .flatten()
}

/// Read `path` as UTF-8 text, at most `limit` bytes; `-` reads stdin.
///
/// # Errors
/// An IO error, a file over the limit, or invalid UTF-8, naming the file.
pub(crate) fn read_text(path: &Path, limit: SizeLimit) -> Result<String, Error> {
    let name = name(path);
    let mut bytes = Vec::new();
    if path == Path::new("-") {
        read_capped(std::io::stdin().lock(), &name, limit, FILE_KNOB, &mut bytes)?;
    } else {
        let file = fs_err::File::open(path)?;
        // A regular file's size is known: refuse before reading, and read it in one go (without
        // a capacity, reading through `take` starts with small probing reads).
        let size = file
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len());
        if size.is_some_and(|n| n > limit.bytes()) {
            return Err(ReadError::TooLarge {
                name,
                limit,
                knob: FILE_KNOB,
            }
            .into());
        }
        if let Some(n) = size.and_then(|n| usize::try_from(n).ok()) {
            bytes.reserve(n.saturating_add(1));
        }
        read_capped(file, &name, limit, FILE_KNOB, &mut bytes)?;
    }
    String::from_utf8(bytes).map_err(|e| {
        ReadError::NotUtf8 {
            name,
            offset: e.utf8_error().valid_up_to(),
        }
        .into()
    })
}

/// The YAML documents of `path` (at most `limit` bytes; `-` reads stdin),
/// with the file's name for messages.
///
/// # Errors
/// As [`read_text`]; YAML that does not parse, at its line and column.
pub(crate) fn read_yaml(
    path: &Path,
    limit: SizeLimit,
) -> Result<(String, Vec<crate::yaml::Document>), Error> {
    let origin = name(path);
    let text = read_text(path, limit)?;
    let documents = crate::yaml::parse_documents(&text).map_err(|e| {
        Error::invalid(vec![
            crate::diagnostic::Diagnostic::error(format!("not valid YAML: {}", e.message))
                .at(crate::diagnostic::Location::new(origin.clone(), e.position)),
        ])
    })?;
    Ok((origin, documents))
}

/// Which file a path names, however it is spelt (relative or absolute, through a symlink, by a
/// hard link): its device and inode number. Written here from `std`'s metadata, which has both
/// on Unix (the only platform the crate builds for, see `stdin_file_size`); a crate such as
/// `same-file` compares two paths by holding both files open, where a set of identities is
/// needed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct FileId {
    device: u64,
    inode: u64,
}

/// The identity of the file at `path` (following symlinks); `None` for stdin (`-`) or a path
/// whose metadata cannot be read.
#[must_use]
pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    if path == Path::new("-") {
        return None;
    }
    fs_err::metadata(path).ok().map(|m| FileId {
        device: m.dev(),
        inode: m.ino(),
    })
}

/// `stdin` for `-`, else the path as given.
#[must_use]
pub(crate) fn name(path: &Path) -> String {
    if path == Path::new("-") {
        "stdin".to_owned()
    } else {
        path.display().to_string()
    }
}

/// A text encoding that is not UTF-8, told by the first bytes as the YAML
/// specification (5.2) describes: a byte-order mark, or the zero bytes an
/// ASCII first character leaves in UTF-16 and UTF-32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WideEncoding {
    Utf16Le,
    Utf16Be,
    Utf32Le,
    Utf32Be,
}

impl WideEncoding {
    /// The encoding of `bytes`, when it is one of these.
    #[must_use]
    pub(crate) fn detect(bytes: &[u8]) -> Option<Self> {
        match bytes {
            [0, 0, 0xFE, 0xFF, ..] => Some(Self::Utf32Be),
            [0, 0, 0, b, ..] if *b != 0 => Some(Self::Utf32Be),
            [0xFF, 0xFE, 0, 0, ..] => Some(Self::Utf32Le),
            [a, 0, 0, 0, ..] if *a != 0 => Some(Self::Utf32Le),
            [0xFE, 0xFF, ..] => Some(Self::Utf16Be),
            [0, b, ..] if *b != 0 => Some(Self::Utf16Be),
            [0xFF, 0xFE, ..] => Some(Self::Utf16Le),
            [a, 0, ..] if *a != 0 => Some(Self::Utf16Le),
            _ => None,
        }
    }

    /// Its name, for messages.
    #[must_use]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Utf16Le => "UTF-16LE",
            Self::Utf16Be => "UTF-16BE",
            Self::Utf32Le => "UTF-32LE",
            Self::Utf32Be => "UTF-32BE",
        }
    }

    /// `bytes` decoded (invalid sequences become U+FFFD).
    #[must_use]
    pub(crate) fn decode(self, bytes: &[u8]) -> String {
        match self {
            Self::Utf16Le | Self::Utf16Be => {
                let units = bytes.chunks_exact(2).map(|c| {
                    let pair = [c[0], c[1]];
                    if self == Self::Utf16Le {
                        u16::from_le_bytes(pair)
                    } else {
                        u16::from_be_bytes(pair)
                    }
                });
                char::decode_utf16(units)
                    .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                    .collect()
            }
            Self::Utf32Le | Self::Utf32Be => bytes
                .chunks_exact(4)
                .map(|c| {
                    let quad = [c[0], c[1], c[2], c[3]];
                    let n = if self == Self::Utf32Le {
                        u32::from_le_bytes(quad)
                    } else {
                        u32::from_be_bytes(quad)
                    };
                    char::from_u32(n).unwrap_or(char::REPLACEMENT_CHARACTER)
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(SizeLimit::parse("64MiB"), Ok(SizeLimit(64 << 20)));
        assert_eq!(SizeLimit::parse("1 GiB"), Ok(SizeLimit(1 << 30)));
        assert_eq!(SizeLimit::parse("512k"), Ok(SizeLimit(512 << 10)));
        assert_eq!(SizeLimit::parse("1000"), Ok(SizeLimit(1000)));
        assert!(SizeLimit::parse("0").is_err());
        assert!(SizeLimit::parse("5 parsecs").is_err());
        assert!(SizeLimit::parse("99999999999999999999G").is_err());
        assert_eq!(SizeLimit::FILE_DEFAULT.to_string(), "64 MiB");
        assert_eq!(SizeLimit::RESOURCE_LIST_DEFAULT.to_string(), "1 GiB");
        assert_eq!(SizeLimit(1500).to_string(), "1500 bytes");
    }

    #[test]
    fn reads_are_capped() {
        let mut buf = Vec::new();
        read_capped(&b"12345"[..], "x", SizeLimit(5), FILE_KNOB, &mut buf).unwrap();
        assert_eq!(buf, b"12345");
        let err = read_capped(
            std::io::repeat(0),
            "zeros",
            SizeLimit(4096),
            FILE_KNOB,
            &mut buf,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "zeros is larger than 4 KiB, the most image-update reads from one input (raise it with --max-file-size or IMAGE_UPDATE_MAX_FILE_SIZE)"
        );
    }

    #[test]
    fn wide_encodings_are_told_apart() {
        let text = "kind: Pod # {\"$imagepolicy\": \"a:b\"}\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        let bom_le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(le.clone()).collect();
        let bom_be: Vec<u8> = [0xFE, 0xFF].into_iter().chain(be.clone()).collect();
        let le32: Vec<u8> = text
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect();
        for (bytes, encoding) in [
            (&le, WideEncoding::Utf16Le),
            (&be, WideEncoding::Utf16Be),
            (&bom_le, WideEncoding::Utf16Le),
            (&bom_be, WideEncoding::Utf16Be),
            (&le32, WideEncoding::Utf32Le),
        ] {
            assert_eq!(WideEncoding::detect(bytes), Some(encoding));
            assert!(encoding.decode(bytes).contains("$imagepolicy"));
        }
        assert_eq!(WideEncoding::detect(text.as_bytes()), None);
        assert_eq!(WideEncoding::detect(b"\xEF\xBB\xBFkind: Pod"), None);
        assert_eq!(WideEncoding::detect(b""), None);
    }
}
