//! The bytes of an input: read into memory, or mapped when the file is large so the
//! page cache is used in place instead of being copied (as ripgrep does).

use std::ops::Deref;
use std::path::Path;

/// Files at least this large are memory-mapped.
const MAP_AT: u64 = 16 << 20;

pub enum Source {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Deref for Source {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Source::Owned(v) => v,
            Source::Mapped(m) => m,
        }
    }
}

impl From<Vec<u8>> for Source {
    fn from(v: Vec<u8>) -> Self {
        Source::Owned(v)
    }
}

/// Reads a file, mapping it when it is large. The mapping is read-only; the tool never
/// writes to an input (another program truncating it mid-run is not supported).
pub fn read(path: &Path) -> std::io::Result<Source> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len >= MAP_AT {
        // SAFETY: read-only mapping of a regular file the tool does not modify.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            return Ok(Source::Mapped(map));
        }
    }
    let mut buf = Vec::with_capacity(len as usize + 1);
    std::io::Read::read_to_end(&mut &file, &mut buf)?;
    Ok(Source::Owned(buf))
}
