//! Give back the page tables an idle shim or pid 1 holds for code it no longer runs.
//!
//! Every sandbox has two long-lived processes of ours (the shim and pid 1), both forks of
//! the zygote. During setup they execute code spread over the whole 26 MB text and 7 MB
//! read-only data of the binary; each 2 MiB stretch they touch costs a 4 KiB page-table
//! page, ~17 per process (~140 KiB per sandbox, measured with `VmPTE`), kept for the
//! sandbox's whole life although an idle sandbox runs almost none of that code again.
//!
//! `madvise(MADV_DONTNEED)` on a private file mapping that holds no anonymous
//! (copy-on-write) page only drops the page-table entries: the pages stay in the page
//! cache, shared, and the next access maps them again (a minor fault). With
//! `CONFIG_PT_RECLAIM` (Linux >= 6.14; x86-64) the kernel then also frees the emptied
//! page-table pages. Without it the call still succeeds and frees nothing.
//!
//! Which mappings qualify is decided once, in the zygote ([`prepare`]), from its
//! `/proc/self/smaps`: private, non-writable, file-backed mappings with `Anonymous: 0`
//! (the relocated RELRO segment is read-only but anonymous: it is never touched). The
//! shim and pid 1 inherit that plan with their address space; before each zap
//! ([`idle`]) the mapping is checked to be still the same (start, end, permissions,
//! offset, device, inode in `/proc/self/maps`), so nothing that was remapped since is
//! ever discarded. A non-writable private mapping cannot gain anonymous pages in between
//! (no `mprotect` of ours; ptrace and `/proc/PID/mem` writes are out of reach: the
//! processes are not dumpable).
//!
//! Not done: `malloc_trim(0)`. It was measured to cost memory here: walking the
//! allocator's free lists writes to heap pages the process still shares copy-on-write
//! with the zygote, so each process got private copies (+36 KiB per sandbox).
//!
//! This is a memory optimisation only: when `/proc` cannot be read or the kernel refuses,
//! nothing is trimmed and nothing else changes (no security decision depends on it).

use std::sync::OnceLock;

/// One mapping as `/proc/self/maps` names it (everything but the path). Plain data:
/// comparing one allocates nothing (see [`idle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    perms: [u8; 4],
    offset: u64,
    dev: (u32, u32),
    inode: u64,
}

static PLAN: OnceLock<Vec<Mapping>> = OnceLock::new();

/// Parse a maps/smaps header line: `start-end perms offset dev inode [path]`, without
/// allocating.
fn header(line: &str) -> Option<Mapping> {
    let mut parts = line.split_ascii_whitespace();
    let (start, end) = parts.next()?.split_once('-')?;
    let perms: [u8; 4] = parts.next()?.as_bytes().try_into().ok()?;
    let offset = u64::from_str_radix(parts.next()?, 16).ok()?;
    let (major, minor) = parts.next()?.split_once(':')?;
    let inode: u64 = parts.next()?.parse().ok()?;
    let m = Mapping {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        perms,
        offset,
        dev: (
            u32::from_str_radix(major, 16).ok()?,
            u32::from_str_radix(minor, 16).ok()?,
        ),
        inode,
    };
    (m.end > m.start).then_some(m)
}

/// The mappings of an smaps text that are safe to zap: private, not writable,
/// file-backed, no anonymous page.
fn plan_from_smaps(smaps: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    let mut cur: Option<(Mapping, bool)> = None;
    let mut finish = |cur: &mut Option<(Mapping, bool)>| {
        if let Some((m, true)) = cur.take() {
            out.push(m);
        }
    };
    for line in smaps.lines() {
        if let Some(m) = header(line) {
            finish(&mut cur);
            let b = m.perms;
            let eligible = b[0] == b'r' && b[1] == b'-' && b[3] == b'p' && m.inode != 0;
            cur = Some((m, eligible));
        } else if let Some(rest) = line.strip_prefix("Anonymous:") {
            let kib: u64 = rest
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(u64::MAX);
            if kib != 0 {
                if let Some((_, ok)) = cur.as_mut() {
                    *ok = false;
                }
            }
        }
    }
    finish(&mut cur);
    out
}

#[cfg(test)]
/// The planned mappings that `maps` (a `/proc/self/maps` text, possibly cut short)
/// still shows exactly as planned, in address order.
fn still_mapped<'a>(plan: &'a [Mapping], maps: &'a str) -> impl Iterator<Item = &'a Mapping> {
    maps.lines()
        .filter_map(header)
        .filter_map(move |now| plan.iter().find(|m| **m == now))
}

/// Decide, once, which mappings a fork of this process may zap when idle. Called by the
/// zygote before it forks anything; later calls are no-ops.
pub fn prepare() {
    PLAN.get_or_init(|| {
        std::fs::read_to_string("/proc/self/smaps")
            .map(|s| plan_from_smaps(&s))
            .unwrap_or_default()
    });
}

/// Size of the stack buffer `/proc/self/maps` is streamed through (one line is at most
/// ~100 bytes plus a path; a longer line is skipped). Small: stack pages this touches
/// below what setup already used become private copies too.
const MAPS_BUF: usize = 1 << 10;

/// Drop the page tables of the planned, unchanged mappings. Returns how many mappings
/// were zapped (0 when there is no plan, `/proc` is unreadable, or the kernel refused).
///
/// Allocates nothing: the shim and pid 1 share their heap copy-on-write with the
/// zygote, and every heap page this wrote to would become a private copy (measured:
/// +28 KiB per sandbox when this read the maps into a `String`).
pub fn idle() -> usize {
    let Some(plan) = PLAN.get() else {
        return 0;
    };
    let mut done = 0;
    let _ = stream_maps(&mut [0u8; MAPS_BUF], |line| {
        let Some(now) = header(line) else {
            return;
        };
        if !plan.contains(&now) {
            return;
        }
        // SAFETY: the range is exactly one current mapping of this process (just read
        // from /proc/self/maps, single-threaded, nothing unmaps in between): a private,
        // read-only, file-backed mapping without anonymous pages, so dropping its entries
        // loses no data — the next access maps the same file pages again.
        let rc = unsafe { crate::linux::sys::drop_mapping_pages(now.start, now.end - now.start) };
        if rc {
            done += 1;
        }
    });
    done
}

/// Call `each` with every whole line of `/proc/self/maps` that fits in `buf` (plain
/// open/read, a fixed buffer: no allocation).
fn stream_maps(buf: &mut [u8], mut each: impl FnMut(&str)) -> Option<()> {
    let fd = nix::fcntl::open(
        c"/proc/self/maps",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .ok()?;
    let (mut filled, mut skipping) = (0, false);
    loop {
        if filled == buf.len() {
            // A line longer than the buffer: skipped up to its end.
            (filled, skipping) = (0, true);
        }
        let n = match nix::unistd::read(&fd, &mut buf[filled..]) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return None,
        };
        if n == 0 {
            return Some(());
        }
        filled += n;
        let mut start = 0;
        if skipping {
            let Some(end) = buf[..filled].iter().position(|b| *b == b'\n') else {
                filled = 0;
                continue;
            };
            (start, skipping) = (end + 1, false);
        }
        let Some(last) = buf[start..filled]
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|i| start + i)
        else {
            buf.copy_within(start..filled, 0);
            filled -= start;
            continue;
        };
        for line in buf[start..last].split(|b| *b == b'\n') {
            if let Ok(line) = std::str::from_utf8(line) {
                each(line);
            }
        }
        buf.copy_within(last + 1..filled, 0);
        filled -= last + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d000000000-55d000700000 r--p 00000000 fd:01 1234 /bin/cleanroom
Size:               7168 kB
Anonymous:             0 kB
55d000700000-55d002000000 r-xp 00700000 fd:01 1234 /bin/cleanroom
Anonymous:             0 kB
55d002000000-55d0020b4000 r--p 02000000 fd:01 1234 /bin/cleanroom
Anonymous:           720 kB
55d0020b4000-55d0020be000 rw-p 020b4000 fd:01 1234 /bin/cleanroom
Anonymous:            40 kB
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 [heap]
Anonymous:            28 kB
7f0000100000-7f0000102000 r-xp 00000000 00:00 0 [vdso]
Anonymous:             0 kB
7f0000200000-7f0000300000 r--s 00000000 fd:01 99 /some/shared
Anonymous:             0 kB
";

    #[test]
    fn only_private_read_only_file_mappings_without_anonymous_pages_are_planned() {
        let plan = plan_from_smaps(SMAPS);
        let starts: Vec<usize> = plan.iter().map(|m| m.start).collect();
        // rodata and text; not RELRO (anonymous), data (writable), heap, vdso, shared.
        assert_eq!(starts, vec![0x55d0_0000_0000, 0x55d0_0070_0000]);
    }

    #[test]
    fn a_mapping_that_changed_is_not_zapped() {
        let plan = plan_from_smaps(SMAPS);
        // The text mapping is now something else at the same start (other inode).
        let maps = "\
55d000000000-55d000700000 r--p 00000000 fd:01 1234 /bin/cleanroom
55d000700000-55d002000000 r-xp 00700000 fd:01 4321 /other
";
        let left: Vec<_> = still_mapped(&plan, maps).collect();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].start, 0x55d0_0000_0000);
        assert_eq!(still_mapped(&plan, "").count(), 0);
    }

    #[test]
    fn maps_stream_through_a_small_buffer_line_by_line() {
        let whole = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut got = Vec::new();
        stream_maps(&mut [0u8; MAPS_BUF], |l| got.push(l.to_string())).unwrap();
        // The maps may change between the two reads (the test harness has threads): the
        // mappings of the binary itself are stable and must all be there, in order.
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let exe = exe.to_string_lossy();
        let mine = |v: Vec<&str>| {
            v.into_iter()
                .filter(|l| l.ends_with(&*exe))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            mine(got.iter().map(String::as_str).collect()),
            mine(whole.lines().collect())
        );
        assert!(!mine(whole.lines().collect()).is_empty());
        // Lines longer than the buffer are skipped, never cut.
        let mut short = Vec::new();
        stream_maps(&mut [0u8; 40], |l| short.push(l.to_string())).unwrap();
        assert!(
            short.iter().all(|l| whole.lines().any(|w| w == l)),
            "{short:?}"
        );
    }

    #[test]
    fn unparsable_anonymous_counts_disqualify() {
        let smaps = "\
55d000000000-55d000700000 r--p 00000000 fd:01 1234 /bin/cleanroom
Anonymous:           junk
";
        assert!(plan_from_smaps(smaps).is_empty());
    }

    #[test]
    fn zapping_this_process_keeps_its_code_and_data_working() {
        // The test binary itself: plan, zap, then run code and read read-only data of the
        // zapped mappings again (they fault back in from the page cache, unchanged).
        let plan = plan_from_smaps(&std::fs::read_to_string("/proc/self/smaps").unwrap());
        assert!(
            !plan.is_empty(),
            "the test binary has read-only file mappings"
        );
        let _ = PLAN.set(plan);
        let digest = |s: &str| {
            s.bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        };
        let before = (digest(SMAPS), plan_from_smaps(SMAPS).len());
        assert!(idle() > 0, "at least one mapping zapped");
        assert_eq!((digest(SMAPS), plan_from_smaps(SMAPS).len()), before);
        assert_eq!(before.1, 2);
    }
}
