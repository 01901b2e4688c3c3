//! Large regular files, mapped rather than copied into fresh memory: on a machine that
//! another program has just left (the way users run the tool), faulting in and zeroing
//! a fresh buffer the size of the input cost most of a large run's time.
//!
//! The mapping is memmap2's `map`: read-only and *shared*. Another process that writes
//! to the file while it is read changes the bytes under the tool (the caveat of every
//! tool that maps its inputs; ripgrep maps files under it too), and one that shrinks it
//! would kill the process with SIGBUS (the pages past the new end are gone). The handler
//! here puts zero pages over the rest of that mapping instead, marks the mapping, and
//! lets the read go on; a write in place is seen by the file's size and modification
//! time, taken when it was mapped and compared again before anything made from it is
//! kept. Either way the input is reported as changed while it was read, nothing made
//! from it is committed (every atomic output checks [`check_current`] first; stdout
//! checks [`Mapped::intact`] before the run says it succeeded), and a batch goes on
//! with its other files. `RIVUMI_MMAP=0` reads every input into memory instead.
//!
//! A mapped input does not stay resident beside what is made of it: the reader gives
//! back each piece it has parsed ([`release`]), and the passes that read a little of
//! every line afterwards (the writer's copy, re-anchor's look at the calls and the failed
//! results, the list of the ids a summary replaces) give back what they have passed
//! ([`Behind`]). A page read
//! again is read from the file again (the page cache), as it was the first time; so
//! that those passes rarely have to, the reader first copies out of each piece the short
//! strings they read of every item ([`is_mapped`] tells it when).

use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

/// Mappings open at once that the handler knows (one per job in a batch); past that,
/// an input is read instead of mapped.
const SLOTS: usize = 64;

struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    shrank: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // the initializer of each slot
const FREE: Slot = Slot { start: AtomicUsize::new(0), len: AtomicUsize::new(0), shrank: AtomicBool::new(false) };
static TABLE: [Slot; SLOTS] = [FREE; SLOTS];

/// What each slot's file was when it was mapped: itself, its size and its modification
/// time (never touched by the signal handler, so behind a lock).
static STAMPS: [Mutex<Option<Stamp>>; SLOTS] = [const { Mutex::new(None) }; SLOTS];

struct Stamp {
    file: std::fs::File,
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    fn of(file: &std::fs::File) -> Option<Stamp> {
        let meta = file.metadata().ok()?;
        Some(Stamp { file: file.try_clone().ok()?, len: meta.len(), modified: meta.modified().ok() })
    }

    /// Whether the file is not what it was: another size, another modification time.
    fn moved(&self) -> bool {
        self.file.metadata().map_or(true, |m| m.len() != self.len || m.modified().ok() != self.modified)
    }
}

/// Whether a slot's file shrank (the handler said so) or was written since it was mapped.
fn changed_since(slot: usize) -> bool {
    TABLE[slot].shrank.load(Ordering::SeqCst)
        || STAMPS[slot].lock().unwrap_or_else(PoisonError::into_inner).as_ref().is_some_and(Stamp::moved)
}

/// The action SIGBUS had before ours, restored for a fault that is not in a mapping.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static PAGE: AtomicUsize = AtomicUsize::new(4096);

thread_local! {
    /// The mapping whose input this thread is processing, for [`check_current`].
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Whether inputs may be mapped (`RIVUMI_MMAP=0` says no).
pub fn enabled() -> bool {
    std::env::var_os("RIVUMI_MMAP").is_none_or(|v| v != "0")
}

/// A regular file mapped read-only, known to the SIGBUS handler while it lives.
pub struct Mapped {
    map: memmap2::Mmap,
    slot: usize,
}

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapped").field("len", &self.map.len()).field("slot", &self.slot).finish()
    }
}

impl Mapped {
    /// Maps the first `len` bytes of `file`; `None` when it cannot be (no free slot, a
    /// handler that cannot be installed, a file that is already shorter), and the
    /// caller reads it instead.
    pub fn new(file: &std::fs::File, len: usize) -> Option<Mapped> {
        if len == 0 || !install() {
            return None;
        }
        // What the file is before it is mapped: a write after this shows in its stamp.
        let stamp = Stamp::of(file)?;
        // SAFETY: the mapping is read-only and shared (memmap2's `map`). Its bytes can
        // change under us only through another process: a shrink is caught by the
        // handler (zero pages mapped in place of the lost ones, the slot marked), and a
        // write in place by the stamp; either way nothing made from the bytes is kept
        // (see the module's comment). What is read meanwhile is plain bytes: the parser
        // checks every one (UTF-8, JSON) and keeps no reference past the mapping.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }.ok()?;
        let start = map.as_ptr() as usize;
        let slot = TABLE
            .iter()
            .position(|s| s.start.compare_exchange(0, start, Ordering::SeqCst, Ordering::SeqCst).is_ok())?;
        TABLE[slot].shrank.store(false, Ordering::SeqCst);
        TABLE[slot].len.store(len, Ordering::SeqCst);
        *STAMPS[slot].lock().unwrap_or_else(PoisonError::into_inner) = Some(stamp);
        let mapped = Mapped { map, slot };
        // Shorter already than when it was opened: read it instead (it gives the error).
        if file.metadata().map_or(true, |m| m.len() < len as u64) {
            return None;
        }
        Some(mapped)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// `Err` when the file shrank or was written while it was mapped (its bytes are then
    /// not the file's, or not all of one version of it).
    pub fn intact(&self) -> io::Result<()> {
        if changed_since(self.slot) {
            return Err(changed());
        }
        Ok(())
    }

    /// Runs `f` with this mapping as the thread's current input: an atomic output
    /// committed meanwhile checks it first ([`check_current`]).
    pub fn current<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<usize>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.replace(Some(self.slot))));
        f()
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // The slot is given up before the mapping goes (fields drop after this).
        *STAMPS[self.slot].lock().unwrap_or_else(PoisonError::into_inner) = None;
        TABLE[self.slot].len.store(0, Ordering::SeqCst);
        TABLE[self.slot].start.store(0, Ordering::SeqCst);
    }
}

fn changed() -> io::Error {
    io::Error::other(
        "the file changed while it was read (another process shrank it or wrote to it): nothing made from it is kept",
    )
}

/// Gives back the memory of the whole pages of `bytes` when they lie in a live mapping
/// (a no-op for bytes in ordinary memory): the reader calls it on each piece it has
/// read, the writer on each piece it has written, so that a large input does not stay
/// resident beside what is made of it. The bytes stay readable: a later read faults
/// them in again from the file (from the page cache, usually), as the first one did.
pub fn release(bytes: &[u8]) {
    let (from, to) = (bytes.as_ptr() as usize, bytes.as_ptr() as usize + bytes.len());
    let page = PAGE.load(Ordering::SeqCst);
    // Whole pages only: the partial pages at either end may hold bytes still in use.
    let (start, end) = ((from + page - 1) & !(page - 1), to & !(page - 1));
    if end <= start {
        return;
    }
    if inside(start, end) {
        // SAFETY: the range is whole pages of a live read-only file mapping (the caller
        // borrows the bytes from it, so it is not unmapped meanwhile). MADV_DONTNEED on
        // a file mapping only drops this process's view of the pages: a later access
        // reads them from the file again, and nothing is lost (the mapping is read-only
        // and shared). A page the SIGBUS handler replaced reads as zeros again.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    }
}

/// Whether `bytes` lie in a live mapping (the reader keeps copies of what it will read
/// again only for a mapped input, whose pages it gives back).
pub fn is_mapped(bytes: &[u8]) -> bool {
    let from = bytes.as_ptr() as usize;
    inside(from, from + bytes.len())
}

/// Whether the addresses `start..end` lie in one live mapping.
fn inside(start: usize, end: usize) -> bool {
    TABLE.iter().any(|slot| {
        let (s, len) = (slot.start.load(Ordering::SeqCst), slot.len.load(Ordering::SeqCst));
        s != 0 && start >= s && end <= s + len
    })
}

/// A pass over a mapped input in file order that gives back what it has passed, a few
/// MB at a time ([`release`]): a pass that reads a little of every line (ids, call
/// arguments, the records it copies) would otherwise bring the whole input back.
pub struct Behind<'a> {
    src: &'a [u8],
    from: usize,
}

impl<'a> Behind<'a> {
    /// Bytes between two releases.
    const STEP: usize = 8 << 20;

    pub fn new(src: &'a [u8]) -> Self {
        Behind { src, from: 0 }
    }

    /// The pass has reached `offset` in `src` and will not come back before it.
    pub fn reached(&mut self, offset: usize) {
        if offset >= self.from + Self::STEP && offset <= self.src.len() {
            release(&self.src[self.from..offset]);
            self.from = offset;
        }
    }
}

/// `Err` when the input this thread is processing is mapped and shrank or was written
/// meanwhile.
pub fn check_current() -> io::Result<()> {
    match CURRENT.with(Cell::get) {
        Some(slot) if changed_since(slot) => Err(changed()),
        _ => Ok(()),
    }
}

/// Installs the SIGBUS handler once; whether it is in place.
fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        // SAFETY: plain libc calls with initialized structures; the handler only uses
        // atomics, mmap and sigaction.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::SeqCst);
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&raw mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &raw const action, &raw mut previous) != 0 {
                return false;
            }
            let _ = PREVIOUS.set(previous);
        }
        true
    })
}

/// A fault in a mapping: zero pages over the rest of it, the slot marked, and the read
/// goes on. Any other fault: the action before ours, and the fault happens again.
extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::SeqCst);
    for slot in &TABLE {
        let (start, len) = (slot.start.load(Ordering::SeqCst), slot.len.load(Ordering::SeqCst));
        if start == 0 || addr < start || addr >= start + len {
            continue;
        }
        let from = addr & !(page - 1);
        // SAFETY: the range lies inside the mapping this slot holds, which lives until
        // its owner drops it (and unmaps the whole range, these pages included).
        let zeros = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                start + len - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            slot.shrank.store(true, Ordering::SeqCst);
            return;
        }
    }
    if let Some(previous) = PREVIOUS.get() {
        // SAFETY: restoring the action that was in place before ours.
        unsafe { libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kB of the mapping that starts at `bytes` that this process holds resident
    /// (`/proc/self/smaps`).
    fn resident_kb(bytes: &[u8]) -> u64 {
        let start = format!("{:x}-", bytes.as_ptr() as usize);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
        lines.find_map(|l| l.strip_prefix("Rss:")).map(|v| v.trim().trim_end_matches(" kB").parse().unwrap()).unwrap()
    }

    /// Pages given back read again as the file's bytes: in a pass behind it and whole.
    #[test]
    fn released_pages_read_back_as_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        let bytes: Vec<u8> = (0..(20usize << 20)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let Some(m) = Mapped::new(&file, bytes.len()) else {
            panic!("a 20 MiB regular file maps");
        };
        assert_eq!(m.bytes(), &bytes[..]);
        assert!(resident_kb(m.bytes()) >= 16 << 10, "read whole, the mapping is resident");
        let mut behind = Behind::new(m.bytes());
        for at in (0..bytes.len()).step_by(1 << 20) {
            behind.reached(at);
        }
        // Behind the pass (it reached 19 MiB): given back in 8 MiB steps, 16 MiB of it.
        assert!(resident_kb(m.bytes()) <= 5 << 10, "{} kB resident", resident_kb(m.bytes()));
        assert_eq!(m.bytes(), &bytes[..]);
        release(&m.bytes()[3..bytes.len() - 5]);
        assert!(resident_kb(m.bytes()) <= 8, "{} kB resident", resident_kb(m.bytes()));
        assert_eq!(m.bytes(), &bytes[..]);
        // Bytes in ordinary memory are left alone.
        release(&bytes);
        assert_eq!(bytes[12345], (12345 % 251) as u8);
        m.intact().unwrap();
    }
}
